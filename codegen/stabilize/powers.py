"""Differences of like powers: c*A**p - c*B**p written without cancellation (issue 13, kind 2).

In: a SymPy derivative. Out: `(label, form)` candidates in which each sum with two terms
c*A**p and -c*B**p, p = m/n a fraction, is computed as

    (A - B) * A**(p - 1) * (c*Q(r))         for p > 0,
    -((A - B)/A) * (c*Q(r)) * B**p          for p < 0 (|p| = m/n),

with r = (B/A)**(1/n) and Q(r) = (1 + r + ... + r**(m-1)) / (1 + r + ... + r**(n-1)). From
a**m - b**m = (a - b) S_m(a, b) and A - B = a**n - b**n = (a - b) S_n(a, b) for a = A**(1/n),
b = B**(1/n). Every term of Q is positive where the powers are real, so nothing cancels
except A - B itself, which SymPy expands and cancels exactly: (x + y) - x is y. Where
A >= B, (A - B)/A lies in [0, 1] and c*Q(r) is within [c/n, c*m], so no partial product
overflows where the result does not (A**p itself would, beside A**(p - 1)): the form is a
Piecewise on the sign of the cancelled A - B (y >= 0), A and B swapped where it is negative.
sqrt(x + y) - sqrt(x) and its derivatives (x + y)**(-3/2) - x**(-3/2), cube roots
(x + 1)**(1/3) - x**(1/3). The conjugate rewrite (`conjugates`) covers A + k*sqrt(C) with A
free of roots; this covers two roots.
"""

from __future__ import annotations

import itertools

import sympy as sp

MAX_ROOT = 4  # n: square, cube and fourth roots
MAX_POWER = 8  # m: the numerator of Q has m terms


def _power_term(term: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Rational] | None:
    """(c, A, p) for term = c*A**p with c a number, A not one, p a fraction m/n."""
    coefficient, rest = term.as_coeff_Mul()
    base, exp = rest.as_base_exp()
    if base.is_number or not exp.is_Rational or exp.is_Integer:
        return None
    if exp.q > MAX_ROOT or abs(exp.p) > MAX_POWER:
        return None
    return coefficient, base, exp


def _geometric(r: sp.Expr, k: int) -> sp.Expr:
    return sp.Add(*(r**i for i in range(k)))


def difference_of_powers(
    big: sp.Expr,
    small: sp.Expr,
    p: sp.Rational,
    c: sp.Expr,
    difference: sp.Expr,
    cancelled_last: bool = False,
) -> sp.Expr:
    """c*(big**p - small**p), given `difference` = big - small expanded and cancelled, with
    the cancellation confined to it.

    For p > 0, (A - B) * A**(p - 1) * (c*Q(r)); for p < 0, -((A - B)/A) * (c*Q(r)) * B**p.
    c*Q(r) is bounded by c, so applying it between the other factors keeps every partial
    product in range where the result is. The power is a root to an integer power,
    (B**(-1/2))**3, which `spread_forms` multiplies in one factor at a time.

    `cancelled_last` multiplies c*Q(r) into the power first and A - B, a product of powers
    `spread_forms` can take apart, into that: where (A - B)/A is near float64's smallest
    normal, times c*Q(r) < 1 it is subnormal and flushed to 0 before the power > 1 would
    bring it back (sqrt(x**2 + e)'s d/de at x = -7e-156, e = 0.002)."""
    m, n = abs(p.p), p.q
    r = sp.UnevaluatedExpr(small / sp.UnevaluatedExpr(big)) ** sp.Rational(1, n)
    ratio = sp.UnevaluatedExpr(c * _geometric(r, m) / sp.UnevaluatedExpr(_geometric(r, n)))
    if p > 0:  # A**(p - 1) = (A**(+-1/n))**|m - n|
        root = sp.UnevaluatedExpr(big ** sp.Rational(1 if m > n else -1, n))
        if cancelled_last:
            return difference * sp.UnevaluatedExpr(root ** abs(m - n) * ratio)
        return sp.UnevaluatedExpr(difference * root ** abs(m - n)) * ratio
    root = sp.UnevaluatedExpr(small ** sp.Rational(-1, n))
    share = difference / sp.UnevaluatedExpr(big)
    if cancelled_last:
        return -share * sp.UnevaluatedExpr(ratio * root**m)
    return -sp.UnevaluatedExpr(sp.UnevaluatedExpr(share) * ratio) * root**m


def _rewritten(node: sp.Expr, cancelled_last: bool) -> sp.Expr:
    """`node`, a sum, with its first pair c*A**p - c*B**p written as above."""
    for first, second in itertools.combinations(node.args, 2):
        one, two = _power_term(first), _power_term(second)
        if one is None or two is None:
            continue
        (c, big, p), (k, small, q) = one, two
        if p != q or c != -k or big == small:
            continue
        difference = sp.cancel(sp.expand(big - small))
        if sp.count_ops(difference) > max(sp.count_ops(big), sp.count_ops(small)):
            continue  # nothing cancels in A - B: the rewrite only costs
        ordered = sp.Piecewise(
            (difference_of_powers(big, small, p, c, difference, cancelled_last), difference >= 0),
            (difference_of_powers(small, big, p, -c, -difference, cancelled_last), True),
        )
        return node - first - second + ordered
    return node


def power_difference_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """expr with each cancelling difference of like fractional powers rewritten, with the
    cancelled factor multiplied in between and last (`difference_of_powers`)."""
    if not any(e.exp.is_Rational and not e.exp.is_Integer for e in expr.atoms(sp.Pow)):
        return []
    out = []
    for label, last in (("power difference", False), ("power difference cancelled last", True)):
        form = expr.replace(
            lambda n: n.is_Add and len(n.args) >= 2, lambda n, k=last: _rewritten(n, k)
        )
        if form != expr:
            out.append((label, form))
    return out
