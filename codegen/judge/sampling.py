"""The inputs every accuracy figure is measured at, and floats as ordered integers.

In: a domain per arg and a dtype name. Out: `sample_points`, a fixed-seed sample of the
domain in that dtype (special values, the domain's edges and their neighbours, and draws
uniform in the floats' bit patterns, never subnormal: TensorFlow flushes those to 0 on
CPU), with a share uniform in value over users' ordinary inputs where there are several args;
`ordinal`, the integer order of floats that `accuracy` counts ulps in, and its inverse
`from_ordinal`. Which seeds builds choose on and figures are measured at: `codegen.judge`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from codegen.judge import CHOICE_SEEDS, VERIFY_SEED  # noqa: F401 (re-exported)

_SPECIALS = (0.0, 1.0, -1.0, 20.0, -20.0, 40.0, -40.0, 88.0, -88.0, 100.0, -100.0, 700.0, -700.0)
# Inputs as users write them: |arg| up to this, or a decade of a domain that lies beyond it.
ORDINARY = 10.0
# The share of a several-arg sample drawn uniform in value over the ordinary box. Coordinates
# drawn one arg at a time, by bit pattern or log-uniformly, put fewer than 1 in 1000 points
# where x in [0, 10] is over 2 and y in [0, 1] over 0.2: log(1 + x*y)/y shipped a float32
# series that returns -204074 at x = 5, y = 0.5 and kept the measured promise.
ORDINARY_SHARE = 0.125


def ordinal(values: np.ndarray) -> np.ndarray:
    """int64 numbering float32 or float64 values in order; -0.0 and 0.0 are both 0."""
    v = np.asarray(values)
    if v.dtype not in (np.float32, np.float64):
        raise TypeError(f"ordinal expects float32 or float64, got {v.dtype}")
    wide = v.dtype == np.float64
    bits = np.ascontiguousarray(v).view(np.int64 if wide else np.int32).reshape(v.shape)
    bits = bits.astype(np.int64)
    return np.where(bits < 0, -(bits & (2 ** (63 if wide else 31) - 1)), bits)


def from_ordinal(ords: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return np.where(ords < 0, -ords | 2**31, ords).astype(np.uint32).view(np.float32)
    return np.where(ords < 0, -ords | np.int64(-(2**63)), ords).astype(np.int64).view(np.float64)


def _inner_edges(lo: float, hi: float, dtype: str) -> tuple:
    """The smallest and largest finite floats of `dtype` in [lo, hi]."""
    t = np.dtype(dtype).type
    fmax = float(np.finfo(t).max)
    with np.errstate(over="ignore"):  # a bound past float32's range compares as inf
        lo_f, hi_f = t(max(lo, -fmax)), t(min(hi, fmax))
        lo_f = np.nextafter(lo_f, t(np.inf)) if lo_f < lo else lo_f
        return lo_f, (np.nextafter(hi_f, t(-np.inf)) if hi_f > hi else hi_f)


def _specials(lo: float, hi: float, dtype: str) -> np.ndarray:
    """docs/design.md's special points in [lo, hi]: fixed values, edges, just inside them."""
    tiny = np.finfo(dtype).tiny
    lo_f, hi_f = _inner_edges(lo, hi, dtype)
    edges = ((lo_f, hi_f, lo), (hi_f, lo_f, hi))
    with np.errstate(over="ignore"):  # a domain past float32's range has an inf edge here
        inside = [np.nextafter(a, b) for a, b, edge in edges if abs(edge) < np.inf]
    inside = [np.copysign(tiny, v) if 0 < abs(v) < tiny else v for v in inside]  # never subnormal
    cands = np.array([*_SPECIALS, lo_f, hi_f, *inside]).astype(dtype)
    wide = cands.astype(np.float64)
    return _unique_rows(cands[(wide >= lo) & (wide <= hi)].reshape(-1, 1))[:, 0]


def _collect(draw, k: int) -> np.ndarray:
    """Up to k values from `draw(size)`, which returns only the values it keeps."""
    parts, got = [], 0
    for _ in range(8):
        if got < k:
            parts.append(draw(max(2 * (k - got), 16)))
            got += len(parts[-1])
    return np.concatenate(parts)[:k] if parts else np.empty(0)


def powers_of_two(exponents) -> np.ndarray:
    """2**e for each e, by the C library's pow, one value at a time: NumPy's vectorized
    power rounds differently at each SIMD level (an AVX-512 build drew other sample points
    than a baseline one, and sigmoid's figures came out different)."""
    return np.array([math.pow(2.0, float(e)) for e in exponents], dtype=np.float64)


def _draw_1d(lo: float, hi: float, dtype: str, k: int, rng: np.random.Generator) -> np.ndarray:
    """k values in [lo, hi]: half uniform over bit patterns, half ±2^U(-20, 10); none subnormal."""
    tiny, span = np.finfo(dtype).tiny, ordinal(np.array(_inner_edges(lo, hi, dtype)))
    if span[0] > span[1]:
        return np.empty(0, dtype)

    def bit_patterns(size):
        v = from_ordinal(rng.integers(span[0], span[1], size=size, endpoint=True), dtype)
        return v[(v == 0) | (np.abs(v) >= tiny)]

    def log_uniform(size):
        signs = rng.choice((-1.0, 1.0), size)
        v = (signs * powers_of_two(rng.uniform(-20, 10, size))).astype(dtype)
        return v[(v.astype(np.float64) >= lo) & (v.astype(np.float64) <= hi)]

    logs = _collect(log_uniform, k // 2)
    return rng.permutation(np.concatenate([_collect(bit_patterns, k - len(logs)), logs]))


def ordinary_range(lo: float, hi: float) -> tuple[float, float]:
    """The part of [lo, hi] where users' inputs mostly lie: [-ORDINARY, ORDINARY], or where
    the domain lies beyond it, its decade nearest 0 ([100, inf) gives [100, 1000])."""
    if lo <= ORDINARY and hi >= -ORDINARY:
        return max(lo, -ORDINARY), min(hi, ORDINARY)
    if lo > ORDINARY:
        return lo, min(hi, 10.0 * lo)
    return max(lo, 10.0 * hi), hi


def _ordinary_rows(domain, dtype: str, k: int, rng: np.random.Generator) -> np.ndarray:
    """Up to k rows uniform in value over the box of each arg's `ordinary_range`, rounded to
    `dtype` and kept where every coordinate stays in its domain (subnormals become 0)."""
    boxes = [ordinary_range(float(lo), float(hi)) for lo, hi in domain]
    tiny = np.finfo(dtype).tiny
    with np.errstate(over="ignore"):
        rows = np.stack([rng.uniform(a, b, 2 * k) for a, b in boxes], axis=1).astype(dtype)
    rows[np.abs(rows) < tiny] = 0.0
    wide = rows.astype(np.float64)
    inside = np.all(
        [(wide[:, j] >= lo) & (wide[:, j] <= hi) for j, (lo, hi) in enumerate(domain)], axis=0
    )
    return rows[inside & np.all(np.isfinite(wide), axis=1)][:k]


def _combinations(specials: list[np.ndarray], cap: int) -> np.ndarray:
    """Each special of each arg, the others all 0, 1 or -1 (where in domain); at most cap rows."""
    rows = []
    for k, sk in enumerate(specials):
        for s, c in itertools.product(sk, (0.0, 1.0, -1.0)):
            rows.append([s if j == k else c if c in sj else sj[0] for j, sj in enumerate(specials)])
    rows = _unique_rows(np.array(rows, dtype=specials[0].dtype))
    return rows[np.unique(np.linspace(0, len(rows) - 1, min(cap, len(rows))).astype(int))]


def _unique_rows(rows: np.ndarray) -> np.ndarray:
    """Rows without repeats (-0.0 counted as 0.0), in order of first appearance."""
    rows = rows + rows.dtype.type(0)
    return rows[np.sort(np.unique(rows, axis=0, return_index=True)[1])]


def sample_points(
    domain: tuple[tuple[float, float], ...], dtype: str, n: int = 2000, seed: int = 0
) -> np.ndarray:
    """Up to n unique points, shape (m, len(domain)), in `dtype`; the same for the same seed.

    Specials first (several args: their combinations, at most n // 5 rows), then rows whose
    coordinates are drawn independently by `_draw_1d`; where there are several args, an
    `ORDINARY_SHARE` of those rows is instead drawn uniform over the ordinary box.
    """
    rng = np.random.default_rng(seed)
    specials = [_specials(float(lo), float(hi), dtype) for lo, hi in domain]
    if min(len(s) for s in specials) == 0:
        return np.empty((0, len(domain)), dtype)
    head = specials[0].reshape(-1, 1) if len(domain) == 1 else _combinations(specials, n // 5)
    cols = [_draw_1d(float(lo), float(hi), dtype, max(n - len(head), 0), rng) for lo, hi in domain]
    body = np.stack([c[: min(map(len, cols))] for c in cols], axis=1).astype(dtype)
    if len(domain) > 1:
        ordinary = _ordinary_rows(domain, dtype, int(ORDINARY_SHARE * len(body)), rng)
        body = np.concatenate([body[: len(body) - len(ordinary)], ordinary])
    return _unique_rows(np.concatenate([head, body]))[:n]
