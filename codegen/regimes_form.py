"""Regimes: a form piecewise over one arg, and its lowering as a NaN-safe select.

In: `Regimes` (thresholds on one arg, or on an expression of several, and a form per
piece), the lowering's builder and the function that lowers a piece. Out: the steps of the
pieces and a chain of selects (`lower_regimes`), with each branch's input clipped to the
interval it owns, so no branch sees a point where it may overflow or divide by zero and no
gradient of a branch not taken turns into NaN; `total` regimes share one input clipped into
the finite floats. `free_symbols` reads through Regimes and Pieces.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import sympy as sp

from codegen.pieces import Pieces, free_symbols_of


@dataclass(frozen=True)
class Regimes:
    """A piecewise form over one arg: `forms[i]` owns [bounds[i-1], bounds[i]).

    `closed[i]` makes bound i belong to the piece below: (.., bounds[i]]. hogen uses it for a
    split just above 0, where no positive threshold is representable in every dtype.

    `arg` may also be a product of args (x*y): the pieces then get their inputs unclipped,
    since no interval of x*y bounds x or y.

    `total` says every piece is finite, with finite derivatives, at every finite input
    (`stabilize.exp_branches`: rational in x and exp(-|x|/2), over a positive denominator).
    Its pieces then share one input, clipped into the finite floats only, also where no
    gradient flows: every form of the op and the last order's, which autodiff differentiates,
    then compute one exp(-|x|/2). A clip into each piece's own interval would compute it per
    piece. The values at ±inf are pieces of their own (`stabilize.limits`).
    """

    arg: sp.Expr  # a Symbol, or a monomial in several (`stabilize.split_on`)
    bounds: tuple[float, ...]
    forms: tuple[sp.Expr, ...]
    closed: tuple[bool, ...] = ()
    total: bool = False

    def is_closed(self, i: int) -> bool:
        return i < len(self.closed) and self.closed[i]

    def with_outer(self, below=None, above=None) -> Regimes:
        """These pieces and one more below the first bound and/or above the last, each given
        as (bound, whether the bound belongs to the piece below it, form)."""
        bounds, forms = list(self.bounds), list(self.forms)
        closed = [self.is_closed(i) for i in range(len(bounds))]
        if below is not None:
            bound, is_closed, form = below
            bounds, forms, closed = [bound, *bounds], [form, *forms], [is_closed, *closed]
        if above is not None:
            bound, is_closed, form = above
            bounds, forms, closed = [*bounds, bound], [*forms, form], [*closed, is_closed]
        return Regimes(self.arg, tuple(bounds), tuple(forms), tuple(closed), self.total)

    def piece_at(self, value: float) -> sp.Expr:
        """The form that owns `value`."""
        return self.forms[self.index_at(value)]

    def index_at(self, value: float) -> int:
        """The index of the piece that owns `value`."""
        for i, bound in enumerate(self.bounds):
            if value < bound or (value == bound and self.is_closed(i)):
                return i
        return len(self.forms) - 1


def clips_to_finite(form) -> bool:
    """True if `form` holds total regimes, whose input is clipped into the finite floats."""
    if isinstance(form, Regimes):
        return form.total or any(clips_to_finite(f) for f in form.forms)
    return False


def lower_regimes(b, regimes: Regimes, env, lower) -> str | float:
    """Selects over the pieces; NaN falls through to the last piece that varies with the
    split arg (or else the last that is not a constant).

    Pieces below the fall-through are chosen by `x < bound`, pieces above it by
    `x >= bound`: both false for NaN, so NaN reaches a form that keeps it, and constant
    pieces need no op of their own (a scalar in the select).
    """
    on_arg = isinstance(regimes.arg, sp.Symbol)  # else an expression of several args
    x = env[regimes.arg] if on_arg else lower(b, regimes.arg, env)
    split = regimes.arg.free_symbols
    lows = (float("-inf"), *regimes.bounds)
    highs = (*regimes.bounds, float("inf"))
    values = []
    for i, (form, low, high) in enumerate(zip(regimes.forms, lows, highs)):
        if on_arg and regimes.total and regimes.arg in free_symbols(form):
            clipped = _clipped(b, x, -math.inf, math.inf, True, True)  # shared by every piece
            values.append(lower(b, form, {**env, regimes.arg: clipped}))
        elif on_arg and regimes.arg in free_symbols(form) and x not in b.unclipped:
            no_neg_inf = i > 0 and low == -math.inf  # a piece below owns -inf alone
            no_pos_inf = i < len(regimes.forms) - 1 and high == math.inf
            clipped = _clipped(b, x, low, high, no_neg_inf, no_pos_inf)
            values.append(lower(b, form, {**env, regimes.arg: clipped}))
        else:
            values.append(lower(b, form, env))
    varying = [i for i, value in enumerate(values) if not isinstance(value, float)]
    own = [i for i in varying if split & free_symbols(regimes.forms[i])]
    # NaN falls through to a piece of the split arg (a limit at inf free of it would drop it)
    fall = (own or varying or [len(values) - 1])[-1]
    out = values[fall]
    if isinstance(out, float):  # every piece constant: sign(x) * 0 + c keeps NaN
        out = b.emit("fill_like", x, out)
    for j in range(fall + 1, len(values)):
        op = "where_greater" if regimes.is_closed(j - 1) else "where_greater_equal"
        out = b.emit(op, x, regimes.bounds[j - 1], values[j], out)
    for i in reversed(range(fall)):
        op = "where_less_equal" if regimes.is_closed(i) else "where_less"
        out = b.emit(op, x, regimes.bounds[i], values[i], out)
    return out


def _clipped(b, x: str, low: float, high: float, no_neg_inf: bool, no_pos_inf: bool):
    """`x` clipped into a piece's interval, so a branch not taken has a finite backward pass.

    Where a neighbouring piece holds -inf or inf alone (a limit), this piece is clipped into
    the finite floats on that side: its form there is discarded by the select, but its
    gradient would be NaN.
    """
    if no_neg_inf:
        x = b.emit("no_neg_inf", x)
    if no_pos_inf:
        x = b.emit("no_pos_inf", x)
    if math.isinf(low) and math.isinf(high):
        return x
    return b.emit("clip", x, low, high)


@functools.lru_cache(maxsize=4096)  # SymPy walks the whole tree on every call
def free_symbols(expr) -> frozenset:
    """The symbols of a form; a Regimes' own arg and its pieces' (pieces may be Regimes)."""
    if isinstance(expr, Regimes):
        found = set(expr.arg.free_symbols).union(*(free_symbols(form) for form in expr.forms))
    elif isinstance(expr, Pieces):
        found = free_symbols_of(expr, free_symbols)
    else:
        found = expr.free_symbols
    return frozenset(found)
