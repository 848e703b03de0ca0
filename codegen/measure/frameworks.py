"""`hogen verify --backend jax|torch`: the measurement of `verify`, run in JAX or PyTorch.

In: a `Spec`, the folder of its generated module and a backend name. Out: `verify.Row`s,
one per partial, dtype and tool ("hogen", the generated op; "autodiff", the framework's
autodiff of the naive `expr`), with the figures of docs/design.md against the exact
reference at `hogen verify`'s sample points. `runner(backend)` is how a framework loads
an op and takes its k-th partial: `run_jax`, `run_torch`, or TensorFlow's eager tapes
(`verify`); the targets, the points, the reference and the figures are `verify`'s own.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace

from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.measure import verify


def _tf_derivative(fn, points, sequence: list[int], dtype: str):
    import tensorflow as tf

    inputs = [tf.constant(points[:, i]) for i in range(points.shape[1])]
    return verify.partial_derivative(fn, inputs, sequence).numpy()


def runner(backend: str):
    """How `backend`'s ops are loaded and differentiated: `load_op`, `naive_op`,
    `derivative(fn, points, sequence, dtype)` and the `PATH` the rows name."""
    if backend == "tf":
        return SimpleNamespace(
            load_op=verify.load_op,
            naive_op=verify.naive_op,
            derivative=_tf_derivative,
            PATH="eager",
        )
    return importlib.import_module(f"codegen.measure.run_{backend}")


def verify_spec(
    spec: Spec,
    out_dir: Path,
    samples: int = 2000,
    backend: str = "jax",
    extra_tools=None,
    seed: int = accuracy.VERIFY_SEED,
):
    """Figures of the generated op, of naive autodiff and of `extra_tools` ({name: callable
    on the args}) in `backend`, every partial, float32 and float64 (`verify.measured_rows`)."""
    run = runner(backend)
    tools = {"hogen": run.load_op(spec, out_dir), "autodiff": run.naive_op(spec)}
    tools.update(extra_tools or {})

    def measure(tool, fn, target, points, exact, dtype):
        approx = run.derivative(fn, points, list(target.sequence), dtype)
        return accuracy.figures(approx, exact, dtype), run.PATH

    return verify.measured_rows(spec, samples, tools, measure, seed)
