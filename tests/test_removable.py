"""Limits at removable singularities read off the function near the point (`removable`).

Where an operand is exactly 0 the reference is the limit. arb evaluates the function at
at ± 2**-256 and ± 2**-512; one float for all four is the limit, else SymPy's limit decides.
The expected values here are hand-derived limits, and the cases that must fall through to
SymPy are those where reading off the function near the point would be wrong.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from codegen.judge import removable

x = sp.Symbol("x", real=True)


@pytest.mark.parametrize(
    ("expr", "at", "limit"),
    [
        (sp.sin(x) / x, 0.0, 1.0),
        ((1 - sp.cos(x)) / x**2, 0.0, 0.5),
        (sp.log(x) / (x - 1), 1.0, 1.0),
        # the third-order remainder of exp, and its f'' (1/60 at 0): fifth-order cancellation
        ((sp.exp(x) - 1 - x - x**2 / 2) / x**3, 0.0, 1 / 6),
        (sp.diff((sp.exp(x) - 1 - x - x**2 / 2) / x**3, x, 2), 0.0, 1 / 60),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_analytic_function_gives_its_limit_near_the_point(expr, at, limit, dtype):
    assert removable._near_value(expr, x, at, dtype) == float(np.dtype(dtype).type(limit))


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        (1 / sp.log(sp.Abs(x)), "-1/177 at 2**-256 and -1/355 at 2**-512: slower than any power"),
        (sp.sign(x) * sp.sin(x) / x, "the two sides differ"),
        (1 / x**2, "no finite value: it overflows"),
        (x * sp.log(sp.Abs(x)), "-1.5e-75 and -2e-152: float64 holds both, and they differ"),
    ],
)
def test_values_that_do_not_settle_are_left_to_sympy(expr, why):
    assert removable._near_value(expr, x, 0.0, "float64") is None, why


def test_a_limit_below_the_smallest_float_is_zero_in_both_readings():
    """x*log|x| at 0 underflows at both distances in float32: 0, SymPy's limit too."""
    assert removable._near_value(x * sp.log(sp.Abs(x)), x, 0.0, "float32") == 0.0
    assert removable._limit(x * sp.log(sp.Abs(x)), x, sp.Integer(0)) == 0


def test_sympy_recursing_without_end_leaves_the_point_unscored(monkeypatch):
    """SymPy's limit of log(1 + tanh(x))'s f'' recursed without end and the build exited 2;
    such a point is not scored, as one whose limit is not found in time."""

    def recursing(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(removable.sp, "limit", recursing)
    assert removable._limit(sp.tanh(x) / (x + sp.Rational(1, 7)), x, sp.Rational(0)) is None
