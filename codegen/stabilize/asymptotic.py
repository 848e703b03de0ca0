"""Asymptotic series at ±inf: candidates for the tails of a one-arg function.

In: a SymPy derivative, its arg and the arg's domain. Out: `(label, form)` pairs, each the
expansion of the derivative in powers of 1/x at +inf or -inf (where the domain reaches it),
truncated at several lengths. Like the Taylor series at 0 they are approximations:
`regimes` uses one only inside the range where it measured accurate.

They repair what no exact rewrite can in the tails: products of 0 and inf
(`exp(x**2/2)*erfc(x/sqrt(2))`), intermediates that overflow while the result is modest
(`x**2/sqrt(x**4 + 1)`), and differences that cancel completely (`sqrt(x**2 + x) - x`,
`x*log(1 + 1/x)`). A series term is `c*x**p`, optionally times powers of `log(x)`; an
expansion with anything else (SymPy's `I` for a log of a negative number, `exp` terms,
an unexpanded `Order`) is not offered.
"""

from __future__ import annotations

import math

import sympy as sp

from codegen.timebound import time_limit

ORDER = 20  # SymPy's n: terms up to x**-19 beyond the leading one
TRUNCATIONS = (1, 2, 4, 8, 16)
SECONDS = 3.0  # CPU seconds per expansion; past them the side gets no candidates


def _expansion(expr: sp.Expr, arg: sp.Symbol, point) -> sp.Expr | None:
    try:
        with time_limit(SECONDS):
            series = sp.series(expr, arg, point, ORDER).removeO()
    except Exception:  # noqa: BLE001 - SymPy raises many kinds for series it cannot do
        return None
    series = sp.expand(series.subs(sp.log(1 / arg), -sp.log(arg)))
    if series.has(sp.I, sp.Order, sp.exp, sp.zoo, sp.nan) or series == 0:
        return None
    return series


def _power(term: sp.Expr, arg: sp.Symbol) -> tuple[sp.Expr, int] | None:
    """(p, q) of a term c*x**p*log(x)**q with a numeric c, or None for any other term."""
    coeff, power = term.as_independent(arg, as_Add=False)
    if not coeff.is_number:
        return None
    p, q = sp.S.Zero, 0
    for factor in sp.Mul.make_args(power):
        base, exponent = factor.as_base_exp()
        if factor == 1:
            continue
        if base == arg and exponent.is_Rational:
            p += exponent
        elif base == sp.log(arg) and exponent.is_Integer and exponent > 0:
            q += int(exponent)
        else:
            return None
    return p, q


def _terms_by_size(series: sp.Expr, arg: sp.Symbol) -> list[sp.Expr] | None:
    """The terms, largest power of x first (log factors break ties after their power)."""
    keyed = []
    for term in sp.Add.make_args(series):
        power = _power(term, arg)
        if power is None:
            return None
        keyed.append((-power[0], -power[1], sp.default_sort_key(term), term))
    return [term for *_, term in sorted(keyed, key=lambda k: k[:3])]


def _nested(terms: list[sp.Expr], arg: sp.Symbol) -> sp.Expr:
    """Terms c_i*x**p_i with integer p_i and no logs written in Horner form in 1/x, the
    leading power split in two around the sum."""
    powers = [_power(t, arg)[0] for t in terms]
    if any(_power(t, arg)[1] for t in terms) or not all(p.is_Integer for p in powers):
        return sp.Add(*terms)
    top = max(powers)
    t = sp.Dummy("t")
    poly = sum(term.as_independent(arg)[0] * t ** int(top - p) for term, p in zip(terms, powers))
    nested = sp.horner(poly, t) if poly.free_symbols else poly
    inner = nested.subs(t, sp.UnevaluatedExpr(1 / arg)) if poly.free_symbols else nested
    if top >= -1:
        return inner if top == 0 else arg**top * inner
    # x**-6*c as x**-3*(c*x**-3): x**-6 alone is subnormal, flushed to 0, where the result
    # is a normal number.
    half = top // 2
    return arg**half * sp.UnevaluatedExpr(inner * arg ** (top - half))


def asymptotic_forms(expr: sp.Expr, arg: sp.Symbol, domain) -> list[tuple[str, sp.Expr]]:
    """The expansions of `expr` at the infinite ends of `domain`, several lengths each."""
    lo, hi = domain
    out = []
    for name, point, reached in (("+inf", sp.oo, hi == math.inf), ("-inf", -sp.oo, lo == -math.inf)):
        series = _expansion(expr, arg, point) if reached else None
        terms = _terms_by_size(series, arg) if series is not None else None
        if not terms:
            continue
        lengths = sorted({min(n, len(terms)) for n in TRUNCATIONS})
        out += [(f"series {name}<{n}>", _nested(terms[:n], arg)) for n in lengths]
    return out
