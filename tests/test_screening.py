"""Screening (stabilize/screening.py): a chosen form is tried at points it was not chosen on,
and the failures found there are what the choice is made again knowing.

selu's negative branch scales exp(x) by c = 1.7581: in float32, c*exp(x) is a normal number
down to x = -87.9 while exp(x) alone is subnormal (and flushed to 0) from x = -87.34 on. A
sample of a few hundred points rarely lands in that band of 0.6; screening's thousands do.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from sympy.codegen.cfunctions import log1p as log1p_of

from codegen.derive import derive
from codegen.front.spec import parse_spec_text
from codegen.judge import accuracy
from codegen.stabilize.measuring import Samples, evaluate
from codegen.stabilize.products import absorbed_forms
from codegen.stabilize.screening import SCREEN_POINTS, SCREEN_SEED, in_every_dtype, screened
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
TINY = float(np.finfo(np.float32).tiny)
# float32: c*exp(x) normal, exp(x) not (-87.80 to -87.3365), widened by 1e-4 for rounding
BAND = (math.log(TINY) - math.log(float(C)) - 1e-4, math.log(TINY) + 1e-4)


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
    found = screened(spec, partial.expr, in_every_dtype(naive), (naive,), samples, False)
    assert found is not None
    added = found.points["float32"][len(samples.points["float32"]) :, 0]
    assert len(added) >= 1 and np.all((added > BAND[0]) & (added < BAND[1]))
    assert np.allclose(found.exact["float32"][-len(added) :], _exact(added), rtol=1e-12)
    assert len(found.points["float64"]) == len(samples.points["float64"])  # none in float64


def test_a_form_without_failures_is_left_alone(spec_and_value):
    spec, partial = spec_and_value
    samples = _samples_outside_the_band(spec)
    naive = measure("naive", partial.expr, spec, samples, True)  # float32 in float64
    assert screened(spec, partial.expr, in_every_dtype(naive), (naive,), samples, True) is None


def test_each_form_is_screened_in_the_dtype_it_ships_in(spec_and_value):
    """float32's own form is screened in float32, float64's in float64 only: the naive form
    shipped in float64 alone is no reason to choose again, and shipped in float32 it is."""
    spec, partial = spec_and_value
    samples = _samples_outside_the_band(spec)
    naive = measure("naive", partial.expr, spec, samples, False)
    absorbed = dict(absorbed_forms(partial.expr))["absorb exp and constants"]  # exp(x + log(c))
    stable = measure("absorbed", absorbed, spec, samples, False)
    tried = (naive, stable)
    shipped = {"float32": stable, "float64": naive}
    assert screened(spec, partial.expr, shipped, tried, samples, False) is None
    shipped = {"float32": naive, "float64": stable}
    found = screened(spec, partial.expr, shipped, tried, samples, False)
    assert found is not None
    added = found.points["float32"][len(samples.points["float32"]) :, 0]
    assert len(added) >= 1 and np.all((added > BAND[0]) & (added < BAND[1]))


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


def _gelu_slope_exact(x: float) -> float:
    t = mpmath.mpf(x)
    return float(t * mpmath.npdf(t) + mpmath.ncdf(t))


def _gelu_slope(x: sp.Symbol) -> sp.Expr:
    """gelu's f' as SymPy writes it, after the erfc rule (erfc(-u) unevaluated: SymPy would
    write it 2 - erfc(u)). In float32, exp(-x**2/2) is flushed from x = -13.216 down, while
    f' is a normal number down to x = -13.33."""
    u = sp.sqrt(2) * x / 2
    return (
        sp.sqrt(2) * x * sp.exp(-(x**2) / 2) / (2 * sp.sqrt(sp.pi))
        + sp.erfc(-u, evaluate=False) / 2
    )


def test_a_band_narrower_than_the_screening_samples_spacing_is_found_at_its_edge():
    """No screening point falls in the band; bisecting the edge where the form's output
    stops being normal gives a point in it, where the form returns 0 and f' is normal."""
    from codegen.stabilize.screening import _past_edges

    derived = derive(parse_spec_text(GELU, "gelu.yaml"))
    spec, slope = derived.spec, derived.partials[1]
    form = _gelu_slope(spec.arg_symbols[0])
    assert sp.simplify((form - slope.expr).rewrite(sp.erf)) == 0
    pts = accuracy.sample_points(spec.domain, "float32", SCREEN_POINTS, SCREEN_SEED)
    band = (-13.34, -13.21)
    assert not np.any((pts[:, 0] > band[0]) & (pts[:, 0] < band[1]))  # the premise
    past = _past_edges(form, spec, pts, "float32", False)[:, 0]
    inside = past[(past > band[0]) & (past < band[1])]
    assert len(inside) == 1
    got = evaluate(form, spec, inside[:, None], "float32")[0]
    want = _gelu_slope_exact(float(inside[0]))
    assert got == 0.0 and abs(want) >= TINY


def test_edges_into_overflow_and_subnormal_inputs_are_not_screened(spec_and_value):
    """1.0507*x overflows one float32 ulp below where its exact value does (the constant is
    rounded): no form but float64 fixes that, and the sample's points around max**(1/k) are
    what finds overflows. c*expm1(x) is 0 at subnormal x, as every op on a CPU that flushes
    its inputs. Neither edge is screened."""
    from codegen.front.functions import expm1
    from codegen.stabilize.screening import _past_edges

    spec, _ = spec_and_value
    t = spec.arg_symbols[0]
    pts = np.array([[-1e-30], [-1e-45], [0.0], [3.0e38], [3.3e38]], dtype="float32")
    for form in (sp.Float(1.0507009873554805) * t, sp.Float(1.7580993408473768) * expm1(t)):
        assert len(_past_edges(form, spec, pts, "float32", False)) == 0


LOG1P = """\
name: log1p_x
args: [x]
expr: log(1 + x)
order: 1
domain:
  x: [0, 10]
"""


def _log1p_near_zero(spec) -> tuple[Samples, sp.Expr, sp.Expr]:
    """(a sample of x in [0, 0.05] only, a 4-term Taylor series of log(1 + x), log1p(x))."""
    points, exact = {}, {}
    for dtype in accuracy.DTYPES:
        x = np.linspace(0.0, 0.05, 200).astype(dtype)
        points[dtype] = x[:, None]
        exact[dtype] = np.array([float(mpmath.log1p(float(v))) for v in x])
    t = spec.arg_symbols[0]
    return Samples(points, exact), t - t**2 / 2 + t**3 / 3 - t**4 / 4, log1p_of(t)


def test_screening_adds_the_points_where_a_form_is_grossly_wrong():
    """A series chosen on a sample near 0 is a normal number everywhere, and grossly wrong
    (fewer than 4 right bits) from x = 0.8 on: screening finds such points in both dtypes,
    through the proxy's float64 outputs, and adds them with their exact values."""
    spec = derive(parse_spec_text(LOG1P, "log1p_x.yaml")).spec
    samples, series, log1p = _log1p_near_zero(spec)
    chosen = measure("series", series, spec, samples, False)
    proxy = measure("log", log1p, spec, samples, False)
    assert chosen.figures[0].keeps_promise()  # float32: the sample sees nothing wrong
    found = screened(
        spec,
        sp.log(1 + spec.arg_symbols[0]),
        in_every_dtype(chosen),
        (chosen, proxy),
        samples,
        False,
    )
    assert found is not None
    for dtype in accuracy.DTYPES:
        added = found.points[dtype][len(samples.points[dtype]) :, 0].astype(np.float64)
        exact = found.exact[dtype][len(samples.points[dtype]) :]
        assert len(added) >= 1
        assert np.allclose(exact, np.log1p(added), rtol=np.finfo(dtype).eps)  # dtype's rounding
        series_at = added - added**2 / 2 + added**3 / 3 - added**4 / 4
        assert np.all(np.abs(series_at - exact) > exact / 16)  # grossly wrong, each one


def test_a_proxy_grossly_wrong_where_the_form_is_right_adds_nothing():
    """The two disagree at the same points the other way round: the exact value sides with
    the chosen form, so nothing is added."""
    spec = derive(parse_spec_text(LOG1P, "log1p_x.yaml")).spec
    samples, series, log1p = _log1p_near_zero(spec)
    chosen = measure("log", log1p, spec, samples, False)
    proxy = measure("series", series, spec, samples, False)
    exact = sp.log(1 + spec.arg_symbols[0])
    assert screened(spec, exact, in_every_dtype(chosen), (chosen, proxy), samples, False) is None


SQUARE_TIMES_EXP = """\
name: square_times_exp
args: [x, y]
expr: y**2*exp(-x)
order: 1
domain:
  x: [0, 200]
  y: [1, 1e10]
"""


def test_an_edge_between_two_args_is_found_past_it():
    """y**2*exp(-x) as written is flushed in float32 from x = 87.34 on, where exp(-x) is,
    while its value is a normal number up to x = 87.34 + 2*log(y). A grid with no point in
    that band has flushed points and normal ones; bisecting between them finds points past
    the form's edge, inside the band."""
    from codegen.stabilize.screening import _past_edges

    spec = derive(parse_spec_text(SQUARE_TIMES_EXP, "square_times_exp.yaml")).spec
    x, y = spec.arg_symbols
    x_grid, y_grid = np.meshgrid([10.0, 60.0, 150.0, 200.0], [1.0, 1e3, 1e6, 1e10])
    pts = np.stack([x_grid.ravel(), y_grid.ravel()], axis=1).astype("float32")
    past = _past_edges(y**2 * sp.exp(-x), spec, pts, "float32", False).astype(np.float64)
    assert len(past) >= 1
    log_tiny = math.log(TINY)
    assert np.all(past[:, 0] > -log_tiny - 1e-3)  # exp(-x) flushed
    inside = 2 * np.log(past[:, 1]) - past[:, 0] > log_tiny  # y**2*exp(-x) normal
    assert inside.any()


def test_a_flush_at_the_smallest_normal_is_no_failure():
    """At an edge found by bisection the exact value is often the smallest normal number, and
    a form one ulp low is flushed there: not a failure screening adds. Twice that value
    flushed is one."""
    from codegen.stabilize.screening import _fails

    approx = np.zeros(3, dtype="float32")
    exact = np.array([TINY, TINY * (1 + 2e-7), 2 * TINY])
    assert _fails(approx, exact, "float32").tolist() == [False, False, True]


SQUARE_TIMES_TAIL = """\
name: square_times_tail
args: [x]
expr: x**2*exp(-x)
order: 1
domain:
  x: [0, 1000]
"""
# float64: exp(-x) flushed from x = 708.4 on, x**2*exp(-x) a normal number up to x = 721.6
TAIL_BAND = (-math.log(float(np.finfo(np.float64).tiny)), 721.7)


def _tail_samples_before_the_band() -> tuple:
    derived = derive(parse_spec_text(SQUARE_TIMES_TAIL, "square_times_tail.yaml"))
    spec, partial = derived.spec, derived.partials[0]
    points, exact = {}, {}
    for dtype in accuracy.DTYPES:
        x = np.linspace(0.0, 700.0, 200).astype(dtype)
        points[dtype] = x[:, None]
        exact[dtype] = np.array([float(mpmath.mpf(float(v)) ** 2 * mpmath.exp(-v)) for v in x])
    return spec, partial, Samples(points, exact)


def test_a_point_past_an_edge_is_judged_with_no_proxy_normal_there():
    """In float64 no wider form tells that x**2*exp(-x) is a normal number where exp(-x) is
    flushed, and here no other candidate does: the point past the edge is judged by its
    exact value alone."""
    spec, partial, samples = _tail_samples_before_the_band()
    naive = measure("naive", partial.expr, spec, samples, False)
    found = screened(spec, partial.expr, in_every_dtype(naive), (naive,), samples, False)
    assert found is not None
    added = found.points["float64"][len(samples.points["float64"]) :, 0]
    assert len(added) >= 1 and np.all((added > TAIL_BAND[0]) & (added < TAIL_BAND[1]))


def test_failures_the_choice_was_made_knowing_are_not_found_again():
    """Points already in the sample fail where no candidate fixes them; finding them again
    must not make the choice again."""
    spec, partial, samples = _tail_samples_before_the_band()
    naive = measure("naive", partial.expr, spec, samples, False)
    found = screened(spec, partial.expr, in_every_dtype(naive), (naive,), samples, False)
    assert screened(spec, partial.expr, in_every_dtype(naive), (naive,), found, False) is None
