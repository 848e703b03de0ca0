"""Conjugate rationalization: sums with a square root that cancel, rewritten per sign.

In: a SymPy derivative. Out: `(label, form)` candidates in which every sum `A + k*sqrt(C)`
(k and A free of that root) is computed as

    A + k*sqrt(C)                        where A*k >= 0 (no cancellation), else
    (A**2 - k**2*C) / (A - k*sqrt(C))    (the conjugate, numerator expanded and cancelled)

as a two-piece `Piecewise` on the sign of `A*k` (signs of numerators and denominators,
which do not overflow), an expression of any number of args: a
multi-argument regime. Both pieces equal the sum wherever it is defined, so the candidate is
exact; `stabilize` measures it like any other. It fixes sqrt(x**2 + 1) - x at large x,
(-b + sqrt(b**2 - 4c))/2 for b > 0, sqrt(x + y) - sqrt(x), and, through `together`,
derivatives such as x/sqrt(x**2 + 1) - 1.
"""

from __future__ import annotations

import sympy as sp

from codegen.timebound import bounded

CONJUGATE_SECONDS = 2.0  # for all rewrites of one derivative
MAX_SUMS = 4  # sums rewritten per candidate: each doubles the pieces computed


def _root_of(term: sp.Expr) -> sp.Expr | None:
    """C where `term` has a factor C**(1/2) or C**(-1/2) with C not a number, else None."""
    for factor in sp.Mul.make_args(term):
        base, exp = factor.as_base_exp()
        if exp in (sp.S.Half, -sp.S.Half) and not base.is_number:
            return base
    return None


def _sign(u: sp.Expr) -> sp.Expr:
    """sign(u) as signs of its numerator and denominator: no overflow (x/(x**2 + 1))."""
    numerator, denominator = sp.fraction(sp.cancel(u))
    return sp.sign(numerator) * sp.sign(denominator)


def _over(numerator: sp.Expr, denominator: sp.Expr) -> sp.Expr:
    """numerator/denominator with one factor of a product numerator divided first:
    y**2/(x + hypot) as y*(y/(x + hypot)), so y**2 cannot overflow or underflow alone."""
    den = sp.UnevaluatedExpr(denominator)
    for factor in sp.Mul.make_args(numerator):
        base, exp = factor.as_base_exp()
        if not base.is_number and exp.is_Integer and exp > 0:
            return (numerator / base) * sp.UnevaluatedExpr(base / den)
    return numerator / den


def _conjugate(node: sp.Expr) -> sp.Expr:
    """`node`, a sum, as the two-piece form of the module docstring (or unchanged)."""
    for term in node.args:
        radicand = _root_of(term)
        if radicand is None:
            continue
        root = sp.sqrt(radicand)
        k = sp.cancel(term / root)
        rest = node - term
        if rest == 0 or k.has(root) or rest.has(root):
            continue
        numerator = sp.cancel(sp.expand(rest**2 - k**2 * radicand))
        conjugate = _over(numerator, rest - k * root)
        return sp.Piecewise((node, sp.Ge(_sign(rest) * _sign(k), 0)), (conjugate, True))
    return node


def _rewrite(expr: sp.Expr) -> sp.Expr:
    count = [0]

    def is_target(n) -> bool:
        if not n.is_Add or count[0] >= MAX_SUMS or not any(_root_of(t) for t in n.args):
            return False
        count[0] += 1
        return True

    return expr.replace(is_target, _conjugate)


def _forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    out = []
    for label, variant in (("conjugate", expr), ("together+conjugate", sp.together(expr))):
        form = _rewrite(variant)
        if form != variant:  # a constant sign leaves one piece: sqrt(1 + x) - 1 -> x/(...)
            out.append((label, form))
    return out


def conjugate_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """The conjugate candidates of `expr` (none if it has no square root, or past the time
    bound)."""
    if not any(_root_of(t) for t in expr.atoms(sp.Pow)):
        return []
    return bounded(CONJUGATE_SECONDS, [], _forms, expr)
