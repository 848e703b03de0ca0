"""Functions hogen computes from other ops: no framework kernel, or one that is not accurate.

In: the lowering's builder and the lowered operands. Out: the steps that compute the function
from the frameworks' elementary ops, so TensorFlow, JAX and PyTorch run the same arithmetic
and the NumPy mirror measures exactly what they run.

- `hypot`: no single op in every framework; written with scaling.
- `erfcx`: no TensorFlow kernel.
- `lgamma(u)` from 2**30 on: PyTorch's float32 CPU kernel overflows before lgamma does.
- `polygamma(n, u)` for n >= 1 and u > 0: XLA's kernel (TensorFlow's `jit_compile=True` and
  every `jax.jit`) is 2.7 bits off on average in float32 and float64 alike (the eager kernels
  0.6), which breaks a mean of 1.5 bits on its own. hogen sums the recurrence
  psi_n(u) = psi_n(u + T) + (-1)**(n + 1) n! sum_{j < T} (u + j)**-(n + 1), smallest terms
  first, and the asymptotic (Bernoulli) series at u + T, or at u itself from T on.
- `compensation(slope, a, b)`: slope times the rounding error of a + b, by TwoSum.
- `square_head(u)`: round(256 u)/256, a head of u whose square is exact.
- `exponent_error(u, p)`: what pow(u, h) misses of u**p, h a float near p.
"""

from __future__ import annotations

import math

from codegen.front.gamma import polygamma_series_coefficients
from codegen.front.rounding import SQUARE_HEAD_SCALE


def lower_hypot(b, a, c) -> str:
    """sqrt(a**2 + c**2) as big * sqrt(1 + (small/big)**2): no overflow, no underflow."""
    if isinstance(a, float):  # hypot(1, x): the constant as a tensor of x's dtype
        a = b.emit("fill_like", c, a)
    if isinstance(c, float):
        c = b.emit("fill_like", a, c)
    a, c = b.emit("abs", a), b.emit("abs", c)
    big, small = b.emit("maximum", a, c), b.emit("minimum", a, c)
    ratio = b.emit("div_no_nan", small, big)
    return b.emit("mul", big, b.emit("sqrt", b.emit("add", 1.0, b.emit("square", ratio))))


ERFCX_SPLIT, ERFCX_TERMS = 3.0, 30


def lower_erfcx(b, u) -> str:
    """erfcx(u) with no TF kernel: below 3, exp(hi**2) * exp(lo * (u + hi)) * erfc(u), where
    hi = round(256 u) / 256 makes hi**2 exact in float32 and float64 alike (u**2 rounded
    would cost |u|**2 ulps); from 3 on, the Laplace continued fraction of erfc, 30 terms
    (under 1 ulp there). Each side sees its input clipped to its interval; NaN goes below.
    Below -27, where erfcx overflows every dtype, the lower side gives inf at -27.
    """
    low = b.emit("clip", u, -27.0, ERFCX_SPLIT)  # below -26.6 erfcx overflows float64
    hi = b.emit("div", b.emit("round", b.emit("mul", low, 256.0)), 256.0)
    lo_part = b.emit("mul", b.emit("sub", low, hi), b.emit("add", low, hi))
    scale = b.emit("mul", b.emit("exp", b.emit("square", hi)), b.emit("exp", lo_part))
    small = b.emit("mul", scale, b.emit("erfc", low))
    high = b.emit("clip", u, ERFCX_SPLIT, math.inf)
    fraction = high
    for k in range(ERFCX_TERMS, 0, -1):
        fraction = b.emit("add", high, b.emit("div", k / 2, fraction))
    large = b.emit("div", 1 / math.sqrt(math.pi), fraction)
    return b.emit("where_greater_equal", u, ERFCX_SPLIT, large, small)


def _polygamma_series(b, n: int, x) -> str:
    """The series at x, in Horner form in t = 1/x, times t**n (no t**p alone underflows
    where the sum is a normal number)."""
    t = b.emit("div", 1.0, x)
    coefficients = polygamma_series_coefficients(n)
    acc = coefficients[-1][1]
    for (p, c), (q, _) in zip(reversed(coefficients[:-1]), reversed(coefficients)):
        power = b.emit("pow", t, float(q - p)) if q - p > 1 else t
        acc = b.emit("add", c, b.emit("mul", acc, power))
    return b.emit("mul", acc, b.emit("pow", t, float(n)) if n > 1 else t)


def lower_polygamma(b, n: int, u) -> str:
    """psi_n(u), n >= 1: hogen's sum for u > 0 (the input where it is not is 1, so the
    unused side stays finite at every order), the framework's kernel elsewhere."""
    T = 12 + n
    positive = b.emit("where_greater", u, 0.0, u, 1.0)
    small, big = b.emit("minimum", positive, float(T)), b.emit("maximum", positive, float(T))
    total = b.emit("pow", b.emit("add", small, float(T - 1)), float(-(n + 1)))
    for j in reversed(range(T - 1)):
        shifted = b.emit("add", small, float(j)) if j else small
        total = b.emit("add", total, b.emit("pow", shifted, float(-(n + 1))))
    scaled = b.emit("mul", total, float((-1) ** (n + 1) * math.factorial(n)))
    recurrence = b.emit("add", scaled, _polygamma_series(b, n, b.emit("add", small, float(T))))
    ours = b.emit("where_less", positive, float(T), recurrence, _polygamma_series(b, n, big))
    return b.emit("where_greater", u, 0.0, ours, b.emit("polygamma", float(n), u))


LGAMMA_STIRLING_FROM = 2.0**30


def lower_lgamma(b, u) -> str:
    """lgamma(u): the kernel below 2**30, from there on Stirling's series,
    (u - 1/2)(log u - 1) + log(2 pi)/2 - 1/2 + 1/(12 u), whose next term is 2**-90 of it
    (and inf at inf). PyTorch's float32 CPU kernel returns inf from u = 4.04e36 on, where
    lgamma is 3.37e38, below float32's largest. NaN and u below 2**30 go to the kernel."""
    big = b.emit("maximum", u, LGAMMA_STIRLING_FROM)
    head = b.emit("mul", b.emit("sub", big, 0.5), b.emit("sub", b.emit("log", big), 1.0))
    constant = 0.5 * math.log(2 * math.pi) - 0.5
    stirling = b.emit("add", head, b.emit("add", b.emit("div", 1 / 12, big), constant))
    return b.emit("where_greater_equal", u, LGAMMA_STIRLING_FROM, stirling, b.emit("lgamma", u))


def lower_compensation(b, slope, p, r, subtract: bool = False) -> str:
    """slope * ((p + q) - fl(p + q)), q = -r if `subtract` else r. The error is exact, by
    Knuth's TwoSum (no branch, no FMA, any magnitudes): s = p + q, q' = s - p,
    e = (p - (s - q')) + (q - q'). With `subtract`, s is p - r, the step the corrected form
    computes too. 0 where the product is inf or NaN (s overflowed, or the slope did where
    the corrected form underflowed): the form alone is what counts there."""
    if isinstance(p, float):
        p = b.emit("fill_like", r, p)
    if isinstance(r, float):
        r = b.emit("fill_like", p, r)
    s = b.emit("sub" if subtract else "add", p, r)
    q_part = b.emit("sub", s, p)
    head = b.emit("sub", p, b.emit("sub", s, q_part))
    if subtract:  # q - q' = -(r + q')
        error = b.emit("sub", head, b.emit("add", r, q_part))
    else:
        error = b.emit("add", head, b.emit("sub", r, q_part))
    product = error if slope == 1.0 else b.emit("mul", slope, error)
    return b.emit("where_less", b.emit("abs", product), math.inf, product, 0.0)


def lower_square_head(b, u, limit: float) -> str:
    """round(256 u)/256 with u clipped to +-limit (front/rounding.square_head): a head whose
    square is exact. Scaling by 256 and 1/256 is exact; round is half to even everywhere."""
    clipped = b.emit("clip", u, -limit, limit)
    scale = SQUARE_HEAD_SCALE
    return b.emit("mul", b.emit("round", b.emit("mul", clipped, scale)), 1.0 / scale)


def lower_exponent_error(b, u, head: float, tail: float) -> str:
    """pow(u, head) * expm1(log(u) * tail), tail = p - head: u**p - u**head without
    cancellation; 0 where it is not finite (u = 0 or inf, where the power alone is right)."""
    error = b.emit(
        "mul", b.emit("pow", u, head), b.emit("expm1", b.emit("mul", b.emit("log", u), tail))
    )
    return b.emit("where_less", b.emit("abs", error), math.inf, error, 0.0)
