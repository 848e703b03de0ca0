"""Rules for a difference of one function at two points, written through the points' difference.

In: a SymPy node (the rule engine, `rewriting`, offers every node). Out: the rewritten node,
or None where the rule does not apply. The rules are data (`DIFFERENCE_RULES`); their order
among the others is `rules.ORDER`.

softplus(a) - softplus(b) and sigmoid(a) - sigmoid(b) cancel where a and b are large and
near each other: softplus(x) - softplus(x - 1) rounds both to x at x = 1e17 and is 0 there,
not 1; sigmoid(x) - sigmoid(x - 1) is 0 at x = 40, not 7.3e-18. Each is written through
d = a - b, computed symbolically where a and b share terms, so nothing large is subtracted:
softplus differences where a - b loses terms of a and b (it is shorter than both, or has
fewer symbols: `_cancels`), sigmoid and tanh differences always (their form is a product of
accurate factors, and sigmoid(y) - sigmoid(-x) near x = y = 0 cancels too). With
a >= b (d >= 0), over the common denominator (1 + e^a)*(1 + e^b):

- softplus(a) - softplus(b) = -log1p(expm1(-d)*sigmoid(a)), as (1 + e^b)/(1 + e^a) is
  1 + (e^-d - 1)*e^a/(1 + e^a);
- sigmoid(a) - sigmoid(b) = -expm1(-d)*sigmoid(a)*sigmoid(-b), as e^a - e^b is
  -e^a*(e^-d - 1).

Swapping a and b gives d < 0, so both are written with |d|, sign(d) and max(a, b): expm1 of
-|d| never overflows, and no factor is inf beside a 0. Where |d| is large and max(a, b) too,
log1p's argument w nears -1, and 1 + w, which rounds away, is the sum of positives
sigmoid(-max) + exp(-|d|)*sigmoid(max): its log is a logaddexp, taken where w < -1/2 (a
piecewise form: regimes on one arg of two did not find the line between them, and took a
series where it does not hold). tanh(a) - tanh(b) is 2*(sigmoid(2a) - sigmoid(2b)).

Derivatives of such differences are differences of a polynomial in the function:
sigmoid(a)*sigmoid(-a) - sigmoid(b)*sigmoid(-b) is P(s_a) - P(s_b) with P(s) = s - s**2
(sigmoid(-w) = 1 - sigmoid(w)). Any P(u) - P(v) is (u - v)*Q(u, v), Q exact polynomial
division, so `polynomial_difference` writes it as (f(a) - f(b))*Q, and the rules above then
take f(a) - f(b) and the complements in Q: here (s_a - s_b)*(sigmoid(-a) - s_b).
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import sigmoid, softplus
from codegen.stabilize.rewriting import Rule, opposite_pair


def _shorter_difference(node, func) -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr, sp.Expr] | None:
    """(c, a, b, d = a - b, the other terms) for c*func(a) - c*func(b) + others, where a - b
    loses terms of a and b (`_cancels`); else None."""
    found = opposite_pair(node, func)
    if found is None:
        return None
    c, a, b, others = found
    return (c, a, b, a - b, others) if _cancels(a, b) else None


def _cancels(a: sp.Expr, b: sp.Expr) -> bool:
    """Whether a - b loses terms of a and b: it is shorter than both together, or it has
    fewer symbols (x - y less x + y is -2*y)."""
    d = a - b
    fewer_symbols = d.free_symbols < a.free_symbols | b.free_symbols
    return fewer_symbols or sp.count_ops(d) < sp.count_ops(a) + sp.count_ops(b)


def _refused_by_sympy(rule):
    """`rule`, returning None where SymPy refuses to build its form: Max and Min raise on
    args not known to be real (an unevaluated x*(-x) of the monomial forms)."""

    def guarded(node):
        try:
            return rule(node)
        except (TypeError, ValueError):
            return None

    guarded.__doc__ = rule.__doc__
    return guarded


@_refused_by_sympy
def _softplus_difference(node):
    """c*softplus(a) - c*softplus(b) -> -c*sign(d)*log1p(w), w = expm1(-|d|)*sigmoid(max),
    and where w < -1/2 (1 + w rounds away what it keeps), log(1 + w) as the log of the sum
    of positives sigmoid(-max) + exp(-|d|)*sigmoid(max), a logaddexp."""
    found = _shorter_difference(node, softplus)
    if found is None:
        return None
    c, a, b, d, others = found
    high, gap = sp.Max(a, b), sp.Abs(d)
    w = expm1(-gap) * sigmoid(high)
    # logaddexp(-softplus(high), -gap - softplus(-high)), its exponents' difference written
    # gap - high (softplus(u) - softplus(-u) is u): no softplus difference for this rule
    summed = sp.Max(-softplus(high), -gap - softplus(-high)) + softplus(-sp.Abs(gap - high))
    # w is in (-1, 0]: |w| < 1/2 is w > -1/2, a condition SymPy can rebuild where it does not
    # know w is real (the monomial forms' unevaluated x*(-x))
    log_of_1_plus_w = sp.Piecewise((log1p(w), sp.Abs(w) < HALF), (summed, True))
    return -c * sp.sign(d) * log_of_1_plus_w + others


HALF = sp.Rational(1, 2)


@_refused_by_sympy
def _sigmoid_difference(node):
    """c*sigmoid(a) - c*sigmoid(b) -> c*`sigmoid_gap(a, b)`."""
    found = opposite_pair(node, sigmoid)  # any two: the form is as cheap and never worse
    if found is None:
        return None
    c, a, b, others = found
    return c * sigmoid_gap(a, b) + others


def sigmoid_gap(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """sigmoid(a) - sigmoid(b) as -sign(d)*expm1(-|d|)*sigmoid(max(a, b))*sigmoid(-min(a, b)),
    d = a - b."""
    d = a - b
    return -sp.sign(d) * expm1(-sp.Abs(d)) * sigmoid(sp.Max(a, b)) * sigmoid(-sp.Min(a, b))


@_refused_by_sympy
def _tanh_difference(node):
    """c*tanh(a) - c*tanh(b) -> 2c*`sigmoid_gap(2a, 2b)`."""
    found = opposite_pair(node, sp.tanh)
    if found is None:
        return None
    c, a, b, others = found
    return 2 * c * sigmoid_gap(2 * a, 2 * b) + others


# f(-w) in terms of f(w), for the functions whose differences the rules above take (SymPy
# writes tanh(-w) as -tanh(w) itself)
_REFLECTED = {sigmoid: lambda w: 1 - sigmoid(w), sp.tanh: lambda w: -sp.tanh(w)}


def _reflected(node: sp.Expr) -> sp.Expr:
    """`node` with each f(-w) of `_REFLECTED` written through f(w)."""

    def flip(application):
        w = application.args[0]
        return _REFLECTED[application.func](-w) if w.could_extract_minus_sign() else application

    return node.replace(lambda n: n.func in _REFLECTED, flip)


def _polynomial_difference(node):
    """P(f(a)) - P(f(b)) -> (f(a) - f(b))*Q(f(a), f(b)) for a polynomial P of degree 2 or
    more, f one of `_REFLECTED`, where a - b loses terms of a and b (`_cancels`)."""
    if not node.is_Add or not node.has(*_REFLECTED):
        return None
    plain = _reflected(node)
    for func in _REFLECTED:
        found = _two_applications(plain, func)
        if found is not None:
            return found
    return None


def _two_applications(node: sp.Expr, func) -> sp.Expr | None:
    """`node` as (f(a) - f(b))*Q where it is P(f(a)) - P(f(b)), f = `func`; else None."""
    applications = sorted(
        {n for n in node.atoms(sp.Function) if n.func is func}, key=sp.default_sort_key
    )
    if len(applications) != 2:
        return None
    fa, fb = applications
    if not _cancels(fa.args[0], fb.args[0]):
        return None
    u, v = sp.Dummy("u"), sp.Dummy("v")
    in_uv = node.xreplace({fa: u, fb: v})
    try:  # an unevaluated product is not commutative to Poly
        poly = sp.Poly(in_uv, u, v) if in_uv.is_polynomial(u, v) else None
    except sp.PolynomialError:
        return None
    if poly is None or poly.total_degree() < 2:
        return None
    if sp.expand(in_uv + in_uv.xreplace({u: v, v: u})) != 0:  # antisymmetric: not P(u) - P(v)
        return None
    quotient = sp.quo(poly, sp.Poly(u - v, u, v)).as_expr()
    return (fa - fb) * sp.factor(quotient).xreplace({u: fa, v: fb})


DIFFERENCE_RULES = (
    Rule(
        "softplus_difference",
        "softplus(a) - softplus(b) = -sign(d) log(1 + expm1(-|d|) sigmoid(max(a, b))), d = a - b",
        _softplus_difference,
    ),
    Rule(
        "sigmoid_difference",
        "sigmoid(a) - sigmoid(b) = -sign(d) expm1(-|d|) sigmoid(max(a, b)) sigmoid(-min(a, b))",
        _sigmoid_difference,
    ),
    Rule("tanh_difference", "tanh(a) - tanh(b) = 2 (sigmoid(2a) - sigmoid(2b))", _tanh_difference),
    Rule(
        "polynomial_difference",
        "P(f(a)) - P(f(b)) = (f(a) - f(b)) Q(f(a), f(b)), Q = (P(u) - P(v))/(u - v)",
        _polynomial_difference,
    ),
)
