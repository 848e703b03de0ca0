"""The op's forms chosen together: a second pass that starts from a family's shared work.

In: the choices of a first pass (each partial's chosen form and every candidate measured for
it) and a way to choose every partial again with given forms counted as already computed.
Out: the choices whose shipped forms cost fewer transcendentals per element (`cost`), both
passes keeping the promise alike.

Why: partials are chosen value first, each by what it adds to the forms before it. That is
greedy: log1pexp's f' = sigmoid(x) adds one exp, and so does the sign-branch form of it in
h = exp(-|x|/2); ops then tie, and the shorter sigmoid(x) wins, though f'' and f''' in h
would then add nothing more, and in sigmoid add one each. The forms that share one
subexpression are a family (`exp_branches`' total regimes); the second pass counts the
family's shared work as already paid, so each partial takes a member wherever one keeps the
promise with room, and the op's cost over all partials decides between the two passes.
"""

from __future__ import annotations

from dataclasses import replace

from codegen.judge import accuracy
from codegen.regimes_form import clips_to_finite
from codegen.stabilize.cost import cost

STEPS_PER_TRANSCENDENTAL = 10  # what one more exp is worth in steps under XLA, measured:
# log1pexp, sigmoid and log_sigmoid with one exp(-|x|/2) for every order, 12 to 29 more steps
# per dtype than with one more sigmoid or softplus, ran 1.4 to 4 times slower at 10^7.


def family_seed(choices, top: int) -> tuple:
    """The first roomy family member (total regimes) among the candidates tried, where at
    least two partials have one, not every such partial chose one, and the op with each
    such partial's member in place of its choice would cost less; else ()."""
    members = [
        next((c for c in choice.tried if c.roomy() and clips_to_finite(c.form)), None)
        for choice in choices
    ]
    found = [m for m in members if m is not None]
    chosen = [clips_to_finite(choice.chosen.form) for choice, m in zip(choices, members) if m]
    if len(found) < 2 or all(chosen):
        return ()
    swapped = [
        replace(choice, chosen=m, float32_form=None) if m is not None else choice
        for choice, m in zip(choices, members)
    ]
    if weighted_cost(swapped, top) >= weighted_cost(choices, top):
        return ()
    return (found[0].form,)


def weighted_cost(choices, top: int) -> float:
    """Transcendentals per element plus steps at `STEPS_PER_TRANSCENDENTAL` to one."""
    transcendentals, steps = shipped_cost(choices, top)
    return transcendentals + steps / STEPS_PER_TRANSCENDENTAL


def shipped_forms(choices, dtype: str) -> list[tuple[object, int]]:
    """(form, order) of each partial as the op ships it for `dtype` (float32's own form
    where it has one)."""
    own = [(c.float32_form or c.chosen) if dtype == "float32" else c.chosen for c in choices]
    return [(c.form, sum(choice.index)) for c, choice in zip(own, choices)]


def order_cost(choices, dtype: str, order: int, top: int):
    """`cost.Cost` of the value and the orders up to `order` in `dtype`, the last custom
    order `top` differentiated by autodiff, as `hogen explain` prints it."""
    orders = shipped_forms(choices, dtype)
    stopped = [form for form, k in orders if k <= order and k < top]
    return cost(stopped, [form for form, k in orders if k <= order and k == top])


def shipped_cost(choices, top: int) -> tuple[int, int]:
    """(transcendentals, steps) per element of the value and every order, summed over the
    dtypes' shipped forms, as `hogen explain` counts the whole op."""
    totals = [order_cost(choices, dtype, top, top) for dtype in accuracy.DTYPES]
    return sum(t.transcendentals for t in totals), sum(t.steps for t in totals)


def cheaper(first, again, top: int):
    """`again` where it keeps the promise wherever `first` does and costs less
    (`weighted_cost`); else `first`."""
    for before, after in zip(first, again):
        if before.keeps_promise() and not after.keeps_promise():
            return first
    if sum(c.promote_float32 for c in again) > sum(c.promote_float32 for c in first):
        return first
    return again if weighted_cost(again, top) < weighted_cost(first, top) else first
