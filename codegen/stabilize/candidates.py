"""Candidate forms of one derivative: equivalent rewrites, sigmoid forms and series.

In: a SymPy derivative and the arg symbols. Out: a list of `(label, form)`
pairs, each a way to compute the same function that TensorFlow might compute
more accurately. Nothing here measures anything; `stabilize` measures every
candidate and keeps the best. Rewrites are exact identities (checked in
`stabilize` against the exact reference); series are approximations that
`stabilize` only uses inside the interval where it measured them accurate.
"""

from __future__ import annotations

import sympy as sp

from codegen.front.functions import hypot, sigmoid, softplus
from codegen.stabilize.conjugates import conjugate_forms
from codegen.stabilize.gamma import gamma_difference_forms
from codegen.stabilize.rules import apply_rules
from codegen.timebound import SymPyTimeout, bounded, time_limit  # noqa: F401 - re-exported

SIMPLIFY_MAX_OPS = 150
SERIES_TERMS = (3, 6, 10, 16)
# SymPy's series has no size bound (exp(exp(x)) to 16 terms runs for minutes): past this
# many seconds of CPU time the series candidates are skipped. Typical series take well under
# a second.
SERIES_SECONDS = 3.0
VARIANT_SECONDS = 3.0  # each of cancel, factor, simplify, collect of one derivative
# A rewrite more than this many times the size of the derivative is dropped: factor writes
# 1 + exp(-851*x/500) as a polynomial of degree 851 in exp(x/500), cyclotomic factors and all
# (1378 operations), and every later candidate of it costs minutes.
MAX_VARIANT_GROWTH = 4
# exp(a) as exp(u)**k for |k| up to this: sigmoid forms of higher powers are long, and rare.
MAX_EXP_POWER = 6


def _collect_exp(expr: sp.Expr) -> sp.Expr | None:
    exps = sorted(expr.atoms(sp.exp), key=sp.default_sort_key)
    if not exps:
        return None
    collected = sp.collect(sp.expand(expr), exps, evaluate=False)
    return sp.Add(*[sp.factor(sp.cancel(coeff)) * key for key, coeff in collected.items()])


HYPERBOLIC = (sp.tanh, sp.sinh, sp.cosh)


def _as_exp(expr: sp.Expr) -> sp.Expr:
    """tanh(u) as 2*sigmoid(2u) - 1, sinh and cosh in exp: the sigmoid rules and forms can
    then cancel `1 - tanh(u)` into `2*sigmoid(-2u)`, which no closed tanh form computes."""
    with_sigmoid = expr.replace(sp.tanh, lambda u: 2 * sigmoid(2 * u) - 1)
    return with_sigmoid.rewrite([sp.sinh, sp.cosh], sp.exp)


def _exp_degree(expr: sp.Expr) -> int:
    """The largest degree of expr's exps as powers of a common generator, as SymPy's
    polynomial routines see them: exp(-851*x/500) is degree 851 in exp(x/500)."""
    by_term: dict[sp.Expr, list[sp.Rational]] = {}
    for e in expr.atoms(sp.exp):
        coefficient, term = e.args[0].as_coeff_Mul()
        if coefficient.is_Rational:
            by_term.setdefault(term, []).append(coefficient)
    degree = 1
    for coefficients in by_term.values():
        denominator = sp.ilcm(*(c.q for c in coefficients), 1)
        degree = max(degree, *(int(abs(c) * denominator) for c in coefficients))
    return degree


def _algebraic_variants(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """expr, and SymPy's rewrites of it, each given `VARIANT_SECONDS` (skipped past them).
    factor and collect are skipped where they would expand exps into polynomials of a
    degree past `MAX_EXP_POWER`."""
    polynomial_steps = _exp_degree(expr) <= MAX_EXP_POWER
    steps = [("cancel", sp.cancel)]
    if polynomial_steps:
        steps.append(("factor", sp.factor))
    if sp.count_ops(expr) <= SIMPLIFY_MAX_OPS:
        steps.append(("simplify", sp.simplify))
    if polynomial_steps:
        steps.append(("collect exp", _collect_exp))
    variants = [("sympy", expr)]
    most_ops = MAX_VARIANT_GROWTH * (sp.count_ops(expr) + 1)
    for label, step in steps:
        form = bounded(VARIANT_SECONDS, None, step, expr)
        if form is not None and sp.count_ops(form) <= most_ops:
            variants.append((label, form))
    if expr.has(*HYPERBOLIC):  # written in exp and sigmoid, hyperbolics get sigmoid forms
        variants += [(f"{label}+as exp", _as_exp(form)) for label, form in variants]
    return variants


def _common_exponent(expr: sp.Expr) -> tuple[sp.Expr, dict] | None:
    """u such that every exp(a) in expr is exp(u)**k for an integer k, with the map a -> k."""
    exponents = sorted({e.args[0] for e in expr.atoms(sp.exp)}, key=sp.default_sort_key)
    for u in exponents:
        ratios = {a: sp.cancel(a / u) for a in exponents}
        if all(r.is_Integer and 0 < abs(r) <= MAX_EXP_POWER for r in ratios.values()):
            return u, {a: int(r) for a, r in ratios.items()}
    return None


def difference_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """For f(x, y) that depends on exp(x), exp(y) only through x - y: sigmoid forms in x - y.

    Substituting y = x - d and cancelling leaves a function of d alone when the
    expression is homogeneous in exp(x) and exp(y) (logaddexp's derivatives are).
    """
    if len(args) != 2 or not expr.has(sp.exp):
        return []
    x, y = args
    d = sp.Dummy("d", real=True)
    reduced = sp.cancel(sp.together(sp.expand_power_exp(expr.subs(y, x - d))))
    if reduced.has(x):
        return []
    return [(f"difference {label}", form.subs(d, x - y)) for label, form in sigmoid_forms(reduced)]


def _absorbed(node: sp.Expr) -> sp.Expr:
    """c*F*exp(u) -> sign(c*F)*exp(u + log|c*F|): no underflow of exp(u) before the product."""
    exps = [f for f in node.args if f.func is sp.exp]
    rest = sp.Mul(*[f for f in node.args if f.func is not sp.exp])
    if len(exps) != 1 or rest.is_number or isinstance(exps[0].args[0], sp.UnevaluatedExpr):
        return node
    exponent = sp.UnevaluatedExpr(exps[0].args[0] + sp.log(sp.Abs(rest)))  # SymPy would undo it
    return sp.sign(rest) * sp.exp(exponent)


def absorbed_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Products with an exp written as one exp, for tails where exp(u) alone underflows."""
    if not expr.has(sp.exp):
        return []
    try:
        form = expr.replace(lambda n: n.is_Mul and any(f.func is sp.exp for f in n.args), _absorbed)
    except RecursionError:
        return []
    return [] if form == expr else [("absorb exp", form)]


def log_sigmoid_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """sigmoid(u) as exp(-softplus(-u)), then products absorbed into one exp: where sigmoid(u)
    alone is subnormal (flushed to 0) but times a large factor is a normal number (silu's f'
    near x = -90 in float32), so float32 needs no float64 for its tail."""
    ruled = apply_rules(expr)[0]  # 1 - sigmoid(u) as sigmoid(-u) first: no 1 - exp(...) left
    if not ruled.has(sigmoid):
        return []
    as_exp = ruled.replace(sigmoid, lambda u: sp.exp(-softplus(-u))).replace(
        lambda n: n.is_Mul and sum(f.func is sp.exp for f in n.args) > 1, _one_exp
    )
    return [(f"log-sigmoid+{name}", form) for name, form in absorbed_forms(as_exp)]


def _one_exp(node: sp.Mul) -> sp.Expr:
    """exp(a)*exp(b)*F as exp(a + b)*F (SymPy keeps the factors apart)."""
    exps = [f.args[0] for f in node.args if f.func is sp.exp]
    rest = [f for f in node.args if f.func is not sp.exp]
    return sp.Mul(sp.exp(sp.Add(*exps)), *rest)


def _scaled_by_hypot(node: sp.Expr, balanced: bool) -> sp.Expr:
    """a**e * hypot**-k -> (a/hypot)**e * hypot**(e-k): bounded ratios, no overflow.

    `balanced` also spreads a remaining negative power of hypot over the ratios,
    (a/hypot * hypot**((e-k)/e))**e, so no ratio is squared into underflow first.
    """
    hyps = [f for f in node.args if f.as_base_exp()[0].func is hypot]
    if len(hyps) != 1:
        return node
    h, power = hyps[0].as_base_exp()
    ratios, rest = [], []
    for factor in node.args:
        base, e = factor.as_base_exp()
        if base.is_Symbol and e.is_Integer and e > 0:
            ratios.append((base / h, e))
            power += e
        elif factor is not hyps[0]:
            rest.append(factor)
    if not ratios:
        return node
    total = sum(e for _, e in ratios)
    if balanced and power < 0:
        share = h ** (power / total)
        ratio = [sp.UnevaluatedExpr(sp.UnevaluatedExpr(r) * share) ** e for r, e in ratios]
        return sp.Mul(*rest, *ratio)
    return sp.Mul(*rest, *(sp.UnevaluatedExpr(r) ** e for r, e in ratios), h**power)


def hypot_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Products with a power of hypot(a, b) written with the bounded ratios a/hypot, b/hypot."""
    if not expr.has(hypot):
        return []
    out = []
    for label, balanced in (("hypot ratios", False), ("hypot ratios balanced", True)):
        form = expr.replace(
            lambda n: n.is_Mul and n.has(hypot), lambda n, b=balanced: _scaled_by_hypot(n, b)
        )
        if form != expr:
            out.append((label, form))
    return out


def reciprocal_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """b**-k as (1/b)**k: near underflow, 1/b**2 overflows to inf where (1/b)**2 is finite."""

    def is_target(n):
        return n.is_Pow and n.exp.is_Integer and n.exp < -1 and not n.base.is_number

    form = expr.replace(is_target, lambda n: sp.UnevaluatedExpr(1 / n.base) ** (-n.exp))
    return [] if form == expr else [("reciprocal powers", form)]


MAX_SPREAD_POWER = 8


def _spread(node: sp.Expr) -> sp.Expr:
    """c*b**k (integer |k| >= 2) as ((c*b)*b)... or ((c/b)/b)...: one factor at a time."""
    powers = [
        f
        for f in node.args
        if f.is_Pow
        and f.exp.is_Integer
        and 2 <= abs(f.exp) <= MAX_SPREAD_POWER
        and not f.base.is_number
    ]
    rest = [f for f in node.args if f not in powers]
    if not powers or not rest:
        return node
    product = sp.Mul(*rest)
    for power in powers:
        unit = power.base if power.exp > 0 else sp.UnevaluatedExpr(1 / power.base)
        for _ in range(abs(int(power.exp))):
            product = (product if product.is_number else sp.UnevaluatedExpr(product)) * unit
    return product


def _paired(node: sp.Expr) -> sp.Expr:
    """a**k * b**-k -> (a/b)**k: a**k and b**k overflow where their ratio does not."""
    ups = {f.exp: f.base for f in node.args if f.is_Pow and f.exp.is_Integer and f.exp > 1}
    for f in node.args:
        if f.is_Pow and f.exp.is_Integer and -f.exp in ups and not f.base.is_number:
            top = ups[-f.exp]
            rest = [g for g in node.args if g is not f and g != top**-f.exp]
            return sp.Mul(*rest, sp.UnevaluatedExpr(top / f.base) ** (-f.exp))
    return node


def ratio_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Products a**k/b**k written (a/b)**k: x**2/(1 + e*x)**2 stays finite for huge x."""
    try:
        form = expr.replace(lambda n: n.is_Mul, _paired)
    except RecursionError:
        return []
    return [] if form == expr else [("paired powers", form)]


def spread_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Products with a power, c*x**-2, multiplied out one factor at a time, (c/x)/x: near the
    ends of the float range x**-2 overflows or underflows (and flushes to 0) where the
    product is a normal number."""
    try:
        form = expr.replace(lambda n: n.is_Mul, _spread)
    except RecursionError:
        return []
    return [] if form == expr else [("spread powers", form)]


def sigmoid_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Write a function rational in exp(u) as a rational function of sigmoid(u) and sigmoid(-u).

    With s = sigmoid(u), exp(u) = s / (1 - s); factoring in s and naming 1 - s
    sigmoid(-u) gives forms like sigmoid(u)*sigmoid(-u) that never overflow.
    """
    common = _common_exponent(expr)
    if common is None:
        return []
    u, ratios = common
    s = sp.Dummy("s")
    substituted = expr.xreplace({sp.exp(a): (s / (1 - s)) ** k for a, k in ratios.items()})
    if substituted.has(sp.exp) or not substituted.is_rational_function(s):
        return []
    factored = sp.factor(sp.cancel(sp.together(substituted)))
    out = []
    for label, form in (
        ("sigmoid", factored.subs(s, sigmoid(u))),
        ("sigmoid(-u)", factored.subs(s, 1 - sigmoid(-u))),
    ):
        out.append((label, form))
    return out


def series_forms(expr: sp.Expr, arg: sp.Symbol, point: int = 0) -> list[tuple[str, sp.Expr]]:
    """Taylor polynomials of `expr` about `point`, several degrees, for cancellation near it.

    The expansion and the polynomial in `arg` are built under one bound: with other args in
    the coefficients, building the polynomial can cost more than the series."""
    try:
        with time_limit(SERIES_SECONDS):
            longest = sp.series(expr, arg, point, max(SERIES_TERMS)).removeO()
            if longest.has(sp.log, sp.Order, sp.I) or not longest.is_polynomial(arg):
                return []  # I: complex at 0
            return _truncations(sp.Poly(longest, arg), arg)
    except (Exception, SymPyTimeout):  # noqa: BLE001 - SymPy raises many kinds
        return []


def _truncations(poly: sp.Poly, arg: sp.Symbol) -> list[tuple[str, sp.Expr]]:
    out = []
    for terms in SERIES_TERMS:
        truncated = sum(
            (coeff * arg**power for (power,), coeff in poly.terms() if power < terms), sp.S.Zero
        )
        if truncated != 0:
            horner = sp.horner(truncated, arg) if truncated.free_symbols else truncated
            out.append((f"series x<{terms}>", horner))
    return out


def candidates(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """Every closed candidate form of `expr`, rules applied to each, without duplicates, in
    fixed order (series: `series_candidates`)."""
    raw: list[tuple[str, sp.Expr]] = []
    for label, variant in _algebraic_variants(expr):
        raw.append((label, variant))
        for name, form in sigmoid_forms(variant):
            raw.append((f"{label}+{name}", form))
            raw += [(f"{label}+{name}+{more}", f) for more, f in log_sigmoid_forms(form)]
        raw += [(f"{label}+{name}", form) for name, form in difference_forms(variant, args)]
        raw += [(f"{label}+{name}", form) for name, form in absorbed_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in reciprocal_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in conjugate_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in spread_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in ratio_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in gamma_difference_forms(variant)]
    seen: set[str] = set()
    out: list[tuple[str, sp.Expr]] = []
    for label, form in raw:
        for name, version in (
            (label, form),
            *_rules_version(label, form),
            *_hypot_version(label, form),
        ):
            key = sp.srepr(version)
            if key not in seen:
                seen.add(key)
                out.append((name, version))
    return out


def series_candidates(expr: sp.Expr, arg: sp.Symbol) -> list[tuple[str, sp.Expr]]:
    """Taylor series of `expr` at 0 (truncated at several lengths) and the zero form, for
    regimes of a one-arg function: pieces near a removable singularity, or where the value
    underflows (exact there, and never NaN)."""
    return [*series_forms(expr, arg), ("series zero", sp.S.Zero)]


def _hypot_version(label: str, form: sp.Expr) -> list[tuple[str, sp.Expr]]:
    rewritten, _ = apply_rules(form)
    return [(f"{label}+rules+{name}", version) for name, version in hypot_forms(rewritten)]


def _rules_version(label: str, form: sp.Expr) -> list[tuple[str, sp.Expr]]:
    rewritten, used = apply_rules(form)
    if not used:
        return []
    return [(f"{label}+rules({','.join(used)})", rewritten)]
