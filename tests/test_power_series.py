"""Exact series arithmetic at 0 (codegen.stabilize.power_series) against SymPy's series and
mpmath's Taylor coefficients.

Every expected coefficient comes from SymPy's `series` or from mpmath (40 digits), never
from the code under test. Where the two references disagree (SymPy's series of w/expm1(w)
has a wrong last term), mpmath decides.
"""

from __future__ import annotations

import mpmath
import pytest
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import sigmoid, softplus
from codegen.stabilize.power_series import expansion

w = sp.Symbol("w", real=True)

AGREES_WITH_SYMPY = [
    log1p(w) - 1 + log1p(w) / w,
    (sp.sin(w) - w) / w**3,  # cancels to -1/6 at 0
    1 / sp.tanh(w) - 1 / w,  # a pole in each term, none in the sum
    sp.sqrt(4 + w) - 2,
    (1 + w) ** sp.Rational(-1, 3),
    sp.exp(w) * sp.cos(w) / (1 + w**2),
    sigmoid(w) * sigmoid(-w),
    1 / (sp.exp(w) - 1),  # a Laurent series
    sp.asin(w) - sp.atanh(w) + sp.asinh(w) - sp.atan(w),
    sp.log(sp.cos(w)) + sp.tan(w) * sp.sinh(w) / sp.cosh(w),
    sp.sqrt(w**2 + w**4),
]


def _sympy_coefficients(expr: sp.Expr, order: int) -> dict[int, sp.Rational]:
    found = {}
    for term in sp.Add.make_args(sp.expand(sp.series(expr, w, 0, order).removeO())):
        coefficient, power = term.as_coeff_exponent(w)
        if coefficient != 0:
            found[int(power)] = coefficient
    return found


@pytest.mark.parametrize("expr", AGREES_WITH_SYMPY, ids=str)
def test_the_coefficients_are_sympy_series(expr):
    assert expansion(expr, w, 12) == _sympy_coefficients(expr, 12)


def test_where_sympy_errs_the_coefficients_are_mpmath_taylor():
    """w/(exp(w) - 1) = sum B_n w**n/n!: B_7 = 0, yet SymPy's series to order 8 of
    w/expm1(w) ends in w**7/40320."""
    got = expansion(w / expm1(w), w, 8)
    with mpmath.workdps(40):
        expected = mpmath.taylor(lambda v: v / mpmath.expm1(v) if v else mpmath.mpf(1), 0, 7)
    for power, coefficient in enumerate(expected):
        assert float(got.get(power, 0)) == pytest.approx(float(coefficient), abs=1e-14), power
    assert 7 not in got


@pytest.mark.parametrize(
    "expr",
    [
        sp.log(2 + w),  # log(2): irrational
        sp.sqrt(w),  # no integer powers
        sp.exp(1 / w),  # an essential singularity
        sp.exp(1 + w),  # e
        sp.Float(1.702) * w,  # a float is left to SymPy, which keeps it a float
        softplus(w),  # log(2)
        sp.log(w),
        sp.erf(w),  # 2/sqrt(pi)
        sp.sqrt(-1 - w),  # complex
        sp.exp(w) * sp.Symbol("y"),  # another symbol
    ],
    ids=str,
)
def test_what_rational_series_cannot_hold_is_left_to_sympy(expr):
    assert expansion(expr, w, 10) is None
