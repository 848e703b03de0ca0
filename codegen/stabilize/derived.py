"""Candidates derived from lower orders: the derivatives of the forms chosen for ancestors.

In: one partial, the choices already made for the partials before it (value first) and the
arg symbols. Out: `(label, form)` pairs, each the derivative of the closed form chosen for a
partial of lower order that this one differentiates, bare and with the rules applied.

A rewrite chosen for f is an identity, so its derivative is one for f': the conjugate
1/(sqrt(x) + sqrt(y)) chosen for (sqrt(x) - sqrt(y))/(x - y) gives
-1/(2*sqrt(x)*(sqrt(x) + sqrt(y))**2), while SymPy's derivative of the spec as written keeps
the cancellation in more terms, and the rewrites of those terms need not find their way back
to the conjugate. The derivative of a stable form is not always stable, so these are
candidates like any other: offered where they equal the partial at the check points
(`offered`), shipped where they measure best. Forms that are approximations (series, pieces
at infinity or on a line) or piecewise (Max, Min, Abs: their derivatives are Heaviside and
sign terms) give none.
"""

from __future__ import annotations

import sympy as sp

from codegen.derive import Partial
from codegen.stabilize.rules import apply_rules
from codegen.timebound import bounded

DIFF_SECONDS = 0.5  # of work (`timebound`) for one derivative
_NOT_CLOSED = (sp.Max, sp.Min, sp.Abs, sp.sign, sp.Piecewise, sp.Heaviside)
_APPROXIMATIONS = ("series", "limits at inf", "point on the line")


def derived_forms(partial: Partial, chosen: dict, args: tuple[sp.Symbol, ...]) -> list:
    """The derivative of the form chosen for each ancestor of `partial` (an index at most
    its own in every arg), nearest first: `chosen` maps an index to its (label, form). The
    value's form is differentiated twice for f_xx too, since f_x's chosen form may be one
    that differentiates badly (a cancelled factor left in, a sum regrouped)."""
    out: list[tuple[str, sp.Expr]] = []
    for ancestor in sorted(chosen, key=sum, reverse=True):
        steps = tuple(n - m for n, m in zip(partial.index, ancestor, strict=True))
        if min(steps) < 0 or sum(steps) == 0 or not _closed(*chosen[ancestor]):
            continue
        label, form = chosen[ancestor]
        wrt = [(a, n) for a, n in zip(args, steps, strict=True) if n]
        derivative = bounded(DIFF_SECONDS, None, sp.diff, form, *wrt)
        if derivative is None or derivative.is_number:
            continue
        name = "d/d" + "".join(a.name * n for a, n in wrt) + f" of ({label})"
        out.append((name, derivative))
        ruled, used = apply_rules(derivative)
        if used:
            out.append((f"{name}+rules({','.join(used)})", ruled))
    return out


def _closed(label: str, form) -> bool:
    """Whether `form` is one closed expression, exact everywhere it is defined."""
    return (
        isinstance(form, sp.Expr)
        and not form.has(*_NOT_CLOSED)
        and not any(word in label for word in _APPROXIMATIONS)
    )
