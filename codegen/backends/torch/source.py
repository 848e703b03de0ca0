"""Lowered programs -> lines of PyTorch source for the generated module.

In: a `lower.Program` and the names its outputs get. Out: assignment lines such as
`v3 = torch.mul(x, v2)`. Python float constants stay scalars (PyTorch keeps the tensor's
dtype); a maximum or minimum with a constant is a `torch.clamp`. Division where the divisor
may be 0 uses the double-where guard, so the branch not taken never puts NaN into a
gradient. softplus is the module's `_softplus` (F.softplus returns x above its threshold,
which is not float64's correctly rounded value).
"""

from __future__ import annotations

import math

from codegen.backends import printing
from codegen.backends.printing import operand
from codegen.front.functions import ALL_FUNCTIONS
from codegen.lower import Program

_NAMES = {  # functions whose PyTorch name is not torch.<TF's name>
    "softplus": "_softplus",
    "round": "torch.round",
}
_BINARY = {
    "add": "torch.add",
    "sub": "torch.sub",
    "mul": "torch.mul",
    "div": "torch.div",
    "maximum": "torch.maximum",
    "minimum": "torch.minimum",
    "pow": "torch.pow",
    "atan2": "torch.atan2",
}
_UNARY = {
    "neg": "torch.neg",
    "square": "torch.square",
    "sqrt": "torch.sqrt",
    "rsqrt": "torch.rsqrt",
}
_BOUND = {"maximum": "min", "minimum": "max"}  # torch.clamp's keyword for a constant bound


def function_name(op: str) -> str:
    """The PyTorch callable for a function of the grammar, e.g. `torch.sigmoid`."""
    if op in _NAMES:
        return _NAMES[op]
    return "torch." + ALL_FUNCTIONS[op].tf_name.rsplit(".", 1)[-1]


def _binary(op: str, a: list[str], operands) -> str:
    first, second = (isinstance(v, float) for v in operands[:2])
    if first and op in ("sub", "div"):  # the operator keeps the tensor's dtype
        return f"{a[0]} {'-' if op == 'sub' else '/'} {a[1]}"
    if first and op in printing.SYMMETRIC:
        a = [a[1], a[0]]
    elif first:  # atan2, pow: the constant as a 0-dim tensor of the other's dtype
        a = [f"torch.tensor({a[0]}, dtype={a[1]}.dtype)", a[1]]
    if op in _BOUND and (first or second):
        return f"torch.clamp({a[0]}, {_BOUND[op]}={a[1]})"
    return f"{_BINARY[op]}({a[0]}, {a[1]})"


def _clip(a: list[str], lo: float, hi: float) -> str:
    if math.isinf(lo):
        return f"torch.clamp({a[0]}, max={a[2]})"
    if math.isinf(hi):
        return f"torch.clamp({a[0]}, min={a[1]})"
    return f"torch.clamp({a[0]}, {a[1]}, {a[2]})"


def torch_expr(op: str, operands, rename) -> str:
    a = [operand(v, rename) for v in operands]
    if op in _BINARY:
        return _binary(op, a, operands)
    if op in _UNARY:
        return f"{_UNARY[op]}({a[0]})"
    if op == "div_no_nan":  # double where: the division never sees a zero divisor
        return f"torch.where({a[1]} == 0, 0.0, {a[0]} / torch.where({a[1]} == 0, 1.0, {a[1]}))"
    if op == "no_neg_inf":  # -inf becomes the lowest finite float of the dtype
        return f"torch.clamp({a[0]}, min=torch.finfo({a[0]}.dtype).min)"
    if op == "no_pos_inf":
        return f"torch.clamp({a[0]}, max=torch.finfo({a[0]}.dtype).max)"
    if op == "clip":
        return _clip(a, operands[1], operands[2])
    if op == "fill_like":  # sign(x) * 0 + c is c, and NaN for NaN
        zero = f"torch.mul(torch.sign({a[0]}), 0.0)"
        return zero if operands[1] == 0.0 else f"torch.add({zero}, {a[1]})"
    if op in printing.SELECTS:
        return f"torch.where({a[0]} {printing.SELECTS[op][1]} {a[1]}, {a[2]}, {a[3]})"
    mask = printing.mask_expr(op, a)
    if mask is not None:
        return mask
    if op == "select":  # a where condition's mask
        return f"torch.where({a[0]}, {a[1]}, {a[2]})"
    if op == "polygamma":  # the order is a literal integer
        return f"torch.special.polygamma({int(operands[0])}, {a[1]})"
    return f"{function_name(op)}({a[0]})"


DIALECT = printing.Dialect(
    expr=torch_expr,
    constant=lambda zeros_like, value: f"torch.zeros_like({zeros_like}) + {value!r}",
)


def program_lines(
    program: Program, outputs: list[str], zeros_like: str, indent: int = 0
) -> list[str]:
    """Assignment lines for `program`, with output temporaries renamed to `outputs`."""
    return printing.program_lines(program, outputs, zeros_like, DIALECT, indent)
