"""Exact values where an operand is 0: removable singularities (sin(x)/x at 0).

In: one expression of one symbol, the rows `ladder` left at status "zero" or "undefined",
and a dtype name. Out: `fill_limits`, the limit of the expression at each such row rounded
to the dtype (NaN where none is found: the point is not scored), and `plain`, an expression
in the functions SymPy's `limit` knows.

Each limit is first read off the function itself (`_near_value`): arb evaluates it at
at ± 2**-256 and at ± 2**-512 (times |at| past 1), and where all four round to one float,
that float is the limit. The value of an analytic function there differs from its limit
by a relative 2**-256, far below any float's rounding, and a function that approaches its
limit more slowly than every power (1/log(x) at 0: -1/177 and -1/355) gives two different
floats, as does one whose sides differ (sign(x)) or that grows without bound (1/x**2: an
overflow, not a value). Only then does SymPy's limit run (`_limit`, gruntz, 10 to 100 times
the time), within a budget per call: of work (`timebound`, the same on every machine) and,
as a guard, of CPU time.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import sigmoid, softplus
from codegen.judge import ladder
from codegen.timebound import WORK_PER_SECOND, SymPyTimeout, time_limit, work_done

LIMIT_SECONDS = 2.0  # SymPy's limit at a point where an operand is 0 (x/x, sin(x)/x)
LIMITS_BUDGET_SECONDS = 5.0  # all limits of one reference call, in work (`timebound`): at
# SymPy's 5000 to 8000 objects a second in limits, 9 to 15 CPU s
LIMITS_GUARD_FACTOR = 4.0  # and at most this many times as many CPU seconds
NEAR = (sp.Integer(2) ** -256, sp.Integer(2) ** -512)  # distances `_near_value` looks at


def fill_limits(expr, x: sp.Symbol, rows, out: np.ndarray, status, dtype: str) -> None:
    """Fill `out` with the limits where an operand was 0 (`status` "zero" or "undefined"),
    within this call's budget: SymPy's limit in mpmath's arithmetic spends CPU time without
    building SymPy objects (0.7 s a point, 135 s in all, for log(erf(x + 1) - erf(x))'s
    partials before `ladder`'s complements)."""
    deadline = work_done() + LIMITS_BUDGET_SECONDS * WORK_PER_SECOND
    cpu_deadline = time.process_time() + LIMITS_GUARD_FACTOR * LIMITS_BUDGET_SECONDS
    for i in (i for i, s in enumerate(status) if s in ("zero", "undefined")):
        if work_done() > deadline or time.process_time() > cpu_deadline:
            break  # the rest are not scored: no build waits on SymPy point by point
        out[i] = _limit_value(expr, x, rows[i][0], dtype)


def _near_value(expr: sp.Expr, x: sp.Symbol, at: float, dtype: str) -> float | None:
    """The float that `expr` at at ± d rounds to for both distances d of `NEAR`, or None
    where those four values are not one resolved float."""
    t = sp.Dummy("t", real=True)
    scale = sp.Rational(max(1.0, abs(at)))
    found = set()
    for distance in NEAR:
        near = expr.xreplace({x: sp.Rational(at) + scale * distance * t})
        outs, status = ladder.evaluate_rows((near,), (t,), [(-1.0,), (1.0,)], dtype)
        if any(s != "done" for s in status[0]) or not np.isfinite(outs[0]).all():
            return None
        found.update(float(v) for v in outs[0])
    return (found.pop() or 0.0) if len(found) == 1 else None  # 0, as SymPy's limit gives it


def plain(expr: sp.Expr) -> sp.Expr:
    """`expr` in functions SymPy's `limit` knows."""
    return (
        expr.replace(sigmoid, lambda u: 1 / (1 + sp.exp(-u)))
        .replace(softplus, lambda u: sp.log(1 + sp.exp(u)))
        .replace(log1p, lambda u: sp.log(1 + u))
        .replace(expm1, lambda u: sp.exp(u) - 1)
    )


@functools.lru_cache(maxsize=512)
def _limit(expr: sp.Expr, x: sp.Symbol, at: sp.Rational) -> sp.Expr | None:
    """The limit of expr as x -> at, if both sides agree and it is finite."""
    try:
        with time_limit(LIMIT_SECONDS):
            sides = {sp.limit(plain(expr), x, at, d) for d in ("+", "-")}
    except (
        NotImplementedError,
        ValueError,
        ArithmeticError,
        TypeError,
        RecursionError,
        SymPyTimeout,
    ):
        return None  # no limit found in time, or SymPy recursed without end: not scored
    lim = sides.pop()
    return lim if not sides and lim.is_real and lim.is_finite else None


def _limit_value(expr: sp.Expr, x: sp.Symbol, at: float, dtype: str) -> float:
    near = _near_value(expr, x, at, dtype)
    if near is not None:
        return near
    lim = _limit(expr, x, sp.Rational(at))
    if lim is None:
        return math.nan
    outs, _ = ladder.evaluate_rows((lim,), (), [()], dtype)
    return float(outs[0][0])
