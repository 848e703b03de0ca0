"""The outputs a build keeps (stabilize/remembered.py): a form measured again at its samples with
points appended computes only the new points, and gives what computing all of them gives.

The form below divides by exp(y), which XLA rewrites (a second path, `numeric.paths_for`), and
its float32 is measured both as it is and computed in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from codegen.front.spec import parse_spec_text
from codegen.judge import accuracy
from codegen.stabilize.measuring import Samples, as_shipped, measuring_points
from codegen.stabilize.remembered import forget_outputs, outputs_at

SPEC = parse_spec_text(
    """\
name: ratio
args: [x, y]
expr: x/exp(y) - log(1 + x**2)
order: 1
""",
    "ratio.yaml",
)


def _appended(samples: Samples, rng: np.random.Generator) -> Samples:
    """`samples` with 7 points of each dtype appended, their exact values 1 (a stand-in: the
    outputs do not depend on them, and `_worst_of` only compares paths against them)."""
    points, exact = {}, {}
    for dtype in accuracy.DTYPES:
        more = rng.uniform(-800, 800, size=(7, 2)).astype(dtype)
        points[dtype] = np.concatenate([samples.points[dtype], more])
        exact[dtype] = np.concatenate([samples.exact[dtype], np.ones(7, dtype)])
    return Samples(points, exact)


def _bits(outputs: dict) -> dict:
    return {dtype: values.view(np.uint8).tobytes() for dtype, values in outputs.items()}


@pytest.mark.parametrize("promoted", [False, True])
def test_appended_points_give_what_computing_all_of_them_gives(promoted):
    form = SPEC.expr
    samples = measuring_points(SPEC, SPEC.expr, 300)
    more = _appended(samples, np.random.default_rng(7))
    forget_outputs()
    as_shipped(form, SPEC, samples, promoted)
    reused = as_shipped(form, SPEC, more, promoted)
    forget_outputs()
    fresh = as_shipped(form, SPEC, more, promoted)
    assert _bits(reused) == _bits(fresh)
    assert len(fresh["float32"]) == len(samples.points["float32"]) + 7


def test_only_the_rows_not_computed_before_are_computed():
    forget_outputs()
    asked = []

    def compute(points):
        def rows_from(first):
            asked.append((len(points), first))
            return points[first:, :1].T * 2.0

        return rows_from

    points = np.arange(20.0).reshape(10, 2)
    longer = np.concatenate([points, [[100.0, 101.0]]])
    other = points + 1
    key = ("form", "float64")
    assert np.array_equal(outputs_at(key, points, compute(points)), points[:, :1].T * 2)
    assert np.array_equal(outputs_at(key, longer, compute(longer)), longer[:, :1].T * 2)
    assert np.array_equal(outputs_at(key, points[:4], compute(points[:4])), points[:4, :1].T * 2)
    assert np.array_equal(outputs_at(key, other, compute(other)), other[:, :1].T * 2)
    assert asked == [(10, 0), (11, 10), (10, 0)]  # the prefix of 4 computed nothing


def test_a_form_is_not_taken_for_another_with_other_params():
    with_beta = """\
name: scaled
args: [x]
params:
  beta: {}
expr: log(1 + exp(beta*x))/beta
order: 1
"""
    one, two = (parse_spec_text(with_beta.format(b), "s.yaml") for b in ("1.0", "2.0"))
    forget_outputs()
    samples = measuring_points(one, one.expr, 200)
    first = as_shipped(one.expr, one, samples, False)
    second = as_shipped(two.expr, two, samples, False)
    assert one.expr == two.expr and isinstance(one.expr, sp.Expr)
    assert not np.array_equal(first["float64"], second["float64"])
