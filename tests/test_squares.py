"""Exact squares inside exp (stabilize/squares.py, composites.lower_square_head).

The split is an identity for the head the lowering really computes, checked in exact
rational arithmetic; its accuracy is measured against mpmath at 60 digits, beside the
form it replaces; where exp under- or overflows it gives 0 or inf, never NaN.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.derive import derive
from codegen.front.rounding import square_head
from codegen.front.spec import parse_spec_text
from codegen.judge import accuracy
from codegen.judge.numeric import run
from codegen.lower import lower
from codegen.stabilize.compensated import compensated
from codegen.stabilize.squares import square_split

x, y = sp.symbols("x y", real=True)


def _evaluate(form: sp.Expr, columns: dict[str, np.ndarray], dtype: str) -> np.ndarray:
    program = lower([form], {s: s.name for s in sorted(form.free_symbols, key=str)})
    return run(program, columns, dtype)[0]


def test_the_split_is_an_identity_for_the_head_the_lowering_computes():
    """exp(c*H**2) * exp(c*(u - H)*(u + H)) = exp(c*u**2) for H = round(256 u)/256."""
    split = square_split(sp.exp(-(x**2) / 2 + x))
    assert split is not None and split.has(square_head)
    for value in ["0.1", "3.14159", "-27.000123", "1e5"]:
        u = Fraction(value)
        head = Fraction(round(u * 256), 256)
        exact_head = split.replace(square_head, lambda v, limit, h=head: sp.Rational(h))
        at_u = exact_head.doit().subs(x, sp.Rational(u))
        assert sp.simplify(at_u - sp.exp(-(sp.Rational(u) ** 2) / 2 + sp.Rational(u))) == 0


def test_only_exps_of_squares_are_split():
    assert square_split(sp.exp(x) * sp.sin(x**2)) is None
    assert square_split(sp.exp(x**3)) is None


def _bits(form: sp.Expr, u: np.ndarray, dtype: str) -> np.ndarray:
    got = _evaluate(form, {"x": u.astype(dtype)}, dtype)
    with mpmath.workdps(60):
        exact = np.array([float(mpmath.exp(-(mpmath.mpf(float(v)) ** 2) / 2)) for v in u])
    return accuracy.bits_error(got, exact.astype(dtype), dtype)


@pytest.mark.parametrize("dtype, top", [("float32", 13.0), ("float64", 37.0)])
def test_the_split_recovers_the_bits_rounding_u_squared_loses(dtype, top):
    """exp(-u**2/2) near underflow: fl(u**2) costs up to u**2/2 ulps (9 bits at u = 30); the
    split keeps the error to exp's own rounding and a few ulps of the products."""
    u = np.linspace(top / 2, top, 2000).astype(dtype)
    naive = _bits(sp.exp(-(x**2) / 2), u, dtype)
    split = _bits(square_split(sp.exp(-(x**2) / 2)), u, dtype)
    assert np.percentile(split, 99) <= 3.0
    assert np.percentile(naive, 99) >= np.percentile(split, 99) + 2.0


@pytest.mark.parametrize("sign", [-1, 1])
def test_beyond_the_head_limit_the_split_is_zero_or_inf_never_nan(sign):
    u = np.array([40.0, 1e3, 1e5, 1e200, np.inf, -np.inf])
    got = _evaluate(square_split(sp.exp(sign * x**2 / 2)), {"x": u}, "float64")
    assert np.array_equal(got, np.full(6, 0.0 if sign < 0 else np.inf))


def test_compensated_names_the_sum_a_head_is_taken_of():
    """In exp(-(x - y)**2/2) split, u - H opens to x - y - H: the correction must still see
    the rounded x - y there, or its slope misses exp's derivative."""
    spec = parse_spec_text(
        "name: f\nargs: [x, y]\nexpr: exp(-(x - y)**2/2)\norder: 1\n", "specs/f.yaml"
    )
    (partial,) = [p for p in derive(spec).partials if p.index == (1, 0)]
    form = compensated(square_split(partial.expr), (x, y))
    rng = np.random.default_rng(3)
    a = rng.uniform(-40, 40, 3000)
    b = a + rng.choice([-1, 1], 3000) * rng.uniform(25, 37.5, 3000)
    got = _evaluate(form, {"x": a, "y": b}, "float64")
    with mpmath.workdps(60):
        exact = []
        for p, q in zip(a, b):
            u = mpmath.mpf(float(p)) - mpmath.mpf(float(q))
            exact.append(float(-u * mpmath.exp(-(u**2) / 2)))
    bits = accuracy.bits_error(got, np.array(exact), "float64")
    assert np.percentile(bits, 99) <= 3.0


def test_an_exponent_kept_unevaluated_is_split_too():
    """Absorbing a factor into exp (`products`) keeps the exponent unevaluated; its square
    is rounded all the same, and split all the same: |u|*exp(-u**2) at u = 20 + 4e-15 is
    within a few ulps, where the absorbed form is hundreds off."""
    u = x - y
    absorbed = sp.exp(sp.UnevaluatedExpr(-(u**2) + sp.log(sp.Abs(u))))
    split = square_split(absorbed)
    assert split is not None and split.has(square_head)
    columns = {"x": np.array([20.000000000000004]), "y": np.array([0.0])}
    with mpmath.workdps(60):
        t = mpmath.mpf(20.000000000000004)
        want = float(t * mpmath.exp(-(t**2)))
    got = _evaluate(split, columns, "float64")[0]
    assert abs(got - want) <= 4 * np.spacing(want)
    before = _evaluate(absorbed, columns, "float64")[0]
    assert abs(before - want) > 64 * np.spacing(want)
