"""What each form computed at a build's sample points, kept so that no point is computed twice.

In: a form, whether float32 ships computed in float64, the sample points of one dtype, and a
function that computes the form at points. Out: `outputs_at`, the form's outputs at every
point, computed only at the points this build has not yet run it at.

Why: every screening round chooses again on the last round's samples with the points it found
appended (`screening.screened`), so it measures most candidates again at a few thousand points
it has measured them at, and a few dozen new ones. The mirror computes each point alone (every
step is elementwise), so the outputs at the old points are the ones computed before, to the
bit. 0.5*sqrt(2*(sqrt(a**2 + b**2) + a)) measures 2115 candidates in 24 searches, 15 of them
screening rounds.

The memo holds the outputs of the last `REMEMBERED_FORMS` forms measured and is cleared at the
start of each build (`forget_outputs`): nothing a build chooses depends on the builds before.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

REMEMBERED_FORMS = 512  # forms whose outputs are kept: about 100 kB each at 6000 points
_OUTPUTS: OrderedDict = OrderedDict()  # key (`outputs_at`) -> (points, outputs per path)


def forget_outputs() -> None:
    """Forget every output kept (`selection.stabilize` starts each build without them)."""
    _OUTPUTS.clear()


def _shared_rows(kept_points: np.ndarray, points: np.ndarray) -> int:
    """The rows `points` and `kept_points` begin with alike, where one begins with all of the
    other; else 0."""
    n = min(len(kept_points), len(points))
    if kept_points.dtype != points.dtype or kept_points.shape[1:] != points.shape[1:]:
        return 0
    return n if np.array_equal(points[:n], kept_points[:n]) else 0


def outputs_at(key, points: np.ndarray, compute) -> np.ndarray:
    """`compute(0)`: a form's outputs at `points`, one row per path, where `key` (hashable)
    names all they depend on but the points, and `compute(k)` computes them at `points[k:]`.
    Only the rows past those computed for `key` before are computed."""
    kept = _OUTPUTS.get(key)
    shared = _shared_rows(kept[0], points) if kept is not None else 0
    if shared == len(points):
        _OUTPUTS.move_to_end(key)
        return kept[1][:, :shared]
    out = compute(0) if not shared else np.concatenate([kept[1], compute(shared)], axis=1)
    _OUTPUTS[key] = (points, out)
    _OUTPUTS.move_to_end(key)
    while len(_OUTPUTS) > REMEMBERED_FORMS:
        _OUTPUTS.popitem(last=False)
    return out
