"""How `hogen verify --backend torch` runs ops: load a generated PyTorch module, take partials.

In: a spec and the folder of its generated PyTorch module; input columns as NumPy arrays.
Out: `load_op` (the public op), `naive_op` (PyTorch autograd's view of the spec: its `expr`
lowered and interpreted with the torch calls the PyTorch printer writes, no source text
evaluated) and `derivative` (the partial along a sequence of args at every point, as NumPy:
`torch.autograd.grad(create_graph=True)` nested once per order). Imports PyTorch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from codegen.backends.torch.source import function_name
from codegen.front.spec import Spec
from codegen.lower import Program
from codegen.measure import loading


def _softplus(u):
    return torch.add(torch.clamp(u, min=0.0), torch.log1p(torch.exp(torch.neg(torch.abs(u)))))


def _bound(op):
    """torch.maximum/minimum, or clamp where the second operand is a Python number."""
    pair, keyword = (torch.maximum, "min") if op == "maximum" else (torch.minimum, "max")
    return lambda a, b: torch.clamp(a, **{keyword: b}) if isinstance(b, float) else pair(a, b)


PATH = "eager"  # the path `hogen verify` names in its rows
_STEPS = {
    "add": torch.add,
    "sub": lambda a, b: a - b,
    "mul": torch.mul,
    "div": lambda a, b: a / b,
    "pow": torch.pow,
    "maximum": _bound("maximum"),
    "minimum": _bound("minimum"),
    "div_no_nan": lambda a, b: torch.where(b == 0, 0.0, a / torch.where(b == 0, 1.0, b)),
    "neg": torch.neg,
    "square": torch.square,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "clip": torch.clamp,
    "no_neg_inf": lambda a: torch.clamp(a, min=torch.finfo(a.dtype).min),
    "no_pos_inf": lambda a: torch.clamp(a, max=torch.finfo(a.dtype).max),
    "fill_like": lambda a, c: torch.sign(a) * 0.0 + c,
    "where_less": lambda a, b, c, d: torch.where(a < b, c, d),
    "where_less_equal": lambda a, b, c, d: torch.where(a <= b, c, d),
    "where_greater": lambda a, b, c, d: torch.where(a > b, c, d),
    "where_greater_equal": lambda a, b, c, d: torch.where(a >= b, c, d),
    "softplus": _softplus,
    "select": torch.where,
    "polygamma": lambda n, x: torch.special.polygamma(int(n), x),
    "atan2": torch.atan2,
    **loading.MASK_STEPS,
}


def load_op(spec: Spec, out_dir: Path):
    """The public op from the generated module `out_dir/<name>.py`."""
    return loading.load_op(spec, out_dir, "torch")


def _function(op: str):
    """The torch callable the printer names for a function (`torch.sigmoid`), by attribute."""
    return getattr(torch, function_name(op).split(".", 1)[1])


def run(program: Program, inputs: dict):
    """Interpret a lowered program with torch ops (differentiable by PyTorch autodiff)."""
    return loading.run(
        program, inputs, lambda op: _STEPS.get(op) or _function(op), torch.zeros_like
    )


def naive_op(spec: Spec):
    """PyTorch autograd's view of the spec: `expr` (params at their defaults) as torch ops."""
    program = loading.naive_program(spec)
    return lambda *args: run(program, dict(zip(spec.args, args)))


def partial(fn, inputs: list, sequence: list[int]):
    """d^k fn / d inputs[sequence[0]] ... elementwise, by nested autograd.grad."""
    if not sequence:
        return fn(*inputs)
    inner = partial(fn, inputs, sequence[1:])
    if not inner.requires_grad:
        return torch.zeros_like(inner)
    (grad,) = torch.autograd.grad(
        inner.sum(), inputs[sequence[0]], create_graph=True, allow_unused=True
    )
    return torch.zeros_like(inner) if grad is None else grad


def derivative(fn, points: np.ndarray, sequence: list[int], dtype: str) -> np.ndarray:
    """d^k fn / d args[sequence[0]] ... at each row of `points`, elementwise, as NumPy."""
    inputs = [
        torch.tensor(points[:, i], dtype=getattr(torch, dtype), requires_grad=True)
        for i in range(points.shape[1])
    ]
    return partial(fn, inputs, sequence).detach().numpy()
