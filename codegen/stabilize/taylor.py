"""Taylor polynomials of one derivative about a point, as candidate forms.

In: a SymPy derivative, the arg it is expanded in, and the point (0 unless given). Out:
`(label, form)` pairs, the series truncated at several lengths (`series x<n>`) in Horner
form, and `series_candidates`, those at 0 and the zero form. They are approximations:
`stabilize` uses one only inside the interval where it measured it accurate (the regimes
near a removable singularity, or where the value underflows). SymPy's series has no size
bound of its own, so each expansion runs under a bound of work (`timebound`).
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import log1p

from codegen.stabilize import power_series
from codegen.stabilize.asymptotic import terms_by_size
from codegen.timebound import SymPyTimeout, budgeted_limit

SERIES_TERMS = (3, 6, 10, 16)
# SymPy's series has no size bound (exp(exp(x)) to 16 terms runs for minutes): past this
# many seconds of work (`timebound`) the series candidates are skipped. Typical series take
# well under a second.
FALLBACK_SERIES_TERMS = 6  # where the longest series does not finish in its bound
SERIES_SECONDS = 7.0  # the library's longest, log_ndtr's f'': 67742 SymPy objects, 4.5 s
# With other args in the coefficients, SymPy builds about 6000 objects a CPU second, and the
# 16-term series of a two-arg spec often runs to its bound: that attempt gets 0.6 s of work
# (9000 objects, 1.5 s of CPU; the library's longest that finishes is poisson_nll's, 2142).
# The 6-term fallback gets 1.5 s: (1 + x*y)**(1/y)'s f_y needs more than 9000, lbeta's 6704.
OTHER_SYMBOLS_SERIES_SECONDS = (0.6, 1.5)  # the longest series, then the fallback


def series_candidates(expr: sp.Expr, arg: sp.Symbol) -> list[tuple[str, sp.Expr]]:
    """Taylor series of `expr` at 0 (truncated at several lengths) and the zero form, for
    regimes of a one-arg function: pieces near a removable singularity, or where the value
    underflows (exact there, and never NaN). Where `expr` has a kink at 0 (|x|, sign(x)),
    its series from the left too: SymPy expands from the right, and log(cosh(x)) - |x| is
    -x + x**2/2 - ... there but x + x**2/2 - ... for x < 0."""
    return [*series_forms(expr, arg), *_from_the_left(expr, arg), ("series zero", sp.S.Zero)]


def _from_the_left(expr: sp.Expr, arg: sp.Symbol) -> list[tuple[str, sp.Expr]]:
    """The series of `expr` at 0 for arg < 0, from the series of expr(-arg) at 0 from the
    right, where `expr` has an |u| or sign(u) of `arg`; else none."""
    kinks = [k for k in expr.atoms(sp.Abs, sp.sign) if arg in k.free_symbols]
    if not kinks:
        return []
    mirrored = series_forms(expr.subs(arg, -arg), arg)
    return [(f"{label} left", form.subs(arg, -arg)) for label, form in mirrored]


def series_forms(expr: sp.Expr, arg: sp.Symbol, point: int = 0) -> list[tuple[str, sp.Expr]]:
    """Taylor polynomials of `expr` about `point`, several degrees, for cancellation near it.

    The expansion and the polynomial in `arg` are built under one bound: with other args in
    the coefficients, building the polynomial can cost more than the series. Where the
    longest does not finish in it, a shorter one may: (1 + x*y)**(1/y)'s f_y in y takes
    over 5 s to 16 terms, 1 s to 6. With other symbols in the coefficients both get a
    shorter bound (`OTHER_SYMBOLS_SERIES_SECONDS`): lbeta's longest never finish, and a
    two-arg spec's ran to its bound at about 6000 SymPy objects a second."""
    others = bool(expr.free_symbols - {arg})
    bounds = OTHER_SYMBOLS_SERIES_SECONDS if others else (SERIES_SECONDS, SERIES_SECONDS)
    for terms, seconds in zip((max(SERIES_TERMS), FALLBACK_SERIES_TERMS), bounds):
        try:
            with budgeted_limit(seconds, "series"):
                return _taylor(expr, arg, point, terms)
        except SymPyTimeout:
            continue
        except Exception:  # noqa: BLE001 - SymPy raises many kinds
            return []
    return []


def _taylor(expr: sp.Expr, arg: sp.Symbol, point: int, terms: int) -> list[tuple[str, sp.Expr]]:
    exact = power_series.expansion(expr, arg, terms) if point == 0 else None
    if exact is not None:  # rational coefficients, found by exact series arithmetic
        if any(power < 0 for power in exact):
            return _singular_truncations({(p, 0): c for p, c in exact.items()}, arg, terms)
        return _truncations(sp.Poly.from_dict({(p,): c for p, c in exact.items()}, arg), arg, terms)
    longest = sp.series(fast_log1p(expr, arg, point), arg, point, terms).removeO()
    if longest.has(sp.Order, sp.I):
        return []  # I: complex at 0
    if not longest.is_polynomial(arg):
        singular = _singular_terms(longest, arg) if point == 0 else None
        return [] if singular is None else _singular_truncations(singular, arg, terms)
    return _truncations(sp.Poly(longest, arg), arg, terms)


def _singular_terms(series: sp.Expr, arg: sp.Symbol) -> dict | None:
    """{(p, q): c} of a series at 0 whose terms are c*arg**p*log(arg)**q, p an integer
    (negative for a pole) and q 0 or 1; None for any other term."""
    terms = terms_by_size(sp.expand(series), arg)
    if terms is None or any(not p.is_Integer or q > 1 for p, q, _ in terms):
        return None
    return {(int(p), q): c for p, q, c in terms}


def _singular_truncations(terms: dict, arg: sp.Symbol, most: int) -> list[tuple[str, sp.Expr]]:
    """Truncations of a series at 0 with a pole or a log(arg) (log(1 - (1 + x)*exp(-x)) is
    2*log(x) - log(2) - 2*x/3 + ..., its f' is 2/x - 2/3 - x/18 + ...), each part with a
    log power written x**low times a polynomial in Horner form; none where the series ends
    before its longest truncation (1/x is its own series, and the closed form already)."""
    if max(p for p, _ in terms) < most - 2:
        return []
    out = []
    for n in (t for t in SERIES_TERMS if t <= most):
        parts = []
        for q in sorted({q for _, q in terms}):
            kept = {p: c for (p, k), c in terms.items() if k == q and p < n and c != 0}
            if kept:
                low = min(kept)
                poly = sum((c * arg ** (p - low) for p, c in kept.items()), sp.S.Zero)
                body = sp.horner(poly, arg) if poly.has(arg) else poly
                parts.append(body * arg**low * sp.log(arg) ** q)
        if parts:
            out.append((f"series x<{n}> singular", sp.Add(*parts)))
    return out


def fast_log1p(expr: sp.Expr, arg: sp.Symbol, point=0) -> sp.Expr:
    """`expr` with log(1 + u) for each log1p(u) whose u is a function of `arg` alone and 0 at
    `point`: the same series at `point`, with the same rational coefficients, found 25 times
    faster (SymPy's Taylor term of log1p differentiates it from scratch for every power: 1.3 s
    to 36 terms, against 0.05 s for log(1 + u))."""

    def plain_where_vanishing(u):
        vanishes = u.free_symbols == {arg} and u.subs(arg, point) == 0
        return sp.log(1 + u) if vanishes else log1p(u)

    return expr.replace(log1p, plain_where_vanishing) if expr.has(log1p) else expr


def _truncations(poly: sp.Poly, arg: sp.Symbol, most: int) -> list[tuple[str, sp.Expr]]:
    out = []
    for terms in (t for t in SERIES_TERMS if t <= most):
        truncated = sum(
            (coeff * arg**power for (power,), coeff in poly.terms() if power < terms), sp.S.Zero
        )
        if truncated != 0:
            horner = sp.horner(truncated, arg) if truncated.free_symbols else truncated
            out.append((f"series x<{terms}>", horner))
    return out
