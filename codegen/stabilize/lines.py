"""Removable singularities on the line x = y: forms in the difference d = x - y.

In: a derivative of two args whose denominator has the factor x - y ((exp(x) - exp(y))/(x - y),
(log(x) - log(y))/(x - y)) and the arg symbols. Out: `line_forms`, the derivative with x
written y + d and the rules applied (exp(y)*expm1(d)/d, log1p(d/y)/d), d computed once as
x - y; `line_series`, Taylor polynomials in d about 0 of the same, for the points on and near
the line, where the closed form is 0/0 or cancels. `split_on` offers x - y as a coordinate
to split on, so regimes join the two across |x - y|.

Why: near the line the numerator cancels whatever form the args are in; written in d it
cancels only in d, which x - y gives exactly for close args (Sterbenz), and a series in d
has no cancellation at all.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from codegen.lower import Regimes
from codegen.stabilize.rules import apply_rules
from codegen.stabilize.taylor import fast_log1p
from codegen.timebound import WORK_PER_SECOND, SymPyTimeout, bounded, budgeted_limit, work_done

LINE_SERIES_TERMS = (4, 8, 12, 20)
LINE_SERIES_SECONDS = 3.0  # of work (`timebound`): atan(x) - atan(y) to 12 terms takes 2.5
FIRST_TERMS = 12  # tried first: its work predicts whether the longest can finish
LONGEST_GROWTH = 4.0  # the longest is tried where 12 terms took at most 1/4 of the bound.
# Measured (work of 20 terms / 12): 1.8 (cbrt), 2.9 (exp(-x**2)), 4.8 (erf), 5 (sin(x)/x);
# where 12 take most of the bound (atan, softplus, tanh**2, sqrt(1 + x**2)) 20 never finish.
ANTISYMMETRY_SECONDS = 0.5


def line_difference(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> sp.Expr | None:
    """x - y where `expr` has two args and its denominator has the factor x - y; else None."""
    if len(args) != 2:
        return None
    x, y = args
    _, denominator = sp.fraction(sp.together(expr))
    if not denominator.is_polynomial(x, y) or not denominator.has(x) or not denominator.has(y):
        return None
    if sp.rem(sp.expand(denominator), x - y, x) != 0:
        return None
    return x - y


def split_difference(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> sp.Expr | None:
    """x - y where regimes may split on it: `line_difference`, or where `expr` is a function
    of x - y alone (erf(x - y), a loss of the residual x - y), or `antisymmetric`, or
    `vanishes_on_line` (a divergence of x from y): its forms' accuracy then depends on
    x - y, which no threshold on x or on y follows."""
    line = line_difference(expr, args)
    if line is not None or len(args) != 2:
        return line
    x, y = args
    d = sp.Dummy("d", real=True)
    shifted = expr.subs(x, y + d).free_symbols
    if d in shifted and y not in shifted:
        return x - y
    return x - y if antisymmetric(expr, args) or vanishes_on_line(expr, args) else None


def vanishes_on_line(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> bool:
    """Whether `expr` is 0 wherever x = y, as a divergence of x from y is (y*log(y/x) - y + x,
    the Poisson deviance): every form of it cancels near the line, and a series in x - y
    does not. SymPy's own evaluation decides, with the logs expanded; nothing is simplified."""
    return expr != 0 and bounded(ANTISYMMETRY_SECONDS, False, _zero_on_line, expr, args)


def _zero_on_line(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> bool:
    x, y = args
    return sp.expand(sp.expand_log(expr.xreplace({x: y}), force=True)) == 0


def antisymmetric(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> bool:
    """Whether swapping the two args negates `expr`, as in g(x) - g(y): it is 0 on the line
    x = y, every form of the two terms cancels near it, and how much depends on x - y."""
    return expr != 0 and bounded(ANTISYMMETRY_SECONDS, False, _negated_by_swap, expr, args)


def _negated_by_swap(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> bool:
    x, y = args
    total = expr + expr.xreplace({x: y, y: x})
    return sp.expand(sp.expand_log(total, force=True)) == 0  # log(x/y) + log(y/x) too


def _in_difference(expr: sp.Expr, args) -> tuple[sp.Symbol, sp.Expr]:
    """(d, expr with x = y + d): exps split and logs of shifted args split, so
    exp(y + d) - exp(y) is exp(y)*(exp(d) - 1) and log(y + d) - log(y) is log(1 + d/y)."""
    x, y = args
    d = sp.Symbol("d", real=True)
    reduced = sp.expand_power_exp(expr.subs(x, y + d))
    reduced = reduced.replace(lambda n: n.func is sp.log, lambda n: _shifted_log(n, d))
    return d, sp.factor_terms(sp.together(reduced))


def _shifted_log(node: sp.log, d: sp.Symbol) -> sp.Expr:
    """log(c + r) with r the terms in d: log(c) + log(1 + r/c)."""
    argument = sp.expand(node.args[0])
    constant, rest = argument.as_independent(d, as_Add=True)
    if constant == 0 or rest == 0:
        return node
    return sp.log(constant) + sp.log(1 + sp.expand(rest / constant))


def line_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """The derivative in d = x - y, rules applied innermost and outermost first."""
    if line_difference(expr, args) is None:
        return []
    d, reduced = _in_difference(expr, args)
    back = {d: args[0] - args[1]}
    inner = apply_rules(reduced)[0]
    outer = apply_rules(reduced, outermost=True)[0]
    out = [("line x - y", inner.xreplace(back))]
    return out + ([("line x - y outer", outer.xreplace(back))] if outer != inner else [])


ON_LINE_CHECKS = (0.5, 1.0, 2.0)  # y = x at these (clipped into the domain)


def with_line_point(form, exact: sp.Expr, args, domain, as_shipped):
    """`form`, or, where it is not finite on the line x = y (0/0) while the derivative has a
    value there, `form` with the piece x - y == 0 computing that value: x = y exactly is no
    sample point, yet f(x, x) must not be NaN. `as_shipped(form, points, dtype)`."""
    if line_difference(exact, args) is None:
        return form
    lo, hi = max(domain[0][0], domain[1][0]), min(domain[0][1], domain[1][1])
    on = np.clip(np.array(ON_LINE_CHECKS), lo, hi)
    values = as_shipped(form, np.stack([on, on], axis=1), "float64")
    if np.isfinite(values).all():
        return form
    d, reduced = _in_difference(exact, args)
    on_line = _on_the_line(reduced, d)
    if on_line is None:
        return form
    return Regimes(args[0] - args[1], (0.0, 0.0), (form, on_line, form), (False, True))


def _on_the_line(reduced: sp.Expr, d: sp.Symbol) -> sp.Expr | None:
    """The value at d = 0 (in y), where the form in d is 0/0; None if SymPy finds none."""
    try:
        with budgeted_limit(LINE_SERIES_SECONDS, "series"):
            value = sp.series(reduced, d, 0, 1).removeO()
    except SymPyTimeout:
        return None
    except Exception:  # noqa: BLE001 - SymPy raises many kinds
        return None
    return None if value.has(d, sp.I, sp.Order, sp.zoo, sp.nan, sp.oo) else value


LINE_SERIES = "series x - y"  # the labels' start


def line_series(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """Taylor polynomials in d = x - y about 0, coefficients in y, several degrees: those up
    to the most terms SymPy finds within `LINE_SERIES_SECONDS` (`_longest_series`)."""
    if split_difference(expr, args) is None:
        return []
    d, reduced = _in_difference(expr, args)
    found = _longest_series(reduced, d)
    if found is None:
        return []
    poly, most = found
    out = []
    for terms in (t for t in LINE_SERIES_TERMS if t <= most):
        truncated = sum((c * d**p for (p,), c in poly.terms() if p < terms), sp.S.Zero)
        if truncated != 0 and not truncated.has(sp.I, sp.Order):
            horner = sp.horner(truncated, d)
            out.append((f"{LINE_SERIES}<{terms}>", horner.xreplace({d: args[0] - args[1]})))
    return out


def _longest_series(reduced: sp.Expr, d: sp.Symbol) -> tuple[sp.Poly, int] | None:
    """(Taylor polynomial, its terms): `FIRST_TERMS` first, then the longest where the first
    took little enough of the bound (`LONGEST_GROWTH`), fewer where the first did not finish.
    A series that runs to its bound costs the whole bound; this way the longest is tried
    only where it can finish."""
    start = work_done()
    poly = _series_in(reduced, d, FIRST_TERMS)
    if poly is not None:
        used = (work_done() - start) / WORK_PER_SECOND
        longest = max(LINE_SERIES_TERMS)
        longer = None
        if used * LONGEST_GROWTH <= LINE_SERIES_SECONDS:
            longer = _series_in(reduced, d, longest)
        return (poly, FIRST_TERMS) if longer is None else (longer, longest)
    for terms in sorted((t for t in LINE_SERIES_TERMS if t < FIRST_TERMS), reverse=True):
        poly = _series_in(reduced, d, terms)
        if poly is not None:
            return poly, terms
    return None


def _series_in(reduced: sp.Expr, d: sp.Symbol, terms: int) -> sp.Poly | None:
    """The Taylor polynomial of `reduced` in `d` about 0 with `terms` terms, or None where
    SymPy does not find it within `LINE_SERIES_SECONDS`."""
    try:
        with budgeted_limit(LINE_SERIES_SECONDS, "series"):
            return sp.Poly(sp.series(fast_log1p(reduced, d), d, 0, terms).removeO(), d)
    except SymPyTimeout:
        return None
    except Exception:  # noqa: BLE001 - SymPy raises many kinds
        return None
