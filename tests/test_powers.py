"""Differences of like fractional powers (stabilize/powers.py), against the exact reference."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from codegen.derive import derive
from codegen.front.spec import parse_spec_text
from codegen.judge import accuracy
from codegen.stabilize.measuring import evaluate
from codegen.stabilize.powers import difference_of_powers, power_difference_forms

x, y = sp.symbols("x y", nonnegative=True)


@pytest.mark.parametrize(
    "p",
    [
        sp.Rational(1, 2),
        sp.Rational(-3, 2),
        sp.Rational(1, 3),
        sp.Rational(5, 4),
        sp.Rational(-2, 3),
    ],
)
def test_difference_of_powers_is_an_identity(p):
    form = difference_of_powers(x + y, x, p, sp.S.One, y)
    opened = form.replace(lambda n: isinstance(n, sp.UnevaluatedExpr), lambda n: n.args[0])
    for a, b in [(0.3, 2.0), (7.0, 1e-3), (1e5, 3.0)]:
        want = (sp.Float(a, 50) + sp.Float(b, 50)) ** p - sp.Float(a, 50) ** p
        got = opened.subs({x: sp.Float(a, 50), y: sp.Float(b, 50)}).evalf(50)
        assert abs(got - want) <= abs(want) * sp.Float(2) ** -150


def test_only_differences_that_cancel_are_rewritten():
    assert power_difference_forms(sp.sqrt(x + y) - sp.sqrt(x))
    assert not power_difference_forms(sp.sqrt(x) - sp.sqrt(y))  # x - y does not simplify
    assert not power_difference_forms(sp.sqrt(x + y) + sp.sqrt(x))  # no difference


@pytest.mark.parametrize("index, rewrite", [((0, 0), "power difference"), ((1, 0), "")])
def test_power_difference_keeps_the_promise_where_the_difference_cancels(index, rewrite):
    """(x + y)**(3/2) - x**(3/2) loses every digit where y is small beside x; written with
    (x + y) - x = y nothing cancels. No rule names this expression. (Its f_x is a difference
    of square roots, which the conjugate rewrite fixes as well.)"""
    from codegen.stabilize import choose

    spec = parse_spec_text(
        "name: f\nargs: [x, y]\nexpr: (x + y)**(3/2) - x**(3/2)\norder: 1\n"
        "domain: {x: [0, inf], y: [0, inf]}\n",
        "specs/f.yaml",
    )
    (partial,) = [p for p in derive(spec).partials if p.index == index]
    chosen = choose(spec, partial, 600)
    assert chosen.keeps_promise(), chosen.chosen
    assert rewrite in chosen.chosen.label
    (plain,) = [c for c in chosen.tried if c.label == "sympy"]
    assert not plain.keeps_promise()
    rows = np.array([[1e6, 1e-6], [3.0, 2.0**-40]])
    exact = accuracy.reference(partial.expr, spec.arg_symbols, rows, "float64")
    got = evaluate(chosen.chosen.form, spec, rows, "float64")
    assert np.all(accuracy.bits_error(got, exact, "float64") <= 2)
