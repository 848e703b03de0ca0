"""Cancellation modulo square roots: a derivative simplified knowing sqrt(Q)**2 = Q.

In: a SymPy derivative. Out: the same derivative with every square root of a polynomial
sqrt(Q) taken as a symbol R with R**2 = Q, and the rational function of the args and R
reduced modulo that relation (SymPy's `ratsimpmodprime`), or None where nothing is
rewritten. SymPy's cancel and factor treat sqrt(x**2 + y**2) as a free symbol and miss
common factors that exist only modulo R**2 = x**2 + y**2: log(hypot(x, y) - x)'s f_xy is

    y*(2*x**2 - 2*x*R + y**2)/((x - R)**2*R**3)  =  y/R**3,

since (x - R)**2 = x**2 - 2*x*R + R**2. The long form cancels where x > 0 and y is small
(R - x is rounded to nothing, squared, and divided by); the short one does not. Any
subexpression that is neither polynomial nor such a root (exp(x), log(1 + x)) is kept whole,
as one more symbol; where one holds a root (sqrt(R - x)), nothing is reduced: the relation
cannot reach inside it, and the reduction around it takes tens of seconds. `candidates`
offers the result as one more algebraic variant, and `stabilize` measures it like the others.
"""

from __future__ import annotations

import sympy as sp

MAX_ROOTS = 2  # distinct square roots taken as symbols; each doubles the reduction's work


def _is_root(node: sp.Basic, args) -> bool:
    """Whether `node` is Q**(k/2) for a polynomial Q of the args and an odd k."""
    if not (node.is_Pow and node.exp.is_Rational and node.exp.q == 2):
        return False
    base = node.base
    return not base.is_number and base.is_polynomial(*args)


def _symbols_for_roots(expr: sp.Expr, args) -> tuple[sp.Expr, dict[sp.Symbol, sp.Expr]]:
    """`expr` with each sqrt(Q) as R**1 (and Q**(k/2) as R**k); the map R -> Q."""
    bases = sorted({n.base for n in sp.preorder_traversal(expr) if _is_root(n, args)}, key=str)
    roots = {base: sp.Dummy(f"root{i}", positive=True) for i, base in enumerate(bases)}
    swapped = expr.replace(
        lambda n: _is_root(n, args) and n.base in roots,
        lambda n: roots[n.base] ** int(2 * n.exp),
    )
    return swapped, {r: base for base, r in roots.items()}


def _opaque(expr: sp.Expr) -> tuple[sp.Expr, dict[sp.Symbol, sp.Expr]]:
    """`expr` with every subexpression that is not a rational function of its symbols as a
    symbol of its own (innermost first: exp(sqrt(x)) is part1 = exp(part0)); the map back."""
    kept: dict[sp.Expr, sp.Symbol] = {}

    def is_opaque(n) -> bool:
        if n.is_Pow:
            return not n.exp.is_Integer
        return isinstance(n, sp.Function)

    def symbol(n):
        return kept.setdefault(n, sp.Dummy(f"part{len(kept)}"))

    return expr.replace(is_opaque, symbol), {s: n for n, s in kept.items()}


def modulo_roots(expr: sp.Expr, args) -> sp.Expr | None:
    """`expr` reduced modulo R**2 = Q for each square root sqrt(Q) of a polynomial in it (at
    most `MAX_ROOTS`), or None where it has none or the reduction changed nothing."""
    swapped, roots = _symbols_for_roots(expr, tuple(args))
    if not roots or len(roots) > MAX_ROOTS:
        return None
    rational, parts = _opaque(sp.together(swapped))
    if any(part.has(*roots) for part in parts.values()):
        return None  # a function of a root (sqrt(R - x)): opaque to the reduction, and slow
    generators = sorted(rational.free_symbols, key=str)
    ideal = [r**2 - q for r, q in roots.items()]
    try:
        out = sp.ratsimpmodprime(rational, ideal, *generators)
    except (ArithmeticError, ValueError, TypeError, IndexError, sp.PolynomialError):
        return None  # SymPy's reduction fails on some systems (an empty solution list)
    while out.has(*parts):
        out = out.xreplace(parts)
    out = sp.factor(out.xreplace({r: sp.sqrt(q) for r, q in roots.items()}))
    return None if out == expr or out.has(sp.nan) else out
