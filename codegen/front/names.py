"""Names: the one place that decides what generated code calls things.

In: a spec's op name, arg names and derivative multi-indices. Out: the
identifiers the generated module uses, and `RESERVED`, the names a spec may
not use because the generated module (or Python) already means something by
them. `spec` validates against `RESERVED`; `emit` takes every helper name
from here, so the two cannot drift apart.
"""

from __future__ import annotations

import builtins
import keyword

MODULE_GLOBALS = frozenset({"tf", "np", "math", "functools", "jax", "jnp", "torch", "SymbolicZero"})
GENERATED_LOCALS = frozenset({"dy", "grad", "value", "dtype", "compute"})
GRAMMAR_CONSTANTS = frozenset({"pi", "E", "e", "inf", "nan", "I", "oo"})

RESERVED = (
    MODULE_GLOBALS
    | GENERATED_LOCALS
    | GRAMMAR_CONSTANTS
    | frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | frozenset(dir(builtins))
)


def is_reserved(name: str) -> bool:
    """True if `name` may not be a spec's op, arg or param name.

    Names starting with an underscore are reserved whole: every private helper
    of a generated module starts with one.
    """
    return name.startswith("_") or name in RESERVED


def stopped(arg: str) -> str:
    """The local holding `tf.stop_gradient(arg)`: the point where forms are evaluated."""
    return f"{arg}0"


def tangent(arg: str) -> str:
    """The local `arg - stop_gradient(arg)`: zero, carrying derivative one."""
    return f"t_{arg}"


def shifted(arg: str) -> str:
    """The local `arg0 + t_arg / order`: where the last form is evaluated, so autodiff beyond
    the last custom order differentiates it exactly once."""
    return f"{arg}_last"


def impl(op: str) -> str:
    """The `tf.custom_gradient` function behind the public op."""
    return f"_{op}_op"


def dispatch(op: str) -> str:
    """The function choosing the eager path or the `tf.custom_gradient` op, per call."""
    return f"_{op}_dispatch"


def partial_fn(op: str, args: tuple[str, ...], index: tuple[int, ...]) -> str:
    """The function computing one chosen form: _op_value, _op_d_x, _op_d_xy, ..."""
    return f"_{op}_value" if not sum(index) else f"_{op}_{partial(args, index)}"


def partial(args: tuple[str, ...], index: tuple[int, ...]) -> str:
    """The local holding one partial derivative: d_x, d_xy, d_xxy; d_alpha_beta for long names."""
    letters = [arg for arg, count in zip(args, index) for _ in range(count)]
    joiner = "" if all(len(arg) == 1 for arg in args) else "_"
    return "d_" + joiner.join(letters)


def half_square(arg: str) -> str:
    """The local `square(t_arg / 2)`, the jet's t**2/2 term without forming d/2."""
    return f"q_{arg}"


def grad_local(arg: str) -> str:
    """The local holding the gradient with respect to one arg, before reduction to its shape."""
    return f"g_{arg}"


TEMP_PREFIXES = ("v", "w", "tmp", "aux")


def temp_prefix(user_names: tuple[str, ...]) -> str:
    """A prefix for temporaries (`v0`, `v1`, ...) that no user name can be mistaken for."""
    for prefix in TEMP_PREFIXES:
        if not any(n.startswith(prefix) and n[len(prefix) :].isdigit() for n in user_names):
            return prefix
    return "_tmp"


def generated_locals(args: tuple[str, ...]) -> dict[str, str]:
    """Every local name emit derives from the args, mapped to the arg it comes from."""
    out = {}
    for arg in args:
        for derived in (
            stopped(arg),
            tangent(arg),
            shifted(arg),
            half_square(arg),
            grad_local(arg),
        ):
            out[derived] = arg
    for name in _all_partials(args):
        out[name] = "a derivative"
    return out


def _all_partials(args: tuple[str, ...], max_order: int = 4) -> set[str]:
    import itertools

    names = set()
    for order in range(1, max_order + 1):
        for combo in itertools.combinations_with_replacement(range(len(args)), order):
            names.add(partial(args, tuple(combo.count(i) for i in range(len(args)))))
    return names


def collisions(op: str, args: tuple[str, ...], params: tuple[str, ...]) -> list[str]:
    """Names in a spec that would clash inside the generated module, as messages."""
    problems = []
    user_names = (op, *args, *params)
    derived = generated_locals(args)
    for name in user_names:
        if name in derived:
            problems.append(f"'{name}' clashes with the generated local for '{derived[name]}'")
    if op in args or op in params:
        problems.append(f"'{op}' is both the op name and an argument name")
    if op.startswith("_") or impl(op) in user_names:
        problems.append(f"'{op}' clashes with a generated helper name")
    return problems
