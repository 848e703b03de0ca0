"""The promoted pass (stabilize/selection.py `_promoted_choice`): once some order of an op
needs float32 computed in float64, every order is chosen for an op that computes it so. A
first-pass form that holds so is kept; one that fails is chosen again, and of the two the
one that does better at the points screening found ships.

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
