"""Taylor polynomials about points inside the range, where no closed form is accurate.

In: a derivative of one arg and the arg's values where the best form measured misses the
promise. Out: `(label, form)` candidates: polynomials in (x - c) about a few simple centers
c spread over those values, several degrees each, with coefficients f^(k)(c)/k! computed
by Taylor-mode arithmetic on python-flint's `arb_series` (no symbolic derivatives: they
grow with every order) and rounded once to float64.

Series at 0 and at ±inf (`taylor.series_forms`, `asymptotic`) repair the ends of the
range. Between them a form can cancel where neither expansion converges fast enough:
f'' of exp(x**2/2)*erfc(x/sqrt(2)) is (1 + x**2)*f - x*sqrt(2/pi), which cancels
x**4/2-fold (13 bits at x = 8), while the expansion at +inf needs x > 9 to reach float64.
A polynomial about c = 8 computes it there to the rounding of its terms: x - c is exact
for x within a factor of two of c (Sterbenz), and the terms shrink. Like every series,
these are approximations: `regimes` uses one only where it measured accurate.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator

import flint
import numpy as np
import sympy as sp

from codegen.judge import balls
from codegen.timebound import SymPyTimeout, budgeted_limit

DEGREES = (8, 16, 24, 32)
SPACING = 1.5  # neighbouring centers differ by this factor
MAX_CENTERS = 6
COEFFICIENT_PRECISION = 400  # bits of the balls the coefficients are computed in
SECONDS = 1.0  # seconds of work (`timebound`) for the coefficients about one center


def centers(values: np.ndarray) -> list[float]:
    """Simple numbers (two significant digits) spread geometrically over the magnitudes of
    `values`, on each side of 0 that holds some (an even f'' misses the promise at -0.4 as
    at 0.4); none for values at 0 (the series at 0 serves)."""
    values = values[np.isfinite(values) & (values != 0)]
    out = []
    for sign in (1.0, -1.0):
        side = np.abs(values[np.sign(values) == sign])
        out += [sign * c for c in _spread(side)] if len(side) else []
    return out


def _spread(magnitudes: np.ndarray) -> list[float]:
    lo, hi = np.percentile(magnitudes, 2), np.percentile(magnitudes, 98)
    with np.errstate(over="ignore"):  # values near the dtype's top: c is inf, and no center
        out, c = [], lo * math.sqrt(SPACING)
        while len(out) < MAX_CENTERS and np.isfinite(c) and c <= max(hi, lo * SPACING):
            simple = float(f"{c:.2g}")
            if simple not in out:
                out.append(simple)
            c *= SPACING
    return out


def _series_of(node: sp.Expr, arg: sp.Symbol, x, n: int, memo: dict):
    """`node` as a truncated power series in arb balls (Taylor-mode arithmetic), with `x` the
    series of the arg; TypeError for a node it cannot expand."""
    if node in memo:
        return memo[node]
    if node == arg:
        return x
    if node.is_Rational or node.is_Float or node in (sp.pi, sp.E):
        return flint.arb_series([balls.leaf(node)], prec=n)
    args = [_series_of(a, arg, x, n, memo) for a in node.args]
    if node.is_Add:
        out = functools.reduce(operator.add, args)
    elif node.is_Mul:
        out = functools.reduce(operator.mul, args)
    elif node.is_Pow:
        exponent = node.exp
        if exponent.is_Integer:
            out = args[0] ** int(exponent) if exponent >= 0 else 1 / args[0] ** int(-exponent)
        else:
            out = (args[1] * args[0].log()).exp()
    else:
        name = type(node).__name__
        if name not in _SERIES_FUNCS:
            raise TypeError(f"no power series for {name}")
        out = _SERIES_FUNCS[name](*args)
    memo[node] = out
    return out


def _constant(u) -> flint.arb:
    return u.coeffs()[0] if u.coeffs() else flint.arb(0)


_SERIES_FUNCS = {
    "exp": lambda u: u.exp(),
    "log": lambda u: u.log(),
    "sqrt": lambda u: u.sqrt(),
    "erf": lambda u: u.erf(),
    "erfc": lambda u: u.erfc(),
    "sin": lambda u: u.sin(),
    "cos": lambda u: u.cos(),
    "tan": lambda u: u.tan(),
    "atan": lambda u: u.atan(),
    "log1p": lambda u: (1 + u).log(),
    "expm1": lambda u: u.exp() - 1,
    "sinh": lambda u: (u.exp() - (-u).exp()) / 2,
    "cosh": lambda u: (u.exp() + (-u).exp()) / 2,
    "tanh": lambda u: 1 - 2 / ((2 * u).exp() + 1),
    "sigmoid": lambda u: 1 / (1 + (-u).exp()),
    "softplus": lambda u: (1 + u.exp()).log(),
    "erfcx": lambda u: (u * u).exp() * u.erfc(),
    "Abs": lambda u: u if _constant(u) > 0 else -u,
    "sign": lambda u: flint.arb_series([1 if _constant(u) > 0 else -1], prec=u.prec),
}


@contextlib.contextmanager
def _series_length(n: int):
    """flint truncates every series operation at `ctx.cap` terms (10 by default)."""
    saved, flint.ctx.cap = flint.ctx.cap, n
    try:
        yield
    finally:
        flint.ctx.cap = saved


def _coefficients(expr: sp.Expr, arg: sp.Symbol, center: float, n: int) -> list[float]:
    """f^(k)(center)/k! for k < n as float64, ending at the first whose ball is too wide:
    its uncertainty times (|center|/2)**k, what it adds at the ends of a factor-of-two
    range, must be below 2**-60 of |f(center)|."""
    with balls.precision(COEFFICIENT_PRECISION), _series_length(n):
        x = flint.arb_series([flint.arb(center), 1], prec=n)
        coeffs = _series_of(expr, arg, x, n, {}).coeffs()
        if not coeffs or not coeffs[0].is_finite() or coeffs[0].is_zero():
            return []
        scale = abs(coeffs[0].mid()) * flint.arb(2) ** -60
        out = []
        for k, c in enumerate(coeffs):
            if not c.is_finite() or c.rad() * flint.arb(abs(center) / 2) ** k > scale:
                break
            out.append(float(c.mid()))
    return out


def _polynomial(coefficients: list[float], arg: sp.Symbol, center: float) -> sp.Expr:
    """sum c_k (x - center)**k in Horner form, built nested as `sp.horner` writes it (the same
    expression: a Poly over floats made 32 terms five times slower)."""
    t = sp.Dummy("t")
    form = sp.Float(coefficients[-1], 17)
    for c in reversed(coefficients[:-1]):
        form = sp.Float(c, 17) + t * form
    return form.xreplace({t: sp.UnevaluatedExpr(arg - sp.Float(center, 17))})


def local_series_forms(
    expr: sp.Expr, arg: sp.Symbol, values: np.ndarray
) -> list[tuple[str, sp.Expr]]:
    """Taylor polynomials of `expr` about centers among `values` (where the best form fails),
    each truncated at `DEGREES` terms (fewer where the coefficients end early)."""
    out = []
    for center in centers(values):
        try:
            with budgeted_limit(SECONDS, "series"):
                coefficients = _coefficients(expr, arg, center, max(DEGREES))
        except (SymPyTimeout, TypeError, ValueError, ArithmeticError, ZeroDivisionError):
            continue
        for n in sorted({min(d, len(coefficients)) for d in DEGREES}):
            if n >= 2:
                form = _polynomial(coefficients[:n], arg, center)
                out.append((f"series at {center:g}<{n}>", form))
    return out
