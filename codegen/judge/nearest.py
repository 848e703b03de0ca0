"""An arb ball rounded to the nearest float of a dtype, when both its ends round alike.

In: a finite python-flint `arb` and a dtype ("float32" or "float64"). Out: `nearest`, the
float both ends of the ball round to (to nearest, ties to even; subnormal results 0.0, as
the frameworks flush them), or None when they round apart and more precision is needed.

The exact rule works on the ends' integer mantissas and exponents (`round_dyadic`). It is
most of the cost of a reference point, so `nearest` first tries the float nearest the
ball's midpoint: where the whole ball lies strictly between the rounding boundaries either
side of that float, both ends round to it, and the answer is the exact rule's. A ball many
gaps wide rounds apart without a look at its ends (most balls at a reference's first
precision). Anything else (a ball across or touching a boundary, a value near the
subnormal or overflow range) takes the exact rule.
"""

from __future__ import annotations

import math
import struct

FORMAT = {"float32": (24, -126, 127), "float64": (53, -1022, 1023)}  # precision, emin, emax
_NORMAL = {  # |value| range where the midpoint's float and its neighbours are normal
    dtype: (math.ldexp(1.0, emin + 1), math.ldexp(1.0, emax - 1))
    for dtype, (_, emin, emax) in FORMAT.items()
}

# A radius this many times |midpoint| (32 gaps of the format, where a rounding interval
# spans at most 2) puts the ends in different rounding intervals, neither of them 0 or inf
# inside the range above: far more margin than the float conversions of midpoint and radius
# lose.
_WIDE = {dtype: math.ldexp(1.0, 5 - bits) for dtype, (bits, _, _) in FORMAT.items()}


def round_dyadic(man: int, exp: int, dtype: str) -> float:
    """man * 2**exp rounded to nearest, ties to even, in `dtype`; subnormal results are 0.0."""
    prec, emin, emax = FORMAT[dtype]
    sign, m = (-1.0 if man < 0 else 1.0), abs(man)
    top = m.bit_length() - 1 + exp
    if m == 0 or top < emin - 1:  # below half the smallest normal: 0 however it rounds
        return 0.0
    if top > emax + 1:
        return sign * math.inf
    shift = max(top, emin) - prec + 1 - exp  # the IEEE quantum of this binade, in bits
    if shift > 0:
        q, r, half = m >> shift, m & ((1 << shift) - 1), 1 << (shift - 1)
        m, exp = q + (r > half or (r == half and q & 1)), exp + shift
    top = m.bit_length() - 1 + exp
    if m == 0 or top < emin:
        return 0.0
    return sign * math.inf if top > emax else sign * math.ldexp(m, exp)


_SINGLE = struct.Struct("f")


def _in_format(value: float, bits: int) -> float:
    """A float64 in the normal range of the format rounded to it (to nearest, ties to even)."""
    return value if bits == 53 else _SINGLE.unpack(_SINGLE.pack(value))[0]


def _strictly_rounds_to(ball, c: float, bits: int) -> bool:
    """True if every point of `ball` is strictly nearer `c` (a normal float of `bits`
    significant bits) than either neighbour of `c` in that format."""
    m, e = math.frexp(abs(c))
    up = math.ldexp(1.0, e - bits)  # the gap above |c|; below a power of two it halves
    down = up / 2 if m == 0.5 else up
    below, above = (down / 2, up / 2) if c > 0 else (up / 2, down / 2)
    gap = ball - c  # an enclosure of every point's distance from c: sound at any precision
    return bool(gap > -below and gap < above)


def nearest(ball, dtype: str) -> float | None:
    """The float of `dtype` both ends of the finite `ball` round to, or None."""
    bits, (small, large) = FORMAT[dtype][0], _NORMAL[dtype]
    mid = float(ball.mid())
    if small < abs(mid) < large:
        if float(ball.rad()) > abs(mid) * _WIDE[dtype]:
            return None
        c = _in_format(mid, bits)
        if small < abs(c) < large and _strictly_rounds_to(ball, c, bits):
            return c
    return exactly(ball, dtype)


def exactly(ball, dtype: str) -> float | None:
    """`nearest` by the exact rule alone: each end's mantissa and exponent rounded."""
    lo, hi = (tuple(int(z) for z in end.man_exp()) for end in (ball.lower(), ball.upper()))
    a, b = round_dyadic(*lo, dtype), round_dyadic(*hi, dtype)
    return a if a == b else None
