"""Regime bounds between samples: `thresholds.placed` moves a bound off a form's overflow
that no sample saw, judged against the exact reference on a dense grid; `regimes._split`
splits float32 inputs where it splits float64 ones."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from codegen.front.spec import parse_spec_text
from codegen.judge import accuracy
from codegen.lower import Regimes
from codegen.stabilize.measuring import evaluate
from codegen.stabilize.regimes import _split
from codegen.stabilize.thresholds import placed

SILU = """\
name: silu
args: {args}
expr: x/(1 + exp(-x))
order: 1
"""
SAMPLES_AROUND = (-90.13629913330078, -88.0)  # neighbouring samples of silu's float32 value


def _silu_regimes(bound: float, args: str = "[x]") -> tuple[Regimes, sp.Expr]:
    """silu's value as the stabilizer once shipped it: a log-space form below `bound` and
    x/(1 + exp(-x)), whose float32 exp(-x) overflows below x = -88.72, above it."""
    spec = parse_spec_text(SILU.format(args=args), "silu.yaml")
    x = sp.Symbol("x", real=True)
    assert x in spec.arg_symbols
    logspace = 1 / (sp.exp(sp.UnevaluatedExpr(-x - sp.log(sp.Abs(x)))) / sp.sign(x) + 1 / x)
    return Regimes(x, (bound,), (logspace, x / (1 + sp.exp(-x)))), spec


def _worst_bits_between_samples(form: Regimes, spec) -> float:
    """On a grid of x (the spec's other args, which the value ignores, held at 1)."""
    grid = np.ones((4001, len(spec.args)), dtype=np.float32)
    grid[:, spec.arg_symbols.index(form.arg)] = np.linspace(*SAMPLES_AROUND, 4001)
    exact = accuracy.reference(form.forms[1], spec.arg_symbols, grid, "float32")
    approx = evaluate(form, spec, grid, "float32")
    return float(np.nanmax(accuracy.bits_error(approx, exact, "float32")))


@pytest.mark.parametrize("args", ["[x]", "[x, y]", "[y, x]"])
def test_a_bound_between_samples_moves_off_an_overflow(args):
    """Also where the spec has args the partial does not depend on (CI's hypothesis run found
    exp(x**3) with args [x, y] probed with one column only)."""
    unplaced, spec = _silu_regimes(-90.0, args)
    assert _worst_bits_between_samples(unplaced, spec) > 20  # the grid sees the overflow
    column = spec.arg_symbols.index(unplaced.arg)
    form = placed(unplaced, (SAMPLES_AROUND,), spec, unplaced.forms[1], column, ("float32",), False)
    assert SAMPLES_AROUND[0] < form.bounds[0] <= SAMPLES_AROUND[1]
    assert _worst_bits_between_samples(form, spec) <= accuracy.P99_LIMIT


def test_a_bound_where_both_forms_keep_the_promise_stays():
    unplaced, spec = _silu_regimes(-90.0)
    form = placed(unplaced, (SAMPLES_AROUND,), spec, unplaced.forms[1], 0, ("float64",), False)
    assert form == unplaced  # float64's exp(-x) does not overflow there


finite32 = st.floats(-(2.0**100), 2.0**100, allow_nan=False, width=32)


@given(finite32, finite32)
def test_a_split_puts_its_samples_on_the_same_sides_in_both_dtypes(a, b):
    """Samples are never subnormal; float32 constants below the smallest normal flush to 0
    (TensorFlow on CPU)."""
    lo, hi = sorted((float(a), float(b)))
    tiny = float(np.finfo(np.float32).tiny)
    if not lo < hi or any(0 < abs(v) < tiny for v in (lo, hi)):
        return
    bound, closed = _split(lo, hi)
    for dtype in (np.float32, np.float64):
        low, high, t = dtype(lo), dtype(hi), dtype(bound)
        if dtype is np.float32 and abs(t) < tiny:
            t = dtype(0.0)
        below = low <= t if closed else low < t
        above = high > t if closed else high >= t
        assert below and above, (lo, hi, bound, closed, dtype)
