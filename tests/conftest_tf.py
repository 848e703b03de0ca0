"""Shared helpers for the TensorFlow tests (imported as a module, not a pytest conftest).

Importing this module quiets TensorFlow's C++ logging, puts the repo root on sys.path so
the `generated` package imports, and imports TensorFlow. Expected values in the tests come
from closed forms in NumPy float64 or from TF autodiff of the naive expression at moderate
arguments, never from the generated ops themselves.
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

from generated import log1pexp  # noqa: E402, F401  (re-exported to the tests)

try:
    from generated import logaddexp
except ImportError:  # not built yet: the tests that need it skip
    logaddexp = None

needs_logaddexp = pytest.mark.skipif(
    logaddexp is None,
    reason="generated/logaddexp.py is not built (hogen build specs/logaddexp.yaml)",
)


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
