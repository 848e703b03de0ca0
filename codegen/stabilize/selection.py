"""Stage 3: choose, for every derivative, the form with the best measured accuracy.

In: `Derivatives`. Out: `StableForms`, one `Choice` per partial: the form to
ship, every candidate tried with its measured figures (for `hogen explain`),
and whether float32 must be computed in float64 to keep the promise.

For each partial: the exact values at docs/design.md's sample points come from
`accuracy.reference`; each candidate from `candidates` is lowered and run in
NumPy exactly as TensorFlow will run it, and scored in bits. A rewrite is
kept only if it equals the SymPy derivative at check points (correctly
rounded exact values must agree). If no single form keeps the promise, a
single-arg function gets regimes: the range split at thresholds, the best
form in each piece (`regimes`). If float32 still fails, the op computes
float32 in float64.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
import sympy as sp

from codegen.derive import Derivatives, DeriveError, Partial
from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.judge.numeric import PATHS, rewritten_under_xla, run
from codegen.lower import Regimes, lower, op_count
from codegen.pieces import Pieces
from codegen.stabilize.asymptotic import asymptotic_forms
from codegen.stabilize.candidates import candidates, series_candidates
from codegen.stabilize.limits import with_limits
from codegen.stabilize.per_dtype import dtype_regimes, split
from codegen.stabilize.piecewise import choose_pieces
from codegen.stabilize.regimes import best_regimes, needs_regimes, outside_domain, regime_columns

SAMPLES = 2000  # the points `hogen verify` scores by default (docs/design.md: a fixed seed)
CHECK_POINTS = (-3.5, -1.25, -0.375, 0.3125, 0.75, 2.5, 6.0)
PROMISE_KEYS = 4  # the rank's leading keys that count broken promises, not finer accuracy
MARGIN_BITS = 2.0  # a p99 this close to the limit is worth regimes too


@dataclass(frozen=True)
class Candidate:
    label: str
    form: object  # sp.Expr or Regimes
    figures: tuple[accuracy.Figures, ...]  # one per accuracy.DTYPES
    ops: int
    blowups: int = 0  # points returning NaN/inf where the exact value is finite (even 0)
    bad_points: int = 0  # points more than P99_LIMIT bits off, inside the p99 or not

    def keeps_promise(self) -> bool:
        return all(f.keeps_promise() for f in self.figures)

    def rank(self) -> tuple:
        """Fewest broken promise criteria, failures, blowups, points over 8 bits; then p99,
        mean and op count."""
        broken = sum(f.broken_criteria() for f in self.figures)
        failures = sum(f.failures for f in self.figures)
        p99 = sum(round(f.p99_bits) for f in self.figures)
        mean = sum(round(f.mean_bits * 4) / 4 for f in self.figures)
        return (broken, failures, self.blowups, self.bad_points, p99, mean, self.ops)


@dataclass(frozen=True)
class Choice:
    index: tuple[int, ...]
    exact: sp.Expr
    chosen: Candidate
    tried: tuple[Candidate, ...]
    promote_float32: bool
    promoted_float32: accuracy.Figures | None = None  # float32 computed in float64, if measured
    float32_form: Candidate | None = None  # float32's own form, where `chosen` serves float64

    def shipped_figures(self) -> tuple[accuracy.Figures, ...]:
        """Figures per dtype as the generated op computes them (float32 in float64 if promoted,
        or by its own form)."""
        if self.promote_float32 and self.promoted_float32 is not None:
            return (self.promoted_float32, *self.chosen.figures[1:])
        if self.float32_form is not None:
            return (self.float32_form.figures[0], *self.chosen.figures[1:])
        return self.chosen.figures

    def keeps_promise(self) -> bool:
        return all(f.keeps_promise() for f in self.shipped_figures())


@dataclass(frozen=True)
class StableForms:
    spec: Spec
    choices: tuple[Choice, ...]

    @property
    def promote_float32(self) -> bool:
        return any(choice.promote_float32 for choice in self.choices)


@dataclass(frozen=True)
class _Samples:
    points: dict[str, np.ndarray]
    exact: dict[str, np.ndarray]


def _param_values(spec: Spec) -> dict[sp.Symbol, sp.Expr]:
    return {sym: sp.Rational(value) for sym, (_, value) in zip(spec.param_symbols, spec.params)}


def _with_params(form, values):
    if isinstance(form, Regimes):
        forms = tuple(_with_params(f, values) for f in form.forms)
        return Regimes(form.arg, form.bounds, forms, form.closed)
    if isinstance(form, Pieces):
        conds = tuple(c.subs(values) for c in form.conds)
        exact = tuple(e.subs(values) for e in form.exact)
        return Pieces(conds, tuple(_with_params(f, values) for f in form.forms), exact)
    return form.subs(values)


def evaluate(form, spec: Spec, points: np.ndarray, dtype: str, path: str = "eager") -> np.ndarray:
    """`form` at `points` (rows), computed in `dtype` as the generated TF code computes it on
    `path` (eager, or XLA after its algebraic rewrites: `numeric.PATHS`)."""
    form = _with_params(form, _param_values(spec))
    names = {sym: sym.name for sym in spec.arg_symbols}
    program = lower([form], names)
    columns = {sym.name: points[:, i] for i, sym in enumerate(spec.arg_symbols)}
    return run(program, columns, dtype, path)[0]


def _worst_of(approx: list[np.ndarray], exact: np.ndarray, dtype: str) -> np.ndarray:
    """Per point, the approximation furthest from `exact`: the op is judged on its worst path."""
    bits = np.stack(
        [np.nan_to_num(accuracy.bits_error(a, exact, dtype), nan=np.inf) for a in approx]
    )
    return np.take_along_axis(np.stack(approx), np.argmax(bits, axis=0)[None], axis=0)[0]


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


def stabilizer_points(domain, dtype: str, n: int) -> np.ndarray:
    """Verify's points (seed 0), twice as many more (seed 1), and points crowding finite edges.

    Choosing on more points than `hogen verify` scores keeps verify an honest check.
    """
    parts = [
        accuracy.sample_points(domain, dtype, n),
        accuracy.sample_points(domain, dtype, 2 * n, 1),
    ]
    if len(domain) == 1:
        parts.append(_edge_points(domain, dtype))
    return np.unique(np.concatenate(parts), axis=0)


def _samples(spec: Spec, exact_expr: sp.Expr, n: int) -> _Samples:
    expr = exact_expr.subs(_param_values(spec))
    points, exact = {}, {}
    cache = accuracy.default_cache_dir()
    for dtype in accuracy.DTYPES:
        points[dtype] = stabilizer_points(spec.domain, dtype, n)
        exact[dtype] = accuracy.reference(
            expr, spec.arg_symbols, points[dtype], dtype, cache_dir=cache
        )
    return _Samples(points, exact)


def _as_shipped(form, spec: Spec, samples: _Samples, promoted: bool) -> dict[str, np.ndarray]:
    """`form` at the sample points of each dtype, computed as the op will (float32 in float64
    when `promoted`), on its worst path per point (XLA only where its rewrites apply)."""
    form = _with_params(form, _param_values(spec))
    program = lower([form], {sym: sym.name for sym in spec.arg_symbols})
    paths = PATHS if rewritten_under_xla(program) else ("eager",)
    out = {}
    for dtype in accuracy.DTYPES:
        compute = "float64" if dtype == "float32" and promoted else dtype
        points = samples.points[dtype].astype(compute)
        columns = {sym.name: points[:, i] for i, sym in enumerate(spec.arg_symbols)}
        with np.errstate(over="ignore"):  # float64 values beyond float32's range round to inf
            approx = [run(program, columns, compute, path)[0].astype(dtype) for path in paths]
        out[dtype] = _worst_of(approx, samples.exact[dtype], dtype)
    return out


def measured(label: str, form, spec: Spec, samples: _Samples, promoted: bool = False):
    """(the `Candidate`, its error in bits per point for each dtype)."""
    figures, blowups, bad, bits = [], 0, 0, {}
    for d, approx in _as_shipped(form, spec, samples, promoted).items():
        figures.append(accuracy.figures(approx, samples.exact[d], d))
        blowups += int(np.sum(np.isfinite(samples.exact[d]) & ~np.isfinite(approx)))
        bits[d] = accuracy.bits_error(approx, samples.exact[d], d)
        bad += int(np.sum(np.nan_to_num(bits[d]) > accuracy.P99_LIMIT))
    return Candidate(label, form, tuple(figures), op_count(form), blowups, bad), bits


def measure(label: str, form, spec: Spec, samples: _Samples, promoted: bool = False) -> Candidate:
    return measured(label, form, spec, samples, promoted)[0]


def equals_exact(form: sp.Expr, exact: sp.Expr, spec: Spec, in_domain: bool = False) -> bool:
    """True if `form` and `exact` round to the same float64 at every check point (only those
    inside the spec's domain, `in_domain`)."""
    values = _param_values(spec)
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
    a = accuracy.reference(form.subs(values), spec.arg_symbols, rows, "float64")
    b = accuracy.reference(exact.subs(values), spec.arg_symbols, rows, "float64")
    return bool(np.array_equal(a, b, equal_nan=True))


def valid_candidates(spec: Spec, partial: Partial) -> list[tuple[str, object]]:
    """The closed candidate forms of one partial that equal it. A rewrite the reference
    cannot evaluate (SymPy's simplify writes sign(x) as a Piecewise on x == 0) is not
    offered; the derivative as SymPy wrote it always is."""
    if isinstance(partial.expr, sp.Piecewise):  # each piece gets its candidates in `choose`
        return [("sympy", partial.expr)]
    known = _domain_symbols(spec)
    back = {v: k for k, v in known.items()}
    args = tuple(known.get(a, a) for a in spec.arg_symbols)
    out = []
    for label, form in candidates(partial.expr.xreplace(known), args):
        form = form.xreplace(back)
        lowers = not known or _lowers(form)  # only forms written under assumptions may not
        if form == partial.expr or (lowers and _valid(form, partial.expr, spec, known)):
            out.append((label, form))
    return out if out and out[0][0] == "sympy" else [("sympy", partial.expr), *out]


def _valid(form, exact: sp.Expr, spec: Spec, known: dict) -> bool:
    """Equal to the derivative at the check points, or (a form that used the domain's
    assumptions) at those inside the domain."""
    if _checked_equal(form, exact, spec):
        return True
    return bool(known) and _checked_equal(form, exact, spec, in_domain=True)


def _lowers(form: sp.Expr) -> bool:
    """Whether `form` lowers: one written under the domain's assumptions may not once they
    are gone (sign(sqrt(eps)) makes SymPy evaluate a complex hypot)."""
    try:
        op_count(form)
    except Exception:  # noqa: BLE001 - SymPy raises many kinds evaluating such forms
        return False
    return True


def _domain_symbols(spec: Spec) -> dict[sp.Symbol, sp.Symbol]:
    """Each arg whose domain is nonnegative, as a symbol SymPy knows to be nonnegative, so
    rewrites may use it (sqrt(x**2 + y) = hypot(x, sqrt(y)) for y >= 0)."""
    return {
        a: sp.Symbol(a.name, nonnegative=True)
        for a, (lo, _) in zip(spec.arg_symbols, spec.domain)
        if lo >= 0
    }


def _checked_equal(form, exact: sp.Expr, spec: Spec, in_domain: bool = False) -> bool:
    try:
        return equals_exact(form, exact, spec, in_domain)
    except TypeError:
        return False


@functools.lru_cache(maxsize=64)  # both passes of a promoted op need the same series
def _series(expr: sp.Expr, arg: sp.Symbol, domain) -> tuple[tuple[str, sp.Expr], ...]:
    """Series candidates at 0 and at the domain's infinite ends (approximations, kept only
    where they measure well), computed only when the closed forms need regimes: SymPy series
    are most of a build's time."""
    forms = (*series_candidates(expr, arg), *asymptotic_forms(expr, arg, domain))
    return tuple((label, form) for label, form in forms if _lowers(form))  # no complex constants


def _best(spec: Spec, partial: Partial, samples: _Samples, forms, promoted: bool):
    """(best candidate, every candidate measured), with regimes where no single form keeps
    the promise with a margin: on the one arg the partial depends on (with series there), or
    on each of its args in turn."""
    tried, bits = [], {}
    for label, form in forms:
        candidate, bits[label] = measured(label, form, spec, samples, promoted)
        tried.append(candidate)
    best = min(tried, key=Candidate.rank)
    columns = regime_columns(spec, partial)
    if len(columns) > 1 and partial.order == spec.order:
        # the last order's form is differentiated beyond it, and a branch not taken is clipped
        # on the split arg alone: its other args could still send NaN into that gradient
        columns = []
    if needs_regimes(best, MARGIN_BITS):
        for column in columns:
            split_on = Split(column, len(columns) == 1)
            best = _with_regimes(spec, partial, samples, (tried, bits), best, split_on, promoted)
    return best, tuple(tried)


@dataclass(frozen=True)
class Split:
    column: int  # the arg regimes split on
    alone: bool  # the partial's only arg: series at its ends join, labels name no arg


def _with_regimes(spec, partial, samples, measured_so_far, best, split_on: Split, promoted):
    """`best`, or the regimes on one arg that beat it; the regimes tried join `tried`."""
    tried, bits = measured_so_far
    column = split_on.column
    arg, domain = spec.arg_symbols[column], spec.domain[column]
    if split_on.alone:
        for label, form in _series(partial.expr, arg, domain):
            candidate, bits[label] = measured(label, form, spec, samples, promoted)
            tried.append(candidate)
    plain = [c for c in tried if c.label in bits]  # regimes are not nested in regimes
    joint = best_regimes(plain, bits, samples.points, arg, column)
    per_dtype = [] if promoted else dtype_regimes(plain, bits, samples.points, arg, column)
    found = [("", joint)] if joint is not None else []
    on = "" if split_on.alone else f" in {arg}"
    for dtype, regimes in [*found, *per_dtype]:
        form = outside_domain(regimes.form, domain, partial.expr)
        label = f"regimes{on}{f' {dtype}' if dtype else ''}({regimes.label})"
        tried.append(measure(label, form, spec, samples, promoted))
    if joint is None:
        return best
    piecewise = tried[-1 - len(per_dtype)]
    # pieces cost ops and selects: only to fix what breaks, or to leave the margin
    keys = PROMISE_KEYS + (0 if not best.keeps_promise() else 1)
    return piecewise if piecewise.rank()[:keys] < best.rank()[:keys] else best


def choose(
    spec: Spec,
    partial: Partial,
    n: int = SAMPLES,
    promoted: bool = False,
    forms=None,
    by_dtype: bool = True,
) -> Choice:
    """Measure every candidate of one partial and return the best, with regimes if needed,
    and with a form of float32's own if that keeps float32 from float64 (`by_dtype`).

    With `promoted`, float32 is measured as an op computing it in float64 ships it.
    """
    samples = _samples(spec, partial.expr, n)
    if isinstance(partial.expr, sp.Piecewise):  # pieces: one form for both dtypes
        one_form = functools.partial(choose, by_dtype=False)
        return choose_pieces(spec, partial, n, promoted, one_form, measure, samples)
    if forms is None:
        forms = valid_candidates(spec, partial)
    best, tried = _best(spec, partial, samples, forms, promoted)
    best = _at_infinity(best, spec, partial, promoted)
    if promoted:
        return Choice(partial.index, partial.expr, best, tried, True, best.figures[0])
    pair = split(best, tried, MARGIN_BITS) if by_dtype else None
    float32_form = None
    if pair is not None:
        best, float32_form = (_at_infinity(c, spec, partial, False) for c in pair)
        float32_form = None if float32_form.form == best.form else float32_form
    shipped32 = (float32_form or best).figures[0]
    promoted_figures = None
    if not shipped32.keeps_promise():
        promoted_figures = measure(best.label, best.form, spec, samples, True).figures[0]
    promote = promoted_figures is not None and promoted_figures.keeps_promise()
    float32_form = None if promote else float32_form
    return Choice(partial.index, partial.expr, best, tried, promote, promoted_figures, float32_form)


def _at_infinity(best: Candidate, spec: Spec, partial: Partial, promoted: bool) -> Candidate:
    """`best` with pieces at ±inf where its form misses the derivative's limit (`limits`)."""

    def as_shipped(form, points, dtype):
        compute = "float64" if promoted else dtype
        return evaluate(form, spec, points.astype(compute), compute).astype(dtype)

    exact = partial.expr.subs(_param_values(spec))
    form = with_limits(best.form, exact, spec.arg_symbols, spec.domain, as_shipped)
    if form is best.form:
        return best
    return replace(best, label=f"{best.label}+limits at inf", form=form, ops=op_count(form))


def _explained(spec: Spec, partial: Partial, step, *args):
    """`step(spec, partial, *args)`, with what hogen cannot evaluate turned into an error that
    names the partial."""
    try:
        return step(spec, partial, *args)
    except TypeError as error:  # the reference or the lowering met a function it lacks
        raise DeriveError(
            f"{spec.path}: the order-{partial.order} derivative {partial.index} = "
            f"{sp.sstr(partial.expr)[:200]} cannot be measured: {error}"
        ) from None
    except RecursionError:  # SymPy recursing without end on this derivative
        raise DeriveError(
            f"{spec.path}: the order-{partial.order} derivative {partial.index} = "
            f"{sp.sstr(partial.expr)[:200]} cannot be stabilized: SymPy exceeded its "
            "recursion limit; lower `order` or simplify `expr`"
        ) from None


def stabilize(derivatives: Derivatives) -> StableForms:
    """Choose a form for every partial of every order.

    If any order needs float32 computed in float64, the op computes every order that way, so
    every order is chosen again measuring float32 as it will ship (the same candidates).
    """
    spec, partials = derivatives.spec, derivatives.partials
    forms = [_explained(spec, p, valid_candidates) for p in partials]
    choices = tuple(_explained(spec, p, choose, SAMPLES, False, f) for p, f in zip(partials, forms))
    if any(c.promote_float32 for c in choices):
        choices = tuple(
            _explained(spec, p, choose, SAMPLES, True, f) for p, f in zip(partials, forms)
        )
    return StableForms(spec, choices)
