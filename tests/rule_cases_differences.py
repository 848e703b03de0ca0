"""Cases of the rules of `codegen.stabilize.rules_differences`, for tests/test_rules.py.

Expected rewrites written by hand from the identities the module documents, with d = a - b:
softplus(a) - softplus(b) = -sign(d)*log(1 + w), w = expm1(-|d|)*sigmoid(max(a, b)),
sigmoid(a) - sigmoid(b) = -sign(d)*expm1(-|d|)*sigmoid(max(a, b))*sigmoid(-min(a, b)),
tanh(a) - tanh(b) = 2*(sigmoid(2a) - sigmoid(2b)), and P(u) - P(v) = (u - v)*Q(u, v).
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import sigmoid, softplus

x, y = sp.symbols("x y", real=True)


def _log_of_1_plus_w(gap, high):
    """log(1 + w), w = expm1(-gap)*sigmoid(high) in (-1, 0]: log1p(w) while |w| < 1/2, else
    the log of sigmoid(-high) + exp(-gap)*sigmoid(high) as max + softplus(-|difference|) of
    the logs -softplus(high) and -gap - softplus(-high), whose difference is gap - high."""
    w = expm1(-gap) * sigmoid(high)
    logs = sp.Max(-softplus(high), -gap - softplus(-high)) + softplus(-sp.Abs(gap - high))
    return sp.Piecewise((log1p(w), sp.Abs(w) < sp.Rational(1, 2)), (logs, True))


REWRITES = {
    "softplus_difference": (
        # d = 1: sign(1) = 1, |d| = 1, max(x, x - 1) = x
        (softplus(x) - softplus(x - 1), -_log_of_1_plus_w(1, x)),
        (
            2 * softplus(x + y) - 2 * softplus(x - y),
            -2 * sp.sign(2 * y) * _log_of_1_plus_w(sp.Abs(2 * y), sp.Max(x + y, x - y)),
        ),
    ),
    "sigmoid_difference": (
        (sigmoid(x) - sigmoid(x - 1), -expm1(-1) * sigmoid(x) * sigmoid(1 - x)),
        (
            sigmoid(y - x) - sigmoid(-x - y),
            -sp.sign(2 * y)
            * expm1(-sp.Abs(2 * y))
            * sigmoid(sp.Max(y - x, -x - y))
            * sigmoid(-sp.Min(y - x, -x - y)),
        ),
    ),
    "tanh_difference": (
        # d = 2: 2*(sigmoid(2x) - sigmoid(2x - 4)), sign 1, max 2x, min 2x - 4
        (sp.tanh(x) - sp.tanh(x - 2), -2 * expm1(-4) * sigmoid(2 * x) * sigmoid(4 - 2 * x)),
    ),
    "polynomial_difference": (
        # u**2 - v**2 = (u - v)*(u + v), then sigmoid_difference takes u - v
        (
            sigmoid(x) ** 2 - sigmoid(x - 1) ** 2,
            -expm1(-1) * sigmoid(x) * sigmoid(1 - x) * (sigmoid(x) + sigmoid(x - 1)),
        ),
        # sigmoid(-w) is 1 - sigmoid(w): P(s) = s - s**2, P(u) - P(v) = (u - v)*(1 - u - v),
        # and 1 - sigmoid(x) - sigmoid(x - 1) is sigmoid(-x) - sigmoid(x - 1), d = 1 - 2x
        (
            sigmoid(x) * sigmoid(-x) - sigmoid(x - 1) * sigmoid(1 - x),
            (-expm1(-1) * sigmoid(x) * sigmoid(1 - x))
            * (
                -sp.sign(1 - 2 * x)
                * expm1(-sp.Abs(1 - 2 * x))
                * sigmoid(sp.Max(-x, x - 1))
                * sigmoid(-sp.Min(-x, x - 1))
            ),
        ),
    ),
}
# not a difference of two (sigmoid and tanh: any two), or, for softplus and polynomials,
# a - b no shorter than a and b: nothing cancels in it
UNTOUCHED = {
    "softplus_difference": (softplus(x) - softplus(y), softplus(x * y) - softplus(x + y)),
    "sigmoid_difference": (sigmoid(x) + sigmoid(y), sigmoid(x) - 2 * sigmoid(y)),
    "tanh_difference": (sp.tanh(x) + sp.tanh(y), sp.tanh(x) - 2 * sp.tanh(y)),
    # not P(u) - P(v): symmetric in the two, or nothing cancels in a - b
    "polynomial_difference": (
        sigmoid(x) ** 2 + sigmoid(x - 1) ** 2,
        sigmoid(x) ** 2 - sigmoid(y) ** 2,
    ),
}
# softplus(1e17) and softplus(1e17 - 1) both round to 1e17: 0, not 1
# sigmoid(40) and sigmoid(39) both round to 1: 0, not 7.3e-18
UNSTABLE_AT = {
    "softplus_difference": (softplus(x) - softplus(x - 1), (1e17,)),
    "sigmoid_difference": (sigmoid(x) - sigmoid(x - 1), (40.0,)),
    # tanh(30) and tanh(28) both round to 1: 0, not 9.4e-25
    "tanh_difference": (sp.tanh(x) - sp.tanh(x - 2), (30.0,)),
    # sigmoid(40)**2 and sigmoid(39)**2 both round to 1: 0, not 1.5e-17
    "polynomial_difference": (sigmoid(x) ** 2 - sigmoid(x - 1) ** 2, (40.0,)),
}
