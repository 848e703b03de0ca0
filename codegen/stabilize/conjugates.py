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

CONJUGATE_SECONDS = 1.0  # for all rewrites of one derivative
MAX_SUMS = 4  # sums rewritten per candidate: each doubles the pieces computed


def _root_of(term: sp.Expr) -> sp.Expr | None:
    """The factor C**(1/2) or C**(-1/2) of `term`, C not a number, else None. A root in a
    denominator stays there: x/(2*sqrt(x**2 + 2)) is k*root with k = x/2, whose conjugate
    does not multiply x by sqrt(x**2 + 2), which overflows long before the quotient."""
    for factor in sp.Mul.make_args(term):
        base, exp = factor.as_base_exp()
        if exp in (sp.S.Half, -sp.S.Half) and not base.is_number:
            return factor
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


def _split_on(node: sp.Expr, term: sp.Expr, root: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """(k, A) with `node` = A + k*root: from `term` alone, or, where other terms hold the
    root too (2*x**3 - 2*x**2*R + y**2*R), from the root's coefficient over all of them."""
    k, rest = sp.cancel(term / root), node - term
    if rest.has(root):
        k = sp.factor(sum(t / root for t in node.args if t.has(root)))
        rest = sp.Add(*(t for t in node.args if not t.has(root)))
    return k, rest


def _conjugate(node: sp.Expr) -> sp.Expr:
    """`node`, a sum, as the two-piece form of the module docstring (or unchanged)."""
    for term in node.args:
        root = _root_of(term)
        if root is None:
            continue
        k, rest = _split_on(node, term, root)
        if rest == 0 or k.has(root) or rest.has(root):
            continue
        numerator = sp.cancel(sp.expand(rest**2 - k**2 * root**2))
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


def _root_of_quotient(piece: sp.Expr, exp: sp.Rational) -> sp.Expr:
    """piece**exp (exp = k/2) with the root taken of a numerator that is a square apart:
    sqrt(y**2/(x + h)) as |y|/sqrt(x + h), whose y**2/(x + h) would underflow first."""
    numerator, denominator = sp.fraction(sp.together(piece.doit()))
    if numerator.could_extract_minus_sign():
        numerator, denominator = -numerator, -denominator
    coeff, rest = numerator.as_coeff_Mul()
    powers = rest.as_powers_dict()
    if coeff <= 0 or not powers or any(not (k.is_Integer and k % 2 == 0) for k in powers.values()):
        return piece**exp
    root = sp.sqrt(coeff) * sp.Mul(*(sp.Abs(b) ** (k // 2) for b, k in powers.items()))
    return (root / sp.sqrt(denominator)) ** (2 * exp)


def _roots_of_conjugates(form: sp.Expr) -> sp.Expr:
    """Square roots of conjugates (the quotients `_over` builds) taken of their parts."""

    def is_target(n) -> bool:
        half = n.is_Pow and n.exp.is_Rational and n.exp.q == 2  # sqrt, 1/sqrt, **(-3/2)
        return half and n.base.has(sp.UnevaluatedExpr)

    return form.replace(is_target, lambda n: _root_of_quotient(n.base, n.exp))


MAX_FOLDED_PIECES = 4  # pieces of one folded form: each is computed at every point


def _magnitudes(expr: sp.Expr, arg: sp.Symbol) -> sp.Expr:
    """`expr` with `arg` as sign(arg)*|arg| and the powers of |arg| common to a sum taken out,
    so |arg| in a denominator cancels against them: y**2*(y**2 - 3*x**2)/|y| becomes
    |y|*(y**2 - 3*x**2), which is 0 where y underflows, not 0/0."""
    size, sign = sp.Dummy("size", positive=True), sp.Dummy("sign", real=True)
    split = expr.replace(lambda n: isinstance(n, sp.UnevaluatedExpr), lambda n: n.args[0])
    split = split.xreplace({arg: sign * size})
    split = split.replace(
        lambda n: n.is_Pow and n.base == sign and n.exp.is_Integer,
        lambda n: sp.S.One if n.exp % 2 == 0 else sign,
    )
    split = split.replace(lambda n: isinstance(n, sp.Abs) and n.args[0] == sign, lambda n: 1)
    return sp.factor_terms(split).xreplace({size: sp.Abs(arg), sign: sp.sign(arg)})


def _folded(form: sp.Expr) -> sp.Expr:
    """`form` with the factors around its Piecewises moved into the pieces (y*[../|y|] as
    [y/|y|*..], which the rules turn into sign(y)), and each piece that holds |y| rewritten
    by `_magnitudes`, so |y| cancels against the powers of y around it. Unchanged past
    `MAX_FOLDED_PIECES`."""
    if not form.has(sp.Piecewise):
        return form
    folded = sp.piecewise_fold(form)
    if not isinstance(folded, sp.Piecewise) or len(folded.args) > MAX_FOLDED_PIECES:
        return form
    return sp.Piecewise(*((_cancel_magnitudes(e), c) for e, c in folded.args))


def _cancel_magnitudes(piece: sp.Expr) -> sp.Expr:
    for arg in sorted({a.args[0] for a in piece.atoms(sp.Abs) if a.args[0].is_Symbol}, key=str):
        piece = _magnitudes(piece, arg)
    return piece


def _forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    out = []
    for label, variant in (("conjugate", expr), ("together+conjugate", sp.together(expr))):
        form = _rewrite(variant)
        if form == variant:
            continue
        rooted = _roots_of_conjugates(form)  # in place of the form: never less accurate
        if rooted != form:
            form, label = _folded(rooted), f"{label}+roots of parts"
        out.append((label, form))  # a constant sign leaves one piece: sqrt(1 + x) - 1 -> x/(...)
    return out


def conjugate_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """The conjugate candidates of `expr` (none if it has no square root, or past the time
    bound)."""
    if not any(_root_of(t) for t in expr.atoms(sp.Pow)):
        return []
    return bounded(CONJUGATE_SECONDS, [], _forms, expr)
