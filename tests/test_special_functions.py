"""lgamma, digamma, polygamma, erfinv, erfcx, atan2, ndtr, log_ndtr: grammar, reference, lowering.

Reference values are checked against mpmath at 50 digits (independent of python-flint's
arb, which the reference uses); the composite lowering of erfcx (TF has no kernel) is
measured against the reference over the float range in both dtypes.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.front.functions import ALL_FUNCTIONS, erfcx, sigmoid, softplus
from codegen.front.spec import parse_expression
from codegen.judge import accuracy
from codegen.judge.numeric import run
from codegen.lower import lower

x, y = sp.symbols("x y", real=True)
NAMES = {"x": x, "y": y}


def _parse(text: str) -> sp.Expr:
    return parse_expression(text, NAMES, path="t.yaml", line=1, col=1)


def _ndtr(v):
    return mpmath.erfc(-v / mpmath.sqrt(2)) / 2


CASES = [  # (text, mpmath function of the point, points)
    ("lgamma(x)", mpmath.loggamma, (0.25, 1.5, 7.0, 1e5, 3e200)),
    ("digamma(x)", mpmath.digamma, (0.25, 1.5, 7.0, 1e5)),
    ("polygamma(0, x)", lambda v: mpmath.psi(0, v), (0.5, 3.0)),
    ("polygamma(1, x)", lambda v: mpmath.psi(1, v), (0.25, 1.5, 7.0, 1e5)),
    ("polygamma(3, x)", lambda v: mpmath.psi(3, v), (0.25, 1.5, 7.0)),
    ("erfinv(x)", mpmath.erfinv, (-0.999, -0.5, 1e-10, 0.3, 0.99999)),
    ("erfcx(x)", lambda v: mpmath.exp(v * v) * mpmath.erfc(v), (-5.0, -0.5, 0.0, 2.0, 30.0, 1e3)),
    ("ndtr(x)", _ndtr, (-30.0, -1.0, 0.0, 2.5)),
    ("log_ndtr(x)", lambda v: mpmath.log(_ndtr(v)), (-100.0, -3.0, 0.0, 5.0)),
]


@pytest.mark.parametrize("text, exact, points", CASES, ids=[c[0] for c in CASES])
def test_reference_agrees_with_mpmath(text, exact, points):
    got = accuracy.reference(_parse(text), (x,), np.array(points).reshape(-1, 1), "float64")
    with mpmath.workdps(50):
        want = [float(exact(mpmath.mpf(p))) for p in points]
    np.testing.assert_array_equal(got, want)


def test_atan2_reference_agrees_with_mpmath():
    points = np.array([[1.0, 2.0], [-1.0, -3.0], [1e-300, -1.0], [5.0, 0.0]])
    got = accuracy.reference(_parse("atan2(y, x)"), (y, x), points, "float64")
    with mpmath.workdps(50):
        want = [float(mpmath.atan2(mpmath.mpf(a), mpmath.mpf(b))) for a, b in points]
    np.testing.assert_array_equal(got, want)


def test_derivatives_chain_lgamma_digamma_polygamma():
    assert sp.diff(_parse("lgamma(x)"), x) == _parse("digamma(x)")
    assert sp.diff(_parse("digamma(x)"), x) == _parse("polygamma(1, x)")
    assert sp.diff(_parse("polygamma(1, x)"), x) == _parse("polygamma(2, x)")
    d = sp.diff(erfcx(x), x)
    with mpmath.workdps(40):
        v = mpmath.mpf(1.5)
        want = mpmath.diff(lambda t: mpmath.exp(t * t) * mpmath.erfc(t), v)
    got = sp.N(d.subs(x, sp.Rational(3, 2)).rewrite(sp.erfc), 30)
    assert abs(float(got) - float(want)) <= 1e-15 * abs(float(want))


@pytest.mark.parametrize("dtype", accuracy.DTYPES)
def test_erfcx_composite_keeps_the_promise(dtype):
    points = accuracy.sample_points(((-np.inf, np.inf),), dtype, 2000)
    exact = accuracy.reference(erfcx(x), (x,), points, dtype)
    approx = run(lower([erfcx(x)], {x: "x"}), {"x": points[:, 0]}, dtype)[0]
    finite = np.isfinite(points[:, 0])  # the reference has no value at +-inf itself
    figures = accuracy.figures(approx[finite], exact[finite], dtype)
    assert figures.keeps_promise(), figures


@pytest.mark.parametrize("dtype", accuracy.DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_composite_keeps_the_promise(n, dtype):
    """hogen's own polygamma for u > 0 (XLA's kernel is 2.7 bits off on average)."""
    points = accuracy.sample_points(((0.0, np.inf),), dtype, 2000)
    points = points[np.isfinite(points[:, 0]) & (points[:, 0] > 0)]
    exact = accuracy.reference(sp.polygamma(n, x), (x,), points, dtype)
    approx = run(lower([sp.polygamma(n, x)], {x: "x"}), {"x": points[:, 0]}, dtype)[0]
    figures = accuracy.figures(approx, exact, dtype)
    assert figures.keeps_promise(), figures


def test_lowered_names_of_the_tf_kernels():
    program = lower(
        [_parse("lgamma(x) + digamma(x) + polygamma(2, x) + erfinv(y) + atan2(y, x)")],
        {x: "x", y: "y"},
    )
    ops = {step.op for step in program.steps}
    assert {"lgamma", "digamma", "polygamma", "erfinv", "atan2"} <= ops


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2])
def test_mirror_polygamma_flushes_where_tensorflow_does(n, dtype):
    """tf.math.polygamma(n, u) sums u**-(n + 1) terms, flushed to 0 below the smallest normal:
    it returns 0 where the exact value is a normal number. The mirror of the kernel (which
    hogen's lowering still uses for u <= 0) must do the same."""
    from conftest_tf import tf

    info = np.finfo(dtype)
    edge = float(info.tiny) ** (-1.0 / (n + 1))
    points = np.array([edge / 4, edge / 1.5, edge * 1.5, edge * 4, 1e3, 7.5], dtype=dtype)
    points = points[np.isfinite(points)]
    mirrored = ALL_FUNCTIONS["polygamma"].numpy_func(float(n), points)
    got = tf.math.polygamma(tf.fill(points.shape, tf.constant(n, dtype)), points).numpy()
    assert np.array_equal(mirrored == 0, got == 0), (points, mirrored, got)
    assert (got == 0).any() and (got != 0).any()
    np.testing.assert_allclose(mirrored, got, rtol=64 * info.eps)


_w = sp.Symbol("w", real=True)
SERIES_CASES = [  # (a SymPy expression in w, the same function for mpmath)
    (sigmoid(-_w), lambda v: 1 / (1 + mpmath.exp(v))),
    (softplus(-_w), lambda v: mpmath.log1p(mpmath.exp(-v))),
    (sigmoid(_w) * sigmoid(-_w), lambda v: mpmath.exp(v) / (1 + mpmath.exp(v)) ** 2),
    (
        softplus(3 * _w) - softplus(_w),
        lambda v: mpmath.log1p(mpmath.exp(3 * v)) - mpmath.log1p(mpmath.exp(v)),
    ),
    (sigmoid(_w**2 - _w), lambda v: 1 / (1 + mpmath.exp(v - v**2))),
]


@pytest.mark.parametrize("expr, exact", SERIES_CASES, ids=[str(e) for e, _ in SERIES_CASES])
def test_series_of_sigmoid_and_softplus_have_the_taylor_coefficients(expr, exact):
    """SymPy's generic Taylor term put 0 for the whole argument, so sigmoid(-u)'s series had
    a u**2 term and sigmoid(u)*sigmoid(-u)'s odd powers. Checked against mpmath's
    coefficients at 40 digits."""
    got = sp.Poly(sp.series(expr, _w, 0, 9).removeO(), _w)
    with mpmath.workdps(40):
        expected = mpmath.taylor(exact, 0, 8)
    for power, coefficient in enumerate(expected):
        assert float(got.coeff_monomial(_w**power)) == pytest.approx(
            float(coefficient), rel=1e-12, abs=1e-14
        ), power
