"""Frugal choices (issue 16): regimes and per-dtype forms that keep the promise with room at
the fewest transcendentals, beside the most accurate ones.

The candidates here are synthetic: each has per-point errors written by the test, so what is
checked is the choosing, not a framework's rounding. Every expectation is derived from the
errors and costs written below, not from the code under test.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from codegen.judge import accuracy
from codegen.stabilize.measuring import Candidate
from codegen.stabilize.per_dtype import split
from codegen.stabilize.regimes import FRUGAL_FLOOR, best_regimes

x = sp.Symbol("x", real=True)
N = 200  # points per dtype, on [-10, 10]


def _points() -> dict[str, np.ndarray]:
    return {d: np.linspace(-10.0, 10.0, N).astype(d)[:, None] for d in accuracy.DTYPES}


def _bits(below_zero: float, from_zero: float) -> dict[str, np.ndarray]:
    """Per-point error: `below_zero` bits at x < 0, `from_zero` at x >= 0, in both dtypes."""
    x = np.linspace(-10.0, 10.0, N)
    row = np.where(x < 0, below_zero, from_zero)
    return {d: row.copy() for d in accuracy.DTYPES}


def _candidate(label: str, form, transcendentals: int, p99=(1.0, 1.0), failures=(0, 0)):
    figures = tuple(accuracy.Figures(0.2, p, f, N) for p, f in zip(p99, failures, strict=True))
    return Candidate(
        label, form, figures, ops=10 * transcendentals + 1, transcendentals=transcendentals
    )


# accurate: 0 bits below 0, 7 at and above 0 (within the promise, past its room); 3
# transcendentals
# cheap: 5 bits below 0 (within the room, over the accurate regimes' floor), 30 above; 1
# tail: 30 bits below 0, exact above; none
FORMS = {
    "accurate": (sp.exp(x) + sp.log(1 + x**2) + sp.erf(x), 3, _bits(0.0, 7.0)),
    "cheap": (sp.exp(x), 1, _bits(5.0, 30.0)),
    "tail": (x, 0, _bits(30.0, 0.0)),
}


def _tried():
    tried = [_candidate(label, form, t) for label, (form, t, _) in FORMS.items()]
    return tried, {label: bits for label, (_, _, bits) in FORMS.items()}


def test_the_premise_five_bits_are_within_the_room_and_over_the_accurate_floor():
    assert 3.0 < 5.0 <= FRUGAL_FLOOR < 7.0 < accuracy.P99_LIMIT


def test_accurate_regimes_take_the_least_error_and_frugal_the_fewest_transcendentals():
    tried, bits = _tried()
    accurate = best_regimes(tried, bits, _points(), x)
    frugal = best_regimes(tried, bits, _points(), x, frugal=True)
    assert accurate.label == "accurate | tail"
    assert frugal.label == "cheap | tail"
    assert frugal.form.bounds == accurate.form.bounds  # both split where tail turns exact
    assert -10.0 < frugal.form.bounds[0] <= 0.0


def test_frugal_regimes_never_take_a_form_past_the_room():
    """Where the cheap form is 7 bits off (within the promise, not within its room), frugal
    regimes keep the accurate form."""
    tried, bits = _tried()
    bits["cheap"] = _bits(7.0, 30.0)
    frugal = best_regimes(tried, bits, _points(), x, frugal=True)
    assert frugal.label == "accurate | tail"


def test_each_dtype_runs_its_own_cheaper_form_where_it_keeps_that_dtypes_promise_with_room():
    """The joint best keeps both promises with room at 3 transcendentals; another form keeps
    float32's with room at 1 and breaks float64's: float32 takes it, float64 keeps the best."""
    best = _candidate("joint", sp.exp(x) + sp.erf(x) + sp.log(x), 3)
    for32 = _candidate("float32 only", sp.exp(x), 1, p99=(2.0, 12.0), failures=(0, 5))
    assert split(best, [best, for32], 2.0) == (best, for32)


def test_no_split_for_a_cheaper_form_without_room():
    best = _candidate("joint", sp.exp(x) + sp.erf(x) + sp.log(x), 3)
    narrow = _candidate("narrow", sp.exp(x), 1, p99=(7.0, 12.0), failures=(0, 5))
    assert split(best, [best, narrow], 2.0) is None
