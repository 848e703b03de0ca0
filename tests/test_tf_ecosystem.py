"""The generated ops in the TF ecosystem: Keras 3, SavedModel, tf.distribute, tracing, XLA.

Expected values come from the exact reference (conftest_tf.exact, held to the promise per
point) or from closed forms in NumPy float64 with tolerances far wider than any processor's
rounding (Keras layers: float32 matmuls), never from the generated ops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import sympy as sp
from conftest_tf import (
    REPO_ROOT,
    as_numpy,
    assert_within_promise,
    exact,
    log1pexp,
    logaddexp,
    needs_logaddexp,
    partials2,
    promise_rtol,
    tape_derivs,
    tf,
)

X, Y = sp.symbols("x y", real=True)
LOG1PEXP = sp.log(1 + sp.exp(X))
LOGADDEXP = sp.log(sp.exp(X) + sp.exp(Y))


def _log1pexp_exact(order, xs, dtype):
    return exact(sp.diff(LOG1PEXP, X, order), (X,), xs, dtype=dtype)


def _dense_reference(x, layer):
    kernel, bias = (np.asarray(w, dtype=np.float64) for w in layer.get_weights())
    z = np.asarray(x, dtype=np.float64) @ kernel + bias
    return np.log1p(np.exp(z))


# --- Keras 3 -------------------------------------------------------------------------------------


def test_keras_dense_activation_and_activation_layer():
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    dense = keras.layers.Dense(4, activation=log1pexp)
    out = dense(x)
    assert out.shape == (5, 4) and out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), _dense_reference(x, dense), rtol=1e-5, atol=1e-6)

    act = keras.layers.Activation(log1pexp)
    z = np.linspace(-6.0, 6.0, 13).astype(np.float32).reshape(1, -1)
    assert_within_promise(act(z), exact(LOG1PEXP, (X,), z, dtype="float32"))


def _tiny_model():
    return keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(8, activation=log1pexp),
            keras.layers.Activation(log1pexp),
            keras.layers.Dense(1),
        ]
    )


def test_keras_model_fit_two_epochs():
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = rng.normal(size=(64, 1)).astype(np.float32)
    model = _tiny_model()
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert len(losses) == 2 and np.all(np.isfinite(losses))


def test_keras_gradient_penalty_step():
    """Loss uses d(model output)/d(input): tape inside tape; every weight gets a finite gradient."""
    keras.utils.set_random_seed(2)
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(16, 3)).astype(np.float32))
    y = tf.constant(rng.normal(size=(16, 1)).astype(np.float32))
    model = _tiny_model()
    model(x)  # build
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            pred = model(x, training=True)
        dpred_dx = inner.gradient(pred, x)
        penalty = tf.reduce_mean((tf.norm(dpred_dx, axis=1) - 1.0) ** 2)
        loss = tf.reduce_mean((pred - y) ** 2) + 10.0 * penalty
    grads = outer.gradient(loss, model.trainable_variables)
    assert len(grads) == len(model.trainable_variables) == 4
    for var, grad in zip(model.trainable_variables, grads, strict=True):
        assert grad is not None, var.path
        assert np.all(np.isfinite(grad.numpy())), var.path
    # the penalty alone reaches the first layer's kernel only through f'' of the activation
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            pred = model(x)
        penalty = tf.reduce_sum(inner.gradient(pred, x))
    g_kernel = outer.gradient(penalty, model.layers[0].kernel)
    assert g_kernel is not None and np.any(g_kernel.numpy() != 0.0)


def test_keras_mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(3)
        layer = keras.layers.Dense(4, activation=log1pexp)
        x = tf.constant(np.random.default_rng(3).normal(size=(6, 3)).astype(np.float32))
        with tf.GradientTape() as tape:
            out = layer(x)
            loss = tf.reduce_sum(tf.cast(out, tf.float32))
        grads = tape.gradient(loss, layer.trainable_variables)
        assert out.dtype == tf.float16
        np.testing.assert_allclose(
            tf.cast(out, tf.float64).numpy(), _dense_reference(x, layer), rtol=3e-3, atol=3e-3
        )
        assert len(grads) == 2
        for grad in grads:
            assert grad is not None and np.all(np.isfinite(grad.numpy()))
    finally:
        keras.mixed_precision.set_global_policy("float32")


# --- SavedModel ----------------------------------------------------------------------------------


class _Softplus(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(self, x):
        return log1pexp(x)


def test_saved_model_keeps_stable_second_derivative(tmp_path):
    path = str(tmp_path / "softplus")
    tf.saved_model.save(_Softplus(), path)  # default options: custom gradients saved
    loaded = tf.saved_model.load(path)
    xs = np.array([30.0, 1.0, -2.0], dtype=np.float32)
    derivs = as_numpy(tape_derivs(loaded.f, tf.constant(xs), 3))
    assert derivs[2][0] != 0.0  # f''(30) = 9.4e-14: the stable form, not 1 - 1
    for order, got in enumerate(derivs):
        assert_within_promise(got, _log1pexp_exact(order, xs, "float32"), err_msg=order)


def test_keras_model_saved_and_reloaded(tmp_path):
    keras.utils.set_random_seed(4)
    model = _tiny_model()
    x = np.random.default_rng(4).normal(size=(7, 3)).astype(np.float32)
    before = model.predict(x, verbose=0)
    path = tmp_path / "tiny.keras"
    model.save(path)
    reloaded = keras.models.load_model(path, custom_objects={"log1pexp": log1pexp})
    after = reloaded.predict(x, verbose=0)
    # the same layers and weights run by the same kernels on the same input, in one process:
    # bit for bit on any machine
    np.testing.assert_array_equal(after, before)
    assert reloaded.layers[0].activation is log1pexp


# --- tf.distribute -------------------------------------------------------------------------------

_MIRRORED_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    from generated import log1pexp

    X = np.linspace(-2.0, 3.0, 8)
    W0, LR = 0.7, 0.5

    def loss_fn(w, x, global_batch):
        # mean over the global batch of d2/dx2 log1pexp(w x) = w^2 f''(w x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = tf.reduce_sum(log1pexp(w * x))
            g = t1.gradient(y, x)
        h = t2.gradient(g, x)
        return tf.reduce_sum(h) / global_batch

    def grad_fn(w, x, global_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(w, x, global_batch)
        return tape.gradient(loss, w)

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        w_dist = tf.Variable(W0, dtype=tf.float64)
    dataset = tf.data.Dataset.from_tensor_slices(X).batch(len(X))
    dist_batch = next(iter(strategy.experimental_distribute_dataset(dataset)))

    @tf.function
    def dist_step(batch):
        per_replica = strategy.run(grad_fn, args=(w_dist, batch, float(len(X))))
        grad = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
        w_dist.assign_sub(LR * grad)
        return grad

    replica_sizes = [int(t.shape[0]) for t in strategy.experimental_local_results(dist_batch)]
    dist_grad = dist_step(dist_batch)

    w_one = tf.Variable(W0, dtype=tf.float64)

    @tf.function
    def one_step(x):
        grad = grad_fn(w_one, x, float(len(X)))
        w_one.assign_sub(LR * grad)
        return grad

    one_grad = one_step(tf.constant(X))
    print(json.dumps({
        "replicas": strategy.num_replicas_in_sync,
        "replica_sizes": replica_sizes,
        "dist_w": float(w_dist.numpy()), "one_w": float(w_one.numpy()),
        "dist_grad": float(dist_grad), "one_grad": float(one_grad),
    }))
    """
)


def test_mirrored_strategy_matches_single_device():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(
        [sys.executable, "-c", _MIRRORED_SCRIPT, str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["replicas"] == 2
    assert result["replica_sizes"] == [4, 4]
    # L(w) = mean w^2 f2(w x), so dL/dw = mean[2 w f2(w x) + w^2 x f3(w x)] (f2, f3: the second
    # and third derivatives, exact at the points w x rounded to float64, as TensorFlow forms
    # them). Both runs use the op's f2 and f3, each within the promise whatever kernels the
    # replicas ran, and a few roundings per term: each lies within promise_rtol of sum |terms|.
    xs, w0, lr = np.linspace(-2.0, 3.0, 8), 0.7, 0.5
    wx = w0 * xs
    d2, d3 = (exact(sp.diff(LOG1PEXP, X, n), (X,), wx, dtype="float64") for n in (2, 3))
    terms = np.array([2 * w0 * d2, w0**2 * xs * d3])
    grad = np.mean(terms.sum(axis=0))
    bound = promise_rtol("float64", 16) * np.mean(np.abs(terms).sum(axis=0))
    for key in ("one_grad", "dist_grad"):
        assert abs(result[key] - grad) <= bound, (key, result[key], grad, bound)
    for key in ("one_w", "dist_w"):
        assert abs(result[key] - (w0 - lr * grad)) <= lr * bound + np.spacing(w0), key


# --- tracing and XLA -----------------------------------------------------------------------------


def test_tf_function_traces_once_per_signature():
    traces = []

    @tf.function
    def step(x):
        traces.append(x.dtype)
        return tape_derivs(log1pexp, x, 2)

    for start in (0.0, 1.0, -2.0):
        step(tf.constant(np.linspace(start, start + 1.0, 5), tf.float32))
    assert len(traces) == 1
    assert step.experimental_get_tracing_count() == 1
    step(tf.constant(np.zeros(5), tf.float64))  # a new dtype is a new signature
    assert step.experimental_get_tracing_count() == 2


def test_xla_log1pexp_value_and_two_derivatives():
    xs = np.array([-20.0, -3.0, 0.0, 1.0, 4.5, 30.0])
    run = tf.function(lambda x: tape_derivs(log1pexp, x, 2), jit_compile=True)
    for dtype in ("float64", "float32"):
        got = as_numpy(run(tf.constant(xs, dtype)))
        for order, value in enumerate(got):
            assert_within_promise(value, _log1pexp_exact(order, xs, dtype), err_msg=order)


@needs_logaddexp
def test_xla_logaddexp_value_and_two_derivatives():
    xv = np.array([-3.0, 0.0, 2.0, 800.0, -800.0])
    yv = np.array([1.0, 0.0, -1.5, 799.0, -801.0])
    run = tf.function(partials2, jit_compile=True)
    got = as_numpy(run(logaddexp, tf.constant(xv), tf.constant(yv)))
    orders = {"f": (0, 0), "x": (1, 0), "y": (0, 1), "xx": (2, 0), "xy": (1, 1), "yx": (1, 1)}
    for key, (nx, ny) in {**orders, "yy": (0, 2)}.items():
        want = exact(sp.diff(LOGADDEXP, X, nx, Y, ny), (X, Y), xv, yv, dtype="float64")
        assert_within_promise(got[key], want, err_msg=key)


@pytest.mark.parametrize("jit", [False, True], ids=["function", "xla"])
def test_saved_function_also_runs_under_xla(jit, tmp_path):
    """A loaded SavedModel function composes with a new (XLA) tf.function and its tapes."""
    path = str(tmp_path / "softplus")
    tf.saved_model.save(_Softplus(), path)
    loaded = tf.saved_model.load(path)
    run = tf.function(lambda x: tape_derivs(loaded.f, x, 2), jit_compile=jit)
    _, d1, d2 = as_numpy(run(tf.constant([1.0, 30.0], tf.float32)))
    assert_within_promise(d1, _log1pexp_exact(1, [1.0, 30.0], "float32"))
    assert_within_promise(d2, _log1pexp_exact(2, [1.0, 30.0], "float32"))


@needs_logaddexp
def test_xla_logaddexp_broadcast_gradients():
    xv, yv = np.array([[-1.0], [0.5], [2.0]]), np.array([[-2.0, 0.0, 1.0, 3.0]])

    @tf.function(jit_compile=True)
    def grads(x, y):
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            f = tf.reduce_sum(logaddexp(x, y))
        return tape.gradient(f, [x, y])

    g_x, g_y = grads(tf.constant(xv), tf.constant(yv))
    assert g_x.shape == (3, 1) and g_y.shape == (1, 4)
    # exact partials (positive) summed over the broadcast axis
    for got, wrt, axis in [(g_x, X, 1), (g_y, Y, 0)]:
        want = exact(sp.diff(LOGADDEXP, wrt), (X, Y), xv, yv, dtype="float64")
        want = want.sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(got.numpy(), want, rtol=promise_rtol("float64", 4))
