"""Regimes on the line x = y (issue 13, kinds 1 and 5): which coordinate they split on.

A derivative that is a function of x - y alone (erf(x - y), a loss of a residual) splits on
x - y, though x - y does not divide its denominator. One that is homogeneous in x and y
((log(x) - log(y))/(x - y)) splits on y/x: its series in x - y is as accurate at one relative
distance (x - y)/y at every scale, which no threshold on x - y follows. The series in x - y
go to 20 terms where SymPy finds them in time, and to fewer where it does not.

Accuracy is checked against mpmath at 50 digits.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from codegen.judge.accuracy import bits_error
from codegen.judge.numeric import run
from codegen.lower import lower
from codegen.stabilize import lines
from codegen.stabilize.lines import line_difference, line_series, split_difference
from codegen.stabilize.search import _line_coordinate

x, y = sp.symbols("x y", real=True)
LOG_MEAN_INV = (sp.log(x) - sp.log(y)) / (x - y)
DIVDIFF = (sp.exp(x) - sp.exp(y)) / (x - y)


def test_a_function_of_the_difference_splits_on_it():
    assert split_difference(sp.erf(x - y), (x, y)) == x - y
    assert line_difference(sp.erf(x - y), (x, y)) is None  # no factor x - y below
    assert split_difference(sp.diff(sp.tanh(x - y) ** 2, x, y), (x, y)) == x - y
    assert split_difference(sp.erf(x) - y, (x, y)) is None
    assert split_difference(sp.erf(x + y), (x, y)) is None
    assert split_difference(sp.erf(x - y), (x,)) is None


def test_a_homogeneous_line_splits_on_the_ratio():
    assert _line_coordinate(sp.diff(LOG_MEAN_INV, y, 2), (x, y)) == y / x
    assert _line_coordinate(DIVDIFF, (x, y)) == x - y  # exp: not homogeneous
    assert _line_coordinate(sp.erf(x - y), (x, y)) == x - y


def _f_yy(a: float, b: float) -> float:
    mpmath.mp.dps = 50
    f = lambda v: (mpmath.log(a) - mpmath.log(v)) / (a - v)  # noqa: E731
    return float(mpmath.diff(f, mpmath.mpf(b), 2))


def test_twenty_terms_keep_f_yy_at_a_tenth_apart_at_every_scale():
    """At (x - y)/y = 0.1 the closed form of f_yy loses 6 bits or more whatever the
    scale, and the series in x - y to 20 terms keeps it, at y = 0.01 as at y = 50."""
    derivative = sp.diff(LOG_MEAN_INV, y, 2)
    series = dict(line_series(derivative, (x, y)))
    rows = np.array([[0.011, 0.01], [1.1, 1.0], [55.0, 50.0], [0.95, 1.0]])
    exact = np.array([_f_yy(a, b) for a, b in rows])

    def bits(form) -> np.ndarray:
        program = lower([form], {x: "x", y: "y"})
        got = run(program, {"x": rows[:, 0], "y": rows[:, 1]}, "float64")[0]
        return bits_error(got, exact, "float64")

    assert bits(series["series x - y<20>"]).max() <= 2.0
    assert bits(derivative).min() > 4.0  # 5.9 to 12.7 bits here


def test_a_series_too_slow_to_the_most_terms_is_taken_to_fewer(monkeypatch):
    monkeypatch.setattr(lines, "LINE_SERIES_TERMS", (4, 8, 12, 400))
    labels = [label for label, _ in line_series(sp.diff(DIVDIFF, x), (x, y))]
    assert labels == ["series x - y<4>", "series x - y<8>", "series x - y<12>"]
