"""where/min/max/clamp: what the grammar builds, how it is lowered, how the reference reads it.

Expected values are written by hand from the definitions (elu, clamp, max), not taken from
the code under test; the lowered program runs in the NumPy mirror of TensorFlow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from codegen import pieces as pieces_module
from codegen.derive import derive
from codegen.front.spec import parse_expression, parse_spec_text
from codegen.judge.accuracy import reference
from codegen.judge.numeric import run
from codegen.lower import lower
from codegen.pieces import Pieces, safe_point, values_only

x, y = sp.symbols("x y", real=True)
NAMES = {"x": x, "y": y}


def _parse(text: str) -> sp.Expr:
    return parse_expression(text, NAMES, path="t.yaml", line=1, col=1)


def _mirror(expr, points: dict[str, list[float]], dtype="float64") -> np.ndarray:
    program = lower([expr], {s: s.name for s in sorted(expr.free_symbols, key=str)})
    return run(program, {k: np.array(v) for k, v in points.items()}, dtype)[0]


@pytest.mark.parametrize(
    "text, at, expected",
    [
        ("where(x > 0, x, exp(x) - 1)", [-1.0, 0.0, 2.0], [math.exp(-1) - 1, 0.0, 2.0]),
        ("max(x, 1)", [-3.0, 1.0, 4.0], [1.0, 1.0, 4.0]),
        ("min(x, 1, 2)", [-3.0, 1.5, 4.0], [-3.0, 1.0, 1.0]),
        ("clamp(x, -1, 2)", [-3.0, 0.5, 4.0], [-1.0, 0.5, 2.0]),
        ("where(x > 0 and x < 1, 1, 0)", [-1.0, 0.5, 2.0], [0.0, 1.0, 0.0]),
        ("where(x < -1 or x > 1, 1, 0)", [-2.0, 0.0, 2.0], [1.0, 0.0, 1.0]),
        ("where(0 < x <= 1, x, 0)", [0.0, 1.0, 1.5], [0.0, 1.0, 0.0]),
        ("2 * where(x > 0, x, 0) + 1", [-1.0, 3.0], [1.0, 7.0]),
        ("where(x > 0, where(x > 1, 3, 2), 1)", [-1.0, 0.5, 2.0], [1.0, 2.0, 3.0]),
    ],
)
def test_values_as_written(text, at, expected):
    expr = _parse(text)
    assert isinstance(expr, sp.Piecewise)  # folded: the pieces are at the top
    np.testing.assert_array_equal(_mirror(expr, {"x": at}), expected)
    exact = reference(expr, (x,), np.array(at).reshape(-1, 1), "float64")
    np.testing.assert_array_equal(exact, expected)


def test_condition_decides_the_side_at_a_boundary():
    spec = parse_spec_text("name: f\nargs: [x]\nexpr: where(x > 0, x, exp(x) - 1)\n", "f.yaml")
    partials = derive(spec).partials
    at_zero = [reference(p.expr, (x,), np.array([[0.0]]), "float64")[0] for p in partials]
    assert at_zero == [0.0, 1.0, 1.0]  # x > 0 is false at 0: the exp piece, exp(0) = 1
    spec = parse_spec_text("name: f\nargs: [x]\nexpr: where(x >= 0, x, exp(x) - 1)\n", "f.yaml")
    at_zero = [
        reference(p.expr, (x,), np.array([[0.0]]), "float64")[0] for p in derive(spec).partials
    ]
    assert at_zero == [0.0, 1.0, 0.0]  # x >= 0 holds at 0: the linear piece


def test_several_args_in_a_condition():
    expr = _parse("where(x > y, x - y, log(y - x + 1))")
    got = _mirror(expr, {"x": [3.0, 0.0], "y": [1.0, 1.0]})
    np.testing.assert_allclose(got, [2.0, math.log(2.0)], rtol=1e-15)


def test_nan_in_gives_nan_out():
    for text in ("where(x > 0, x, exp(x) - 1)", "clamp(x, -1, 2)", "max(x, 0)"):
        assert np.isnan(_mirror(_parse(text), {"x": [math.nan]})).all(), text


def test_unused_piece_gets_a_safe_input():
    """log(x) is not taken at x <= 0: its input there is a point where log is finite."""
    expr = _parse("where(x > 0, log(x), x)")
    program = lower([expr], {x: "x"})
    assert any(step.op == "select" and step.operands[1] == "x" for step in program.steps)
    values = run(program, {"x": np.array([-5.0, 0.0, 2.0])}, "float64")
    assert np.isfinite(values[0]).all()
    (point,) = safe_point(sp.log(x), (x,))
    assert math.isfinite(math.log(point)) and point > 0


def test_values_only_lowering_gives_the_same_values_bit_for_bit():
    """The stabilizer lowers with 1 in place of safe points: the select discards the piece
    not taken, so every value and every step count is what the shipped program computes."""
    expr = _parse("where(x > 1, sqrt(x - 1) * log(x - 1), where(x < -1, log(-x), x))")
    points = {"x": np.array([-7.0, -1.0, -0.5, 0.0, 1.0, 1.5, 1e30, math.nan])}
    shipped = lower([expr], {x: "x"})
    with values_only():
        measured = lower([expr], {x: "x"})
    assert len(measured.steps) == len(shipped.steps)
    assert [s.operands for s in measured.steps] != [s.operands for s in shipped.steps]
    for dtype in ("float32", "float64"):
        a = run(shipped, points, dtype)[0]
        b = run(measured, points, dtype)[0]
        np.testing.assert_array_equal(a, b)


def test_safe_point_is_checked_in_balls_and_by_sympy_alike():
    """The balls find the first point where the form and its partials are finite and real;
    SymPy's N (the fallback) finds the same one. sqrt(x - 1)'s partial is inf at 1."""
    y = sp.Symbol("y")
    form = sp.sqrt(x - 1) * sp.log(y)
    assert pieces_module._ball_checks([form], (x, y)) is not None
    point = safe_point(form, (x, y))
    assert point == (2.0, 2.0)
    checks = [form, sp.diff(form, x), sp.diff(form, y)]
    first = next(
        p
        for p in [(v, v) for v in pieces_module._SAFE_VALUES]
        if all(pieces_module._finite(c.subs({x: p[0], y: p[1]})) for c in checks)
    )
    assert first == point


def test_safe_point_of_a_guarded_form_is_found():
    """An UnevaluatedExpr guard (a compensated sum's) differentiates like what it holds."""
    form = sp.sqrt(sp.UnevaluatedExpr(x - 1))
    assert safe_point(form, (x,)) == (2.0,)


def test_polynomial_pieces_need_no_guard():
    program = lower([_parse("where(x > 0, x**2, -x)")], {x: "x"})
    assert [step.op for step in program.steps].count("select") == 1  # only the value's


def test_pieces_of_chosen_forms_lower_like_piecewise():
    pw = _parse("where(x > 0, x, expm1(x))")
    pieces = Pieces.of(pw)
    a = _mirror(pw, {"x": [-2.0, 0.0, 3.0]})
    program = lower([pieces], {x: "x"})
    b = run(program, {"x": np.array([-2.0, 0.0, 3.0])}, "float64")[0]
    np.testing.assert_array_equal(a, b)
