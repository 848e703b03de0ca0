"""Screening points inside each piece of a chosen form's regimes, every other arg spread wide.

In: a chosen form (SymPy, or `Regimes` nested to any depth), the spec's args and domain, a
dtype. Out: `piece_points`, up to `PIECE_POINTS` rows per piece whose split args lie in the
piece's interval, or an empty array where the form has no regimes on a single arg.

Why: a piece is chosen on the sample points that fall in it, and where the piece is a narrow
interval far from 0 few do, fewer still with the other args at their extremes. poisson_nll's
value took exp(r) alone on r >= 622, right where r is large and k moderate; at r = 650 and
k = 1e300 it gave 1.96e282 for 3.98e301. In float64 that corner holds about 1 in 10^4 of a
sample uniform in bit patterns. Here the piece's arg is drawn within one binade of each finite
bound, near the dtype's extremes at each infinite one and over its bit patterns, and each
other arg on a ladder of powers of two across the whole exponent range, so the corner holds
about 1 in 200.
"""

from __future__ import annotations

import numpy as np

from codegen.judge import accuracy
from codegen.judge.sampling import powers_of_two
from codegen.lower import Regimes

PIECE_POINTS = 2048  # per piece and dtype
MAX_PIECES = 8  # pieces screened per form, the first ones in order of the nesting
LADDER_STEP = 4  # exponents between neighbouring rungs of an unsplit arg's ladder
TOP_BINADES = 16  # an unbounded end of a piece is drawn this close to the dtype's largest value


def _pieces(form, box: dict, split: bool):
    """(box, split) for each leaf of `form`'s regimes: `box` maps an arg to the interval its
    enclosing pieces give it; `split` says whether any piece bounded an arg."""
    if not isinstance(form, Regimes):
        yield box, split
        return
    edges = (-np.inf, *form.bounds, np.inf)
    for i, inner in enumerate(form.forms):
        narrowed = dict(box)
        if form.arg in box:  # an arg, not an expression of several (x*y, x - y)
            lo, hi = max(box[form.arg][0], edges[i]), min(box[form.arg][1], edges[i + 1])
            if lo > hi:
                continue  # the piece owns nothing inside the enclosing ones
            narrowed[form.arg] = (lo, hi)
        yield from _pieces(inner, narrowed, split or form.arg in box)


def _ladder(lo: float, hi: float, dtype: str) -> np.ndarray:
    """0, ±1 and ±2^e for every `LADDER_STEP`-th exponent of `dtype`, those in [lo, hi]."""
    info = np.finfo(dtype)
    exponents = np.arange(info.minexp, info.maxexp, LADDER_STEP, dtype=np.float64)
    magnitudes = np.concatenate([[0.0, 1.0], 2.0**exponents])
    values = np.concatenate([magnitudes, -magnitudes]).astype(dtype)
    wide = values.astype(np.float64)
    return values[(wide >= lo) & (wide <= hi)]


def values_within(lo: float, hi: float, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Values of [lo, hi]: uniform within one binade of each finite bound, within
    `TOP_BINADES` of the dtype's extreme at each infinite one, and over the interval's bit
    patterns (`accuracy.sample_points`)."""
    seed = int(rng.integers(1 << 30))
    parts = [accuracy.sample_points(((lo, hi),), dtype, PIECE_POINTS // 2, seed)[:, 0]]
    top = float(np.finfo(dtype).max)
    for bound, inward in ((lo, 1.0), (hi, -1.0)):
        steps = rng.uniform(0, 1, PIECE_POINTS // 4)
        if np.isfinite(bound):
            near = bound + inward * max(abs(bound), 1.0) * steps
        else:  # within TOP_BINADES of the dtype's largest value, where intermediates overflow
            near = -inward * top * powers_of_two(-TOP_BINADES * steps)
        with np.errstate(over="ignore"):  # past float32's range: inf, dropped below
            parts.append(near.astype(dtype))
    values = np.concatenate(parts)
    with np.errstate(over="ignore"):  # the piece owns [lo, hi) as the op compares, in dtype
        lo_d, hi_d = np.array([lo, hi]).astype(dtype)
    return values[(values >= lo_d) & ((values < hi_d) | (values == lo_d)) & np.isfinite(values)]


def piece_points(form, args, domain, dtype: str, seed: int) -> np.ndarray:
    """Rows drawn inside each piece of `form`'s regimes on single args (module docstring)."""
    rng = np.random.default_rng(seed)
    whole = {arg: (float(lo), float(hi)) for arg, (lo, hi) in zip(args, domain)}
    rows = [np.zeros((0, len(args)), dtype)]
    for box, split in list(_pieces(form, whole, False))[:MAX_PIECES]:
        if not split:
            continue
        columns = []
        for arg in args:
            lo, hi = box[arg]
            if not lo < hi:
                break
            split_here = box[arg] != whole[arg]
            values = values_within(lo, hi, dtype, rng) if split_here else _ladder(lo, hi, dtype)
            if not len(values):
                break
            columns.append(rng.choice(values, PIECE_POINTS))
        else:
            rows.append(np.stack(columns, axis=1).astype(dtype))
    return np.concatenate(rows)
