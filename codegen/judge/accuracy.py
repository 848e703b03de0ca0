"""Accuracy as docs/design.md defines it: sample points, exact references, bits of error.

In: a SymPy expression, its symbols, a domain per symbol and a dtype name
("float32" or "float64"). Out: `sample_points` (the inputs every figure is
measured at), `reference` (the exact value at each point, correctly rounded to
the dtype: 0.0 where it rounds below the smallest normal, ±inf where it
overflows, NaN where the point is not scored) and `bits_error`, `failure_mask`
and `figures` (how far an op's output lies from it, and whether that keeps the
promise).

The reference runs the expression in python-flint `arb` balls (`balls`) at doubling
precision (64 to 16384 bits) until both ends of the ball round to the same float (`ladder`;
where that never happens, once more with exact complements of saturating functions:
erf(x + 1) - erf(x) at x = 1000 as erfc(x) - erfc(x + 1)). arb's exp overflows only for
arguments of 2**(2 * precision) or more, so doubling also cures overflow: from 512 bits
every float argument is fine, and at 16384 bits exp(2**32767) takes 3 ms (mpmath.iv needs
26 s for 2**16384, so it is no fallback). Where an operand is exactly 0 (sin(x)/x at 0) the
value is SymPy's limit, if both sides agree. The sample points come from `sampling` (never
subnormal: TensorFlow flushes them to 0 on CPU).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import sigmoid, softplus
from codegen.judge import ladder, portable
from codegen.judge.nearest import FORMAT
from codegen.judge.sampling import CHOICE_SEEDS, VERIFY_SEED, ordinal, sample_points
from codegen.timebound import WORK_PER_SECOND, SymPyTimeout, time_limit, work_done

__all__ = [
    "CHOICE_SEEDS",
    "DTYPES",
    "MEAN_LIMIT",
    "P99_LIMIT",
    "VERIFY_SEED",
    "Figures",
    "sample_points",
    "ordinal",
    "reference",
    "default_cache_dir",
    "bits_error",
    "failure_mask",
    "figures",
    "exact_sum",
    "exact_mean",
]

DTYPES = ("float32", "float64")
MEAN_LIMIT = 1.5
P99_LIMIT = 8.0
_CACHE_VERSION = b"hogen-accuracy-4"  # 4: complements where the ladder ends unresolved
LIMIT_SECONDS = 2.0  # SymPy's limit at a point where an operand is 0 (x/x, sin(x)/x)
LIMITS_BUDGET_SECONDS = 5.0  # all limits of one reference call, in work (`timebound`): at
# SymPy's 5000 to 8000 objects a second in limits, 9 to 15 CPU s
LIMITS_GUARD_FACTOR = 4.0  # and at most this many times as many CPU seconds


@dataclass(frozen=True)
class Figures:
    """Accuracy over the scored points: mean and p99 bits of error, failures, how many scored."""

    mean_bits: float
    p99_bits: float
    failures: int
    scored: int

    def keeps_promise(self) -> bool:
        """True if mean <= 1.5 bits, p99 <= 8 bits and nothing failed."""
        return self.broken_criteria() == 0

    def broken_criteria(self) -> int:
        """How many of the promise's three criteria (failures, p99, mean) these figures break."""
        return (self.failures > 0) + (self.p99_bits > P99_LIMIT) + (self.mean_bits > MEAN_LIMIT)


def _evaluate(
    expr: sp.Expr, symbols: tuple[sp.Symbol, ...], points: np.ndarray, dtype: str
) -> np.ndarray:
    """The reference, uncached: arb at doubling precision, then limits where an operand is 0."""
    return _evaluate_joint((expr,), symbols, points, dtype)[0]


def _evaluate_joint(exprs, symbols: tuple[sp.Symbol, ...], points, dtype: str) -> list:
    """The references of several expressions at the same points: each point where `ladder`
    resolves it, then, for one symbol, SymPy's limits where an operand was 0."""
    rows = [tuple(float(v) for v in row) for row in points]
    outs, status = ladder.evaluate_rows(exprs, symbols, rows, dtype)
    if len(symbols) == 1:
        for expr, out, its_status in zip(exprs, outs, status, strict=True):
            _limits_where_zero(expr, symbols[0], rows, out, its_status, dtype)
    return [out.astype(dtype) for out in outs]


def _limits_where_zero(expr, x: sp.Symbol, rows, out: np.ndarray, status, dtype: str) -> None:
    """Fill `out` with SymPy's limits where an operand was 0, within this call's budget: of
    work (`timebound`, the same on every machine), and, as a guard, of CPU time, which
    mpmath's arithmetic inside SymPy's limits spends without building SymPy objects (0.7 s a
    point, 135 s in all, for log(erf(x + 1) - erf(x))'s partials before `ladder`'s
    complements)."""
    deadline = work_done() + LIMITS_BUDGET_SECONDS * WORK_PER_SECOND
    cpu_deadline = time.process_time() + LIMITS_GUARD_FACTOR * LIMITS_BUDGET_SECONDS
    for i in (i for i, s in enumerate(status) if s in ("zero", "undefined")):
        if work_done() > deadline or time.process_time() > cpu_deadline:
            break  # the rest are not scored: no build waits on SymPy point by point
        out[i] = _limit_value(expr, x, rows[i][0], dtype)


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
    except (NotImplementedError, ValueError, ArithmeticError, TypeError, SymPyTimeout):
        return None  # no limit found in time: the point is not scored
    lim = sides.pop()
    return lim if not sides and lim.is_real and lim.is_finite else None


def _limit_value(expr: sp.Expr, x: sp.Symbol, at: float, dtype: str) -> float:
    lim = _limit(expr, x, sp.Rational(at))
    return math.nan if lim is None else float(_evaluate(lim, (), np.zeros((1, 0)), dtype)[0])


def default_cache_dir() -> Path:
    """Where callers keep references: $HOGEN_CACHE, else the user's cache folder by the
    platform's convention (XDG on Linux: $XDG_CACHE_HOME/hogen or ~/.cache/hogen; macOS:
    ~/Library/Caches/hogen; Windows: %LOCALAPPDATA%\\hogen\\Cache), never the working folder."""
    if os.environ.get("HOGEN_CACHE"):
        return Path(os.environ["HOGEN_CACHE"])
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "hogen" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "hogen"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else home / ".cache") / "hogen"


def _save_atomic(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _rows(points: np.ndarray) -> np.ndarray:
    pts = np.ascontiguousarray(points)
    return pts.reshape(len(pts), -1) if pts.ndim == 1 else pts


def _cache_path(expr, symbols, pts: np.ndarray, dtype: str, cache_dir: Path) -> Path:
    parts = [
        _CACHE_VERSION,
        sp.srepr(expr),
        ",".join(s.name for s in symbols),
        dtype,
        pts.dtype.str,
        str(pts.shape),
    ]
    key = hashlib.sha256("\0".join(map(str, parts)).encode() + pts.tobytes()).hexdigest()
    return Path(cache_dir) / f"{key}.npy"


def reference(
    expr: sp.Expr,
    symbols: tuple[sp.Symbol, ...],
    points: np.ndarray,
    dtype: str,
    *,
    cache_dir: Path | None = None,
) -> np.ndarray:
    """The exact value of expr at each row of points, correctly rounded to dtype.

    0.0 where it rounds below the smallest normal, ±inf where it overflows, NaN where it has
    no real value and no limit. With `cache_dir`, results are kept there as .npy files.
    """
    if dtype not in FORMAT:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    pts, symbols = _rows(points), tuple(symbols)
    if cache_dir is None:
        return _evaluate(expr, symbols, pts, dtype)
    path = _cache_path(expr, symbols, pts, dtype, cache_dir)
    with contextlib.suppress(OSError, ValueError):
        return np.load(path)
    result = _evaluate(expr, symbols, pts, dtype)
    _save_atomic(path, result)
    return result


def prepare_references(exprs, symbols, points: np.ndarray, dtype: str, cache_dir: Path) -> None:
    """Keep in `cache_dir` the references of `exprs` at `points` that are not there yet,
    found together (`_evaluate_joint`: a function's partials share most of their work), so
    `reference` then loads each. Where they cannot be found together (the reference cannot
    evaluate one), nothing is kept: `reference` finds each alone, and says why it cannot."""
    pts, symbols = _rows(points), tuple(symbols)
    paths = {e: _cache_path(e, symbols, pts, dtype, cache_dir) for e in exprs}
    missing = [e for e, path in paths.items() if not path.exists()]
    if len(missing) < 2:
        return
    try:
        found = _evaluate_joint(missing, symbols, pts, dtype)
    except Exception:  # noqa: BLE001 - `reference` raises it, expression by expression
        return
    for expr, values in zip(missing, found, strict=True):
        _save_atomic(paths[expr], values)


def bits_error(approx: np.ndarray, exact: np.ndarray, dtype: str) -> np.ndarray:
    """Per point log2(1 + |ord(approx) - ord(exact)|), with the design's rules for NaN, inf, 0."""
    t = np.dtype(dtype)
    width, tiny = 8 * t.itemsize, np.finfo(t).tiny
    a, e = np.asarray(approx).astype(t), np.asarray(exact).astype(t)
    oa, oe = ordinal(a), ordinal(e)
    same_side = np.abs(oa - oe).astype(np.float64)  # exact in int64 when signs agree
    bits = _log2_1p(
        np.where(
            (oa >= 0) == (oe >= 0),
            same_side,
            np.abs(oa).astype(np.float64) + np.abs(oe).astype(np.float64),
        )
    )
    with np.errstate(invalid="ignore"):
        bits[(e == 0) & (np.abs(a) < tiny)] = 0.0
        bits[np.isfinite(e) & ~np.isfinite(a)] = width
        bits[np.isinf(e)] = np.where(a == e, 0.0, width)[np.isinf(e)]
    bits[np.isnan(e)] = np.nan
    return bits


_SMALL_DISTANCES = 1024
_LOG2_1P_SMALL = portable.log2(1.0 + np.arange(_SMALL_DISTANCES, dtype=np.float64))


def _log2_1p(distance: np.ndarray) -> np.ndarray:
    """portable.log2(1 + distance) of whole numbers of units; the small ones (most points of
    most forms) from a table of the same function's values."""
    out = np.empty_like(distance)
    small = distance < _SMALL_DISTANCES
    out[small] = _LOG2_1P_SMALL[distance[small].astype(np.intp)]
    out[~small] = portable.log2(1.0 + distance[~small])
    return out


def failure_mask(approx: np.ndarray, exact: np.ndarray, dtype: str) -> np.ndarray:
    """True where approx is NaN, inf or 0 while exact is a finite, non-zero normal number."""
    t = np.dtype(dtype)
    a, e = np.asarray(approx).astype(t), np.asarray(exact).astype(t)
    with np.errstate(invalid="ignore"):
        normal = np.isfinite(e) & (np.abs(e) >= np.finfo(t).tiny)
    return normal & (~np.isfinite(a) | (a == 0))


def exact_sum(values) -> float:
    """The sum of `values` correctly rounded (`math.fsum`), the same on every processor:
    NumPy adds in an order its SIMD level chooses, and a mean of bits, which come in few
    distinct values, can sit on a rounding boundary of its printed figure (sigmoid's float64
    f' mean of 0.715 printed 0.72 with AVX-512 and 0.71 without)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    exact = _sum_as_integers(flat)
    return math.fsum(flat.tolist()) if exact is None else exact


_EXPONENT_SPAN = 9  # of the nonzero values, for `_sum_as_integers`: 2**(53 + 9) fits int64


def _sum_as_integers(flat: np.ndarray) -> float | None:
    """The correctly rounded sum of finite values whose exponents span at most
    `_EXPONENT_SPAN` (errors in bits, costs of regimes), as `math.fsum` gives it, in integer
    arithmetic: each is a whole number of units of 2**-53 of the smallest exponent, and
    integers add exactly in any order. None where that does not apply."""
    nonzero = flat[flat != 0]
    if nonzero.size == 0:
        return 0.0
    if not np.isfinite(nonzero).all():
        return None
    exponents = np.frexp(nonzero)[1]
    lowest = int(exponents.min())
    if int(exponents.max()) - lowest > _EXPONENT_SPAN:
        return None
    units = np.ldexp(nonzero, 53 - lowest).astype(np.int64)  # exact: whole numbers
    high, low = units >> 31, units & (2**31 - 1)
    total = (int(high.sum()) << 31) + int(low.sum())
    return math.ldexp(float(total), lowest - 53)


def exact_mean(values) -> float:
    """The mean of `values` from their `exact_sum`; 0.0 for none."""
    size = np.size(values)
    return exact_sum(values) / size if size else 0.0


def figures(approx: np.ndarray, exact: np.ndarray, dtype: str, bits=None) -> Figures:
    """Figures over the scored points; p99 is numpy's percentile with method="higher".
    `bits`: `bits_error(approx, exact, dtype)` where the caller has it already."""
    scored = ~np.isnan(np.asarray(exact).astype(dtype))
    if not scored.any():
        return Figures(0.0, 0.0, 0, 0)
    bits = (bits_error(approx, exact, dtype) if bits is None else bits)[scored]
    return Figures(
        exact_mean(bits),
        float(np.percentile(bits, 99, method="higher")),
        int(failure_mask(approx, exact, dtype)[scored].sum()),
        int(scored.sum()),
    )
