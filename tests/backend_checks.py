"""Shared helpers for the JAX and PyTorch tests (imported as a module, not a pytest conftest).

Puts the repo root on sys.path (so `generated_jax` and `generated_torch` import) and judges
values against the exact reference with the promise (`codegen.judge.accuracy`): mean <= 1.5
bits, p99 <= 8 bits, no failures. Points are `accuracy.sample_points`, the ones `hogen
verify` uses, so the references are shared through the cache.
"""

from __future__ import annotations

import pathlib
import sys
from functools import cache

import numpy as np

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from codegen.derive import derive  # noqa: E402
from codegen.front.spec import Spec, load_spec  # noqa: E402
from codegen.judge import accuracy  # noqa: E402

SAMPLES = 2000


@cache
def spec(name: str) -> Spec:
    return load_spec(str(REPO_ROOT / "specs" / f"{name}.yaml"))


@cache
def _partials(name: str) -> dict:
    s = spec(name)
    values = {sym: v for sym, (_, v) in zip(s.param_symbols, s.params)}
    return {p.index: p.expr.subs(values) for p in derive(s).partials}


def points(name: str, dtype: str, n: int = SAMPLES) -> np.ndarray:
    """The sample points of the spec's domain, one row a point (as `hogen verify`'s)."""
    return accuracy.sample_points(spec(name).domain, dtype, n, accuracy.VERIFY_SEED)


def exact(name: str, index: tuple[int, ...], pts: np.ndarray, dtype: str) -> np.ndarray:
    """The exact partial `index` (params at their defaults) at `pts`, rounded to `dtype`."""
    expr = _partials(name)[index]
    s = spec(name)
    return accuracy.reference(
        expr, s.arg_symbols, pts, dtype, cache_dir=accuracy.default_cache_dir()
    )


def assert_promise(approx, name: str, index: tuple[int, ...], pts, dtype: str, how: str) -> None:
    """`approx` keeps the promise against the exact partial `index` at `pts`."""
    figures = accuracy.figures(np.asarray(approx), exact(name, index, pts, dtype), dtype)
    assert figures.keeps_promise(), (
        f"{name} partial {index} {dtype} via {how}: mean {figures.mean_bits:.2f} bits, p99 "
        f"{figures.p99_bits:.1f}, {figures.failures} failures over {figures.scored} points"
    )


def moderate(name: str, n: int = 7) -> list[np.ndarray]:
    """n moderate points per arg inside the domain (|arg| <= 3, off the edges)."""
    cols = []
    for i, (lo, hi) in enumerate(spec(name).domain):
        a, b = max(lo, -3.0), min(hi, 3.0)
        a, b = (a, b) if a < b else (lo, lo + 4.0)
        cols.append(np.linspace(a + 0.05 * (b - a), b - 0.05 * (b - a), n) + 0.01 * i)
    return cols
