"""Rewrite rules of exp, log, softplus and sigmoid (`rules` applies them, in its order).

In: one SymPy node. Out: each rule's rewrite of it, or None where the node is not its
pattern; `EXP_LOG_RULES`, the rules as data (name, identity, rewrite). log(1 + u) as
log1p(u), exp(u) - 1 as expm1(u), sums of logs and exps that cancel, logistic functions
through sigmoid and softplus.
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p
from sympy.functions.elementary.miscellaneous import MinMaxBase

from codegen.front.functions import sigmoid, softplus
from codegen.stabilize.rewriting import (
    Rule,
    constant_terms,
    log_of,
    log_one_minus_exp,
    opposite_pair,
    paired_terms,
    split_constant,
)


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
    for constant, others, coeff, factor in constant_terms(node):
        if factor.func is sp.exp and coeff == -constant:
            return coeff * expm1(factor.args[0]) + others
    return None


def _pow_expm1(node):
    """u**a - 1 -> expm1(a*log(u)) for an exponent that is not a number: u**a rounds to 1
    when a*log(u) is tiny, and the difference keeps none of its digits."""
    for constant, others, coeff, factor in constant_terms(node):
        if factor.is_Pow and not factor.exp.is_number and coeff == -constant:
            return coeff * expm1(factor.exp * sp.log(factor.base)) + others
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
    """exp(k*v) * sigmoid(-v)**n -> sigmoid(v)**k * sigmoid(-v)**(n - k), for integers
    1 <= k <= n (the second derivative of sigmoid(-v) brings exp(2v)*sigmoid(-v)**3). The
    other factors are kept as they are: node/(exp(v)*...) would leave exp(-v)*exp(v), which
    SymPy does not cancel, and the rule would fire on it again (exp(-2v)*exp(v)*sigmoid(v)**2
    overflows where sigmoid(v)*sigmoid(-v) is a float)."""
    if not node.is_Mul:
        return None
    factors = node.args
    for i, f in enumerate(factors):
        for j, g in enumerate(factors):
            base, n = g.as_base_exp()
            if f.func is not sp.exp or base.func is not sigmoid or not (n.is_Integer and n > 0):
                continue
            v = -base.args[0]
            k = next((k for k in range(1, int(n) + 1) if sp.expand(f.args[0] - k * v) == 0), 0)
            if k:
                rest = sp.Mul(*(h for m, h in enumerate(factors) if m not in (i, j)))
                return rest * sigmoid(v) ** k * sigmoid(-v) ** (n - k)
    return None


def _sigmoid_complement(node):
    """k + a*sigmoid(u): a == -k -> k*sigmoid(-u); a == -2k -> -k*tanh(u/2)."""
    for constant, others, coeff, factor in constant_terms(node):
        if factor.func is sigmoid:
            u = factor.args[0]
            if coeff == -constant:
                return constant * sigmoid(-u) + others
            if coeff == -2 * constant:
                return -constant * sp.tanh(u / 2) + others
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
    """(r - t, w) for the first term t of r that is -cu*w with w a polynomial in the args and
    in sigmoids (labels, probabilities: softplus(x) - x*sigmoid(x) is the Bernoulli entropy
    of logit x) without a constant term (one that has it, 1 - y, is what this rewrite
    leaves); else None."""
    allowed = _applied_functions(cu)
    for t in sp.Add.make_args(r):
        labels = {f for f in _applied_functions(t) - allowed if f.func is sigmoid}
        if not _applied_functions(t) <= allowed | labels:  # w would not be a polynomial
            continue
        w = sp.cancel(-t / cu)
        as_symbols = w.xreplace({f: sp.Dummy() for f in labels})
        polynomial = sp.denom(as_symbols).is_number and as_symbols.is_polynomial()
        if polynomial and not w.is_number and w.as_coeff_Add()[0] == 0:
            return r - t, w
    return None


def _applied_functions(expr: sp.Expr) -> set[sp.Expr]:
    """The function applications in `expr` (exp(x), softplus(u), Max(a, b), |u|)."""
    return {n for n in sp.preorder_traversal(expr) if isinstance(n, (sp.Function, MinMaxBase))}


def _log_sigmoid(node):
    if node.func is sp.log and node.args[0].func is sigmoid:
        return -softplus(-node.args[0].args[0])
    return None


def logaddexp(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """log(exp(a) + exp(b)) as max(a, b) + softplus(-|a - b|), which neither overflows nor
    cancels (also `rules_logsumexp`'s step)."""
    return sp.Max(a, b) + softplus(-sp.Abs(a - b))


def _logaddexp(node):
    """log(exp(a) + exp(b)) -> `logaddexp(a, b)`."""
    if node.func is sp.log and node.args[0].is_Add and len(node.args[0].args) == 2:
        first, second = node.args[0].args
        if first.func is sp.exp and second.func is sp.exp:
            return logaddexp(first.args[0], second.args[0])
    return None


def _log_exp_factor(node):
    """log(exp(a) + r) -> a + log(1 + r*exp(-a)), for a sum with one bare exp: exp(a)
    overflows long before the log does (log(exp(x) - 1) is x + log1p(-exp(-x))). Likewise
    log|exp(a) + r| -> a + log|1 + r*exp(-a)|, as exp(a) > 0: split logs of a quotient take
    magnitudes (log((exp(x) - 1)/x) as log|exp(x) - 1| - log|x|)."""
    if node.func is not sp.log:
        return None
    inner = node.args[0]
    magnitude = inner.func is sp.Abs
    total = inner.args[0] if magnitude else inner
    if not total.is_Add:
        return None
    signs = (1, -1) if magnitude else (1,)  # |r - exp(a)| = exp(a)*|1 - r*exp(-a)|
    exps = [t for t in total.args if _signed_exp(t, signs)]
    if len(exps) != 1:
        return None
    sign, factor = exps[0].as_coeff_Mul()
    a = factor.args[0]
    scaled = 1 + sp.powsimp(sign * (total - exps[0]) * sp.exp(-a))  # exp(y)*exp(-x): exp(y - x)
    return a + sp.log(sp.Abs(scaled) if magnitude else scaled)


def _signed_exp(term: sp.Expr, signs) -> bool:
    """Whether `term` is s*exp(a), s one of `signs`, with a not a number."""
    sign, factor = term.as_coeff_Mul()
    return sign in signs and factor.func is sp.exp and not factor.args[0].is_number


def _log_ratio(node):
    """c*log(a) - c*log(b) -> c*log1p((a - b)/b), where a - b is shorter than a and b: the
    logs round to nearly equal numbers whose difference keeps few digits (softplus(x) -
    softplus(y) at x, y = 30, 30.001), while a - b, with its common terms gone, does not."""
    found = opposite_pair(node, sp.log)
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
    found = opposite_pair(node, sp.exp)
    if found is None:
        return None
    c, a, b, others = found
    d = a - b
    return -c * sp.sign(d) * sp.exp(sp.Max(a, b)) * expm1(-sp.Abs(d)) + others


def _extreme_minus_arg(node):
    """c*max(a, b, ...) - c*a + r -> c*max(0, b - a, ...) + r, and min alike, for a sum with
    other terms r: where a is the extreme, the pair cancels exactly, but only once the two are
    added first; r added to either of them first is rounded away (log(exp(x) + exp(y)) - x as
    max(x, y) + softplus(-|x - y|) - x was 0 where it is softplus(y - x))."""
    if not node.is_Add or len(node.args) < 3:
        return None
    found = paired_terms(node, lambda c, f, g: f.func in (sp.Max, sp.Min) and g in f.args)
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


def _log_expm1(node):
    """log(expm1(u)) -> u + log(-expm1(-u)), log|expm1(u)| -> max(u, 0) + log(-expm1(-|u|)):
    expm1(u) overflows at u = 710 (89 in float32) while its log is about u; -expm1(-|u|) is
    in (0, 1), and for small u keeps the digits log1p(-exp(-u)) would lose."""
    found = log_of(node, expm1)
    if found is None:
        return None
    u, magnitude = found
    if magnitude:
        return sp.Max(u, 0) + log_one_minus_exp(sp.Abs(u))
    return u + log_one_minus_exp(u)


EXP_LOG_RULES: tuple[Rule, ...] = (
    Rule("log1p", "log(1 + u) = log1p(u)", _log1p),
    Rule("expm1", "exp(u) - 1 = expm1(u)", _expm1),
    Rule("pow_log1p", "(1 + u)**a = exp(a*log1p(u))", _pow_log1p),
    Rule("pow_expm1", "u**a - 1 = expm1(a*log(u))", _pow_expm1),
    Rule("softplus", "log1p(exp(u)) = softplus(u)", _softplus),
    Rule("sigmoid", "1/(1 + exp(v))**n = sigmoid(-v)**n", _sigmoid_of_reciprocal),
    Rule(
        "exp_sigmoid",
        "exp(k v)*sigmoid(-v)**n = sigmoid(v)**k sigmoid(-v)**(n - k)",
        _exp_times_sigmoid,
    ),
    Rule(
        "sigmoid_complement",
        "1 - sigmoid(u) = sigmoid(-u); 1 - 2 sigmoid(u) = -tanh(u/2)",
        _sigmoid_complement,
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
    Rule("log_expm1", "log|expm1(u)| = max(u, 0) + log(-expm1(-|u|))", _log_expm1),
    Rule("extreme_minus_arg", "max(a, b) - a + r = max(0, b - a) + r", _extreme_minus_arg),
)
