"""NumPy mirror of the TensorFlow ops a lowered `Program` prints to.

In: a `Program` (from `lower`), input columns and a dtype name. Out: the
program's outputs as NumPy arrays, computed in that dtype op by op, the way
TensorFlow computes them, so that `stabilize` can measure candidate forms
without importing TensorFlow. `verify` later measures the real ops in
TensorFlow; this module only has to rank candidates the same way.

`PATHS` are the ways TensorFlow may run the same program: "eager" op by op,
"graph" with its sums and products regrouped as Grappler regroups them in `tf.function`
(`graphs`), and "xla", whose algebraic simplifier reassociates divisions before it
compiles, to a fixed point (`(A/B)/(C/D)` becomes `(A*D)/(B*C)`, `A/B/C` becomes `A/(B*C)`,
`A/(B/C)` becomes `(A*C)/B`, `A/exp(B)` becomes `A*exp(-B)` and `A/pow(B, C)` becomes
`A*pow(B, -C)`), which overflows or underflows where `A*D`, `B*C`, `A*C`, `exp(-B)` or
`pow(B, -C)` leaves the float range although every step of the program stays inside it:
(x/m)/(y/m) is inf under XLA at x = m = 1e214, y = 1e84. XLA also expands sinh and cosh
into exps of x + log(1/2) (`mirror_ops.XLA_EXPANDED`), |x| ulps off where x is large.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from codegen.judge.graphs import regrouped, regrouped_in_graphs
from codegen.judge.mirror_ops import (
    PICKS,
    XLA_EXPANDED,
    all_flushed,
    apply_op,
    finished,
    op_function,
    operand_value,
)
from codegen.lower import Program

PATHS = ("eager", "xla", "graph")


@functools.lru_cache(maxsize=4096)
def paths_for(program: Program) -> tuple[str, ...]:
    """The paths on which `program` may compute other values than eager mode does: XLA where
    its division rewrites apply, graphs where Grappler regroups a sum or product (kept per
    program: a form is measured at each screening round, on each of its sample sets)."""
    xla = ("xla",) if rewritten_under_xla(program) else ()
    return ("eager", *xla, *(("graph",) if regrouped_in_graphs(program) else ()))


def _xla_division(step, producers: dict, values: dict, quotients: dict, dtype) -> np.ndarray:
    """A division as XLA's simplifier leaves it, its rules applied to a fixed point: a/exp(b)
    and a/pow(b, c) become products; otherwise every division among the operands is merged
    in, (a/b)/(c/d) -> (a*d)/(b*c), (a/b)/c -> a/(b*c), a/(b/c) -> (a*c)/b, where a, b, c
    and d are the numerators and denominators XLA left those divisions with (`quotients`)."""
    num, den = step.operands
    inner_den = producers.get(den)
    if inner_den is not None and inner_den.op in ("exp", "pow"):
        power = _xla_reciprocal_power(operand_value(num, values, dtype), inner_den, values, dtype)
        if power is not None:
            return power
    top, bottom = quotients.get(num), quotients.get(den)
    if top is not None and bottom is not None:
        p, q = (
            apply_op("mul", [top[0], bottom[1]], dtype),
            apply_op("mul", [top[1], bottom[0]], dtype),
        )
    elif top is not None:
        p, q = top[0], apply_op("mul", [top[1], operand_value(den, values, dtype)], dtype)
    elif bottom is not None:
        p, q = apply_op("mul", [operand_value(num, values, dtype), bottom[1]], dtype), bottom[0]
    else:
        p, q = operand_value(num, values, dtype), operand_value(den, values, dtype)
    quotients[step.target] = (p, q)
    return apply_op("div", [p, q], dtype)


def _fold_unit_factor(step, quotients: dict, known=None) -> None:
    """1*q is q to XLA's simplifier: a quotient multiplied by 1 is still a quotient its
    division rules merge (d_inv_sq_cancel's f_x series, 1*(p/x**2)/x**2, became p/x**4 under
    XLA and was -0.0 at x = 4.7e9 in float32, where it is -2.4e-38). Records the step as
    the quotient its operand is, in `quotients`; `known`: the quotients' names, where not
    the keys of `quotients`."""
    constants = [o for o in step.operands if not isinstance(o, str)]
    names = [o for o in step.operands if isinstance(o, str)]
    if len(names) == 1 and constants and all(float(c) == 1.0 for c in constants):
        if names[0] in (quotients if known is None else known):
            quotients[step.target] = quotients.get(names[0])


def rewritten_under_xla(program: Program) -> bool:
    """True if XLA's division rewrites (`_xla_division`) may touch a step of `program`, or it
    has a step XLA expands into other ops (`XLA_EXPANDED`): only then can the "xla" path
    differ from "eager"."""
    producers, divisions = {}, set()
    if any(step.op in XLA_EXPANDED for step in program.steps):
        return True
    for step in program.steps:
        unit = {}
        if step.op == "mul":  # 1*q is the quotient q to XLA (`_fold_unit_factor`)
            _fold_unit_factor(step, unit, divisions)
        producers[step.target] = "div" if unit else step.op
        divisions |= {step.target} if producers[step.target] == "div" else set()
        if step.op != "div":
            continue
        num, den = (producers.get(o) if isinstance(o, str) else None for o in step.operands)
        if num == "div" or den in ("div", "exp", "pow"):
            return True
    return False


def _xla_reciprocal_power(a: np.ndarray, den, values: dict, dtype) -> np.ndarray | None:
    """a/exp(b) -> a*exp(-b) and a/pow(b, c) -> a*pow(b, -c), as XLA rewrites them: exp(-b)
    or pow(b, -c) is flushed to 0 where it is subnormal, though a/exp(b) is a normal number.
    (pow with the exponents 0, 1, 2 and -1 XLA turns into arithmetic first.)"""
    operands = [operand_value(o, values, dtype) for o in den.operands]
    if den.op == "exp":
        return apply_op("mul", [a, apply_op("exp", [np.negative(operands[0])], dtype)], dtype)
    exponent = den.operands[1]
    if isinstance(exponent, str) or float(exponent) in (0.0, 1.0, 2.0, -1.0):
        return None
    power = apply_op("pow", [operands[0], np.negative(operands[1])], dtype)
    return apply_op("mul", [a, power], dtype)


def run(
    program: Program, inputs: dict[str, np.ndarray], dtype: str, path: str = "eager"
) -> list[np.ndarray]:
    """Evaluate every output of `program` as TensorFlow runs it on `path` (one of `PATHS`);
    inputs are cast to `dtype` first."""
    return run_paths(program, inputs, dtype, (path,))[0]


def run_paths(
    program: Program, inputs: dict[str, np.ndarray], dtype: str, paths: tuple[str, ...]
) -> list[list[np.ndarray]]:
    """`run` on each of `paths`, eager mode first where it is one of them: a step another
    path computes from the same arrays as eager mode did is eager mode's output, not
    computed again (the paths differ only from the steps a rewrite touches on). Eager mode
    and graphs run the program compiled to a straight line (`_straight`); XLA, whose
    division rewrites look at what each operand was made by, runs it step by step."""
    np_dtype = np.dtype(dtype)
    columns = {name: np.asarray(column, dtype=np_dtype) for name, column in inputs.items()}
    shape = np.broadcast_shapes(*(v.shape for v in inputs.values()))
    outputs, eager = {}, None
    with np.errstate(all="ignore"):
        for path in sorted(paths, key=lambda p: p != "eager"):
            if path == "xla":
                values = _evaluated(program, dict(columns), np_dtype, path, _by_target(eager))
                outs = [operand_value(out, values, np_dtype) for out in program.outputs]
            else:
                steps_of = regrouped(program) if path == "graph" else program
                line = _straight(steps_of, np_dtype, program if eager is not None else None)
                slots = _run_straight(line, columns, eager[1] if eager is not None else None)
                eager = (line, slots, columns) if path == "eager" else eager
                outs = [slots[i] for i in line.outputs]
            outputs[path] = [np.broadcast_to(out, shape) for out in outs]
    return [outputs[path] for path in paths]


@dataclass(frozen=True)
class _Straight:
    """A program compiled for one dtype. Its slots hold the inputs, the constants, then each
    step's output in order; a step is (function, returns a mask, its operands' slots, flush,
    the slot of eager mode's same output where it is reused, else None)."""

    program: Program
    inputs: tuple[str, ...]
    constants: tuple[np.ndarray, ...]
    steps: tuple[tuple, ...]
    outputs: tuple[int, ...]
    dtype: np.dtype
    slot_of: dict  # each step's target -> its slot


@functools.lru_cache(maxsize=1024)
def _straight(program: Program, dtype: np.dtype, eager: Program | None) -> _Straight:
    """`program` compiled to a straight line over slots; with `eager` (the program eager
    mode ran), each step eager mode ran on the same operands reads eager mode's slot."""
    inputs, constants, slot = _slots(program, dtype)
    eager_slot = _straight(eager, dtype, None).slot_of if eager is not None else {}
    eager_step = {s.target: s for s in eager.steps} if eager is not None else {}
    reused, steps, producers = set(inputs), [], {}
    for step in program.steps:
        names = [o for o in step.operands if isinstance(o, str)]
        same = eager_step.get(step.target) == step and all(o in reused for o in names)
        reused |= {step.target} if same else set()
        function, mask = op_function(step.op, dtype)
        flush = not (step.op in PICKS and all_flushed(step.operands, producers, dtype))
        operands = tuple(slot[_name(o)] for o in step.operands)
        steps.append((function, mask, operands, flush, eager_slot[step.target] if same else None))
        producers[step.target] = step
        slot[step.target] = len(inputs) + len(constants) + len(steps) - 1
    outputs = tuple(slot[_name(o)] for o in program.outputs)
    targets = {s.target: slot[s.target] for s in program.steps}
    return _Straight(program, inputs, constants, tuple(steps), outputs, dtype, targets)


def _name(operand) -> str | tuple:
    """An operand's key among the slots: a name, or a constant by its type and digits (-0.0
    and 0.0 are equal floats but not the same constant)."""
    return operand if isinstance(operand, str) else (type(operand).__name__, repr(operand))


def _slots(program: Program, dtype: np.dtype) -> tuple[tuple, tuple, dict]:
    """(the input names, the constants as `operand_value` reads them, the slot of each), in the
    order the program first uses them."""
    made = {s.target for s in program.steps}
    operands = [o for s in program.steps for o in s.operands] + list(program.outputs)
    inputs = tuple(dict.fromkeys(o for o in operands if isinstance(o, str) and o not in made))
    numbers = {_name(o): o for o in operands if not isinstance(o, str)}
    slot = {name: i for i, name in enumerate(inputs)}
    slot.update({key: len(inputs) + i for i, key in enumerate(numbers)})
    return inputs, tuple(operand_value(c, {}, dtype) for c in numbers.values()), slot


def _run_straight(line: _Straight, columns: dict, eager_slots: list | None) -> list:
    """Every slot of `line` at the input `columns`; `eager_slots`: eager mode's, to reuse."""
    slots = [columns[name] for name in line.inputs] + list(line.constants)
    for function, mask, operands, flush, from_eager in line.steps:
        if from_eager is not None:
            slots.append(eager_slots[from_eager])
            continue
        out = function(*[slots[i] for i in operands])
        slots.append(out if mask else finished(out, line.dtype, flush))
    return slots


def _by_target(eager) -> tuple[Program, dict] | None:
    """(eager mode's program, its values by name) from a straight run, or None."""
    if eager is None:
        return None
    line, slots, columns = eager
    return line.program, {**columns, **{t: slots[i] for t, i in line.slot_of.items()}}


def _evaluated(program: Program, values: dict, np_dtype, path: str, eager) -> dict:
    """Every step's output on `path` ("graph": a regrouped `program`, run as eager mode),
    added to `values` (the input columns); `eager`: (program, values) of eager mode's run
    or None."""
    producers, quotients = {}, {}
    shared = _eager_steps(eager)
    for step in program.steps:
        xla_division = path == "xla" and step.op == "div"
        expanded = path == "xla" and step.op in XLA_EXPANDED
        if not (xla_division or expanded) and _as_in_eager(step, values, shared):
            rewritten = shared[1][step.target]
        elif xla_division:
            rewritten = _xla_division(step, producers, values, quotients, np_dtype)
        elif expanded:
            arg = operand_value(step.operands[0], values, np_dtype)
            rewritten = finished(XLA_EXPANDED[step.op](arg), np_dtype, True)
        else:
            args = [operand_value(op, values, np_dtype) for op in step.operands]
            picked = step.op in PICKS and all_flushed(step.operands, producers, np_dtype)
            rewritten = apply_op(step.op, args, np_dtype, flush=not picked)
        if path == "xla" and step.op == "mul":
            _fold_unit_factor(step, quotients)
        values[step.target] = rewritten
        producers[step.target] = step
    return values


def _eager_steps(eager):
    """(eager mode's steps by target, its values), or None."""
    if eager is None:
        return None
    program, values = eager
    return {s.target: s for s in program.steps}, values


def _as_in_eager(step, values: dict, shared) -> bool:
    """Whether eager mode ran `step` itself, on the very arrays `values` holds now."""
    if shared is None or shared[0].get(step.target) != step:
        return False
    names = [o for o in step.operands if isinstance(o, str)]
    return all(values.get(o) is shared[1].get(o) for o in names)
