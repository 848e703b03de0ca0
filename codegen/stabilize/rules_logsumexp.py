"""Rewrite rules of positive sums of three to five exponentials (`rules` applies them).

In: one SymPy node. Out: its rewrite, or None where the node is not the pattern;
`LOGSUMEXP_RULES`, the rules as data (name, identity, rewrite).

A positive sum S of exps (terms c*exp(a) with c > 0; a constant c is exp(log(c))) overflows
where log(S) and S**-n do not, and 1 + exp(x) + exp(y) rounds exp(x) and exp(y) away where
log(S) is about their sum. Two terms have rules of their own (`logaddexp`, `sigmoid`,
`log_exp_factor`); these take three to `MAX_TERMS`:

- log(S) is a fold of logaddexp(a, b) = max(a, b) + softplus(-|a - b|) over the exponents,
  a constant exponent first (logaddexp(0, b) = softplus(b)). Each step is the log of a sum
  of two positive terms and does not cancel, and where the constant term dominates, the
  small terms are kept whole: log(1 + exp(x) + exp(y)) is
  max(y, softplus(x)) + softplus(-|y - softplus(x)|), about exp(x) + exp(y) where both
  are tiny.
- S**-n is exp(-n*log(S)), and exp(a)*S**-n (a softmax probability and the derivatives of a
  log-sum-exp) is exp(-n*log(S*exp(-a/n))): S's exps shifted by a/n, so the term the
  numerator cancels becomes the constant 1 and is folded first. The rules rewrite S**-n
  before the product that holds it, so exp(-n*log-sum-exp) is recognized in a product too.
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import log1p

from codegen.front.functions import softplus
from codegen.stabilize.rewriting import Rule
from codegen.stabilize.rules_exp_log import logaddexp

MIN_TERMS = 3  # two terms: `logaddexp`, `sigmoid`, `log_exp_factor`
# Each term nests the fold one level deeper, and the rules after it take time that grows
# with its size: (1 + exp(x) + exp(y))**3 expanded (ten terms, as `together` writes a
# derivative's denominator) folded to 1421 ops, which the other rules took 86 s over.
MAX_TERMS = 5


def exp_sum_exponents(node: sp.Expr) -> list[sp.Expr] | None:
    """The exponents of a sum of positive terms c*exp(a), c > 0 (a for exp(a), a + log(c)
    for c*exp(a), log(c) for a positive constant), in order; None for any other node or
    where fewer than two terms vary."""
    if not node.is_Add:
        return None
    exponents = [_exponent(term) for term in node.args]
    if any(e is None for e in exponents) or sum(not e.is_number for e in exponents) < 2:
        return None
    return exponents


def _exponent(term: sp.Expr) -> sp.Expr | None:
    """a + log(c) for c*exp(a) with c a positive number (products of exps summed)."""
    coeff, rest = term.as_coeff_Mul()
    if not (coeff.is_number and coeff.is_positive):
        return None
    factors = sp.Mul.make_args(rest)
    if rest != 1 and not all(f.func is sp.exp for f in factors):
        return None
    exponent = sp.Add(*(f.args[0] for f in factors if f.func is sp.exp))
    return exponent + sp.log(coeff) if coeff != 1 else exponent


def logsumexp(exponents: list[sp.Expr]) -> sp.Expr | None:
    """log(sum(exp(e) for e in exponents)) as logaddexp folded, constant exponents first;
    None where SymPy refuses the max of two of them (args not known to be real: an
    unevaluated x*y inside softplus)."""
    ordered = [e for e in exponents if e.is_number] + [e for e in exponents if not e.is_number]
    total = ordered[0]
    try:
        for exponent in ordered[1:]:
            total = softplus(exponent) if total == 0 else logaddexp(total, exponent)
    except ValueError:
        return None
    return total


def _log_exp_sum(node):
    """log(S) -> logsumexp of S's exponents; log1p(S) is log(1 + S)."""
    if node.func is sp.log:
        exponents = exp_sum_exponents(node.args[0])
    elif node.func is log1p:
        found = exp_sum_exponents(node.args[0])
        exponents = None if found is None else [sp.Integer(0), *found]
    else:
        return None
    if exponents is None or not MIN_TERMS <= len(exponents) <= MAX_TERMS:
        return None
    return logsumexp(exponents)


def _softmax(node):
    """S**-n -> exp(-n*logsumexp(S)); exp(a)*S**-n*r -> exp(-n*logsumexp(S*exp(-a/n)))*r,
    S**-n there also as exp(-n*logsumexp(S)) already."""
    if node.is_Pow:
        inverse = _inverse_sum(node)
        return None if inverse is None else _shifted(*inverse, sp.Integer(0))
    if not node.is_Mul:
        return None
    for factor in node.args:
        inverse = _inverse_sum(factor)
        if inverse is not None:
            exps = [f for f in node.args if f.func is sp.exp and f != factor]
            shift = sp.Add(*(f.args[0] for f in exps))
            rest = sp.Mul(*(f for f in node.args if f not in exps and f != factor))
            shifted = _shifted(*inverse, shift)
            return None if shifted is None else shifted * rest
    return None


def _inverse_sum(factor: sp.Expr) -> tuple[list[sp.Expr], sp.Expr] | None:
    """(S's exponents, n) for S**-n or exp(-n*logsumexp(S)), S of `MIN_TERMS` terms or
    more and n > 0 a number; else None."""
    if factor.is_Pow and factor.exp.is_number and factor.exp.is_negative:
        exponents, n = exp_sum_exponents(factor.base), -factor.exp
    elif factor.func is sp.exp:
        minus_n, total = sp.factor_terms(factor.args[0]).as_coeff_Mul()
        exponents, n = _unfolded(total), -minus_n
    else:
        return None
    if exponents is None or not MIN_TERMS <= len(exponents) <= MAX_TERMS or not n.is_positive:
        return None
    return exponents, n


def _unfolded(total: sp.Expr) -> list[sp.Expr] | None:
    """The exponents whose `logsumexp` `total` is (softplus(b): 0 and b; max(a, b) +
    softplus(-|a - b|): a's and b's), or None."""
    if total.func is softplus:
        return [sp.Integer(0), total.args[0]]
    if not total.is_Add or len(total.args) != 2:
        return None
    extreme, tail = sorted(total.args, key=lambda t: t.func is not sp.Max)
    if extreme.func is not sp.Max or len(extreme.args) != 2 or tail.func is not softplus:
        return None
    a, b = extreme.args
    if tail.args[0] not in (-sp.Abs(a - b), -sp.Abs(b - a)):
        return None
    return (_unfolded(a) or [a]) + (_unfolded(b) or [b])


def _shifted(exponents: list[sp.Expr], n: sp.Expr, shift: sp.Expr) -> sp.Expr:
    """exp(shift)*S**-n as exp(-n*logsumexp(S*exp(-shift/n))), S the sum of the exps of
    `exponents` (None where `logsumexp` is)."""
    total = logsumexp([e - shift / n for e in exponents])
    return None if total is None else sp.exp(-n * total)


LOGSUMEXP_RULES: tuple[Rule, ...] = (
    Rule("logsumexp", "log(sum of exps) = logaddexp folded, a constant first", _log_exp_sum),
    Rule("softmax", "exp(a)/S**n = exp(-n logsumexp(S exp(-a/n)))", _softmax),
)
