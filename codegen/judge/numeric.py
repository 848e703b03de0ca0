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
(x/m)/(y/m) is inf under XLA at x = m = 1e214, y = 1e84.
"""

from __future__ import annotations

import numpy as np

from codegen.front.functions import ALL_FUNCTIONS
from codegen.judge import portable
from codegen.judge.graphs import regrouped, regrouped_in_graphs
from codegen.lower import Program

_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": portable.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "div_no_nan": lambda a, b: np.where(b == 0, np.zeros_like(a), a / b),
}
_UNARY = {
    "neg": np.negative,
    "square": np.square,
    "sqrt": np.sqrt,
    "rsqrt": lambda v: np.ones_like(v) / np.sqrt(v),
    "round": np.round,  # half to even, as tf.math.round
}


def _value(operand, values: dict, dtype) -> np.ndarray:
    """A step's output, or a constant as TensorFlow on CPU reads it: a subnormal one as 0
    (it treats subnormal operands as 0, so x < 5.6e-309 is False at x = 0 in float64)."""
    if isinstance(operand, str):
        return values[operand]
    constant = np.asarray(operand, dtype=dtype)
    return constant if not 0 < abs(constant) < _TINY[constant.dtype] else np.zeros((), dtype)


PATHS = ("eager", "xla", "graph")


def paths_for(program: Program) -> tuple[str, ...]:
    """The paths on which `program` may compute other values than eager mode does: XLA where
    its division rewrites apply, graphs where Grappler regroups a sum or product."""
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
        power = _xla_reciprocal_power(_value(num, values, dtype), inner_den, values, dtype)
        if power is not None:
            return power
    top, bottom = quotients.get(num), quotients.get(den)
    if top is not None and bottom is not None:
        p, q = _apply("mul", [top[0], bottom[1]], dtype), _apply("mul", [top[1], bottom[0]], dtype)
    elif top is not None:
        p, q = top[0], _apply("mul", [top[1], _value(den, values, dtype)], dtype)
    elif bottom is not None:
        p, q = _apply("mul", [_value(num, values, dtype), bottom[1]], dtype), bottom[0]
    else:
        p, q = _value(num, values, dtype), _value(den, values, dtype)
    quotients[step.target] = (p, q)
    return _apply("div", [p, q], dtype)


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
    """True if XLA's division rewrites (`_xla_division`) may touch a step of `program`: only
    then can the "xla" path differ from "eager"."""
    producers = {}
    for step in program.steps:
        unit = {}
        if step.op == "mul":  # 1*q is the quotient q to XLA (`_fold_unit_factor`)
            _fold_unit_factor(step, unit, {t for t, op in producers.items() if op == "div"})
        producers[step.target] = "div" if unit else step.op
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
    operands = [_value(o, values, dtype) for o in den.operands]
    if den.op == "exp":
        return _apply("mul", [a, _apply("exp", [np.negative(operands[0])], dtype)], dtype)
    exponent = den.operands[1]
    if isinstance(exponent, str) or float(exponent) in (0.0, 1.0, 2.0, -1.0):
        return None
    power = _apply("pow", [operands[0], np.negative(operands[1])], dtype)
    return _apply("mul", [a, power], dtype)


def run(
    program: Program, inputs: dict[str, np.ndarray], dtype: str, path: str = "eager"
) -> list[np.ndarray]:
    """Evaluate every output of `program` as TensorFlow runs it on `path` (one of `PATHS`);
    inputs are cast to `dtype` first."""
    if path == "graph":
        program, path = regrouped(program), "eager"
    np_dtype = np.dtype(dtype)
    values = {name: np.asarray(column, dtype=np_dtype) for name, column in inputs.items()}
    producers, quotients = {}, {}
    with np.errstate(all="ignore"):
        for step in program.steps:
            rewritten = None
            if path == "xla" and step.op == "div":
                rewritten = _xla_division(step, producers, values, quotients, np_dtype)
            if rewritten is None:
                args = [_value(op, values, np_dtype) for op in step.operands]
                picked = step.op in _PICKS and _all_flushed(step.operands, producers, np_dtype)
                rewritten = _apply(step.op, args, np_dtype, flush=not picked)
            if path == "xla" and step.op == "mul":
                _fold_unit_factor(step, quotients)
            values[step.target] = rewritten
            producers[step.target] = step
        shape = np.broadcast_shapes(*(v.shape for v in inputs.values()))
        return [np.broadcast_to(_value(out, values, np_dtype), shape) for out in program.outputs]


_BOOLEAN = {
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}


# Ops whose every output is one of their inputs (or its negation): over inputs flushed
# already, flushing again only turns -0.0 into +0.0 (`_flush_subnormals`), as adding +0.0 does.
_PICKS = frozenset(
    {"select", "maximum", "minimum", "clip", "neg", "abs", "no_neg_inf", "no_pos_inf"}
    | {"where_less", "where_less_equal", "where_greater", "where_greater_equal"}
)


def _all_flushed(operands, producers: dict, dtype) -> bool:
    """Whether every operand is a step's output (flushed) or a constant that is 0 or normal;
    program inputs are neither."""
    for operand in operands:
        if isinstance(operand, str):
            if operand not in producers:
                return False
        elif operand != 0 and not abs(float(operand)) >= np.finfo(dtype).tiny:
            return False
    return True


def _apply(op: str, args: list[np.ndarray], dtype, flush: bool = True) -> np.ndarray:
    if op in _BOOLEAN:  # masks of `where` conditions stay boolean
        return _BOOLEAN[op](args[0], args[1])
    if op == "logical_not":
        return np.logical_not(args[0])
    if op == "select":
        out = np.where(args[0], args[1], args[2])
    elif op in _BINARY:
        out = _BINARY[op](args[0], args[1])
    elif op in _UNARY:
        out = _UNARY[op](args[0])
    elif op == "clip":
        out = np.clip(args[0], args[1], args[2])
    elif op == "no_neg_inf":
        out = np.maximum(args[0], np.finfo(dtype).min)
    elif op == "no_pos_inf":
        out = np.minimum(args[0], np.finfo(dtype).max)
    elif op == "fill_like":  # a constant piece keeps NaN in, as TensorFlow's sign(x) * 0 does
        out = np.sign(args[0]) * 0 if args[1] == 0 else np.sign(args[0]) * 0 + args[1]
    elif op == "where_less_equal":
        out = np.where(args[0] <= args[1], args[2], args[3])
    elif op == "where_less":
        out = np.where(args[0] < args[1], args[2], args[3])
    elif op == "where_greater_equal":
        out = np.where(args[0] >= args[1], args[2], args[3])
    elif op == "where_greater":
        out = np.where(args[0] > args[1], args[2], args[3])
    else:
        out = ALL_FUNCTIONS[op].numpy_func(*args)
    out = np.asarray(out, dtype=dtype)
    if flush or not out.flags.writeable:
        return _flush_subnormals(out)
    return np.add(out, 0, out=out)  # a new array, each op's own


_TINY = {np.dtype(t): np.finfo(t).tiny.astype(t) for t in (np.float16, np.float32, np.float64)}


def _flush_subnormals(values: np.ndarray) -> np.ndarray:
    """TensorFlow on CPU flushes subnormal results to zero; so does the mirror. Every zero
    it returns is +0.0 but a flushed negative one, -0.0 (as it always has: the builds'
    bytes depend on it)."""
    tiny = _TINY.get(values.dtype)
    tiny = np.finfo(values.dtype).tiny if tiny is None else tiny
    magnitude = np.abs(values)
    if not values.size or not np.fmin.reduce(magnitude, axis=None) < tiny:  # fmin skips NaN
        return values
    small = magnitude < tiny
    out = values.copy()
    np.putmask(out, small, 0.0)
    negative = small & (values < 0)
    if negative.any():
        np.putmask(out, negative, -0.0)
    return out
