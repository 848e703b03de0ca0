"""Shared by the per-framework runners of `hogen verify`: loading a generated module and
the naive program of a spec.

In: a spec and the folder of its generated module. Out: the module's public op
(`load_op`), and the spec's `expr` with params at their defaults, lowered (`naive_program`),
which each framework interprets (`run`) with its own ops for the "autodiff" column.
"""

from __future__ import annotations

import importlib.util
import operator
from pathlib import Path

from codegen.front.spec import Spec
from codegen.lower import Program, lower


def load_op(spec: Spec, out_dir: Path, backend: str):
    """The public op from the generated module `out_dir/<name>.py`."""
    path = Path(out_dir) / f"{spec.name}.py"
    module_spec = importlib.util.spec_from_file_location(f"hogen_{backend}_{spec.name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, spec.name)


def run(program: Program, inputs: dict, step, zeros_like):
    """Interpret a lowered program: `step(op)` is the framework's callable for an op, and the
    output is broadcast against every input with `zeros_like`."""
    values = dict(inputs)
    for s in program.steps:
        args = [values[o] if isinstance(o, str) else o for o in s.operands]
        values[s.target] = step(s.op)(*args)
    out = program.outputs[0]
    out = values[out] if isinstance(out, str) else out
    return out + zeros_like(sum(inputs.values()))


def naive_program(spec: Spec) -> Program:
    """The spec's `expr`, params substituted by their defaults, lowered as one program."""
    values = {s: v for s, (_, v) in zip(spec.param_symbols, spec.params)}
    return lower([spec.expr.subs(values)], {s: s.name for s in spec.arg_symbols})


# Where conditions' masks, by the operators JAX arrays and torch tensors both overload.
MASK_STEPS = {
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "logical_and": operator.and_,
    "logical_or": operator.or_,
    "logical_not": operator.invert,
}
