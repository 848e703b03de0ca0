"""Differences of the log-gamma family, F_n(u) - F_n(u + d), as one function of hogen's own.

In: nothing. Out: a SymPy function class, `gamma_difference(n, u, d)`, with F_-1 = lgamma
and F_n = polygamma(n, .) for n >= 0, and a NumPy function. The stabilizer writes
`lgamma(a) - lgamma(a + b)` and `digamma(a) - digamma(a + b)` through it
(`stabilize/gamma.py`): both terms are large and close where b is small beside a, and
their rounded difference loses every digit. Its
lowering (`gamma_lowering.lower_gamma_difference`) computes the difference itself, through the
recurrence and the Stirling series, with d appearing only as a factor: no cancellation.
`fast_polygamma` is the float64 polygamma the NumPy mirror uses where it is accurate.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from codegen.judge import portable


def gamma_family(n, x) -> sp.Expr:
    """lgamma(x) for n = -1, polygamma(n, x) for n >= 0."""
    return sp.loggamma(x) if n == -1 else sp.polygamma(n, x)


class gamma_difference(sp.Function):  # noqa: N801 - SymPy function classes are lower case
    """F_n(u) - F_n(u + d): lgamma for n = -1, polygamma(n, .) for n >= 0."""

    nargs = 3

    def fdiff(self, argindex=1):
        n, u, d = self.args
        if argindex == 2:
            return gamma_difference(n + 1, u, d)
        if argindex == 3:
            return -gamma_family(n + 1, u + d)
        raise sp.ArgumentIndexError(self, argindex)

    @classmethod
    def eval(cls, n, u, d):
        if d.is_zero:
            return sp.S.Zero
        return None

    def _eval_rewrite_as_polygamma(self, n, u, d, **kwargs):
        return gamma_family(n, u) - gamma_family(n, u + d)

    def _eval_evalf(self, prec):
        return self.rewrite(sp.polygamma)._eval_evalf(prec)

    def _eval_is_real(self):
        return (
            True
            if all(a.is_positive for a in (self.args[1], self.args[1] + self.args[2]))
            else None
        )


_EULER = 0.5772156649015329
POLYGAMMA_TERMS = 12  # Bernoulli terms of the series; with T = 12 + n, under 2**-54 relative


def polygamma_series_coefficients(n: int) -> tuple[tuple[int, float], ...]:
    """(p, c) with psi_n(x) ~ sum c x**-p: (n-1)!/x**n + n!/(2 x**(n+1)) + the Bernoulli
    terms B_2k (2k+n-1)!/((2k)! x**(2k+n)), all times (-1)**(n+1)."""
    sign = (-1) ** (n + 1)
    terms = [(n, math.factorial(n - 1)), (n + 1, math.factorial(n) / 2)]
    for k in range(1, POLYGAMMA_TERMS + 1):
        ratio = math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        terms.append((2 * k + n, float(mpmath.bernoulli(2 * k)) * ratio))
    return tuple((p, sign * float(c)) for p, c in terms)


TAIL_TERMS = 10  # Bernoulli terms of the tail beyond the leading terms (gamma_lowering)


def tail_coefficients(n: int, terms: int = TAIL_TERMS) -> tuple[tuple[int, float], ...]:
    """(p, c) of Stirling's tail of F_n beyond its leading terms: sum c z**-p."""
    if n >= 1:
        return polygamma_series_coefficients(n)[2 : 2 + terms]
    bernoulli = [float(mpmath.bernoulli(2 * k)) for k in range(1, terms + 1)]
    if n == 0:  # digamma(z) ~ log z - 1/(2z) - sum B_2k / (2k z**2k)
        return tuple((2 * k, -bk / (2 * k)) for k, bk in enumerate(bernoulli, 1))
    # lgamma(z) ~ (z - 1/2) log z - z + log(2 pi)/2 + sum B_2k / (2k (2k - 1) z**(2k - 1))
    return tuple((2 * k - 1, bk / (2 * k * (2 * k - 1))) for k, bk in enumerate(bernoulli, 1))


def _series(n: int, z: np.ndarray) -> np.ndarray:
    """The asymptotic series of polygamma(n, z) (n >= 0), z >= 10, in float64."""
    if n == 0:
        tail = sum(c * z ** (-float(p)) for p, c in tail_coefficients(0, POLYGAMMA_TERMS))
        return portable.log(z) - 0.5 / z + tail
    return sum(c * z ** (-float(p)) for p, c in polygamma_series_coefficients(n))


def fast_polygamma(n: int, u: np.ndarray) -> np.ndarray:
    """polygamma(n, u) in float64 where a short formula is accurate to a few ulps: u below
    1e-8 (the pole's two terms), u from 10 on (the series) and, for n >= 1, u in between
    (the recurrence, whose terms all have one sign); NaN elsewhere, for the caller to fill.
    The NumPy mirror runs on thousands of points per candidate; mpmath alone is too slow."""
    u = np.asarray(u, dtype=np.float64)
    out = np.full(u.shape, np.nan)
    with np.errstate(all="ignore"):
        tiny = (u > 0) & (u < 1e-8)
        pole = (-1) ** (n + 1) * math.factorial(n) * u ** -(n + 1.0)
        out = np.where(tiny, pole + (-_EULER if n == 0 else float(mpmath.psi(n, 1))), out)
        big = np.isfinite(u) & (u >= 10)
        out = np.where(big, _series(n, np.where(big, u, 10.0)), out)
        if n >= 1:
            middle = (u >= 1e-8) & (u < 10)
            v = np.where(middle, u, 1.0)
            total = sum((v + j) ** -(n + 1.0) for j in reversed(range(10)))
            shifted = (-1) ** (n + 1) * math.factorial(n) * total + _series(n, v + 10)
            out = np.where(middle, shifted, out)
    return out
