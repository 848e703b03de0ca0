"""Exact squares inside exp: forms that do not round u**2 before exp amplifies it.

In: a candidate form. Out: the form with each exp(A + c*u**2) written as
exp(A + c*H**2) * exp(c*(u - H)*(u + H)), H = square_head(u) (`front/rounding.py`), or None
where it has no such exp.

exp(t) turns an absolute error in t into the same relative error in its value, and fl(u**2)
is off by u**2 * 2**-p: exp(-u**2/2) at u = 30 loses log2(450) ~ 9 bits to that rounding
alone. H = round(256 u)/256 has few bits, so H**2 is exact, u - H is exact, and
c*(u - H)*(u + H) is small (|u - H| <= 1/512), so its own rounding costs under an ulp. The
identity holds for any H, so the form equals the derivative exactly. The cost is one more
exp; the stabilizer offers it beside compensated sums for the best forms of a partial that
does not keep the promise with a margin (`selection`), and ships it only where it measures
better. erfcx's lowering (`composites.lower_erfcx`) uses the same head.
"""

from __future__ import annotations

import math

import sympy as sp

from codegen.front.rounding import square_head


def _square_term(term: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
    """(c, u) for a term c*u**2 of an exp's argument, u not a number, c a number."""
    coeff, rest = term.as_coeff_Mul()
    if rest.is_Pow and rest.exp == 2 and not rest.base.is_number and coeff.is_number:
        return coeff, rest.base
    return None


HEAD_EXPONENT_LIMIT = 1024  # |c*u**2| beyond it: exp is 0 or inf in every dtype


def _head_limit(c: sp.Expr) -> sp.Integer:
    """A power of two where |c| * limit**2 >= HEAD_EXPONENT_LIMIT."""
    return sp.Integer(2) ** max(
        0, math.ceil(math.log2(math.sqrt(HEAD_EXPONENT_LIMIT / abs(float(c)))))
    )


def _exponent(node: sp.exp) -> sp.Expr:
    """exp's argument, looked into where a rewrite kept it unevaluated (absorbed logs)."""
    argument = node.args[0]
    return argument.args[0] if isinstance(argument, sp.UnevaluatedExpr) else argument


def _split_exp(node: sp.exp) -> sp.Expr:
    rest, heads, tails = [], [], []
    for term in sp.Add.make_args(_exponent(node)):
        found = _square_term(term)
        if found is None:
            rest.append(term)
            continue
        c, u = found
        u = sp.UnevaluatedExpr(u) if u.is_Add else u  # the rounded u that H is the head of
        head = square_head(u, _head_limit(c))
        heads.append(c * head**2)
        # u - H and u + H kept as written: SymPy would distribute c over them
        tails.append(c * sp.UnevaluatedExpr(u - head) * sp.UnevaluatedExpr(u + head))
    # kept apart: SymPy would merge exp(a)*exp(b) back into exp(a + b)
    head = sp.UnevaluatedExpr(sp.exp(sp.Add(*rest, *heads)))
    return head * sp.UnevaluatedExpr(sp.exp(sp.Add(*tails)))


def _has_square(node: sp.Expr) -> bool:
    if not isinstance(node, sp.exp):
        return False
    return any(_square_term(t) is not None for t in sp.Add.make_args(_exponent(node)))


def square_split(expr: sp.Expr) -> sp.Expr | None:
    """expr with every exp(A + c*u**2) split so that u**2 is not rounded, or None."""
    if not any(_has_square(n) for n in sp.preorder_traversal(expr)):
        return None
    return expr.replace(_has_square, _split_exp)
