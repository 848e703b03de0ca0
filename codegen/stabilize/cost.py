"""What a set of chosen forms costs per element, counted on their shared lowering.

In: forms (SymPy expressions, `Regimes`, `Pieces`) that one gradient evaluates together, the
value and each order's partials. Out: `Cost`: transcendental steps (exp, log, log1p, expm1,
sigmoid, softplus, erf, tanh, sin, pow, lgamma, ...) and all steps, each common
subexpression counted once (`lower.lower`'s sharing), as the generated function computes
them. Under XLA the elementwise steps fuse, and the transcendentals are what costs
(issue 16). `hogen explain` prints it. `added_transcendentals` is what one more form adds to
the forms already chosen for the op (`sharing`): among forms that keep the promise with room
to spare, the stabilizer takes the one that adds fewest.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from codegen.lower import free_symbols, lower_each

TRANSCENDENTAL_OPS = frozenset(
    {
        "exp",
        "log",
        "log1p",
        "expm1",
        "sigmoid",
        "softplus",
        "tanh",
        "sinh",
        "cosh",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "asinh",
        "acosh",
        "atanh",
        "atan2",
        "erf",
        "erfc",
        "erfinv",
        "lgamma",
        "digamma",
        "polygamma",
        "pow",
    }
)


@dataclass(frozen=True)
class Cost:
    transcendentals: int
    steps: int


def cost(forms, last=()) -> Cost:
    """The steps of `forms` and `last` lowered together, shared steps once, as XLA computes
    the generated gradient: `forms` at stopped inputs, where regime branches need no clip
    and a form repeated in several pieces is computed once; `last`, the last custom order's
    forms, which autodiff differentiates, with each branch's input clipped to its piece.
    (XLA folds the jet's zero tangent, so what `last` shares with `forms` is computed once;
    a graph without XLA computes `last` apart.)"""
    symbols = sorted(set().union(*(free_symbols(f) for f in (*forms, *last))), key=str)
    env = {s: s.name for s in symbols}
    pairs, last_pairs = [(f, env) for f in forms], [(f, env) for f in last]
    program = lower_each(pairs, unclipped=frozenset(env.values()), clipped_pairs=last_pairs)
    heavy = sum(1 for step in program.steps if step.op in TRANSCENDENTAL_OPS)
    return Cost(heavy, len(program.steps))


_CHOSEN: ContextVar[tuple] = ContextVar("chosen_forms", default=())
_LAST: ContextVar[bool] = ContextVar("last_order", default=False)


@contextmanager
def sharing(chosen: tuple, last: bool = False):
    """Within: `added_transcendentals` counts what a form adds to `chosen`, the forms already
    chosen for the same op (the value and lower orders, which one gradient evaluates too).
    `last`: the forms measured are of the last custom order, which ships with each regime
    branch clipped to its piece, so a form repeated in two pieces is paid twice."""
    tokens = _CHOSEN.set(tuple(chosen)), _LAST.set(last)
    try:
        yield
    finally:
        _CHOSEN.reset(tokens[0])
        _LAST.reset(tokens[1])


def added_transcendentals(form) -> int:
    """Transcendental steps `form` adds to the forms chosen so far (all of them, alone)."""
    chosen = _CHOSEN.get()
    alone = (chosen, (form,)) if _LAST.get() else ((*chosen, form), ())
    return cost(*alone).transcendentals - (cost(chosen).transcendentals if chosen else 0)
