"""Exact values of expressions at points: arb balls at doubling precision, then exact
complements of saturating functions where no precision up to the top resolves a point.

In: SymPy expressions, their symbols, rows of float arguments and a dtype name. Out:
`evaluate_rows`, per expression the value correctly rounded to the dtype at each row (NaN
where unresolved) and a status per row (`balls.outcome`: "done", or why not).

The ladder runs each row at 64 (float32) or 128 (float64) bits, then at the precision its
widest unresolved ball asks for, up to 16384 bits (`_next_precision`). A difference of a
saturating function at two large arguments is out of its reach: erf(x + 1) - erf(x) at
x = 1000 is exp(-1e6)-small beside 1, and 1.4 million bits would resolve it. Written with
the function's complement, the same value is exact at 64 bits: erfc(x) - erfc(x + 1),
each term a ball with its own exponent. So rows still unresolved at the top are run again
with each exact complement (`COMPLEMENTS`: erf(u) as 1 - erfc(u) and as erfc(-u) - 1,
tanh(u) and sigmoid(u) alike through exp), and keep the first value that resolves.
"""

from __future__ import annotations

import flint
import numpy as np
import sympy as sp

from codegen.front.functions import sigmoid
from codegen.judge.balls import compile_joint, leaf, outcome, precision, run_row
from codegen.judge.nearest import FORMAT

_START_PREC, _MAX_PREC = {"float32": 64, "float64": 128}, 2**14
_PRECISION_MARGIN = 16  # bits beyond the format's that a ball's next precision aims for
_CHEAP_PREC = 1024  # below it arb's functions cost about the same at any precision
_AGAIN = ("again", "undefined", "overflow")  # statuses more precision may resolve
_RETRIED = (*_AGAIN, "zero")  # statuses a complement may resolve (not "domain": complex)

# Exact identities for functions that saturate at ±1 (or 0 and 1): each writes the value near
# one end through the small distance to it
COMPLEMENTS = (
    (sp.erf, lambda u: 1 - sp.erfc(u)),
    (sp.erf, lambda u: sp.erfc(-u, evaluate=False) - 1),  # SymPy writes erfc(-u) as 2 - erfc(u)
    (sp.tanh, lambda u: 1 - 2 / (sp.exp(2 * u) + 1)),
    (sp.tanh, lambda u: 2 / (sp.exp(-2 * u) + 1) - 1),
    (sigmoid, lambda u: 1 - 1 / (sp.exp(u) + 1)),
)


def evaluate_rows(exprs, symbols, rows: list[tuple], dtype: str) -> tuple[list, list]:
    """(values, statuses) of each of `exprs` at `rows`: the ladder, then the complements."""
    outs, status = _ladder(exprs, symbols, rows, dtype)
    for k, expr in enumerate(exprs):
        for func, complement in COMPLEMENTS:
            left = [i for i, s in enumerate(status[k]) if s in _RETRIED]
            if not left or not expr.has(func):
                continue
            try:
                written = expr.replace(func, complement)
            except RecursionError:  # a candidate form nested deeper than SymPy rebuilds
                continue
            again, again_status = _ladder((written,), symbols, [rows[i] for i in left], dtype)
            for i, value, s in zip(left, again[0], again_status[0], strict=True):
                if s == "done":
                    outs[k][i], status[k][i] = value, s
    return outs, status


def _ladder(exprs, symbols, rows: list[tuple], dtype: str) -> tuple[list, list]:
    """Each row run again at the precision its widest unresolved ball asks for
    (`_next_precision`), not only at the next one: the value a ball rounds to does not
    depend on the precision that resolved it. One run of the expressions' shared ops per
    row and precision (`compile_joint`)."""
    progs = compile_joint(exprs, symbols)
    outs = [np.full(len(rows), np.nan) for _ in progs]
    status = [["again"] * len(rows) for _ in progs]
    prec, cones = _START_PREC[dtype], {}
    due = dict.fromkeys(range(len(rows)), prec)  # row -> the precision it runs at next
    while due and prec <= _MAX_PREC:
        with precision(prec):
            leaves = [leaf(c) for c in progs[0].leaves]
            for i in [i for i, p in due.items() if p == prec]:
                wanted = tuple(k for k in range(len(progs)) if status[k][i] in _AGAIN)
                if wanted not in cones:
                    cones[wanted] = _ops_of(progs, wanted)
                vals = run_row(progs[0], rows[i], leaves, cones[wanted])
                for k in wanted:
                    status[k][i], outs[k][i] = outcome(progs[k], vals, dtype)
                due[i] = _next_precision(progs, wanted, status, i, vals, dtype)
        due = {i: p for i, p in due.items() if any(s[i] in _AGAIN for s in status)}
        prec *= 2
    return outs, status


def _next_precision(progs, wanted, status, i: int, vals: list, dtype: str) -> int:
    """The precision row `i` runs at next, on the doubling ladder and at most `_MAX_PREC`:
    twice this one; four times where an unresolved ball still contains 0 and runs are cheap
    (below `_CHEAP_PREC`); or, where an unresolved ball is finite and away from 0, enough for
    the bits this precision lost (its relative accuracy), the format's and a margin."""
    prec, needed = flint.ctx.prec, 0
    for k in wanted:
        ball = vals[progs[k].root]
        if status[k][i] != "again" or not ball.is_finite():
            continue
        if ball.contains(0):
            needed = max(needed, 4 * prec if prec < _CHEAP_PREC else 0)
        else:
            lost = prec - ball.rel_accuracy_bits()
            needed = max(needed, lost + FORMAT[dtype][0] + _PRECISION_MARGIN)
    nxt = 2 * prec
    while nxt < needed and nxt < _MAX_PREC:
        nxt *= 2
    return nxt


def _ops_of(progs: tuple, wanted: tuple[int, ...]) -> tuple[int, ...] | None:
    """The ops the programs `wanted` depend on, in order; None for all of them."""
    if len(wanted) == len(progs):
        return None
    return tuple(sorted(set().union(*(progs[k].cone for k in wanted))))
