"""Sign branches in exp(-|u|/2) (issue 16): one exp for every order of a function of exp(u).

A function rational in exp(u) is written on each side of u = 0 as a rational function of
h = exp(-|u|/2), with E = h*h and every product multiplied one h at a time. The pieces are
checked against the exact reference (arb balls), in float32 and float64, through the NumPy
mirror that measures what TensorFlow computes; and the chosen forms of silu and mish are
counted for transcendentals as `hogen explain` counts them.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from sympy.codegen.cfunctions import expm1

from codegen.backends.doctext import describe_form
from codegen.derive import derive
from codegen.front.functions import softplus
from codegen.front.spec import parse_spec_text
from codegen.judge.accuracy import bits_error, reference
from codegen.judge.numeric import run
from codegen.lower import Regimes, lower
from codegen.stabilize import stabilize
from codegen.stabilize.cost import cost
from codegen.stabilize.exp_branches import sign_branch_forms
from codegen.stabilize.measuring import equals_exact, shipped_at_verify

x = sp.Symbol("x", real=True)
SILU = x / (1 + sp.exp(-x))
# None of these was in mind when the forms were written: a scaled swish, tanh times a
# power, and a logistic density in 3x.
UNSEEN = (
    x**2 / (1 + sp.exp(-sp.Rational(17, 10) * x)),
    x * sp.tanh(x),
    sp.exp(3 * x) / (1 + sp.exp(3 * x)) ** 2,
    x * sp.tanh(softplus(x)),  # mish: tanh(log(1 + exp(x))) is rational in exp(x)
)
# Over a power of exp(u) - 1 the pieces have a pole at u = 0 (regimes join a series there):
# none was in mind either.
POLE = (
    x * sp.exp(x) / (sp.exp(x) - 1),
    1 / (sp.exp(2 * x) - 1),
    x**3 / (sp.exp(x) - 1),
)
POINTS = {
    "float32": [-100.0, -91.0, -88.5, -40.0, -3.0, -0.75, -1e-3, 1e-3, 0.5, 2.0, 30.0, 95.0],
    "float64": [-740.0, -703.0, -200.0, -30.0, -1.5, -1e-6, 1e-6, 0.25, 4.0, 60.0, 720.0],
}


def _spec(expr_text: str, order: int = 2):
    return parse_spec_text(f"name: f\nargs: [x]\nexpr: {expr_text}\norder: {order}\n", "f.yaml")


def _worst_bits(form: Regimes, expr: sp.Expr, dtype: str, least: float = 0.0) -> float:
    points = np.array([p for p in POINTS[dtype] if abs(p) >= least], dtype=dtype)
    got = run(lower([form], {x: "x"}), {"x": points}, dtype, "eager")[0]
    exact = reference(expr, (x,), points[:, None].astype(np.float64), dtype)
    normal = np.abs(exact) >= np.finfo(dtype).tiny  # as the promise scores: not subnormals
    return float(np.nanmax(bits_error(got[normal], exact[normal], dtype)))


@pytest.mark.parametrize(
    "expr", [SILU, *UNSEEN], ids=["silu", "swish_x2", "x_tanh", "density", "mish"]
)
def test_every_order_is_accurate_in_the_tails(expr):
    """Where |x| >= 0.5, E = exp(-|u|) is well away from 1 and every order is accurate, also
    where E alone is flushed to 0 and x*E is a normal number (x = -91 in float32)."""
    for order in range(3):
        exact = sp.diff(expr, x, order)
        forms = sign_branch_forms(exact, (x,))
        assert forms, f"no sign-branch form of order {order}"
        best = min(max(_worst_bits(f, exact, d, 0.5) for d in POINTS) for _, f in forms)
        assert best <= 4.0, f"order {order}: {best:.1f} bits"


@pytest.mark.parametrize("expr", [SILU, UNSEEN[2]], ids=["silu", "density"])
def test_silu_and_a_density_are_accurate_near_zero_too(expr):
    """Near u = 0 a numerator may cancel (x*tanh(x)'s f' is (1 - E**2 + 4*x*E)/(1 + E)**2,
    with 1 - E**2 ~ 4|x|); there the measurement takes other forms or regimes. silu's and
    the density's numerators do not."""
    for order in range(3):
        exact = sp.diff(expr, x, order)
        forms = sign_branch_forms(exact, (x,))
        best = min(max(_worst_bits(f, exact, d) for d in POINTS) for _, f in forms)
        assert best <= 4.0, f"order {order}: {best:.1f} bits"


def test_the_pieces_are_the_derivative_where_each_owns_its_points():
    spec = _spec("x/(1 + exp(-x))")
    d_xx = sp.diff(SILU, x, 2)
    form = sign_branch_forms(d_xx, (x,))[0][1]
    assert equals_exact(form, d_xx, spec)
    swapped = Regimes(form.arg, form.bounds, form.forms[::-1], (), True)
    assert not equals_exact(swapped, d_xx, spec)


def test_a_symmetric_derivative_is_one_piece():
    sigmoid_prime = sp.diff(1 / (1 + sp.exp(-x)), x)
    (_, form), *_ = sign_branch_forms(sigmoid_prime, (x,))
    assert form.bounds == () and len(form.forms) == 1 and form.total


def test_no_branches_without_a_linear_exponent():
    assert sign_branch_forms(sp.exp(-(x**2)), (x,)) == []
    assert sign_branch_forms(sp.log(1 + sp.exp(x)), (x,)) == []
    assert sign_branch_forms(x**2 + 1, (x,)) == []


def test_total_pieces_share_one_exp_also_at_the_last_order():
    forms = [sign_branch_forms(sp.diff(SILU, x, k), (x,))[0][1] for k in range(3)]
    assert cost(forms[:2], forms[2:]).transcendentals == 1
    program = lower(forms, {x: "x"})
    assert sum(step.op == "exp" for step in program.steps) == 1


def test_silu_ships_one_exp_for_value_and_both_orders():
    spec = _spec("x/(1 + exp(-x))")
    stable = stabilize(derive(spec))
    for choice in stable.choices:
        assert choice.keeps_promise()
    shipped = [(c.float32_form or c.chosen).form for c in stable.choices]
    assert cost(shipped[:2], shipped[2:]).transcendentals == 1
    value = stable.choices[0].chosen.form
    got = run(lower([value], {x: "x"}), {"x": np.array([np.inf, -np.inf])}, "float32", "eager")
    assert got[0][0] == np.inf and got[0][1] == 0.0  # the clip to finite floats is undone


def test_the_docstring_names_the_shared_exp():
    form = sign_branch_forms(sp.diff(SILU, x), (x,))[0][1]
    text = describe_form(form)
    assert text.endswith(", with h = exp(-Abs(x)/2)")
    assert "(-inf, 0.0): h**2*(h**2 + x + 1)/(h**2 + 1)**2" in text


def test_a_squared_exp_is_not_left_for_xla_to_make_a_second_exp():
    """XLA's simplifier turns exp(a)*exp(a) into exp(a + a); the lowering multiplies h by
    max(h, 0), which is h, so one exp serves (silu's optimized HLO: 2 exps before, 1 after)."""
    h = sp.exp(-sp.Abs(x) / 2)
    program = lower([x / (1 + sp.UnevaluatedExpr(h) ** 2)], {x: "x"})
    ops = [step.op for step in program.steps]
    assert ops.count("exp") == 1 and "square" not in ops and "maximum" in ops
    points = np.array([-3.0, 0.0, 2.5, 80.0])
    got = run(program, {"x": points}, "float64", "eager")[0]
    assert np.allclose(got, points / (1 + np.exp(-np.abs(points))), rtol=1e-15, atol=0)


def test_mish_computes_float32_in_float32():
    """Issue 16: x*tanh(softplus(x)), as a new user writes mish, computed float32 in float64
    (42 transcendentals per element at order 2, in float64). tanh(log(1 + exp(x))) is
    rational in exp(x), and its sign branches keep the promise in float32 itself."""
    stable = stabilize(derive(_spec("x*tanh(softplus(x))")))
    assert not stable.promote_float32
    for choice in stable.choices:
        assert choice.keeps_promise()
    shipped = [(c.float32_form or c.chosen).form for c in stable.choices]
    assert cost(shipped[:2], shipped[2:]).transcendentals <= 6


@pytest.mark.parametrize("expr", POLE, ids=["x_exp_ratio", "bose", "planck"])
def test_pieces_over_expm1_are_accurate_away_from_their_pole(expr):
    """Their pieces are infinite at u = 0, so they are not total (no shared clipped input),
    and their numerators cancel near it (up to 6 bits at x = 0.5 in f''), where regimes take
    a series. From |x| = 2 on, also where exp(x) alone is flushed, every order is accurate."""
    for order in range(3):
        exact = sp.diff(expr, x, order)
        forms = sign_branch_forms(exact, (x,))
        assert forms and not any(form.total for _, form in forms), order
        assert all(any(p.has(expm1) for p in form.forms) for _, form in forms), order
        best = min(max(_worst_bits(f, exact, d, 2.0) for d in POINTS) for _, f in forms)
        assert best <= 4.0, f"order {order}: {best:.1f} bits"


def test_an_op_over_expm1_keeps_the_promise_with_sign_branches():
    """x*exp(x)/(exp(x) - 1): the f' chosen before the branches over expm1 kept the promise
    at the build's points and broke it at verify's in float32 (p99 30 bits, 55 failures:
    exp(x) flushed to 0 where x*exp(x) is normal). Measured here at verify's points."""
    forms = stabilize(derive(_spec("x*exp(x)/(exp(x) - 1)", order=1)))
    for choice in forms.choices:
        assert "sign branches" in choice.chosen.label, choice.chosen.label
    for figures in shipped_at_verify(forms.spec, forms.choices[1]):
        assert figures.keeps_promise(), figures
