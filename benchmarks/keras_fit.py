"""Keras `fit` step time with a hogen activation beside the same model with the built-in.

In: nothing (the generated ops are imported from `generated/`, the built-ins from
`bench_ops.FUNCTIONS`). Out: a markdown table on stdout (and with `--json PATH`, the raw
figures): per activation and `jit_compile` setting, the median time of one training step
of a small MLP, hogen's and the built-in's, and their ratio (below 1.0 the hogen
activation is faster).

The model is what issue 16 names: Dense(width) -> activation -> Dense(width) -> activation
-> Dense(1), mean squared error, SGD, float32, one fixed batch. Keras's first-order
training differentiates the activation once, so the step runs the op's value and f'
(hogen's custom gradient) where the built-in runs its own. Both models are built from the
same initial weights and stepped interleaved (hogen, built-in, hogen, ...) after a warm-up,
each rep `--steps` calls of `train_on_batch`, so both see the same machine state. On a
CPU-only machine Keras's `jit_compile="auto"` resolves to False; both settings are forced
here.

    python benchmarks/keras_fit.py                       # every activation, both settings
    python benchmarks/keras_fit.py --functions silu --reps 5 --batch 1024
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_ops import BUILTIN_NAMES, FUNCTIONS  # noqa: E402


def _model(activation, width: int, features: int, jit_compile: bool) -> keras.Model:
    keras.utils.set_random_seed(0)  # the same initial weights for both activations
    model = keras.Sequential(
        [
            keras.Input((features,)),
            keras.layers.Dense(width, activation=activation),
            keras.layers.Dense(width, activation=activation),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(1e-3), loss="mse", jit_compile=jit_compile)
    return model


def _step_seconds(model: keras.Model, batch, steps: int) -> float:
    x, y = batch
    start = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    return (time.perf_counter() - start) / steps


def measure(name: str, jit_compile: bool, args) -> dict:
    """Median step time of the hogen and the built-in activation, interleaved."""
    hogen_op, builtin, _ = FUNCTIONS[name]
    rng = np.random.default_rng(0)
    batch = (
        rng.normal(size=(args.batch, args.features)).astype(np.float32),
        rng.normal(size=(args.batch, 1)).astype(np.float32),
    )
    models = {
        "hogen": _model(hogen_op, args.width, args.features, jit_compile),
        "builtin": _model(builtin, args.width, args.features, jit_compile),
    }
    for model in models.values():  # trace and compile before timing
        _step_seconds(model, batch, 3)
    times = {impl: [] for impl in models}
    for _ in range(args.reps):
        for impl, model in models.items():
            times[impl].append(_step_seconds(model, batch, args.steps))
    hogen, built_in = (statistics.median(times[i]) for i in ("hogen", "builtin"))
    return {
        "function": name,
        "builtin": BUILTIN_NAMES[name],
        "jit_compile": jit_compile,
        "hogen_ms": hogen * 1e3,
        "builtin_ms": built_in * 1e3,
        "ratio": hogen / built_in,
    }


def _table(rows: list[dict]) -> str:
    lines = [
        "| activation | built-in | jit_compile | hogen ms/step | built-in ms/step"
        " | hogen ÷ built-in |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['function']} | `{r['builtin']}` | {r['jit_compile']} | {r['hogen_ms']:.2f} "
            f"| {r['builtin_ms']:.2f} | {r['ratio']:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", nargs="*", default=list(FUNCTIONS))
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = [measure(n, jit, args) for n in args.functions for jit in (True, False)]
    cpu = platform.processor() or platform.machine()
    print(
        f"Keras {keras.__version__}, TensorFlow {tf.__version__}, {cpu}, {os.cpu_count()} cores;"
        f" batch {args.batch}, width {args.width}, median of {args.reps} reps of {args.steps}"
        " steps.\n"
    )
    print(_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
