"""Thresholds placed by measurement between the two samples that bracket them.

In: regimes chosen on sample points (`regimes.best_regimes`: bounds, forms, and for each bound
the two neighbouring samples it lies between), the spec, the partial's exact derivative, the
dtypes the regimes serve and whether float32 ships computed in float64. Out: `placed`, the
same regimes with each bound moved where the two forms it separates, measured at probe points
between its samples against the exact reference, show that it sits where one of them fails.

Why: `best_regimes` sees only the samples and puts each threshold at the simplest number
between two of them. silu's float32 value once took x/(1 + exp(-x)) from x = -90.0, a bound
between the samples -90.14 and -88.0, but float32's exp(-x) overflows below x = -88.72: it
returned 0 instead of about -8e-38 on (-90, -88.72), 25 bits wrong, and only the report's
plot grid saw it.

A bound whose place scores as well as any at the probes stays, so nothing moves where nothing
was wrong. Else it moves to the simplest number among the best places: between two probes
where both forms were measured, or, where one gap between probes is the only best place,
that gap is probed again (`ROUNDS`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from codegen.judge import accuracy
from codegen.judge.sampling import from_ordinal, ordinal
from codegen.lower import Regimes
from codegen.stabilize.measuring import Samples, as_shipped, param_values
from codegen.stabilize.regimes import simplest_between

PROBES = 32  # points measured inside the gap between two samples, evenly in bit patterns
ROUNDS = 2  # a gap between two probes that is the only best place is probed this often
GROSS_BITS = 2 * accuracy.P99_LIMIT  # errors a bound is moved for
SAME = 1e-9  # totals of bits this close are equal (sums of the same terms, in another order)


def placed(form: Regimes, gaps, spec, exact_expr, column: int, dtypes, promoted: bool) -> Regimes:
    """`form` with each open bound placed by the errors of its two forms at probes of arg
    `column` between the samples in `gaps` (one (below, above) per bound), summed over
    `dtypes`. The partial depends on that arg alone: the spec's other args are held at 1."""
    bounds = list(form.bounds)
    for i, (below, above) in enumerate(gaps):
        if form.is_closed(i):
            continue  # a split just above 0: no other threshold is representable

        def costs_at(probes, pair=form.forms[i : i + 2]):
            return _costs(
                pair, _points(probes, column, len(spec.args)), spec, exact_expr, dtypes, promoted
            )

        bounds[i] = _placed_bound(bounds[i], below, above, costs_at)
    return replace(form, bounds=tuple(bounds))


def _placed_bound(bound: float, below: float, above: float, costs_at) -> float:
    """`bound` if it is among the best places at the probes in (below, above); else the
    simplest of the best places nearest to it."""
    probes = _probes(below, above)
    if not probes.size:
        return bound
    total = _totals(costs_at(probes))
    if total[np.searchsorted(probes, bound)] <= total.min() + SAME:
        return bound
    return _best_place(bound, probes, total, (below, above), costs_at, ROUNDS - 1)


def _best_place(bound, probes, total, gap, costs_at, rounds_left: int) -> float:
    """The simplest number among the best places next to the one nearest `bound`: between the
    probes where both forms score best, or inside the one gap between probes that does."""
    best = np.flatnonzero(total <= total.min() + SAME)
    k = int(best[np.argmin(np.abs(best - np.searchsorted(probes, bound)))])
    first, last = k, k
    while first - 1 in best:
        first -= 1
    while last + 1 in best:
        last += 1
    edges = np.concatenate([[gap[0]], probes, [gap[1]]])
    if last > first:  # the forms switch anywhere in [probes[first], probes[last - 1]]
        return _simplest_in(
            probes[first], probes[last - 1], edges[first], edges[last + 1], costs_at
        )
    below, above = float(edges[k]), float(edges[k + 1])
    inner = _probes(below, above) if rounds_left > 0 else np.zeros(0)
    if not inner.size:
        return simplest_between(below, above)
    inner_total = _totals(costs_at(inner))
    return _best_place(bound, inner, inner_total, (below, above), costs_at, rounds_left - 1)


def _simplest_in(first: float, last: float, below: float, above: float, costs_at) -> float:
    """The simplest number in (below, above] where the forms were measured to switch equally
    well anywhere in [first, last]: outside [first, last] only where the probes between it and
    that interval confirm it (-708.39, not the probe -708.390383958118)."""
    tries = ((below, above), (np.nextafter(first, -np.inf), above), (below, last))
    for lo, hi in tries:
        place = simplest_between(float(lo), float(hi))
        if first <= place <= last or _confirmed(place, first, last, costs_at):
            return place
    return simplest_between(float(np.nextafter(first, -np.inf)), last)


def _confirmed(place: float, first: float, last: float, costs_at) -> bool:
    """Whether the probes between `place` and [first, last] score the switch at `place` as
    well as one inside [first, last]."""
    if place < first:  # the second form from `place` on instead of from `first`
        costs = costs_at(np.concatenate([[place], _probes(place, first)]))
        return accuracy.exact_sum(costs[1]) <= accuracy.exact_sum(costs[0]) + SAME
    costs = costs_at(np.concatenate([[last], _probes(last, place)]))  # the first form up to it
    return accuracy.exact_sum(costs[0]) <= accuracy.exact_sum(costs[1]) + SAME


def _probes(below: float, above: float) -> np.ndarray:
    """Up to `PROBES` float64 values strictly between `below` and `above`, evenly spaced in
    bit patterns (so logarithmically across binades)."""
    ends = ordinal(np.array([below, above], dtype=np.float64))
    steps = np.linspace(float(ends[0]), float(ends[1]), PROBES + 2)[1:-1]
    ords = np.unique(np.clip(np.round(steps).astype(np.int64), ends[0] + 1, ends[1] - 1))
    return from_ordinal(ords, "float64") if ends[1] - ends[0] > 1 else np.zeros(0)


def _totals(costs: np.ndarray) -> np.ndarray:
    """For k = 0..m: the summed cost with the first form at the first k probes and the
    second at the rest."""
    below = np.concatenate([[0.0], np.cumsum(costs[0])])
    above = np.concatenate([[0.0], np.cumsum(costs[1])])
    return below + (above[-1] - above)


def _gross(bits: np.ndarray) -> np.ndarray:
    """Bits of gross errors, over `GROSS_BITS`: what samples miss (an overflow, an underflow,
    a cancellation starting between two of them). Smaller errors, which the samples already
    weighed, and NaN (no exact value) count 0."""
    bits = np.nan_to_num(bits, nan=0.0)
    return np.where(bits > GROSS_BITS, bits, 0.0)


def _points(probes: np.ndarray, column: int, n_args: int) -> np.ndarray:
    """Rows of `n_args` args: `probes` in `column`, 1 in the others."""
    rows = np.ones((probes.size, n_args))
    rows[:, column] = probes
    return rows


def _costs(pair, rows, spec, exact_expr, dtypes, promoted: bool) -> np.ndarray:
    """Each form's bits over the promise's limit at the points `rows`, summed over `dtypes`."""
    expr = exact_expr.subs(param_values(spec))
    biggest = float(np.finfo(np.float32).max)
    points = {
        "float32": np.clip(rows, -biggest, biggest).astype(np.float32),
        "float64": rows,
    }
    cache = accuracy.default_cache_dir()
    exact = {
        d: accuracy.reference(expr, spec.arg_symbols, points[d], d, cache_dir=cache)
        for d in accuracy.DTYPES
    }
    samples = Samples(points, exact)
    rows = []
    for form in pair:
        approx = as_shipped(form, spec, samples, promoted)
        bits = [accuracy.bits_error(approx[d], exact[d], d) for d in dtypes]
        rows.append(np.sum([_gross(b) for b in bits], axis=0))
    return np.stack(rows)
