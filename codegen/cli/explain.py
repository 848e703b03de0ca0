"""`hogen explain`: each derivative, the candidate forms measured, and the one chosen.

In: a `Spec`. Out: plain text. Runs the same `derive` and `stabilize` as
`hogen build`, so what it prints is what the build chose and why.
"""

from __future__ import annotations

import sympy as sp

from codegen.backends.doctext import describe_form, partial_label
from codegen.derive import derive
from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.stabilize import Candidate, stabilize
from codegen.stabilize.joint import order_cost


def _figures(candidate: Candidate) -> str:
    return "  ".join(
        f"{d}: mean {f.mean_bits:5.2f} p99 {f.p99_bits:4.1f} fail {f.failures:4d}"
        for d, f in zip(accuracy.DTYPES, candidate.figures)
    )


def explain(spec: Spec) -> str:
    """Plain-text report of every partial's candidates, best first."""
    forms = stabilize(derive(spec))
    lines = [f"{spec.name}: {sp.sstr(spec.expr)}  (order {spec.order})", ""]
    for choice in forms.choices:
        label = partial_label(spec.args, choice.index)
        lines.append(f"{label} = {sp.sstr(choice.exact)}")
        for candidate in sorted(choice.tried, key=Candidate.rank):
            mark = "*" if candidate is choice.chosen else " "
            ok = "keeps promise" if candidate.keeps_promise() else "breaks promise"
            lines.append(
                f" {mark} {candidate.label:40} {_figures(candidate)}  ops {candidate.ops:3d}  {ok}"
            )
        if choice.float32_form is not None:
            own = choice.float32_form
            lines.append(f"   chosen for float64: {describe_form(choice.chosen.form)}")
            lines.append(f"   chosen for float32 ({own.label}): {describe_form(own.form)}")
        else:
            lines.append(f"   chosen: {describe_form(choice.chosen.form)}")
        if choice.promote_float32:
            f = choice.promoted_float32
            lines.append(
                "   float32 is computed in float64 (no float32 form keeps the promise): "
                f"mean {f.mean_bits:.2f} p99 {f.p99_bits:.1f} fail {f.failures}"
            )
        lines.append("")
    return "\n".join([*lines, *_cost_lines(forms)])


def _cost_lines(forms) -> list[str]:
    """Transcendentals per element of the value and every order, shared steps once, per
    dtype's forms (issue 16: what costs under XLA)."""
    out = ["cost per element, value and derivatives up to each order, shared steps once:"]
    for dtype in accuracy.DTYPES:
        promoted = dtype == "float32" and forms.promote_float32
        top = forms.spec.order
        for order in range(top + 1):
            total = order_cost(forms.choices, dtype, order, top)
            where = " (computed in float64)" if promoted else ""
            out.append(
                f"  {dtype} order {order}: {total.transcendentals} transcendentals, "
                f"{total.steps} steps{where}"
            )
    return out
