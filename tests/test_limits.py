"""codegen.limits: constant pieces at ±inf where a form misses its derivative's limit.

Expected limits are the textbook ones (silu' tends to 1 and 0, gelu tends to 0 at -inf);
the forms are evaluated by the NumPy mirror of TensorFlow.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from codegen.front.functions import sigmoid
from codegen.judge import accuracy
from codegen.judge.numeric import run
from codegen.lower import Regimes, free_symbols, lower
from codegen.stabilize.limits import with_limits

x = sp.Symbol("x", real=True)
y = sp.Symbol("y", real=True)
ALL_REALS = ((-math.inf, math.inf),)
ARGS = (x,)


def _evaluate(form, points, dtype):
    symbols = [s for s in (x, y) if s in free_symbols(form)] or [x]
    program = lower([form], {s: s.name for s in (x, y)})
    columns = {s.name: points[:, i] for i, s in enumerate((x, y)[: points.shape[1]])}
    return run(program, columns, dtype)[0] if symbols else None


def _at(form, values, dtype="float64"):
    return _evaluate(form, np.array(values, dtype=np.float64).reshape(-1, 1), dtype)


SILU_D1 = x * sigmoid(-x) * sigmoid(x) + sigmoid(x)
SILU_D1_EXACT = sp.diff(x / (1 + sp.exp(-x)), x)


def test_silu_first_derivative_gets_its_limits_at_both_infinities():
    assert np.isnan(_at(SILU_D1, [math.inf, -math.inf])).all(), "inf * 0 before the fix"
    fixed = with_limits(SILU_D1, SILU_D1_EXACT, ARGS, ALL_REALS, _evaluate)
    assert isinstance(fixed, Regimes)
    assert fixed.forms == (0, SILU_D1, 1)
    for dtype in ("float32", "float64"):
        np.testing.assert_array_equal(_at(fixed, [-math.inf, math.inf], dtype), [0.0, 1.0])


def test_finite_points_and_nan_are_untouched():
    fixed = with_limits(SILU_D1, SILU_D1_EXACT, ARGS, ALL_REALS, _evaluate)
    points = [-700.0, -3.0, -1e-300, 0.0, 2.5, 40.0, 1e300]
    # the same NumPy ops on the same values in one process: bit for bit on any machine
    np.testing.assert_array_equal(_at(fixed, points), _at(SILU_D1, points))
    assert np.isnan(_at(fixed, [math.nan])).all(), "NaN in gives NaN out"


def test_a_form_right_at_infinity_is_returned_as_is():
    form = sigmoid(x)
    assert with_limits(form, 1 / (1 + sp.exp(-x)), ARGS, ALL_REALS, _evaluate) is form


def test_a_finite_domain_end_gets_no_piece():
    form = x * sp.log(x)
    assert with_limits(form, form, ARGS, ((0.0, 1.0),), _evaluate) is form


def test_an_infinite_limit_gets_no_piece():
    form = x * sigmoid(x)  # x * sigmoid(x) at +inf is inf: already the limit; -inf: NaN
    fixed = with_limits(form, x / (1 + sp.exp(-x)), ARGS, ALL_REALS, _evaluate)
    assert isinstance(fixed, Regimes) and fixed.bounds == (-math.inf,)
    np.testing.assert_array_equal(_at(fixed, [-math.inf, math.inf]), [0.0, math.inf])


def test_gelu_value_at_minus_infinity_is_zero():
    exact = x / 2 * (1 + sp.erf(x / sp.sqrt(2)))
    form = x * sp.erfc(-x / sp.sqrt(2)) / 2
    fixed = with_limits(form, exact, ARGS, ALL_REALS, _evaluate)
    assert fixed.bounds == (-math.inf,)
    assert _at(fixed, [-math.inf])[0] == 0.0


def test_two_args_get_pieces_per_arg_and_keep_the_other_finite():
    """hypot's f_xy = -x*y/hypot**3 is inf/inf at an infinite arg; its limit there is 0."""
    from codegen.front.functions import hypot

    exact = -x * y / (x**2 + y**2) ** sp.Rational(3, 2)
    form = -x / hypot(x, y) * y / hypot(x, y) / hypot(x, y)
    domains = ((-math.inf, math.inf), (-math.inf, math.inf))
    fixed = with_limits(form, exact, (x, y), domains, _evaluate)
    assert isinstance(fixed, Regimes) and fixed.arg == y
    assert isinstance(fixed.forms[1], Regimes) and fixed.forms[1].arg == x
    rows = np.array(
        [[math.inf, 2.0], [-math.inf, 2.0], [2.0, math.inf], [1.0, 2.0], [math.nan, 1.0]]
    )
    for dtype in ("float32", "float64"):
        out = _evaluate(fixed, rows, dtype)
        np.testing.assert_array_equal(out[:3], [0.0, 0.0, 0.0])
        want = accuracy.reference(exact, (x, y), rows[3:4], dtype)
        assert accuracy.bits_error(out[3:4], want, dtype)[0] <= accuracy.P99_LIMIT
        assert np.isnan(out[4])


def test_limits_through_sigmoid_are_found_and_shared_with_the_negation():
    """silu(x - y) and its f_x, written with sigmoid (as a derivative of a spec using it
    is): SymPy's limit at x = -inf finds none through sigmoid (it returns
    -oo*sigmoid(-oo)), but finds 0 with sigmoid in exps; -f_x needs no second limit."""
    from codegen.stabilize import limits

    u = x - y
    assert sp.limit(u * sigmoid(u), x, -sp.oo).has(sigmoid)
    limits._limit_of.cache_clear()
    assert limits._limit(u * sigmoid(u), x, -sp.oo) == 0
    f_x = sigmoid(u) + u * sigmoid(-u) * sigmoid(u)
    assert limits._limit(f_x, x, -sp.oo) == 0
    assert limits._limit(-f_x, x, -sp.oo) == 0
    assert limits._limit_of.cache_info().misses == 2
