"""Forms offered after a first measurement: versions of the best forms, series for regimes.

In: a partial's measured candidates (`Candidate`s and their per-point bits) and the spec's
args. Out: more `(label, form)` candidates for `selection` to measure:

- `compensated_forms`: the best forms with exact squares inside exp and compensated sums;
- `scaled_forms`: the best forms (and those accurate where they are not) at scaled args,
  where homogeneous;
- `halved_versions`: the best forms with the sums under their roots and logs halved, and
  with their logs of products split into sums of logs;
- `series_forms_at`: Taylor series at 0 and expansions at the domain's infinite ends;
- `local_series`: Taylor polynomials about points inside the range where the best fails;
- `term_forms`: each term of a sum alone, for where it dominates.

`lowers` says whether a form lowers at all (one written under assumptions may not).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from codegen.judge import accuracy
from codegen.lower import op_count
from codegen.stabilize.asymptotic import asymptotic_forms
from codegen.stabilize.compensated import compensated, exact_exponents
from codegen.stabilize.homogeneous import halved_forms, homogeneous_forms
from codegen.stabilize.local_series import local_series_forms
from codegen.stabilize.logs import split_log_forms
from codegen.stabilize.measuring import Candidate, Samples
from codegen.stabilize.products import spread_forms
from codegen.stabilize.regimes import complementary_labels
from codegen.stabilize.rules import apply_rules
from codegen.stabilize.squares import square_split
from codegen.stabilize.taylor import series_candidates


def lowers(form: sp.Expr) -> bool:
    """Whether `form` lowers: one written under the domain's assumptions may not once they
    are gone (sign(sqrt(eps)) makes SymPy evaluate a complex hypot)."""
    try:
        op_count(form)
    except Exception:  # noqa: BLE001 - SymPy raises many kinds evaluating such forms
        return False
    return True


@functools.lru_cache(maxsize=64)  # both passes of a promoted op need the same series
def series_forms_at(expr: sp.Expr, arg: sp.Symbol, domain) -> tuple[tuple[str, sp.Expr], ...]:
    """Series candidates at 0 and at the domain's infinite ends (approximations, kept only
    where they measure well), computed only when the closed forms need regimes: SymPy series
    are most of a build's time."""
    forms = (*series_candidates(expr, arg), *asymptotic_forms(expr, arg, domain))
    return tuple((label, form) for label, form in forms if lowers(form))  # no complex constants


MAX_TERMS = 6  # sums with more terms get no one-term candidates


def term_forms(expr: sp.Expr, arg: sp.Symbol) -> tuple[tuple[str, sp.Expr], ...]:
    """Each term of a sum that varies with `arg`, alone: where one term dominates the rest
    (exp(r) in exp(r) - k*r + lgamma(k + 1) at large r) it is the sum as rounded, and it
    stays finite where the others overflow into inf - inf. Approximations, like series:
    `regimes` uses one only where it measured accurate."""
    if not expr.is_Add or len(expr.args) > MAX_TERMS:
        return ()
    terms = sorted(expr.args, key=sp.default_sort_key)
    return tuple((f"series term<{i}>", t) for i, t in enumerate(terms) if arg in t.free_symbols)


COMPENSATED_TRIES = 4  # the best forms measured that get a compensated version


def compensated_forms(tried, args) -> list[tuple[str, sp.Expr]]:
    """The best measured closed forms without the rounding errors a form can avoid: with
    each exp(c*u**2) split so u**2 is exact (`square_split`), with each rounded sum of two
    args corrected to first order (`compensated`), and with both."""
    out, used = [], 0
    for candidate in sorted(tried, key=Candidate.rank):
        if not isinstance(candidate.form, sp.Expr):
            continue
        found = _error_free_versions(candidate.form, args)
        out += [(f"{candidate.label}+{label}", version) for label, version in found]
        used += bool(found)
        if used == COMPENSATED_TRIES:
            break
    return out


SCALED_TRIES = 6  # the best forms measured that get versions at scaled args


def scaled_forms(tried, bits: dict, samples: Samples, args) -> list[tuple[str, sp.Expr]]:
    """The best measured closed forms, where homogeneous, computed at args scaled into
    [-1, 1] (`homogeneous`): the best, and those accurate where it is not
    (`complementary_labels`; versions of one form would crowd out the others)."""
    closed = [c for c in tried if isinstance(c.form, sp.Expr) and c.label in bits]
    ranked = sorted(closed, key=Candidate.rank)
    labels = complementary_labels(ranked, bits, samples.points, SCALED_TRIES)
    labels += [k for k in _best_at_moderate_args(closed, bits, samples) if k not in labels]
    out = []
    for candidate in (c for c in ranked if c.label in labels):
        found = homogeneous_forms(candidate.form, args)
        out += [(f"{candidate.label}+{label}", form) for label, form in found]
    return out


HALVED_TRIES = 2  # the best forms measured that get their sums under roots halved


def halved_versions(tried) -> list[tuple[str, sp.Expr]]:
    """The best measured closed forms with the sums under their roots halved (`halved_forms`):
    sqrt(-x + hypot(x, y)) stays finite at x = -1.8e308, where -x + hypot(x, y) is inf; with
    their logs of products split (`split_log_forms`), then the rules applied to those logs;
    and with their powers multiplied out after the coefficient (`spread_forms`): -x**2/2 as
    (-x/2)*x is a float at x = -1.5e154, where x**2 overflows (the rules that wrote the form
    may have joined the factors again)."""
    closed = [c for c in sorted(tried, key=Candidate.rank) if isinstance(c.form, sp.Expr)]
    out = []
    for candidate in closed[:HALVED_TRIES]:
        out += [(f"{candidate.label}+{n}", f) for n, f in halved_forms(candidate.form)]
        out += [(f"{candidate.label}+{n}", f) for n, f in spread_forms(candidate.form)]
        for name, split in split_log_forms(candidate.form):
            out.append((f"{candidate.label}+{name}", split))
            out += [(f"{candidate.label}+{name}+{n}", f) for n, f in halved_forms(split)]
            ruled, used = apply_rules(split)  # log(2*sinh(u)**2): log|sinh(u)| has a rule
            if used:
                out.append((f"{candidate.label}+{name}+rules({','.join(used)})", ruled))
    return out


MODERATE_TRIES = 2  # forms scaled for their accuracy at moderate args alone
MODERATE = 2.0**8  # moderate args: the largest in magnitude within [1/MODERATE, MODERATE]


def _best_at_moderate_args(closed, bits: dict, samples: Samples) -> list[str]:
    """The labels of the forms with the fewest points over the promise's p99 limit, then the
    least mean error, where the largest arg is moderate: scaling takes every point there,
    so a form that fails only by overflow elsewhere is what scaling makes accurate
    everywhere, however it ranked on all points."""

    largest = {d: np.max(np.abs(p.astype(np.float64)), axis=1) for d, p in samples.points.items()}
    moderate = {d: (m >= 1 / MODERATE) & (m <= MODERATE) for d, m in largest.items()}

    def score(candidate) -> tuple[int, float]:
        over, total = 0, 0.0
        for dtype, mask in moderate.items():
            b = np.nan_to_num(bits[candidate.label][dtype][mask], nan=64.0)
            over += int(np.sum(b > accuracy.P99_LIMIT))
            total += accuracy.exact_mean(b)
        return over, total

    return [c.label for c in sorted(closed, key=score)[:MODERATE_TRIES]]


def _error_free_versions(form: sp.Expr, args) -> list[tuple[str, sp.Expr]]:
    split = square_split(form)
    versions = [("exact squares", split), ("compensated", compensated(form, args))]
    versions.append(("exact exponents", exact_exponents(form)))
    if split is not None:
        versions.append(("exact squares+compensated", compensated(split, args)))
    return [(label, version) for label, version in versions if version is not None]


LOCAL_SERIES_BITS = 4.0  # points this far off in every covering form ask for local series


def local_series(expr, arg, covering: list[str], bits: dict, samples: Samples, column: int):
    """Taylor polynomials about points inside the arg's range where each form measured in
    `covering` (the best closed form, the series at the range's ends) is more than
    `LOCAL_SERIES_BITS` off (`local_series`): centers among all the best form's bad points
    would crowd near 0, where the series at 0 already serves, and miss the gap between its
    reach and where the closed form recovers ((x - tanh(x))/x**3's f' at |x| = 0.2 to 0.5)."""
    measured = [bits[label] for label in covering if label in bits]
    if not measured:
        return ()
    off = []
    for dtype in samples.points:
        worst = np.min([np.nan_to_num(b[dtype], nan=np.inf) for b in measured], axis=0)
        off.append(samples.points[dtype][worst > LOCAL_SERIES_BITS, column])
    return tuple(local_series_forms(expr, arg, np.concatenate(off).astype(np.float64)))
