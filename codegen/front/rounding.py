"""Rounding errors made exact, as functions of hogen's own.

In: nothing. Out: SymPy function classes and their NumPy mirrors:
`compensation(slope, a, b)` = slope * ((a + b) - fl(a + b)), `exponent_error(u, p)` =
u**p - u**h with h a float near p, and `square_head(u, limit)`, a head of u whose square is exact
(`stabilize/squares.py`); and `opened`, a form without the UnevaluatedExpr guards that keep
SymPy from regrouping what the form rounds.

`compensation`: In exact arithmetic the error is 0, so a form written with
it equals the derivative (the exact reference evaluates it as 0); in floating point it is
the part of a + b the rounded sum lost, found exactly by Knuth's TwoSum
(`composites.lower_compensation`), times the slope. The stabilizer writes
G(fl(a - b)) + compensation(G'(fl(a - b)), a, -b) where G amplifies the rounding of a - b
(`stabilize/compensated.py`). Where the product is not finite (the slope overflowed into
inf * 0 = NaN where G itself underflowed to 0) it is 0: G alone is what counts there.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from codegen.judge import portable


class compensation(sp.Function):  # noqa: N801 - SymPy function classes are lower case
    """slope * ((a + b) - fl(a + b)): 0 in exact arithmetic, slope times the rounding error
    of a + b in floating point."""

    nargs = 3

    def fdiff(self, argindex=1):
        return sp.S.Zero  # identically 0; TwoSum's autodiff gradient is 0 too

    @classmethod
    def eval(cls, slope, a, b):
        if slope.is_zero or (a.is_number and b.is_number):
            return sp.S.Zero
        return None

    def _eval_evalf(self, prec):
        return sp.Float(0, prec)


def two_sum_compensation(slope: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """slope times the rounding error of a + b in the arrays' dtype (0 where not finite)."""
    with np.errstate(all="ignore"):
        s = a + b
        b_part = s - a
        product = slope * ((a - (s - b_part)) + (b - b_part))
        return np.where(np.abs(product) < np.inf, product, np.zeros_like(product))


EXPONENT_PLACES = 20  # exponent heads have at most 23 significant bits for |p| < 8


class exponent_error(sp.Function):  # noqa: N801 - SymPy function classes are lower case
    """u**p - u**h, h = `exponent_head(p)`: what pow(u, h) misses of u**p. A rational p that
    is not a float (1/3, -2/3) is rounded as the constant of pow(u, p), in float32 further
    than in float64, and u**p is then off by |p - fl(p)| * |log u| relative: 5.8 bits of
    u**(1/3) at u = 1e300 in float64. h is exact in both dtypes, so u**h + exponent_error(u,
    p) is u**p exactly, and the error is computed as u**h * expm1((p - h) * log(u))."""

    nargs = 2

    def fdiff(self, argindex=1):
        u, p = self.args
        h = exponent_head(p)
        return p * u ** (p - 1) - h * u ** (h - 1) if argindex == 1 else sp.S.Zero

    @classmethod
    def eval(cls, u, p):
        if not p.is_Rational or exponent_head(p) == p:
            return sp.S.Zero
        return None

    def _eval_evalf(self, prec):
        u, p = self.args
        return (u**p - u ** exponent_head(p)).evalf(prec)


def exponent_head(p: sp.Rational) -> sp.Rational:
    """p rounded to `EXPONENT_PLACES` binary places: a float in float32 and float64."""
    scale = 2**EXPONENT_PLACES
    return sp.Rational(round(p * scale), scale)


def exponent_error_values(u: np.ndarray, p) -> np.ndarray:
    """`exponent_error` in the array's dtype, as the lowering computes it."""
    p = sp.Rational(p)
    head = exponent_head(p)
    tail, head = u.dtype.type(float(p - head)), u.dtype.type(float(head))
    with np.errstate(all="ignore"):
        error = portable.power(u, head) * portable.expm1(portable.log(u) * tail)
        return np.where(np.abs(error) < np.inf, error, np.zeros_like(error))


SQUARE_HEAD_SCALE = 256.0  # heads are multiples of 1/256


class square_head(sp.Function):  # noqa: N801 - SymPy function classes are lower case
    """round(256 u)/256 with u clipped to +-limit: a head H of u with few bits, so H**2 is
    exact (float32 to |u| < 16, float64 to 2**18) and u - H is exact there. Any H is an
    identity in exp(c*H**2) * exp(c*(u - H)*(u + H)) = exp(c*u**2), so the exact reference
    takes H = u. `limit` is where exp(c*limit**2) is surely 0 or inf, so that beyond it both
    factors are (never 0 * inf). Its derivative is 0 (a step function), as round's is."""

    nargs = 2

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def _eval_evalf(self, prec):
        return self.args[0].evalf(prec)


def square_head_values(u: np.ndarray, limit) -> np.ndarray:
    """`square_head` in the array's dtype, as the lowering computes it."""
    limit = u.dtype.type(limit)
    scale = u.dtype.type(SQUARE_HEAD_SCALE)
    with np.errstate(invalid="ignore"):
        return np.round(np.clip(u, -limit, limit) * scale) * (1 / scale)


def opened(expr: sp.Expr) -> sp.Expr:
    """`expr` with its UnevaluatedExpr guards removed: the same value, as SymPy writes it
    (what `sp.N` evaluates and `sp.diff` differentiates through)."""
    return expr.replace(lambda n: isinstance(n, sp.UnevaluatedExpr), lambda n: n.args[0])
