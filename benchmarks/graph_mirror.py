"""How well the mirror's "graph" path (codegen/judge/graphs.py) predicts TensorFlow graphs.

Builds random programs of + - * / sqrt exp over three args and constants, prints each as
the generated modules print programs, and runs it in TensorFlow eagerly and in
`tf.function` on float32 inputs over 60 decades, beside the mirror's "eager" and "graph"
paths. Programs whose mirror eager result differs from TensorFlow's eager result (exp and
sqrt kernels round differently here and there) are left out. Of the rest it counts those
whose graph result differs from eager, and how many of them the model reproduces bit for
bit, misses (Grappler changed it, the model did not) or gets otherwise wrong.

    python benchmarks/graph_mirror.py [--programs 200] [--seeds 0 1 2 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tensorflow as tf  # noqa: E402

from codegen.backends.tf.source import program_lines  # noqa: E402
from codegen.judge.numeric import run  # noqa: E402
from codegen.lower import Program, Step  # noqa: E402

CONSTANTS = (0.5, 3.0, 1e-20, 1e20, 7.25, 1.0 / 3)
OPS = ("add", "mul", "mul", "add", "div", "sub", "exp", "sqrt")


def random_program(rng: random.Random, n_steps: int) -> Program:
    names, steps = ["x", "y", "z"], []
    for i in range(n_steps):
        op, target = rng.choice(OPS), f"v{i}"
        if op in ("exp", "sqrt"):
            steps.append(Step(target, op, (rng.choice(names),)))
        else:
            a = rng.choice(names[-4:] + names[:2])
            b = rng.choice(CONSTANTS) if rng.random() < 0.35 else rng.choice(names)
            a, b = (b, a) if rng.random() < 0.3 and not isinstance(b, float) else (a, b)
            steps.append(Step(target, op, (a, b)))
        names.append(target)
    return Program(tuple(steps), (steps[-1].target,))


def as_tf(program: Program):
    lines = ["    " + line for line in program_lines(program, ["out"], "x")]
    namespace = {"tf": tf}
    exec("def f(x, y, z):\n" + "\n".join(lines) + "\n    return out\n", namespace)  # noqa: S102
    return namespace["f"]


def outcome(program: Program, columns: dict) -> str:
    same = lambda a, b: np.array_equal(a, b, equal_nan=True)  # noqa: E731
    fn, inputs = as_tf(program), [tf.constant(columns[k]) for k in "xyz"]
    eager, graph = fn(*inputs).numpy(), tf.function(fn)(*inputs).numpy()
    mirror_eager = run(program, columns, "float32", "eager")[0]
    mirror_graph = run(program, columns, "float32", "graph")[0]
    if not same(eager, mirror_eager):
        return "eager differs (left out)"
    if same(graph, eager):
        agrees = same(mirror_graph, graph)
        return "unchanged, model agrees" if agrees else "model changed it wrongly"
    if same(mirror_graph, graph):
        return "changed, model reproduces"
    return "changed, model missed" if same(mirror_graph, eager) else "changed, model differs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=200, help="per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    args = parser.parse_args()
    counts: Counter = Counter()
    draws = np.random.default_rng(0)
    for seed in args.seeds:
        rng = random.Random(seed)
        for _ in range(args.programs):
            program = random_program(rng, rng.randint(3, 9))
            signs = lambda: draws.choice([-1, 1], 64)  # noqa: E731
            columns = {
                k: (signs() * 10.0 ** draws.uniform(-30, 30, 64)).astype(np.float32) for k in "xyz"
            }
            counts[outcome(program, columns)] += 1
    for kind, n in sorted(counts.items()):
        print(f"{kind:28} {n:5}")
    changed = sum(n for kind, n in counts.items() if kind.startswith("changed"))
    print(f"Grappler changed {changed}; the model reproduces {counts['changed, model reproduces']}")


if __name__ == "__main__":
    main()
