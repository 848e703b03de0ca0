"""Rewrite rules of erf, the trigonometric and hyperbolic functions, and roots (`rules`
applies them, in its order).

In: one SymPy node. Out: each rule's rewrite of it, or None where the node is not its
pattern; `SPECIAL_RULES`, the rules as data (name, identity, rewrite), and `ERF_SATURATE`,
the rule applied last. 1 - erf(u) as erfc(u), differences of cosh, sinh, cos and sin as
products, sums of squares under a root as hypot, inverse hyperbolic and trigonometric
functions near the points where their argument rounds.
"""

from __future__ import annotations

import functools

import sympy as sp
from sympy.codegen.cfunctions import hypot, log1p

from codegen.front.functions import erfcx, sigmoid, softplus
from codegen.stabilize.rewriting import (
    Rule,
    constant_terms,
    log_of,
    log_one_minus_exp,
    opposite_pair,
    split_constant,
)

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


def _atan_complement(node):
    """pi/2 - atan(u) -> atan2(1, u); pi/2 + atan(u) -> atan2(1, -u) (any multiple c of
    both): exact for every u, and the angle of (u, 1) is 1/u to full accuracy at large u,
    where pi/2 - atan(u) is 0."""
    for constant, others, coeff, factor in constant_terms(node):
        if factor.func is sp.atan:
            u = factor.args[0]
            if constant == -coeff * sp.pi / 2:
                return -coeff * sp.atan2(1, u) + others
            if constant == coeff * sp.pi / 2:
                return coeff * sp.atan2(1, -u) + others
    return None


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
        found = opposite_pair(node, func)
        if found is not None:
            c, a, b, others = found
            return c * product(a / 2 + b / 2, a / 2 - b / 2) + others
    return None


def _erfc(node):
    """1 + erf(u) -> erfc(-u); 1 - erf(u) -> erfc(u)."""
    for constant, others, coeff, factor in constant_terms(node):
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
    for constant, others, coeff, factor in constant_terms(node):
        if factor.func is sp.cos and coeff == -constant:
            return 2 * constant * sp.sin(factor.args[0] / 2) ** 2 + others
    return None


def _cosh_minus_one(node):
    """c*cosh(u) - c -> 2c*sinh(u/2)**2: cosh(u) rounds to 1 where u is small."""
    for constant, others, coeff, factor in constant_terms(node):
        if factor.func is sp.cosh and coeff == -constant:
            return -2 * constant * sp.sinh(factor.args[0] / 2) ** 2 + others
    return None


def _sech_squared(node):
    """1 - tanh(u)**2 -> 4*sigmoid(2u)*sigmoid(-2u), which never overflows."""
    for constant, others, coeff, factor in constant_terms(node):
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


def _log_sinh(node):
    """log|sinh(u)| -> |u| + log(-expm1(-2|u|)) - log(2), log(sinh(u)) alike where u > 0:
    sinh(u) overflows long before its log does."""
    found = log_of(node, sp.sinh)
    if found is None:
        return None
    u = sp.Abs(found[0]) if found[1] else found[0]
    return u + log_one_minus_exp(2 * u) - sp.log(2)


def _log_tanh(node):
    """log|tanh(u)| -> log|sinh(u)| - log(cosh(u)), log(tanh(u)) alike (real only where u >
    0, and the same there), for `log_sinh` and `log_cosh` to finish with |u| - |u|, which
    SymPy cancels: tanh(u) rounds to 1 past u = 19 (9 in float32) while its log is
    -2*exp(-2u), a normal number up to u = 354."""
    found = log_of(node, sp.tanh)
    if found is None:
        return None
    return sp.log(sp.Abs(sp.sinh(found[0]))) - sp.log(sp.cosh(found[0]))


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


SPECIAL_RULES: tuple[Rule, ...] = (
    Rule("abs_ratio", "u**a * |u|**b = sign(u)**a * |u|**(a + b)", _abs_ratio),
    Rule(
        "atan_complement",
        "pi/2 - atan(u) = atan2(1, u); pi/2 + atan(u) = atan2(1, -u)",
        _atan_complement,
    ),
    Rule(
        "sum_to_product",
        "cosh(a) - cosh(b) = 2 sinh((a + b)/2) sinh((a - b)/2); sinh, cos, sin alike",
        _sum_to_product,
    ),
    Rule("erfc", "1 + erf(u) = erfc(-u)", _erfc),
    Rule("log_erfc", "log(c erfc(u)) = log(c erfcx(u)) - u**2", _log_erfc),
    Rule("erfc_exp", "exp(a) erfc(u)**k = exp(a - k u**2) erfcx(u)**k", _erfc_exp),
    Rule("one_minus_cos", "1 - cos(u) = 2 sin(u/2)**2", _one_minus_cos),
    Rule("hypot", "sqrt(a**2 + b**2) = hypot(a, b), computed with scaling", _hypot),
    Rule("log_cosh", "log(cosh(u)) = |u| + softplus(-2|u|) - log(2)", _log_cosh),
    Rule("cosh_minus_one", "cosh(u) - 1 = 2 sinh(u/2)**2", _cosh_minus_one),
    Rule("log_sinh", "log|sinh(u)| = |u| + log(-expm1(-2|u|)) - log(2)", _log_sinh),
    Rule("log_tanh", "log|tanh(u)| = log|sinh(u)| - log(cosh(u))", _log_tanh),
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
)

# Applied once the other rules are done: their patterns must still see the bare function
# (1 + erf(u) is erfc(-u); a clamped u there would be wrong).
ERF_SATURATE = Rule("erf_saturate", "erf(u) = erf(min(max(u, -6), 6))", _erf_saturate)
