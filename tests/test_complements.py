"""Differences of one saturating function at two args (stabilize/complements.py).

The forms are checked symbolically; the stabilizer's use of them on an expression the
mechanism was not developed on, against the exact reference at verify's points.
"""

from __future__ import annotations

import sympy as sp

from codegen.front.functions import sigmoid
from codegen.stabilize.complements import complement_forms

x, y = sp.symbols("x y", real=True)


def test_each_saturating_end_gives_the_difference_of_its_tails():
    forms = dict(complement_forms(sp.erf(x) - sp.erf(y), (x, y)))
    assert forms["tails at +inf"] == sp.erfc(y) - sp.erfc(x)
    assert forms["tails at -inf"] == sp.erfc(-x, evaluate=False) - sp.erfc(-y, evaluate=False)
    (tanh_tail,) = [f for n, f in complement_forms(sp.tanh(x) - sp.tanh(y), (x, y)) if "+inf" in n]
    assert tanh_tail == 2 * sigmoid(-2 * y) - 2 * sigmoid(-2 * x)


def test_the_tails_of_atan_are_angles_and_a_constant_factor_stays_outside():
    forms = dict(complement_forms((sp.atan(x / 3) - sp.atan(y / 3)) / sp.pi, (x, y)))
    assert forms["tails at +inf"] == (sp.atan2(1, y / 3) - sp.atan2(1, x / 3)) / sp.pi
    assert forms["tails at -inf"] == (sp.atan2(1, -x / 3) - sp.atan2(1, -y / 3)) / sp.pi


def test_a_tail_with_a_square_root_is_taken_by_its_conjugate_without_overflow():
    """1/2 - u/(2*sqrt(u**2 + 2)) cancels at large u. Its conjugate divides by the root, and
    never multiplies u by it: u*sqrt(u**2 + 2) overflows float32 at u = 1e19."""
    difference = x / (2 * sp.sqrt(2 + x**2)) - y / (2 * sp.sqrt(2 + y**2))
    forms = dict(complement_forms(difference, (x, y)))
    tail = forms["tails at +inf"]
    assert tail.has(sp.Piecewise)
    for product in tail.atoms(sp.Mul):
        factors = sp.Mul.make_args(product)
        roots = [f for f in factors if isinstance(f, sp.Function) and f.has(x)]  # hypot(.., x)
        assert not (x in factors and roots), product
    for point in ((3.0, 2.0), (40.0, -7.0), (-5.0, 0.5)):
        at = dict(zip((x, y), point, strict=True))
        assert abs(float(tail.subs(at).doit()) - float(difference.subs(at))) < 1e-12


def test_no_tail_form_without_a_finite_limit_or_a_rule_that_removes_it():
    assert complement_forms(sp.log(1 + sp.exp(x)) - sp.log(1 + sp.exp(y)), (x, y)) == []
    # pi/2 - 2*atan(tanh(u/2)): the gudermannian's tail, which no rule takes
    gd = 2 * sp.atan(sp.tanh(x / 2)) - 2 * sp.atan(sp.tanh(y / 2))
    assert complement_forms(gd, (x, y)) == []
    assert complement_forms(sp.erf(x) + sp.erf(y), (x, y)) == []  # not a difference
    assert complement_forms(sp.erf(x) - sp.erf(2 * y), (x, y)) == []


def test_the_probability_of_an_interval_keeps_the_promise_in_both_tails():
    """P(y < Z < x) for a standard normal Z, (erf(x/sqrt(2)) - erf(y/sqrt(2)))/2: where x
    and y are both far out on one side each erf rounds to +-1, and the difference to 0
    (26 failures in float32, 22 in float64 at verify's points before the tail forms). Not
    an expression the mechanism was developed on."""
    from codegen.derive import derive
    from codegen.front.spec import parse_spec_text
    from codegen.stabilize import stabilize
    from codegen.stabilize.measuring import shipped_at_verify

    text = "name: p\nargs: [x, y]\nexpr: (erf(x/sqrt(2)) - erf(y/sqrt(2)))/2\norder: 1\n"
    forms = stabilize(derive(parse_spec_text(text, "specs/p.yaml")))
    for figures in shipped_at_verify(forms.spec, forms.choices[0]):
        assert figures.keeps_promise(), (forms.choices[0].chosen.label, figures)


def _keeps_the_promise_at_verify(expr: str) -> None:
    from codegen.derive import derive
    from codegen.front.spec import parse_spec_text
    from codegen.stabilize import stabilize
    from codegen.stabilize.measuring import shipped_at_verify

    text = f"name: p\nargs: [x, y]\nexpr: {expr}\norder: 1\n"
    forms = stabilize(derive(parse_spec_text(text, "specs/p.yaml")))
    for figures in shipped_at_verify(forms.spec, forms.choices[0]):
        assert figures.keeps_promise(), (forms.choices[0].chosen.label, figures)


def test_a_cauchy_interval_keeps_the_promise_far_out():
    """P(y < X < x) for a Cauchy X of scale 3. atan(x/3) and atan(y/3) both round to pi/2
    far out (1 failure in each dtype at verify's points before the atan tail rule).
    Written after the rule, not used to develop it."""
    _keeps_the_promise_at_verify("(atan(x/3) - atan(y/3))/pi")


def test_a_student_t_interval_keeps_the_promise_far_out():
    """P(y < T < x) for Student's t with 2 degrees of freedom. Both terms round to 1/2 far
    out (30 float32 and 45 float64 failures before tails were taken by conjugates).
    Written after the mechanism, not used to develop it."""
    _keeps_the_promise_at_verify("x/(2*sqrt(2 + x**2)) - y/(2*sqrt(2 + y**2))")


def _mirror(form: sp.Expr, point: tuple[float, float]) -> float:
    import numpy as np

    from codegen.judge import numeric
    from codegen.lower import lower

    program = lower([form], {x: "x", y: "y"})
    inputs = {"x": np.array([point[0]]), "y": np.array([point[1]])}
    return float(numeric.run(program, inputs, "float64")[0][0])


def test_a_growing_difference_is_computed_by_asymptote_and_tail_on_each_side():
    """log(1 + x**2) - log(1 + y**2): x**2 overflows float64 past 1.3e154, where the plain
    form is inf - inf or inf, and where both args are large and near in ratio their logs
    cancel. Each arg past |u| = 1 is 2*log|u| + log1p(u**-2), and two such heads are
    2*log(x/y). Exact values from mpmath at 50 digits, from the expression as written."""
    import mpmath

    from codegen.stabilize.complements import growth_forms

    ((label, form),) = growth_forms(sp.log(1 + x**2) - sp.log(1 + y**2), (x, y))
    assert label == "asymptotes"
    mpmath.mp.dps = 50
    points = [(1e200, 3e199), (1e200, -0.5), (-1e300, 1e-300), (1e10, -1.1e10), (0.3, -0.7)]
    for point in points:
        a, b = (mpmath.mpf(v) for v in point)
        exact = mpmath.log(1 + a**2) - mpmath.log(1 + b**2)
        assert abs(_mirror(form, point) - exact) <= 2.0**-48 * abs(exact), point


def test_no_asymptote_form_where_nothing_grows_or_no_tail_is_found():
    from codegen.stabilize.complements import growth_forms

    assert growth_forms(sp.erf(x) - sp.erf(y), (x, y)) == []  # saturates at both ends
    assert growth_forms(sp.log(1 + x**2) + sp.log(1 + y**2), (x, y)) == []  # not a difference
    assert growth_forms(sp.asinh(x) - sp.asinh(y), (x, y)) == []  # no rule takes its tail


def test_growing_differences_keep_the_promise_far_out():
    """Two differences of functions that grow like 4*log|u| and 2*u, written before the
    mechanism (outside the corpus) and not looked at while it was developed: 87 float64
    failures, and 546 float32 and 474 float64, at the corpus's points before it."""
    _keeps_the_promise_at_verify("log(1 + x**4) - log(1 + y**4)")
    _keeps_the_promise_at_verify("log(3 + exp(2*x)) - log(3 + exp(2*y))")
