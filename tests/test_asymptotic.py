"""Asymptotic series at ±inf (codegen.stabilize.asymptotic): which expansions are offered, and
that each offered form is accurate far out where the closed form is not.

Each expected value is computed here with mpmath at 50 digits from the closed form, never
from the series under test; the forms are evaluated by the NumPy mirror of the generated ops.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.derive import derive
from codegen.front.rounding import square_head
from codegen.front.spec import parse_spec_text
from codegen.judge import numeric
from codegen.lower import lower
from codegen.stabilize import stabilize
from codegen.stabilize.asymptotic import asymptotic_forms
from codegen.stabilize.measuring import shipped_at_verify

x = sp.Symbol("x", real=True)
a = sp.Symbol("a", positive=True)
EVERYWHERE = (-math.inf, math.inf)


def evaluate(form: sp.Expr, at: float, dtype: str = "float64", **params: float) -> float:
    program = lower([form], {s: s.name for s in form.free_symbols})
    inputs = {"x": np.array([at]), **{k: np.array([v]) for k, v in params.items()}}
    return float(numeric.run(program, inputs, dtype)[0][0])


def exact(fn, at: float) -> float:
    with mpmath.workdps(50):
        return float(fn(mpmath.mpf(at)))


def longest(forms, side: str) -> sp.Expr:
    return [form for label, form in forms if label.startswith(f"series {side}<")][-1]


# (expression, side, point, exact value as an mpmath function): cancellation, 0 * inf and
# overflowing intermediates, where the closed form in float64 is far off or not finite
TAILS = [
    ("sqrt(x**2 + x) - x", "+inf", 1e17, lambda t: mpmath.sqrt(t**2 + t) - t),
    ("x*log(1 + 1/x)", "+inf", 1e17, lambda t: t * mpmath.log(1 + 1 / t)),
    ("x**2/sqrt(x**4 + 1)", "+inf", 1e160, lambda t: t**2 / mpmath.sqrt(t**4 + 1)),
    ("x**2/sqrt(x**4 + 1)", "-inf", -1e160, lambda t: t**2 / mpmath.sqrt(t**4 + 1)),
    ("x**3/(x**6 + 1)", "+inf", 1e60, lambda t: t**3 / (t**6 + 1)),
    ("x - sqrt(x**2 - 1)", "+inf", 1e10, lambda t: t - mpmath.sqrt(t**2 - 1)),
    (
        "exp(x**2/2)*erfc(x/sqrt(2))",
        "+inf",
        40.0,
        lambda t: mpmath.exp(t**2 / 2) * mpmath.erfc(t / mpmath.sqrt(2)),
    ),
]


@pytest.mark.parametrize(
    "text, side, point, truth", TAILS, ids=[f"{t} at {s}" for t, s, *_ in TAILS]
)
def test_the_longest_expansion_is_accurate_where_the_closed_form_fails(text, side, point, truth):
    expr = sp.sympify(text, locals={"x": x})  # test-authored text, not a user's spec
    forms = asymptotic_forms(expr, x, EVERYWHERE)
    want = exact(truth, point)
    closed = evaluate(expr, point)
    assert not (math.isfinite(closed) and math.isclose(closed, want, rel_tol=1e-10)), closed
    assert evaluate(longest(forms, side), point) == pytest.approx(want, rel=1e-14)


def test_several_lengths_are_offered_on_each_reached_side():
    forms = asymptotic_forms(x**2 / sp.sqrt(x**4 + 1), x, EVERYWHERE)
    labels = [label for label, _ in forms]
    assert {label.split("<")[0] for label in labels} == {"series +inf", "series -inf"}
    assert len([label for label in labels if label.startswith("series +inf")]) >= 3


def test_only_the_sides_the_domain_reaches():
    expr = sp.sqrt(x**2 + x) - x
    assert {label.split("<")[0] for label, _ in asymptotic_forms(expr, x, (0.0, math.inf))} == {
        "series +inf"
    }
    assert asymptotic_forms(expr, x, (0.0, 1.0)) == []


def test_coefficients_may_hold_params():
    expr = sp.sqrt(x**2 + a * x) - x
    form = longest(asymptotic_forms(expr, x, (0.0, math.inf)), "+inf")
    assert a in form.free_symbols
    point = 1e17
    want = exact(lambda t: mpmath.sqrt(t**2 + 3 * t) - t, point)
    assert evaluate(form, point, a=3.0) == pytest.approx(want, rel=1e-14)


def test_logs_of_x_are_kept_as_terms():
    expr = sp.log(x**2 + 1) - 2 * sp.log(x)  # 1/x**2 - 1/(2x**4) + ...
    form = longest(asymptotic_forms(expr, x, EVERYWHERE), "+inf")
    assert evaluate(form, 1e10) == pytest.approx(
        exact(lambda t: mpmath.log(t**2 + 1) - 2 * mpmath.log(t), 1e10), rel=1e-14
    )
    log_term = sp.log(x) / x
    form = longest(asymptotic_forms(log_term + 1 / x**2, x, (1.0, math.inf)), "+inf")
    assert form.has(sp.log(x))


@pytest.mark.parametrize(
    "expr",
    [sp.exp(x), x * sp.exp(-x), sp.sin(x)],
    ids=["grows like exp", "exp term", "oscillates"],
)
def test_no_power_series_where_the_expansion_is_not_one(expr):
    labels = [label for label, _ in asymptotic_forms(expr, x, (0.0, math.inf))]
    assert [label for label in labels if "times exp" not in label] == []


def test_an_oscillating_tail_gets_no_form():
    assert asymptotic_forms(sp.sin(x), x, (0.0, math.inf)) == []


def test_a_sum_of_exponentials_of_different_rates_gets_no_scaled_form():
    assert asymptotic_forms(sp.log(1 + sp.exp(-x)) + sp.exp(-2 * x), x, (0.0, math.inf)) == []


GELU_VALUE = x * (1 + sp.erf(x / sp.sqrt(2))) / 2


def _gelu_value(t):
    return t * mpmath.ncdf(t)


def test_an_exponentially_small_tail_is_the_exponential_times_a_power_series():
    """gelu's value at -inf: SymPy expands it to 0, and x*erfc(-x/sqrt(2))/2 loses erfc to
    underflow first (float32 flushes erfc(9.3) while x/2 times it is a normal number).
    exp(-x**2/2) times the expansion of the rest is accurate there, in both dtypes."""
    forms = asymptotic_forms(GELU_VALUE, x, EVERYWHERE)
    scaled = [form for label, form in forms if label.startswith("series -inf times exp<")]
    assert scaled and not any(label.startswith("series -inf<") for label, _ in forms)
    longest_scaled = scaled[-1]
    for point, dtype in ((-30.0, "float64"), (-13.1, "float32")):
        want = exact(_gelu_value, float(np.array(point, dtype)))
        assert evaluate(longest_scaled, point, dtype) == pytest.approx(want, rel=2.0**-20)
    closed = evaluate(x * sp.erfc(-x / sp.sqrt(2), evaluate=False) / 2, -13.1, "float32")
    assert closed == 0.0  # the premise: the closed form is flushed there


def test_the_exponential_is_computed_with_its_square_exact():
    """exp(-x**2/2) at x = -30 loses log2(450) ~ 9 bits to rounding x**2 (`squares`); the
    scaled form keeps its head exact, so it stays within a few ulps in float64."""
    form = [f for label, f in asymptotic_forms(GELU_VALUE, x, EVERYWHERE) if "times exp" in label][
        -1
    ]
    assert form.has(square_head)
    point = -30.000000000000004
    want = exact(_gelu_value, point)
    assert abs(evaluate(form, point) - want) <= 4 * np.spacing(abs(want))


def test_a_subnormal_leading_power_is_split_around_the_sum():
    """x**-6 alone underflows in float32 at x = 1e7 while x**-3 * (c * x**-3) is exact."""
    form = longest(asymptotic_forms(1 / (x**6 + 1), x, (0.0, math.inf)), "+inf")
    assert form.has(sp.UnevaluatedExpr)
    assert evaluate(form, 1e6, "float32") == pytest.approx(1e-36, rel=1e-6)


def _series_lengths(monkeypatch) -> list[int]:
    """The n of every SymPy series the expansions ask for, recorded as they run."""
    asked, series = [], sp.series

    def recorded(expr, arg, point, n, *rest):
        asked.append(n)
        return series(expr, arg, point, n, *rest)

    monkeypatch.setattr(sp, "series", recorded)
    return asked


def test_exp_terms_in_the_leading_terms_skip_the_long_expansion(monkeypatch):
    """log((exp(x) + exp(-x))/2) = x - log(2) + exp(-2*x) + ... at +inf: no candidate may
    hold exp terms, and a short expansion shows them, so the long one (most of an
    expansion's time) is not run."""
    asked = _series_lengths(monkeypatch)
    log_cosh = sp.log((sp.exp(x) + sp.exp(-x)) / 2)
    assert asymptotic_forms(log_cosh, x, EVERYWHERE) == []
    assert asked and max(asked) < 20


def test_usable_leading_terms_still_get_the_long_expansion(monkeypatch):
    """sqrt(x**2 + x) - x: the short expansion is usable, the long one is what is offered;
    its longest form is accurate at 1e10, where the closed form cancels to 0."""
    asked = _series_lengths(monkeypatch)
    forms = asymptotic_forms(sp.sqrt(x**2 + x) - x, x, (0.0, math.inf))
    assert max(asked) == 20
    want = exact(lambda v: mpmath.sqrt(v**2 + v) - v, 1e10)
    assert evaluate(longest(forms, "+inf"), 1e10) == pytest.approx(want, rel=1e-15)


def test_a_function_of_a_vanishing_exponential_is_expanded_in_it():
    """x*tanh(exp(x)) at -inf is x*exp(x) - x*exp(3*x)/3 + ...: SymPy's expansion in powers
    of x holds exp terms, and exp(x) alone is subnormal, flushed, from x = -708.4 while the
    value is a normal number down to x = -715. The first term written as one exp holds
    there; the expected value is the closed form at 50 digits."""
    forms = dict(asymptotic_forms(x * sp.tanh(sp.exp(x)), x, EVERYWHERE))
    assert forms["series -inf in exp<1>"] == x * sp.exp(x)
    at = -712.0
    truth = exact(lambda t: t * mpmath.tanh(mpmath.exp(t)), at)
    assert evaluate(x * sp.tanh(sp.exp(x)), at) == 0.0  # the flush the expansion avoids
    one_exp = forms["series -inf in exp<1>+absorb exp"]
    assert evaluate(one_exp, at) == pytest.approx(truth, rel=1e-13)
    assert not any(label.startswith("series +inf in exp") for label in forms)  # exp(x) grows


def test_an_expansion_in_the_exponential_needs_it_to_vanish_first():
    """log(2 + exp(-x)) at +inf tends to log(2), not 0: the first term is no power of
    exp(-x), so no such expansion is offered (the closed form holds there)."""
    labels = [label for label, _ in asymptotic_forms(sp.log(2 + sp.exp(-x)), x, EVERYWHERE)]
    assert not any(" in exp" in label for label in labels)


@pytest.mark.parametrize("text", ["x*atan(exp(x))", "(x**2 + 1)*tanh(exp(x))"])
def test_a_product_with_a_flushed_exponential_inside_keeps_the_promise(text):
    """Written after the expansion (developed on x*tanh(exp(x))): before, both values were 0
    in float64 at a point of verify's where exp(x) alone is subnormal (1 failure each)."""
    spec_text = f"name: p\nargs: [x]\nexpr: {text}\norder: 1\n"
    forms = stabilize(derive(parse_spec_text(spec_text, "specs/p.yaml")))
    for figures in shipped_at_verify(forms.spec, forms.choices[0]):
        assert figures.keeps_promise(), (forms.choices[0].chosen.label, figures)


def test_a_domain_that_ends_far_out_gets_its_expansion():
    """lgamma(x + 1) - x*log(x) + x on [1, 1e6] loses 20 bits at 1e6 to cancellation;
    Stirling's series there is exact to the ulp."""
    expr = sp.loggamma(x + 1) - x * sp.log(x) + x
    form = longest(asymptotic_forms(expr, x, (1.0, 1e6)), "+inf")
    want = exact(lambda t: mpmath.loggamma(t + 1) - t * mpmath.log(t) + t, 1e6)
    assert not evaluate(expr, 1e6) == pytest.approx(want, rel=1e-12)
    assert evaluate(form, 1e6) == pytest.approx(want, rel=1e-14)
