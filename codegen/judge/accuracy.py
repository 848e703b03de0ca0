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
value is the limit, if both sides agree (`removable`). The sample points come from `sampling` (never
subnormal: TensorFlow flushes them to 0 on CPU).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy as sp

from codegen.judge import ladder, portable, removable
from codegen.judge.nearest import FORMAT
from codegen.judge.sampling import CHOICE_SEEDS, VERIFY_SEED, ordinal, sample_points

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
    "plain",
]

plain = removable.plain  # `asymptotic` asks for it here
DTYPES = ("float32", "float64")
MEAN_LIMIT = 1.5
P99_LIMIT = 8.0
_CACHE_VERSION = b"hogen-accuracy-5"  # 5: limits read off the function near the point


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
    resolves it, then, for one symbol, the limits where an operand was 0 (`removable`)."""
    rows = [tuple(float(v) for v in row) for row in points]
    outs, status = ladder.evaluate_rows(exprs, symbols, rows, dtype)
    if len(symbols) == 1:
        for expr, out, its_status in zip(exprs, outs, status, strict=True):
            removable.fill_limits(expr, symbols[0], rows, out, its_status, dtype)
    return [out.astype(dtype) for out in outs]


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
    nonzero = flat[flat != 0]  # NaN is kept
    if nonzero.size == 0:
        return 0.0
    if not np.isfinite(nonzero).all():
        return math.fsum(nonzero.tolist())
    return _sum_as_integers(nonzero)


_EXPONENT_SPAN = 9  # of the values added as int64 at once: 2**(53 + 9) fits


def _sum_as_integers(nonzero: np.ndarray) -> float:
    """The correctly rounded sum of finite nonzero values, as `math.fsum` gives it, in integer
    arithmetic: each is a whole number of units of 2**-53 of the smallest exponent, and
    integers add exactly in any order. Values whose exponents span at most `_EXPONENT_SPAN`
    (errors in bits) add in one int64 pass; wider spans (regimes' costs, from 2**-40 to 64)
    in one pass per band of exponents, joined as Python integers (a fifth of a build's time
    went to `math.fsum` of them, most of it over zeros)."""
    exponents = np.frexp(nonzero)[1]
    lowest, highest = int(exponents.min()), int(exponents.max())
    if highest - lowest <= _EXPONENT_SPAN:
        return math.ldexp(float(_integer_total(nonzero, lowest)), lowest - 53)
    total = 0
    for low in range(lowest, highest + 1, _EXPONENT_SPAN + 1):
        band = nonzero[(exponents >= low) & (exponents <= low + _EXPONENT_SPAN)]
        total += _integer_total(band, low) << (low - lowest) if band.size else 0
    scale = lowest - 53  # total * 2**scale, rounded once (int division rounds correctly)
    return float(total << scale) if scale >= 0 else total / (1 << -scale)


def _integer_total(band: np.ndarray, low: int) -> int:
    """The sum of `band` in units of 2**(low - 53), exactly (each value below 2**(low + 9))."""
    units = np.ldexp(band, 53 - low).astype(np.int64)  # exact: whole numbers
    high, rest = units >> 31, units & (2**31 - 1)
    return (int(high.sum()) << 31) + int(rest.sum())


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
