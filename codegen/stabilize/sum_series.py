"""Sums that cancel in one monomial of the args, computed as a series in that monomial.

In: a closed form (SymPy) and the spec's args. Out: `sum_series_forms`, `(label, form)`
candidates in which each cancelling sum is replaced. A sum's terms are grouped: those whose
ratios to a common factor R are functions of one monomial w of the args alone (1/x, and
x*y, x/y, y/x), Q(w). Where Q vanishes at w = 0 to a higher order than its terms, that group is

    R * Q_taylor(w)    where |w| < c,    the terms as they were elsewhere,

with Q_taylor the first `SERIES_TERMS` terms of Q's expansion at w = 0, and c where the next
terms are below float64's half ulp of the first (coefficients measured, not assumed).
Sums inside are replaced the same way, in R and in the terms kept.

Why: the partials of compound growth (1 + x*y)**(1/y), (1 + i/n)**n carry
log1p(w) - w/(1 + w), about w**2/2, and, one order up, sums of such differences that cancel
again. No threshold on one arg follows w = x*y or i/n, and the series of the whole partial in
an arg fails where the factor outside the sum (exp(n*log1p(i/n))) varies fastest. In w alone
the difference is a polynomial with no cancellation at all. Like every series, `stabilize`
keeps such a form only where it measures accurate.
"""

from __future__ import annotations

import functools

import flint
import sympy as sp

from codegen.judge import balls
from codegen.stabilize import power_series
from codegen.stabilize.measuring import Candidate
from codegen.stabilize.taylor import fast_log1p
from codegen.timebound import SymPyTimeout, budgeted_limit

SERIES_TERMS = (8, 16, 24, 32)  # terms of Q's expansion kept: the fewest that reach
WIDE_THRESHOLD = 0.25  # this threshold, where the sum as written loses 2 bits per power of w
PROBE_TERMS = 8  # the versions of the forms looked at are measured with this many first
NEXT_TERMS = 3  # terms past them whose size sets the threshold
LEADING_ORDERS = 8  # Q's expansion is found to this order first, for its leading power
SERIES_SECONDS = 2.0  # of work for one group's expansion (`timebound`)
SCAN_SECONDS = 0.5  # of work for finding one form's groups, their series aside
MAX_GROUPS = 6  # cancelling groups replaced in one form
HALF_ULP = 2.0**-53
LARGEST_THRESHOLD = 0.5
PROBE_WS = (2**-40, 2**-80)  # w at which a group's cancellation is looked for in balls first
PROBE_PRECISION = 1024  # bits: a power of w cancelled at 2**-80 costs 80 of them
SHRINKS = flint.arb(2) ** -20  # |Q| / sum |terms| from the first w to the second, where Q
# vanishes faster than its terms: 2**-40 per power of w
_W = sp.Dummy("w")


def monomials(args: tuple[sp.Symbol, ...]) -> list[tuple[sp.Expr, tuple, sp.Symbol | None]]:
    """(w, the substitution writing an arg in w, the arg left beside w) per monomial: the
    reciprocal of each arg (w -> 0 is the arg's infinite end), and for two args x*y, x/y and
    y/x. An arg itself is no monomial here: Taylor series at 0 in it are `taylor`'s."""
    if len(args) not in (1, 2):
        return []
    ends = [(1 / a, (a, 1 / _W), next((b for b in args if b != a), None)) for a in args]
    if len(args) == 1:
        return ends
    x, y = args
    return [(x * y, (x, _W / y), y), (x / y, (x, _W * y), y), (y / x, (y, _W * x), x), *ends]


def _in_w(expr: sp.Expr, substitution: tuple, other) -> sp.Expr | None:
    """`expr` as a function of w alone, or None where it depends on the other arg too."""
    written = expr.xreplace(dict((substitution,)))
    return None if other is not None and other in written.free_symbols else written


def _outer_factor(term: sp.Expr, substitution: tuple, other) -> sp.Expr:
    """The product of `term`'s factors that are not functions of w alone."""
    factors = sp.Mul.make_args(term)
    return sp.Mul(*(f for f in factors if _in_w(f, substitution, other) is None))


@functools.lru_cache(maxsize=4096)  # forms of one partial share most of their sums
def _groups(terms: tuple, substitution: tuple, other) -> tuple:
    """(R, terms, their ratios to R) for each group of two or more terms whose ratios to R
    are functions of w alone, R taken from the first term not yet grouped."""
    left, out = list(terms), []
    while left:
        factor = _outer_factor(left[0], substitution, other)
        ratios = [(t, _in_w(t / factor, substitution, other)) for t in left]
        group = [(t, q) for t, q in ratios if q is not None]
        left = [t for t, q in ratios if q is None]
        if len(group) > 1:
            out.append((factor, tuple(t for t, _ in group), tuple(q for _, q in group)))
        if not group:
            break
    return tuple(out)


@functools.lru_cache(maxsize=512)  # screening rounds, passes and forms meet the same sums
def _expansion(q: sp.Expr, order: int) -> dict[int, sp.Number] | None:
    """{power: coefficient} of q's expansion at w = 0 below w**order, or None: none in integer
    powers found within `SERIES_SECONDS`. Exact series arithmetic first (`power_series`),
    SymPy's series where q leaves rational coefficients."""
    exact = power_series.expansion(q, _W, order)
    if exact is not None:
        return exact
    try:
        with budgeted_limit(SERIES_SECONDS, "sum_series"):
            return _powers(sp.series(fast_log1p(q, _W), _W, 0, order).removeO())
    except SymPyTimeout:
        return None
    except Exception:  # noqa: BLE001 - SymPy raises many kinds
        return None


def _powers(expansion: sp.Expr) -> dict[int, sp.Number] | None:
    powers = {}
    for term in sp.Add.make_args(sp.expand(expansion)):
        coefficient, power = term.as_coeff_exponent(_W)
        if not coefficient.is_number or not power.is_Integer or coefficient.has(sp.I):
            return None
        if coefficient != 0:
            powers[int(power)] = coefficient
    return powers


def _leading_power(q: sp.Expr) -> int | None:
    found = _expansion(q, LEADING_ORDERS)
    return min(found) if found else None


def _cancels(q: sp.Expr, terms: tuple[sp.Expr, ...]) -> bool:
    """Whether Q vanishes at w = 0 to a higher order than one of `terms`."""
    if not _may_cancel(q, terms):
        return False
    leading = _leading_power(q)
    if leading is None or leading <= 0:
        return False
    powers = [_leading_power(t) for t in terms]
    return None not in powers and min(powers) < leading


def _may_cancel(q: sp.Expr, terms: tuple[sp.Expr, ...]) -> bool:
    """False where arb balls show |Q| / sum |terms| surely not shrinking from w = 2**-40 to
    2**-80, so Q vanishes no faster than its terms; True where it shrinks or balls cannot
    tell. A cheap look before the series (`_cancels`), which alone decide where it is True."""
    try:
        programs = balls.compile_joint((q, *terms), (_W,))
        with balls.precision(PROBE_PRECISION):
            leaves = [balls.leaf(c) for c in programs[0].leaves]
            first, closer = (_relative_size(programs, w, leaves) for w in PROBE_WS)
    except Exception:  # noqa: BLE001 - the compiler and flint raise several kinds; then the series decide
        return True
    return not (first.is_finite() and closer.is_finite() and closer > first * SHRINKS)


def _relative_size(programs, w: float, leaves: list) -> flint.arb:
    """|Q| / sum |terms| at `w`, a ball (not finite where it cannot be evaluated)."""
    values = balls.run_row(programs[0], (w,), leaves)
    q, *terms = (abs(values[p.root]) for p in programs)
    return q / sum(terms, flint.arb(0))


def _taylor(q: sp.Expr, most: int) -> tuple[tuple[int, sp.Expr], float] | None:
    """((p, P), c): Q's expansion as w**p*P(w), P in Horner form with the fewest of
    `SERIES_TERMS` up to `most` that reach `WIDE_THRESHOLD`, and the threshold c on |w|
    where the terms past them are below a half ulp of the first; None where SymPy finds none
    in time."""
    leading = _leading_power(q)
    found = None if leading is None else _expansion(q, leading + most + NEXT_TERMS)
    if not found:
        return None
    for count in (c for c in SERIES_TERMS if c <= most):
        threshold = _threshold(found, leading, count)
        if threshold >= WIDE_THRESHOLD:
            break
    kept = [p for p in found if p < leading + count]
    polynomial = sp.Add(*(found[p] * _W ** (p - leading) for p in kept))
    return (leading, sp.horner(polynomial, _W)), threshold


def _threshold(found: dict, leading: int, count: int) -> float:
    """The |w| below which the powers of `found` past `count` terms are each below a half ulp
    of the leading term (at most `LARGEST_THRESHOLD`)."""
    head = abs(float(found[leading]))
    beyond = [p for p in found if leading + count <= p < leading + count + NEXT_TERMS]
    ratios = [(HALF_ULP * head / abs(float(found[p]))) ** (1 / (p - leading)) for p in beyond]
    return min([*ratios, LARGEST_THRESHOLD])


def _replaced(expr: sp.Expr, args, most: int, groups: list) -> sp.Expr:
    """`expr` with its cancelling groups replaced, outermost first, by series of up to `most`
    terms; up to `MAX_GROUPS` of them, each appended to `groups`."""
    if not expr.args or expr.is_number:
        return expr
    if expr.is_Add and len(groups) < MAX_GROUPS:
        for w, substitution, other in monomials(args):
            for factor, group, ratios in _groups(expr.args, substitution, other):
                q = sp.Add(*ratios)
                series = _taylor(q, most) if _cancels(q, ratios) else None
                if series is None:
                    continue
                groups.append(q)
                rest = [t for t in expr.args if t not in group]
                kept = sp.Add(*(_replaced(t, args, most, groups) for t in group))
                (leading, polynomial), threshold = series
                near = factor * w**leading * polynomial.xreplace({_W: sp.UnevaluatedExpr(w)})
                piece = sp.Piecewise((near, sp.Abs(w) < threshold), (kept, True))
                return _replaced(sp.Add(*rest), args, most, groups) + piece
    inner = tuple(_replaced(a, args, most, groups) for a in expr.args)
    return expr if inner == expr.args else expr.func(*inner)


def _scanned(form: sp.Expr, args) -> bool:
    """Whether the groups of every sum in `form` are found (and remembered) within
    `SCAN_SECONDS` of work: a long form of several args has many sums, each looked at for
    every monomial. Their series are bounded apart (`SERIES_SECONDS`)."""
    try:
        with budgeted_limit(SCAN_SECONDS, "sum_series_scan"):
            for node in sp.preorder_traversal(form):
                for _, substitution, other in monomials(args) if node.is_Add else ():
                    _groups(node.args, substitution, other)
    except SymPyTimeout:
        return False
    return True


@functools.lru_cache(maxsize=256)  # screening rounds and passes look at the same forms again
def _version(form: sp.Expr, args, most: int) -> sp.Expr:
    """`form` with its cancelling groups replaced, or `form` where finding them takes too long."""
    return _replaced(form, args, most, []) if _scanned(form, args) else form


def forget_sum_series() -> None:
    """Each build finds its own series, within its own budgets (`timebound`)."""
    _expansion.cache_clear()
    _version.cache_clear()
    _groups.cache_clear()


SERIES_TRIES = 2  # versions offered: of the forms whose short versions measured best
SERIES_LOOKS = 12  # the best closed forms measured that are looked at for cancelling sums


def sum_series_forms(tried, args, measure) -> list[tuple[str, sp.Expr]]:
    """Of the best measured closed forms that have sums cancelling in a monomial of the args,
    those whose versions with short series (`PROBE_TERMS`) measure best (`measure(label,
    form)`, a `Candidate`), with those sums written as the full series. A version is its
    form outside the series, and its form's other parts inside: which forms make good
    versions is measured, not guessed."""
    closed = [c for c in sorted(tried, key=Candidate.rank) if isinstance(c.form, sp.Expr)]
    probes = []
    for candidate in closed[:SERIES_LOOKS]:
        probe = _version(candidate.form, tuple(args), PROBE_TERMS)
        if probe != candidate.form:
            probes.append((measure(candidate.label, probe), candidate))
    probes.sort(key=lambda pair: pair[0].rank())  # stable: ties keep the measured order
    out = []
    for _, candidate in probes[:SERIES_TRIES]:
        full = _version(candidate.form, tuple(args), max(SERIES_TERMS))
        out.append((f"{candidate.label}+sum series", full))
    return out
