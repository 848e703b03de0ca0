"""Piecewise partials: each piece of a `where` (or min, max, clamp) is its own problem.

In: the spec, one `Partial` whose expression is a SymPy `Piecewise`, and `choose` (the
one-partial chooser, passed in). Out: a `Choice` whose form is a `Pieces`: for every
piece the form `choose` picks for that piece alone, measured on the interval the piece
owns where its condition compares one arg with a number (the whole domain otherwise), so
a piece may get regimes and limits at ±inf of its own. The whole is then measured as it
ships, on the spec's own points.
"""

from __future__ import annotations

import math
from dataclasses import replace

import sympy as sp

from codegen.derive import Partial
from codegen.pieces import Pieces


def _bound(rel: sp.Basic, args) -> tuple[int, float, float] | None:
    """(arg index, lo, hi) of a comparison of one arg with a number, else None."""
    if not isinstance(rel, sp.core.relational.Relational):
        return None
    lhs, rhs, rel_type = rel.lhs, rel.rhs, type(rel)
    if rhs in args and lhs.is_number:
        lhs, rhs, rel_type = rhs, lhs, type(rel.reversed)
    if lhs not in args or not rhs.is_number or not rhs.is_real:
        return None
    value = float(rhs)
    below = rel_type in (sp.StrictLessThan, sp.LessThan)
    return args.index(lhs), (-math.inf if below else value), (value if below else math.inf)


def _conjuncts(cond: sp.Basic, negate: bool):
    """Relations that all hold where `cond` holds (or fails, with `negate`); may be none."""
    if isinstance(cond, sp.core.relational.Relational):
        yield cond.negated if negate else cond
    elif isinstance(cond, sp.And if not negate else sp.Or):  # De Morgan for a failed Or
        for arg in cond.args:
            yield from _conjuncts(arg, negate)


def piece_domain(spec, pieces: Pieces, i: int):
    """The spec's domain narrowed to what piece i owns, where the conditions say simply."""
    args = list(spec.arg_symbols)
    domain = [list(bounds) for bounds in spec.domain]
    owned = list(_conjuncts(pieces.conds[i], False)) if i < len(pieces.conds) - 1 else []
    for earlier in pieces.conds[:i]:
        owned += _conjuncts(earlier, True)
    for rel in owned:
        bound = _bound(rel, args)
        if bound is not None:
            k, lo, hi = bound
            domain[k] = [max(domain[k][0], lo), min(domain[k][1], hi)]
    if any(not lo < hi for lo, hi in domain):  # the piece owns nothing here
        return spec.domain
    return tuple(tuple(bounds) for bounds in domain)


def choose_pieces(spec, partial: Partial, n: int, promoted: bool, choose, measure, samples):
    """The Choice of a Piecewise partial: each piece chosen alone, the whole measured."""
    from codegen.stabilize.selection import Choice  # selection imports this module

    pieces = Pieces.of(partial.expr)
    chosen = []
    for i, exact in enumerate(pieces.exact):
        if exact.is_number:
            chosen.append(None)
            continue
        piece_spec = replace(spec, domain=piece_domain(spec, pieces, i))
        chosen.append(choose(piece_spec, Partial(partial.index, exact), n, promoted))
    forms = [exact if c is None else c.chosen.form for exact, c in zip(pieces.exact, chosen)]
    labels = ["constant" if c is None else c.chosen.label for c in chosen]
    form = pieces.with_forms(forms)
    whole = measure(f"pieces({' | '.join(labels)})", form, spec, samples, promoted)
    tried = (whole, *(t for c in chosen if c is not None for t in c.tried))
    promote = promoted or any(c is not None and c.promote_float32 for c in chosen)
    figures = None
    if promote and not promoted:
        figures = measure(whole.label, form, spec, samples, True).figures[0]
    elif promoted:
        figures = whole.figures[0]
    return Choice(partial.index, partial.expr, whole, tried, promote, figures)
