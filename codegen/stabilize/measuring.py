"""Measuring one candidate form of a partial: where, against what, and how it is scored.

In: a form (SymPy or Regimes), the spec, and the partial's exact derivative. Out: the
sample points and their exact values (`measuring_points`), the form as each path and dtype computes
it in the NumPy mirror (`evaluate`, `as_shipped`), and a `Candidate` with its figures,
blowups and points over the p99 limit (`measured`). `equals_exact` checks that a rewrite
is the derivative at check points. `selection` ranks what this module measures.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
import sympy as sp

from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.judge.numeric import paths_for, run, run_paths
from codegen.judge.sampling import powers_of_two
from codegen.lower import Regimes, lower, op_count
from codegen.pieces import Pieces
from codegen.pieces import lowering_for_values_only as values_lowered
from codegen.stabilize.cost import added_transcendentals
from codegen.stabilize.remembered import outputs_at

CHECK_POINTS = (-3.5, -1.25, -0.375, 0.3125, 0.75, 2.5, 6.0)
# Room below the promise's limits for other processors' rounding. A form with less asks for
# regimes (`selection`, `regimes.needs_regimes`); among forms with as much, the cheapest wins.
P99_ROOM_BITS = 2.0
MEAN_ROOM_BITS = 0.5


@dataclass(frozen=True)
class Candidate:
    label: str
    form: object  # sp.Expr or Regimes
    figures: tuple[accuracy.Figures, ...]  # one per accuracy.DTYPES
    ops: int
    blowups: int = 0  # points returning NaN/inf where the exact value is finite (even 0)
    bad_points: int = 0  # points more than P99_LIMIT bits off, inside the p99 or not
    bad_in: tuple[int, ...] = ()  # the same, per dtype of accuracy.DTYPES
    transcendentals: int = 0  # exp, log, ... it adds to the op's chosen forms (cost.sharing)

    def keeps_promise(self) -> bool:
        return all(f.keeps_promise() for f in self.figures)

    def roomy_in(self, i: int) -> bool:
        """Keeps the promise in dtype `i` with room for other processors' rounding."""
        f = self.figures[i]
        return (
            f.keeps_promise()
            and f.p99_bits <= accuracy.P99_LIMIT - P99_ROOM_BITS
            and f.mean_bits <= accuracy.MEAN_LIMIT - MEAN_ROOM_BITS
        )

    def roomy(self) -> bool:
        return all(self.roomy_in(i) for i in range(len(self.figures)))

    def rank(self) -> tuple:
        """Fewest broken promise criteria, failures, blowups, points over 8 bits; then forms
        with room to spare first, and among those the fewest transcendentals (what an op
        costs under XLA); then p99, mean and op count."""
        broken = sum(f.broken_criteria() for f in self.figures)
        failures = sum(f.failures for f in self.figures)
        p99 = sum(round(f.p99_bits) for f in self.figures)
        mean = sum(round(f.mean_bits * 4) / 4 for f in self.figures)
        roomy = self.roomy()
        cost = self.transcendentals if roomy else 0
        return (
            broken,
            failures,
            self.blowups,
            self.bad_points,
            not roomy,
            cost,
            p99,
            mean,
            self.ops,
        )


@dataclass(frozen=True)
class Samples:
    points: dict[str, np.ndarray]
    exact: dict[str, np.ndarray]


def param_values(spec: Spec) -> dict[sp.Symbol, sp.Expr]:
    return {sym: sp.Rational(value) for sym, (_, value) in zip(spec.param_symbols, spec.params)}


def _with_params(form, values):
    if isinstance(form, Regimes):
        forms = tuple(_with_params(f, values) for f in form.forms)
        return Regimes(form.arg.subs(values), form.bounds, forms, form.closed, form.total)
    if isinstance(form, Pieces):
        conds = tuple(c.subs(values) for c in form.conds)
        exact = tuple(e.subs(values) for e in form.exact)
        return Pieces(conds, tuple(_with_params(f, values) for f in form.forms), exact)
    return form.subs(values)


def _lazy_program(form, spec: Spec):
    """(the spec's param values, a call that lowers `form` with them on first use only)."""
    params = param_values(spec)
    return params, functools.cache(lambda: lower([_with_params(form, params)], _names(spec)))


def _columns(spec: Spec, rows: np.ndarray) -> dict[str, np.ndarray]:
    return {s.name: rows[:, i] for i, s in enumerate(spec.arg_symbols)}


def evaluate(form, spec: Spec, points: np.ndarray, dtype: str, path: str = "eager") -> np.ndarray:
    """`form` at `points` (rows), computed in `dtype` as the generated TF code computes it on
    `path` (eager, XLA after its algebraic rewrites, or a graph after Grappler's:
    `numeric.PATHS`). Outputs at points this build computed the form at before are those
    (`remembered`): screening rounds look at the same points again."""
    params, program = _lazy_program(form, spec)
    path = path if path in paths_for(program()) else "eager"  # no rewrite there: eager's values

    def rows_from(first: int) -> np.ndarray:
        return run(program(), _columns(spec, points[first:]), dtype, path)[0][None]

    key = ("evaluate", form, tuple(params.items()), spec.arg_symbols, dtype, path, values_lowered())
    return outputs_at(key, points, rows_from)[0]


def _worst_of(approx: np.ndarray, exact: np.ndarray, dtype: str, with_bits: bool):
    """(per point, the approximation furthest from `exact` among the rows of `approx`, one per
    path: the op is judged on its worst path; and its bits of error, or None without
    `with_bits`). Bits of error are per point, so the worst row's are those of the row
    picked at each point."""
    if len(approx) == 1:
        return approx[0], accuracy.bits_error(approx[0], exact, dtype) if with_bits else None
    bits = np.stack([accuracy.bits_error(a, exact, dtype) for a in approx])
    worst = np.argmax(np.nan_to_num(bits, nan=np.inf), axis=0)[None]
    return np.take_along_axis(approx, worst, axis=0)[0], np.take_along_axis(bits, worst, axis=0)[0]


def _edge_points(domain, dtype: str) -> np.ndarray:
    """Points crowding each finite edge of a one-arg domain (p = 1 - 2**-k for logit)."""
    ((lo, hi),) = domain
    width = hi - lo if np.isfinite(hi - lo) else 1.0
    steps = width * np.exp2(-np.arange(1, 60, dtype=np.float64))
    values = [lo + steps] if np.isfinite(lo) else []
    values += [hi - steps] if np.isfinite(hi) else []
    if not values:
        return np.zeros((0, 1), dtype=dtype)
    column = np.concatenate(values).astype(dtype)
    return column[(column > lo) & (column < hi)].reshape(-1, 1)


POWER_BANDS = (2, 3, 4)  # the powers of the arg whose overflow and underflow get points


def _power_band_points(domain, dtype: str) -> np.ndarray:
    """Points of a one-arg domain around max**(1/k) and tiny**(1/k), k = 2, 3, 4, where x**k
    leaves the float range: at |x| in (1.34e154, 1.9e154) x*x overflows while -x**2/2, log_ndtr's
    value there, is a float (-1.2e308); random points rarely land in so narrow a band."""
    info = np.finfo(dtype)
    ends = [float(info.max) ** (1.0 / k) for k in POWER_BANDS]
    ends += [float(info.tiny) ** (1.0 / k) for k in POWER_BANDS]
    return _band_points(domain, dtype, ends, powers_of_two(np.arange(-8, 9) / 8.0))


def _exp_band_points(domain, dtype: str) -> np.ndarray:
    """Points of a one-arg domain within 6% of ±log(max), where exp(x) overflows and exp(-x)
    goes subnormal: sinh(x)/x's f' is a float up to |x| = 716 while sigmoid(x) is 0 at -709.7;
    random points rarely land in so narrow a band."""
    ends = [float(np.log(np.finfo(dtype).max))]
    return _band_points(domain, dtype, ends, 1.0 + np.arange(-8, 9) / 128.0)


def _band_points(domain, dtype: str, ends: list[float], scales: np.ndarray) -> np.ndarray:
    """The magnitudes ends x scales, both signs, inside the one-arg domain."""
    ((lo, hi),) = domain
    magnitudes = np.outer(ends, scales).ravel()
    with np.errstate(over="ignore"):
        column = np.concatenate([magnitudes, -magnitudes]).astype(dtype)
    keep = np.isfinite(column) & (column > lo) & (column < hi)
    return column[keep].reshape(-1, 1)


def stabilizer_points(domain, dtype: str, n: int) -> np.ndarray:
    """n points of seed 0, twice as many of seed 1 (`accuracy.CHOICE_SEEDS`), points
    crowding finite edges and points where a power or the exp of the arg overflows (one arg).

    Apart from the special points every seed holds, none is a point `hogen verify` scores
    (`accuracy.VERIFY_SEED`): verify checks whether the forms chosen here hold at points
    they were not chosen on.
    """
    first, second = accuracy.CHOICE_SEEDS
    parts = [
        accuracy.sample_points(domain, dtype, n, first),
        accuracy.sample_points(domain, dtype, 2 * n, second),
    ]
    if len(domain) == 1:
        parts += [_edge_points(domain, dtype), _power_band_points(domain, dtype)]
        parts += [_exp_band_points(domain, dtype)]
    return np.unique(np.concatenate(parts), axis=0)


def verify_samples(spec: Spec, exact_expr: sp.Expr, n: int = 2000) -> Samples:
    """`hogen verify`'s points (`accuracy.VERIFY_SEED`), none of which a build chose on, with
    the exact values of `exact_expr` there: for checking chosen forms where verify does."""
    return _samples_at(
        spec,
        exact_expr,
        lambda dtype: accuracy.sample_points(spec.domain, dtype, n, accuracy.VERIFY_SEED),
    )


def shipped_at_verify(spec: Spec, choice) -> tuple[accuracy.Figures, ...]:
    """The figures of a chosen partial as the op ships it (float32's own form where it has
    one, computed in float64 where the op promotes it) at `verify_samples`' points, one per
    dtype of `accuracy.DTYPES`."""
    samples = verify_samples(spec, choice.exact)
    shipped = (choice.float32_form or choice.chosen, choice.chosen)
    promoted = choice.promote_float32
    return tuple(
        measure("shipped", c.form, spec, samples, promoted).figures[i]
        for i, c in enumerate(shipped)
    )


def prepare_references(spec: Spec, exact_exprs, n: int) -> None:
    """The references of every partial at the points `measuring_points` takes, found together
    and kept in the reference cache: a function's partials share most of their work."""
    values = param_values(spec)
    exprs = [e.subs(values) for e in exact_exprs]
    cache = accuracy.default_cache_dir()
    for dtype in accuracy.DTYPES:
        points = stabilizer_points(spec.domain, dtype, n)
        accuracy.prepare_references(exprs, spec.arg_symbols, points, dtype, cache)


def measuring_points(spec: Spec, exact_expr: sp.Expr, n: int) -> Samples:
    return _samples_at(spec, exact_expr, lambda dtype: stabilizer_points(spec.domain, dtype, n))


def _samples_at(spec: Spec, exact_expr: sp.Expr, points_in) -> Samples:
    """`points_in(dtype)` for each dtype, with `exact_expr`'s exact values there."""
    expr = exact_expr.subs(param_values(spec))
    points, exact = {}, {}
    cache = accuracy.default_cache_dir()
    for dtype in accuracy.DTYPES:
        points[dtype] = points_in(dtype)
        exact[dtype] = accuracy.reference(
            expr, spec.arg_symbols, points[dtype], dtype, cache_dir=cache
        )
    return Samples(points, exact)


def as_shipped(form, spec: Spec, samples: Samples, promoted: bool) -> dict[str, np.ndarray]:
    """`form` at the sample points of each dtype, computed as the op will (float32 in float64
    when `promoted`), on its worst path per point (XLA only where its rewrites apply). The
    outputs at points this build computed the form at before are those (`remembered`)."""
    return {d: worst for d, (worst, _) in _shipped(form, spec, samples, promoted, False).items()}


def _shipped(form, spec: Spec, samples: Samples, promoted: bool, with_bits: bool) -> dict:
    """`as_shipped`, each dtype's outputs with their bits of error (`with_bits`) or None."""
    params, program = _lazy_program(form, spec)
    out = {}
    for dtype in accuracy.DTYPES:
        compute = "float64" if dtype == "float32" and promoted else dtype
        points = samples.points[dtype]

        def paths_from(first: int, points=points, compute=compute, dtype=dtype) -> np.ndarray:
            columns = _columns(spec, points[first:].astype(compute))
            with np.errstate(over="ignore"):  # float64 values beyond float32's range round to inf
                paths = paths_for(program())
                rows = [outs[0] for outs in run_paths(program(), columns, compute, paths)]
                return np.stack(rows).astype(dtype)

        key = (form, tuple(params.items()), spec.arg_symbols, compute, dtype, values_lowered())
        approx = outputs_at(key, points, paths_from)
        out[dtype] = _worst_of(approx, samples.exact[dtype], dtype, with_bits)
    return out


def _names(spec: Spec) -> dict[sp.Symbol, str]:
    return {sym: sym.name for sym in spec.arg_symbols}


def measured(label: str, form, spec: Spec, samples: Samples, promoted: bool = False):
    """(the `Candidate`, its error in bits per point for each dtype)."""
    figures, blowups, bad, bits = [], 0, [], {}
    for d, (approx, bits[d]) in _shipped(form, spec, samples, promoted, True).items():
        figures.append(accuracy.figures(approx, samples.exact[d], d, bits[d]))
        blowups += int(np.sum(np.isfinite(samples.exact[d]) & ~np.isfinite(approx)))
        bad.append(int(np.sum(np.nan_to_num(bits[d]) > accuracy.P99_LIMIT)))
    ops = op_count(form)
    candidate = Candidate(label, form, tuple(figures), ops, blowups, sum(bad), tuple(bad))
    if any(candidate.roomy_in(i) for i in range(len(figures))):  # only there it ranks
        candidate = replace(candidate, transcendentals=added_transcendentals(form))
    return candidate, bits


def measure(label: str, form, spec: Spec, samples: Samples, promoted: bool = False) -> Candidate:
    return measured(label, form, spec, samples, promoted)[0]


def equals_exact(form: sp.Expr, exact: sp.Expr, spec: Spec, in_domain: bool = False) -> bool:
    """True if `form` and `exact` round to the same float64 at every check point (only those
    inside the spec's domain, `in_domain`)."""
    values = param_values(spec)
    n_args = len(spec.args)
    rows = np.array(
        [
            [CHECK_POINTS[(i + j) % len(CHECK_POINTS)] for j in range(n_args)]
            for i in range(len(CHECK_POINTS))
        ],
        dtype=np.float64,
    )
    if in_domain:
        lo, hi = np.array(spec.domain, dtype=np.float64).T
        rows = rows[np.all((rows >= lo) & (rows <= hi), axis=1)]
        if len(rows) < 2:
            return False
    b = accuracy.reference(exact.subs(values), spec.arg_symbols, rows, "float64")
    if isinstance(form, Regimes):  # each piece at the points it owns
        return _pieces_equal(_with_params(form, values), b, spec, rows)
    a = accuracy.reference(form.subs(values), spec.arg_symbols, rows, "float64")
    return bool(np.array_equal(a, b, equal_nan=True))


def _pieces_equal(form: Regimes, exact: np.ndarray, spec: Spec, rows: np.ndarray) -> bool:
    """True if each piece of `form` rounds as the derivative (`exact`) at the rows it owns,
    and every piece owns one at least."""
    at = accuracy.reference(form.arg, spec.arg_symbols, rows, "float64")
    owner = np.array([form.index_at(float(v)) for v in at])
    for i, piece in enumerate(form.forms):
        own = owner == i
        if not own.any():
            return False
        a = accuracy.reference(piece, spec.arg_symbols, rows[own], "float64")
        if not np.array_equal(a, exact[own], equal_nan=True):
            return False
    return True
