"""A form for float32 and another for float64, where no one form serves both.

In: the candidates of one partial, measured in both dtypes (with their per-point bits and
the sample points). Out: regimes chosen on one dtype's points alone (`dtype_regimes`), and
`split`: the best candidate for each dtype when the best joint candidate breaks the
promise, or keeps it with less than the margin, in one of them, or costs more
transcendentals than a form that keeps that dtype's promise with room.

Why: regimes split the line of one arg for both dtypes at once, but float32 and float64
break in different places. silu's f'' fails in float32 near x = +-90, where sigmoid(-x) is
subnormal and flushed to 0, while float64 is exact there; a float32 tail piece there costs
float64 several bits over hundreds of points. Before this the op computed float32 in float64
(8x the memory traffic, slower still on GPUs); now each dtype runs its own form, chosen by
the same measurements, and the generated function selects it by the input's dtype, which is
static in every framework's tracing.
"""

from __future__ import annotations

from codegen.judge import accuracy
from codegen.stabilize.regimes import best_regimes

DTYPES = accuracy.DTYPES  # ("float32", "float64")
# A form chosen for one dtype because it is cheaper may be more than 8 bits off at one point
# in a thousand (a tenth of what the p99 allows) more than the joint form, not more: more is
# a region where the form is wrong, which the p99 hides at the build's points and shows at
# others. A series in x*y used on all of (1 - exp(-x*y))/y's domain broke verify's p99 at
# 12 bits that way. (Counted beyond the joint form's own: erf(x - y)'s f_xx had a float64
# form 8 bits off at 16 points against the joint form's 15, and one more is no region.)
STRAY_POINTS = 0.001


def rank_in(candidate, i: int) -> tuple:
    """A candidate's rank judged on dtype `i` alone: broken criteria, failures; then forms
    with room to spare first, the fewest transcendentals among those; p99, mean (as
    `Candidate.rank` on both dtypes); then the fewest points more than 8 bits off, and the
    op count. (gelu's float32 f'' tied a closed form 8 bits off at 5 points with regimes
    off at none, and the closed form, first in line, won.)"""
    f = candidate.figures[i]
    mean = round(f.mean_bits * 4) / 4
    roomy = candidate.roomy_in(i)
    cost = candidate.transcendentals if roomy else 0
    return (
        f.broken_criteria(),
        f.failures,
        not roomy,
        cost,
        round(f.p99_bits),
        mean,
        _bad_in(candidate, i),
        candidate.ops,
    )


def dtype_regimes(tried, bits: dict, points: dict, arg, column: int):
    """(kind, RegimeChoice) for each dtype whose own points give a piecewise form: the kind
    is the dtype, or the dtype and "frugal" for its frugal regimes where they differ."""
    out = []
    for dtype in DTYPES:
        own = {dtype: points[dtype]}
        regimes = best_regimes(tried, bits, own, arg, column)
        if regimes is None:
            continue
        out.append((dtype, regimes))
        frugal = best_regimes(tried, bits, own, arg, column, frugal=True)
        if frugal is not None and frugal.label != regimes.label:
            out.append((f"{dtype} frugal", frugal))
    return out


def _margin(figures, i: int) -> float:
    return accuracy.P99_LIMIT - figures[i].p99_bits


def _fixes(candidate, best, i: int, margin_bits: float) -> bool:
    """Whether `candidate` keeps dtype i's promise where `best` breaks it, or keeps it with
    the margin where `best` keeps it without."""
    mine, theirs = candidate.figures[i], best.figures[i]
    if not mine.keeps_promise():
        return False
    if not theirs.keeps_promise():
        return True
    return _margin(candidate.figures, i) >= margin_bits > _margin(best.figures, i)


def _cheaper(candidate, best, i: int) -> bool:
    """Whether `candidate` keeps dtype i's promise with room, is more than 8 bits off at
    no more points than `best` and a few strays (`STRAY_POINTS`), and computes fewer
    transcendentals than `best`: each dtype runs only its own form, so a form one dtype
    needs is no cost to the other."""
    return (
        candidate.roomy_in(i)
        and _bad_in(candidate, i) <= _bad_in(best, i) + STRAY_POINTS * _scored(candidate, i)
        and candidate.transcendentals < best.transcendentals
    )


def _bad_in(candidate, i: int) -> int:
    return candidate.bad_in[i] if candidate.bad_in else 0


def _scored(candidate, i: int) -> int:
    return candidate.figures[i].scored


def split(best, tried, margin_bits: float):
    """(float64's candidate, float32's candidate) where the best joint candidate breaks the
    promise, or keeps it within `margin_bits` of the p99 limit, in a dtype whose own best
    candidate fixes that, or costs more than a dtype's own best that keeps the promise with
    room (`_cheaper`); else None."""
    for32 = min(tried, key=lambda c: rank_in(c, 0))
    for64 = min(tried, key=lambda c: rank_in(c, 1))
    fix32 = _fixes(for32, best, 0, margin_bits) or _cheaper(for32, best, 0)
    fix64 = _fixes(for64, best, 1, margin_bits) or _cheaper(for64, best, 1)
    if not (fix32 or fix64):
        return None
    return (for64 if fix64 else best), (for32 if fix32 else best)
