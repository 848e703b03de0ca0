"""Series at 0 with a pole or a log of the arg (codegen.stabilize.taylor): a function with
a zero of order k at 0 has a log with k*log(x) and a Laurent f' = k/x + ....

Expected values are computed here with mpmath at 50 digits from the closed form, never from
the series under test; forms are evaluated by the NumPy mirror of the generated ops.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.judge import numeric
from codegen.lower import lower
from codegen.stabilize.taylor import series_candidates

x = sp.Symbol("x", real=True)
GAMMA2_LOG_CDF = sp.log(1 - (1 + x) * sp.exp(-x))  # about 2*log(x) - log(2) near 0


def evaluate(form: sp.Expr, at: float) -> float:
    program = lower([form], {x: "x"})
    return float(numeric.run(program, {"x": np.array([at])}, "float64")[0][0])


def exact(expr: sp.Expr, at: float) -> float:
    with mpmath.workdps(50):
        return float(sp.N(expr.subs(x, sp.Float(at, 60)), 50))


def singular(expr: sp.Expr) -> dict[str, sp.Expr]:
    return {label: f for label, f in series_candidates(expr, x) if label.endswith("singular")}


@pytest.mark.parametrize("order", [0, 1, 2])
def test_the_longest_singular_series_is_accurate_where_the_closed_form_cancels(order):
    partial = sp.diff(GAMMA2_LOG_CDF, x, order)
    forms = singular(partial)
    assert len(forms) >= 3, forms
    at, want = 1e-6, exact(partial, 1e-6)
    assert not evaluate(partial, at) == pytest.approx(want, rel=1e-8, abs=0)
    assert evaluate(forms["series x<16> singular"], at) == pytest.approx(want, rel=1e-14, abs=0)


def test_the_log_and_the_pole_are_terms_of_their_own():
    value, slope = (singular(sp.diff(GAMMA2_LOG_CDF, x, n))["series x<3> singular"] for n in (0, 1))
    assert sp.expand(value - (2 * sp.log(x) - sp.log(2) - 2 * x / 3 + x**2 / 36)) == 0
    assert sp.expand(slope - (2 / x - sp.Rational(2, 3) + x / 18 + x**2 / 270)) == 0


def test_a_series_that_ends_is_no_candidate():
    """1/x and log(x)/x are their own series at 0: the closed form is already that."""
    assert singular(1 / x) == {}
    assert singular(sp.log(x) / x) == {}
    assert singular(sp.sin(x) / x**2) != {}
