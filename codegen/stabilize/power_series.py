"""Taylor and Laurent coefficients at 0 of an expression in one symbol, by exact arithmetic on
truncated power series (python-flint's `fmpq_series`).

In: a SymPy expression whose only symbol is the expansion variable, and the order asked for.
Out: `expansion(expr, var, order)`, {power: Rational} for the nonzero coefficients of every
power below `order` (negative powers too), or None where the expression leaves what series
with rational coefficients hold: an irrational constant (log(2), pi, 1.702 as a Float), a
function with no such series at its argument's value at 0 (log(w), sqrt(w), exp(1/w),
exp(1 + w)), or a function not listed here. Callers then ask SymPy's `series`, which gives
the same coefficients wherever both answer (tests/test_power_series.py).

Why: the stabilizer expands many sums and derivatives of one build at 0 (Taylor candidates,
sums cancelling in a monomial), each to 16 or 36 terms. SymPy's series took a fifth of a
typical build: 0.1 to 2 s each, where the same coefficients in exact series arithmetic take
milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import flint
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import sigmoid

EXTRA_TERMS = 8  # working terms past the order asked: cancellation and division by w use them
MAX_TERMS = 160  # working terms at most (doubling from order + EXTRA_TERMS)


class NoRationalSeries(Exception):
    """The expression leaves what series with rational coefficients hold, or needs more
    working terms than it was given."""


@dataclass(frozen=True)
class _Laurent:
    """w**shift * series, each coefficient of `series` exact below its `prec`."""

    shift: int
    series: flint.fmpq_series

    @property
    def known_to(self) -> int:
        """The power below which every coefficient is exact."""
        return self.shift + self.series.prec


def expansion(expr: sp.Expr, var: sp.Symbol, order: int) -> dict[int, sp.Rational] | None:
    """{power: coefficient} of `expr`'s expansion at var = 0 below var**order (nonzero
    coefficients only), or None (see the module docstring)."""
    if expr.free_symbols - {var}:
        return None
    terms = order + EXTRA_TERMS
    while terms <= MAX_TERMS:
        try:
            value = _evaluated(expr, var, terms)
        except NoRationalSeries:
            value = None
        except (ValueError, ZeroDivisionError):  # flint: a constant term it cannot take
            return None
        if value is not None and value.known_to >= order:
            return _coefficients(value, order)
        terms *= 2
    return None


def _evaluated(expr: sp.Expr, var: sp.Symbol, terms: int) -> _Laurent:
    """`expr`'s series, with flint's series length cap (10 by default: functions of series
    truncate there) raised to `terms` for the while."""
    cap = flint.ctx.cap
    flint.ctx.cap = terms
    try:
        return _Evaluator(var, terms).value(expr)
    finally:
        flint.ctx.cap = cap


def _coefficients(value: _Laurent, order: int) -> dict[int, sp.Rational]:
    out = {}
    for index, c in enumerate(value.series.coeffs()):
        power = value.shift + index
        if power < order and c != 0:
            out[power] = _rational(c)
    return out


class _Evaluator:
    """Series of the subexpressions of one expression, each computed once, to `terms`."""

    def __init__(self, var: sp.Symbol, terms: int):
        self.var, self.terms, self.seen = var, terms, {}

    def value(self, expr: sp.Expr) -> _Laurent:
        if expr not in self.seen:
            self.seen[expr] = self._value(expr)
        return self.seen[expr]

    def _value(self, expr: sp.Expr) -> _Laurent:
        if expr == self.var:
            return _Laurent(1, flint.fmpq_series([1], prec=self.terms))
        if expr.is_Rational:
            return _Laurent(0, flint.fmpq_series([_fmpq(expr)], prec=self.terms))
        if expr.is_Add:
            return _sum([self.value(a) for a in expr.args])
        if expr.is_Mul:
            return _product([self.value(a) for a in expr.args])
        if expr.is_Pow:
            return _power(self.value(expr.base), expr.exp)
        function = _FUNCTIONS.get(expr.func)
        if function is None or len(expr.args) != 1:
            raise NoRationalSeries(expr.func)
        return _Laurent(0, function(_plain_series(self.value(expr.args[0]))))


def _fmpq(number: sp.Rational) -> flint.fmpq:
    return flint.fmpq(int(number.p), int(number.q))


def _shifted(value: _Laurent, to: int) -> flint.fmpq_series:
    """`value`'s series written from the power `to` (at most its shift)."""
    zeros = value.shift - to
    return flint.fmpq_series([0] * zeros + value.series.coeffs(), prec=value.series.prec + zeros)


def _sum(values: list[_Laurent]) -> _Laurent:
    lowest = min(v.shift for v in values)
    total = _shifted(values[0], lowest)
    for value in values[1:]:
        total = total + _shifted(value, lowest)
    return _Laurent(lowest, total)


def _product(values: list[_Laurent]) -> _Laurent:
    shift, series = values[0].shift, values[0].series
    for value in values[1:]:
        shift, series = shift + value.shift, series * value.series
    return _Laurent(shift, series)


def _normalized(value: _Laurent) -> _Laurent:
    """The same value with a nonzero first coefficient; NoRationalSeries where every known
    one is 0 (more working terms may tell)."""
    coeffs = value.series.coeffs()
    leading = next((i for i, c in enumerate(coeffs) if c != 0), None)
    if leading is None or leading >= value.series.prec:
        raise NoRationalSeries("every known coefficient is 0")
    rest = flint.fmpq_series(coeffs[leading:], prec=value.series.prec - leading)
    return _Laurent(value.shift + leading, rest)


def _power(base: _Laurent, exponent: sp.Expr) -> _Laurent:
    if not exponent.is_Rational:
        raise NoRationalSeries(exponent)
    base = _normalized(base)
    if exponent.is_Integer:
        n = int(exponent)
        series = base.series if n >= 0 else base.series.inv()
        return _Laurent(base.shift * n, series ** abs(n))
    shift = base.shift * exponent
    lead = _rational(base.series.coeffs()[0]) ** exponent
    if not (shift.is_Integer and lead.is_Rational and lead > 0):
        raise NoRationalSeries("a root with no rational series")
    unit = base.series * (1 / base.series.coeffs()[0])  # first coefficient 1
    series = (unit.log() * _fmpq(exponent)).exp() * _fmpq(lead)
    return _Laurent(int(shift), series)


def _rational(c: flint.fmpq) -> sp.Rational:
    return sp.Rational(int(c.p), int(c.q))


def _plain_series(value: _Laurent) -> flint.fmpq_series:
    """`value` as a power series in nonnegative powers (a function's argument)."""
    if value.shift < 0:
        value = _normalized(value)
        if value.shift < 0:
            raise NoRationalSeries("a pole inside a function")
    return _shifted(value, 0)


def _sigmoid(t: flint.fmpq_series) -> flint.fmpq_series:
    return (1 + (-t).exp()).inv()


_FUNCTIONS = {  # each needs its argument's series to start as flint requires (else ValueError)
    sp.exp: lambda t: t.exp(),
    sp.log: lambda t: t.log(),
    log1p: lambda t: (1 + t).log(),
    expm1: lambda t: t.exp() - 1,
    sp.sin: lambda t: t.sin(),
    sp.cos: lambda t: t.cos(),
    sp.tan: lambda t: t.tan(),
    sp.sinh: lambda t: t.sinh(),
    sp.cosh: lambda t: t.cosh(),
    sp.tanh: lambda t: t.tanh(),
    sp.atan: lambda t: t.atan(),
    sp.asin: lambda t: t.asin(),
    sp.asinh: lambda t: t.asinh(),
    sp.atanh: lambda t: t.atanh(),
    sigmoid: _sigmoid,
}
