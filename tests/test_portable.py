"""The mirror's elementary functions round the same on every processor (`judge.portable`).

NumPy picks float32/float64 kernels for exp, log, tanh, ... by the processor's SIMD level;
the stabilizer measures candidate forms on the mirror, and its choices and docstring figures
must not depend on that level. Checked three ways: the wrapper's contract (dtype kept,
float32 is float64 rounded), closeness to the exact value, and a build of a library spec in
a process with NumPy's SIMD dispatch switched off, which must give the same bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mpmath
import numpy as np
import pytest

from codegen.judge import portable
from codegen.judge.accuracy import bits_error

REPO = Path(__file__).resolve().parents[1]
X = np.array([-700.0, -3.5, -1e-8, 0.0, 1e-300, 0.3, 2.5, 88.0, 700.0])


@pytest.mark.parametrize("name", ["exp", "expm1", "tanh", "sin", "arctan", "sinh"])
def test_float32_is_the_float64_value_rounded(name):
    func = getattr(portable, name)
    x32 = X.astype(np.float32)
    out = func(x32)
    assert out.dtype == np.float32
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, func(x32.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize(
    ("name", "exact"),
    [("exp", mpmath.exp), ("expm1", mpmath.expm1), ("tanh", mpmath.tanh), ("sinh", mpmath.sinh)],
)
def test_float64_is_within_a_unit_of_the_exact_value(name, exact):
    out = getattr(portable, name)(X)
    assert out.dtype == np.float64
    with mpmath.workdps(40):
        want = np.array([float(exact(mpmath.mpf(v))) for v in X])
    finite = np.isfinite(want)
    assert (bits_error(out[finite], want[finite], "float64") <= 1.0).all()


def test_power_and_logaddexp_keep_two_argument_dtypes():
    a = np.array([2.0, 0.5], dtype=np.float32)
    assert portable.power(a, np.float32(3.0)).dtype == np.float32
    assert portable.logaddexp(a, a).dtype == np.float32
    np.testing.assert_array_equal(portable.power(a.astype(np.float64), 2.0), [4.0, 0.25])


def _dispatched_levels() -> list[str]:
    """The SIMD levels NumPy dispatches to on this processor, beyond its baseline."""
    from numpy._core import _multiarray_umath as umath

    found = umath.__cpu_features__
    return [level for level in umath.__cpu_dispatch__ if found.get(level)]


def _build(spec: str, env: dict) -> str:
    code = (
        "import sys; from codegen.front.spec import load_spec; from codegen.pipeline import "
        f"build; sys.stdout.write(build(load_spec({spec!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_result_is_remembered_read_only_and_the_memo_stays_bounded(monkeypatch):
    monkeypatch.setattr(portable, "MEMO_BYTES", 3 * X.nbytes)
    first = portable.exp(X)
    assert portable.exp(X.copy()) is first  # the same bytes in: the same result
    assert not first.flags.writeable
    with pytest.raises(ValueError):
        first[0] = 1.0  # a caller cannot change what the next one gets
    assert portable.exp(X.astype(np.float32)).dtype == np.float32  # dtypes apart
    assert not np.shares_memory(portable.log1p(np.abs(X)), portable.expm1(np.abs(X)))
    for k in range(8):
        portable.tanh(X + k)
    assert portable._memo_bytes[0] <= 3 * X.nbytes
    assert portable._memo_bytes[0] == sum(v.nbytes for v in portable._MEMO.values())


def test_a_build_is_the_same_without_simd_dispatch():
    levels = _dispatched_levels()
    if not levels:
        pytest.skip("NumPy dispatches to no SIMD level beyond its baseline here: one path only")
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    with_simd = _build("specs/sigmoid.yaml", env)
    without = _build("specs/sigmoid.yaml", {**env, "NPY_DISABLE_CPU_FEATURES": " ".join(levels)})
    assert with_simd == without


def test_sample_points_are_the_same_without_simd_dispatch():
    """The log-uniform half of the sample was 2.0 ** u by NumPy's power, which AVX-512 rounds
    otherwise than the baseline: the builds measured at other points and chose otherwise."""
    levels = _dispatched_levels()
    if not levels:
        pytest.skip("NumPy dispatches to no SIMD level beyond its baseline here: one path only")
    code = (
        "import sys; from codegen.judge.sampling import sample_points; "
        "sys.stdout.write(sample_points(((-1e300, 1e300), (0.0, 5.0)), 'float64', 4000, 2)"
        ".tobytes().hex())"
    )
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=e, capture_output=True, text=True
        )
        for e in (env, {**env, "NPY_DISABLE_CPU_FEATURES": " ".join(levels)})
    ]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout
