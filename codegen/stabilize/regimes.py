"""Regimes: split one arg's range at thresholds and use the best form in each piece.

In: the measured candidates of one partial, their per-point errors in bits
for each dtype, the sample points. Out: a `RegimeChoice` (a `lower.Regimes`
form and a label), or None when splitting does not help.

As Herbie does: sort all sample points by the arg, then dynamic programming
over prefix sums of each candidate's error picks the split with the least
total error, each extra piece costing a small penalty. Thresholds are the
simplest numbers between two neighbouring samples (0, a power of two, or a
short decimal), so the generated code reads `x < 0.25`, not `x < 0.2499871`.

Also here: which arg a partial's regimes split (`regime_column`), when a best form is worth
splitting (`needs_regimes`), and the derivative as written outside a finite domain
(`outside_domain`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from codegen.judge import accuracy
from codegen.lower import Regimes
from codegen.stabilize.measuring import MEAN_ROOM_BITS, P99_ROOM_BITS

MAX_PIECES = 5
PIECE_PENALTY = 8.0
# Errors of a few ulps cost nothing: pieces are added to remove real errors, not to shave
# tenths of a bit off the mean at the price of more ops and selects.
COST_FLOOR = 3.0
# Frugal regimes (`best_regimes`) count as free every error a form may have and still keep
# the promise with room for other processors: they add pieces only to keep the promise, and
# take the cheapest forms that keep it. Under where-lowering every piece is computed on every
# element, so each distinct form is paid for everywhere.
FRUGAL_FLOOR = accuracy.P99_LIMIT - P99_ROOM_BITS
MAX_FORMS = 8
# A piece of a split on one of several args (or on an expression of them) samples the other
# args at its own points only: one holding a point or two fixes those points, not a band.
# d_sqrt_x2_plus_y_plus_x (x + sqrt(x**2 + y)) had y in [171, 174) take -y/(2*x), right at
# the one float32 point there, at x = -3e38, and 31 bits off at x = 3.8e-34, y = 172.4.
SEVERAL_ARGS_LEAST = 8


@dataclass(frozen=True)
class RegimeChoice:
    label: str
    form: Regimes
    gaps: tuple[tuple[float, float], ...] = ()  # per bound, the samples it lies between


def _merged(
    bits: dict, points: dict, labels: list[str], coordinate, floor: float = COST_FLOOR
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points of every dtype sorted by `coordinate`, each label's cost at them, and the
    dtype (its index in `points`) each point came from."""
    xs, costs, groups = [], [], []
    for group, (dtype, pts) in enumerate(points.items()):
        xs.append(coordinate(pts))
        rows = [regime_cost(bits[label][dtype], floor) for label in labels]
        costs.append(np.stack(rows))
        groups.append(np.full(len(pts), group))
    x = np.concatenate(xs)
    cost = np.concatenate(costs, axis=1)
    order = np.argsort(x, kind="stable")
    return x[order], cost[:, order], np.concatenate(groups)[order]


def _latest_starts(groups: np.ndarray, least: int = 1) -> np.ndarray:
    """For each piece end j = 1..n (at index j - 1), the latest start s such that the points
    [s, j) hold at least `least` points of every dtype; -1 where there is none.

    A piece chosen at float32's points alone ships in float64 too, unmeasured: exprel's f'
    once took a Taylor series at 0 on [88.8, 91.2), where float32's exp overflows and the
    series was the least bad, and was wrong by 58 bits there in float64."""
    latest = np.full(len(groups), len(groups), dtype=np.int64)
    for g in np.unique(groups):
        at = np.nonzero(groups == g)[0]
        seen = np.cumsum(groups == g)  # points of g in [0, j)
        enough = seen >= least
        nth_last = np.full(len(groups), -1, dtype=np.int64)
        nth_last[enough] = at[seen[enough] - least]
        latest = np.minimum(latest, nth_last)
    return latest


def _column(points: np.ndarray, column: int) -> np.ndarray:
    return points[:, column].astype(np.float64)


def regime_cost(bits: np.ndarray, floor: float = COST_FLOOR) -> np.ndarray:
    """Bits of error as regimes count them: NaN (no exact value) and `floor` bits cost 0."""
    bits = np.nan_to_num(bits, nan=0.0)
    return np.where(bits > floor, bits, 0.0)


def _split_points(
    n_pieces: int, x: np.ndarray, cost: np.ndarray, groups: np.ndarray, least: int = 1
) -> list[tuple[int, int]]:
    """Best (start index, form index) per piece for at most `n_pieces` pieces, each holding
    at least `least` points of every dtype in `groups`."""
    k, n = cost.shape
    prefix = np.concatenate([np.zeros((k, 1)), np.cumsum(cost, axis=1)], axis=1)
    allowed = np.concatenate([[True], x[1:] > x[:-1], [True]])
    latest = _latest_starts(groups, least)
    supported, latest = latest >= 0, np.maximum(latest, 0)
    best = prefix.min(axis=0)  # one piece ending at j: best single form over [0, j)
    best[1:][~supported] = np.inf
    # the best split of [0, j) found so far: its last piece set in round set_in[j] (0: one
    # piece, form first[j]); round r's record holds, at each j it set, the last piece's start
    # and form and the round that had set the split of [0, start) before it
    first, set_in, rounds = prefix.argmin(axis=0), np.zeros(n + 1, dtype=np.int64), [None]
    for _ in range(1, n_pieces):
        new_best = np.full(n + 1, np.inf)
        start = np.zeros(n + 1, dtype=np.int64)  # the last piece's start; 0: one piece
        form_of = np.zeros(n + 1, dtype=np.int64)
        for form in range(k):
            start_cost = np.where(allowed, best - prefix[form], np.inf)
            run_min = np.where(supported, np.minimum.accumulate(start_cost)[latest], np.inf)
            total = run_min + prefix[form, 1:] + PIECE_PENALTY
            better = np.concatenate([[False], total < new_best[1:]])
            new_best[better] = total[better[1:]]
            start[better] = _running_argmin(start_cost)[latest][better[1:]]
            form_of[better] = form
        improved = np.nonzero((start > 0) & (new_best < best))[0]
        record = np.zeros((3, n + 1), dtype=np.int64)
        record[:, improved] = start[improved], form_of[improved], set_in[start[improved]]
        best[improved] = new_best[improved]
        set_in[improved] = len(rounds)
        rounds.append(record)
    return _pieces_of(n, set_in, rounds, first)


def _pieces_of(end: int, set_in: np.ndarray, rounds: list, first: np.ndarray) -> list:
    """The pieces of the best split of [0, end) (`_split_points`' records), first piece first."""
    pieces, r = [], int(set_in[end])
    while r:
        start, form, before = (int(v) for v in rounds[r][:, end])
        pieces.append((start, form))
        end, r = start, before
    pieces.append((0, int(first[end])))
    return pieces[::-1]


def _running_argmin(values: np.ndarray) -> np.ndarray:
    """Index of the first minimum of values[:i + 1], for each i."""
    before = np.minimum.accumulate(values)[:-1]
    new = np.concatenate([[True], values[1:] < before])
    return np.maximum.accumulate(np.where(new, np.arange(len(values)), 0))


def simplest_between(lo: float, hi: float) -> float:
    """The simplest float in (lo, hi]: 0, then ± a power of two, then the shortest decimal;
    the simplest whose float32 rounding lies in (lo, hi] too where there is one, so that the
    bound splits float32 inputs where it splits float64 ones. A float64 subnormal is no bound
    (TensorFlow on CPU compares it as 0: `_in_float64`)."""
    fits = [value for value in _simplest_first(lo, hi) if lo < _in_float64(value) <= hi]
    for value in fits:
        if lo < _in_float32(value) <= hi:
            return value
    return fits[0] if fits else hi


def _simplest_first(lo: float, hi: float):
    """Candidates for `simplest_between`, simplest first, some outside (lo, hi]."""
    if lo < 0.0 <= hi:
        yield 0.0
    sign = 1.0 if hi > 0 else -1.0
    b = max(abs(lo), abs(hi))
    if math.isfinite(b) and b > 0:
        yield sign * math.ldexp(1.0, min(math.floor(math.log2(b)), 1023))
    for digits in range(1, 18):
        yield float(f"{hi:.{digits}g}")
    yield hi


def _in_float32(value: float) -> float:
    """`value` as a float32 constant compares on CPU, where TensorFlow flushes subnormals."""
    with np.errstate(over="ignore"):
        rounded = float(np.float32(value))
    return rounded if abs(rounded) >= np.finfo(np.float32).tiny else 0.0


def _in_float64(value: float) -> float:
    """`value` as a float64 constant compares on CPU: 0 where it is subnormal."""
    return value if abs(value) >= np.finfo(np.float64).tiny else 0.0


def _split(lo: float, hi: float) -> tuple[float, bool]:
    """(bound, closed) for a split between neighbouring samples lo < hi.

    Where no threshold in (lo, hi] rounds into (lo, hi] in float32 (a float32 sample `lo` and
    a float64 sample less than half a float32 ulp above it, or 0 and a positive value below
    float32's smallest normal), the split is `x <= lo` instead: float32 compares exactly there.
    """
    bound = simplest_between(lo, hi)
    compared = (_in_float32(bound), _in_float64(bound))
    if not all(lo < c <= hi for c in compared) and _in_float32(lo) == lo:
        return lo, True
    return bound, False


def useful_labels(
    ranked, bits: dict, points: dict, most: int = 0, floor: float = COST_FLOOR
) -> list[str]:
    """The first `most` (default `MAX_FORMS`) of `ranked` that no earlier one dominates: a
    form at least as costly at every point as one already in could never win a piece, and
    near-copies of one form (its hypot and reciprocal versions) would crowd out the forms
    that do."""
    most = most or MAX_FORMS
    labels, costs = [], []
    for candidate in ranked:
        cost = np.concatenate([regime_cost(bits[candidate.label][d], floor) for d in points])
        if any((cost >= other).all() for other in costs):
            continue
        labels.append(candidate.label)
        costs.append(cost)
        if len(labels) == most:
            break
    return labels


def complementary_labels(
    ranked, bits: dict, points: dict, most: int, floor: float = COST_FLOOR
) -> list[str]:
    """Up to `most` labels, greedily: the best ranked first, then each time the form that
    lowers the summed cost of the best form per point the most (none once no form lowers
    it): forms that are accurate where the others are not, not near-copies of one form."""
    costs = {
        c.label: np.concatenate([regime_cost(bits[c.label][d], floor) for d in points])
        for c in ranked
    }
    if not costs:
        return []
    labels = [ranked[0].label]
    floor = costs[labels[0]]
    while len(labels) < most:
        gains = {k: accuracy.exact_sum(floor - np.minimum(floor, v)) for k, v in costs.items()}
        label = max((k for k in costs if k not in labels), key=lambda k: gains[k], default=None)
        if label is None or gains[label] <= 0:
            break
        labels.append(label)
        floor = np.minimum(floor, costs[label])
    return labels


def best_regimes(
    tried, bits: dict, points: dict, arg, column: int = 0, coordinate=None, frugal=False
) -> RegimeChoice | None:
    """The best piecewise combination of the measured candidates, split on `arg` (the points'
    `column`, or where `arg` is an expression of several args, `coordinate(points)`), or
    None. Where the points have several args, each piece holds `SEVERAL_ARGS_LEAST` points
    of each dtype or more. `frugal`: errors within the promise's room cost nothing, and
    where forms tie the one with the fewest transcendentals wins (`FRUGAL_FLOOR`). None too
    where no candidate may be a piece (all banned, `failing_pieces`)."""
    if not tried:
        return None
    if coordinate is None:
        coordinate = functools.partial(_column, column=column)
    floor = FRUGAL_FLOOR if frugal else COST_FLOOR
    ranked = sorted(tried, key=lambda c: _preference(c, bits, points))
    if frugal:  # a form is left out only for one as cheap; ties go to the first label
        ranked = sorted(ranked, key=lambda c: (c.transcendentals, c.ops))
    labels = _joining(ranked, bits, points, floor)
    forms = {c.label: c.form for c in ranked}
    if frugal:
        cheapness = {c.label: (c.transcendentals, c.ops) for c in ranked}
        labels = sorted(labels, key=cheapness.__getitem__)
    x, cost, groups = _merged(bits, points, labels, coordinate, floor)
    least = SEVERAL_ARGS_LEAST if next(iter(points.values())).shape[1] > 1 else 1
    pieces = _split_points(MAX_PIECES, x, cost, groups, least)
    merged = []
    for start, form in pieces:
        if merged and merged[-1][1] == form:
            continue
        merged.append((start, form))
    if len(merged) < 2 and not labels[merged[0][1]].startswith("series"):
        return None  # one closed form everywhere is no regime; one series needs a domain
    gaps = tuple((float(x[start - 1]), float(x[start])) for start, _ in merged[1:])
    splits = [_split(below, above) for below, above in gaps]
    chosen = tuple(forms[labels[form]] for _, form in merged)
    label = " | ".join(labels[form] for _, form in merged)
    bounds, closed = tuple(b for b, _ in splits), tuple(c for _, c in splits)
    return RegimeChoice(label, Regimes(arg, bounds, chosen, closed), gaps)


def _joining(ranked, bits: dict, points: dict, floor: float) -> list[str]:
    """The labels of the forms pieces may take: the useful, those accurate where the best
    ranked are not (overflow-safe ones near an overflow), and every series (accurate only
    near their point, they rank low on totals) and regime found on another line (ranked
    last by `_preference`, never left out for it)."""
    labels = useful_labels(ranked, bits, points, floor=floor)
    complements = complementary_labels(ranked, bits, points, MAX_FORMS, floor)
    labels += [label for label in complements if label not in labels]
    labels += [c.label for c in ranked if c.label.startswith("series") and c.label not in labels]
    labels += [c.label for c in ranked if c.label.startswith("regimes") and c.label not in labels]
    return labels


def _preference(candidate, bits: dict, points: dict) -> tuple:
    """The order in which forms join regimes, which also settles ties: closed forms before
    regimes found on another line (their pieces fit the sampled points: where one ties a
    closed form on every point of a piece, the closed form holds between them too; a nested
    regime that tied hypot(hypot(1, x), y) - 1 on every point above hypot(x, y) = 0.7 held a
    conjugate piece that is NaN at x = 1.7e266, y = 1.8e-4), then the least total error."""
    total = sum(np.nansum(bits[candidate.label][d]) for d in points)
    return candidate.label.startswith("regimes"), total


def regime_columns(spec, partial) -> list[int]:
    """The args a partial's regimes may split on: the one arg of a one-arg spec, else each
    arg the partial depends on (in a sum x*y + g(x) near x = 0, a split on x alone)."""
    if len(spec.args) == 1:
        return [0]
    return [i for i, a in enumerate(spec.arg_symbols) if partial.expr.has(a)]


MEAN_MARGIN_BITS = MEAN_ROOM_BITS  # a mean this close to its limit is worth regimes too


def needs_regimes(best, margin_bits: float) -> bool:
    """A best form that breaks the promise, blows up, or keeps it within `margin_bits` of the
    p99 limit or `MEAN_MARGIN_BITS` of the mean limit (other processors round differently,
    and verify scores points the stabilizer did not): regimes may do better."""
    close = any(
        f.p99_bits > accuracy.P99_LIMIT - margin_bits
        or f.mean_bits > accuracy.MEAN_LIMIT - MEAN_MARGIN_BITS
        for f in best.figures
    )
    return not best.keeps_promise() or best.blowups > 0 or close


def outside_domain(form: Regimes, domain: tuple[float, float], exact: sp.Expr) -> Regimes:
    """Below and above a finite domain, the derivative as SymPy wrote it: no piece chosen for
    the domain may claim values there (xlogx(-1) must be NaN, not a zero piece's 0)."""
    lo, hi = domain
    bounds, forms = form.bounds, form.forms
    starts_above = not bounds or bounds[0] > lo or (bounds[0] == lo and form.is_closed(0))
    below = (lo, False, exact) if np.isfinite(lo) and starts_above and forms[0] != exact else None
    ends_below = not bounds or bounds[-1] < hi
    above = (hi, True, exact) if np.isfinite(hi) and ends_below and forms[-1] != exact else None
    return form.with_outer(below, above)
