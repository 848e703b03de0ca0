"""Rewrite rules: equivalent forms that TensorFlow computes without cancellation or overflow.

In: a SymPy expression. Out: the same function, rewritten by named rules applied to a
fixed point, innermost or outermost nodes first (`rewriting`). Each rule is data: a `Rule`
with a name, the identity it uses, and a function that rewrites one node or returns None
when the node is not its pattern. `STABLE_RULES` is the tuple `stabilize` applies; every
rule is tested three ways (the rewrite, a node it must leave
alone, and equality with the original) in tests/test_rules.py.
"""

from __future__ import annotations

import functools

import sympy as sp
from sympy.codegen.cfunctions import expm1, hypot, log1p

from codegen.front.functions import erfcx, sigmoid, softplus
from codegen.stabilize.rewriting import (
    Rule,
    TooManyRewrites,
    innermost_first,
    outermost_first,
    rewrite_budget,
)


@functools.lru_cache(maxsize=1 << 14)  # six rules ask it of each sum
def split_constant(expr: sp.Add) -> tuple[sp.Expr, sp.Expr]:
    constant, rest = expr.as_independent(*expr.free_symbols, as_Add=True)
    return constant, rest


def _constant_terms(node):
    """For a sum `k + c*F + others` with k != 0: yield (k, others, c, F) for each term c*F."""
    if not node.is_Add:
        return
    constant, rest = split_constant(node)
    if constant == 0:
        return
    for term in sp.Add.make_args(rest):
        coeff, factor = term.as_independent(*term.free_symbols, as_Add=False)
        yield constant, rest - term, coeff, factor


def _log1p(node):
    if node.func is sp.log and node.args[0].is_Add:
        constant, rest = split_constant(node.args[0])
        if constant == 1 and rest != 0:
            return log1p(rest)
    return None


def _pow_log1p(node):
    """(1 + u)**a -> exp(a*log1p(u)) for an exponent that is not a number: 1 + u rounds to 1
    for tiny u, and pow(1, a) is 1 whatever a is."""
    if node.is_Pow and node.base.is_Add and not node.exp.is_number:
        constant, rest = split_constant(node.base)
        if constant == 1 and rest != 0:
            return sp.exp(node.exp * log1p(rest))
    return None


def _expm1(node):
    for constant, others, coeff, factor in _constant_terms(node):
        if factor.func is sp.exp and coeff == -constant:
            return coeff * expm1(factor.args[0]) + others
    return None


def _pow_expm1(node):
    """u**a - 1 -> expm1(a*log(u)) for an exponent that is not a number: u**a rounds to 1
    when a*log(u) is tiny, and the difference keeps none of its digits."""
    for constant, others, coeff, factor in _constant_terms(node):
        if factor.is_Pow and not factor.exp.is_number and coeff == -constant:
            return coeff * expm1(factor.exp * sp.log(factor.base)) + others
    return None


ERF_SATURATES = 6  # erf(6) rounds to 1 in float32 and float64


def _erf_saturate(node):
    """erf(u) -> erf(u clamped to [-6, 6]): the same value in both dtypes, and TensorFlow's
    float64 erf squares u, so it is NaN once |u| passes 1e154."""
    if node.func is sp.erf and not isinstance(node.args[0], (sp.Max, sp.Min)):
        u = node.args[0]
        if not u.is_number:
            return sp.erf(sp.Max(-ERF_SATURATES, sp.Min(ERF_SATURATES, u)))
    return None


def _abs_ratio(node):
    """u**a * |u|**b -> sign(u)**a * |u|**(a + b) for integers a, b: y*sqrt(v)/|y| is
    sign(y)*sqrt(v), where sqrt(v)/|y| alone would overflow."""
    if not node.is_Mul:
        return None
    factors = [f.as_base_exp() for f in node.args]
    if not any(base.func is sp.Abs for base, _ in factors):
        return None
    for base, a in factors:
        if not (a.is_Integer and not base.is_number and base.func is not sp.Abs):
            continue
        absolute = sp.Abs(base)  # SymPy drops Abs of what it knows is not negative
        for other, b in factors:
            if other.func is sp.Abs and other == absolute and b.is_Integer:
                rest = node / (base**a * other**b)
                return rest * sp.sign(base) ** (a % 2) * other ** (a + b)
    return None


def _softplus(node):
    if node.func is log1p and node.args[0].func is sp.exp:
        return softplus(node.args[0].args[0])
    return None


def _sigmoid_of_reciprocal(node):
    """(1 + exp(v))**-n -> sigmoid(-v)**n."""
    if node.is_Pow and node.exp.is_Integer and node.exp < 0 and node.base.is_Add:
        constant, rest = split_constant(node.base)
        if constant == 1 and rest.func is sp.exp:
            return sigmoid(-rest.args[0]) ** (-node.exp)
    return None


def _exp_times_sigmoid(node):
    """exp(v) * sigmoid(-v)**n -> sigmoid(v) * sigmoid(-v)**(n-1)."""
    if not node.is_Mul:
        return None
    factors = node.args
    for f in factors:
        if f.func is sp.exp:
            v = f.args[0]
            for g in factors:
                base, n = g.as_base_exp()
                if base == sigmoid(-v) and n.is_Integer and n > 0:
                    rest = node / (f * g)
                    return rest * sigmoid(v) * sigmoid(-v) ** (n - 1)
    return None


def _sigmoid_complement(node):
    """k + a*sigmoid(u): a == -k -> k*sigmoid(-u); a == -2k -> -k*tanh(u/2)."""
    for constant, others, coeff, factor in _constant_terms(node):
        if factor.func is sigmoid:
            u = factor.args[0]
            if coeff == -constant:
                return constant * sigmoid(-u) + others
            if coeff == -2 * constant:
                return -constant * sp.tanh(u / 2) + others
    return None


def _atan_complement(node):
    """pi/2 - atan(u) -> atan2(1, u); pi/2 + atan(u) -> atan2(1, -u) (any multiple c of
    both): exact for every u, and the angle of (u, 1) is 1/u to full accuracy at large u,
    where pi/2 - atan(u) is 0."""
    for constant, others, coeff, factor in _constant_terms(node):
        if factor.func is sp.atan:
            u = factor.args[0]
            if constant == -coeff * sp.pi / 2:
                return -coeff * sp.atan2(1, u) + others
            if constant == coeff * sp.pi / 2:
                return coeff * sp.atan2(1, -u) + others
    return None


def _softplus_reflection(node):
    """c*softplus(u) + r -> c*softplus(-u) + (c*u + r) where c*u cancels in r: softplus(x) - x
    is softplus(-x), which does not round x + tiny back to x first. Where r holds c*u times
    a polynomial w instead, softplus(u) = softplus(-|u|) + max(u, 0) leaves u*(1 - w) where
    u > 0 and -u*w where u < 0: softplus(x) - x*y, the cross-entropy of logits x and labels
    y, is softplus(-|x|) + max(x, 0)*(1 - y) - min(x, 0)*y, with nothing to cancel where x
    is large and y is 1 (TensorFlow's sigmoid_cross_entropy_with_logits keeps x - x*y)."""
    if not node.is_Add:
        return None
    for term in node.args:
        coeff, factor = term.as_coeff_Mul()
        if factor.func is softplus:
            u = factor.args[0]
            linear = sp.expand(node - term + coeff * u)
            if sp.count_ops(linear) < sp.count_ops(node - term):
                return coeff * softplus(-u) + linear
            scaled = _scaled_term(node - term, coeff * u)
            if scaled is not None:
                rest, w = scaled
                kept = sp.Max(u, 0) * (1 - w) - sp.Min(u, 0) * w
                return coeff * (softplus(-sp.Abs(u)) + kept) + rest
    return None


def _scaled_term(r: sp.Expr, cu: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
    """(r - t, w) for the first term t of r that is -cu*w with w a polynomial in the args
    without a constant term (one that has it, 1 - y, is what this rewrite leaves); else
    None."""
    for t in sp.Add.make_args(r):
        w = sp.cancel(-t / cu)
        polynomial = sp.denom(w).is_number and w.is_polynomial(*w.free_symbols)
        if polynomial and not w.is_number and w.as_coeff_Add()[0] == 0:
            return r - t, w
    return None


def _log_sigmoid(node):
    if node.func is sp.log and node.args[0].func is sigmoid:
        return -softplus(-node.args[0].args[0])
    return None


def _logaddexp(node):
    """log(exp(a) + exp(b)) -> max(a, b) + softplus(-|a - b|)."""
    if node.func is sp.log and node.args[0].is_Add and len(node.args[0].args) == 2:
        first, second = node.args[0].args
        if first.func is sp.exp and second.func is sp.exp:
            a, b = first.args[0], second.args[0]
            return sp.Max(a, b) + softplus(-sp.Abs(a - b))
    return None


def _log_exp_factor(node):
    """log(exp(a) + r) -> a + log(1 + r*exp(-a)), for a sum with one bare exp: exp(a)
    overflows long before the log does (log(exp(x) - 1) is x + log1p(-exp(-x)))."""
    if node.func is not sp.log or not node.args[0].is_Add:
        return None
    exps = [t for t in node.args[0].args if t.func is sp.exp and not t.args[0].is_number]
    if len(exps) != 1:
        return None
    a = exps[0].args[0]
    rest = node.args[0] - exps[0]
    return a + sp.log(1 + sp.powsimp(rest * sp.exp(-a)))  # exp(y)*exp(-x) as exp(y - x)


def _paired_terms(node, matches):
    """For a sum holding c*f and -c*g with `matches(c, f, g)`, the first such pair:
    (c, f, g, the other terms); else None."""
    if not node.is_Add:
        return None
    terms = [t.as_coeff_Mul() for t in node.args]
    for i, (c, f) in enumerate(terms):
        for j, (d, g) in enumerate(terms):
            if j != i and d == -c and matches(c, f, g):
                others = sp.Add(*(t for k, t in enumerate(node.args) if k not in (i, j)))
                return c, f, g, others
    return None


def _opposite_pair(node, func):
    """For a sum holding c*func(a) and -c*func(b): (c, a, b, the other terms); else None."""
    found = _paired_terms(node, lambda c, f, g: f.func is func and g.func is func and c > 0)
    if found is None:
        return None
    c, f, g, others = found
    return c, f.args[0], g.args[0], others


def _log_ratio(node):
    """c*log(a) - c*log(b) -> c*log1p((a - b)/b), where a - b is shorter than a and b: the
    logs round to nearly equal numbers whose difference keeps few digits (softplus(x) -
    softplus(y) at x, y = 30, 30.001), while a - b, with its common terms gone, does not."""
    found = _opposite_pair(node, sp.log)
    if found is None:
        return None
    c, a, b, others = found
    difference = a - b
    if sp.count_ops(difference) >= sp.count_ops(a) + sp.count_ops(b):
        return None
    return c * log1p(difference / b) + others


def _exp_difference(node):
    """c*exp(a) - c*exp(b) -> -c*sign(a - b)*exp(max(a, b))*expm1(-|a - b|): the exps
    cancel where a is near b, and overflow where the difference is representable."""
    found = _opposite_pair(node, sp.exp)
    if found is None:
        return None
    c, a, b, others = found
    d = a - b
    return -c * sp.sign(d) * sp.exp(sp.Max(a, b)) * expm1(-sp.Abs(d)) + others


# c*f(a) - c*f(b) as a product whose factors vanish where the terms cancel (half-sums as
# a/2 + b/2, so neither overflows first); the even cosh and cos cancel near a = -b too.
_SUM_TO_PRODUCT = {
    sp.cosh: lambda s, d: 2 * sp.sinh(s) * sp.sinh(d),
    sp.sinh: lambda s, d: 2 * sp.cosh(s) * sp.sinh(d),
    sp.cos: lambda s, d: -2 * sp.sin(s) * sp.sin(d),
    sp.sin: lambda s, d: 2 * sp.cos(s) * sp.sin(d),
}


def _sum_to_product(node):
    """c*cosh(a) - c*cosh(b) -> 2c*sinh(a/2 + b/2)*sinh(a/2 - b/2); sinh, cos, sin alike."""
    for func, product in _SUM_TO_PRODUCT.items():
        found = _opposite_pair(node, func)
        if found is not None:
            c, a, b, others = found
            return c * product(a / 2 + b / 2, a / 2 - b / 2) + others
    return None


def _extreme_minus_arg(node):
    """c*max(a, b, ...) - c*a + r -> c*max(0, b - a, ...) + r, and min alike, for a sum with
    other terms r: where a is the extreme, the pair cancels exactly, but only once the two are
    added first; r added to either of them first is rounded away (log(exp(x) + exp(y)) - x as
    max(x, y) + softplus(-|x - y|) - x was 0 where it is softplus(y - x))."""
    if not node.is_Add or len(node.args) < 3:
        return None
    found = _paired_terms(node, lambda c, f, g: f.func in (sp.Max, sp.Min) and g in f.args)
    if found is None:
        return None
    c, extreme, arg, others = found
    return c * extreme.func(*(t - arg for t in extreme.args)) + others


def _exp_terms(node) -> tuple[list[tuple[sp.Expr, sp.Expr]], list[sp.Expr]] | None:
    """For a sum: ((coefficient, exponent) of each term that is a product with exactly one
    exp, the other terms); None for other nodes."""
    if not node.is_Add:
        return None
    pairs, others = [], []
    for term in node.args:
        exps = [f for f in sp.Mul.make_args(term) if f.func is sp.exp]
        if len(exps) == 1:
            pairs.append((term / exps[0], exps[0].args[0]))
        else:
            others.append(term)
    return pairs, others


def _exp_sum_factor(node):
    """p*exp(a) + q*exp(b) -> exp(max(a, b))*(p*exp(a - max(a, b)) + q*exp(b - max(a, b)))
    where p or q varies (c*exp(a) - c*exp(b) is `_exp_difference`'s) and
    exponents of different args: where both exps overflow, the larger one's coefficient gives
    the sign and size (x*exp(x) - y*exp(y) is -inf, not inf - inf or the x term alone, at
    x = 180, y = 1e34 in float32). Which exponent is larger then depends on several args, and
    no regimes on one arg can tell; where both are of the same args, regimes can."""
    found = _exp_terms(node)
    if found is None or len(found[0]) != 2:
        return None
    (p, a), (q, b) = found[0]
    varying = not (p.is_number and q.is_number)
    if not varying or a.free_symbols == b.free_symbols or node.has(sp.Max):
        return None
    top = sp.Max(a, b)
    inner = p * sp.exp(a - top) + q * sp.exp(b - top)
    return sp.exp(top) * inner + sp.Add(*found[1])


def _log_exp_product(node):
    """log(exp(a)*r) -> a + log(r): exp(a) overflows or underflows long before the log does
    (log(x*exp(x)) at x = 800; a difference of exps, made a product by `_exp_difference`)."""
    if node.func is not sp.log or not node.args[0].is_Mul:
        return None
    exps = [f for f in node.args[0].args if f.func is sp.exp]
    if len(exps) != 1:
        return None
    return exps[0].args[0] + sp.log(node.args[0] / exps[0])


def _erfc(node):
    """1 + erf(u) -> erfc(-u); 1 - erf(u) -> erfc(u)."""
    for constant, others, coeff, factor in _constant_terms(node):
        if factor.func is sp.erf and abs(coeff) == constant:
            sign = -1 if coeff > 0 else 1
            # evaluate=False: SymPy would turn erfc(-u) back into 2 - erfc(u), the cancellation
            return constant * sp.erfc(sign * factor.args[0], evaluate=False) + others
    return None


def _log_erfc(node):
    """log(c * erfc(u)) -> log(c * erfcx(u)) - u**2: erfc underflows for large u, erfcx not."""
    if node.func is not sp.log:
        return None
    factors = sp.Mul.make_args(node.args[0])
    for i, factor in enumerate(factors):
        if factor.func is sp.erfc:
            u = factor.args[0]
            rest = sp.Mul(*factors[:i], *factors[i + 1 :])
            return sp.log(rest * erfcx(u)) - u**2
    return None


def _erfc_exp(node):
    """exp(a) * erfc(u)**k -> exp(a - k u**2) * erfcx(u)**k: no 0*inf or 0/0 for large u
    (Mills' ratio exp(x**2/2)*erfc(x/sqrt(2)) becomes erfcx(x/sqrt(2)))."""
    if not node.is_Mul:
        return None
    exps = [f for f in node.args if f.func is sp.exp]
    for factor in node.args:
        base, k = factor.as_base_exp()
        if exps and base.func is sp.erfc and k.is_Integer and k != 0:
            u = base.args[0]
            rest = [f for f in node.args if f is not factor and f.func is not sp.exp]
            power = sp.Add(*(e.args[0] for e in exps)) - k * u**2
            return sp.Mul(*rest, sp.exp(sp.expand(power)), erfcx(u) ** k)
    return None


def _one_minus_cos(node):
    for constant, others, coeff, factor in _constant_terms(node):
        if factor.func is sp.cos and coeff == -constant:
            return 2 * constant * sp.sin(factor.args[0] / 2) ** 2 + others
    return None


def _sech_squared(node):
    """1 - tanh(u)**2 -> 4*sigmoid(2u)*sigmoid(-2u), which never overflows."""
    for constant, others, coeff, factor in _constant_terms(node):
        base, exp = factor.as_base_exp()
        if base.func is sp.tanh and exp == 2 and coeff == -constant:
            u = base.args[0]
            return 4 * constant * sigmoid(2 * u) * sigmoid(-2 * u) + others
    return None


def _hypot(node):
    """(a**2 + b**2)**(k/2) -> hypot(a, b)**k for odd k."""
    if node.is_Pow and node.base.is_Add and len(node.base.args) == 2:
        twice = 2 * node.exp
        squares = [term.as_base_exp() for term in node.base.args]
        if twice.is_Integer and twice % 2 == 1 and all(e == 2 for _, e in squares):
            return hypot(squares[0][0], squares[1][0]) ** twice
    return None


def _squares(term: sp.Expr) -> sp.Expr | None:
    """a where term is a**2, or sqrt(c) where term is a positive number c; else None."""
    if term.is_number:
        return sp.sqrt(term) if term.is_positive else None
    base, exp = term.as_base_exp()
    return base if exp == 2 else None


def _hypot_const(node):
    """(a**2 + c)**(k/2) -> hypot(a, sqrt(c))**k for odd k, c a number > 0 or a term SymPy
    knows is nonnegative (an arg whose domain is): no overflow of a**2."""
    if node.is_Pow and node.base.is_Add and len(node.base.args) == 2:
        twice = 2 * node.exp
        roots = [_squares(term) for term in node.base.args]
        numbers = [term.is_number for term in node.base.args]
        if None in roots and not any(numbers):
            i = roots.index(None)
            term = node.base.args[i]
            symbols = term.free_symbols
            known = symbols and all(v.is_nonnegative for v in symbols)
            if known and term.is_nonnegative and term.is_Mul | term.is_Symbol and roots[1 - i]:
                roots[i], numbers[i] = sp.sqrt(term), True
        if twice.is_Integer and twice % 2 == 1 and None not in roots and any(numbers):
            return hypot(*roots) ** twice
    return None


def _hypot_many(node):
    """(a**2 + b**2 + c)**(k/2) -> hypot(hypot(a, b), sqrt(c))**k for odd k, three or more
    terms, each a square or a number c > 0: no overflow of the squares."""
    if node.is_Pow and node.base.is_Add and len(node.base.args) > 2:
        twice = 2 * node.exp
        roots = [_squares(term) for term in node.base.args]
        if twice.is_Integer and twice % 2 == 1 and None not in roots:
            return functools.reduce(hypot, roots) ** twice
    return None


def _inverse_hyperbolic(node):
    """log(a + sqrt(a**2 + c)) -> asinh(a/sqrt(c)) + log(c)/2 (c > 0), and with a**2 - c,
    acosh(a/sqrt(c)) + log(c)/2: the sum cancels for a < 0 and a**2 overflows."""
    if node.func is not sp.log or not node.args[0].is_Add:
        return None
    for term in node.args[0].args:
        base, exp = term.as_base_exp()
        if term.func is hypot:  # sqrt(a**2 + c) already rewritten by hypot_const
            base, exp = term.args[0] ** 2 + term.args[1] ** 2, sp.S.Half
        if exp != sp.S.Half or base.is_number:
            continue
        a = node.args[0] - term
        c = sp.expand(base - a**2)
        if c.is_number and c != 0 and not a.is_number:
            scale = sp.sqrt(abs(c))
            inverse = sp.asinh if c > 0 else sp.acosh
            return inverse(a / scale) + sp.log(abs(c)) / 2
    return None


def _log_cosh(node):
    """log(cosh(u)) -> |u| + softplus(-2|u|) - log(2): cosh(u) overflows long before it."""
    if node.func is sp.log and node.args[0].func is sp.cosh:
        u = sp.Abs(node.args[0].args[0])
        return u + softplus(-2 * u) - sp.log(2)
    return None


def _acosh_one_plus(node):
    """acosh(1 + u) -> log1p(u + sqrt(u*(u + 2))): 1 + u rounds where u is small, and the
    acosh of the rounded sum has lost what u held (sqrt(2u) for the value)."""
    if node.func is sp.acosh and node.args[0].is_Add:
        constant, rest = split_constant(node.args[0])
        if constant == 1 and rest != 0:
            return log1p(rest + sp.sqrt(rest * (rest + 2)))
    return None


def _arc_near_one(node):
    """acos(1 - u) -> 2*asin(sqrt(u/2)), and acos(u - 1), asin(1 - u), asin(u - 1) through
    it: 1 - u rounds where u is small, and acos of the rounded sum has lost what u held
    (sqrt(2u) for the value), as acosh(1 + u) has."""
    if node.func not in (sp.acos, sp.asin) or not node.args[0].is_Add:
        return None
    constant, rest = split_constant(node.args[0])
    if constant not in (1, -1) or rest == 0:
        return None
    twice = 2 * sp.asin(sp.sqrt(-constant * rest / 2))  # acos(1 - u) for u = -constant*rest
    if node.func is sp.acos:
        return twice if constant == 1 else sp.pi - twice
    return sp.pi / 2 - twice if constant == 1 else twice - sp.pi / 2


# The rules that write 1 - g as a form without its cancellation, for `_log_complement`
COMPLEMENTS = ("erfc", "one_minus_cos", "sigmoid_complement", "sech_squared")


def _log_complement(node):
    """log(g) -> log1p(-c) where a complement rule writes c = 1 - g (1 - erf(u) =
    erfc(u), 1 - cos(u) = 2 sin(u/2)**2): where g is near 1, log(g) keeps only what g's
    rounding left of 1 - g, and log(erf(u)) is 0 once erf(u) rounds to 1."""
    if node.func is not sp.log or node.args[0].is_Add:
        return None
    complement = 1 - node.args[0]
    for rule in STABLE_RULES:
        if rule.name in COMPLEMENTS and (written := rule.rewrite(complement)) is not None:
            return log1p(-written)
    return None


STABLE_RULES: tuple[Rule, ...] = (
    Rule("log1p", "log(1 + u) = log1p(u)", _log1p),
    Rule("expm1", "exp(u) - 1 = expm1(u)", _expm1),
    Rule("pow_log1p", "(1 + u)**a = exp(a*log1p(u))", _pow_log1p),
    Rule("pow_expm1", "u**a - 1 = expm1(a*log(u))", _pow_expm1),
    Rule("softplus", "log1p(exp(u)) = softplus(u)", _softplus),
    Rule("abs_ratio", "u**a * |u|**b = sign(u)**a * |u|**(a + b)", _abs_ratio),
    Rule("sigmoid", "1/(1 + exp(v))**n = sigmoid(-v)**n", _sigmoid_of_reciprocal),
    Rule("exp_sigmoid", "exp(v)*sigmoid(-v) = sigmoid(v)", _exp_times_sigmoid),
    Rule(
        "sigmoid_complement",
        "1 - sigmoid(u) = sigmoid(-u); 1 - 2 sigmoid(u) = -tanh(u/2)",
        _sigmoid_complement,
    ),
    Rule(
        "atan_complement",
        "pi/2 - atan(u) = atan2(1, u); pi/2 + atan(u) = atan2(1, -u)",
        _atan_complement,
    ),
    Rule("log_sigmoid", "log(sigmoid(u)) = -softplus(-u)", _log_sigmoid),
    Rule("softplus_reflection", "softplus(u) - u = softplus(-u)", _softplus_reflection),
    Rule("logaddexp", "log(exp(a) + exp(b)) = max(a, b) + softplus(-|a - b|)", _logaddexp),
    Rule("log_ratio", "c log(a) - c log(b) = c log1p((a - b)/b)", _log_ratio),
    Rule("log_exp_product", "log(exp(a) r) = a + log(r)", _log_exp_product),
    Rule(
        "exp_difference",
        "c exp(a) - c exp(b) = -c sign(a - b) exp(max(a, b)) expm1(-|a - b|)",
        _exp_difference,
    ),
    Rule(
        "exp_sum_factor",
        "p exp(a) + q exp(b) = exp(max(a, b)) (p exp(a - max(a, b)) + q exp(b - max(a, b)))",
        _exp_sum_factor,
    ),
    Rule("log_exp_factor", "log(exp(a) + r) = a + log(1 + r exp(-a))", _log_exp_factor),
    Rule(
        "sum_to_product",
        "cosh(a) - cosh(b) = 2 sinh((a + b)/2) sinh((a - b)/2); sinh, cos, sin alike",
        _sum_to_product,
    ),
    Rule("extreme_minus_arg", "max(a, b) - a + r = max(0, b - a) + r", _extreme_minus_arg),
    Rule("erfc", "1 + erf(u) = erfc(-u)", _erfc),
    Rule("log_erfc", "log(c erfc(u)) = log(c erfcx(u)) - u**2", _log_erfc),
    Rule("erfc_exp", "exp(a) erfc(u)**k = exp(a - k u**2) erfcx(u)**k", _erfc_exp),
    Rule("one_minus_cos", "1 - cos(u) = 2 sin(u/2)**2", _one_minus_cos),
    Rule("hypot", "sqrt(a**2 + b**2) = hypot(a, b), computed with scaling", _hypot),
    Rule("log_cosh", "log(cosh(u)) = |u| + softplus(-2|u|) - log(2)", _log_cosh),
    Rule(
        "hypot_const",
        "sqrt(a**2 + c) = hypot(a, sqrt(c)) for a number c > 0, computed with scaling",
        _hypot_const,
    ),
    Rule("hypot_many", "sqrt(a**2 + b**2 + c) = hypot(hypot(a, b), sqrt(c))", _hypot_many),
    Rule(
        "inverse_hyperbolic",
        "log(a + sqrt(a**2 + c)) = asinh(a/sqrt(c)) + log(c)/2; with -c, acosh",
        _inverse_hyperbolic,
    ),
    Rule("sech_squared", "1 - tanh(u)**2 = 4 sigmoid(2u) sigmoid(-2u)", _sech_squared),
    Rule("acosh_one_plus", "acosh(1 + u) = log1p(u + sqrt(u (u + 2)))", _acosh_one_plus),
    Rule("arc_near_one", "acos(1 - u) = 2 asin(sqrt(u/2)); acos(u - 1), asin alike", _arc_near_one),
    Rule("log_complement", "log(g) = log1p(-(1 - g)) where a rule rewrites 1 - g", _log_complement),
)

# Applied once the rules above are done: their patterns must still see the bare function
# (1 + erf(u) is erfc(-u); a clamped u there would be wrong).
FINAL_RULES: tuple[Rule, ...] = (
    Rule("erf_saturate", "erf(u) = erf(min(max(u, -6), 6))", _erf_saturate),
)


def apply_rules(
    expr: sp.Expr,
    rules: tuple[Rule, ...] = STABLE_RULES,
    final: tuple[Rule, ...] = FINAL_RULES,
    outermost: bool = False,
) -> tuple[sp.Expr, tuple]:
    """`expr` rewritten by `rules` to a fixed point, and the sorted names of the rules used;
    innermost nodes first, or (`outermost`) outermost first (`rewriting`).

    Where SymPy recurses without end building a rewritten node (Abs of some products of
    exponentials), or the rules make more than `MAX_REWRITES` rewrites, `expr` comes back
    unchanged: that candidate is not offered. What the rules gave is kept for the build
    (`forget_rules`): each form's versions ask for it twice, and the forms of one partial
    recur in those of the next.
    """
    return _applied(expr, rules, final, outermost)


@functools.lru_cache(maxsize=1 << 12)
def _applied(expr: sp.Expr, rules, final, outermost: bool) -> tuple[sp.Expr, tuple]:
    try:
        with rewrite_budget():
            out, used = (outermost_first if outermost else innermost_first)(expr, rules)
            out, last = innermost_first(out, final)
    except (RecursionError, TooManyRewrites):
        return expr, ()
    return out, tuple(sorted({*used, *last}))


def forget_rules() -> None:
    """Forget what the rules gave (`selection.stabilize` starts each build without it)."""
    _applied.cache_clear()
