"""Stage 2: SymPy derivatives of a spec, every order and every partial.

In: a `Spec`. Out: `Derivatives`, the exact derivatives of orders 0..order as
SymPy expressions, one `Partial` per multi-index. A multi-index counts how
often each arg is differentiated: for args (x, y), (1, 1) is f_xy. Mixed
partials are computed once (f_xy and f_yx are the same multi-index), each from
the partial one order below, so no derivative is taken twice.

Derivatives can explode (an exp tower at order 4); `max_ops` bounds the size
of any one, and exceeding it raises `DeriveError` naming the order and size.

SymPy writes some derivatives with functions outside the grammar: `DiracDelta`
and `Heaviside` (from `abs` and `sign`), `re`/`im` parts (from roots of
expressions that may be negative, where the value is real wherever it is
defined) and `cot`. Each partial is rewritten into the grammar: `DiracDelta`
is 0 away from the kink, `Heaviside(u)` is `(sign(u) + 1)/2`, `re(u)` is `u` and
`im(u)` is 0 for real `u`, `cot(u)` is `1/tan(u)`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp

from codegen.front.spec import Spec

DEFAULT_MAX_OPS = 20_000


class DeriveError(Exception):
    """A derivative grew past the configured bound."""


@dataclass(frozen=True)
class Partial:
    """One derivative: `index[i]` differentiations with respect to arg i."""

    index: tuple[int, ...]
    expr: sp.Expr

    @property
    def order(self) -> int:
        return sum(self.index)


@dataclass(frozen=True)
class Derivatives:
    """All partials of orders 0..spec.order, ordered by order, then multi-index descending."""

    spec: Spec
    partials: tuple[Partial, ...]

    def of_order(self, order: int) -> tuple[Partial, ...]:
        return tuple(p for p in self.partials if p.order == order)

    def get(self, index: tuple[int, ...]) -> Partial:
        for partial in self.partials:
            if partial.index == index:
                return partial
        raise KeyError(index)


def multi_indices(n_args: int, order: int) -> list[tuple[int, ...]]:
    """Multi-indices of total `order` over `n_args` args, f_xx before f_xy before f_yy."""
    out = []
    for combo in itertools.combinations_with_replacement(range(n_args), order):
        out.append(tuple(combo.count(i) for i in range(n_args)))
    return sorted(set(out), reverse=True)


def _parent(index: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """The partial one order below `index`, and the arg to differentiate it by."""
    last = max(i for i, count in enumerate(index) if count)
    parent = list(index)
    parent[last] -= 1
    return tuple(parent), last


def in_grammar(expr: sp.Expr) -> sp.Expr:
    """`expr` without DiracDelta, Heaviside, re, im and cot (see the module docstring)."""
    if not expr.has(sp.DiracDelta, sp.Heaviside, sp.re, sp.im, sp.cot):
        return expr
    return (
        expr.replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.S.Zero)
        .replace(sp.Heaviside, lambda u, *_: (sp.sign(u) + 1) / 2)
        .replace(sp.re, lambda u: u)
        .replace(sp.im, lambda u: sp.S.Zero)
        .replace(sp.cot, lambda u: 1 / sp.tan(u))
    )


def derive(spec: Spec, max_ops: int = DEFAULT_MAX_OPS) -> Derivatives:
    """Differentiate `spec.expr` up to `spec.order` in every arg."""
    symbols = spec.arg_symbols
    n_args = len(symbols)
    table: dict[tuple[int, ...], sp.Expr] = {(0,) * n_args: spec.expr}
    partials = [Partial((0,) * n_args, spec.expr)]
    for order in range(1, spec.order + 1):
        for index in multi_indices(n_args, order):
            parent, arg = _parent(index)
            expr = in_grammar(sp.diff(table[parent], symbols[arg]))
            size = sp.count_ops(expr)
            if size > max_ops:
                raise DeriveError(
                    f"{spec.path}: the order-{order} derivative {index} has {size} operations, "
                    f"over the bound of {max_ops}; lower `order` or simplify `expr`"
                )
            table[index] = expr
            partials.append(Partial(index, expr))
    return Derivatives(spec, tuple(partials))
