"""The promoted pass (stabilize/selection.py `_promoted_choice`): once some order of an op
needs float32 computed in float64, every order is chosen for an op that computes it so. A
first-pass form that holds so is kept; one that fails is chosen again, and of the two the
one that does better at the points screening found ships.

The build's effort budget (`selection.EFFORT_OPS`) bounds that second-guessing: the ops of
every candidate the search measures are counted, and once a build has measured that many,
screening runs no further round and the promoted pass keeps the first pass's form. It is a
count, not a time, so which stages run, and the bytes, are the same on every machine.

softplus(x) keeps the promise for log(1 + exp(x)); the derivative as derived does not
(exp overflows past x = 709.78, and 1 + exp(x) rounds to 1 below x = -37).
"""

from __future__ import annotations

import pytest

from codegen.derive import derive
from codegen.front.functions import softplus
from codegen.front.spec import parse_spec_text
from codegen.stabilize import selection
from codegen.stabilize.measuring import Samples, measure, measuring_points
from codegen.stabilize.search import Search, best_form
from codegen.timebound import counting, time_left, work_budget

LOG1PEXP = """\
name: log1pexp
args: [x]
expr: log(1 + exp(x))
order: 1
"""


@pytest.fixture(scope="module")
def value():
    derivatives = derive(parse_spec_text(LOG1PEXP, "log1pexp.yaml"))
    return derivatives.spec, derivatives.partials[0]


def _first_pass(spec, partial, label: str, form) -> selection.Choice:
    samples = measuring_points(spec, partial.expr, selection.SAMPLES)
    chosen = measure(label, form, spec, samples)
    return selection.Choice(partial.index, partial.expr, chosen, (chosen,), False)


def _must_not_choose_again(*args, **kwargs):
    pytest.fail("chose again where the first pass's form holds")


def test_a_first_pass_form_that_holds_promoted_is_kept(value, monkeypatch):
    spec, partial = value
    (x,) = spec.arg_symbols
    first = _first_pass(spec, partial, "softplus", softplus(x))
    monkeypatch.setattr(selection, "choose", _must_not_choose_again)
    choice = selection._promoted_choice(spec, partial, first, [("sympy", partial.expr)])
    assert choice.chosen.form == softplus(x)
    assert choice.promote_float32
    assert choice.keeps_promise(), choice.shipped_figures()


def test_a_first_pass_form_that_fails_promoted_is_chosen_again(value):
    spec, partial = value
    first = _first_pass(spec, partial, "sympy", partial.expr)
    assert not first.chosen.keeps_promise()
    forms = selection.valid_candidates(spec, partial)
    choice = selection._promoted_choice(spec, partial, first, forms)
    assert choice.chosen.form != partial.expr
    assert choice.promote_float32
    assert choice.keeps_promise(), choice.shipped_figures()


def test_the_better_of_the_two_ships_where_both_fail(value, monkeypatch):
    """Screening finds the first pass's form failing (here: told so) and choosing again
    gives a worse form (here: the derivative as derived): the first pass's form ships."""
    spec, partial = value
    (x,) = spec.arg_symbols
    first = _first_pass(spec, partial, "softplus", softplus(x))
    worse = _first_pass(spec, partial, "sympy", partial.expr)
    found = []

    def screened(spec_, expr, shipped, tried, samples: Samples, promoted):
        found.append(promoted)
        return samples  # "failures found", at the points already there

    monkeypatch.setattr(selection, "screened", screened)
    monkeypatch.setattr(selection, "choose", lambda *a, **k: worse)
    choice = selection._promoted_choice(spec, partial, first, [("sympy", partial.expr)])
    assert found == [True]
    assert choice.chosen.form == softplus(x)


def test_every_candidate_measured_is_charged_to_the_effort(value):
    spec, partial = value
    samples = measuring_points(spec, partial.expr, selection.SAMPLES)
    with work_budget(effort=10**9), counting("effort"):
        best, tried = best_form(Search(spec, partial, samples, False), [("sympy", partial.expr)])
        spent = 10**9 - time_left("effort")
    assert len(tried) > 1  # the search went past the one form offered
    assert spent >= sum(candidate.ops for candidate in tried) > 0


def _rounds_screened(spec, partial, monkeypatch, effort: float) -> int:
    """How many choices `_screened_choice` makes where screening always finds failures."""
    searched = []

    def counted_best_form(search, forms):
        searched.append(search)
        return best_form(search, forms)

    monkeypatch.setattr(selection, "best_form", counted_best_form)
    monkeypatch.setattr(selection, "screened", lambda *args: args[4])  # "failures found"
    samples = measuring_points(spec, partial.expr, selection.SAMPLES)
    with work_budget(effort=effort):
        selection._screened_choice(spec, partial, samples, False, [("sympy", partial.expr)], True)
    return len(searched)


def test_screening_runs_its_rounds_while_effort_is_left(value, monkeypatch):
    spec, partial = value
    assert _rounds_screened(spec, partial, monkeypatch, 10**9) == selection.SCREEN_ROUNDS


def test_screening_runs_no_further_round_once_effort_is_spent(value, monkeypatch):
    spec, partial = value
    assert _rounds_screened(spec, partial, monkeypatch, 0) == 1


def test_a_spent_effort_ships_the_first_pass_form_promoted(value, monkeypatch):
    spec, partial = value
    first = _first_pass(spec, partial, "sympy", partial.expr)

    def must_not_run(*args, **kwargs):
        pytest.fail("chose again or screened once the effort was spent")

    monkeypatch.setattr(selection, "choose", must_not_run)
    monkeypatch.setattr(selection, "screened", must_not_run)
    with work_budget(effort=0):
        choice = selection._promoted_choice(spec, partial, first, [("sympy", partial.expr)])
    assert choice.chosen.form == partial.expr
    assert choice.promote_float32
    assert not choice.keeps_promise()  # honest figures: the form as it measures promoted


def test_with_effort_left_the_promoted_pass_chooses_again(value):
    spec, partial = value
    first = _first_pass(spec, partial, "sympy", partial.expr)
    with work_budget(effort=10**9):
        choice = selection._promoted_choice(
            spec, partial, first, selection.valid_candidates(spec, partial)
        )
    assert choice.chosen.form != partial.expr
    assert choice.keeps_promise(), choice.shipped_figures()
