"""Cases of the rules of `codegen.stabilize.rules_logsumexp`, for tests/test_rules.py.

Expected rewrites written by hand from the fold the module documents: the constant exponent
first, then the others in SymPy's order of the sum's terms; a product's exps shift the
exponents of the sum it divides by.
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import log1p

from codegen.front.functions import softplus

x, y = sp.symbols("x y", real=True)


def _logaddexp(a, b):
    return sp.Max(a, b) + softplus(-sp.Abs(a - b))


# log(1 + exp(x) + exp(y)): softplus(x) first, then y
LSE_1XY = _logaddexp(softplus(x), y)

REWRITES = {
    "logsumexp": (
        (sp.log(1 + sp.exp(x) + sp.exp(y)), LSE_1XY),
        (log1p(sp.exp(x) + sp.exp(y)), LSE_1XY),
        (
            sp.log(2 + sp.exp(x) + 3 * sp.exp(2 * y)),
            # SymPy orders the sum exp(x) + 3*exp(2*y) + 2: log(2), then 2*y + log(3), then x
            _logaddexp(_logaddexp(sp.log(2), 2 * y + sp.log(3)), x),
        ),
    ),
    "softmax": (
        (1 / (1 + sp.exp(x) + sp.exp(y)), sp.exp(-LSE_1XY)),
        # exponents y, 0, x (as the fold's max lists them) less x: the 0 of x first
        (sp.exp(x) / (1 + sp.exp(x) + sp.exp(y)), sp.exp(-_logaddexp(softplus(y - x), -x))),
    ),
}
UNTOUCHED = {
    "logsumexp": (sp.log(sp.exp(x) + sp.exp(y) + x), sp.log(sp.exp(x) + sp.exp(y) + sp.exp(x) * y)),
    "softmax": (1 / (sp.exp(x) + sp.exp(y) + x), sp.exp(x) / (sp.exp(x) + sp.exp(y) + x)),
}
# 1 + exp(-40) + exp(-45) rounds to 1, and log(1) is 0; the value is 4.3e-18
# exp(800) overflows, and inf/inf is NaN; the value is 1/(1 + exp(-1) + exp(-800))
UNSTABLE_AT = {
    "logsumexp": (sp.log(1 + sp.exp(x) + sp.exp(y)), (-40.0, -45.0)),
    "softmax": (sp.exp(x) / (1 + sp.exp(x) + sp.exp(y)), (800.0, 799.0)),
}
