"""Differences of one function at two args, written as differences of its tails.

In: a partial of two args and the arg symbols. Out: `complement_forms`, for a partial
g(x) - g(y) where g tends to a finite L at +inf or -inf, the form
(L - g(y)) - (L - g(x)) with each bracket rewritten by the rules (1 - erf(u) is erfc(u),
1 - sigmoid(u) is sigmoid(-u), 1 - tanh(u) is 2*sigmoid(-2u)), one form per such end; and
`growth_forms`, where g grows like c*u or c*log|u| at an end, one Piecewise computing each
arg past |u| = 1 by its end's head and tail (`Asymptote`), heads subtracted first.

Why: where both args lie far out on the same side, g(x) and g(y) both round to L, and
their difference to 0 or to a few ulps of L: erf(5) - erf(6) is 1.5e-12, which float32
returns as 0. Each tail L - g(u) is computed to full relative accuracy there, and so is
their difference unless x and y are close, where the split on x - y already serves
(`lines.antisymmetric`). Regimes on an arg then choose, per side, the tail form or the
plain one: the tail form at +inf is accurate wherever both args are not far out on the
other side.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from codegen.front.rounding import opened
from codegen.stabilize.conjugates import conjugate_forms
from codegen.stabilize.lines import antisymmetric
from codegen.stabilize.rules import apply_rules
from codegen.timebound import SymPyTimeout, budgeted_limit

COMPLEMENT_LIMIT_SECONDS = 1.0  # of work (`timebound`), per end of the line


def complement_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """The forms (L - g(y)) - (L - g(x)) of a partial g(x) - g(y), one per end of the line
    where g has a finite, non-zero limit L; none for other partials."""
    found = _difference(expr, args)
    if found is None:
        return []
    (x, y), (scale, g) = args, found
    out = []
    for end, name in ((sp.oo, "+inf"), (-sp.oo, "-inf")):
        limit = _limit(g, x, end)
        if limit is None or limit == 0:
            continue
        tail_y, tail_x = (_tail(limit, g.xreplace({x: a}), a) for a in (y, x))
        if tail_y is not None and tail_x is not None:
            out.append((f"tails at {name}", scale * (tail_y - tail_x)))
    return out


def _difference(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> tuple[sp.Expr, sp.Expr] | None:
    """(scale, g) where `expr` is scale*(g(x) - g(y)), g in the first arg; else None."""
    if len(args) != 2 or not antisymmetric(expr, args):
        return None
    x, y = args
    scale, expr = expr.as_independent(x, y, as_Add=False)  # (erf(x) - erf(y))/2
    g = _one_side(expr, x, y)
    return None if g is None else (scale, g)


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


SIDE = 1  # |u| past which an arg is computed by its end's asymptote and tail (`growth_forms`)


@dataclass(frozen=True)
class Asymptote:
    """g(u) = head + tail near one end: head = c*log(s*u) + k (`logarithmic`) or c*u + k, or
    the finite limit k (c = 0); the tail tends to 0 there, rewritten so it does not cancel."""

    c: sp.Expr
    k: sp.Expr
    logarithmic: bool
    s: int  # the end's sign: the side of the arg it owns
    tail: sp.Expr  # in the arg symbol x

    def head(self, u: sp.Symbol) -> sp.Expr:
        scale = sp.log(self.s * u) if self.logarithmic else u
        return self.c * scale + self.k


def growth_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """For a partial g(x) - g(y) where g grows without bound at an end (like u or log|u|):
    each arg computed past |u| = `SIDE` by its end's asymptote and tail, the heads of two
    args on sides with the same growth subtracted first. log(1 + x**2) - log(1 + y**2) is
    2*log(x/y) + log1p(x**-2) - log1p(y**-2) where both are past 1: x**2 overflows there."""
    found = _difference(expr, args)
    if found is None:
        return []
    (x, y), (scale, g) = args, found
    ends = [a for a in (_asymptote(g, x, end) for end in (sp.oo, -sp.oo)) if a is not None]
    if not any(a.c != 0 for a in ends):
        return []
    pieces = [
        (_side_difference(g, first, second, x, y), sp.And(_side(first, x), _side(second, y)))
        for first in (*ends, None)
        for second in (*ends, None)
    ]
    return [("asymptotes", scale * sp.Piecewise(*pieces[:-1], (g - g.xreplace({x: y}), True)))]


def _side(asymptote: Asymptote | None, u: sp.Symbol):
    return sp.true if asymptote is None else asymptote.s * u > SIDE


def _side_difference(g, first, second, x, y) -> sp.Expr:
    """g(x) - g(y), x on `first`'s side and y on `second`'s (None: computed as g)."""
    tails = sum(
        (a.tail.xreplace({x: u}) * sign for a, u, sign in ((first, x, 1), (second, y, -1)) if a),
        sp.S.Zero,
    )
    if first is None or second is None:
        heads = [
            g.xreplace({x: u}) if a is None else a.head(u) for a, u in ((first, x), (second, y))
        ]
        return heads[0] - heads[1] + tails
    if first.c == second.c == 0:  # two finite limits
        return (first.k - second.k) + tails
    if first.c == second.c and first.logarithmic == second.logarithmic:
        ratio = sp.log(first.s * x / (second.s * y)) if first.logarithmic else x - y
        return sp.Mul(first.c, ratio, evaluate=False) + (first.k - second.k) + tails
    return first.head(x) - second.head(y) + tails


def _asymptote(g: sp.Expr, x: sp.Symbol, end) -> Asymptote | None:
    """g's finite limit at `end` with its tail, or its growth like c*u or c*log|u|."""
    s = 1 if end == sp.oo else -1
    limit = _limit_at(g, x, end)
    if limit is not None:
        tail = None if limit == 0 else _side_tail(g - limit, x, end)
        return None if tail is None else Asymptote(sp.S.Zero, limit, False, s, tail)
    for logarithmic, scale in ((False, x), (True, sp.log(s * x))):
        c = _limit_at(g / scale, x, end)
        if c is None:
            return None
        if c != 0:
            k = _limit_at(g - c * scale, x, end)
            tail = None if k is None else _side_tail(g - c * scale - k, x, end)
            return None if tail is None else Asymptote(c, k, logarithmic, s, tail)
    return None


def _side_tail(base: sp.Expr, x: sp.Symbol, end) -> sp.Expr | None:
    """`base` (g less its head) rewritten so each of its terms tends to 0 at `end`: logs
    combined and their arguments expanded (log(1 + x**2) - 2*log(x) is log1p(x**-2)), roots
    by their conjugates, the rules applied, and |x| and sign(x) taken on the end's side."""
    s = 1 if end == sp.oo else -1
    combined = sp.logcombine(base, force=True)
    combined = combined.replace(
        lambda n: isinstance(n, sp.log), lambda n: sp.log(sp.expand(n.args[0]))
    )
    on_side = {sp.sign(x): s, sp.Abs(x): s * x}
    for variant in (base, combined):
        conjugated = _conjugated(variant).xreplace(on_side)
        ruled = apply_rules(conjugated)[0].xreplace(on_side)
        for terms in (ruled, conjugated):  # SymPy finds no limits of hogen's own hypot
            if all(_limit_at(term, x, end) == 0 for term in sp.Add.make_args(terms)):
                return ruled
    return None


def _limit_at(expr: sp.Expr, x: sp.Symbol, end) -> sp.Expr | None:
    """`_limit` at `end` in a positive variable, its signs factored out: SymPy finds none of
    -1/(-x - sqrt(x**2 + 1)) at inf for a real x."""
    p = sp.Dummy("p", positive=True)
    at = opened(expr).xreplace({x: p if end == sp.oo else -p})
    return _limit(sp.factor_terms(at), p, sp.oo)
