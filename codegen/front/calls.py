"""Call forms beyond one-argument functions: piecewise, and functions of several arguments.

In: the walker of `grammar` and an `ast.Call` whose name is in `CALL_FORMS`. Out: a SymPy
expression. `where(cond, a, b)` becomes `Piecewise((a, cond), (b, True))`; `min`, `max`
and `clamp` become the same Piecewise selects (so their derivatives are taken per piece
and the condition decides the side at a boundary); `polygamma(n, x)` takes a literal
order; `atan2(y, x)` is SymPy's. Conditions are comparisons `< <= > >=` joined by `and`
/ `or`, and are accepted only as the first argument of `where`.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

MAX_WHERE_DEPTH = 4  # where/min/max/clamp inside one another
MAX_POLYGAMMA = 6  # polygamma(n, x) orders; the derivatives add up to 4 more
_COMPARE = {ast.Lt: sp.Lt, ast.LtE: sp.Le, ast.Gt: sp.Gt, ast.GtE: sp.Ge}
_COMPARE_NAMES = {"Eq": "'=='", "NotEq": "'!='", "Is": "'is'", "IsNot": "'is not'", "In": "'in'"}
_CONDITION = "a condition (a comparison with < <= > >=, joined by 'and'/'or')"


@dataclass(frozen=True)
class CallForm:
    """A call of the grammar that is not a one-argument function."""

    signature: str  # as the error messages and the docs show it
    n_args: tuple[int, int]  # fewest and most positional arguments
    build: Callable  # (walker, ast.Call, depth) -> sp.Expr


def condition(walker, node: ast.AST, depth: int) -> sp.Basic:
    """A SymPy boolean from a comparison, or comparisons joined by and/or."""
    if isinstance(node, ast.BoolOp):
        parts = [condition(walker, value, depth + 1) for value in node.values]
        return sp.And(*parts) if isinstance(node.op, ast.And) else sp.Or(*parts)
    if not isinstance(node, ast.Compare):
        walker.fail(node, f"where(): expected {_CONDITION} as the condition, got {_kind(node)}")
    values = [walker.visit(node.left, depth + 1)]
    relations = []
    for op, right in zip(node.ops, node.comparators):
        if type(op) not in _COMPARE:
            name = _COMPARE_NAMES.get(type(op).__name__, type(op).__name__)
            walker.fail(node, f"where(): expected a comparison < <= > >=, got {name}")
        values.append(walker.visit(right, depth + 1))
        relations.append(_COMPARE[type(op)](values[-2], values[-1]))
    return sp.And(*relations)


def _kind(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"the name {node.id!r}"
    if isinstance(node, ast.Constant):
        return f"the number {node.value!r}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"a call of {node.func.id}()"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "'not' (write the opposite comparison instead)"
    return "an arithmetic expression"


def _nested(walker, node: ast.AST, build):
    """`build()` one level deeper in where/min/max/clamp, refused past MAX_WHERE_DEPTH."""
    if walker.where_depth >= MAX_WHERE_DEPTH:
        walker.fail(
            node,
            f"where/min/max/clamp nested too deeply: expected at most {MAX_WHERE_DEPTH} levels",
        )
    walker.where_depth += 1
    try:
        return build()
    finally:
        walker.where_depth -= 1


def _where(walker, node: ast.Call, depth: int) -> sp.Expr:
    def build():
        cond = condition(walker, node.args[0], depth + 1)
        a, b = (walker.visit(arg, depth + 1) for arg in node.args[1:])
        return sp.Piecewise((a, cond), (b, True))

    return _nested(walker, node, build)


def _select(a: sp.Expr, b: sp.Expr, larger: bool) -> sp.Expr:
    return sp.Piecewise((a, a >= b if larger else a <= b), (b, True))


def _extremum(larger: bool):
    def build_call(walker, node: ast.Call, depth: int) -> sp.Expr:
        def build():
            values = [walker.visit(arg, depth + 1) for arg in node.args]
            return functools.reduce(lambda a, b: _select(a, b, larger), values)

        return _nested(walker, node, build)

    return build_call


def _clamp(walker, node: ast.Call, depth: int) -> sp.Expr:
    def build():
        x, lo, hi = (walker.visit(arg, depth + 1) for arg in node.args)
        return sp.Piecewise((lo, x < lo), (hi, x > hi), (x, True))

    return _nested(walker, node, build)


def _polygamma(walker, node: ast.Call, depth: int) -> sp.Expr:
    order = node.args[0]
    value = order.value if isinstance(order, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_POLYGAMMA:
        got = _show_order(order, value)
        walker.fail(
            order,
            f"polygamma(n, x): expected the order n as an integer literal 0..{MAX_POLYGAMMA}, "
            f"got {got}",
        )
    return sp.polygamma(value, walker.visit(node.args[1], depth + 1))


def _show_order(node: ast.AST, value) -> str:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return "a negative number"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return "an expression (the order must be written as a number)"


def _atan2(walker, node: ast.Call, depth: int) -> sp.Expr:
    y, x = (walker.visit(arg, depth + 1) for arg in node.args)
    return sp.atan2(y, x)


CALL_FORMS: dict[str, CallForm] = {
    "where": CallForm("where(cond, a, b)", (3, 3), _where),
    "min": CallForm("min(a, b, ...)", (2, 4), _extremum(False)),
    "max": CallForm("max(a, b, ...)", (2, 4), _extremum(True)),
    "clamp": CallForm("clamp(x, lo, hi)", (3, 3), _clamp),
    "polygamma": CallForm("polygamma(n, x)", (2, 2), _polygamma),
    "atan2": CallForm("atan2(y, x)", (2, 2), _atan2),
}


def call_form(walker, node: ast.Call, name: str, depth: int) -> sp.Expr:
    """The SymPy expression of a call form, after checking how it is called."""
    form = CALL_FORMS[name]
    lo, hi = form.n_args
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        got = "keyword arguments" if node.keywords else "'*' arguments"
        walker.fail(node, f"{form.signature}: expected positional arguments, got {got}")
    if not lo <= len(node.args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        walker.fail(node, f"{form.signature}: expected {want} arguments, got {len(node.args)}")
    return form.build(walker, node, depth)
