"""Stage 4 for PyTorch: StableForms -> the source text of a generated PyTorch module.

In: `StableForms`. Out: a string, the module's source. The module's shape: a public op
that converts inputs (float16/bfloat16 computed in float32, integers refused with a
TypeError naming the op) and calls a chain of `torch.autograd.Function`s, one per partial
derivative below the spec's order: `forward` + `setup_context`, inputs saved for backward
and forward, a `backward` calling the Functions one order up (each gradient summed to its
input's shape), a `jvp` for forward mode, `generate_vmap_rule = True`. The last custom
order is the plain stable form, so autograd beyond it differentiates that form. Every form
is one function of the module, printed by `torch.source` from the lowered program the
stabilizer measured.
"""

from __future__ import annotations

from codegen.backends.forms import Printer, chain_context
from codegen.backends.templates_env import render
from codegen.backends.torch.source import program_lines
from codegen.stabilize import StableForms

PRINTER = Printer(program_lines, "torch.float32")
LIMITS = (
    "Every order holds under nested torch.autograd.grad(create_graph=True) and torch.func "
    "(grad, vmap, jacrev, hessian, jacfwd over jacrev), and first-order forward mode, in "
    "float32 and float64.",
    "PyTorch limits, not hogen's: forward-over-forward (torch.func.jacfwd of jacfwd, or "
    "nested forward-mode AD) through any autograd.Function returns zeros at the second "
    "order (pytorch#197867), so take second and higher derivatives with reverse mode or "
    "jacfwd over jacrev. torch.compile refuses double backward of PyTorch's own ops; "
    "through these Functions it ran correctly in hogen's tests (torch 2.13), a behaviour "
    "PyTorch does not document.",
)


def _context(forms: StableForms) -> dict:
    args, params = forms.spec.args, [p for p, _ in forms.spec.params]
    return {
        **chain_context(forms, "torch", PRINTER, LIMITS),
        "param_casts": [
            f"{p} = torch.as_tensor({p}, dtype=compute, device={args[0]}.device)" for p in params
        ],
        "cast_call": ", ".join([*(f"{a}.to(compute)" for a in args), *params]),
    }


def emit(forms: StableForms) -> str:
    """The generated PyTorch module's source text."""
    return render("torch/module.py.j2", _context(forms))


__all__ = ["emit"]
