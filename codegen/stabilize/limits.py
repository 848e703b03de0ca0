"""Values at infinity: where a chosen form misses the limit of its derivative at ±inf.

In: a chosen form of one partial, the exact derivative, the args and their domains.
Out: the same form, with a piece at -inf and/or +inf of an arg returning the derivative's
limit there, if that arg's domain reaches that infinity, SymPy finds a limit (finite or
±inf) in time, and the form as TensorFlow computes it (float32 and float64, the other args
at a few finite values) does not already return it.

Forms stable on the whole real line can still be NaN at ±inf: silu's f' written
`x*sigmoid(-x)*sigmoid(x) + sigmoid(x)` is `inf*0` at +inf, where the derivative tends to
1; hypot's x/hypot(x, y) is inf/inf at x = inf, where it tends to 1.
The sample points are finite, so the stabilizer cannot see it; this stage checks the two
points directly. NaN still gives NaN: the pieces are selected by `x <= -inf` and `x < inf`
(false for NaN), NaN falls through to a piece that varies with x, and a constant piece
keeps NaN in (`sign(x)*0 + c`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp

from codegen.front.functions import sigmoid, softplus
from codegen.judge import accuracy
from codegen.lower import Regimes
from codegen.regimes_form import clips_to_finite
from codegen.timebound import SymPyTimeout, budgeted_limit

LIMIT_SECONDS = 2.0  # of work (`timebound`): lbeta's longest limit is 17344 SymPy objects


OTHER_VALUES = (-2.5, -0.5, 0.5, 3.0)  # where the other args sit when one is infinite


def _limit(expr: sp.Expr, arg: sp.Symbol, towards) -> sp.Expr | None:
    """The real limit of `expr` as `arg` tends to `towards`, finite or +-oo (it may depend on
    the other args), or None. f_xy = -f_xx of a function of x - y: one limit for both."""
    if expr.could_extract_minus_sign():
        value = _limit_of(-expr, arg, towards)
        return None if value is None else -value
    return _limit_of(expr, arg, towards)


@functools.lru_cache(maxsize=512)  # both passes of a promoted op ask for the same limits
def _limit_of(expr: sp.Expr, arg: sp.Symbol, towards) -> sp.Expr | None:
    # in exps, SymPy's limit finds what it cannot through sigmoid or softplus (sin and cos
    # stay as they are: in exps they would be complex)
    try:
        with budgeted_limit(LIMIT_SECONDS, "limits"):
            value = sp.limit(expr.rewrite([sigmoid, softplus], sp.exp), arg, towards)
    except (Exception, SymPyTimeout):  # noqa: BLE001 - SymPy raises many kinds
        return None
    if arg in value.free_symbols or value.has(sp.Limit, sp.AccumBounds, sp.zoo, sp.nan):
        return None  # no limit (sin(x) at inf is AccumBounds(-1, 1)), or none SymPy found
    if not (value.is_real or value in (sp.oo, -sp.oo)):
        return None
    return value  # a finite limit, or +-oo (poisson_nll's value at k = inf is inf, not NaN)


def clear_limits() -> None:
    """Forget the limits found: each build finds its own, within its own budget."""
    _limit_of.cache_clear()


def _number(limit: sp.Expr, at: dict) -> float:
    """`limit` at the other args' values, or NaN where it cannot be a float there."""
    try:
        return float(limit.subs(at))
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _probe_points(args, domains, k: int, point: float) -> np.ndarray:
    """Rows with arg k at `point` and every other arg at values inside its domain."""
    columns = []
    for i, (lo, hi) in enumerate(domains):
        inside = [v for v in OTHER_VALUES if lo < v < hi] if i != k else [point]
        columns.append(inside or [math.nan])
    rows = np.array(np.meshgrid(*columns, indexing="ij")).reshape(len(args), -1).T
    return rows[~np.isnan(rows).any(axis=1)]


def _misses(form, evaluate, rows: np.ndarray, args, limit: sp.Expr) -> bool:
    """True if `form` at `rows`, in float32 or float64, is not `limit` there (as that dtype
    rounds it; a limit below the smallest normal may come out as 0)."""
    for dtype in accuracy.DTYPES:
        t = np.dtype(dtype).type
        tiny = np.finfo(t).tiny
        with np.errstate(all="ignore"):
            got = evaluate(form, rows, dtype).astype(np.float64)
            want = [float(t(_number(limit, dict(zip(args, row))))) for row in rows]
        for g, w in zip(got, want):
            w = 0.0 if abs(w) < tiny else w
            if not (g == w or (w == 0.0 and abs(g) < tiny) or math.isnan(w)):
                return True
    return False


def _with_pieces(form, arg: sp.Symbol, below, above):
    """`form` with pieces for `arg` = -inf (`below`) and `arg` = inf (`above`), if not None."""
    if below is None and above is None:
        return form
    base = form if isinstance(form, Regimes) and form.arg == arg else Regimes(arg, (), (form,))
    return base.with_outer(
        None if below is None else (-math.inf, True, below),
        None if above is None else (math.inf, False, above),
    )


def with_limits(form, exact: sp.Expr, args, domains, evaluate):
    """`form`, with pieces at the infinities of each arg's domain where it misses the limit.

    `evaluate(form, rows, dtype)` computes a form as TensorFlow will. With several args, the
    limit in one arg may depend on the others (logaddexp at x = -inf is y); pieces for the
    later args enclose those of the earlier ones.
    """
    for k, (arg, (lo, hi)) in enumerate(zip(args, domains)):
        if arg not in exact.free_symbols:
            continue  # constant in this arg: its limit is the form itself
        below = _piece_at(form, exact, args, domains, evaluate, k, lo == -math.inf, -1)
        above = _piece_at(form, exact, args, domains, evaluate, k, hi == math.inf, +1)
        form = _with_pieces(form, arg, below, above)
    return form


def _piece_at(form, exact, args, domains, evaluate, k: int, reached: bool, side: int):
    """The limit of `exact` as arg k tends to side * inf, where `form` is NaN or infinite
    there and the limit is finite or ±inf; else None. A form finite at infinity is kept as it is
    (no limit is computed), unless it clips its input into the finite floats (total
    regimes: silu's x/(1 + exp(-|x|)) is the largest float at inf), and nothing here may fail
    a build."""
    if not reached:
        return None
    rows = _probe_points(args, domains, k, side * math.inf)
    if not len(rows):
        return None
    try:
        finite = all(np.isfinite(evaluate(form, rows, d)).all() for d in accuracy.DTYPES)
        if finite and not clips_to_finite(form):
            return None
        limit = _limit(exact, args[k], side * sp.oo)
        if limit is None or not _misses(form, evaluate, rows, args, limit):
            return None
        evaluate(limit, rows, "float64")  # the piece must lower and run
    except (TypeError, ValueError, ArithmeticError):  # a limit hogen cannot compute with
        return None
    return limit
