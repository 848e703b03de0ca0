"""Every op in generated/: XLA compiles value, f' and f''; low precision keeps its dtype.

Values are compared with the same op in float64 (whose accuracy `hogen verify`
measures against the exact reference), at moderate points inside each domain: XLA's
kernels against eager ones as far apart as the promise lets two paths lie
(conftest_tf.assert_paths_agree), low precision against float64 within its own precision.
"""

import numpy as np
import pytest
from conftest_tf import assert_paths_agree, tf  # (sets TF logging and sys.path first)

import generated
from codegen.front.spec import load_spec

OPS = sorted(generated.__all__)
POINTS = np.array([-3.0, -1.5, -0.5, 0.25, 0.75, 2.0, 3.5])


def _inside(points, lo, hi):
    """Moderate points mapped into the domain [lo, hi] of one arg."""
    if lo >= 0 and hi <= 1:
        return 1 / (1 + np.exp(-points))
    if lo >= 0:
        return np.exp(points)
    return np.clip(points, lo, hi)


def _inputs(op, dtype):
    spec = load_spec(f"specs/{op.__name__}.yaml")
    columns = [_inside(POINTS + 0.1 * i, lo, hi) for i, (lo, hi) in enumerate(spec.domain)]
    return [tf.constant(c, dtype) for c in columns]


def _value_and_derivatives(op, args):
    x = args[0]
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = op(*args)
        d1 = inner.gradient(y, x)
    d2 = outer.gradient(d1, x)
    return y, d1, d2


@pytest.mark.parametrize("name", OPS)
def test_xla_compiles_value_and_two_derivatives(name):
    op = getattr(generated, name)
    args = _inputs(op, tf.float64)
    eager = _value_and_derivatives(op, args)
    compiled = tf.function(lambda *a: _value_and_derivatives(op, list(a)), jit_compile=True)(*args)
    # XLA compiles its own exp, log, tanh...: they round differently from the eager kernels,
    # by an amount that depends on the processor; both keep the promise
    for order, (e, c) in enumerate(zip(eager, compiled)):
        assert_paths_agree(c.numpy(), e.numpy(), err_msg=f"{name} order {order}")


@pytest.mark.parametrize("dtype, rtol", [(tf.float16, 4e-3), (tf.bfloat16, 3e-2)])
@pytest.mark.parametrize("name", OPS)
def test_low_precision_in_kept_dtype_and_within_its_precision(name, dtype, rtol):
    op = getattr(generated, name)
    low = _value_and_derivatives(op, _inputs(op, dtype))
    for value in low:
        assert value.dtype == dtype
        # inputs are rounded to `dtype` first, so compare with the float64 op at the rounded inputs
        assert np.all(np.isfinite(value.numpy().astype(np.float64)))
    rounded = [
        tf.constant(tf.cast(a, dtype).numpy().astype(np.float64)) for a in _inputs(op, tf.float64)
    ]
    exact_at_rounded = [v.numpy() for v in _value_and_derivatives(op, rounded)]
    for ref, value in zip(exact_at_rounded, low):
        np.testing.assert_allclose(value.numpy().astype(np.float64), ref, rtol=rtol, atol=rtol)


def test_order_one_op_builds_runs_and_autodiffs_its_last_form(tmp_path):
    """order: 1 has a one-output jet; f'' is TF autodiff of the stable f' = 2x."""
    import importlib.util

    from codegen.front.spec import parse_spec_text
    from codegen.pipeline import build

    source = build(parse_spec_text("name: sq\nargs: [x]\nexpr: x**2\norder: 1\n", "sq.yaml"))
    path = tmp_path / "sq.py"
    path.write_text(source, encoding="utf-8")
    module_spec = importlib.util.spec_from_file_location("hogen_sq", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    y, d1, d2 = _value_and_derivatives(module.sq, [tf.constant([3.0, -0.5], tf.float64)])
    np.testing.assert_array_equal(y.numpy(), [9.0, 0.25])
    np.testing.assert_array_equal(d1.numpy(), [6.0, -1.0])
    np.testing.assert_array_equal(d2.numpy(), [2.0, 2.0])
