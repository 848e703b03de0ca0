"""The pieces of a chosen form's regimes that fail for a reason their own interval cannot bound.

In: the candidate each dtype ships (its form SymPy, or `Regimes` nested to any depth), every
candidate measured, the spec, and the samples before and after screening appended the points
where the shipped forms fail. Out: `failing_pieces`, (label, split arg) for each candidate that
fails as such a piece would: at a failing point inside a piece on that arg it is NaN or inf,
and so it stays wherever in the piece the arg is moved (`MOVES` values drawn there), the other
args held where they were.

Why: regimes put each piece where the sample says it is best, and a piece that fails across
another arg's range fits between the points screening found. sigmoid(x) - sigmoid(y) took,
on y in [5.34e-5, 6.69e-5), -exp(max(x, y))*expm1(-|x - y|)*sign(x - y)/(...), NaN for every
x > 709. Each round's regimes moved that band just past the points the last round found, and
each of the 3 rounds shipped a form failing at some x > 709. Such a piece is left out of the
next round's regimes (`search.Search.banned`): no band of y keeps it from x > 709. A piece
whose failure moving its arg removes is kept; the next round's bounds move past the points.
Only splits on a single arg are judged, and only where the spec has several args.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from codegen.lower import Regimes
from codegen.stabilize.measuring import Samples, evaluate
from codegen.stabilize.piece_points import values_within

MOVES = 8  # values of the split arg, within the piece, at which a failing piece is tried
FAILING_MOVES = 7  # of them where it must be NaN or inf too, for its failure to be the other args'
MOVE_SEED = 5
FAILING_ROWS = 4  # failing points per dtype whose pieces are judged


def _owner(form, row: np.ndarray, args) -> tuple[object, int, float, float] | None:
    """(leaf, column of its split arg, the piece's interval) owning `row`, where `form` is
    regimes whose innermost split is on a single arg; else None."""
    owner = None
    while isinstance(form, Regimes):
        if form.arg not in args:
            return None
        column = args.index(form.arg)
        i = form.index_at(float(row[column]))
        edges = (-np.inf, *form.bounds, np.inf)
        owner = (column, edges[i], edges[i + 1])
        form = form.forms[i]
    return None if owner is None else (form, *owner)


def _moved_rows(row: np.ndarray, column: int, interval, dtype: str) -> np.ndarray | None:
    """`row`, then `MOVES` rows like it with column `column` moved within `interval`."""
    rng = np.random.default_rng(MOVE_SEED)
    values = values_within(*interval, dtype, rng)
    if not len(values):
        return None
    rows = np.repeat(row[None, :], MOVES + 1, axis=0).astype(dtype)
    rows[1:, column] = rng.choice(values, MOVES)
    return rows


def _blocks(shipped_form, rows: np.ndarray, args, dtype: str) -> list[tuple[int, np.ndarray]]:
    """(split column, moved rows) for the first `FAILING_ROWS` of `rows` that a piece of
    `shipped_form`'s regimes on a single arg owns."""
    blocks = []
    for row in rows:
        owner = _owner(shipped_form, row, args)
        moved = None if owner is None else _moved_rows(row, owner[1], owner[2:], dtype)
        if moved is not None:
            blocks.append((owner[1], moved))
        if len(blocks) == FAILING_ROWS:
            break
    return blocks


def _failing_everywhere(form, blocks, spec, compute: str) -> set[int]:
    """The split columns of the blocks where `form` is NaN or inf at the failing row and at
    `FAILING_MOVES` of its moved rows."""
    rows = np.concatenate([moved for _, moved in blocks])
    with np.errstate(all="ignore"):
        failing = ~np.isfinite(evaluate(form, spec, rows.astype(compute), compute))
    columns = set()
    for k, (column, _) in enumerate(blocks):
        here = failing[k * (MOVES + 1) : (k + 1) * (MOVES + 1)]
        if here[0] and int(here[1:].sum()) >= FAILING_MOVES:
            columns.add(column)
    return columns


def failing_pieces(shipped: dict, tried, spec, before: Samples, after: Samples, promoted: bool):
    """(label, split arg) for each candidate of `tried` that no regimes on that arg may take as
    a piece: at a point screening added (those of `after` past `before`) inside a piece of a
    dtype's shipped regimes on the arg, the candidate fails wherever in the piece the arg is."""
    args = tuple(spec.arg_symbols)
    if len(args) < 2:
        return frozenset()
    banned = set()
    for dtype, candidate in shipped.items():
        added = after.points[dtype][len(before.points[dtype]) :]
        blocks = _blocks(candidate.form, added, args, dtype)
        compute = "float64" if promoted else dtype
        for other in tried if blocks else ():
            if isinstance(other.form, sp.Expr):
                columns = _failing_everywhere(other.form, blocks, spec, compute)
                banned.update((other.label, args[c]) for c in columns)
    return frozenset(banned)
