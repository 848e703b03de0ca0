"""How much a joint choice across orders could save over today's greedy one (issue 16).

In: spec paths (default: the library, `specs/*.yaml`). Out: a markdown table on stdout: per
spec, the transcendentals per element of the forms float64 runs (value and every order, shared
steps once, as `hogen explain` counts them with `cost.cost`), and the fewest that any
combination of each partial's roomy candidates reaches.

Today each partial is chosen in turn, value first, and a candidate's cost is what it adds to
the forms chosen before it (`cost.sharing`). A joint choice would score every combination
together. Its alternatives here are the candidates the stabilizer measured for each partial
that keep the promise with room (`Candidate.roomy`) and rank no worse than the chosen form
on failures, blowups and points over the limit. Partials whose choice is not one closed form
from that list are kept as chosen: a float32 form of its own, float32 computed in float64,
or a piecewise partial (whose candidates are measured piece by piece). Candidates are
compared as measured, without the pieces at infinity `selection` adds to the chosen form.

This measures the choice, not the candidates: a joint choice can only pick among forms that
exist. It does not time anything.

    python benchmarks/joint_cost.py
    python benchmarks/joint_cost.py specs/sigmoid.yaml specs/silu.yaml
"""

from __future__ import annotations

import itertools
import pathlib
import sys

import sympy as sp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen.derive import derive  # noqa: E402 - after the path
from codegen.front.spec import load_spec  # noqa: E402
from codegen.lower import clear_lowered  # noqa: E402
from codegen.stabilize import stabilize  # noqa: E402
from codegen.stabilize.cost import cost  # noqa: E402

MOST_ALTERNATIVES = 6  # per partial, best ranked first; the library has at most 8


def total(forms, orders, top: int) -> int:
    """Transcendentals of `forms`: those below `top` stopped, the last order's clipped."""
    stopped = [f for f, k in zip(forms, orders) if k < top]
    last = [f for f, k in zip(forms, orders) if k == top]
    return cost(stopped, last).transcendentals


def alternatives(choice) -> list:
    """The chosen form, then the roomy candidates ranked no worse on failures."""
    fixed = choice.float32_form is not None or choice.promote_float32
    if fixed or isinstance(choice.exact, sp.Piecewise):
        return [choice.chosen.form]
    worst = choice.chosen.rank()[:4]
    ranked = sorted(choice.tried, key=lambda c: c.rank())
    out = [choice.chosen.form]
    for candidate in ranked:
        roomy = candidate.roomy() and candidate.rank()[:4] <= worst
        if roomy and all(candidate.form != f for f in out):
            out.append(candidate.form)
    return out[:MOST_ALTERNATIVES]


def row(path: pathlib.Path) -> str:
    sp.core.cache.clear_cache()
    clear_lowered()
    forms = stabilize(derive(load_spec(path)))
    orders = [sum(c.index) for c in forms.choices]
    top = forms.spec.order
    options = [alternatives(c) for c in forms.choices]
    greedy = total([o[0] for o in options], orders, top)
    best = min(total(list(combo), orders, top) for combo in itertools.product(*options))
    counts = " ".join(str(len(o)) for o in options)
    return f"| {forms.spec.name} | {counts} | {greedy} | {best} |"


def main() -> None:
    paths = [pathlib.Path(p) for p in sys.argv[1:]] or sorted((ROOT / "specs").glob("*.yaml"))
    print("| spec | alternatives per partial | chosen | best joint |")
    print("| --- | --- | --- | --- |")
    for path in paths:
        print(row(path), flush=True)


if __name__ == "__main__":
    main()
