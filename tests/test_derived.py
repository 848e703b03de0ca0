"""Candidates derived from lower orders (stabilize/derived.py, offered.valid_derived): the
derivatives of the forms chosen for a partial's ancestors.

(sqrt(x) - sqrt(y))/(x - y) is 1/(sqrt(x) + sqrt(y)), and the value's chosen form is that
conjugate. SymPy's f_xx of the spec as written cancels in four terms; the conjugate
differentiated twice does not. The expected derivatives below are written by hand.
"""

from __future__ import annotations

import pytest
import sympy as sp

from codegen.derive import derive
from codegen.front.spec import parse_spec_text
from codegen.stabilize import selection
from codegen.stabilize.derived import derived_forms
from codegen.stabilize.measuring import measure, measuring_points
from codegen.stabilize.offered import valid_derived

DIVIDED = """\
name: sqrt_divided_difference
args: [x, y]
expr: (sqrt(x) - sqrt(y))/(x - y)
order: 2
domain: {x: [1e-6, 1e6], y: [1e-6, 1e6]}
"""

x, y = sp.symbols("x y", real=True)
CONJUGATE = 1 / (sp.sqrt(x) + sp.sqrt(y))


def _hand_f_xx() -> sp.Expr:
    s = sp.sqrt(x) + sp.sqrt(y)
    return 1 / (4 * x ** sp.Rational(3, 2) * s**2) + 1 / (2 * x * s**3)


def _same(a: sp.Expr, b: sp.Expr) -> bool:
    return sp.simplify(a - b) == 0


def test_the_value_form_is_differentiated_for_every_order_below():
    chosen = {(0, 0): ("conjugate", CONJUGATE), (1, 0): ("as written", sp.Symbol("z") * x)}
    forms = derived_forms(type("P", (), {"index": (2, 0)})(), chosen, (x, y))
    labels = [label for label, _ in forms]
    assert labels[0].startswith("d/dx of (as written)")  # the nearest ancestor first
    (value_twice,) = [form for label, form in forms if label == "d/dxx of (conjugate)"]
    assert _same(value_twice, _hand_f_xx())


def test_the_mixed_partial_differentiates_once_in_each_arg():
    chosen = {(0, 0): ("conjugate", CONJUGATE)}
    (form,) = [f for _, f in derived_forms(type("P", (), {"index": (1, 1)})(), chosen, (x, y))]
    s = sp.sqrt(x) + sp.sqrt(y)
    assert _same(form, 1 / (2 * sp.sqrt(x) * sp.sqrt(y) * s**3))


@pytest.mark.parametrize(
    ("label", "form"),
    [
        ("series at 0<8>", x - x**3 / 6),  # an approximation: its derivative is one too
        ("regimes", sp.Max(x, 0) + y),  # its derivative has Heaviside terms
        ("hypot", sp.Abs(x) * y),
    ],
)
def test_approximations_and_piecewise_forms_give_nothing(label, form):
    chosen = {(0, 0): (label, form)}
    assert derived_forms(type("P", (), {"index": (1, 0)})(), chosen, (x, y)) == []


@pytest.fixture(scope="module")
def divided():
    return derive(parse_spec_text(DIVIDED, "sqrt_divided_difference.yaml"))


def _choice(spec, partial, label, form) -> selection.Choice:
    samples = measuring_points(spec, partial.expr, selection.SAMPLES)
    chosen = measure(label, form, spec, samples)
    return selection.Choice(partial.index, partial.expr, chosen, (chosen,), False)


def test_offered_where_it_equals_the_partial_and_keeps_the_promise(divided):
    spec, value, f_xx = divided.spec, divided.get((0, 0)), divided.get((2, 0))
    sx, sy = spec.arg_symbols
    conjugate = 1 / (sp.sqrt(sx) + sp.sqrt(sy))
    offered = valid_derived(spec, f_xx, [_choice(spec, value, "conjugate", conjugate)])
    assert [label for label, _ in offered] == ["d/dxx of (conjugate)"]
    samples = measuring_points(spec, f_xx.expr, selection.SAMPLES)
    assert measure(*offered[0], spec, samples).keeps_promise()
    assert not measure("sympy", f_xx.expr, spec, samples).keeps_promise()


def test_a_form_that_does_not_equal_the_partial_is_not_offered(divided):
    spec, value, f_xx = divided.spec, divided.get((0, 0)), divided.get((2, 0))
    sx, sy = spec.arg_symbols
    wrong = 1 / (sp.sqrt(sx) + 2 * sp.sqrt(sy))
    assert valid_derived(spec, f_xx, [_choice(spec, value, "wrong", wrong)]) == []
