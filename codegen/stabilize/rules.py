"""Rewrite rules: equivalent forms that TensorFlow computes without cancellation or overflow.

In: a SymPy expression. Out: the same function, rewritten by named rules applied to a
fixed point, innermost or outermost nodes first (`rewriting`). Each rule is data: a `Rule`
with a name, the identity it uses, and a function that rewrites one node or returns None
when the node is not its pattern. The rules live with their kin (`rules_exp_log`,
`rules_logsumexp`, `rules_special`); `STABLE_RULES` is the tuple `stabilize` applies, in
`ORDER`, the order named as data. Every rule is tested three ways (the rewrite, a node it
must leave alone, and equality with the original) in tests/test_rules.py.
"""

from __future__ import annotations

import functools

import sympy as sp
from sympy.codegen.cfunctions import log1p

from codegen.stabilize.rewriting import (
    Rule,
    TooManyRewrites,
    innermost_first,
    outermost_first,
    rewrite_budget,
)
from codegen.stabilize.rules_differences import DIFFERENCE_RULES
from codegen.stabilize.rules_exp_log import EXP_LOG_RULES
from codegen.stabilize.rules_logsumexp import LOGSUMEXP_RULES
from codegen.stabilize.rules_special import ERF_SATURATE, SPECIAL_RULES

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


LOG_COMPLEMENT = Rule(
    "log_complement", "log(g) = log1p(-(1 - g)) where a rule rewrites 1 - g", _log_complement
)
_BY_NAME = {
    rule.name: rule
    for rule in (
        *EXP_LOG_RULES,
        *LOGSUMEXP_RULES,
        *SPECIAL_RULES,
        *DIFFERENCE_RULES,
        LOG_COMPLEMENT,
    )
}

# The order the rules are tried in at each node (the first that matches rewrites it): part
# of what a build writes, so a new rule goes last unless it must come before another.
ORDER = (
    "log1p",
    "expm1",
    "pow_log1p",
    "pow_expm1",
    "softplus",
    "abs_ratio",
    "sigmoid",
    "exp_sigmoid",
    "sigmoid_complement",
    "atan_complement",
    "log_sigmoid",
    "softplus_reflection",
    "logsumexp",  # before log_exp_factor, which takes a sum with one bare exp
    "logaddexp",
    "log_ratio",
    "log_exp_product",
    "exp_difference",
    "exp_sum_factor",
    "log_exp_factor",
    "log_expm1",
    "sum_to_product",
    "extreme_minus_arg",
    "erfc",
    "log_erfc",
    "erfc_exp",
    "one_minus_cos",
    "hypot",
    "log_cosh",
    "cosh_minus_one",
    "log_sinh",
    "hypot_const",
    "hypot_many",
    "inverse_hyperbolic",
    "sech_squared",
    "acosh_one_plus",
    "arc_near_one",
    "log_complement",
    "softmax",
    "softplus_difference",
    "sigmoid_difference",
    "tanh_difference",
    "polynomial_difference",
    "log_tanh",
)
STABLE_RULES: tuple[Rule, ...] = tuple(_BY_NAME[name] for name in ORDER)

# Applied once the rules above are done: their patterns must still see the bare function
# (1 + erf(u) is erfc(-u); a clamped u there would be wrong).
FINAL_RULES: tuple[Rule, ...] = (ERF_SATURATE,)


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
