"""Candidate forms of one derivative: equivalent rewrites and sigmoid forms.

In: a SymPy derivative and the arg symbols. Out: a list of `(label, form)`
pairs, each a way to compute the same function that TensorFlow might compute
more accurately. Nothing here measures anything; `stabilize` measures every
candidate and keeps the best. Rewrites are exact identities (checked in
`stabilize` against the exact reference). Series, approximations used only where they
were measured accurate, are `taylor`'s.
"""

from __future__ import annotations

import sympy as sp

from codegen.front.functions import erfcx, sigmoid, softplus
from codegen.judge.numeric import rewritten_under_xla
from codegen.lower import lower
from codegen.stabilize.complements import complement_forms, growth_forms
from codegen.stabilize.conjugates import conjugate_forms
from codegen.stabilize.gamma import gamma_difference_forms
from codegen.stabilize.lines import line_forms
from codegen.stabilize.logs import log_ratio_forms, split_log_forms
from codegen.stabilize.monomials import monomial_forms
from codegen.stabilize.powers import power_difference_forms
from codegen.stabilize.products import (
    absorbed_forms,
    hypot_forms,
    ratio_forms,
    reciprocal_forms,
    spread_forms,
    squares_as_hypot,
)
from codegen.stabilize.radicals import modulo_roots
from codegen.stabilize.rewriting import split_constant
from codegen.stabilize.rules import apply_rules
from codegen.stabilize.tails import tail_forms
from codegen.timebound import SymPyTimeout, bounded, time_limit  # noqa: F401 - re-exported

SIMPLIFY_MAX_OPS = 150
VARIANT_SECONDS = 1.5  # each of cancel, factor, simplify, collect of one derivative (at most 0.4)
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


def _merged_opposites(node: sp.Expr) -> sp.Expr:
    """u*(-u)*F as -u**2*F (SymPy keeps (-x + y)*(x - y) apart)."""
    sums = [f for f in node.args if f.is_Add]
    for f in sums:
        if -f in sums:
            rest = list(node.args)
            rest.remove(f)
            rest.remove(-f)
            return sp.Mul(-(f**2), *rest)
    return node


def _distribute_term(term: sp.Expr) -> sp.Expr:
    """c*(k + v)*F as c*k*F + c*v*F for each sum with a constant term k; other sums (x - y)
    stay whole, multiplied out they would cancel. A sum of any terms times a monomial (a
    number and powers of symbols) is multiplied out too: (x**3/6 - x + sin(x))/x**5 as
    x**-2/6 - x**-4 + sin(x)/x**5, each term scaled alone, where the whole numerator
    overflows (x > 1e102 in float64) though the quotient is a normal number."""
    if not term.is_Mul:
        return term
    sums = [f for f in term.args if f.is_Add and split_constant(f)[0] != 0]
    every_sum = [f for f in term.args if f.is_Add]
    others = [f for f in term.args if not f.is_Add]
    if not sums and len(every_sum) == 1 and all(map(_monomial_factor, others)):
        sums = every_sum
    if not sums:
        return term
    rest = sp.Mul(*(f for f in term.args if f not in sums))
    out = [rest]
    for s in sums:
        out = [partial * piece for partial in out for piece in s.args]
    return sp.Add(*out)


def _monomial_factor(factor: sp.Expr) -> bool:
    """A number, a symbol, or a symbol's integer power."""
    base, exponent = factor.as_base_exp()
    return bool(factor.is_number or (base.is_Symbol and exponent.is_Integer))


def _distributed(expr: sp.Expr) -> sp.Expr:
    """Each product over a sum with a constant term multiplied out, one level deep, u*(-u)
    merged first: (1 - u**2)*exp(-u**2/2) as exp(-u**2/2) - u**2*exp(-u**2/2), whose terms
    `spread_forms` writes u*(u*exp(..)): 0 where u**2 overflows, where the product form is
    inf * 0."""
    merged = expr.replace(lambda n: n.is_Mul, _merged_opposites)
    return sp.Add(*(_distribute_term(t) for t in sp.Add.make_args(merged)))


def _reciprocal_sum(expr: sp.Expr) -> sp.Expr | None:
    """1/(1/x + 1/y) for x*y/(x + y): the reciprocal of a quotient whose reciprocal expands
    into a sum of quotients, none of which overflows where the product x*y does; else None."""
    numerator, denominator = sp.fraction(sp.together(expr))
    if numerator.is_number or not denominator.free_symbols:
        return None
    # each term cancelled: x**2/(nu*x + x) is x/(nu + 1) whether nu is a param or a number
    terms = [sp.cancel(t) for t in sp.Add.make_args(sp.expand(denominator / numerator))]
    if len(terms) < 2 or any(t.is_number for t in terms):
        return None
    return 1 / sp.Add(*terms)


def _algebraic_variants(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """expr, and SymPy's rewrites of it (and its reduction modulo its square roots,
    `radicals`), each given `VARIANT_SECONDS` (skipped past them). factor and collect are
    skipped where they would expand exps into polynomials of a
    degree past `MAX_EXP_POWER`."""
    polynomial_steps = _exp_degree(expr) <= MAX_EXP_POWER
    steps = [("cancel", sp.cancel), ("distribute", _distributed)]
    if polynomial_steps:
        steps.append(("factor", sp.factor))
    if sp.count_ops(expr) <= SIMPLIFY_MAX_OPS:
        steps.append(("simplify", sp.simplify))
    if polynomial_steps:
        steps.append(("collect exp", _collect_exp))
    steps.append(("modulo roots", lambda e: modulo_roots(e, sorted(e.free_symbols, key=str))))
    steps.append(("reciprocal sum", _reciprocal_sum))
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


def log_sigmoid_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """sigmoid(u) as exp(-softplus(-u)), then products absorbed into one exp: where sigmoid(u)
    alone is subnormal (flushed to 0) but times a large factor is a normal number (silu's f'
    near x = -90 in float32), so float32 needs no float64 for its tail. Rules first: 1 -
    sigmoid(u) as sigmoid(-u), no 1 - exp(...) left."""
    return _absorbed_through(expr, sigmoid, lambda u: sp.exp(-softplus(-u)), "log-sigmoid")


def erfcx_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """erfc(u) as exp(-u**2)*erfcx(u), then products absorbed into one exp: where erfc(u)
    alone is subnormal (flushed to 0) but times a factor is a normal number (gelu's value
    x*erfc(-x/sqrt(2))/2 near x = -13.1 in float32). erfcx overflows for u far below 0, so
    these forms serve a regime of large u. Rules first: 1 + erf(u) as erfc(-u)."""
    return _absorbed_through(expr, sp.erfc, lambda u: sp.exp(-(u**2)) * erfcx(u), "erfcx")


def _absorbed_through(expr: sp.Expr, func, as_exp, prefix: str) -> list[tuple[str, sp.Expr]]:
    """`expr` with rules applied and each func(u) written as `as_exp(u)`, a product with an
    exp; its exps merged, then `absorbed_forms` of that, labelled `prefix`+their labels."""
    ruled = apply_rules(expr)[0]
    if not ruled.has(func):
        return []
    written = ruled.replace(func, as_exp).replace(
        lambda n: n.is_Mul and sum(f.func is sp.exp for f in n.args) > 1, _one_exp
    )
    return [(f"{prefix}+{name}", form) for name, form in absorbed_forms(written)]


def _one_exp(node: sp.Mul) -> sp.Expr:
    """exp(a)*exp(b)*F as exp(a + b)*F (SymPy keeps the factors apart)."""
    exps = [f.args[0] for f in node.args if f.func is sp.exp]
    rest = [f for f in node.args if f.func is not sp.exp]
    return sp.Mul(sp.exp(sp.Add(*exps)), *rest)


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


def candidates(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """Every closed candidate form of `expr`, rules applied to each, without duplicates, in
    fixed order (series: `taylor.series_candidates`)."""
    raw: list[tuple[str, sp.Expr]] = []
    for label, variant in _algebraic_variants(expr):
        raw.append((label, variant))
        for name, form in sigmoid_forms(variant):
            raw.append((f"{label}+{name}", form))
            raw += [(f"{label}+{name}+{more}", f) for more, f in log_sigmoid_forms(form)]
            ruled = apply_rules(form)[0]  # x**2*sigmoid(u)*sigmoid(-u): x*(x*sigmoid(u))...
            raw += [(f"{label}+{name}+rules+{more}", f) for more, f in spread_forms(ruled)]
        raw += [(f"{label}+{name}", form) for name, form in difference_forms(variant, args)]
        raw += [(f"{label}+{name}", form) for name, form in log_sigmoid_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in erfcx_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in absorbed_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in reciprocal_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in conjugate_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in spread_forms(variant)]
        for name, form in ratio_forms(variant):  # (y/(x + y))**2/(x + y): y/(x + y) twice
            raw.append((f"{label}+{name}", form))
            raw += [(f"{label}+{name}+{more}", f) for more, f in spread_forms(form)]
        raw += [(f"{label}+{name}", form) for name, form in gamma_difference_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in log_ratio_forms(variant)]
        raw += [(f"{label}+{name}", form) for name, form in split_log_forms(variant)]
        for name, form in power_difference_forms(variant):
            raw.append((f"{label}+{name}", form))
            raw += [(f"{label}+{name}+{more}", f) for more, f in spread_forms(form, True)]
            raw += [(f"{label}+{name}+{more}", f) for more, f in reciprocal_forms(form)]
    raw += complement_forms(expr, args)
    raw += monomial_forms(expr, args)
    raw += growth_forms(expr, args)
    raw += tail_forms(expr, args)
    seen: set[str] = set()
    out: list[tuple[str, sp.Expr]] = []
    for label, form in raw:
        for name, version in _versions(label, form, args):
            key = sp.srepr(version)
            if key not in seen:
                seen.add(key)
                out.append((name, version))
    return out + line_forms(expr, args)


def _versions(label: str, form: sp.Expr, args) -> list[tuple[str, sp.Expr]]:
    """`form`, with rules applied, with hypot ratios, and each of these made safe from XLA's
    division rewrites where they apply."""
    ruled = [(label, form), *_rules_version(label, form), *_hypot_version(label, form)]
    return [v for name, f in ruled for v in ((name, f), *_xla_safe_version(name, f, args))]


def _hypot_version(label: str, form: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """`form` with rules applied, then its powers of hypot with bounded ratios; and with its
    sums of two squares as hypot**2, bare and with ratios."""
    rewritten, _ = apply_rules(form)
    out = [(f"{label}+rules+{name}", version) for name, version in hypot_forms(rewritten)]
    squares = squares_as_hypot(rewritten)
    if squares != rewritten:
        out.append((f"{label}+rules+hypot of squares", squares))
        out += [(f"{label}+hypot of squares+{n}", f) for n, f in hypot_forms(squares)]
    return out


def _xla_safe_version(label: str, form: sp.Expr, args) -> list[tuple[str, sp.Expr]]:
    """A form whose divisions XLA's simplifier reassociates (y/h/h**2 becomes y/(h*h**2),
    which overflows where each step stays in range), with its powers of denominators as
    products of reciprocals instead: (y/h)*(1/h)**2 is left alone."""
    try:
        if not rewritten_under_xla(lower([form], {a: a.name for a in args})):
            return []
    except Exception:  # noqa: BLE001 - SymPy raises many kinds (evalf of pieces' safe points)
        return []
    return [(f"{label}+{name}", version) for name, version in reciprocal_forms(form)]


def _rules_version(label: str, form: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """`form` with rules applied, innermost nodes first and (where that differs) outermost
    first; where they brought the first exp ((1 + x)**(a - 2) as
    exp((a - 2)*log1p(x))), also with its products absorbed into it: a*(a - 1) overflows
    beside an exp that underflows, and inf * 0 is NaN."""
    rewritten, used = apply_rules(form)
    if not used:
        return []
    named = f"{label}+rules({','.join(used)})"
    out = [(named, rewritten)]
    outer, outer_used = apply_rules(form, outermost=True)
    if outer != rewritten:  # log(1 - exp(-x)): log1p(-exp(-x)) beside log(-expm1(-x))
        out.append((f"{label}+outer rules({','.join(outer_used)})", outer))
    if rewritten.has(sp.exp) and not form.has(sp.exp):
        out += [(f"{named}+{name}", f) for name, f in absorbed_forms(rewritten)]
    if rewritten.atoms(sigmoid) - form.atoms(sigmoid):  # sech(x)**2 as 4*sigmoid(2x)*...
        out += [(f"{named}+{name}", f) for name, f in log_sigmoid_forms(rewritten)]
    return out
