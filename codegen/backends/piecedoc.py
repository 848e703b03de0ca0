"""Docstring text for piecewise ops: the pieces, and where the function is not smooth.

In: a `Pieces` form, or the chosen forms of a spec whose expression is piecewise. Out:
`describe_pieces` (one line per form, `x > 0: x; otherwise: expm1(x)`) and
`smoothness_sentence`, which names each boundary between pieces and the lowest order whose
one-sided values differ there, computed exactly with SymPy from the derivatives.
"""

from __future__ import annotations

import sympy as sp

from codegen.pieces import Pieces, boundaries

_NOT_SMOOTH = {0: "is not continuous", 1: "is not differentiable"}


def describe_pieces(pieces: Pieces, describe) -> str:
    parts = []
    for i, (cond, form) in enumerate(zip(pieces.conds, pieces.forms)):
        head = "otherwise" if i == len(pieces.conds) - 1 else sp.sstr(cond)
        text = describe(form)
        parts.append(f"{head}: [{text}]" if ";" in text else f"{head}: {text}")
    return "; ".join(parts)


def _side(piecewise: sp.Piecewise, x: sp.Symbol, at: sp.Expr, step: sp.Expr):
    """The piece that owns the points just beside `at` (step below or above)."""
    probe = at + step
    for pair in piecewise.args:
        truth = pair.cond.subs(x, probe)
        if truth == sp.true:
            return pair.expr
        if truth != sp.false:
            return None
    return None


def _jumps(piecewise, x: sp.Symbol, at: sp.Expr) -> bool | None:
    """Whether the pieces on either side of `at` take different values there (None: unknown)."""
    step = sp.Rational(1, 10**12) * (1 + abs(at))
    below, above = _side(piecewise, x, at, -step), _side(piecewise, x, at, step)
    if below is None or above is None:
        return None
    try:
        left, right = (sp.limit(side, x, at) for side in (below, above))
        return bool(sp.simplify(left - right) != 0)
    except (NotImplementedError, ValueError, TypeError, ArithmeticError):
        return None


def smoothness_sentence(spec, exacts: list[sp.Expr]) -> str | None:
    """Where the op is not smooth: each boundary, and the first order that jumps there.

    `exacts[k]` is the exact derivative of order k (one arg), or the value for several.
    """
    if not isinstance(spec.expr, sp.Piecewise):
        return None
    rels = boundaries([pair.cond for pair in spec.expr.args])
    if len(spec.args) != 1:
        where = ", ".join(f"{sp.sstr(r.lhs)} = {sp.sstr(r.rhs)}" for r in rels)
        return (
            f"Pieces meet where {where}; there each derivative is the one of the piece "
            "the condition selects, and the function may not be differentiable."
        )
    x = spec.arg_symbols[0]
    notes = []
    for rel in rels:
        if not (rel.lhs == x and rel.rhs.is_number) and not (rel.rhs == x and rel.lhs.is_number):
            notes.append(f"where {sp.sstr(rel.lhs)} = {sp.sstr(rel.rhs)}")
            continue
        at = rel.rhs if rel.lhs == x else rel.lhs
        order = next(
            (k for k, e in enumerate(exacts) if isinstance(e, sp.Piecewise) and _jumps(e, x, at)),
            None,
        )
        if order is None:
            continue
        label = "f" + "'" * order
        verb = _NOT_SMOOTH.get(order, f"has a jump in {label}")
        notes.append(f"at {x} = {sp.sstr(at)} ({label} jumps: {spec.name} {verb} there)")
    if not notes:
        return "Its pieces join smoothly up to the custom order."
    return (
        "Not smooth "
        + "; ".join(notes)
        + ". At a boundary every derivative is the one of the piece its condition selects."
    )
