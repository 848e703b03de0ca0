"""Screening (stabilize/screening.py): a chosen form is tried at points it was not chosen on,
and the failures found there are what the choice is made again knowing.

selu's negative branch scales exp(x) by c = 1.7581: in float32, c*exp(x) is a normal number
down to x = -87.9 while exp(x) alone is subnormal (and flushed to 0) from x = -87.34 on. A
sample of a few hundred points rarely lands in that band of 0.6; screening's thousands do.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from codegen.derive import derive
from codegen.front.spec import parse_spec_text
from codegen.judge import accuracy
from codegen.stabilize.measuring import Samples, evaluate
from codegen.stabilize.screening import SCREEN_POINTS, SCREEN_SEED, screened
from codegen.stabilize.selection import choose, measure

SCALED_EXP = """\
name: scaled_exp
args: [x]
expr: 1.7580993408473768*exp(x)
order: 1
domain:
  x: [-100, 10]
"""
C = mpmath.mpf("1.7580993408473768")
BAND = (-87.9, -87.34)  # float32: c*exp(x) normal, exp(x) not


@pytest.fixture(scope="module")
def spec_and_value():
    derived = derive(parse_spec_text(SCALED_EXP, "scaled_exp.yaml"))
    return derived.spec, derived.partials[0]


def _exact(x: np.ndarray) -> np.ndarray:
    return np.array([float(C * mpmath.exp(mpmath.mpf(float(v)))) for v in x])


def _samples_outside_the_band(spec) -> Samples:
    points, exact = {}, {}
    for dtype in accuracy.DTYPES:
        x = np.linspace(-86.0, 10.0, 200).astype(dtype)
        points[dtype] = x[:, None]
        exact[dtype] = _exact(x)
    return Samples(points, exact)


def test_the_screening_sample_visits_the_band(spec_and_value):
    """The premise: seed 3's float32 points include some in the band."""
    spec, _ = spec_and_value
    x = accuracy.sample_points(spec.domain, "float32", SCREEN_POINTS, SCREEN_SEED)[:, 0]
    assert ((x > BAND[0]) & (x < BAND[1])).sum() >= 1


def test_screening_adds_the_failing_points_the_sample_missed(spec_and_value):
    spec, partial = spec_and_value
    samples = _samples_outside_the_band(spec)
    naive = measure("naive", partial.expr, spec, samples, False)
    assert naive.figures[0].failures == 0  # the sample alone sees nothing wrong
    found = screened(spec, partial.expr, naive, (naive,), samples, False)
    assert found is not None
    added = found.points["float32"][len(samples.points["float32"]) :, 0]
    assert len(added) >= 1 and np.all((added > BAND[0]) & (added < BAND[1]))
    assert np.allclose(found.exact["float32"][-len(added) :], _exact(added), rtol=1e-12)
    assert len(found.points["float64"]) == len(samples.points["float64"])  # none in float64


def test_a_form_without_failures_is_left_alone(spec_and_value):
    spec, partial = spec_and_value
    samples = _samples_outside_the_band(spec)
    naive = measure("naive", partial.expr, spec, samples, True)  # float32 in float64
    assert screened(spec, partial.expr, naive, (naive,), samples, True) is None


GELU = """\
name: gelu
args: [x]
expr: x/2*(1 + erf(x/sqrt(2)))
order: 1
"""
GELU_BAND = (-13.146, -13.004)  # float32: x*erfc(-x/sqrt(2))/2 normal, erfc not


def _gelu_exact(x: np.ndarray) -> np.ndarray:
    return np.array([float(v / 2 * mpmath.erfc(-v / mpmath.sqrt(2))) for v in map(float, x)])


def test_gelu_is_chosen_knowing_the_band_its_sample_missed():
    """The build's own sample has no float32 point in gelu's band, screening's has one; the
    value form chosen after it is a normal float32 number across the band, within the promise
    (p99 8 bits) of the exact value, and float32 stays in float32. Chosen on the sample alone,
    x*erfc(-x/sqrt(2))/2 returns 0 there."""
    derived = derive(parse_spec_text(GELU, "gelu.yaml"))
    spec, value = derived.spec, derived.partials[0]
    choice = choose(spec, value)
    assert not choice.promote_float32
    form = (choice.float32_form or choice.chosen).form
    x = np.linspace(GELU_BAND[0], GELU_BAND[1], 200).astype("float32")
    got = evaluate(form, spec, x[:, None], "float32").astype(np.float64)
    exact = _gelu_exact(x)
    assert np.all(np.abs(got - exact) <= 2.0**8 * np.spacing(np.abs(exact).astype(np.float32)))
