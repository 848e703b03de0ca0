"""The generated JAX ops under JAX's transformations, judged against the exact reference.

log1pexp (order 3, one arg), logaddexp (two args, broadcasting) and softplus_beta (a
param): every composition of grad, jacfwd, jacrev, hessian, jit and vmap keeps the promise
at `hogen verify`'s sample points, in float32 and (x64) float64; low precision keeps its
dtype; integers are refused. Expected values come from the exact reference, never from the
ops themselves.
"""

import numpy as np
import pytest
import sympy as sp
from backend_checks import assert_promise, exact, moderate, points, spec

from codegen.judge import accuracy

jax = pytest.importorskip("jax")
jnp = jax.numpy

from generated_jax import log1pexp, logaddexp, softplus_beta  # noqa: E402

DTYPES = ["float32", "float64"]


def _grads(f, k):
    for _ in range(k):
        f = jax.grad(f)
    return f


def _on(dtype, fn, *columns):
    with jax.enable_x64(dtype == "float64"):
        return np.asarray(fn(*(jnp.asarray(c, dtype) for c in columns)))


COMPOSITIONS = {
    "grad": (1, lambda f: jax.vmap(jax.grad(f))),
    "grad∘grad": (2, lambda f: jax.vmap(_grads(f, 2))),
    "grad³": (3, lambda f: jax.vmap(_grads(f, 3))),
    "jit∘vmap∘grad∘grad": (2, lambda f: jax.jit(jax.vmap(_grads(f, 2)))),
    "jacfwd∘jacrev": (2, lambda f: jax.vmap(jax.jacfwd(jax.jacrev(f)))),
    "jacfwd∘jacfwd∘jacrev": (3, lambda f: jax.vmap(jax.jacfwd(jax.jacfwd(jax.jacrev(f))))),
    "jacrev∘jacfwd": (2, lambda f: jax.vmap(jax.jacrev(jax.jacfwd(f)))),
    "hessian": (2, lambda f: jax.vmap(jax.hessian(f))),
    "jit value": (0, lambda f: jax.jit(f)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("how", list(COMPOSITIONS))
def test_log1pexp_every_composition_keeps_the_promise(how, dtype):
    order, transform = COMPOSITIONS[how]
    pts = points("log1pexp", dtype)
    got = _on(dtype, transform(log1pexp), pts[:, 0])
    assert got.dtype == np.dtype(dtype)
    assert_promise(got, "log1pexp", (order,), pts, dtype, how)


def test_log1pexp_elementwise_hessian_of_a_sum():
    x = moderate("log1pexp")[0]
    with jax.enable_x64(True):
        h = np.asarray(jax.hessian(lambda v: log1pexp(v).sum())(jnp.asarray(x)))
    want = exact("log1pexp", (2,), x[:, None], "float64")
    np.testing.assert_allclose(np.diag(h), want, rtol=1e-14)
    assert np.all(h[~np.eye(len(x), dtype=bool)] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log1pexp_fourth_derivative_beyond_order_is_autodiff_of_the_last_form(dtype):
    s = spec("log1pexp")
    pts = np.stack(moderate("log1pexp", 21), axis=1).astype(dtype)
    fourth = sp.diff(s.expr, s.arg_symbols[0], 4)
    want = accuracy.reference(fourth, s.arg_symbols, pts, dtype)
    got = _on(dtype, jax.vmap(_grads(log1pexp, 4)), pts[:, 0])
    figures = accuracy.figures(got, want, dtype)  # no promise beyond the order: p99 only
    assert figures.p99_bits <= accuracy.P99_LIMIT and figures.failures == 0, figures


@pytest.mark.parametrize("dtype", DTYPES)
def test_log1pexp_tails_where_builtins_give_zero(dtype):
    x = np.array([30.0, 40.0, -40.0, 80.0], dtype)
    got = _on(dtype, jax.vmap(_grads(log1pexp, 2)), x)
    want = exact("log1pexp", (2,), x[:, None], dtype)
    assert np.all(got[want > 0] > 0)
    assert_promise(got, "log1pexp", (2,), x[:, None], dtype, "grad∘grad tails")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "index, sequence",
    [((1, 0), (0,)), ((0, 1), (1,)), ((2, 0), (0, 0)), ((1, 1), (0, 1)), ((0, 2), (1, 1))],
)
def test_logaddexp_partials_keep_the_promise(index, sequence, dtype):
    pts = points("logaddexp", dtype)
    f = logaddexp
    for i in reversed(sequence):
        f = jax.grad(f, argnums=i)
    got = _on(dtype, jax.jit(jax.vmap(f)), pts[:, 0], pts[:, 1])
    assert_promise(got, "logaddexp", index, pts, dtype, f"grad {sequence}")


def test_logaddexp_broadcasts_and_reduces_gradients_to_input_shapes():
    x = jnp.asarray([[-1.0], [0.5], [2.0]])  # (3, 1)
    y = jnp.asarray([0.0, 1.0])  # (2,)
    value = logaddexp(x, y)
    assert value.shape == (3, 2)
    gx, gy = jax.grad(lambda a, b: logaddexp(a, b).sum(), argnums=(0, 1))(x, y)
    assert gx.shape == x.shape and gy.shape == y.shape
    xs, ys = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
    pts = np.stack([xs.ravel(), ys.ravel()], axis=1)
    fx = exact("logaddexp", (1, 0), pts, "float32").reshape(3, 2)
    fy = exact("logaddexp", (0, 1), pts, "float32").reshape(3, 2)
    np.testing.assert_allclose(gx, fx.sum(axis=1, keepdims=True), rtol=2e-6)
    np.testing.assert_allclose(gy, fy.sum(axis=0), rtol=2e-6)
    hxy = jax.grad(lambda a, b: jax.grad(lambda u, v: logaddexp(u, v).sum())(a, b).sum(), 1)(x, y)
    assert hxy.shape == y.shape


def test_logaddexp_mixed_partials_agree_in_either_order():
    x, y = (jnp.asarray(c) for c in moderate("logaddexp"))
    xy = jax.vmap(jax.grad(jax.grad(logaddexp, 0), 1))(x, y)
    yx = jax.vmap(jax.grad(jax.grad(logaddexp, 1), 0))(x, y)
    np.testing.assert_array_equal(xy, yx)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softplus_beta_param_is_an_array_argument(dtype):
    pts = points("softplus_beta", dtype)
    got = _on(dtype, jax.jit(jax.vmap(_grads(lambda v: softplus_beta(v, beta=1.0), 2))), pts[:, 0])
    assert_promise(got, "softplus_beta", (2,), pts, dtype, "grad∘grad, beta=1")
    traced = jax.jit(lambda v, b: softplus_beta(v, beta=b))  # beta traced under jit
    np.testing.assert_array_equal(
        _on(dtype, lambda v: traced(v, 1.0), pts[:, 0]), _on(dtype, softplus_beta, pts[:, 0])
    )


def test_softplus_beta_refuses_a_derivative_in_its_param():
    with pytest.raises(TypeError, match="softplus_beta: its parameters have no derivative"):
        jax.grad(lambda b: softplus_beta(1.0, beta=b))(2.0)


@pytest.mark.parametrize("dtype, rtol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_low_precision_is_computed_in_float32_and_keeps_its_dtype(dtype, rtol):
    x = moderate("log1pexp")[0]
    for order in range(3):
        got = jax.vmap(_grads(log1pexp, order))(jnp.asarray(x, dtype))
        assert got.dtype == jnp.dtype(dtype)
        want = exact("log1pexp", (order,), x[:, None], "float64")
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=rtol)


def test_integer_inputs_are_a_type_error_naming_the_op():
    with pytest.raises(TypeError, match="log1pexp: expected float16, bfloat16, float32"):
        log1pexp(jnp.asarray([1, 2]))
    with pytest.raises(TypeError, match="logaddexp"):
        logaddexp(jnp.asarray([1.0]), jnp.asarray([1]))


def test_python_numbers_and_numpy_arrays_are_accepted():
    assert log1pexp(1.0).dtype == jnp.float32
    assert log1pexp(np.float32(1.0)).dtype == jnp.float32
    with jax.enable_x64(True):
        assert log1pexp(np.asarray([1.0])).dtype == jnp.float64


def test_nan_in_gives_nan_out_at_every_order():
    x = jnp.asarray([jnp.nan, 0.0])
    for order in range(5):
        got = np.asarray(jax.vmap(_grads(log1pexp, order))(x))
        assert np.isnan(got[0]) and np.isfinite(got[1])
