"""What the test modules written by `hogen build --tests` run: checks of one generated op.

In: a spec file and the folder holding the op built from it. Out: pytest
assertions. `measure` and `assert_promise` judge the op against the exact
reference through `codegen.measure.verify.verify_spec`, the measurement `hogen
verify` makes (docs/design.md, "Accuracy, defined"), in the op's framework (TF, JAX or
PyTorch). `assert_matches_autodiff` compares the op's partial derivative with that
framework's autodiff of the spec's naive
`expr`, lowered and run the way `verify` runs it, in float64 on a grid of
moderate inputs (|arg| <= 2, inside the domain); points where the naive
expression is not finite (0/0 at a removable singularity) are not compared.
Imports TensorFlow.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from codegen.front.spec import Spec, load_spec
from codegen.judge import accuracy
from codegen.measure import frameworks, verify

DTYPES = accuracy.DTYPES
SAMPLES = 2000  # as `hogen verify`: its cached references serve these tests too
MODERATE = 2.0
RTOL, ATOL = 1e-8, 1e-10  # float64; ATOL is relative to the largest value compared
_GRID = {1: 40, 2: 10, 3: 6, 4: 4}  # points per arg: even, so a symmetric grid skips 0


@cache
def _spec(spec_path: str) -> Spec:
    return load_spec(spec_path)


def measure(spec_path: Path, out_dir: Path, samples: int = SAMPLES, backend: str = "tf") -> dict:
    """The op (built by `backend`)'s figures against the exact reference, by (partial, dtype)."""
    spec = _spec(str(spec_path))
    if backend == "tf":
        rows = verify.verify_spec(spec, Path(out_dir), samples)
    else:
        rows = frameworks.verify_spec(spec, Path(out_dir), samples, backend)
    return {(row.partial, row.dtype): row.figures for row in rows if row.tool == "hogen"}


def assert_promise(measured: dict, partial: str, dtype: str) -> None:
    """The promise: mean <= 1.5 bits, p99 <= 8 bits, no failures."""
    figures = measured[(partial, dtype)]
    assert figures.keeps_promise(), (
        f"{partial} in {dtype}: mean {figures.mean_bits:.2f} bits, p99 {figures.p99_bits:.1f} "
        f"bits, {figures.failures} failures over {figures.scored} points; promised mean <= "
        f"{accuracy.MEAN_LIMIT}, p99 <= {accuracy.P99_LIMIT}, no failures"
    )


def moderate_points(domain: tuple[tuple[float, float], ...]) -> np.ndarray:
    """A grid over the box |arg| <= 2 within the domain, kept off its edges; one row a point."""
    axes = []
    for lo, hi in domain:
        a, b = max(lo, -MODERATE), min(hi, MODERATE)
        if a >= b:  # the domain lies beyond +-2: its first stretch of width 4 instead
            a, b = (lo, min(hi, lo + 2 * MODERATE)) if lo > -MODERATE else (max(lo, hi - 4), hi)
        margin = 0.05 * (b - a)
        axes.append(np.linspace(a + margin, b - margin, _GRID[len(domain)]))
    grids = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def assert_matches_autodiff(
    spec_path: Path, out_dir: Path, index: tuple[int, ...], backend: str = "tf"
) -> None:
    """The op's partial `index` equals naive autodiff's at moderate inputs, in float64, both
    run and differentiated in `backend`'s framework as `hogen verify` runs them."""
    spec = _spec(str(spec_path))
    run = frameworks.runner(backend)
    points = moderate_points(spec.domain)
    sequence = [i for i, count in enumerate(index) for _ in range(count)]
    got = run.derivative(run.load_op(spec, Path(out_dir)), points, sequence, "float64")
    want = run.derivative(run.naive_op(spec), points, sequence, "float64")
    compared = np.isfinite(want)
    assert compared.mean() >= 0.5, "naive autodiff is not finite at most moderate inputs"
    scale = max(1.0, float(np.max(np.abs(want[compared]))))
    np.testing.assert_allclose(
        got[compared],
        want[compared],
        rtol=RTOL,
        atol=ATOL * scale,
        err_msg=f"{spec.name}: partial {index} differs from {backend} autodiff of {spec.expr_text}",
    )
