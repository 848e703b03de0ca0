"""Asymptotic series at ±inf: candidates for the tails of a one-arg function.

In: a SymPy derivative, its arg and the arg's domain. Out: `(label, form)` pairs, each the
expansion of the derivative in powers of 1/x at +inf or -inf (where the domain reaches it),
truncated at several lengths. Like the Taylor series at 0 they are approximations:
`regimes` uses one only inside the range where it measured accurate.

They repair what no exact rewrite can in the tails: products of 0 and inf
(`exp(x**2/2)*erfc(x/sqrt(2))`), intermediates that overflow while the result is modest
(`x**2/sqrt(x**4 + 1)`), and differences that cancel completely (`sqrt(x**2 + x) - x`,
`x*log(1 + 1/x)`). A series term is `c*x**p`, optionally times powers of `log(x)`, with c
free of x (a number or an expression in the params); an expansion with anything else
(SymPy's `I` for a log of a negative number, `exp` terms, an unexpanded `Order`) is not
offered.
"""

from __future__ import annotations

import math

import sympy as sp

from codegen.judge.accuracy import plain
from codegen.stabilize.rules import STABLE_RULES, apply_rules
from codegen.timebound import SymPyTimeout, budgeted_limit

ORDER = 20  # SymPy's n: terms up to x**-19 beyond the leading one
# A short expansion first: where its leading terms hold exp terms (of a hyperbolic, a
# logistic) or I, so does the long one, at a fifth of its time. On the library's and the
# dev corpus's one-arg derivatives it ruled out 50 of 244 expansions, 70 of their 98 s,
# and never one that the long expansion found usable. Those probes took at most 0.54 s;
# one that takes longer (log_ndtr's value at +oo: 22909 SymPy objects, 1.5 s of work,
# more than the long one) is cut. Seconds here are seconds of work (`timebound`).
PROBE_ORDER = 3
PROBE_SECONDS = 0.5
TRUNCATIONS = (1, 2, 4, 8, 16)
SECONDS = 2.5  # per expansion; past them the side gets no candidates (the library's
# longest, log_ndtr's at -oo, constructs 23167 SymPy objects: 1.5 s of work)


# erfc written through erfcx, whose expansion at +oo SymPy then finds (1/erfc(x) has none)
_SCALED = tuple(r for r in STABLE_RULES if r.name in ("erfc_exp", "log_erfc"))


def _expansion(expr: sp.Expr, arg: sp.Symbol, point) -> sp.Expr | None:
    """The expansion at +oo, in x; at -oo, of f(-y) at +oo, in y = -x (SymPy expands at +oo
    more often, and logs of y need no I)."""
    flip = point is not sp.oo
    prepared = apply_rules(plain(expr.subs(arg, -arg) if flip else expr), _SCALED, ())[0]
    if _leading_terms_unusable(prepared, arg):
        return None
    try:  # the whole expansion under one bound: expanding a long series can cost more
        with budgeted_limit(SECONDS, "series"):
            series = sp.series(prepared, arg, sp.oo, ORDER).removeO()
            if _unusable(series) or series.has(sp.Order):
                return None
            series = sp.expand(series.subs(sp.log(1 / arg), -sp.log(arg)))
    except (Exception, SymPyTimeout):  # noqa: BLE001 - SymPy raises many kinds
        return None
    return None if series == 0 else series


def _leading_terms_unusable(prepared: sp.Expr, arg: sp.Symbol) -> bool:
    """True if a short expansion at +oo, found within `PROBE_SECONDS`, is `_unusable`."""
    try:
        with budgeted_limit(PROBE_SECONDS, "series"):
            return _unusable(sp.series(prepared, arg, sp.oo, PROBE_ORDER).removeO())
    except (Exception, SymPyTimeout):  # noqa: BLE001 - SymPy raises many kinds
        return False  # the long expansion decides


def _unusable(series: sp.Expr) -> bool:
    """True for terms no candidate may hold: exp terms (tanh(x) = 1 - 2*exp(-2*x) + ...),
    I (a log of a negative number), zoo or nan."""
    return series.has(sp.I, sp.exp, sp.zoo, sp.nan)


def _power(term: sp.Expr, arg: sp.Symbol) -> tuple[sp.Expr, int] | None:
    """(p, q) of a term c*x**p*log(x)**q with c free of x (a number or an expression in the
    spec's params), or None for any other term."""
    coeff, power = term.as_independent(arg, as_Add=False)
    if coeff.has(arg):
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


def _terms_by_size(series: sp.Expr, arg: sp.Symbol) -> list[tuple[sp.Expr, int, sp.Expr]] | None:
    """(p, q, c) of the terms c*x**p*log(x)**q, like powers summed, largest first."""
    coeffs: dict[tuple[sp.Expr, int], sp.Expr] = {}
    for term in sp.Add.make_args(series):
        power = _power(term, arg)
        if power is None:
            return None
        coeffs[power] = coeffs.get(power, sp.S.Zero) + term.as_independent(arg, as_Add=False)[0]
    keys = sorted(coeffs, key=lambda k: (-k[0], -k[1]))
    return [(p, q, coeffs[p, q]) for p, q in keys if coeffs[p, q] != 0]


def _nested(terms: list[tuple[sp.Expr, int, sp.Expr]], arg: sp.Symbol) -> sp.Expr:
    """The sum of the terms; without logs and with integer powers in Horner form in 1/x,
    the leading power split in two around the sum."""
    if any(q for _, q, _ in terms) or not all(p.is_Integer for p, _, _ in terms):
        return sp.Add(*(c * arg**p * sp.log(arg) ** q for p, q, c in terms))
    top = max(p for p, _, _ in terms)
    t = sp.Dummy("t")
    poly = sum(c * t ** int(top - p) for p, _, c in terms)
    nested = sp.horner(poly, t) if poly.has(t) else poly
    inner = nested.subs(t, sp.UnevaluatedExpr(1 / arg)) if poly.has(t) else nested
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
    for name, point, reached in (
        ("+inf", sp.oo, hi == math.inf),
        ("-inf", -sp.oo, lo == -math.inf),
    ):
        series = _expansion(expr, arg, point) if reached else None
        terms = _terms_by_size(series, arg) if series is not None else None
        if not terms:
            continue
        lengths = sorted({min(n, len(terms)) for n in TRUNCATIONS})
        sign = 1 if point is sp.oo else -1  # the -inf expansion is in y = -x
        out += [
            (f"series {name}<{n}>", _nested(terms[:n], arg).subs(arg, sign * arg)) for n in lengths
        ]
    return out
