"""Values at infinity: where a chosen form misses the limit of its derivative at ±inf.

In: a chosen form of one partial of a one-arg spec, the exact derivative, the spec.
Out: the same form, with a piece at -inf and/or +inf returning the derivative's limit
there, if the domain reaches that infinity, SymPy finds a finite limit in time, and the
form as TensorFlow computes it (float32 and float64) does not already return it.

Forms stable on the whole real line can still be NaN at ±inf: silu's f' written
`x*sigmoid(-x)*sigmoid(x) + sigmoid(x)` is `inf*0` at +inf, where the derivative tends to 1.
The sample points are finite, so the stabilizer cannot see it; this stage checks the two
points directly. NaN still gives NaN: the pieces are selected by `x <= -inf` and `x < inf`
(false for NaN), and a constant piece keeps NaN in (`sign(x)*0 + c`).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from codegen import accuracy
from codegen.candidates import time_limit
from codegen.lower import Regimes

LIMIT_SECONDS = 3.0


def _limit(expr: sp.Expr, arg: sp.Symbol, towards) -> sp.Expr | None:
    """The finite real limit of `expr` as `arg` tends to `towards`, or None."""
    try:
        with time_limit(LIMIT_SECONDS):
            value = sp.limit(expr, arg, towards)
    except Exception:  # noqa: BLE001 - SymPy raises many kinds, and SymPyTimeout
        return None
    if value.free_symbols or not (value.is_real and value.is_finite):
        return None
    return value


def _misses(form, evaluate, point: float, limit: sp.Expr) -> bool:
    """True if `form` at `point`, in float32 or float64, is not `limit` (as that dtype rounds
    it; a limit below the smallest normal may come out as 0)."""
    for dtype in accuracy.DTYPES:
        t = np.dtype(dtype).type
        with np.errstate(all="ignore"):
            got = float(evaluate(form, np.array([[point]]), dtype)[0])
            want = float(t(float(limit)))
        if abs(want) < np.finfo(t).tiny:
            want = 0.0
        if not (got == want or (want == 0.0 and abs(got) < np.finfo(t).tiny)):
            return True
    return False


def with_limits(form, exact: sp.Expr, arg: sp.Symbol, domain, evaluate):
    """`form`, with constant pieces at the infinities of `domain` where it misses the limit.

    `evaluate(form, points, dtype)` computes a form as TensorFlow will.
    """
    lo, hi = domain
    below = above = None
    if lo == -math.inf:
        limit = _limit(exact, arg, -sp.oo)
        if limit is not None and _misses(form, evaluate, -math.inf, limit):
            below = limit
    if hi == math.inf:
        limit = _limit(exact, arg, sp.oo)
        if limit is not None and _misses(form, evaluate, math.inf, limit):
            above = limit
    if below is None and above is None:
        return form
    if isinstance(form, Regimes):
        bounds, forms = list(form.bounds), list(form.forms)
        closed = [form.is_closed(i) for i in range(len(bounds))]
    else:
        bounds, forms, closed = [], [form], []
    if below is not None:
        bounds, forms, closed = [-math.inf, *bounds], [below, *forms], [True, *closed]
    if above is not None:
        bounds, forms, closed = [*bounds, math.inf], [*forms, above], [*closed, False]
    return Regimes(arg, tuple(bounds), tuple(forms), tuple(closed))
