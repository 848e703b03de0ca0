"""Shared helpers for the TensorFlow tests (imported as a module, not a pytest conftest).

Importing this module quiets TensorFlow's C++ logging, puts the repo root on sys.path so
the `generated` package imports, and imports TensorFlow. Expected values in the tests come
from the exact reference (`exact`: python-flint arb, correctly rounded to the dtype), from
closed forms in NumPy float64 or from TF autodiff of the naive expression at moderate
arguments, never from the generated ops themselves.

TensorFlow's CPU kernels (Eigen, oneDNN) and NumPy's SIMD loops round differently on
different processors, so no test may assert a figure that only held on the machine that
wrote it. What holds everywhere is the promise (accuracy.P99_LIMIT = 8 bits of error at all
but 1% of points): `assert_within_promise` holds a result to it per point against the exact
value, `assert_paths_agree` bounds the distance of two execution paths by what the promise
allows each, and `promise_rtol` is the relative tolerance the promise gives a sum of results.
"""

from __future__ import annotations

import os
import pathlib
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from codegen.judge import accuracy  # noqa: E402
from generated import log1pexp  # noqa: E402, F401  (re-exported to the tests)

try:
    from generated import logaddexp
except ImportError:  # not built yet: the tests that need it skip
    logaddexp = None

needs_logaddexp = pytest.mark.skipif(
    logaddexp is None,
    reason="generated/logaddexp.py is not built (hogen build specs/logaddexp.yaml)",
)


# --- the exact reference and the promise ---------------------------------------------------------


def exact(expr, symbols, *columns, dtype):
    """The exact value of the SymPy `expr` at each point, correctly rounded to `dtype`.

    `columns` (one per symbol, broadcast together) are first rounded to `dtype`: the op under
    test sees those values. The result has the broadcast shape.
    """
    dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype)).name
    cols = np.broadcast_arrays(*[np.asarray(c, dtype=dtype) for c in columns])
    points = np.stack([c.ravel() for c in cols], axis=1)
    return accuracy.reference(expr, tuple(symbols), points, dtype).reshape(cols[0].shape)


def assert_within_promise(got, want, dtype=None, err_msg=""):
    """Each value within accuracy.P99_LIMIT bits (bits_error) of the exact `want`.

    The promise allows more only at 1% of sampled points; a test's few chosen points are not
    those. NaN must be where `want` is NaN and only there; ±inf must equal `want` exactly
    (bits_error scores any other value there as the full width); where `want` rounds to 0 the
    result must be below the smallest normal.
    """
    got = np.atleast_1d(np.asarray(got))
    dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype or got.dtype)).name
    want = np.broadcast_to(np.asarray(want, dtype=dtype), got.shape)
    where = f"{err_msg}: got {got}, exact {want}"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"NaN status {where}")
    bits = np.nan_to_num(accuracy.bits_error(got, want, dtype), nan=0.0)
    assert (bits <= accuracy.P99_LIMIT).all(), f"bits of error {bits} > P99_LIMIT {where}"


def assert_paths_agree(a, b, err_msg=""):
    """Two execution paths of the same op agree as far as the promise lets them differ.

    Each path keeps the promise: at most P99_LIMIT = 8 bits of error, i.e. at most 2^8 - 1
    ulps (values numbered by accuracy.ordinal) from the exact value. Two such results lie at
    most 2 (2^8 - 1) < 2^9 - 1 ulps apart, so two paths further apart than P99_LIMIT + 1 bits
    at a point make it an outlier of at least one of them. Values both below the smallest
    normal agree (bits_error scores them as 0 against an exact 0: flushing to zero is
    allowed). NaN and ±inf must agree exactly.
    """
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    where = f"{err_msg}: {a} vs {b}"
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"NaN status {where}")
    infinite = np.isinf(a) | np.isinf(b)
    np.testing.assert_array_equal(a[infinite], b[infinite], err_msg=f"inf status {where}")
    tiny = np.finfo(a.dtype).tiny
    with np.errstate(invalid="ignore"):
        compared = np.isfinite(a) & np.isfinite(b) & ~((np.abs(a) < tiny) & (np.abs(b) < tiny))
    apart = np.abs(accuracy.ordinal(a[compared]) - accuracy.ordinal(b[compared]))
    bits = np.log2(1.0 + apart.astype(np.float64))
    assert (bits <= accuracy.P99_LIMIT + 1).all(), f"{bits} bits apart {where}"


def promise_rtol(dtype, terms=1):
    """Relative tolerance for a sum of `terms` results of one sign, each within the promise.

    Within P99_LIMIT bits is within 2^8 - 1 ulps, and an ulp of v is at most eps |v|; a sum of
    values of one sign carries their largest relative error, plus one rounding per term in the
    result and in the float reference it is compared with.
    """
    return (2**accuracy.P99_LIMIT + 2 * terms) * float(np.finfo(np.dtype(dtype)).eps)


# --- closed forms, NumPy float64 -------------------------------------------------------------


def sigmoid(x):
    """1 / (1 + exp(-x)) in float64: a few ulp wherever exp(-x) does not overflow."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def softplus_derivs(x):
    """[f, f', f'', f''', f''''] of log(1 + e^x), closed forms in float64.

    With s = sigmoid(x) and c = sigmoid(-x) = 1 - s (computed without cancellation):
    f'' = s c, f''' = s c (c - s), f'''' = s c (1 - 6 s c) = s (1 - s)(1 - 6 s + 6 s^2).
    """
    x = np.asarray(x, dtype=np.float64)
    s, c = sigmoid(x), sigmoid(-x)
    return [np.logaddexp(0.0, x), s, s * c, s * c * (c - s), s * c * (1 - 6 * s * c)]


def softplus_d2_large(x):
    """f''(x) = e^-x / (1 + e^-x)^2 for large positive x, where s*(1-s) would cancel."""
    e = np.exp(-np.asarray(x, dtype=np.float64))
    return e / (1.0 + e) ** 2


# --- naive expressions, differentiated by TF autodiff -----------------------------------------


def naive_log1pexp(x):
    return tf.math.log(1.0 + tf.math.exp(x))


def naive_logaddexp(x, y):
    return tf.math.log(tf.math.exp(x) + tf.math.exp(y))


# --- derivatives by nested tapes ---------------------------------------------------------------


def tape_derivs(fn, x, order):
    """[f(x), f'(x), ..., f^(order)(x)] by nested GradientTapes (elementwise fn).

    Each gradient is of the sum of the previous one, so for an elementwise `fn` it is the
    elementwise derivative. Works in eager mode and when called inside tf.function.
    """
    tapes = [tf.GradientTape() for _ in range(order)]
    for tape in tapes:
        tape.__enter__()
        tape.watch(x)
    values = [fn(x)]
    for tape in reversed(tapes):
        tape.__exit__(None, None, None)
        values.append(tape.gradient(values[-1], x))
    return values


def partials2(fn, x, y):
    """Value and all partials of fn(x, y) up to order 2, both mixed orders, by nested tapes.

    Returns a dict with keys f, x, y, xx, xy, yx, yy; `xy` is d/dy of f_x and `yx` is d/dx
    of f_y.
    """
    with tf.GradientTape(persistent=True) as outer:
        outer.watch([x, y])
        with tf.GradientTape(persistent=True) as inner:
            inner.watch([x, y])
            f = fn(x, y)
        f_x = inner.gradient(f, x)
        f_y = inner.gradient(f, y)
    out = {
        "f": f,
        "x": f_x,
        "y": f_y,
        "xx": outer.gradient(f_x, x),
        "xy": outer.gradient(f_x, y),
        "yx": outer.gradient(f_y, x),
        "yy": outer.gradient(f_y, y),
    }
    del inner, outer
    return out


def as_numpy(values):
    if isinstance(values, dict):
        return {k: as_numpy(v) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return [as_numpy(v) for v in values]
    return values.numpy() if hasattr(values, "numpy") else np.asarray(values)
