"""Differences of one saturating function at two args, written as differences of its tails.

In: a partial of two args and the arg symbols. Out: `complement_forms`, for a partial
g(x) - g(y) where g tends to a finite L at +inf or -inf, the form
(L - g(y)) - (L - g(x)) with each bracket rewritten by the rules (1 - erf(u) is erfc(u),
1 - sigmoid(u) is sigmoid(-u), 1 - tanh(u) is 2*sigmoid(-2u)), one form per such end.

Why: where both args lie far out on the same side, g(x) and g(y) both round to L, and
their difference to 0 or to a few ulps of L: erf(5) - erf(6) is 1.5e-12, which float32
returns as 0. Each tail L - g(u) is computed to full relative accuracy there, and so is
their difference unless x and y are close, where the split on x - y already serves
(`lines.antisymmetric`). Regimes on an arg then choose, per side, the tail form or the
plain one: the tail form at +inf is accurate wherever both args are not far out on the
other side.
"""

from __future__ import annotations

import sympy as sp

from codegen.stabilize.conjugates import conjugate_forms
from codegen.stabilize.lines import antisymmetric
from codegen.stabilize.rules import apply_rules
from codegen.timebound import SymPyTimeout, budgeted_limit

COMPLEMENT_LIMIT_SECONDS = 1.0  # of work (`timebound`), per end of the line


def complement_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """The forms (L - g(y)) - (L - g(x)) of a partial g(x) - g(y), one per end of the line
    where g has a finite, non-zero limit L; none for other partials."""
    if len(args) != 2 or not antisymmetric(expr, args):
        return []
    x, y = args
    scale, expr = expr.as_independent(x, y, as_Add=False)  # (erf(x) - erf(y))/2
    g = _one_side(expr, x, y)
    if g is None:
        return []
    out = []
    for end, name in ((sp.oo, "+inf"), (-sp.oo, "-inf")):
        limit = _limit(g, x, end)
        if limit is None or limit == 0:
            continue
        tail_y, tail_x = (_tail(limit, g.xreplace({x: a}), a) for a in (y, x))
        if tail_y is not None and tail_x is not None:
            out.append((f"tails at {name}", scale * (tail_y - tail_x)))
    return out


def _one_side(expr: sp.Expr, x: sp.Symbol, y: sp.Symbol) -> sp.Expr | None:
    """g where `expr` is g(x) - g(y), its terms in x alone and in y alone; else None."""
    in_x = [t for t in sp.Add.make_args(expr) if not t.has(y)]
    in_y = [t for t in sp.Add.make_args(expr) if not t.has(x)]
    if not in_x or len(in_x) + len(in_y) != len(sp.Add.make_args(expr)):
        return None
    g = sp.Add(*in_x)
    return g if sp.expand(sp.Add(*in_y) + g.xreplace({x: y})) == 0 else None


def _limit(g: sp.Expr, x: sp.Symbol, end) -> sp.Expr | None:
    """The finite limit of g at `end`, or None (infinite, not found, or out of time)."""
    try:
        with budgeted_limit(COMPLEMENT_LIMIT_SECONDS, "series"):
            value = sp.limit(g, x, end)
    except SymPyTimeout:
        return None
    except Exception:  # noqa: BLE001 - SymPy raises many kinds
        return None
    ok = value.is_finite and value.is_real and not value.has(sp.Limit, sp.AccumBounds)
    return value if ok else None


def _tail(limit: sp.Expr, g_at: sp.Expr, arg: sp.Symbol) -> sp.Expr | None:
    """limit - g_at with the constant gone by the rules, or None: as written or over one
    denominator (1 - 1/(1 + exp(-u)) is exp(-u)/(1 + exp(-u)), which they take to
    sigmoid(-u)), or negated (-1 - erf(u) is -(1 + erf(u)), which is -erfc(-u))."""
    for sign, base in ((1, limit - g_at), (-1, g_at - limit)):
        for variant in (base, sp.factor_terms(sp.together(base.rewrite(sp.exp)))):
            conjugated = _conjugated(variant)
            ruled, used = apply_rules(conjugated)
            changed = used or conjugated != variant
            if changed and ruled.as_independent(arg, as_Add=True)[0] == 0:
                return sign * ruled
    return None


def _conjugated(tail: sp.Expr) -> sp.Expr:
    """`tail` with its sums of a square root that cancel taken by their conjugates
    (`conjugates`), before the rules hide the roots in hypot: 1 - u/sqrt(1 + u**2) is
    1/((1 + u**2)*(1 + u/sqrt(1 + u**2))) where u > 0."""
    forms = conjugate_forms(tail)
    return forms[0][1] if forms else tail
