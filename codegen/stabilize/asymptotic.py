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

Where the derivative decays or grows like an exponential (gelu's value x*Phi(x) at -inf is
exp(-x**2/2) times a power series, which SymPy expands to 0), the exponential is factored out
first, erfc(u) written as exp(-u**2)*erfcx(u): the candidate is exp(L) times the expansion of
the rest, with L's squares exact (`squares.square_split`). Without it, the tail of such a
function needs a piece of erfcx's lowering, which costs gelu three transcendentals and a
continued fraction on every element.

Where neither is a power series (x*tanh(exp(x)) at -inf: the exponential sits inside a
function), the derivative is expanded in the vanishing exponential itself, t = exp(L):
x*exp(x) - x*exp(3*x)/3 + ..., each length also written as one exp (`absorbed_forms`), which
holds where exp(x) alone is subnormal.
"""

from __future__ import annotations

import sympy as sp

from codegen.front.functions import erfcx
from codegen.judge.removable import plain
from codegen.stabilize.products import absorbed_forms
from codegen.stabilize.rules import STABLE_RULES, apply_rules
from codegen.stabilize.squares import square_split
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
# A domain that ends this far out has its expansions too: lgamma(x + 1) - x*log(x) + x on
# [1, 1e6] loses 20 bits to cancellation at 1e6, where Stirling's series is exact to the ulp.
FAR = 1e3
SECONDS = 2.5  # per expansion; past them the side gets no candidates (the library's
# longest, log_ndtr's at -oo, constructs 23167 SymPy objects: 1.5 s of work)


# erfc written through erfcx, whose expansion at +oo SymPy then finds (1/erfc(x) has none)
_SCALED = tuple(r for r in STABLE_RULES if r.name in ("erfc_exp", "log_erfc"))
_ERFC = tuple(r for r in STABLE_RULES if r.name == "erfc")  # 1 - erf(u) = erfc(u)


def _expansion(expr: sp.Expr, arg: sp.Symbol, point) -> sp.Expr | None:
    """The expansion at +oo, in x; at -oo, of f(-y) at +oo, in y = -x (SymPy expands at +oo
    more often, and logs of y need no I)."""
    flip = point is not sp.oo
    prepared = apply_rules(plain(expr.subs(arg, -arg) if flip else expr), _SCALED, ())[0]
    return _series_at_infinity(prepared, arg)


# Functions SymPy has no expansion at oo for (asinh(x) - log(2*x) raised PoleError), written
# as the logs it expands: log(x + sqrt(x**2 + 1)) - log(2*x) = 1/(4*x**2) - ...
_INVERSE_HYPERBOLIC = (sp.asinh, sp.acosh, sp.atanh, sp.acoth)


def _in_logs(expr: sp.Expr) -> sp.Expr:
    return expr.replace(lambda n: isinstance(n, _INVERSE_HYPERBOLIC), lambda n: n.rewrite(sp.log))


def _series_at_infinity(prepared: sp.Expr, arg: sp.Symbol) -> sp.Expr | None:
    prepared = _in_logs(prepared)
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


def _exponential_factor(expr: sp.Expr, arg: sp.Symbol, point) -> tuple | None:
    """(L, rest) with expr = exp(L)*rest, L a polynomial in the arg of degree 1 or more and
    rest free of exp, erfc(u) taken as exp(-u**2)*erfcx(u); in y = -x at -oo; or None."""
    flip = point is not sp.oo
    prepared = apply_rules(plain(expr.subs(arg, -arg) if flip else expr), _ERFC, ())[0]
    prepared = prepared.replace(
        lambda n: n.func is sp.erfc, lambda n: sp.exp(-(n.args[0] ** 2)) * erfcx(n.args[0])
    )
    prepared = sp.powsimp(sp.expand(prepared))
    power = _one_exponent(prepared, arg)
    if power is None:
        return None
    rest = sp.powsimp(sp.expand(prepared * sp.exp(-power)))
    return None if rest.has(sp.exp) else (power, rest)


def _one_exponent(expr: sp.Expr, arg: sp.Symbol) -> sp.Expr | None:
    """L where every exp in `expr` is exp(L), L a polynomial in the arg of degree 1 or
    more; else None."""
    powers = {n.args[0] for n in sp.preorder_traversal(expr) if n.func is sp.exp}
    if len(powers) != 1:
        return None
    power = powers.pop()
    return power if power.is_polynomial(arg) and sp.degree(power, arg) >= 1 else None


def _scaled_expansion(expr: sp.Expr, arg: sp.Symbol, point) -> tuple | None:
    """(L, series): expr = exp(L) times the series at `point` (in y = -x at -oo), or None."""
    factored = _exponential_factor(expr, arg, point)
    if factored is None:
        return None
    power, rest = factored
    series = _series_at_infinity(rest, arg)
    return None if series is None else (power, series)


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


def terms_by_size(series: sp.Expr, arg: sp.Symbol) -> list[tuple[sp.Expr, int, sp.Expr]] | None:
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
    """The expansions of `expr` at the far ends of `domain` (`FAR`), several lengths each;
    where SymPy finds none, those of the exponential's cofactor, times the exponential."""
    lo, hi = domain
    out = []
    for name, point, reached in (("+inf", sp.oo, hi >= FAR), ("-inf", -sp.oo, lo <= -FAR)):
        series = _expansion(expr, arg, point) if reached else None
        terms = terms_by_size(series, arg) if series is not None else None
        if terms:
            out += _truncations(f"series {name}", terms, arg, point)
            continue
        scaled = _scaled_expansion(expr, arg, point) if reached else None
        terms = terms_by_size(scaled[1], arg) if scaled is not None else None
        if terms:
            label, factor = f"series {name} times exp", sp.exp(scaled[0])
            out += _truncations(label, terms, arg, point, factor)
            continue
        powers = _in_small_exponential(expr, arg, point) if reached else None
        out += _small_truncations(f"series {name} in exp", powers, arg, point) if powers else []
    return out


SMALL_POWERS = 3  # powers of the vanishing exponential an expansion in it keeps


def _in_small_exponential(expr: sp.Expr, arg: sp.Symbol, point) -> tuple | None:
    """(L, [c_1, c_2, ..]) with expr = sum_k c_k*exp(L)**k near `point` (in y = -x at -oo),
    where exp(L) -> 0 and the c_k are closed forms in the arg: x*tanh(exp(x)) at -oo is
    x*exp(x) - x*exp(3*x)/3 + ..., whose first term holds where exp(x) alone is subnormal
    and flushed (x = -709.7 in float64) and SymPy's expansion in powers of x has exp terms."""
    prepared = plain(expr.subs(arg, -arg) if point is not sp.oo else expr)
    power = _one_exponent(prepared, arg)
    if power is None or not sp.Poly(power, arg).LC().is_negative:  # exp(L) must vanish
        return None
    small = sp.Dummy("t", positive=True)
    inner = prepared.subs(sp.exp(power), small)
    if inner.has(sp.exp):  # exp(2*L) and the like: not a function of exp(L) as written
        return None
    try:
        with budgeted_limit(SECONDS, "series"):
            series = sp.series(inner, small, 0, SMALL_POWERS + 1).removeO()
            coefficients = sp.Poly(sp.expand(series), small).all_coeffs()[::-1]
    except (Exception, SymPyTimeout):  # noqa: BLE001 - SymPy raises many kinds; a log(t)
        return None  # or a fractional power of t is no polynomial in it
    coefficients += [sp.S.Zero] * (SMALL_POWERS + 1 - len(coefficients))
    if coefficients[0] != 0 or coefficients[1] == 0 or any(map(_unusable, coefficients)):
        return None
    return power, coefficients[1 : SMALL_POWERS + 1]


def _small_truncations(label: str, found, arg: sp.Symbol, point) -> list:
    """(label<n>, exp(L) times the first n terms c_k*exp(L)**(k - 1)), and each as one exp
    (`absorbed_forms`), back in x at -oo."""
    power, coefficients = found
    sign = 1 if point is sp.oo else -1
    out = []
    for n in (k + 1 for k, c in enumerate(coefficients) if c != 0):
        terms = [c * sp.exp(k * power) for k, c in enumerate(coefficients[:n])]
        form = (sp.exp(power) * sp.Add(*terms)).subs(arg, sign * arg)
        out.append((f"{label}<{n}>", form))
        out += [(f"{label}<{n}>+{name}", f) for name, f in absorbed_forms(form)]
    return out


def _truncations(label: str, terms, arg: sp.Symbol, point, factor=sp.S.One) -> list:
    """(label<n>, factor times the first n terms) for each length n, back in x at -oo."""
    lengths = sorted({min(n, len(terms)) for n in TRUNCATIONS})
    sign = 1 if point is sp.oo else -1  # the -inf expansion is in y = -x
    out = []
    for n in lengths:
        form = (sp.UnevaluatedExpr(factor) * _nested(terms[:n], arg)).subs(arg, sign * arg)
        out.append((f"{label}<{n}>", square_split(form) or form))
    return out
