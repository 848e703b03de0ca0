"""Transcendentals per element that XLA computes: hogen's JAX ops beside JAX's built-ins.

In: nothing (the ops are imported from `generated_jax/`, the built-ins from
`codegen.measure.builtins`). Out: a markdown table on stdout: for each library op with a JAX
built-in, the transcendental instructions (exponential, log, log-plus-one,
exponential-minus-one, tanh, logistic, erf, sine, cosine, tan, atan2, power, cbrt) on the
whole float32 array in XLA's optimized HLO of value + f' + f'' under `jax.jit` (f' and f''
by jax.grad of sums, as `bench_backends.py` times them), hogen's and the built-in's. An
instruction recomputed in two fusions counts twice: it is computed twice. This is the cost
model of issue 16 read off what XLA compiles, not off hogen's own lowering (`hogen explain`
prints that).

    python benchmarks/transcendentals.py
"""

from __future__ import annotations

import collections
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # generated_*, codegen

from bench_backends import _pairs  # noqa: E402 - after the path

TRANSCENDENTAL = frozenset(
    {
        "exponential",
        "exponential-minus-one",
        "log",
        "log-plus-one",
        "tanh",
        "logistic",
        "erf",
        "sine",
        "cosine",
        "tan",
        "atan2",
        "power",
        "cbrt",
    }
)
N = 4096  # the array length: instructions on f32[N] are the per-element work


def transcendentals(f) -> collections.Counter:
    """The transcendental instructions on f32[N] in the optimized HLO of value, f', f''."""
    import jax
    import jax.numpy as jnp

    d1 = jax.grad(lambda v: f(v).sum())
    d2 = jax.grad(lambda v: d1(v).sum())
    fn = jax.jit(lambda x: (f(x), d1(x), d2(x)))
    text = fn.lower(jnp.linspace(0.1, 3.0, N, dtype=jnp.float32)).compile().as_text()
    found = collections.Counter()
    for line in text.splitlines():
        match = re.search(rf"= f32\[{N}\]\{{0\}} ([a-z\-]+)\(", line)
        if match and match.group(1) in TRANSCENDENTAL:
            found[match.group(1)] += 1
    return found


def _show(counts: collections.Counter) -> str:
    parts = ", ".join(f"{op} {k}" for op, k in sorted(counts.items()))
    return f"{sum(counts.values())} ({parts})" if parts else "0"


def main() -> None:
    import jax.numpy as jnp

    pairs = _pairs("jax", lambda v: jnp.asarray(v, jnp.float32))
    print("| op | built-in | hogen | built-in |")
    print("| --- | --- | --- | --- |")
    for name, (ours, builtin, label, _) in pairs.items():
        counts = (_show(transcendentals(ours)), _show(transcendentals(builtin)))
        print(f"| {name} | {label} | {counts[0]} | {counts[1]} |")


if __name__ == "__main__":
    main()
