"""Names: the one place that decides what generated code calls things.

In: a spec's op name, arg names and derivative multi-indices. Out: the
identifiers the generated module uses, and `RESERVED`, the names a spec may
not use because the generated module (or Python) already means something by
them. `spec` validates against `RESERVED`; `emit` takes every helper name
from here, so the two cannot drift apart. The grammar's constant names (e, pi,
...) are not reserved: an arg named `e` shadows the constant in its spec.
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


class Locals:
    """The locals emit derives from the args, making way for the spec's own names.

    A derived local that a user name already takes (args [x, x0]: x's stopped copy `x0`)
    gets a leading underscore, which no spec name can have. Names that collide with nothing
    are those of the plain functions above, so most modules never see the difference.
    """

    def __init__(self, user_names):
        self.user = frozenset(user_names)

    def _free(self, name: str) -> str:
        return f"_{name}" if name in self.user else name

    def stopped(self, arg: str) -> str:
        return self._free(stopped(arg))

    def tangent(self, arg: str) -> str:
        return self._free(tangent(arg))

    def shifted(self, arg: str) -> str:
        return self._free(shifted(arg))

    def half_square(self, arg: str) -> str:
        return self._free(half_square(arg))

    def grad_local(self, arg: str) -> str:
        return self._free(grad_local(arg))

    def partial(self, args: tuple[str, ...], index: tuple[int, ...]) -> str:
        return self._free(partial(args, index))


def collisions(op: str, args: tuple[str, ...], params: tuple[str, ...]) -> list[str]:
    """Names in a spec that would clash inside the generated module, as messages.

    Derived locals (x0, t_x, d_x, ...) make way for user names (`Locals`), so only the
    op's own name can clash."""
    problems = []
    user_names = (op, *args, *params)
    if op in args or op in params:
        problems.append(f"'{op}' is both the op name and an argument name")
    if op.startswith("_") or impl(op) in user_names:
        problems.append(f"'{op}' clashes with a generated helper name")
    return problems
