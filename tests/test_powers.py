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
from codegen.stabilize.products import spread_forms

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
@pytest.mark.parametrize("cancelled_last", [False, True])
def test_difference_of_powers_is_an_identity(p, cancelled_last):
    form = difference_of_powers(x + y, x, p, sp.S.One, y, cancelled_last)
    opened = form.replace(lambda n: isinstance(n, sp.UnevaluatedExpr), lambda n: n.args[0])
    for a, b in [(0.3, 2.0), (7.0, 1e-3), (1e5, 3.0)]:
        want = (sp.Float(a, 50) + sp.Float(b, 50)) ** p - sp.Float(a, 50) ** p
        got = opened.subs({x: sp.Float(a, 50), y: sp.Float(b, 50)}).evalf(50)
        assert abs(got - want) <= abs(want) * sp.Float(2) ** -150


def test_only_differences_that_cancel_are_rewritten():
    assert power_difference_forms(sp.sqrt(x + y) - sp.sqrt(x))
    assert not power_difference_forms(sp.sqrt(x) - sp.sqrt(y))  # x - y does not simplify
    assert not power_difference_forms(sp.sqrt(x + y) + sp.sqrt(x))  # no difference


def test_the_cancelled_factor_last_keeps_a_normal_result_from_flushing():
    """d/de (sqrt(x**2 + e) - sqrt(e)) at x = 7e-156, e = 0.002 is -1.3e-307, a normal
    number. (A - B)/A = x**2/(x**2 + e) is 2.4e-308 there: times c*Q(r) = 1/4 first it is
    subnormal and TensorFlow flushes it to 0; times the power e**(-1/2) first it is not."""
    spec = parse_spec_text(
        "name: f\nargs: [x, e]\nexpr: sqrt(x**2 + e) - sqrt(e)\norder: 1\n", "specs/f.yaml"
    )
    xs, e = spec.arg_symbols
    f_e = 1 / (2 * sp.sqrt(xs**2 + e)) - 1 / (2 * sp.sqrt(e))
    rows = np.array([[6.94924329e-156, 2.02905823e-3]])
    exact = accuracy.reference(f_e, spec.arg_symbols, rows, "float64")
    assert 0 < -exact[0] < 1e-306
    errors = {}
    for label, form in power_difference_forms(f_e):
        for name, spread in spread_forms(form, True):
            got = evaluate(spread, spec, rows, "float64")
            errors[f"{label}+{name}"] = float(accuracy.bits_error(got, exact, "float64")[0])
    assert errors["power difference+spread powers"] > 50  # flushed to 0
    assert errors["power difference cancelled last+spread powers"] <= 1


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
