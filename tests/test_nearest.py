"""The reference's rounding of an arb ball to a float: the fast path against the exact rule,
and the exact rule against Python's correctly rounded Fraction -> float."""

from __future__ import annotations

import math
from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.judge.balls import precision
from codegen.judge.nearest import FORMAT, exactly, nearest, round_dyadic

DTYPES = tuple(FORMAT)


def _normal(dtype: str):
    """Normal floats of `dtype`, powers of two (where the gap below halves) as often as not."""
    info = np.finfo(dtype)
    bound = float(info.max)
    _, emin, emax = FORMAT[dtype]
    powers = st.builds(
        lambda sign, e: sign * math.ldexp(1.0, e), st.sampled_from([-1, 1]), st.integers(emin, emax)
    )
    floats = st.floats(-bound, bound, width=np.dtype(dtype).itemsize * 8)
    return st.one_of(powers, floats.filter(lambda v: abs(v) >= info.tiny))


@st.composite
def balls_near_boundaries(draw, dtype: str):
    """A ball around c + t * (half the gap above c), t in [-2, 2] dyadic, of a radius from 0 up
    to 64 gaps: across, touching and inside the rounding boundaries either side of c."""
    c = draw(_normal(dtype))
    bits = FORMAT[dtype][0]
    half_gap = math.ldexp(1.0, math.frexp(c)[1] - bits - 1)
    t = Fraction(draw(st.integers(-64, 64)), 32)
    rad = Fraction(draw(st.sampled_from([0, 1, 3, 17, 64, 2**11, 2**13, 2**15])), 256)
    mid = flint.arb(c) + flint.arb(t.numerator) * half_gap / t.denominator
    return flint.arb(mid, flint.arb(rad.numerator) * half_gap / rad.denominator)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_the_fast_path_agrees_with_the_exact_rule(dtype, data):
    with precision(256):
        ball = data.draw(balls_near_boundaries(dtype))
        assert nearest(ball, dtype) == exactly(ball, dtype)


@pytest.mark.parametrize("prec", [64, 128, 256])  # the references start at 64 bits
def test_a_ball_touching_a_boundary_is_not_rounded(prec):
    """1.5 + 2**-53 is the tie between 1.5 and its float64 neighbour above; below 1, a power
    of two, the gap halves. A ball that reaches a tie does not round, at any precision the
    reference runs at; a point on a tie goes to the even mantissa."""
    two = flint.arb(2)
    with precision(256):  # the balls exact
        cases = [
            (flint.arb(1.5, two**-53), None),
            (flint.arb(1.5, two**-54), 1.5),
            (flint.arb(1.5) + two**-53, 1.5),
            (flint.arb(1.5) + two**-53 + two**-60, 1.5 + 2.0**-52),
            (flint.arb(1, two**-54), None),
            (flint.arb(1, two**-55), 1.0),
            (flint.arb(1) - two**-54, 1.0),
            (flint.arb(1) - two**-54 - two**-60, 1.0 - 2.0**-53),
        ]
    with precision(prec):
        assert [nearest(ball, "float64") for ball, _ in cases] == [want for _, want in cases]


@settings(max_examples=400, deadline=None)
@given(man=st.integers(-(2**80), 2**80), exp=st.integers(-1200, 1000))
def test_the_exact_rule_is_correct_rounding_in_float64(man, exp):
    try:
        want = float(Fraction(man) * Fraction(2) ** exp)
    except OverflowError:  # rounds past the largest float
        want = math.copysign(math.inf, man)
    got = round_dyadic(man, exp, "float64")
    if abs(want) < np.finfo(np.float64).tiny:
        assert got == 0.0  # subnormal results flush to 0, as the frameworks flush them
    else:
        assert got == want


def test_the_exact_rule_overflows_to_inf():
    assert round_dyadic(1, 1024, "float64") == math.inf
    assert round_dyadic(-1, 128, "float32") == -math.inf
    assert round_dyadic(2**24 - 1, 104, "float32") == float(np.finfo(np.float32).max)
