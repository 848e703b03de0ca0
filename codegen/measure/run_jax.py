"""How `hogen verify --backend jax` runs ops: load a generated JAX module, take partials.

In: a spec and the folder of its generated JAX module; input columns as NumPy arrays.
Out: `load_op` (the public op), `naive_op` (JAX autodiff's view of the spec: its `expr`
lowered and interpreted with the same jax.numpy calls the JAX printer writes, no source
text evaluated) and `derivative` (the partial along a sequence of args at every point, as
NumPy: `jax.grad` composed once per order, under `jax.vmap` and `jax.jit`: `PATH`). Measurement
runs with `jax_enable_x64` on, as the promise is made: float64 needs it, and float32 inputs
stay float32 under it except in the specs whose float32 is computed in float64 (measured
necessary; without x64 those lose the promise at the edges of float32's range, as their
docstrings say). Imports JAX.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from codegen.backends.jax.source import function_name
from codegen.front.spec import Spec
from codegen.lower import Program
from codegen.measure import loading

PATH = "jit"  # the path `hogen verify` names in its rows
_STEPS = {
    "add": jnp.add,
    "sub": jnp.subtract,
    "mul": jnp.multiply,
    "div": jnp.divide,
    "pow": jnp.power,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "div_no_nan": lambda a, b: jnp.where(b == 0, 0.0, a / jnp.where(b == 0, 1.0, b)),
    "neg": jnp.negative,
    "square": jnp.square,
    "sqrt": jnp.sqrt,
    "rsqrt": jax.lax.rsqrt,
    "clip": jnp.clip,
    "no_neg_inf": lambda a: jnp.maximum(a, jnp.finfo(a.dtype).min),
    "no_pos_inf": lambda a: jnp.minimum(a, jnp.finfo(a.dtype).max),
    "fill_like": lambda a, c: jnp.sign(a) * 0.0 + c,
    "where_less": lambda a, b, c, d: jnp.where(a < b, c, d),
    "where_less_equal": lambda a, b, c, d: jnp.where(a <= b, c, d),
    "where_greater": lambda a, b, c, d: jnp.where(a > b, c, d),
    "where_greater_equal": lambda a, b, c, d: jnp.where(a >= b, c, d),
    "select": jnp.where,
    "polygamma": lambda n, x: jax.lax.polygamma(jnp.full_like(x, n), x),
    "atan2": jnp.arctan2,
    **loading.MASK_STEPS,
}


def load_op(spec: Spec, out_dir: Path):
    """The public op from the generated module `out_dir/<name>.py`."""
    return loading.load_op(spec, out_dir, "jax")


def _function(op: str):
    """The JAX callable the printer names for a function (`jax.nn.sigmoid`), by attribute."""
    target = {"jnp": jnp, "jax": jax}
    head, *rest = function_name(op).split(".")
    value = target[head]
    for part in rest:
        value = getattr(value, part)
    return value


def run(program: Program, inputs: dict):
    """Interpret a lowered program with jax.numpy ops (differentiable by JAX autodiff)."""
    return loading.run(program, inputs, lambda op: _STEPS.get(op) or _function(op), jnp.zeros_like)


def naive_op(spec: Spec):
    """JAX autodiff's view of the spec: `expr` (params at their defaults) as plain jnp ops."""
    program = loading.naive_program(spec)
    return lambda *args: run(program, dict(zip(spec.args, args)))


@functools.lru_cache(maxsize=64)
def _compiled(fn, sequence: tuple[int, ...]):
    g = fn
    for i in reversed(sequence):
        g = jax.grad(g, argnums=i)
    return jax.jit(jax.vmap(g))


def derivative(fn, points: np.ndarray, sequence: list[int], dtype: str) -> np.ndarray:
    """d^k fn / d args[sequence[0]] ... at each row of `points`, elementwise, as NumPy."""
    with jax.enable_x64(True):
        columns = [jnp.asarray(points[:, i], dtype) for i in range(points.shape[1])]
        return np.asarray(_compiled(fn, tuple(sequence))(*columns))
