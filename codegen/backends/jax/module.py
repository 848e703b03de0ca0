"""Stage 4 for JAX: StableForms -> the source text of a generated JAX module.

In: `StableForms`. Out: a string, the module's source. The module's shape: a public op
that converts inputs (float16/bfloat16 computed in float32, integers refused with a
TypeError naming the op) and calls a chain of `jax.custom_jvp` functions, one per partial
derivative below the spec's order. The rule of the order-k partial calls that partial
itself for the primal and the partials of order k+1 for the tangent; the last custom order
is the plain stable form, so autodiff beyond it differentiates that form. Params are
ordinary array arguments (not `nondiff_argnums`), and asking for their derivative raises.
Every form is one function of the module, printed by `jax.source` from the lowered program
the stabilizer measured.
"""

from __future__ import annotations

from codegen.backends.forms import Printer, chain_context
from codegen.backends.jax.source import program_lines
from codegen.backends.templates_env import render
from codegen.stabilize import StableForms

PRINTER = Printer(program_lines, "jnp.float32")
LIMITS = (
    "Every order holds under jax.grad, jacfwd, jacrev, hessian, jit and vmap, in float32 and "
    "(with jax_enable_x64) float64."
)


def _context(forms: StableForms) -> dict:
    args, params = forms.spec.args, [p for p, _ in forms.spec.params]
    return {
        **chain_context(forms, "jax", PRINTER, (LIMITS,)),
        "param_casts": [f"{p} = jnp.asarray({p}, compute)" for p in params],
        "cast_call": ", ".join([*(f"{a}.astype(compute)" for a in args), *params]),
    }


def emit(forms: StableForms) -> str:
    """The generated JAX module's source text."""
    return render("jax/module.py.j2", _context(forms))


__all__ = ["emit"]
