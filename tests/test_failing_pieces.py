"""Pieces that fail across another arg (stabilize/failing_pieces.py): a regimes piece that is NaN
wherever in its interval its split arg is moved, at a point screening found, is no piece of the
next round's regimes on that arg. A piece failing only at its own arg's value stays."""

from __future__ import annotations

import numpy as np
import sympy as sp

from codegen.derive import derive
from codegen.front.spec import parse_spec_text
from codegen.lower import Regimes
from codegen.stabilize import stabilize
from codegen.stabilize.failing_pieces import failing_pieces
from codegen.stabilize.measuring import Candidate, Samples, shipped_at_verify

SPEC = parse_spec_text("name: p\nargs: [x, y]\nexpr: 1 + 0*x*y\norder: 1\n", "p.yaml")
X, Y = SPEC.arg_symbols


def _candidate(label: str, form) -> Candidate:
    return Candidate(label, form, (), 1, 0, 0, (0, 0))


def _banned(shipped_form, tried, failing_point) -> frozenset:
    before = Samples(
        {d: np.zeros((0, 2), d) for d in ("float32", "float64")},
        {d: np.zeros(0, d) for d in ("float32", "float64")},
    )
    after = Samples(
        {"float32": np.zeros((0, 2), "float32"), "float64": np.array([failing_point])},
        {"float32": np.zeros(0, "float32"), "float64": np.ones(1)},
    )
    shipped = {d: _candidate("shipped", shipped_form) for d in ("float32", "float64")}
    return failing_pieces(shipped, tried, SPEC, before, after, False)


def test_a_piece_nan_for_every_y_at_large_x_is_banned_from_regimes_on_y():
    overflowing = sp.exp(X) / (sp.exp(X) + 1)  # inf/inf for x > 709, whatever y is
    ratio_at_x = sp.exp(X + Y) / sp.exp(X + Y)  # the same failure, another candidate
    regimes = Regimes(Y, (0.5,), (overflowing, sp.Integer(1)))
    tried = [_candidate("overflowing", overflowing), _candidate("sum", ratio_at_x)]
    tried.append(_candidate("one", sp.Integer(1)))
    assert _banned(regimes, tried, (800.0, 0.1)) == {("overflowing", Y), ("sum", Y)}


def test_a_piece_failing_at_its_own_arg_alone_stays():
    pole = 1 / (Y - sp.Rational(1, 10))  # inf at y = 0.1 only: the next bounds move past it
    regimes = Regimes(Y, (0.5,), (pole, sp.Integer(1)))
    assert _banned(regimes, [_candidate("pole", pole)], (800.0, 0.1)) == frozenset()


def test_a_shifted_logistic_difference_keeps_the_promise():
    """sigmoid(3 - x) - sigmoid(3 - y), written after the mechanism (developed on
    sigmoid(x) - sigmoid(y)). Before, regimes in y moved a piece that is NaN for x > 712
    past each round's failing points, and the value failed at one of verify's points in
    float64 (p99 8 bits)."""
    text = "name: p\nargs: [x, y]\nexpr: 1/(1 + exp(x - 3)) - 1/(1 + exp(y - 3))\norder: 1\n"
    forms = stabilize(derive(parse_spec_text(text, "specs/p.yaml")))
    for figures in shipped_at_verify(forms.spec, forms.choices[0]):
        assert figures.keeps_promise(), (forms.choices[0].chosen.label, figures)


def test_no_regimes_where_every_candidate_is_banned():
    """Bans may leave a split nothing to take; the search then keeps its best form (before,
    (x - 1)*exp(x) - (y - 1)*exp(y) stopped the build with a ValueError from NumPy)."""
    from codegen.stabilize.regimes import best_regimes

    points = {d: np.zeros((10, 2), d) for d in ("float32", "float64")}
    assert best_regimes([], {}, points, X, 0) is None
