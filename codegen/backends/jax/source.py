"""Lowered programs -> lines of JAX source (jax.numpy, jax.lax, jax.nn) for the generated module.

In: a `lower.Program` and the names its outputs get. Out: assignment lines such as
`v3 = jnp.multiply(x, v2)`. Python float constants stay weakly typed, so every step keeps
the inputs' dtype. Division where the divisor may be 0 uses the double-where guard, so the
branch not taken never puts NaN into a gradient.
"""

from __future__ import annotations

import math

from codegen.backends import printing
from codegen.backends.printing import operand
from codegen.front.functions import ALL_FUNCTIONS
from codegen.lower import Program

# Functions whose jax name is not `jnp.<TensorFlow's name>`.
_NAMES = {
    "asin": "jnp.arcsin",
    "acos": "jnp.arccos",
    "atan": "jnp.arctan",
    "asinh": "jnp.arcsinh",
    "acosh": "jnp.arccosh",
    "atanh": "jnp.arctanh",
    "erf": "jax.lax.erf",
    "erfc": "jax.lax.erfc",
    "sigmoid": "jax.nn.sigmoid",
    "softplus": "jax.nn.softplus",
    "lgamma": "jax.lax.lgamma",
    "digamma": "jax.lax.digamma",
    "erfinv": "jax.lax.erf_inv",
    "round": "jnp.round",
}
_BINARY = {
    "add": "jnp.add",
    "sub": "jnp.subtract",
    "mul": "jnp.multiply",
    "div": "jnp.divide",
    "maximum": "jnp.maximum",
    "minimum": "jnp.minimum",
    "pow": "jnp.power",
    "atan2": "jnp.arctan2",
}
_UNARY = {
    "neg": "jnp.negative",
    "square": "jnp.square",
    "sqrt": "jnp.sqrt",
    "rsqrt": "jax.lax.rsqrt",
}


def function_name(op: str) -> str:
    """The JAX callable for a function of the grammar, e.g. `jax.nn.sigmoid`."""
    if op in _NAMES:
        return _NAMES[op]
    return "jnp." + ALL_FUNCTIONS[op].tf_name.rsplit(".", 1)[-1]


def _binary(op: str, a: list[str], constant_first: bool) -> str:
    if constant_first and op in ("sub", "div"):  # the operator keeps the array's dtype
        return f"{a[0]} {'-' if op == 'sub' else '/'} {a[1]}"
    if constant_first and op in printing.SYMMETRIC:
        a = [a[1], a[0]]
    return f"{_BINARY[op]}({a[0]}, {a[1]})"


def _clip(a: list[str], lo: float, hi: float) -> str:
    if math.isinf(lo):
        return f"jnp.minimum({a[0]}, {a[2]})"
    if math.isinf(hi):
        return f"jnp.maximum({a[0]}, {a[1]})"
    return f"jnp.clip({a[0]}, {a[1]}, {a[2]})"


def jax_expr(op: str, operands, rename) -> str:
    a = [operand(v, rename) for v in operands]
    if op in _BINARY:
        return _binary(op, a, isinstance(operands[0], float))
    if op in _UNARY:
        return f"{_UNARY[op]}({a[0]})"
    if op == "div_no_nan":  # double where: the division never sees a zero divisor
        return f"jnp.where({a[1]} == 0, 0.0, {a[0]} / jnp.where({a[1]} == 0, 1.0, {a[1]}))"
    if op == "no_neg_inf":  # -inf becomes the lowest finite float of the dtype
        return f"jnp.maximum({a[0]}, jnp.finfo({a[0]}.dtype).min)"
    if op == "no_pos_inf":
        return f"jnp.minimum({a[0]}, jnp.finfo({a[0]}.dtype).max)"
    if op == "clip":
        return _clip(a, operands[1], operands[2])
    if op == "fill_like":  # sign(x) * 0 + c is c, and NaN for NaN
        zero = f"jnp.multiply(jnp.sign({a[0]}), 0.0)"
        return zero if operands[1] == 0.0 else f"jnp.add({zero}, {a[1]})"
    if op in printing.SELECTS:
        return f"jnp.where({a[0]} {printing.SELECTS[op][1]} {a[1]}, {a[2]}, {a[3]})"
    mask = printing.mask_expr(op, a)
    if mask is not None:
        return mask
    if op == "select":  # a where condition's mask
        return f"jnp.where({a[0]}, {a[1]}, {a[2]})"
    if op == "polygamma":  # the order is a literal integer
        return f"jax.lax.polygamma(jnp.full_like({a[1]}, {float(operands[0])!r}), {a[1]})"
    return f"{function_name(op)}({a[0]})"


DIALECT = printing.Dialect(
    expr=jax_expr, constant=lambda zeros_like, value: f"jnp.zeros_like({zeros_like}) + {value!r}"
)


def program_lines(
    program: Program, outputs: list[str], zeros_like: str, indent: int = 0
) -> list[str]:
    """Assignment lines for `program`, with output temporaries renamed to `outputs`."""
    return printing.program_lines(program, outputs, zeros_like, DIALECT, indent)
