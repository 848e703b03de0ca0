"""Functions of exp(u) written on each side of u = 0 through one exp(-|u|/2), which never
overflows.

In: one partial (SymPy) and the spec's args. Out: (label, `Regimes`) candidates on the sign
of u whose two pieces are rational in the args and h = exp(-|u|/2). Over a denominator
positive for every input the regimes are `total`: both pieces compute the same h. Over one
with a power of expm1(-|u|), the pieces have a pole at u = 0 only, and the regimes are not
total: the stabilizer's regimes join them to a series there.

Why: every form of an op that sigmoid, silu, tanh or elu's derivatives reach is rational in
exp(u). Where u >= 0, exp(u) = 1/E, and where u < 0, exp(u) = E, with E = exp(-|u|) <= 1;
multiplied out over a common denominator, each piece is a polynomial over one in E, which
neither overflows nor cancels catastrophically where its terms share a sign. One exp then
serves the value and every order (issue 16: sigmoid's σ(|x|) = 1/(1 + E),
σ(-|x|) = E/(1 + E), σ(x)σ(-x) = E/(1 + E)**2). E is written h*h, and each product
multiplies one h at a time (`products.spread_forms`): x*E at x = -90 is a normal float32
where E alone is flushed to 0, and x*h*h keeps it.
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import expm1

from codegen.front.functions import sigmoid, softplus
from codegen.lower import Regimes
from codegen.stabilize.candidates import _as_exp, _common_exponent
from codegen.stabilize.products import spread_forms

MAX_MUL_POWER = 4  # h**k above it by squares: the lowering multiplies out powers up to the 4th
# and calls pow, a transcendental, for h**6
MAX_BRANCH_OPS = 400  # a piece longer than this after factoring is no cheaper than the rest


def sign_branch_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, Regimes]]:
    """`expr` as regimes on the sign of u, one exp(-|u|/2) for both pieces: factored in E
    and with its numerator expanded, each with products spread over h."""
    with_logs = expr.replace(softplus, lambda u: sp.log(1 + sp.exp(u)))  # tanh(softplus(x))
    written = _as_exp(with_logs).replace(sigmoid, lambda u: 1 / (1 + sp.exp(-u)))
    common = _common_exponent(written)
    if common is None:
        return []
    u, ratios = common
    coefficient, split = u.as_coeff_Mul()
    if split not in args or not coefficient.is_Rational:
        return []
    e = sp.Dummy("E", positive=True)
    toward = 1 if coefficient > 0 else -1  # the sign of split where u >= 0
    below = _piece(_on_side(written, split, -toward), ratios, e, 1)  # u < 0: exp(u) = E
    above = _piece(_on_side(written, split, toward), ratios, e, -1)  # u >= 0: exp(u) = 1/E
    if below is None or above is None:
        return []
    total = not (_has_pole(below, e) or _has_pole(above, e))
    if coefficient < 0:  # u < 0 is split > 0
        below, above = above, below
    out = []
    for name, shape in (("factored", _factored), ("expanded", _expanded)):
        pieces = tuple(_in_half_exp(_expm1_of(shape(p, e), e, u), e, u) for p in (below, above))
        if any(sp.count_ops(p) > MAX_BRANCH_OPS for p in pieces):
            continue
        if pieces[0] == pieces[1]:  # sigmoid(x)*sigmoid(-x): one piece, one input clip
            out.append((f"sign branches {name}", Regimes(split, (), pieces[:1], (), total)))
        else:
            out.append((f"sign branches {name}", Regimes(split, (0.0,), pieces, (), total)))
    return out


def _on_side(expr: sp.Expr, split: sp.Symbol, sign: int) -> sp.Expr:
    """`expr` where `split` has the sign `sign`: its sign(split) and |split| written out
    (tanh(x) - sign(x) is (E - 1)/(E + 1) + 1 = 2*E/(E + 1) for x < 0, with E = exp(2*x))."""
    return expr.xreplace({sp.sign(split): sign, sp.Abs(split): sign * split})


def _piece(expr: sp.Expr, ratios: dict, e: sp.Dummy, side: int) -> sp.Expr | None:
    """`expr` with each exp(k*u) as E**(side*k), made one rational function of E; None where
    an exp is left or it is not rational in E over a denominator that is positive for
    E >= 0, or is that times a power of E - 1 (a pole at u = 0 only, where E - 1 is written
    expm1(-|u|): x/(exp(x) - 1), Planck's x**3/(exp(x) - 1))."""
    substituted = expr.xreplace({sp.exp(a): e ** (side * k) for a, k in ratios.items()})
    if substituted.has(sp.exp) or not substituted.is_rational_function(e):
        return None
    numerator, denominator = sp.fraction(sp.cancel(sp.together(substituted)))
    rest = sp.Poly(denominator, e)
    while rest.degree() > 0 and rest.eval(1) == 0:
        rest = rest.quo(sp.Poly(e - 1, e))
    if not (_positive_in(rest) or _positive_in(-rest)):
        return None
    return numerator / denominator


def _positive_in(poly: sp.Poly) -> bool:
    """True if `poly`, a polynomial in E, has only positive numbers for coefficients and a
    positive constant term: then it is at least that constant for every E >= 0."""
    coefficients = poly.all_coeffs()
    return coefficients[-1] != 0 and all(c.is_number and c >= 0 for c in coefficients)


def _has_pole(piece: sp.Expr, e: sp.Dummy) -> bool:
    """True if `piece`'s denominator vanishes at E = 1 (u = 0)."""
    return sp.Poly(sp.fraction(piece)[1], e).eval(1) == 0


def _factored(piece: sp.Expr, e: sp.Dummy) -> sp.Expr:
    return sp.factor(piece, e)


def _expanded(piece: sp.Expr, e: sp.Dummy) -> sp.Expr:
    """The numerator as a polynomial in E with factored coefficients, over the factored
    denominator."""
    numerator, denominator = sp.fraction(piece)
    terms = sp.Poly(numerator, e).terms()
    expanded = sp.Add(*(sp.factor(c) * e**k for (k,), c in terms))
    return expanded / sp.factor(denominator)


def _expm1_of(piece: sp.Expr, e: sp.Dummy, u: sp.Expr) -> sp.Expr:
    """`piece` with its factors E - 1 as expm1(-|u|): 1 - E cancels where u is near 0
    (tanh(|u|/2) = -expm1(-|u|)/(1 + E))."""
    return piece.xreplace({e - 1: expm1(-sp.Abs(u)), 1 - e: -expm1(-sp.Abs(u))})


def _by_squares(h: sp.Expr, k: int) -> sp.Expr:
    """h**k as squares of lower powers, (h**(k//2))**2 * h**(k%2), each kept whole."""
    if k <= MAX_MUL_POWER:
        return h**k
    return sp.UnevaluatedExpr(_by_squares(h, k // 2)) ** 2 * h ** (k % 2)


def _in_half_exp(piece: sp.Expr, e: sp.Dummy, u: sp.Expr) -> sp.Expr:
    """`piece` with E = h*h, products spread one h at a time, and h = exp(-|u|/2), kept
    whole: SymPy would write h**2 as a second exp, exp(-|u|)."""
    h = sp.Dummy("h", positive=True)
    squared = piece.xreplace({e: h**2})
    spread = spread_forms(squared)
    form = spread[0][1] if spread else squared
    form = form.replace(
        lambda n: n.is_Pow and n.base == h and n.exp.is_Integer and n.exp > MAX_MUL_POWER,
        lambda n: _by_squares(h, int(n.exp)),
    )
    return form.xreplace({h: sp.UnevaluatedExpr(sp.exp(-sp.Abs(u) / 2))})
