"""Functions written as head plus tail at an end of their arg (codegen.stabilize.tails), so
heads that cancel between terms cancel in SymPy.

Expected values are computed here with mpmath at 50 digits from the partial as SymPy derives
it, never from the form under test; forms are evaluated by the NumPy mirror of the ops.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.front.functions import sigmoid, softplus
from codegen.judge import numeric
from codegen.lower import lower
from codegen.stabilize.rules import apply_rules
from codegen.stabilize.tails import tail_forms

x, y = sp.symbols("x y", real=True)


def evaluate(form: sp.Expr, at: float) -> float:
    program = lower([form], {x: "x"})
    return float(numeric.run(program, {"x": np.array([at])}, "float64")[0][0])


def exact(expr: sp.Expr, at: float) -> float:
    plain = expr.rewrite(sp.exp).replace(softplus, lambda u: sp.log(1 + sp.exp(u)))
    with mpmath.workdps(50):
        return float(sp.N(plain.subs(x, sp.Float(at, 60)), 50))


SOFTPLUS_OVER_X = sp.log(1 + sp.exp(x)) / x


@pytest.mark.parametrize("order", [1, 2])
def test_heads_cancel_exactly_where_the_terms_round_to_them(order):
    """softplus(x)/x's f' is about -exp(-x)/x at large x, while its terms sigmoid(x)/x and
    softplus(x)/x**2 both round to 1/x: the rules' form returns noise, the tail form the
    value to the last bits."""
    partial = sp.diff(SOFTPLUS_OVER_X, x, order)
    forms = dict(tail_forms(partial, (x,)))
    at, want = 60.0, exact(partial, 60.0)
    ruled = evaluate(apply_rules(partial)[0], at)
    assert not ruled == pytest.approx(want, rel=1e-3, abs=0), ruled
    assert evaluate(forms["tails at +inf"], at) == pytest.approx(want, rel=1e-13, abs=0)


def test_the_tail_form_is_the_partial_everywhere():
    partial = sp.diff(SOFTPLUS_OVER_X, x)
    (_, form), *_ = tail_forms(partial, (x,))
    assert form.has(sigmoid(-x), softplus(-x))
    for at in (-3.0, 0.7, 2.5):
        assert evaluate(form, at) == pytest.approx(exact(partial, at), rel=1e-13, abs=0)


def test_the_end_an_arg_runs_to_picks_the_tail():
    """tanh(-2*x + 1) approaches -1 as x runs to +inf: its tail there is the one at -inf of
    its arg, 2*sigmoid(2*u) - 1."""
    (label, form), *_ = tail_forms(1 + sp.tanh(1 - 2 * x), (x,))
    assert label == "tails at +inf"
    assert sp.simplify(form - 2 * sigmoid(2 - 4 * x)) == 0


def test_no_tails_without_a_function_that_has_one_or_with_several_args():
    assert tail_forms(sp.exp(x) / x, (x,)) == []
    assert tail_forms(sp.tanh(sp.sin(x)), (x,)) == []  # sin(x) runs to no end
    assert tail_forms(sigmoid(x) - sigmoid(y), (x, y)) == []
