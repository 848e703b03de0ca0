"""The eager fast path of every generated op (issue 7): one recorded op per order.

In eager mode a generated op records its derivatives through TensorFlow's own recording
API (what `tf.custom_gradient` calls), one order at a time, instead of calling the
`tf.custom_gradient` jet. These tests pin that:

- the fast path is the one eager mode takes (the jet op is never called there);
- every order up to the spec's, every partial, equals bit for bit what the jet gives in
  eager mode when the recording API is absent (the fallback: the same kernels on the same
  tensors), and what the jet gives in `tf.function` as closely as the promise lets two paths
  differ (graph kernels, Grappler's rewrites and oneDNN round differently, by how much
  depends on the processor), at ordinary points and at the edges (0, huge, ±inf);
- one order beyond the spec (autodiff of the last form) agrees with the jet to rounding;
- partials that are an input itself (f = x*y, f_x = y) and broadcasting keep their
  gradients; persistent tapes, Variables and `tape.jacobian` work.

Expected values come from the jet path (whose accuracy `hogen verify` measures against the
exact reference), from the exact reference itself (conftest_tf.exact) or from exact
arithmetic; never from the eager path under test.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import sympy as sp
from conftest_tf import assert_paths_agree, assert_within_promise, exact, promise_rtol, tf

import generated
from codegen import pipeline
from codegen.front.spec import load_spec

OPS = sorted(generated.__all__)
EDGES = [0.0, -0.0, 1e-30, -1e-30, 0.5, -2.5, 30.0, -30.0, 100.0, -100.0, 1e30, -1e30]


def _module(name):
    return importlib.import_module(f"generated.{name}")


def _points(name, dtype):
    """Edge points, and a few random ones, inside (or at the ends of) each arg's domain."""
    spec = load_spec(f"specs/{name}.yaml")
    rng = np.random.default_rng(7)
    columns = []
    for i, (lo, hi) in enumerate(spec.domain):
        raw = np.concatenate([EDGES, [np.inf, -np.inf], rng.uniform(-8, 8, 12)])
        raw = np.roll(raw, 3 * i)  # pair different values across args
        if lo >= 0 and hi <= 1:
            inside = 0.5 * (1 + np.tanh(raw[4:] / 2))  # sigmoid, no overflow warning at ±inf
            raw = np.concatenate([[0.0, 1.0, 1e-30, 1 - 1e-7], inside])
        elif lo >= 0:
            raw = np.abs(raw)
        columns.append(np.clip(raw, lo, hi))
    return spec, [tf.constant(c, dtype) for c in columns]


def _all_partials(op, args, params, order):
    """{multi-index: tensor} of every partial up to `order`, by nested persistent tapes."""
    tapes = [tf.GradientTape(persistent=True) for _ in range(order)]
    for tape in tapes:
        tape.__enter__()
        tape.watch(args)
    level = {(0,) * len(args): op(*args, **params)}
    out = dict(level)
    for tape in reversed(tapes):
        tape.__exit__(None, None, None)
        nxt = {}
        for index, value in level.items():
            for i, arg in enumerate(args):
                up = tuple(n + (j == i) for j, n in enumerate(index))
                if up not in nxt:
                    nxt[up] = tape.gradient(value, arg)
        out.update(nxt)
        level = nxt
    return out


def _call_paths(name, dtype, beyond=0):
    spec, args = _points(name, dtype)
    op = getattr(generated, name)
    params = {}
    order = spec.order + beyond
    eager = _all_partials(op, args, params, order)
    graph = tf.function(lambda *a: _all_partials(op, list(a), params, order))(*args)
    return spec, eager, graph


def _same_bits(a, b):
    """Equal values, NaN equal to NaN; -0.0 and 0.0 count as equal (both are zero).

    Only for two results of the same kernels on the same tensors in the same order (one
    machine, one process): an elementwise CPU kernel is a deterministic function of its
    input values and shape there, whatever processor it is.
    """
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_recording_api_the_eager_path_uses_is_there():
    """Pins the private TensorFlow API (what tf.custom_gradient calls in eager mode); if a
    release changes it, this fails first and the modules fall back to tf.custom_gradient."""
    import inspect

    from tensorflow.python.eager import record

    assert list(inspect.signature(record.record_operation).parameters)[:4] == [
        "op_type",
        "output_tensors",
        "input_tensors",
        "backward_function",
    ]
    assert callable(record.could_possibly_record)
    with record.stop_recording():
        pass


@pytest.mark.parametrize("name", OPS)
def test_eager_takes_the_recorded_path_not_the_jet(name, monkeypatch):
    module = _module(name)
    assert module._record is not None, "TensorFlow's recording API should import here"

    def jet_called(*args):
        raise AssertionError("the tf.custom_gradient jet ran in eager mode")

    monkeypatch.setattr(module, f"_{name}_op", jet_called)
    spec, args = _points(name, tf.float64)
    partials = _all_partials(getattr(generated, name), args, {}, spec.order)
    assert len(partials) == sum(1 for _ in _indices(len(args), spec.order)), (
        "every partial computed"
    )


def _indices(n, order):
    from codegen.derive import multi_indices

    for k in range(order + 1):
        yield from multi_indices(n, k)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("name", OPS)
def test_eager_equals_the_jet_in_tf_function_at_every_order(name, dtype):
    """Eager and tf.function run different kernels (Grappler rewrites, oneDNN), which round
    differently by an amount that depends on the processor; both keep the promise, so they
    may lie up to P99_LIMIT + 1 bits apart (conftest_tf.assert_paths_agree), and no further.
    NaN and ±inf agree exactly. A path that took an unstable form (0 where the truth is
    1e-20, or inf - inf) lies far further apart than that."""
    spec, eager, graph = _call_paths(name, dtype)
    assert eager.keys() == graph.keys()
    for index in eager:
        assert_paths_agree(eager[index], graph[index], err_msg=f"{name} partial {index}")


@pytest.mark.parametrize("name", OPS)
def test_eager_equals_the_fallback_without_the_recording_api(name, monkeypatch):
    """Bit for bit on any machine: both paths run in eager mode, so each form runs the same
    eager kernels on the same tensors (deterministic for given values and shape, whatever
    the processor); the jet only adds terms multiplied by its zero tangent (multiply_no_nan
    by 0: exactly 0, NaN-guarded) and multiplies by the incoming ones, which is exact."""
    spec, args = _points(name, tf.float32)
    op = getattr(generated, name)
    fast = _all_partials(op, args, {}, spec.order)
    monkeypatch.setattr(_module(name), "_record", None)
    fallback = _all_partials(op, args, {}, spec.order)
    for index in fast:
        _same_bits(fast[index], fallback[index])


@pytest.mark.parametrize("name", OPS)
def test_one_order_beyond_is_autodiff_of_the_last_form(name):
    """Beyond the spec's order both paths differentiate the last forms. At infinite inputs, and
    where a last form is infinite, the form's own backward pass may be inf * 0 (hypot f_xxy at
    x = inf: NaN eagerly), which the jet's NaN guard turns into 0 in graphs; no promise is
    made there, so those rows are left out. Elsewhere the guard is per form: hypot's f_xx
    form is NaN backward at y = 0 (x/y = inf inside), and a guard shared by the last forms
    turned the graph's f_xyy there into 0, where eager mode gives the true -sign(x)/x**2."""
    spec, eager, graph = _call_paths(name, tf.float64, beyond=1)
    _, args = _points(name, tf.float64)
    finite_args = np.all([np.isfinite(a.numpy()) for a in args], axis=0)
    # at a pole of the last forms (lbeta's f_aa at a = 0 is inf) the jet's NaN guard drops
    # an inf * 0 term the eager pass keeps: no promise there either
    last = [np.asarray(v) for index, v in eager.items() if sum(index) == spec.order]
    finite_args &= np.all([np.isfinite(v) for v in last], axis=0)
    for index in eager:
        if sum(index) <= spec.order:
            continue
        e, g = np.asarray(eager[index]), np.asarray(graph[index])
        # where a last form has no derivative (hypot's f_xx at y = 0: NaN eagerly) the graph's
        # guarded jet returns the other forms' terms alone: neither is autodiff of the form
        finite = finite_args & np.isfinite(g) & (np.abs(g) < 1e300) & np.isfinite(e)
        # no promise beyond the spec's order: both paths round a cancelling form near its
        # zeros differently (silu f'''(1e-30): -1.25e-31 and -6.25e-32, exact -5e-31)
        np.testing.assert_allclose(e[finite], g[finite], rtol=1e-9, atol=1e-20)


def test_one_form_without_a_derivative_leaves_the_others_terms_in_graphs():
    """hypot's f_xx form, 1/(h + h*(x/y)**2), is NaN backward at y = 0. The graph's jet
    guards each last form's inputs apart, so f_xyy there is the true d/dx (x**2/|x|**3) =
    -sign(x)/x**2, from f_xy and f_yy; a guard shared by all the last forms gave 0."""
    x = tf.constant([0.5, -2.0, 1e-30], tf.float64)
    y = tf.zeros_like(x)
    for path in (lambda f: f, tf.function):
        f_xyy = path(lambda x, y: _all_partials(generated.hypot, [x, y], {}, 3)[(1, 2)])(x, y)
        np.testing.assert_allclose(f_xyy, -np.sign(x) / x.numpy() ** 2, rtol=1e-12)


def _build_module(tmp_path, text):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    source = pipeline.build(load_spec(str(path)))
    module_path = tmp_path / "op.py"
    module_path.write_text(source)
    module_spec = importlib.util.spec_from_file_location(f"hogen_{tmp_path.name}", module_path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_partial_that_is_an_input_keeps_its_gradients(tmp_path):
    module = _build_module(tmp_path, "name: product\nargs: [x, y]\nexpr: x*y\norder: 2\n")
    x = tf.constant([2.0, -3.0], tf.float64)
    y = tf.constant([5.0, 7.0], tf.float64)
    partials = _all_partials(module.product, [x, y], {}, 3)
    expected = {(0, 0): x * y, (1, 0): y, (0, 1): x, (1, 1): 1.0, (2, 0): 0.0, (0, 2): 0.0}
    for index, value in expected.items():
        np.testing.assert_array_equal(partials[index], np.broadcast_to(value, [2]))
    for index in [(3, 0), (2, 1), (1, 2), (0, 3)]:
        assert partials[index] is None or not np.any(partials[index])


X, Y = sp.symbols("x y", real=True)
LOG1PEXP = sp.log(1 + sp.exp(X))
LOGADDEXP = sp.log(sp.exp(X) + sp.exp(Y))


def _sum_to(values, shape):
    """`values` summed over the axes that broadcasting added to an array of `shape`."""
    values = values.sum(axis=tuple(range(values.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and values.shape[i] > 1)
    return values.sum(axis=axes, keepdims=True)


def test_broadcasting_reduces_each_order_to_its_input_shape():
    """Each partial, on both paths, is the exact partial summed over the broadcast axes.

    The summed partials of logaddexp are of one sign, so promise_rtol bounds each sum."""
    xv, yv = np.array([[0.0], [1.0], [-2.0]]), np.array([0.5, -1.0, 3.0, 40.0])
    x, y = tf.constant(xv, tf.float64), tf.constant(yv, tf.float64)
    eager = _all_partials(generated.logaddexp, [x, y], {}, 2)
    graph = tf.function(lambda a, b: _all_partials(generated.logaddexp, [a, b], {}, 2))(x, y)
    for index, value in eager.items():
        assert value.shape == graph[index].shape
        want = exact(sp.diff(LOGADDEXP, X, index[0], Y, index[1]), (X, Y), xv, yv, dtype="float64")
        want = _sum_to(want, value.shape)
        for got in (value, graph[index]):
            np.testing.assert_allclose(got, want, rtol=promise_rtol("float64", 4), err_msg=index)
    # the sum over y of f_x: softmax weights; f_x + f_y = 1, so both summed give 12
    np.testing.assert_allclose(
        tf.reduce_sum(eager[(1, 0)]) + tf.reduce_sum(eager[(0, 1)]),
        12.0,
        rtol=promise_rtol("float64", 24),
    )


def test_variables_persistent_tapes_and_jacobian():
    v = tf.Variable([-40.0, 0.0, 40.0], dtype=tf.float64)
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape(persistent=True) as inner:
            y = generated.log1pexp(v)
        d1 = inner.gradient(y, v)
        again = inner.gradient(y, v)
        jac = inner.jacobian(y, v)
    d2 = outer.gradient(d1, v)
    d1_exact, d2_exact = (
        exact(sp.diff(LOG1PEXP, X, n), (X,), v.numpy(), dtype="float64") for n in (1, 2)
    )
    assert_within_promise(d1, d1_exact)
    np.testing.assert_array_equal(d1, again)  # the same kernels on the same tensor
    assert_within_promise(jac, np.diag(d1_exact))  # off the diagonal exactly 0
    assert_within_promise(d2, d2_exact)


def test_no_tape_records_nothing_and_later_tapes_see_a_constant():
    x = tf.constant([1.0, 2.0])
    y = generated.log1pexp(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = y * 1.0
    assert tape.gradient(z, x) is None
