"""Lowered programs -> lines of TensorFlow source for the generated module.

In: a `lower.Program` (SSA steps over names and float constants) and the names its outputs
get. Out: assignment lines such as `v3 = tf.math.multiply(x, v2)`, one per step, split
inside the call where a line would pass ruff's limit. Calls are the cheapest eager forms:
`tf.math` functions with constants second; scalar constants in selects carry the input's
dtype.
"""

from __future__ import annotations

import math

from codegen.backends import printing
from codegen.backends.printing import operand as _operand
from codegen.lower import Program
from codegen.pieces import BOOLEAN_OPS as _MASKS


def program_lines(
    program: Program, outputs: list[str], zeros_like: str, indent: int = 0
) -> list[str]:
    """Assignment lines for `program`, with output temporaries renamed to `outputs`."""
    return printing.program_lines(program, outputs, zeros_like, DIALECT, indent)


def _binary(op: str, a: list[str], constant_first: bool) -> str:
    """A binary step as the cheapest eager call: tf.math functions, constants second."""
    if op in ("add", "mul"):
        name = "add" if op == "add" else "multiply"
        first, second = (a[1], a[0]) if constant_first else (a[0], a[1])
        return f"tf.math.{name}({first}, {second})"
    # A Python number first: the operator converts it to the tensor's dtype (tf.math.reciprocal
    # would be faster, but its float32 kernel is up to 2 ulps off).
    if constant_first and op == "div" and a[0] == "1.0":
        # In graphs Grappler rewrites 1/u into Reciprocal, whose vectorized float32 kernel loses
        # ~10 bits where 1/u nears the smallest normal; -1/-u is the same quotient, left alone.
        return f"-1.0 / tf.math.negative({a[1]})"
    if constant_first:
        return f"{a[0]} {'-' if op == 'sub' else '/'} {a[1]}"
    return f"tf.math.{'subtract' if op == 'sub' else 'truediv'}({a[0]}, {a[1]})"


def tf_expr(op: str, operands, rename) -> str:
    from codegen.front.functions import ALL_FUNCTIONS

    a = [_operand(v, rename) for v in operands]
    if op in ("add", "sub", "mul", "div"):
        return _binary(op, a, isinstance(operands[0], float))
    if op == "neg":
        return f"tf.math.negative({a[0]})"
    if op == "div_no_nan":
        return f"tf.math.divide_no_nan({a[0]}, {a[1]})"
    if op in ("square", "sqrt", "rsqrt", "maximum", "minimum", "pow", "round"):
        return f"tf.math.{op}({', '.join(a)})"
    if op == "no_neg_inf":  # -inf becomes the lowest finite float of the dtype
        return f"tf.math.maximum({a[0]}, {a[0]}.dtype.min)"
    if op == "no_pos_inf":
        return f"tf.math.minimum({a[0]}, {a[0]}.dtype.max)"
    if op == "clip":
        lo, hi = operands[1], operands[2]
        if math.isinf(lo):
            return f"tf.math.minimum({a[0]}, {a[2]})"
        if math.isinf(hi):
            return f"tf.math.maximum({a[0]}, {a[1]})"
        return f"tf.clip_by_value({a[0]}, {a[1]}, {a[2]})"
    if op == "fill_like" and operands[1] == 0.0:  # sign(x) * 0 is 0, and NaN for NaN
        return f"tf.math.multiply(tf.math.sign({a[0]}), 0.0)"
    if op == "fill_like":  # sign(x) * 0 + c is c, and NaN for NaN
        return f"tf.math.add(tf.math.multiply(tf.math.sign({a[0]}), 0.0), {a[1]})"
    if op in _MASKS:
        return f"tf.math.{op}({', '.join(a)})"
    if op == "select":  # a where condition's mask; constants take the other side's dtype
        ref = next(v for v, raw in zip(a[1:], operands[1:]) if not isinstance(raw, float))
        chosen, other = (
            f"tf.constant({v}, {ref}.dtype)" if isinstance(raw, float) else v
            for v, raw in zip(a[1:], operands[1:])
        )
        return f"tf.where({a[0]}, {chosen}, {other})"
    if op in _SELECTS:
        chosen, other = (
            f"tf.constant({v}, {a[0]}.dtype)" if isinstance(raw, float) else v
            for v, raw in zip(a[2:], operands[2:])
        )
        return f"tf.where(tf.math.{_SELECTS[op]}({a[0]}, {a[1]}), {chosen}, {other})"
    if op == "polygamma":  # the order as a tensor of x's dtype
        return f"tf.math.polygamma(tf.constant({a[0]}, {a[1]}.dtype), {a[1]})"
    tensors = [v for v, raw in zip(a, operands) if not isinstance(raw, float)]
    if len(a) > 1 and isinstance(operands[0], float) and tensors:  # atan2(1, x): 1 in x's dtype
        a = [f"tf.constant({a[0]}, {tensors[0]}.dtype)", *a[1:]]
    return f"{ALL_FUNCTIONS[op].tf_name}({', '.join(a)})"


_SELECTS = {op: name for op, (name, _) in printing.SELECTS.items()}
DIALECT = printing.Dialect(
    expr=tf_expr,
    constant=lambda zeros_like, value: f"tf.math.add(tf.zeros_like({zeros_like}), {value!r})",
)
