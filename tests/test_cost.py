"""The cost of chosen forms per element (stabilize/cost.py) and `hogen explain`'s cost lines."""

from __future__ import annotations

import sympy as sp

from codegen.front.functions import sigmoid
from codegen.front.spec import parse_spec_text
from codegen.stabilize.cost import cost

x, y = sp.symbols("x y", real=True)


def test_shared_transcendentals_count_once():
    s = sigmoid(x)
    # the value, f' and f'' of sigmoid written through sigmoid(x) and sigmoid(-x)
    forms = [s, s * sigmoid(-x), s * sigmoid(-x) * (1 - 2 * s)]
    assert cost(forms).transcendentals == 2
    assert cost([sp.exp(x), 2 * sp.exp(x) + x]).transcendentals == 1
    assert cost([sp.exp(x) * sp.exp(y)]).transcendentals == 2


def test_arithmetic_is_not_transcendental():
    total = cost([x * y + x / y - sp.sqrt(x)])
    assert total.transcendentals == 0 and total.steps == 5  # /, *, +, sqrt, -


def test_explain_states_transcendentals_per_element():
    from codegen.cli.explain import explain

    spec = parse_spec_text("name: f\nargs: [x]\nexpr: log(1 + exp(x))\norder: 1\n", "specs/f.yaml")
    text = explain(spec)
    lines = [line for line in text.splitlines() if "transcendentals" in line]
    assert len(lines) == 4  # two dtypes, orders 0 and 1
    assert all(line.split(": ")[1].split()[0].isdigit() for line in lines)


def test_constant_terms_of_a_sum_are_one_constant():
    """log(2) + log(pi)/2 + x: one add of x and one constant (an op on two Python floats
    would make a float32 tensor in a float64 function)."""
    from codegen.lower import lower

    program = lower([x + sp.log(2) + sp.log(sp.pi) / 2], {x: "x"})
    assert len(program.steps) == 1
    (step,) = program.steps
    assert step.op == "add" and sorted(map(type, step.operands), key=str) == [float, str]


def test_a_form_repeated_in_regimes_counts_once_where_inputs_are_stopped():
    """silu's value repeats its log-space form in two pieces: computed once at a stopped
    input, but once per piece where autodiff needs each branch clipped to its piece."""
    from codegen.lower import Regimes

    regimes = Regimes(x, (-1.0, 1.0), (sp.exp(x), x, sp.exp(x)))
    assert cost([regimes]).transcendentals == 1
    assert cost([], [regimes]).transcendentals == 2
    assert cost([sp.exp(x)], [sp.exp(x) * x]).transcendentals == 1  # shared with the last


def test_a_form_costs_what_it_adds_to_the_forms_chosen_before():
    from codegen.stabilize.cost import added_transcendentals, sharing

    s = sigmoid(x)
    assert added_transcendentals(s * sigmoid(-x)) == 2
    with sharing((s,)):  # sigmoid's value is chosen first: f' adds sigmoid(-x) only
        assert added_transcendentals(s * sigmoid(-x)) == 1
        assert added_transcendentals(1 / (4 * sp.cosh(x / 2) ** 2)) == 1
        assert added_transcendentals(2 * s) == 0


def test_a_last_order_form_pays_for_each_piece_it_repeats_in():
    """The last custom order ships with each branch clipped to its piece, so its candidates
    are counted so too: gelu's float32 f'' once took five pieces, two of them one form, at a
    counted 3 transcendentals that shipped as 7, over three pieces at 2."""
    from codegen.lower import Regimes
    from codegen.stabilize.cost import added_transcendentals, sharing

    repeated = Regimes(x, (-1.0, 1.0), (sp.exp(x), x, sp.exp(x)))
    assert added_transcendentals(repeated) == 1
    with sharing((), last=True):
        assert added_transcendentals(repeated) == 2
    with sharing((sp.exp(x),), last=True):  # the chosen unclipped exp(x) is not shared
        assert added_transcendentals(repeated) == 2
        assert added_transcendentals(sp.exp(x) * x) == 0  # XLA folds it into the chosen


def _candidate(p99: float, mean: float, transcendentals: int):
    from codegen.judge import accuracy
    from codegen.stabilize.measuring import Candidate

    figures = tuple(accuracy.Figures(mean, p99, 0, 400) for _ in accuracy.DTYPES)
    return Candidate("c", x, figures, ops=10, transcendentals=transcendentals)


def test_among_forms_with_room_the_cheapest_ranks_first():
    """Accuracy first: a form that keeps the promise with room beats one that keeps it
    narrowly, however cheap; among forms with room, fewer transcendentals win over a
    lower p99."""
    cheap, costly = _candidate(4.0, 0.4, 1), _candidate(1.0, 0.2, 3)
    narrow = _candidate(7.5, 1.4, 0)
    broken = _candidate(9.0, 0.4, 0)
    ranked = sorted([broken, narrow, costly, cheap], key=lambda c: c.rank())
    assert ranked == [cheap, costly, narrow, broken]
