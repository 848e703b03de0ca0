"""The rewrite engine: named rules applied to a SymPy expression in one of two orders.

In: a SymPy expression and a tuple of `Rule`s (the data, in `rules`). Out: the expression
rewritten to a fixed point and the names of the rules used. Where two rules match nested
nodes (log(1 - exp(-x)): log1p outside, expm1 inside), the order decides which fires:
`innermost_first` gives log(-expm1(-x)), accurate for small x; `outermost_first` gives
log1p(-exp(-x)), accurate for large x. The stabilizer offers both, measures them, and lets
regimes join them.

Both orders are bounded: a rewrite that leads back to a form already met in its own lineage
ends there (rules that undo each other: `abs_ratio` took -|u|*hypot(1, u)*u**2 around a
cycle of four forms, and the nested rounds explored it 20**8 ways, over 300 s for
y*(sqrt(1 + (x/y)**2) - 1)), and one application makes at most `MAX_REWRITES` rewrites
(`rewrite_budget`), past which it raises `TooManyRewrites`. Both are counts, so where they
stop is the same on every machine.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class Rule:
    name: str
    identity: str
    rewrite: Callable[[sp.Expr], sp.Expr | None]


MAX_REWRITE_DEPTH = 8  # rules that undo each other (or grow their input) stop here
MAX_ROUNDS = 20  # rewrites of one node before it is left as it is
MATCH_CACHE_SIZE = 1 << 16
MAX_REWRITES = 5000  # per application (`rewrite_budget`)


class TooManyRewrites(Exception):
    """An application of the rules made more than `MAX_REWRITES` rewrites."""


_rewrites_left = [math.inf]  # of the application under way (`rewrite_budget`)


@contextlib.contextmanager
def rewrite_budget(rewrites: int = MAX_REWRITES):
    """Raise `TooManyRewrites` once the rewrites made inside exceed `rewrites`."""
    outer = _rewrites_left[0]
    _rewrites_left[0] = rewrites
    try:
        yield
    finally:
        _rewrites_left[0] = outer


def _spend_rewrite() -> None:
    _rewrites_left[0] -= 1
    if _rewrites_left[0] < 0:
        raise TooManyRewrites


def innermost_first(
    node: sp.Expr, rules: tuple[Rule, ...], depth: int = 0, lineage: frozenset = frozenset()
) -> tuple[sp.Expr, list[str]]:
    """Rewrite the children first, then the node itself until no rule applies.

    A rewrite's output is rewritten again, at most `MAX_REWRITE_DEPTH` deep: rules that
    feed each other (tanh(exp(x)) brings sigmoids of exponentials) end there, not in a
    RecursionError. A rewrite back to a form of `lineage` (the forms this node was
    rewritten from, and it) is not made: the cycle ends where it would close.
    """
    node, used = _children(node, rules, depth, innermost_first)
    if depth >= MAX_REWRITE_DEPTH:
        return node, used
    lineage = lineage | {node}
    for _ in range(MAX_ROUNDS):
        rewritten = _first_match(node, rules)
        if rewritten is None or rewritten[1] in lineage:
            return node, used
        _spend_rewrite()
        name, out = rewritten
        node, names = innermost_first(out, rules, depth + 1, lineage)
        used += [name, *names]
        lineage = lineage | {node}
    return node, used


def outermost_first(
    node: sp.Expr, rules: tuple[Rule, ...], depth: int = 0
) -> tuple[sp.Expr, list[str]]:
    """Rewrite the node itself while a rule applies, then its children; a node whose
    children changed is tried once more. Bounded like `innermost_first`."""
    used: list[str] = []
    for _ in range(MAX_ROUNDS if depth < MAX_REWRITE_DEPTH else 0):
        rewritten = _first_match(node, rules)
        if rewritten is None:
            break
        _spend_rewrite()
        name, node = rewritten
        used.append(name)
        depth += 1
    before = node
    node, names = _children(node, rules, depth, outermost_first)
    used += names
    if node != before and depth < MAX_REWRITE_DEPTH:
        node, names = outermost_first(node, rules, depth + 1)
        used += names
    return node, used


@functools.lru_cache(maxsize=MATCH_CACHE_SIZE)
def _first_match(node: sp.Expr, rules: tuple[Rule, ...]) -> tuple[str, sp.Expr] | None:
    """(name, rewritten node) of the first rule that changes `node`, or None. Remembered:
    the candidates of one partial share most of their nodes, and both orders meet each."""
    for rule in rules:
        try:
            out = rule.rewrite(node)
        except (TypeError, ValueError):  # SymPy refuses a node the rule builds (`_rebuilt`)
            continue
        if out is not None and out != node:
            return rule.name, out
    return None


def _children(node, rules, depth, order) -> tuple[sp.Expr, list[str]]:
    """`node` with each child rewritten in `order`; the rules used."""
    used: list[str] = []
    if not node.args or node.is_Atom:
        return node, used
    new_args = []
    for arg in node.args:
        new_arg, names = order(arg, rules, depth)
        new_args.append(new_arg)
        used += names
    if tuple(new_args) == node.args:
        return node, used
    rebuilt = _rebuilt(node, new_args)
    return (node, []) if rebuilt is None else (rebuilt, used)


def _rebuilt(node: sp.Expr, args: list) -> sp.Expr | None:
    """`node` with new args, or None where SymPy refuses them: Max and Min ask for args they
    can compare, and scaled args (x/m)/(y/m) inside a softplus are not (x/tanh(x/y) exited
    123 on such a Max)."""
    try:
        return node.func(*args)
    except (TypeError, ValueError):
        return None


# Patterns the rules share: sums split into a constant and terms, and pairs of terms.


@functools.lru_cache(maxsize=1 << 14)  # six rules ask it of each sum
def split_constant(expr: sp.Add) -> tuple[sp.Expr, sp.Expr]:
    constant, rest = expr.as_independent(*expr.free_symbols, as_Add=True)
    return constant, rest


def constant_terms(node):
    """For a sum `k + c*F + others` with k != 0: yield (k, others, c, F) for each term c*F."""
    if not node.is_Add:
        return
    constant, rest = split_constant(node)
    if constant == 0:
        return
    for term in sp.Add.make_args(rest):
        coeff, factor = term.as_independent(*term.free_symbols, as_Add=False)
        yield constant, rest - term, coeff, factor


def paired_terms(node, matches):
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


def opposite_pair(node, func):
    """For a sum holding c*func(a) and -c*func(b): (c, a, b, the other terms); else None."""
    found = paired_terms(node, lambda c, f, g: f.func is func and g.func is func and c > 0)
    if found is None:
        return None
    c, f, g, others = found
    return c, f.args[0], g.args[0], others


def log_of(node, func) -> tuple[sp.Expr, bool] | None:
    """For log(func(u)) or log|func(u)|: (u, whether it is the log of the magnitude)."""
    if node.func is not sp.log:
        return None
    inner = node.args[0]
    magnitude = inner.func is sp.Abs
    inner = inner.args[0] if magnitude else inner
    return (inner.args[0], magnitude) if inner.func is func else None


def log_one_minus_exp(a: sp.Expr) -> sp.Expr:
    """log(1 - exp(-a)) for a > 0, left for the rules to finish: innermost first makes it
    log(-expm1(-a)), accurate for small a, and outermost first log1p(-exp(-a)), accurate for
    large a (there -expm1(-a) rounds to 1 and its log to 0), so both are measured."""
    return sp.log(1 - sp.exp(-a))
