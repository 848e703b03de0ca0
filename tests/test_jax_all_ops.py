"""Every op in generated_jax/: jit agrees with eager at value, f' and f''; low precision keeps
its dtype; several args broadcast with gradients reduced to each input's shape.

Accuracy of every partial against the exact reference is `hogen verify --backend jax`'s,
run per op by the generated tests in tests/generated_jax/. Here values are compared with the
same op in float64 at moderate points inside each domain (float64 itself measured there).
"""

import numpy as np
import pytest
from backend_checks import moderate

jax = pytest.importorskip("jax")
jnp = jax.numpy

import generated_jax  # noqa: E402

OPS = sorted(generated_jax.__all__)


def _value_and_two(op, arity):
    """value, d/dx0 and d²/dx0² of `op`, elementwise over its args' columns."""
    d1 = jax.grad(op, argnums=0)
    d2 = jax.grad(d1, argnums=0)
    return lambda *a: tuple(jax.vmap(f)(*a) for f in (op, d1, d2))


def _columns(name, dtype):
    return [jnp.asarray(c, dtype) for c in moderate(name)]


@pytest.mark.parametrize("name", OPS)
def test_jit_agrees_with_eager_for_value_and_two_derivatives(name):
    op = getattr(generated_jax, name)
    with jax.enable_x64(True):
        args = _columns(name, "float64")
        fn = _value_and_two(op, len(args))
        for eager, compiled in zip(fn(*args), jax.jit(fn)(*args)):
            np.testing.assert_allclose(np.asarray(compiled), np.asarray(eager), rtol=1e-12)


@pytest.mark.parametrize("dtype, rtol", [("float16", 4e-3), ("bfloat16", 3e-2)])
@pytest.mark.parametrize("name", OPS)
def test_low_precision_keeps_its_dtype_within_its_precision(name, dtype, rtol):
    op = getattr(generated_jax, name)
    low = _value_and_two(op, 1)(*_columns(name, dtype))
    with jax.enable_x64(True):
        high = _value_and_two(op, 1)(*_columns(name, "float64"))
    for got, want in zip(low, high):
        assert got.dtype == jnp.dtype(dtype)
        want = np.asarray(want)
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("name", [n for n in OPS if n in ("hypot", "logaddexp")])
def test_two_args_broadcast_and_gradients_take_input_shapes(name):
    op = getattr(generated_jax, name)
    x = jnp.asarray([[0.5], [1.5], [-2.0]])
    y = jnp.asarray([0.25, 3.0])
    assert op(x, y).shape == (3, 2)
    total = lambda a, b: op(a, b).sum()  # noqa: E731
    gx, gy = jax.grad(total, argnums=(0, 1))(x, y)
    assert gx.shape == x.shape and gy.shape == y.shape
    h = jax.hessian(total, argnums=(0, 1))(x, y)
    assert h[0][1].shape == (*x.shape, *y.shape)
