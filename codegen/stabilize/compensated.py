"""Compensated sums: forms that add back the rounding error of a - b (issue 13, kind 5).

In: a candidate form and the spec's arg symbols. Out: the form with each rounded sum of two
args, u = a + b or a - b, corrected to first order, G(fl(u)) + G'(fl(u)) * (u - fl(u)),
where G is the form as a function of u and the error of fl(u) is found exactly by TwoSum
(`front/rounding.compensation`). exp(-(x - y)**2/2) loses about |x - y|**2 ulps to
rounding x - y alone, and sigmoid(x - y)'s f'' about |x - y|: the form is exact in u, u is
not. The correction is G'(u) * e with |e| <= ulp(u)/2, so its own few bits of error cost
nothing. The stabilizer offers it for the best measured forms of a partial whose best form
misses the promise's margin or is off by more than a few ulps at the p99 (`search`), and
ships it only where it measures better.

Also here: `exact_exponents`, the same idea for a rounded exponent. u**(1/3) is computed as
pow(u, fl(1/3)), which is off by |1/3 - fl(1/3)| * |log u| relative, |log u|/6 ulps in
float64, 5.8 bits at u = 1e300; each such power becomes u**h + (u**(1/3) - u**h) with h a
float in both dtypes and the difference computed without cancellation
(`front/rounding.exponent_error`).
"""

from __future__ import annotations

import sympy as sp

from codegen.derive import in_grammar
from codegen.front.rounding import compensation, exponent_error, exponent_head, opened


def _power_of_two(c: sp.Expr) -> bool:
    magnitude = abs(c)
    return bool(
        magnitude.is_Rational
        and magnitude != 0
        and (magnitude.p & (magnitude.p - 1)) == 0
        and (magnitude.q & (magnitude.q - 1)) == 0
    )


def _base_sum(node: sp.Expr, args: tuple[sp.Symbol, ...]) -> tuple[sp.Expr, sp.Add] | None:
    """(c, u) for a sum of two args times a power of two, node = c*u: x - y is (1, x - y),
    -x/2 + y/2 is (-1/2, x - y); scaling by c is exact, so fl(c*u) = c*fl(u)."""
    if not (node.is_Add and len(node.args) == 2):
        return None
    content, base = node.as_content_primitive()
    terms = sp.Add.make_args(base)
    if not _power_of_two(content) or len(terms) != 2:
        return None
    if not all(t in args or -t in args for t in terms):
        return None
    signs = [b for b in (base, -base) if not b.could_extract_minus_sign()] or [base, -base]
    canonical = min(signs, key=sp.default_sort_key)
    return content * (1 if canonical == base else -1), canonical


def rounded_sums(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[sp.Add]:
    """The sums of two args in expr (x - y, y - x, x/2 - y/2 are one sum), each once."""
    found = {_base_sum(node, args) for node in sp.preorder_traversal(expr)} - {None}
    return sorted({u for _, u in found}, key=sp.default_sort_key)


def compensated(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> sp.Expr | None:
    """expr plus the first-order effect of each rounded sum's error, or None if it has none."""
    sums = rounded_sums(expr, args)
    if not sums:
        return None
    names = {u: sp.Dummy(f"u{i}", real=True) for i, u in enumerate(sums)}

    def as_name(node):
        content, u = _base_sum(node, args)
        return content * names[u]

    # the sums are named first, where the form computes them (an opened (x - y) - H is one
    # sum of three terms); the correction is differentiated with its guards opened (SymPy
    # cannot differentiate through UnevaluatedExpr); it needs only a few correct bits
    named = expr.replace(lambda n: _base_sum(n, args) is not None, as_name)
    in_sums = opened(named)
    back = {name: u for u, name in names.items()}
    try:
        slopes = [in_grammar(sp.diff(in_sums, names[u])).xreplace(back) for u in sums]
    except (ValueError, TypeError):  # a function of ours without a derivative in some arg
        return None
    correction = sp.Add(*(compensation(slope, *u.args) for u, slope in zip(sums, slopes)))
    return None if correction == 0 else sp.Add(expr, correction, evaluate=False)


def _rounded_power(node: sp.Expr) -> bool:
    p = node.exp if node.is_Pow else None
    return (
        p is not None
        and p.is_Rational
        and not p.is_Integer
        and not node.base.is_number
        and exponent_head(p) != p
    )


def exact_exponents(expr: sp.Expr) -> sp.Expr | None:
    """expr with each power whose exponent is not a float (u**(1/3)) plus what pow misses
    of it, or None if it has none."""
    if not any(_rounded_power(n) for n in sp.preorder_traversal(expr)):
        return None

    def exact(n):
        head = n.base ** exponent_head(n.exp)
        return sp.Add(head, exponent_error(n.base, n.exp), evaluate=False)

    return expr.replace(_rounded_power, exact)
