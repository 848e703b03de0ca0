"""Speed and memory of generated ops beside TensorFlow's built-ins and plain autodiff.

In: nothing (the generated ops are imported from `generated/`). Out: markdown tables on
stdout (and with `--json PATH`, the raw figures).

What is timed, as docs/design.md ("Performance, defined") says: the value, f' and f''
of a 1-D float32 tensor through two nested GradientTapes, for three implementations of one
function -- the hogen op, the TF built-in, and TF autodiff of the naive expression -- in
eager mode, inside `tf.function`, and inside `tf.function(jit_compile=True)` (the whole
nested-tape computation is wrapped). The three are run interleaved (A, B, C, A, B, C, ...)
in one process after a warm-up, each rep a batch of calls long enough to time; the figure
is the median time per call. Ratios are hogen / built-in and hogen / naive: below 1.0 the
hogen op is faster.

Memory kept for the backward pass is measured in a child process that runs TensorFlow with
its BFC allocator on the CPU (TF_CPU_ALLOCATOR_USE_BFC=true), where
`tf.config.experimental.get_memory_info('CPU:0')` counts live bytes: the bytes alive after
`y = f(x)` under one GradientTape (and under two nested tapes), minus the input and the
output, per element of x, less the same figure for `tf.math.negative` (whose gradient needs
nothing: what remains is the tape's own bookkeeping).

    python benchmarks/bench_ops.py            # full: sizes 10 .. 10^7 (about 5 minutes on 2 cores)
    python benchmarks/bench_ops.py --quick    # sizes 10 and 10^5, fewer reps
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import generated  # noqa: E402

MODES = ("eager", "function", "xla")
SIZES_FULL = (10, 10**3, 10**5, 10**7)
SIZES_QUICK = (10, 10**5)
MEMORY_SIZE = 10**6


def _naive_log1pexp(x):
    return tf.math.log(1.0 + tf.math.exp(x))


def _naive_sigmoid(x):
    return 1.0 / (1.0 + tf.math.exp(-x))


def _naive_log_sigmoid(x):
    return tf.math.log(1.0 / (1.0 + tf.math.exp(-x)))


def _naive_silu(x):
    return x / (1.0 + tf.math.exp(-x))


def _naive_gelu(x):
    return x / 2.0 * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


def _gelu_exact(x):
    return tf.nn.gelu(x, approximate=False)


# function name -> (hogen op, built-in, naive expression under TF autodiff)
FUNCTIONS = {
    "log1pexp": (generated.log1pexp, tf.math.softplus, _naive_log1pexp),
    "sigmoid": (generated.sigmoid, tf.math.sigmoid, _naive_sigmoid),
    "log_sigmoid": (generated.log_sigmoid, tf.math.log_sigmoid, _naive_log_sigmoid),
    "silu": (generated.silu, tf.nn.silu, _naive_silu),
    "gelu": (generated.gelu, _gelu_exact, _naive_gelu),
}
IMPLS = ("hogen", "builtin", "naive")
BUILTIN_NAMES = {
    "log1pexp": "tf.math.softplus",
    "sigmoid": "tf.math.sigmoid",
    "log_sigmoid": "tf.math.log_sigmoid",
    "silu": "tf.nn.silu",
    "gelu": "tf.nn.gelu(approximate=False)",
}


def value_and_two_derivatives(f):
    """x -> (f(x), f'(x), f''(x)) through two nested GradientTapes."""

    def run(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            d1 = inner.gradient(y, x)
        d2 = outer.gradient(d1, x)
        return y, d1, d2

    return run


def make_callable(f, mode: str):
    run = value_and_two_derivatives(f)
    if mode == "eager":
        return run
    return tf.function(run, jit_compile=(mode == "xla"), reduce_retracing=True)


def _time_batch(fn, x, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn(x)
    return (time.perf_counter() - start) / n


def measure_cell(fns: dict, x, reps: int, target_s: float) -> dict[str, float]:
    """Median seconds per call of each callable, run interleaved after a warm-up."""
    batch = {}
    for name, fn in fns.items():
        fn(x)  # trace / compile
        once = _time_batch(fn, x, 1)
        batch[name] = max(1, min(1000, int(target_s / max(once, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            samples[name].append(_time_batch(fn, x, batch[name]))
    return {name: statistics.median(times) for name, times in samples.items()}


def check_agreement(fns: dict, x, where: str) -> None:
    """The three implementations compute the same numbers (on moderate inputs)."""
    results = {name: [t.numpy() for t in fn(x)] for name, fn in fns.items()}
    base = results["builtin"]
    for name, outs in results.items():
        for order, (got, want) in enumerate(zip(outs, base)):
            if not np.allclose(got, want, rtol=1e-3, atol=1e-5):
                raise SystemExit(
                    f"{where}: {name} disagrees with the built-in at order {order}:\n"
                    f"x = {x.numpy()}\n{name}: {got}\nbuilt-in: {want}"
                )


def time_all(sizes, modes, functions, reps_for, target_s) -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    for size in sizes:
        x = tf.constant(rng.uniform(-8.0, 8.0, size).astype(np.float32))
        for mode in modes:
            for fname in functions:
                fns = {impl: make_callable(f, mode) for impl, f in zip(IMPLS, FUNCTIONS[fname])}
                if size == 10:
                    check_agreement(fns, x, f"{fname} {mode}")
                t0 = time.perf_counter()
                med = measure_cell(fns, x, reps_for(size), target_s)
                row = {"function": fname, "mode": mode, "size": size, **med}
                row["vs_builtin"] = med["hogen"] / med["builtin"]
                row["vs_naive"] = med["hogen"] / med["naive"]
                rows.append(row)
                print(
                    f"  {fname:12s} {mode:8s} {size:>9d}  hogen/builtin {row['vs_builtin']:.2f}"
                    f"  hogen/naive {row['vs_naive']:.2f}  ({time.perf_counter() - t0:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    return rows


# ---- memory kept for the backward pass (child process, BFC allocator) ----


def _live_bytes() -> int:
    return tf.config.experimental.get_memory_info("CPU:0")["current"]


def _kept_bytes(f, x, tapes: int) -> int:
    """Bytes alive after the forward pass under `tapes` nested tapes, minus x and y."""
    before = _live_bytes()
    if tapes == 1:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        kept = _live_bytes() - before - y.numpy().nbytes
        del tape, y
    else:
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            kept = _live_bytes() - before - y.numpy().nbytes
        del inner, outer, y
    return kept


def _kept_tensors(f, x, mode: str, tapes: int) -> float:
    g = f if mode == "eager" else tf.function(f, jit_compile=(mode == "xla"))
    _kept_bytes(g, x, tapes)  # trace, and let the allocator settle
    return min(_kept_bytes(g, x, tapes) for _ in range(3)) / x.numpy().nbytes


def memory_child(functions, modes) -> list[dict]:
    """Kept bytes per element of x, less what tf.math.negative keeps (the tape's own ~0.05)."""
    x = tf.constant(np.random.default_rng(0).uniform(-8, 8, MEMORY_SIZE).astype(np.float32))
    base = {(m, t): _kept_tensors(tf.math.negative, x, m, t) for m in modes for t in (1, 2)}
    rows = []
    for fname in functions:
        for mode in modes:
            row = {"function": fname, "mode": mode}
            for impl, f in zip(IMPLS, FUNCTIONS[fname]):
                for tapes in (1, 2):
                    row[f"{impl}_{tapes}"] = _kept_tensors(f, x, mode, tapes) - base[mode, tapes]
            rows.append(row)
    return rows


def measure_memory(functions, modes) -> list[dict]:
    env = dict(os.environ, TF_CPU_ALLOCATOR_USE_BFC="true", TF_CPP_MIN_LOG_LEVEL="3")
    args = [sys.executable, __file__, "--memory-child", "--functions", *functions]
    args += ["--modes", *modes]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- work per call: op counts, which do not depend on how busy the machine is ----

_NOT_KERNELS = {"Const", "NoOp", "Identity", "IdentityN", "StopGradient", "Placeholder"}
_NOT_KERNELS |= {"_Arg", "_Retval", "_Send", "_Recv"}
_TRANSCENDENTAL = {"exponential", "exponential-minus-one", "log", "log-plus-one", "logistic"}
_TRANSCENDENTAL |= {"tanh", "erf", "sqrt", "rsqrt", "power", "divide"}


def _eager_ops(run, x) -> int:
    """Ops eager mode executes for one call, counted by an op callback (what tfdbg uses)."""
    from tensorflow.python.framework import op_callbacks

    executed = []

    def count(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is None:  # an eager execution, not a graph op being built
            executed.append(op_type)

    op_callbacks.add_op_callback(count)
    try:
        run(x)
    finally:
        op_callbacks.remove_op_callback(count)
    return len(executed)


def _graph_kernels(run, n: int) -> int:
    """Kernels a graph runs after Grappler (TF1 session, partition graphs)."""
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.compat.v1.placeholder(tf.float32, [n])
        outs = run(xp)
        with tf.compat.v1.Session(graph=graph) as session:
            meta = tf.compat.v1.RunMetadata()
            options = tf.compat.v1.RunOptions(output_partition_graphs=True)
            feed = {xp: np.linspace(-8.0, 8.0, n, dtype=np.float32)}
            session.run(outs, feed, options=options, run_metadata=meta)
    nodes = (node for part in meta.partition_graphs for node in part.node)
    return sum(1 for node in nodes if node.op not in _NOT_KERNELS)


def _xla_cost(run, x) -> tuple[int, int]:
    """(transcendental instructions, fusions) in XLA's optimized HLO."""
    compiled = tf.function(run, jit_compile=True).experimental_get_compiler_ir(x)
    hlo = compiled(stage="optimized_hlo")
    opcodes = re.findall(r"= f(?:16|32|64)\[[^\]]*\][^ ]* ([a-z\-]+)\(", hlo)
    return sum(op in _TRANSCENDENTAL for op in opcodes), opcodes.count("fusion")


def op_counts(functions) -> list[dict]:
    x = tf.constant(np.linspace(-8.0, 8.0, 1000, dtype=np.float32))
    rows = []
    for fname in functions:
        for impl, f in zip(IMPLS, FUNCTIONS[fname]):
            run = value_and_two_derivatives(f)
            trans, fusions = _xla_cost(run, x)
            rows.append(
                {
                    "function": fname,
                    "impl": impl,
                    "eager_ops": _eager_ops(run, x),
                    "graph_kernels": _graph_kernels(run, 1000),
                    "xla_transcendentals": trans,
                    "xla_fusions": fusions,
                }
            )
    return rows


# ---- report ----


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def _size(n: int) -> str:
    return "10" if n == 10 else f"10^{round(math.log10(n))}"


def timing_table(rows: list[dict]) -> str:
    lines = [
        "| function | mode | size | hogen ms | built-in ms | naive ms "
        "| hogen / built-in | hogen / naive |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['function']} | {r['mode']} | {_size(r['size'])} | {_ms(r['hogen'])} "
            f"| {_ms(r['builtin'])} | {_ms(r['naive'])} | {r['vs_builtin']:.2f} "
            f"| {r['vs_naive']:.2f} |"
        )
    return "\n".join(lines)


def ratio_summary(rows: list[dict]) -> str:
    """One line per function and mode: hogen / built-in (hogen / naive) at each size."""
    sizes = sorted({r["size"] for r in rows})
    head = " | ".join(_size(s) for s in sizes)
    lines = [
        f"| function | mode | {head} |",
        "|---|---|" + "---:|" * len(sizes),
    ]
    by_key = {(r["function"], r["mode"], r["size"]): r for r in rows}
    for fname in dict.fromkeys(r["function"] for r in rows):
        for mode in dict.fromkeys(r["mode"] for r in rows):
            cells = []
            for s in sizes:
                r = by_key.get((fname, mode, s))
                cells.append(f"{r['vs_builtin']:.2f} ({r['vs_naive']:.2f})" if r else "")
            lines.append(f"| {fname} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def memory_table(rows: list[dict]) -> str:
    lines = [
        "| function | mode | hogen, 1 tape | built-in, 1 tape | naive, 1 tape "
        "| hogen, 2 tapes | built-in, 2 tapes | naive, 2 tapes |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cells = " | ".join(f"{round(r[f'{i}_{t}'], 1) + 0.0:.1f}" for t in (1, 2) for i in IMPLS)
        lines.append(f"| {r['function']} | {r['mode']} | {cells} |")
    return "\n".join(lines)


def op_table(rows: list[dict]) -> str:
    lines = [
        "| function | implementation | eager ops | graph kernels after Grappler "
        "| XLA transcendentals | XLA fusions |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['function']} | {r['impl']} | {r['eager_ops']} | {r['graph_kernels']} "
            f"| {r['xla_transcendentals']} | {r['xla_fusions']} |"
        )
    return "\n".join(lines)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} logical cores; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; TensorFlow {tf.__version__} "
        f"(intra-op threads {tf.config.threading.get_intra_op_parallelism_threads() or 'default'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 10 and 10^5, fewer reps")
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=FUNCTIONS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--sizes", nargs="+", type=int, help="override the sizes")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory table")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--ops-only", action="store_true", help="only the op-count table")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.memory_child:
        print(json.dumps(memory_child(args.functions, args.modes)))
        return

    if args.ops_only:
        print(op_table(op_counts(args.functions)))
        return

    sizes = args.sizes or (SIZES_QUICK if args.quick else SIZES_FULL)
    if args.quick:
        reps_for, target_s = (lambda n: 5 if n >= 10**6 else 9), 0.01
    else:
        reps_for, target_s = (lambda n: 7 if n >= 10**6 else 21), 0.02

    started = time.perf_counter()
    rows = time_all(sizes, args.modes, args.functions, reps_for, target_s)
    memory = [] if args.no_memory else measure_memory(args.functions, args.modes)
    ops = op_counts(args.functions)
    elapsed = time.perf_counter() - started

    print(f"Machine: {machine()}\n")
    print("Ratios: hogen / built-in (hogen / naive autodiff); value + f' + f'' via nested tapes,")
    print("float32, median of interleaved runs. Below 1.00 the hogen op is faster.\n")
    print(ratio_summary(rows))
    print("\nMedian milliseconds per call (value + f' + f''):\n")
    print(timing_table(rows))
    if memory:
        print(
            f"\nMemory a forward pass keeps for the backward pass, in tensors the size of x "
            f"(x of {MEMORY_SIZE} float32, x and y not counted):\n"
        )
        print(memory_table(memory))
    print(
        "\nWork per call of value + f' + f'' (x of 1000 float32): ops eager executes, "
        "kernels a graph runs after Grappler, transcendental instructions (exp, log, log1p, "
        "tanh, erf, divide, ...) and fusions in XLA's optimized HLO:\n"
    )
    print(op_table(ops))
    print(f"\n({elapsed:.0f} s)")
    if args.json:
        figures = {"machine": machine(), "timing": rows, "memory": memory, "ops": ops}
        args.json.write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
