"""The search for one partial's best form: closed forms, refinements, then regimes.

In: a `Search` (spec, partial, sample points, whether float32 ships computed in float64) and
the partial's valid candidate forms. Out: `best_form`: the best `Candidate` found and every
candidate measured on the way (for `hogen explain`).

The stages run while the best form misses the promise or its margin (`MARGIN_BITS`):
compensated differences, forms at scaled args (several args), halved sums, sums that cancel
in a monomial of the args written as series in it (`sum_series`); then regimes on
the line x - y where it divides the denominator (`lines`), on a monomial w of the args where
the partial is a power of one arg times a function of w (`monomials`, with w's series as
pieces, also per dtype), on each arg the partial depends
on in turn (one arg's regimes may be a piece of the next's, with series and one-term
approximations as pieces), and on the products and magnitudes of args that occur in it
(`split_on`). Stages of a spec of several args that only refine share the build's refine
budget, counted in the ops of the candidates measured (`refining`): one that would start with
nothing left is skipped.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import sympy as sp

from codegen.derive import Partial
from codegen.front.functions import hypot
from codegen.front.spec import Spec
from codegen.stabilize.lines import LINE_SERIES, line_series, split_difference
from codegen.stabilize.measuring import P99_ROOM_BITS, Candidate, Samples, measured
from codegen.stabilize.monomials import monomial_label, monomial_series, of_one_monomial
from codegen.stabilize.per_dtype import DTYPES, dtype_regimes
from codegen.stabilize.refinements import (
    compensated_forms,
    halved_versions,
    local_series,
    scaled_forms,
    series_forms_at,
    term_forms,
)
from codegen.stabilize.regimes import (
    COST_FLOOR,
    best_regimes,
    needs_regimes,
    outside_domain,
    regime_columns,
)
from codegen.stabilize.split_on import (
    coordinate,
    homogeneous_ratio,
    split_expressions,
    within_domain,
)
from codegen.stabilize.sum_series import sum_series_forms
from codegen.stabilize.thresholds import placed
from codegen.timebound import charged, count, counting, time_left


@contextmanager
def refining():
    """A stage that only refines: the ops of each candidate it measures (its measuring time is
    about proportional) are charged to the build's refine budget, its CPU time to the budget's
    guard (`timebound.counting`)."""
    with charged("refine_seconds"), counting("refine"):
        yield


def refine_left() -> bool:
    return time_left("refine") > 0 and time_left("refine_seconds") > 0


def _measured(label, form, search: Search):
    candidate, per_point = measured(label, form, search.spec, search.samples, search.promoted)
    count(candidate.ops)  # inside a refining stage: its measuring work, in ops per point
    return candidate, per_point


PROMISE_KEYS = 4  # the rank's leading keys that count broken promises, not finer accuracy
MARGIN_BITS = P99_ROOM_BITS  # a p99 this close to the limit is worth regimes too


@dataclass(frozen=True)
class Search:
    spec: Spec
    partial: Partial
    samples: Samples
    promoted: bool  # float32 measured as it ships computed in float64
    banned: frozenset = frozenset()  # (label, arg): no regimes on arg take it (`failing_pieces`)

    def banned_on(self, arg=None) -> frozenset:
        """The labels regimes on `arg` may not take as pieces; on an expression of several args
        (None), those banned on any."""
        return frozenset(label for label, on in self.banned if arg is None or on == arg)


COORDINATE_SERIES = (LINE_SERIES, "series in ")  # labels of series in x - y, in monomials


@dataclass
class Measured:
    """Every candidate measured so far, and the per-point bits of those regimes may join."""

    tried: list[Candidate] = field(default_factory=list)
    bits: dict = field(default_factory=dict)

    def add(self, search: Search, forms) -> Candidate:
        """Measure `forms` (label, form) into this record; the best tried so far."""
        for label, form in forms:
            candidate, self.bits[label] = _measured(label, form, search)
            self.tried.append(candidate)
        return min(self.tried, key=Candidate.rank)

    def plain(self, banned: frozenset = frozenset(), own_series: str = "") -> list[Candidate]:
        """The candidates regimes may take as pieces: measured per point, no label `banned`,
        and no series in a coordinate of several args (x - y, x*y) but `own_series`, that of
        the coordinate the regimes split on. Elsewhere the other args are free: regimes on y
        took the series in x - y where the stabilizer's points lay near the line, and it was
        1e35 at x = -1e14 among the verifier's."""
        return [
            c
            for c in self.tried
            if c.label in self.bits
            and c.label not in banned
            and (not c.label.startswith(COORDINATE_SERIES) or c.label.startswith(own_series or "!"))
        ]


def best_form(search: Search, forms) -> tuple[Candidate, tuple[Candidate, ...]]:
    """(best candidate, every candidate measured) for the partial of `search`."""
    record = Measured()
    best = _closed_stages(search, forms, record)
    best = _regime_stages(search, best, record)
    return best, tuple(record.tried)


def _closed_stages(search: Search, forms, record: Measured) -> Candidate:
    """The candidates, then compensated, scaled and halved versions of the best of them."""
    best = record.add(search, forms)
    if needs_regimes(best, MARGIN_BITS) or _loses_bits(best):
        best = record.add(search, compensated_forms(record.tried, search.spec.arg_symbols))
    if needs_regimes(best, MARGIN_BITS) and len(search.spec.args) > 1:  # cheap: not skipped
        with refining():  # when the budget is out
            args = search.spec.arg_symbols
            best = record.add(search, scaled_forms(record.tried, record.bits, search.samples, args))
    if not best.keeps_promise():
        best = record.add(search, halved_versions(record.tried))
    if not best.keeps_promise():
        args = search.spec.arg_symbols
        probed = sum_series_forms(record.tried, args, lambda *form: _measured(*form, search)[0])
        best = record.add(search, probed)
    return best


def _loses_bits(best: Candidate) -> bool:
    """Whether the best form is off by more than a few ulps at the p99 in some dtype: its
    rounded sums may be what costs them, and a compensated version that adds no
    transcendental ranks above it. (logaddexp's float64 f_y kept the promise with room
    as sigmoid(y - x), p99 5.9 bits, which compensation takes to 1.0.)"""
    return any(f.p99_bits > COST_FLOOR for f in best.figures)


def _regime_stages(search: Search, best: Candidate, record: Measured) -> Candidate:
    """Regimes on the line x - y first (no threshold on one arg follows it), then on the
    monomial the partial is a function of (`monomials`), then on each arg, then on products
    and magnitudes of args, while the best misses the margin."""
    spec, partial = search.spec, search.partial
    line = split_difference(partial.expr, spec.arg_symbols)
    on = line
    if line is not None and needs_regimes(best, MARGIN_BITS):
        on = _line_coordinate(partial.expr, spec.arg_symbols)
        record.add(search, line_series(partial.expr, spec.arg_symbols))
        best = _split_on_expression(search, on, best, record, LINE_SERIES)
    monomial = of_one_monomial(partial.expr, spec.arg_symbols)
    if monomial is not None and needs_regimes(best, MARGIN_BITS):
        record.add(search, monomial_series(partial.expr, spec.arg_symbols))
        own = monomial_label(monomial)
        best = _split_on_expression(search, monomial, best, record, own, per_dtype=True)
    columns = regime_columns(spec, partial)
    multi, last_order = len(spec.args) > 1, partial.order == spec.order
    for column in columns if needs_regimes(best, MARGIN_BITS) else ():
        # series of a multi-arg last order cost most of a build: only where the best form
        # breaks the promise, not merely its margin, and while the refine budget lasts
        last = not best.keeps_promise() and refine_left()
        split = Split(column, len(columns) == 1, len(columns) == 1 or not last_order or last)
        with refining() if multi and last_order else nullcontext():
            best = _with_regimes(search, split, best, record)
    for expression in split_expressions(partial.expr, spec.arg_symbols) if len(columns) > 1 else ():
        if expression in (line, on, monomial) or (last_order and expression.func is hypot):
            continue  # the last order's backward pass meets the pieces' unclipped NaN
        if needs_regimes(best, MARGIN_BITS) and refine_left():
            with refining():
                best = _split_on_expression(search, expression, best, record)
    return best


def _line_coordinate(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> sp.Expr:
    """What regimes on the line x = y split on: x - y, or y/x where `expr` is homogeneous
    (its series in x - y is then as accurate at one (x - y)/y as at any scale)."""
    return next(iter(homogeneous_ratio(expr, args)), args[0] - args[1])


@dataclass(frozen=True)
class Split:
    column: int  # the arg regimes split on
    alone: bool  # the partial's only arg: series at its ends join, labels name no arg
    with_series: bool = True  # series in the arg are candidates for pieces


def _with_regimes(search: Search, split: Split, best: Candidate, record: Measured) -> Candidate:
    """`best`, or the regimes on one arg that beat it; the regimes tried join the record.
    For one arg's whole range, where those regimes still miss the promise or its margin
    (`needs_regimes`), Taylor polynomials about points inside it join the pieces, and the
    regimes are found again: a last resort, as their 8 to 32 terms cost ops the closed forms
    and end series do not (sinc's f'' took two 32-term polynomials where its closed forms
    kept the promise with room)."""
    spec, partial, samples = search.spec, search.partial, search.samples
    column = split.column
    arg, domain = spec.arg_symbols[column], spec.domain[column]
    series = series_forms_at(partial.expr, arg, domain) if split.with_series else ()
    record.add(search, (*series, *term_forms(partial.expr, arg)))
    found = _regimes_measured(search, split, best, record)
    if split.alone and split.with_series and needs_regimes(found, MARGIN_BITS):
        covering = [best.label, *(label for label, _ in series)]
        record.add(search, local_series(partial.expr, arg, covering, record.bits, samples, column))
        found = min(found, _regimes_measured(search, split, best, record), key=Candidate.rank)
    return found


def _regimes_measured(search: Search, split: Split, best: Candidate, record: Measured):
    """Both the most accurate regimes on the split's arg and the frugal ones (`best_regimes`)
    of the forms measured so far, measured; the better ranked competes with `best`: where
    both keep the promise with room, the cheaper."""
    spec, partial, samples = search.spec, search.partial, search.samples
    column = split.column
    arg, domain = spec.arg_symbols[column], spec.domain[column]
    plain = record.plain(search.banned_on(arg))  # regimes are not nested in regimes
    joint = best_regimes(plain, record.bits, samples.points, arg, column)
    frugal = best_regimes(plain, record.bits, samples.points, arg, column, frugal=True)
    closed = [c for c in plain if not c.label.startswith("regimes")]  # per dtype: no nesting
    per_dtype = (
        [] if search.promoted else dtype_regimes(closed, record.bits, samples.points, arg, column)
    )
    found = [("", joint)] if joint is not None else []
    if frugal is not None and joint is not None and frugal.label != joint.label:
        found.append(("frugal", frugal))
    on = "" if split.alone else f" in {arg}"
    shared = []
    for kind, regimes in [*found, *per_dtype]:
        dtype = next((d for d in DTYPES if kind.startswith(d)), "")
        form = _placed(search, regimes, column, dtype) if split.alone else regimes.form
        form = outside_domain(form, domain, partial.expr)
        label = f"regimes{on}{f' {kind}' if kind else ''}({regimes.label})"
        candidate, per_point = _measured(label, form, search)
        record.tried.append(candidate)
        shared += [candidate] if not dtype else []
        if not (dtype or split.alone or candidate.keeps_promise()):
            record.bits[label] = per_point  # what still breaks, the next arg's regimes may fix
    if joint is None:
        return best
    return _fixes_more(min(shared, key=Candidate.rank), best)


def _placed(search: Search, regimes, column: int, dtype: str):
    """The regimes of a partial of one arg (`column`) with each bound placed by measurement
    between the samples that bracket it (`thresholds`), for `dtype` alone or (empty) for both."""
    dtypes = (dtype,) if dtype else DTYPES
    spec, exact = search.spec, search.partial.expr
    return placed(regimes.form, regimes.gaps, spec, exact, column, dtypes, search.promoted)


def _fixes_more(piecewise: Candidate, best: Candidate) -> Candidate:
    """`piecewise` where it breaks fewer promise criteria than `best` (or, where `best` keeps
    the promise, has fewer points over 8 bits); else `best`: pieces cost ops and selects,
    only worth it to fix what breaks or to leave the margin."""
    keys = PROMISE_KEYS + (0 if not best.keeps_promise() else 1)
    return piecewise if piecewise.rank()[:keys] < best.rank()[:keys] else best


def _split_on_expression(
    search: Search,
    monomial,
    best: Candidate,
    record: Measured,
    own_series: str = "",
    per_dtype: bool = False,
):
    """`best`, or regimes split on the value of `monomial` (x*y, hypot(x, y), x - y or y/x
    on the line, whose series in x - y the caller measured first) that beat it, from the
    forms measured so far (the series in each arg among them). `per_dtype`: regimes chosen
    on each dtype's points alone are measured too, for that dtype's own form: a piece where
    x*y underflows float64 holds no float32 point, and joint regimes need points of both."""
    spec, samples = search.spec, search.samples
    at = coordinate(monomial, spec.arg_symbols)
    tried = record.plain(search.banned_on(), own_series)
    joint = best_regimes(tried, record.bits, samples.points, monomial, coordinate=at)
    if joint is None:
        return best
    candidate = _measured_split(search, monomial, f"({joint.label})", joint)
    record.tried.append(candidate)
    for dtype in DTYPES if per_dtype and not search.promoted else ():
        own = {dtype: samples.points[dtype]}
        regimes = best_regimes(tried, record.bits, own, monomial, coordinate=at)
        if regimes is not None:
            label = f" {dtype}({regimes.label})"
            record.tried.append(_measured_split(search, monomial, label, regimes))
    return _fixes_more(candidate, best)


def _measured_split(search: Search, monomial, label: str, regimes) -> Candidate:
    spec = search.spec
    form = within_domain(regimes.form, spec.arg_symbols, spec.domain, search.partial.expr)
    candidate, _ = _measured(f"regimes in {sp.sstr(monomial)}{label}", form, search)
    return candidate
