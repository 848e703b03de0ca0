"""Screening a chosen form at points it was not chosen on, for failures the sample missed.

In: a spec, one partial's exact expression, the form chosen for it, the other candidates
measured, and the `Samples` it was chosen on. Out: `screened`, those samples with the points
added where the chosen form fails (NaN, inf or 0 where the exact value is a finite normal
number) or is grossly wrong, among `SCREEN_POINTS` more per dtype of seed `SCREEN_SEED` and the
points just past the edges where the form's output is flushed; or None where none fails.

Why: the failures met at points no build chose on are mostly a narrow band the sample
missed, where an intermediate leaves the float range while the result does not: selu's f'
in float32 at x = -87.85, where exp(x) is subnormal and flushed while 1.76*exp(x) is
1.24e-38; gelu's f'' in float64 at x = 37.69, where the Gaussian underflows and x**2 times
it is -1.6e-306. Finding such a point needs no exact value until the form's output there is
NaN, inf, 0 or subnormal while another computation of it is a normal number: the same form
in float64 for float32, or one of the best other candidates. Only those points get exact
values, `MAX_SUSPECTS` per dtype at most, so screening costs the mirror's cheap evaluations.
Bands that start where the form's output is flushed are found at their edge by bisection
(`_past_edges`); others narrower than about 1/SCREEN_POINTS of the spread can be missed,
except inside a piece of the form's regimes, which gets points of its own (`piece_points`).

The same points find gross errors: outputs that are normal numbers but wrong in their leading
bits (`GOOD_BITS`), which the promise's p99 lets through where they cover less than 1% of the
sample, and an unlucky sample less. d_log1p_xy_over_y's f_yy took a float32 form of its own, a
series in y that diverges where x*y > 1: 0.9% of the build's sample, p99 6 bits there, and
-8.4e12 for 2.15 at (10, 1). Suspects are the points where the form is that far from the
float64 outputs of a proxy; those whose exact value shows the gross error join the sample.
"""

from __future__ import annotations

import math

import numpy as np

from codegen.judge import accuracy, portable
from codegen.judge.numeric import PATHS
from codegen.stabilize.measuring import Samples, evaluate, param_values
from codegen.stabilize.piece_points import piece_points

SCREEN_SEED = 3  # neither the builds' seeds (judge.CHOICE_SEEDS) nor verify's (VERIFY_SEED)
SCREEN_POINTS = 4000  # per dtype, twice verify's
MAX_SUSPECTS = 32  # points per dtype whose exact value is computed
PROXIES = 4  # the best ranked other candidates whose outputs say a value is normal
AS_DERIVED = "sympy"  # the derivative as SymPy wrote it: exact algebra, never an approximation


def _outputs(form, spec, points: np.ndarray, dtype: str, promoted: bool, paths=("eager",)):
    """`form` at `points` as the op computes `dtype` (float32 in float64 when `promoted`), one
    row per path of `paths`."""
    compute = "float64" if promoted and dtype == "float32" else dtype
    rows = []
    with np.errstate(all="ignore"):
        for path in paths:
            rows.append(evaluate(form, spec, points.astype(compute), compute, path).astype(dtype))
    return np.stack(rows)


def _on_every_path(form, spec, points: np.ndarray, dtype: str, promoted: bool) -> np.ndarray:
    """The form's outputs on each path the op may run (`numeric.PATHS`): XLA's rewrites
    flush what eager mode does not (d_inv_sq_cancel's f_x in float32 at x = 4.7e9, where
    a/b/c became a/(b*c) and b*c overflowed, gave -0.0 for -2.38e-38)."""
    return _outputs(form, spec, points, dtype, promoted, PATHS)


def _normal(values: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (np.abs(values) >= np.finfo(dtype).tiny)


GOOD_BITS = 4  # an output with fewer right bits than this is grossly wrong


def _gross(dtype: str) -> float:
    """Bits of error (`accuracy.bits_error`) past which fewer than `GOOD_BITS` are right."""
    return float(np.finfo(dtype).nmant + 1 - GOOD_BITS)


def _suspects(chosen, proxies, spec, points: np.ndarray, dtype: str, promoted: bool, edges: int):
    """(indices of `points` where the chosen form fails or is grossly wrong, as far as the
    proxies tell, failures first; the chosen form's outputs, one row per path). The last
    `edges` points lie just past an edge into a flush (`_past_edges`): each is a suspect by
    itself, since there no proxy need be normal (d_silu_diff's f_xx in float64 at
    x - y = 709.7, where every proxy flushed sigmoid(-x + y) as the chosen form did)."""
    out = _on_every_path(chosen.form, spec, points, dtype, promoted)
    failing = _failure_suspects(out, proxies, chosen, spec, points, dtype, promoted)
    past = np.arange(len(points) - edges, len(points))
    failing = np.concatenate([past, failing[~np.isin(failing, past)]])
    gross = _gross_suspects(out, proxies, spec, points, dtype)
    suspects = np.concatenate([failing, gross[~np.isin(gross, failing)]])
    return suspects[:MAX_SUSPECTS], out


def _gross_suspects(out: np.ndarray, proxies, spec, points: np.ndarray, dtype: str):
    """Indices of `points` where the chosen form's outputs `out` are grossly off the float64
    outputs of some proxy, taken from each proxy in turn, each proxy's those most proxies
    disagree with first. Ordered by votes alone, two poor proxies' own errors filled
    `MAX_SUSPECTS` (poisson_nll's value at r = 314, k = 6e140, where its log-sigmoid versions
    are wrong) ahead of a gross error only the derivative as derived saw (r = 410.8,
    k = 2.4e203, where the chosen form took exp(r) alone)."""
    flagged = []
    with np.errstate(all="ignore"):
        for proxy in proxies:
            wide = _outputs(proxy.form, spec, points.astype(np.float64), "float64", False)[0]
            bits = np.stack([accuracy.bits_error(o, wide, dtype) for o in out])
            off = np.nan_to_num(bits, nan=0.0).max(axis=0) > _gross(dtype)
            flagged.append(off & _normal(wide.astype(dtype), dtype))
    if not flagged:
        return np.zeros(0, dtype=int)
    votes = np.sum(flagged, axis=0)
    by_proxy = [np.nonzero(f)[0][np.argsort(-votes[f], kind="stable")] for f in flagged]
    longest = max(len(idx) for idx in by_proxy)
    turns = [idx[k] for k in range(longest) for idx in by_proxy if k < len(idx)]
    return np.asarray(list(dict.fromkeys(turns)), dtype=int)


def _failure_suspects(out: np.ndarray, proxies, chosen, spec, points, dtype, promoted):
    """Indices of `points` where the chosen form's outputs `out` are not a normal number on
    some path while the form in float64 (for float32) or a proxy is."""
    suspect = ~_normal(out, dtype).all(axis=0)
    if not suspect.any():
        return np.zeros(0, dtype=int)
    others = np.zeros_like(suspect)
    if dtype == "float32" and not promoted:
        wide = _outputs(chosen.form, spec, points.astype("float64"), "float64", False)
        with np.errstate(over="ignore"):
            others |= _normal(wide.astype(dtype), dtype)[0]
    for proxy in proxies:
        others |= _normal(_outputs(proxy.form, spec, points, dtype, promoted), dtype)[0]
    return np.nonzero(suspect & others)[0]


EDGE_STEPS = 64  # bisections of each edge: to one ulp of float64 from a spread of 2**64


def _past_edges(form, spec, points: np.ndarray, dtype: str, promoted: bool) -> np.ndarray:
    """For a one-arg spec, the first point past each edge between neighbouring screening
    points (for more args, `_past_edges_between`) where the form's output goes from a normal
    number to 0 or a subnormal, found by bisection: a band where an intermediate is flushed
    while the result is normal starts there, however narrow (gelu's f' in float32 at
    x = -13.33, where exp(-x**2/2) is flushed and x times it is -1.34e-38; the band is 0.12
    wide). Not edges into inf or NaN (the
    sample's points around max**(1/k) find overflows), nor points that are themselves
    subnormal: frameworks flush those inputs to 0 on CPU."""
    if points.shape[1] != 1:
        return _past_edges_between(form, spec, points, dtype, promoted)
    x = np.unique(points[:, 0])
    normal = _normal(_on_every_path(form, spec, x[:, None], dtype, promoted), dtype).all(axis=0)
    edges = np.nonzero(normal[1:] != normal[:-1])[0]
    lo, hi, lo_normal = x[edges], x[edges + 1], normal[edges]
    for _ in range(EDGE_STEPS):
        mid = (lo.astype(np.float64) / 2 + hi.astype(np.float64) / 2).astype(points.dtype)
        inside = (mid != lo) & (mid != hi)
        out = _on_every_path(form, spec, mid[:, None], dtype, promoted)
        at_mid = _normal(out, dtype).all(axis=0)
        to_hi = inside & (at_mid == lo_normal)
        lo, hi = np.where(to_hi, mid, lo), np.where(inside & ~to_hi, mid, hi)
    past = np.where(lo_normal, hi, lo)  # the side where the output is not normal
    with np.errstate(invalid="ignore"):
        out = _on_every_path(form, spec, past[:, None], dtype, promoted)
        flushed = (np.abs(out) < _tiny(dtype)).any(axis=0)
    return past[flushed & (np.abs(past) >= _tiny(dtype))][:, None]


EDGE_PAIRS = 16  # flushed points of a many-arg spec, each bisected toward a normal one
SCALE_STEPS = 40  # bisections on `_to_scale`: its spread of 2.9e3 to 3e-9


def _past_edges_between(form, spec, points: np.ndarray, dtype: str, promoted: bool):
    """For a spec of several args, up to `EDGE_PAIRS` points past an edge into 0 or a
    subnormal: each of that many points where the form's output is flushed is bisected toward
    the nearest point where it is normal, on the scale of magnitudes (`_to_scale`), and the
    first flushed point found is kept. d_logistic_nll's f_xy = x*y*exp(-x*y)/... in float32
    is flushed from x*y = 87.3 on and its value normal up to x*y = 91.9."""
    tiny, empty = _tiny(dtype), np.zeros((0, points.shape[1]), dtype=points.dtype)
    with np.errstate(invalid="ignore"):
        out = _on_every_path(form, spec, points, dtype, promoted)
        normal, flushed = _normal(out, dtype).all(axis=0), (np.abs(out) < tiny).any(axis=0)
    to, near = np.nonzero(flushed)[0], np.nonzero(normal)[0]
    if not len(to) or not len(near):
        return empty
    to = to[np.linspace(0, len(to) - 1, min(EDGE_PAIRS, len(to))).astype(int)]
    scaled = _to_scale(points.astype(np.float64), tiny)
    gaps = ((scaled[to, None, :] - scaled[None, near, :]) ** 2).sum(axis=2)
    lo, hi = scaled[near[gaps.argmin(axis=1)]], scaled[to]
    for _ in range(SCALE_STEPS):  # eager mode's edge; the point past it is judged on all paths
        mid = lo / 2 + hi / 2
        at, ends = (_from_scale(v, tiny).astype(points.dtype) for v in (mid, (lo, hi)))
        if np.all((at == ends[0]) | (at == ends[1])):
            break  # every pair is one ulp of the dtype apart
        ok = _normal(_outputs(form, spec, at, dtype, promoted), dtype)[0]
        lo, hi = np.where(ok[:, None], mid, lo), np.where(ok[:, None], hi, mid)
    past = _from_scale(hi, tiny).astype(points.dtype)
    with np.errstate(invalid="ignore"):
        out = _on_every_path(form, spec, past, dtype, promoted)
        keep = (np.abs(out) < tiny).any(axis=0) & ~((past != 0) & (np.abs(past) < tiny)).any(axis=1)
    return past[keep] if keep.any() else empty


def _to_scale(values: np.ndarray, tiny: float) -> np.ndarray:
    """A monotone map of floats on which bisection crosses decades evenly: v/tiny up to tiny,
    then 1 + log(|v|/tiny), signed."""
    size = np.abs(values)
    logs = portable.log(np.maximum(size, tiny)) - math.log(tiny) + 1
    return np.sign(values) * np.where(size > tiny, logs, np.minimum(size, tiny) / tiny)


def _from_scale(scaled: np.ndarray, tiny: float) -> np.ndarray:
    """The inverse of `_to_scale`."""
    size = np.abs(scaled)
    with np.errstate(over="ignore"):
        big = portable.exp(np.maximum(size, 1) - 1 + math.log(tiny))
    return np.sign(scaled) * np.where(size > 1, big, size * tiny)


def _tiny(dtype: str) -> float:
    return float(np.finfo(dtype).tiny)


def _fails(approx: np.ndarray, exact: np.ndarray, dtype: str) -> np.ndarray:
    """Where `approx` fails (`accuracy.failure_mask`) or is grossly wrong, unless both it and
    the exact value are within the promise's p99 of rounding of the smallest normal: at an
    edge found by bisection the exact value is often the smallest normal itself, and a form
    one ulp low there is flushed (hypot's f_xy at (229.9, 1.4e20) in float32), which is no
    band a form could miss."""
    t = np.finfo(dtype)
    edge = float(t.tiny) * (1 + 2**accuracy.P99_LIMIT * float(t.eps))
    with np.errstate(invalid="ignore"):
        gross = np.nan_to_num(accuracy.bits_error(approx, exact, dtype), nan=0.0) > _gross(dtype)
        clear = np.abs(np.asarray(exact).astype(dtype)) > edge
        both_at_edge = ~clear & (np.abs(approx) <= edge)
    return (accuracy.failure_mask(approx, exact, dtype) & clear) | (gross & ~both_at_edge)


def _known(found: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Which rows of `found` are points of `sample` already: the choice was made knowing
    their failure (no candidate fixes it), and finding them again is no reason to choose again
    (d_sqrt_diff_two's f_xx in float64 at (0.979, 5.7e-308))."""
    return (found[:, None, :] == sample[None, :, :]).all(axis=2).any(axis=1)


def _proxies(chosen, tried) -> list:
    """The `PROXIES` best ranked candidates other than `chosen`, and the derivative as
    derived (`AS_DERIVED`) if it is not among them: where the best ones are all regimes
    with the same approximate piece, only it tells a gross error of that piece (poisson_nll's
    value, exp(r) alone from r = 396.7, at r = 410.8, k = 2.4e203: 1.3e205 in float64)."""
    others = [c for c in sorted(tried, key=lambda c: c.rank()) if c is not chosen]
    derived = [c for c in others[PROXIES:] if c.label == AS_DERIVED]
    return others[:PROXIES] + derived[:1]


def in_every_dtype(chosen) -> dict:
    """The candidate each dtype ships where one form ships in all (`screened`'s `shipped`)."""
    return {dtype: chosen for dtype in accuracy.DTYPES}


def screened(spec, exact_expr, shipped: dict, tried, samples: Samples, promoted: bool):
    """`samples` with the screening points added where the candidate each dtype ships
    (`shipped`, dtype to candidate) fails in that dtype, or None. Each form is screened in
    the dtype it ships in only: where float32 has a form of its own, float64's is never run
    in float32 (d_sqrt_diff_two's f_xx: float32's own regimes in x, which overflow where
    y > 1e33, went unscreened while float64's form found points and ended the round)."""
    expr = exact_expr.subs(param_values(spec))
    points, exact, found = dict(samples.points), dict(samples.exact), False
    for dtype in accuracy.DTYPES:
        chosen = shipped[dtype]
        proxies = _proxies(chosen, tried)
        pts = accuracy.sample_points(spec.domain, dtype, SCREEN_POINTS, SCREEN_SEED)
        past = _past_edges(chosen.form, spec, pts, dtype, promoted)
        inside = piece_points(chosen.form, spec.arg_symbols, spec.domain, dtype, SCREEN_SEED)
        pts = np.concatenate([pts, inside, past])
        suspects, out = _suspects(chosen, proxies, spec, pts, dtype, promoted, len(past))
        if not len(suspects):
            continue
        ref = accuracy.reference(
            expr, spec.arg_symbols, pts[suspects], dtype, cache_dir=accuracy.default_cache_dir()
        )
        failing = np.any([_fails(o[suspects], ref, dtype) for o in out], axis=0)
        failing &= ~_known(pts[suspects], points[dtype])
        if failing.any():
            found = True
            points[dtype] = np.concatenate([points[dtype], pts[suspects][failing]])
            exact[dtype] = np.concatenate([exact[dtype], ref[failing]])
    return Samples(points, exact) if found else None
