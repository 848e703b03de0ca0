"""`hogen verify`: run generated ops in TensorFlow and measure them against the exact reference.

In: a `Spec` and the folder of generated modules. Out: `Row`s, one per op,
partial derivative, dtype and tool, with the figures of docs/design.md (mean
bits, p99 bits, failures). Tools: "hogen" (the generated op, derivatives
through nested GradientTapes) and "autodiff" (TF autodiff of the naive
`expr`, built from the same lowering as generated code, interpreted with TF
ops: no source text is evaluated). The exact values come from
`accuracy.reference`.

The generated op is measured on every path users run (`PATHS`): eager,
`tf.function` and `tf.function(jit_compile=True)`. The kernels differ between
them (Grappler rewrites `1/x` to `Reciprocal` in graphs, XLA fuses), so each
path is scored and a row reports the worst one, naming it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import sympy as sp  # noqa: E402
import tensorflow as tf  # noqa: E402

from codegen.derive import derive  # noqa: E402
from codegen.front.functions import ALL_FUNCTIONS  # noqa: E402
from codegen.front.spec import Spec  # noqa: E402
from codegen.judge import accuracy  # noqa: E402
from codegen.lower import Program, lower  # noqa: E402


@dataclass(frozen=True)
class Row:
    op: str
    partial: str
    dtype: str
    tool: str
    figures: accuracy.Figures
    path: str = "eager"  # the execution path these figures come from (the worst one measured)


def load_op(spec: Spec, out_dir: Path):
    """The public op from the generated module `out_dir/<name>.py`."""
    path = out_dir / f"{spec.name}.py"
    module_spec = importlib.util.spec_from_file_location(f"hogen_generated_{spec.name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, spec.name)


_TF_BINARY = {
    "add": tf.add,
    "sub": tf.subtract,
    "mul": tf.multiply,
    "div": tf.divide,
    "pow": tf.pow,
    "maximum": tf.maximum,
    "minimum": tf.minimum,
    "div_no_nan": tf.math.divide_no_nan,
}
_TF_MASKS = {  # `where` conditions (codegen.pieces)
    "less": tf.math.less,
    "less_equal": tf.math.less_equal,
    "greater": tf.math.greater,
    "greater_equal": tf.math.greater_equal,
    "equal": tf.math.equal,
    "not_equal": tf.math.not_equal,
    "logical_and": tf.math.logical_and,
    "logical_or": tf.math.logical_or,
    "logical_not": tf.math.logical_not,
    "select": tf.where,
}
_TF_UNARY = {
    "neg": tf.negative,
    "square": tf.square,
    "sqrt": tf.sqrt,
    "rsqrt": tf.math.rsqrt,
    "round": tf.math.round,
}


def _tf_function(name: str):
    """The TF callable named by the function table, e.g. tf.math.sigmoid."""
    target = tf
    for part in ALL_FUNCTIONS[name].tf_name.split(".")[1:]:
        target = getattr(target, part)
    return target


def run_tf(program: Program, inputs: dict[str, tf.Tensor]) -> tf.Tensor:
    """Interpret a lowered program with TensorFlow ops (differentiable by TF autodiff)."""
    values = dict(inputs)
    dtype = next(iter(inputs.values())).dtype

    def value(operand):
        return values[operand] if isinstance(operand, str) else tf.constant(operand, dtype)

    for step in program.steps:
        args = [value(o) for o in step.operands]
        if step.op in _TF_BINARY:
            values[step.target] = _TF_BINARY[step.op](args[0], args[1])
        elif step.op in _TF_MASKS:
            values[step.target] = _TF_MASKS[step.op](*args)
        elif step.op in _TF_UNARY:
            values[step.target] = _TF_UNARY[step.op](args[0])
        elif step.op == "clip":
            values[step.target] = tf.clip_by_value(*args)
        elif step.op == "no_neg_inf":
            values[step.target] = tf.math.maximum(args[0], dtype.min)
        elif step.op == "no_pos_inf":
            values[step.target] = tf.math.minimum(args[0], dtype.max)
        elif step.op == "fill_like":
            values[step.target] = tf.math.sign(args[0]) * 0.0 + args[1]
        elif step.op == "where_less_equal":
            values[step.target] = tf.where(args[0] <= args[1], args[2], args[3])
        elif step.op == "where_less":
            values[step.target] = tf.where(args[0] < args[1], args[2], args[3])
        elif step.op == "where_greater_equal":
            values[step.target] = tf.where(args[0] >= args[1], args[2], args[3])
        elif step.op == "where_greater":
            values[step.target] = tf.where(args[0] > args[1], args[2], args[3])
        else:
            values[step.target] = _tf_function(step.op)(*args)
    out = value(program.outputs[0])
    return out + tf.zeros_like(next(iter(inputs.values())))


def partial_derivative(fn, inputs: list[tf.Tensor], sequence: list[int]) -> tf.Tensor:
    """d^k fn / d inputs[sequence[0]] ... d inputs[sequence[-1]], elementwise, by nested tapes."""
    if not sequence:
        return fn(*inputs)
    with tf.GradientTape() as tape:
        tape.watch(inputs[sequence[0]])
        inner = partial_derivative(fn, inputs, sequence[1:])
    grad = tape.gradient(
        inner, inputs[sequence[0]], unconnected_gradients=tf.UnconnectedGradients.ZERO
    )
    return grad


PATHS = ("eager", "function", "xla")  # what `hogen verify` runs the generated op on


def on_path(fn, sequence: tuple[int, ...], path: str):
    """The partial `sequence` of `fn`, as a callable on the inputs, run eagerly or traced."""

    def partial(*inputs):
        return partial_derivative(fn, list(inputs), list(sequence))

    if path == "eager":
        return partial
    return tf.function(partial, jit_compile=path == "xla", autograph=False, reduce_retracing=True)


@contextlib.contextmanager
def _quiet_tracing():
    """TF's Python logger warns when many fresh functions trace; measuring traces each on
    purpose, so its warnings are held back while it does."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        yield
    finally:
        logger.setLevel(level)


def _worse(a: accuracy.Figures, b: accuracy.Figures) -> bool:
    """True if `a` is further from the promise than `b`: broken first, then failures, p99, mean."""

    def key(f):
        return (not f.keeps_promise(), f.failures, f.p99_bits, f.mean_bits)

    return key(a) > key(b)


def _measure(fn, target, inputs, exact, dtype: str, paths) -> tuple[accuracy.Figures, str]:
    """The worst figures of `fn`'s partial over `paths`, and the path they come from."""
    worst, worst_path = None, paths[0]
    for path in paths:
        with _quiet_tracing():
            approx = on_path(fn, target.sequence, path)(*inputs).numpy()
        figures = accuracy.figures(approx, exact, dtype)
        if worst is None or _worse(figures, worst):
            worst, worst_path = figures, path
    return worst, worst_path


def naive_op(spec: Spec):
    """TF autodiff's view of the spec: `expr` (params at their defaults) as plain TF ops."""
    values = {s: v for s, (_, v) in zip(spec.param_symbols, spec.params)}
    program = lower([spec.expr.subs(values)], {s: s.name for s in spec.arg_symbols})
    return lambda *args: run_tf(program, dict(zip(spec.args, args)))


@dataclass(frozen=True)
class Target:
    """One partial to measure: its name (f_xy), the args to differentiate by, the exact expr."""

    name: str
    sequence: tuple[int, ...]
    expr: sp.Expr


def targets(spec: Spec) -> list[Target]:
    """Every partial of orders 0..order, params substituted by their defaults."""
    values = {s: v for s, (_, v) in zip(spec.param_symbols, spec.params)}
    out = []
    for partial in derive(spec).partials:
        sequence = tuple(i for i, n in enumerate(partial.index) for _ in range(n))
        name = "f" + ("_" if sequence else "") + "".join(spec.args[i] for i in sequence)
        out.append(Target(name, sequence, partial.expr.subs(values)))
    return out


def measured_rows(
    spec: Spec, samples: int, tools: dict, measure, seed: int = accuracy.VERIFY_SEED
) -> list[Row]:
    """One `Row` per partial, dtype and tool: `measure(tool, fn, target, points, exact, dtype)`
    gives its figures and path, at `samples` points against the exact reference. The loop of
    `verify_spec` here and of `frameworks.verify_spec` for JAX and PyTorch.

    The default seed's points are ones no build chose its forms on (`accuracy.VERIFY_SEED`);
    `accuracy.CHOICE_SEEDS` give those it chose on."""
    rows = []
    for target in targets(spec):
        for dtype in accuracy.DTYPES:
            points = accuracy.sample_points(spec.domain, dtype, samples, seed)
            exact = accuracy.reference(
                target.expr,
                spec.arg_symbols,
                points,
                dtype,
                cache_dir=accuracy.default_cache_dir(),
            )
            for tool, fn in tools.items():
                figures, path = measure(tool, fn, target, points, exact, dtype)
                rows.append(Row(spec.name, target.name, dtype, tool, figures, path))
    return rows


def verify_spec(
    spec: Spec,
    out_dir: Path,
    samples: int = 2000,
    extra_tools=None,
    paths=PATHS,
    seed: int = accuracy.VERIFY_SEED,
) -> list[Row]:
    """Figures of the generated op and of naive autodiff, every partial, float32 and float64.

    The generated op is measured on each of `paths` and reported at its worst; the naive
    autodiff and `extra_tools` ({name: callable on the args}) are measured eagerly.
    """
    tools = {"hogen": load_op(spec, out_dir), "autodiff": naive_op(spec), **(extra_tools or {})}

    def measure(tool, fn, target, points, exact, dtype):
        inputs = [tf.constant(points[:, i]) for i in range(len(spec.args))]
        tool_paths = paths if tool == "hogen" else ("eager",)
        return _measure(fn, target, inputs, exact, dtype, tool_paths)

    return measured_rows(spec, samples, tools, measure, seed)


def format_table(rows: list[Row]) -> str:
    """A plain-text table: hogen (its worst path) beside autodiff, every op, partial and dtype."""
    header = (
        f"{'op':14} {'partial':8} {'dtype':8} | {'hogen mean':>10} {'p99':>5} {'fail':>5} "
        f"{'ok':>3} {'worst path':>10} | {'autodiff mean':>13} {'p99':>5} {'fail':>5}"
    )
    lines = [header, "-" * len(header)]
    by_key = {(r.op, r.partial, r.dtype, r.tool): r.figures for r in rows}
    for r in rows:
        if r.tool != "hogen":
            continue
        a = by_key.get((r.op, r.partial, r.dtype, "autodiff"))
        h = r.figures
        ok = "yes" if h.keeps_promise() else "NO"
        lines.append(
            f"{r.op:14} {r.partial:8} {r.dtype:8} | {h.mean_bits:10.2f} {h.p99_bits:5.1f} "
            f"{h.failures:5d} {ok:>3} {r.path:>10} | {a.mean_bits:13.2f} {a.p99_bits:5.1f} "
            f"{a.failures:5d}"
        )
    lines.append(f"(hogen measured on each path: {', '.join(PATHS)}; each row shows the worst)")
    return "\n".join(lines)


def write_json(rows: list[Row], path: Path) -> None:
    data = [{**asdict(r), "figures": asdict(r.figures)} for r in rows]
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
