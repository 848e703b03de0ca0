"""codegen.accuracy against values known independently of it.

Expected values come from closed forms (Fractions, hand-derived limits, math.sqrt: IEEE
correctly rounded), from NumPy's own float stepping (np.nextafter, np.finfo) or from mpmath at
high precision rounded by `correctly_rounded`, never from the code under test, and never from
libm's or NumPy's exp and log, whose last bit may differ from one machine to another.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.front.functions import sigmoid, softplus
from codegen.judge import accuracy
from codegen.judge.accuracy import (
    DTYPES,
    Figures,
    bits_error,
    failure_mask,
    figures,
    ordinal,
    reference,
    sample_points,
)

x, y = sp.symbols("x y", real=True)
FULL = ((-math.inf, math.inf),)


def ref1(expr, value, dtype="float64"):
    """The reference of a one-argument expression at one point, as a Python float."""
    return float(reference(expr, (x,), np.array([[value]], dtype=dtype), dtype)[0])


def nearest(q: Fraction, dtype: str) -> float:
    """Round q to dtype by brute force: the closest of float(q) and its two neighbours."""
    t = np.dtype(dtype).type
    f = t(float(q))
    cands = [f, np.nextafter(f, t(-np.inf)), np.nextafter(f, t(np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(ordinal(c) % 2)))
    return float(best)


def correctly_rounded(compute, dtype: str = "float64") -> float:
    """`compute()` (mpmath) at 256 bits, rounded once to dtype: the value a reference must give."""
    with mpmath.workprec(256):
        value = mpmath.mpf(compute())
    man, exp = value.man_exp
    return nearest((-1 if value < 0 else 1) * abs(Fraction(man) * Fraction(2) ** exp), dtype)


# --- ordinal ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_ordinal_is_monotone_and_counts_each_float(dtype):
    t = np.dtype(dtype).type
    info = np.finfo(dtype)
    values = np.array(
        [-np.inf, -info.max, -1.0, -info.tiny, 0.0, info.tiny, 1.0, info.max, np.inf], dtype=dtype
    )
    assert np.all(np.diff(ordinal(values)) > 0)
    assert ordinal(np.array([t(-0.0)]))[0] == ordinal(np.array([t(0.0)]))[0] == 0
    one = np.array([t(1.0)])
    assert ordinal(np.nextafter(one, t(2)))[0] - ordinal(one)[0] == 1
    assert ordinal(np.nextafter(t(0), t(1)).reshape(1))[0] == 1  # smallest subnormal
    assert ordinal(np.nextafter(t(0), t(-1)).reshape(1))[0] == -1


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, width=32), st.floats(allow_nan=False, width=32))
def test_ordinal_orders_like_the_floats(a, b):
    for dtype in DTYPES:
        pair = np.array([a, b], dtype=dtype)
        oa, ob = ordinal(pair)
        assert (oa < ob) == (pair[0] < pair[1]) and (oa == ob) == (pair[0] == pair[1])


# --- bits of error ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,width", [("float32", 32), ("float64", 64)])
def test_bits_error_basic_cases(dtype, width):
    t = np.dtype(dtype).type
    exact = np.array([1.5, 1.5, 1.5, 1.5, np.inf, np.inf, -np.inf, np.nan], dtype=dtype)
    approx = np.array(
        [1.5, np.nextafter(t(1.5), t(2)), np.nan, np.inf, np.inf, 1.0, np.inf, 3.0], dtype=dtype
    )
    bits = bits_error(approx, exact, dtype)
    np.testing.assert_array_equal(bits[:7], [0, 1, width, width, 0, width, width])
    assert np.isnan(bits[7])
    assert bits.dtype == np.float64


def test_bits_error_counts_ulps_across_zero_and_casts_first():
    # 1.0 vs -1.0 in float32: 0x3F800000 floats on each side of zero.
    bits = bits_error(np.array([-1.0]), np.array([1.0], dtype=np.float32), "float32")
    assert bits[0] == pytest.approx(math.log2(1 + 2 * 0x3F800000))
    # A float64 approx is rounded to float32 before it is measured: 1 + 2^-30 becomes 1.
    assert bits_error(np.array([1 + 2**-30]), np.array([1.0], np.float32), "float32")[0] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_zero_is_matched_by_zero_and_subnormals_only(dtype):
    t = np.dtype(dtype).type
    tiny = np.finfo(dtype).tiny
    subnormal = np.nextafter(t(0), t(1))
    approx = np.array([0.0, -0.0, subnormal, -subnormal, tiny, -tiny], dtype=dtype)
    bits = bits_error(approx, np.zeros(6, dtype=dtype), dtype)
    np.testing.assert_array_equal(bits[:4], 0)
    assert bits[4] == bits[5] == pytest.approx(math.log2(1 + ordinal(np.array([tiny]))[0]))


def test_failure_mask():
    exact = np.array([1.0, 1.0, 1.0, 1.0, 0.0, np.inf, np.nan, 1e-310])
    approx = np.array([np.nan, np.inf, 0.0, 2.0, np.nan, np.nan, np.nan, 0.0])
    np.testing.assert_array_equal(
        failure_mask(approx, exact, "float64"),
        [True, True, True, False, False, False, False, False],
    )


def test_figures():
    t = np.float64
    exact = np.array([1.0, 2.0, 3.0, 4.0, np.nan])
    approx = np.array([1.0, 2.0, 3.0, np.nextafter(t(4), t(5)), 7.0])
    assert figures(approx, exact, "float64") == Figures(0.25, 1.0, 0, 4)
    assert figures(approx, exact, "float64").keeps_promise()
    broken = figures(np.array([np.nan, 2.0]), np.array([1.0, 2.0]), "float64")
    assert broken.failures == 1 and not broken.keeps_promise()
    assert figures(np.array([1.0]), np.array([np.nan]), "float64") == Figures(0, 0, 0, 0)


# --- reference -------------------------------------------------------------------------------


def test_softplus_far_out():
    f = sp.log(1 + sp.exp(x))
    # log(1 + e^-300) = e^-300 - e^-600/2 + ...: e^-300 to far more than 53 bits.
    assert ref1(f, -300.0) == correctly_rounded(lambda: mpmath.exp(-300))
    assert ref1(f, 1000.0) == 1000.0
    assert ref1(softplus(x), -300.0) == correctly_rounded(lambda: mpmath.exp(-300))
    assert ref1(f, 1e300) == 1e300


def test_second_derivative_of_softplus_far_out():
    f = sp.exp(x) / (1 + sp.exp(x)) ** 2
    e100 = correctly_rounded(lambda: mpmath.exp(100) / (1 + mpmath.exp(100)) ** 2)
    assert ref1(f, 100.0) == e100
    assert ref1(f, 800.0) == 0.0  # e^-800 is below the smallest normal float64
    assert ref1(f, 1e300) == 0.0  # exp(1e300) overflows arb at low precision
    assert ref1(f, -1e300) == 0.0
    d2 = sp.diff(sp.log(1 + sp.exp(x)), x, 2)  # SymPy's form cancels catastrophically
    assert ref1(d2, 30.0) == correctly_rounded(lambda: 1 / (4 * mpmath.cosh(15) ** 2))
    assert ref1(sigmoid(x) * sigmoid(-x), 1e5, "float32") == 0.0


def test_saturated_differences_are_resolved_through_complements():
    """erf(x + 1) - erf(x) at x = ±1000 is exp(-1e6)-small beside 1: no precision up to the
    ladder's top resolves it, the complements erfc(x) - erfc(x + 1) (x > 0) and
    erfc(-x - 1) - erfc(-x) (x < 0) do. Checked against mpmath written with erfc by hand."""
    f = sp.log(sp.erf(x + 1) - sp.erf(x))
    assert ref1(f, 1000.0) == correctly_rounded(
        lambda: mpmath.log(mpmath.erfc(1000) - mpmath.erfc(1001))
    )
    assert ref1(f, -1000.0) == correctly_rounded(
        lambda: mpmath.log(mpmath.erfc(999) - mpmath.erfc(1000))
    )
    assert ref1(sp.tanh(x) - sp.tanh(x - 2), 1e4) == 0.0  # 4e-8686: below the smallest normal
    assert ref1(sp.log(sp.tanh(x) - sp.tanh(x - 2)), 1e4) == correctly_rounded(
        lambda: mpmath.log(2 / (mpmath.exp(2 * 9998) + 1) - 2 / (mpmath.exp(2 * 10000) + 1))
    )


def test_removable_singularities_take_the_limit():
    s = sp.sin(x) / x
    assert ref1(s, 0.0) == 1.0
    assert ref1((sp.exp(x) - 1) / x, 0.0) == 1.0
    assert ref1(sp.diff(s, x), 0.0) == 0.0
    assert ref1(sp.diff(s, x, 2), 0.0) == -1 / 3  # sinc(x) = 1 - x^2/6 + ...
    assert ref1(sp.diff(s, x, 2), 0.0, "float32") == float(np.float32(-1 / 3))
    assert ref1(x * sp.log(x), 0.0) == 0.0


def test_points_without_a_real_value_are_not_scored():
    assert math.isnan(ref1(sp.log(x), -1.0))
    assert math.isnan(ref1(sp.log(x), 0.0))  # -inf is not a finite limit
    assert math.isnan(ref1(1 / x, 0.0))  # the two sides disagree
    assert math.isnan(ref1(sp.sqrt(x), -4.0))
    assert math.isnan(ref1(sp.asin(x), 2.0))
    assert math.isnan(ref1(sp.log(sp.sin(x)), -1.0))


def test_powers_and_overflow():
    assert ref1(x**3, -2.0) == -8.0
    assert ref1(x**-2, -2.0) == 0.25
    assert ref1(x ** sp.Rational(3, 2), 4.0) == 8.0
    assert ref1(2**x, 0.5) == math.sqrt(2)
    assert ref1(sp.exp(x), 88.0, "float32") == correctly_rounded(lambda: mpmath.exp(88), "float32")
    assert ref1(sp.exp(x), 89.0, "float32") == math.inf
    assert ref1(-sp.exp(x), 710.0) == -math.inf
    assert ref1(sp.exp(sp.exp(x)), 20.0) == math.inf  # exp of 4.9e8


def test_integer_powers_of_a_ball_around_zero():
    """log(1 + exp(-20000)) = 1e-8686 is a ball around 0 at any precision the reference
    tries; its square is below float64's smallest subnormal, not NaN (python-flint's own **
    answers NaN there). Two args, so no SymPy limit stands in for the value."""
    square = y * sp.log(1 + sp.exp(x)) ** 2
    assert reference(square, (x, y), np.array([[-20000.0, 1.0]]), "float64")[0] == 0.0
    cube = y * sp.log(1 + sp.exp(x)) ** sp.Rational(3, 1) / (1 + x**2)
    assert reference(cube, (x, y), np.array([[-20000.0, -1.0]]), "float32")[0] == 0.0


def test_float32_rounding_is_not_double_rounding():
    # 1 + 2^-24 is halfway between the float32s 1 and 1 + 2^-23; a hair above it rounds up.
    q = Fraction(1) + Fraction(1, 2**24) + Fraction(1, 2**80)
    up = np.nextafter(np.float32(1), np.float32(2))
    assert abs(Fraction(float(up)) - q) < abs(Fraction(1) - q)
    assert np.float32(float(q)) == 1.0  # rounding through float64 gets it wrong
    expr = x + sp.Rational(1, 2**24) + sp.Rational(1, 2**80)
    assert ref1(expr, 1.0, "float32") == float(up)
    assert ref1(x + sp.Rational(1, 2**24), 1.0, "float32") == 1.0  # the tie goes to even


@settings(max_examples=60, deadline=None)
@given(st.fractions(min_value=Fraction(-(10**30)), max_value=Fraction(10**30)))
def test_constants_round_to_nearest(q):
    for dtype in DTYPES:
        got = ref1(x + sp.Rational(q.numerator, q.denominator), 0.0, dtype)
        if abs(q) >= Fraction(1, 10**30):
            assert got == nearest(q, dtype)


def test_several_arguments():
    pts = np.array([[2.0, 3.0], [1e300, 1e300], [-50.0, 50.0]])
    got = reference(sigmoid(x - y) * x * y, (x, y), pts, "float64")
    assert got[0] == pytest.approx(6 / (1 + math.e))
    assert got[1] == math.inf  # 1e600 / 2 overflows
    assert got[2] == correctly_rounded(lambda: -2500 / (1 + mpmath.exp(100)))
    nan = reference(sp.sin(x) / x + y, (x, y), np.array([[0.0, 1.0]]), "float64")
    assert math.isnan(nan[0])  # limits are taken for one argument only


def test_max_min_and_logaddexp():
    from sympy.codegen.numpy_nodes import logaddexp

    pts = np.array([[-1.0, -2.0], [3.0, 1.0]])
    np.testing.assert_array_equal(reference(sp.Max(x, y, 0), (x, y), pts, "float64"), [0, 3])
    np.testing.assert_array_equal(reference(sp.Min(x, y), (x, y), pts, "float64"), [-2, 1])
    lae = reference(logaddexp(x, y), (x, y), np.array([[1000.0, 1000.0], [-1e300, 5.0]]), "float64")
    np.testing.assert_array_equal(lae, [correctly_rounded(lambda: 1000 + mpmath.log(2)), 5.0])


def test_unknown_functions_are_named():
    with pytest.raises(TypeError, match="gamma"):
        reference(sp.gamma(x), (x,), np.array([[1.0]]), "float64")


def test_reference_matches_mpmath_over_sample_points():
    pts = sample_points(FULL, "float64", n=300)
    got = reference(sp.erfc(x) * sp.exp(x), (x,), pts, "float64")
    with mpmath.workprec(200):
        for v, r in zip(pts[:, 0], got, strict=True):
            if abs(v) < 1e5:  # mpmath's erfc gives up beyond
                want = float(mpmath.erfc(float(v)) * mpmath.exp(float(v)))
                assert r == (0.0 if abs(want) < np.finfo(np.float64).tiny else want)


def test_typical_reference_is_fast():
    import time

    pts = sample_points(FULL, "float64")
    start = time.thread_time()  # CPU time of this thread: a guard against runaway work
    reference(sp.exp(x) / (1 + sp.exp(x)) ** 2, (x,), pts, "float64")
    assert time.thread_time() - start < 5  # about 0.02 s here; generous for slow machines


# --- sample points ---------------------------------------------------------------------------


def test_sample_points_are_deterministic_and_unique():
    a = sample_points(FULL, "float64")
    assert a.shape == (2000, 1) and a.dtype == np.float64
    np.testing.assert_array_equal(a, sample_points(FULL, "float64"))
    assert not np.array_equal(a, sample_points(FULL, "float64", seed=1))
    assert len(np.unique(a)) == len(a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sample_points_cover_the_whole_line(dtype):
    pts = sample_points(FULL, dtype)[:, 0]
    info = np.finfo(dtype)
    assert pts.dtype == np.dtype(dtype) and np.all(np.isfinite(pts))
    for s in (0, 1, -1, 20, -20, 40, -40, 88, -88, 100, -100, 700, -700, info.max, -info.max):
        assert s in pts
    mags = np.abs(pts[pts != 0])
    assert (mags < 1e-30).sum() > 50 and (mags > 1e30).sum() > 50
    assert np.all(mags >= info.tiny)  # TensorFlow flushes subnormal inputs
    assert ((mags >= 2.0**-20) & (mags <= 2.0**10)).mean() > 0.45  # the log-uniform half


def test_sample_points_respect_the_domain():
    unit = sample_points(((0.0, 1.0),), "float64")[:, 0]
    assert np.all((unit >= 0) & (unit <= 1)) and len(unit) > 1900
    for s in (0.0, 1.0, np.nextafter(1.0, 0.0), np.finfo(np.float64).tiny):
        assert s in unit
    box = sample_points(((-1000.0, 1000.0),), "float32")[:, 0]
    assert np.all((box >= -1000) & (box <= 1000))
    for s in (-1000, 1000, 700, -700, np.nextafter(np.float32(1000), np.float32(0))):
        assert s in box
    assert 1e-30 > np.min(np.abs(box[box != 0]))  # bit patterns reach tiny magnitudes


def test_a_domain_past_float32s_range_has_no_float32_points_and_warns_nothing():
    with np.errstate(all="raise"):  # an inf edge once overflowed nextafter here
        far = sample_points(((1e39, 1e40),), "float32")
        wide = sample_points(((1e39, 1e40),), "float64")[:, 0]
    assert far.shape[0] == 0
    assert np.all((wide >= 1e39) & (wide <= 1e40)) and len(wide) > 1900


def test_sample_points_for_several_arguments():
    dom = ((-math.inf, math.inf), (0.5, 2.0))
    pts = sample_points(dom, "float32", n=1000)
    assert pts.shape[1] == 2 and 900 < len(pts) <= 1000
    assert np.all((pts[:, 1] >= 0.5) & (pts[:, 1] <= 2.0))
    assert len(np.unique(pts, axis=0)) == len(pts)
    rows = {tuple(map(float, r)) for r in pts}
    assert (0.0, 1.0) in rows and (88.0, 1.0) in rows and (1.0, 2.0) in rows
    assert len(set(pts[:, 0])) > 700  # the first coordinate is drawn, not only specials


# --- cache -----------------------------------------------------------------------------------


def test_cache_hit_does_not_evaluate(tmp_path, monkeypatch):
    pts = sample_points(FULL, "float64", n=50)
    expr = sp.exp(x) / (1 + sp.exp(x)) ** 2
    first = reference(expr, (x,), pts, "float64", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 1 and not list(tmp_path.glob("*.tmp"))

    def boom(*args, **kwargs):
        raise AssertionError("evaluated despite the cache")

    monkeypatch.setattr(accuracy, "_evaluate", boom)
    np.testing.assert_array_equal(reference(expr, (x,), pts, "float64", cache_dir=tmp_path), first)
    with pytest.raises(AssertionError):  # another dtype is another entry
        reference(expr, (x,), pts, "float32", cache_dir=tmp_path)


def test_partials_found_together_are_each_as_found_alone(tmp_path, monkeypatch):
    """`prepare_references` evaluates several expressions in one run per point (a function's
    partials share most of their ops); each keeps its own precision, limits and NaN."""
    sinc = sp.sin(x) / x
    exprs = [sinc, sp.diff(sinc, x), sp.diff(sinc, x, 2), sp.log(x), sp.exp(sp.exp(x))]
    pts = np.concatenate([[[0.0], [-1.0], [20.0]], sample_points(FULL, "float64", n=200)])
    alone = [reference(e, (x,), pts, "float64") for e in exprs]
    accuracy.prepare_references(exprs, (x,), pts, "float64", tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == len(exprs)

    def boom(*args, **kwargs):
        raise AssertionError("evaluated despite the prepared cache")

    monkeypatch.setattr(accuracy, "_evaluate", boom)
    for expr, want in zip(exprs, alone, strict=True):
        got = reference(expr, (x,), pts, "float64", cache_dir=tmp_path)
        np.testing.assert_array_equal(got, want)
    d2, log_x, exp_exp = (alone[k][:3] for k in (2, 3, 4))
    assert d2[0] == -1 / 3 and math.isnan(log_x[1]) and exp_exp[2] == math.inf


def test_references_that_cannot_be_found_together_are_left_to_each(tmp_path):
    accuracy.prepare_references(
        [sp.exp(x), sp.gamma(x)], (x,), np.ones((3, 1)), "float64", tmp_path
    )
    assert not list(tmp_path.glob("*.npy"))
    with pytest.raises(TypeError, match="gamma"):
        reference(sp.gamma(x), (x,), np.ones((3, 1)), "float64", cache_dir=tmp_path)


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("HOGEN_CACHE", str(tmp_path))
    assert accuracy.default_cache_dir() == tmp_path
    monkeypatch.delenv("HOGEN_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert accuracy.default_cache_dir() == tmp_path / "xdg" / "hogen"
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")  # as the XDG spec says
        assert accuracy.default_cache_dir() == tmp_path / "home" / ".cache" / "hogen"
    assert accuracy.default_cache_dir().is_absolute()  # never the working folder


@pytest.mark.parametrize("dtype", DTYPES)
def test_cancellation_of_any_depth_is_rounded_correctly(dtype):
    """(cosh(x) - 1)/x**2 - 1/2 = x**2/24 + x**4/720 + ... cancels about 2*log2(1/x) bits:
    from 40 bits at 1e-6 to 1000 at 1e-150, so rows climb the precision ladder (balls around
    0 first, then finite ones) to different heights; each still comes out correctly rounded
    (the series' next term is far below half a unit of either format)."""
    f = (sp.cosh(x) - 1) / x**2 - sp.Rational(1, 2)
    xs = [1e-6, 1e-12, 1e-20, 1e-30, 1e-60, 1e-100, 1e-150] if dtype == "float64" else [1e-6]
    xs += [1e-3, 1e-9, 1e-15, 1e-18]  # float32: x**2/24 stays above its smallest normal
    pts = np.array([[v] for v in xs], dtype=dtype)
    got = reference(f, (x,), pts, dtype)
    for value, v in zip(got, pts[:, 0], strict=True):
        q = Fraction(float(v)) ** 2
        assert value == nearest(q / 24 + q * q / 720 + q**3 / 40320, dtype), v


@pytest.mark.parametrize("dtype", accuracy.DTYPES)
@pytest.mark.parametrize("domain", [FULL, ((0.0, np.inf), (-np.inf, np.inf))])
def test_verify_scores_draws_no_build_chose_on(domain, dtype):
    """`hogen verify`'s points (`VERIFY_SEED`) share with the points a build chooses its forms
    on the rows of special values every seed's sample starts with, and by chance a draw or two
    (float32's draws log-uniform in [2^-20, 2^10] take about 2.5e8 values); seed 0's points,
    which verify scored until December 2026, are all among them."""
    from codegen.judge.sampling import _specials
    from codegen.stabilize.measuring import stabilizer_points

    def drawn(points) -> set:
        specials = [set(_specials(lo, hi, dtype).tolist()) for lo, hi in domain]
        return {
            r for r in map(tuple, points.tolist()) if any(v not in s for v, s in zip(r, specials))
        }

    assert accuracy.VERIFY_SEED not in accuracy.CHOICE_SEEDS
    chosen_on = drawn(stabilizer_points(domain, dtype, 2000))
    scored = drawn(sample_points(domain, dtype, 2000, accuracy.VERIFY_SEED))
    assert len(scored) > 1500 and len(scored & chosen_on) <= 2
    assert drawn(sample_points(domain, dtype, 2000, 0)) <= chosen_on


def test_exact_mean_does_not_depend_on_the_order_of_addition():
    """NumPy's sums add in an order its SIMD level picks; a figure printed to two decimals
    from a mean on a rounding boundary (0.715) came out 0.71 on one machine, 0.72 on another."""
    from codegen.judge.accuracy import exact_mean

    values = np.array([1e16, 1.0, -1e16, 0.5] * 250)
    means = {exact_mean(np.roll(values, k)) for k in range(4)}
    assert means == {0.375}
    assert exact_mean(np.array([])) == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_several_args_sample_their_ordinary_box_as_users_do(dtype):
    """Coordinates drawn one arg at a time put fewer than 1 in 1000 points where x in
    [0, 10] is over 2 and y in [0, 1] over 0.2, and log(1 + x*y)/y once shipped a float32
    series that returns -204074 at x = 5, y = 0.5. An eighth of the rows is uniform in value
    over each arg's ordinary range, so that region holds its share of them."""
    pts = sample_points(((0.0, 10.0), (0.0, 1.0)), dtype).astype(np.float64)
    assert ((pts[:, 0] > 2) & (pts[:, 1] > 0.2)).mean() > 0.06
    wide = sample_points(((100.0, math.inf), (-math.inf, math.inf)), dtype).astype(np.float64)
    ordinary = (wide[:, 0] <= 1000) & (np.abs(wide[:, 1]) <= 10)
    assert ordinary.mean() > 0.1 and np.all(wide[:, 0] >= 100)


def test_ordinary_ranges():
    from codegen.judge.sampling import ordinary_range

    assert ordinary_range(-math.inf, math.inf) == (-10.0, 10.0)
    assert ordinary_range(0.0, 1.0) == (0.0, 1.0)
    assert ordinary_range(100.0, math.inf) == (100.0, 1000.0)
    assert ordinary_range(-math.inf, -50.0) == (-500.0, -50.0)


def test_exact_sum_is_fsums_correctly_rounded_sum_in_any_order():
    """Sums go through integers, one int64 pass per band of exponents (errors in bits span
    one band; regime costs from 2**-40 to 64 several), and values that are not finite
    through math.fsum. Both are the correctly rounded sum."""
    from codegen.judge.accuracy import exact_sum

    rng = np.random.default_rng(3)
    costs = np.where(rng.random(5000) < 0.6, 0.0, rng.uniform(3, 64, 5000))
    bits = np.log2(1 + rng.integers(0, 2**40, 5000).astype(np.float64))
    wide = rng.standard_normal(5000) * 10.0 ** rng.integers(-300, 300, 5000)
    subnormal = np.ldexp(rng.random(500), rng.integers(-1074, -1000, 500)) * rng.choice([-1, 1])
    floored = np.where(costs > 0, costs, 2.0**-40)  # regime costs: 2**-40 beside 64
    cases = (costs, bits, wide, subnormal, floored, costs - np.minimum(costs, costs[::-1]))
    for values in (*cases, np.zeros(3), np.array([1e308, -1e308, 5.0])):
        assert exact_sum(values) == math.fsum(values.tolist())
        assert exact_sum(values[::-1]) == exact_sum(values)  # NumPy's sum order is not
    assert math.copysign(1, exact_sum(np.array([-0.0, 0.0]))) == 1.0


def test_the_mirror_flushes_subnormals_to_signed_zero_and_writes_no_negative_zero():
    from codegen.judge.mirror_ops import flush_subnormals

    for dtype in DTYPES:
        sub = np.finfo(dtype).tiny / 4
        v = np.array([-0.0, 0.0, -sub, sub, np.nan, 1.0, -2.0], dtype=dtype)
        out = flush_subnormals(v)
        assert np.array_equal(out, [0, 0, 0, 0, np.nan, 1, -2], equal_nan=True)
        assert np.signbit(out).tolist() == [False, False, True, False, False, False, True]
