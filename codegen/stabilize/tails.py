"""Functions near a finite or linear head, written as head plus tail, so heads cancel exactly.

In: a partial of one arg. Out: `tail_forms`, one `(label, form)` per end of the arg (+inf,
-inf) where some function of the partial, F(u) with u a polynomial in the arg that runs to
one of F's ends, approaches a head: each such F(u) written head(u) + tail(u) by `TAILS`
(sigmoid(u) = 1 - sigmoid(-u), softplus(u) = u + softplus(-u), ...), the whole expanded.
Nothing here measures; regimes use a form only where it measured accurate.

Why: softplus(x)/x's f' = sigmoid(x)/x - softplus(x)/x**2 is about -exp(-x)/x at large x,
while both terms round to 1/x there: float64 returns 0 or noise from x = 37 on, where the
exact value is a normal number up to x = 700. Written with the tails, the 1/x heads cancel
in SymPy, not in floats: -sigmoid(-x)/x - softplus(-x)/x**2. The same holds wherever a
derivative sums terms whose heads cancel: the leading part of tanh, erf, atan or log1p at
an end, against the rest of the partial.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp
from sympy.codegen.cfunctions import log1p

from codegen.front.functions import sigmoid, softplus
from codegen.stabilize.rules import apply_rules
from codegen.timebound import bounded

TAIL_SECONDS = 0.5  # of work (`timebound`), for one end's expansion
MAX_GROWTH = 4  # an expansion more than this many times the partial's size is not offered


@dataclass(frozen=True)
class Tail:
    """F(u) = head(u) + tail(u) where u runs to `end` (+1: +inf, -1: -inf), the tail tending
    to 0 there and computed without cancelling."""

    name: str
    function: type
    end: int
    written: Callable[[sp.Expr], sp.Expr]


# SymPy writes erf(-u) as -erf(u) and erfc(-u) as 2 - erfc(u), so erf's tail at -inf and
# erfc's head at -inf cannot stay written; their ends at +inf can.
TAILS = (
    Tail("sigmoid", sigmoid, 1, lambda u: 1 - sigmoid(-u)),
    Tail("softplus", softplus, 1, lambda u: u + softplus(-u)),
    Tail("tanh", sp.tanh, 1, lambda u: 1 - 2 * sigmoid(-2 * u)),
    Tail("tanh", sp.tanh, -1, lambda u: 2 * sigmoid(2 * u) - 1),
    Tail("erf", sp.erf, 1, lambda u: 1 - sp.erfc(u)),
    Tail("atan", sp.atan, 1, lambda u: sp.pi / 2 - sp.atan(1 / u)),
    Tail("atan", sp.atan, -1, lambda u: -sp.pi / 2 - sp.atan(1 / u)),
    Tail("log1p", log1p, 1, lambda u: sp.log(u) + log1p(1 / u)),
)


def tail_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """The partial with its functions' tails written out, one form per end of the arg where
    some function approaches a head; none for partials of several args."""
    if len(args) != 1:
        return []
    (x,), ruled = args, apply_rules(expr)[0]
    out = []
    for end, name in ((1, "+inf"), (-1, "-inf")):
        written = _written(ruled, x, end)
        if not written:
            continue
        expanded = bounded(TAIL_SECONDS, None, sp.expand, ruled.xreplace(written))
        if expanded is not None and sp.count_ops(expanded) <= MAX_GROWTH * sp.count_ops(ruled):
            out.append((f"tails at {name}", expanded))
    return out


def _written(expr: sp.Expr, x: sp.Symbol, end: int) -> dict:
    """{F(u): head(u) + tail(u)} for each function F(u) of `expr` whose u runs, as x runs
    to `end`, to the end its `Tail` holds at."""
    written = {}
    for tail in TAILS:
        for node in sorted(expr.atoms(tail.function), key=sp.default_sort_key):
            u = node.args[0]
            if node not in written and _runs_to(u, x, end) == tail.end:
                written[node] = tail.written(u)
    return written


def _runs_to(u: sp.Expr, x: sp.Symbol, end: int) -> int:
    """+1 or -1: the end u runs to as x runs to `end`, for a non-constant polynomial u in x;
    else 0."""
    if not u.is_polynomial(x) or not u.has(x):
        return 0
    poly = sp.Poly(u, x)
    if not poly.LC().is_number or poly.LC() == 0:
        return 0
    sign = 1 if poly.LC() > 0 else -1
    return sign * (end if poly.degree() % 2 else 1)
