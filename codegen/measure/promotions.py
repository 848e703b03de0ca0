"""Why an op computes float32 in float64: the section of docs/accuracy.md that says so.

In: loaded specs and the folder of their generated TensorFlow modules. Out: markdown lines,
one per partial of each op whose module computes float32 in float64, naming the float32
form that came closest (the best of every candidate measured on float32 alone, its own
regimes included) and its figures, which break the promise; or a line saying no op does.
Runs the stabilizer's first pass (`choose`) on those ops only.
"""

from __future__ import annotations

from pathlib import Path

from codegen.backends.doctext import partial_label
from codegen.derive import derive
from codegen.front.spec import Spec
from codegen.stabilize import choose
from codegen.stabilize.measuring import measure, measuring_points
from codegen.stabilize.per_dtype import rank_in
from codegen.stabilize.screening import in_every_dtype, screened
from codegen.stabilize.selection import SAMPLES

_PROMOTED = "float32 is computed in float64"


def promoted(spec: Spec, out_dir: Path) -> bool:
    """Whether the generated module of `spec` computes float32 in float64."""
    return _PROMOTED in (out_dir / f"{spec.name}.py").read_text(encoding="utf-8")


def _closest(spec: Spec, partial, choice) -> str:
    """The float32 candidate that ranks best in float32, measured at the build's sample and
    at the points screening finds it failing: a round's figures may predate the points a
    later round found, which are why it was not shipped."""
    best = min(choice.tried, key=lambda c: rank_in(c, 0))
    samples = measuring_points(spec, partial.expr, SAMPLES)
    found = screened(spec, partial.expr, in_every_dtype(best), choice.tried, samples, False)
    f = measure(best.label, best.form, spec, found or samples).figures[0]
    return (
        f"the closest of {len(choice.tried)} float32 candidates, `{best.label}`, measures "
        f"mean {f.mean_bits:.2f}, p99 {f.p99_bits:.1f}, {f.failures} failures"
    )


def section(specs: list[Spec], out_dir: Path) -> list[str]:
    """The markdown of the section."""
    lines = [
        "## float32 computed in float64",
        "",
        "An op computes float32 in float64 only where no float32 form of some partial keeps "
        "the promise, measured by the stabilizer on float32 alone (its own regimes included):",
        "",
    ]
    found = []
    for spec in specs:
        if not promoted(spec, out_dir):
            continue
        for partial in derive(spec).partials:
            choice = choose(spec, partial)
            if choice.promote_float32:
                label = partial_label(spec.args, partial.index)
                found.append(f"- {spec.name} {label}: {_closest(spec, partial, choice)}.")
    return lines + (found or ["- none: every op computes float32 in float32."])
