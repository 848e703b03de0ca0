"""The rounding error of a sum, times a slope, as a function of hogen's own.

In: nothing. Out: a SymPy function class, `compensation(slope, a, b)` = slope * ((a + b) -
fl(a + b)), and its NumPy mirror. In exact arithmetic the error is 0, so a form written with
it equals the derivative (the exact reference evaluates it as 0); in floating point it is
the part of a + b the rounded sum lost, found exactly by Knuth's TwoSum
(`composites.lower_compensation`), times the slope. The stabilizer writes
G(fl(a - b)) + compensation(G'(fl(a - b)), a, -b) where G amplifies the rounding of a - b
(`stabilize/compensated.py`). Where the product is not finite (the slope overflowed into
inf * 0 = NaN where G itself underflowed to 0) it is 0: G alone is what counts there.
"""

from __future__ import annotations

import numpy as np
import sympy as sp


class compensation(sp.Function):  # noqa: N801 - SymPy function classes are lower case
    """slope * ((a + b) - fl(a + b)): 0 in exact arithmetic, slope times the rounding error
    of a + b in floating point."""

    nargs = 3

    def fdiff(self, argindex=1):
        return sp.S.Zero  # identically 0; TwoSum's autodiff gradient is 0 too

    @classmethod
    def eval(cls, slope, a, b):
        if slope.is_zero or (a.is_number and b.is_number):
            return sp.S.Zero
        return None

    def _eval_evalf(self, prec):
        return sp.Float(0, prec)


def two_sum_compensation(slope: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """slope times the rounding error of a + b in the arrays' dtype (0 where not finite)."""
    with np.errstate(all="ignore"):
        s = a + b
        b_part = s - a
        product = slope * ((a - (s - b_part)) + (b - b_part))
        return np.where(np.abs(product) < np.inf, product, np.zeros_like(product))
