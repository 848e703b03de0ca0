"""Stage 3: choose, for every derivative, the form with the best measured accuracy.

In: `Derivatives`. Out: `StableForms`, one `Choice` per partial: the form to
ship, every candidate tried with its measured figures (for `hogen explain`),
and whether float32 must be computed in float64 to keep the promise.

For each partial, each candidate from `candidates` is measured (`measuring`: run in the
NumPy mirror on each path as the framework runs it, scored in bits against the exact
reference); a rewrite is kept only if it equals the SymPy derivative at check points.
If no single form keeps the promise with a margin, `search` refines the best forms and
splits regimes (on the line x - y, each arg in turn, products and magnitudes of args), with
series and one-term approximations joining the pieces. float32 may get a form of its own
(`per_dtype`); if it still fails, the op computes float32 in float64.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import sympy as sp

from codegen.derive import Derivatives, DeriveError, Partial
from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.lower import op_count
from codegen.pieces import values_only
from codegen.stabilize.cost import sharing
from codegen.stabilize.failing_pieces import failing_pieces
from codegen.stabilize.homogeneous import forget_forms
from codegen.stabilize.joint import cheaper, family_seed
from codegen.stabilize.limits import clear_limits, with_limits
from codegen.stabilize.lines import with_line_point
from codegen.stabilize.measuring import (
    Candidate,
    evaluate,
    measure,
    measuring_points,
    param_values,
    prepare_references,
)
from codegen.stabilize.offered import valid_candidates, valid_derived
from codegen.stabilize.per_dtype import split
from codegen.stabilize.piecewise import choose_pieces
from codegen.stabilize.refinements import (
    series_forms_at,
)
from codegen.stabilize.remembered import forget_outputs
from codegen.stabilize.rules import forget_rules
from codegen.stabilize.screening import in_every_dtype, screened
from codegen.stabilize.search import MARGIN_BITS, Search, best_form
from codegen.stabilize.sum_series import forget_sum_series
from codegen.timebound import counting, time_left, work_budget

SAMPLES = 2000  # the points `hogen verify` scores by default (docs/design.md: a fixed seed)
# Seconds of work (`timebound`) one build's series and expansions at infinity share, and its
# limits: the library's builds spend at most 12.4 (log_ndtr) and 2.4 (lbeta). Series and limits
# of a few args run at 5000 to 10000 objects a second, so a spent budget is more CPU time
# than its seconds there (a Taylor series of log_ndtr's runs at 17000); a two-arg spec
# whose every expansion ran to its own bound spent 57 and 13 CPU seconds before these bounds
# counted work (100*((1 + i/n)**n - 1)/(i/n)). Stages of a spec of
# several args that only refine a form share REFINE_OPS, the ops of the candidates they
# measure, counted, not timed, so which stages run does not depend on the processor:
# sqrt(sqrt(x**2 + y**2) - x), whose second derivatives break the promise, measures 9866 in
# them, 77 candidates, about 14 s here (the library measures few). Their CPU time has a
# guard only a processor 3x slower than this one reaches.
SERIES_BUDGET_SECONDS = 18.0
REFINE_OPS = 10000
REFINE_GUARD_SECONDS = 45.0
LIMITS_BUDGET_SECONDS = 5.0
# Series of the sums that cancel in a monomial of the args (`sum_series`), a budget of their
# own: they are tried after the others, which may have spent theirs. Finding those sums in
# the forms has one too: 0.5*sqrt(2*(sqrt(a**2 + b**2) + a)), whose forms are long and have
# none, spent 80 of its 139 s of build looking before it was bounded.
SUM_SERIES_BUDGET_SECONDS = 10.0
SUM_SERIES_SCAN_SECONDS = 6.0
# The ops of every candidate the search measures in one build, counted like REFINE_OPS: past
# them, what only second-guesses a choice already made stops (screening's later rounds, the
# promoted pass's choosing again, the family's second pass). The slowest builds that keep the
# promise measure 59k (d_log_hypot_minus_x), the two over a minute 117k and 186k.
EFFORT_OPS = 60000


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
    samples = measuring_points(spec, partial.expr, n)
    if isinstance(partial.expr, sp.Piecewise):  # pieces: one form for both dtypes
        one_form = functools.partial(choose, by_dtype=False)
        return choose_pieces(spec, partial, n, promoted, one_form, measure, samples)
    if forms is None:
        forms = valid_candidates(spec, partial)
    best, tried, pair, samples = _screened_choice(spec, partial, samples, promoted, forms, by_dtype)
    best = _at_infinity(best, spec, partial, promoted)
    if promoted:
        return Choice(partial.index, partial.expr, best, tried, True, best.figures[0])
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


SCREEN_ROUNDS = 3  # choices, each screened: a choice knowing the failures screening found
# may take a form with failures of its own (a dtype's own, cheaper form, or other regimes)


def _screened_choice(spec: Spec, partial: Partial, samples, promoted: bool, forms, by_dtype):
    """(best, tried, float64 and float32's own candidates or None, samples): the choice, made
    again with the points added where screening finds a shipped form failing (`screened`).
    Where the last choice fails too, the round whose shipped forms do best at all the points
    found ships (`_best_round`): a new choice may trade a flush at twice the smallest normal
    for infs elsewhere (d_sqrt_diff_two's f_xx in float32, regimes in x whose pieces fail
    where y > 1e33). Once the build's effort is spent (`EFFORT_OPS`), no round follows."""
    rounds, banned = [], frozenset()
    for _ in range(SCREEN_ROUNDS):
        best, tried = best_form(Search(spec, partial, samples, promoted, banned), forms)
        pair = split(best, tried, MARGIN_BITS) if by_dtype and not promoted else None
        rounds.append((best, tried, pair))
        shipped = dict(zip(("float64", "float32"), pair)) if pair else in_every_dtype(best)
        more = screened(spec, partial.expr, shipped, tried, samples, promoted)
        if more is None:
            return best, tried, pair, samples
        if not effort_left():
            samples = more
            break
        banned |= failing_pieces(shipped, tried, spec, samples, more, promoted)
        samples = more  # failures at points the sample missed: choose knowing them
    return (*_best_round(rounds, spec, samples, promoted), samples)


def _best_round(rounds, spec: Spec, samples, promoted: bool):
    """(best, tried, pair) of the round whose shipped forms, measured again at `samples`,
    break the promise least (broken criteria, failures, p99), the latest on ties."""

    def again(c: Candidate) -> Candidate:
        return replace(c, figures=measure(c.label, c.form, spec, samples, promoted).figures)

    def key(shipped):
        float64, float32 = shipped
        figures = (float32.figures[0], *float64.figures[1:])
        broken = sum(f.broken_criteria() for f in figures)
        return broken, sum(f.failures for f in figures), sum(f.p99_bits for f in figures)

    measured = []
    for best, tried, pair in rounds:
        pair = tuple(again(c) for c in pair) if pair is not None else None
        best = pair[0] if pair is not None else again(best)
        measured.append((key(pair or (best, best)), best, tried, pair))
    chosen = min(reversed(measured), key=lambda m: m[0])
    return chosen[1:]


def _at_infinity(best: Candidate, spec: Spec, partial: Partial, promoted: bool) -> Candidate:
    """`best` with pieces at ±inf where its form misses the derivative's limit (`limits`),
    and on the line x = y where it is 0/0 there (`lines`)."""

    def as_shipped(form, points, dtype):
        compute = "float64" if promoted else dtype
        return evaluate(form, spec, points.astype(compute), compute).astype(dtype)

    exact = partial.expr.subs(param_values(spec))
    form = with_limits(best.form, exact, spec.arg_symbols, spec.domain, as_shipped)
    label = best.label if form is best.form else f"{best.label}+limits at inf"
    on_line = with_line_point(form, exact, spec.arg_symbols, spec.domain, as_shipped)
    label = label if on_line is form else f"{label}+point on the line"
    if on_line is best.form:
        return best
    return replace(best, label=label, form=on_line, ops=op_count(on_line))


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
    Series and expansions share one budget of work, limits another; what they found is
    kept for this build only, so no build's result depends on the builds before it. Forms
    are lowered for their values only (`values_only`): the safe points of pieces not taken
    are found when the chosen forms are rendered.
    """
    series_forms_at.cache_clear()
    forget_sum_series()
    forget_forms()
    forget_outputs()
    forget_rules()
    clear_limits()
    budget = work_budget(
        series=SERIES_BUDGET_SECONDS,
        sum_series=SUM_SERIES_BUDGET_SECONDS,
        sum_series_scan=SUM_SERIES_SCAN_SECONDS,
        limits=LIMITS_BUDGET_SECONDS,
        refine=REFINE_OPS,
        refine_seconds=REFINE_GUARD_SECONDS,
        effort=EFFORT_OPS,
    )
    with budget, values_only(), counting("effort"):
        return _stabilized(derivatives)


def effort_left() -> bool:
    """Whether the build has measured fewer ops than `EFFORT_OPS` (outside a build: True)."""
    return time_left("effort") > 0


def _stabilized(derivatives: Derivatives) -> StableForms:
    spec, partials = derivatives.spec, derivatives.partials
    prepare_references(spec, [p.expr for p in partials], SAMPLES)
    forms = [_explained(spec, p, valid_candidates) for p in partials]
    choices = _chosen_in_order(spec, partials, forms)
    seed = family_seed(choices, spec.order)
    if seed and effort_left():  # forms sharing one exp, chosen together where they cost less
        again = _chosen_in_order(spec, partials, forms, seed=seed)
        choices = cheaper(choices, again, spec.order)
    if any(c.promote_float32 for c in choices):
        choices = _chosen_in_order(spec, partials, forms, first_pass=choices)
    return StableForms(spec, choices)


def _chosen_in_order(spec: Spec, partials, forms, first_pass=None, seed=()) -> tuple[Choice, ...]:
    """Each partial's choice, value first: a form's cost is what it adds to those before
    (and to `seed`, a family's shared work, `joint`). With `first_pass` (the choices made
    before some order needed float32 computed in float64), each is chosen for an op that
    computes float32 so (`_promoted_choice`)."""
    choices: list[Choice] = []
    for i, (partial, its_forms) in enumerate(zip(partials, forms)):
        its_forms = _with_derived(spec, partial, its_forms, choices)
        if first_pass is None:
            step, args = choose, (SAMPLES, False, its_forms)
        else:
            step, args = _promoted_choice, (first_pass[i], its_forms)
        last = partial.order == spec.order
        with sharing((*seed, *(c.chosen.form for c in choices)), last):
            choices.append(_explained(spec, partial, step, *args))
    return tuple(choices)


def _with_derived(spec: Spec, partial: Partial, forms, choices) -> list:
    """`forms` and, after them, the derivatives of the forms chosen for the partial's
    ancestors (`derived`) that are not among them."""
    offered = {form for _, form in forms if isinstance(form, sp.Expr)}
    derived = _explained(spec, partial, valid_derived, choices)
    return [*forms, *((label, form) for label, form in derived if form not in offered)]


def _promoted_choice(spec: Spec, partial: Partial, first: Choice, forms) -> Choice:
    """The choice for an op that computes float32 in float64: the first pass's float64 form
    where, measured so, it keeps the promise and screening finds no failure; else the
    better, at the points screening found, of it and a choice made again.

    float64 measures the same in both passes, and choosing again runs on what the first
    pass left of the refine budget: d_log_hypot_minus_x's f_yy, chosen again, shipped a
    closed form 64 bits off at 4% of its points where the first pass's regimes were off only
    at x, y > 1e147. Screening starts again from the initial sample, so a form whose
    failures only the first pass's screening knew (poisson_nll's value, exp(r) alone from
    r = 396.7 where k is huge) is found failing again. Once the build's effort is spent
    (`EFFORT_OPS`), the first pass's form ships as it measures."""
    samples = measuring_points(spec, partial.expr, SAMPLES)
    chosen = measure(first.chosen.label, first.chosen.form, spec, samples, True)
    kept = Choice(partial.index, partial.expr, chosen, first.tried, True, chosen.figures[0])
    if not effort_left():
        return kept
    found = None
    if kept.keeps_promise():
        found = screened(spec, partial.expr, in_every_dtype(chosen), first.tried, samples, True)
        if found is None:
            return kept
    again = choose(spec, partial, SAMPLES, True, forms)
    at = found or samples

    def shortfall(choice: Choice):
        c = measure(choice.chosen.label, choice.chosen.form, spec, at, True)
        broken = sum(f.broken_criteria() for f in c.figures)
        return (
            broken,
            sum(f.failures for f in c.figures),
            c.bad_points,
            sum(f.p99_bits for f in c.figures),
        )

    return min((again, kept), key=shortfall)  # choosing again wins ties, as before
