"""A constant first operand of a function that is not symmetric: atan2(1, x), which the
atan tails (`rules.atan_complement`) write, on every backend.

Each backend once printed a constant first operand by swapping the operands, right for
add, mul, maximum and minimum, and wrong for atan2 (atan2(x, 1) in JAX, a TypeError in
PyTorch). TensorFlow now gives the constant x's dtype (the corpus's measurement of
atan(x) - atan(y) raised a float32/float64 mismatch in Atan2); its check here passed
before too. Checked against NumPy's arctan2 and the exact derivative -1/(1 + x**2).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from codegen import pipeline
from codegen.front.spec import parse_spec_text

TEXT = "name: angle\nargs: [x]\nexpr: atan2(1, x)\norder: 1\n"
X = np.array([-3.0, -0.5, 0.5, 2.0, 40.0])


def _module(tmp_path, backend: str):
    source = pipeline.build(parse_spec_text(TEXT, "specs/angle.yaml"), backend=backend)
    path = tmp_path / f"angle_{backend}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.angle


def _check(values, slopes, rtol=1e-12):
    np.testing.assert_allclose(np.asarray(values), np.arctan2(1.0, X), rtol=rtol)
    np.testing.assert_allclose(np.asarray(slopes), -1.0 / (1.0 + X**2), rtol=rtol)


def test_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    angle = _module(tmp_path, "tf")
    x = tf.constant(X, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = angle(x)
    _check(y, tape.gradient(y, x))


def test_jax(tmp_path):
    jax = pytest.importorskip("jax")
    angle = _module(tmp_path, "jax")
    x = jax.numpy.asarray(X, dtype="float32")  # float64 needs jax_enable_x64, process-wide
    _check(angle(x), jax.vmap(jax.grad(angle))(x), rtol=1e-6)


def test_torch(tmp_path):
    torch = pytest.importorskip("torch")
    angle = _module(tmp_path, "torch")
    x = torch.tensor(X, requires_grad=True)
    y = angle(x)
    y.sum().backward()
    _check(y.detach(), x.grad)
