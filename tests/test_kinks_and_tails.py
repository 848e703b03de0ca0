"""Four general mechanisms found on expressions written outside the corpus (session 43):

- a product of one sum over factors that are no sums is multiplied out, so no term of the sum
  overflows before the scaling that brings it back (`candidates._distributed`);
- inverse hyperbolics are expanded at ±inf through their logs (SymPy has no expansion of
  asinh at oo: `asymptotic._in_logs`);
- a derivative with a kink at 0 (|x|, sign(x)) gets its Taylor series from the left too
  (`taylor._from_the_left`);
- sign branches in exp(-|u|/2) write sign(x) and |x| out on each side
  (`exp_branches._on_side`).

Every expected value comes from mpmath at 50 digits or the exact reference (arb balls), never
from the forms under test; forms are evaluated by the NumPy mirror of the generated ops.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.derive import derive
from codegen.front.spec import parse_spec_text
from codegen.judge.accuracy import bits_error, reference
from codegen.judge.numeric import run
from codegen.lower import lower
from codegen.stabilize import stabilize
from codegen.stabilize.asymptotic import asymptotic_forms
from codegen.stabilize.candidates import _distributed
from codegen.stabilize.exp_branches import sign_branch_forms
from codegen.stabilize.measuring import shipped_at_verify
from codegen.stabilize.taylor import series_candidates

x = sp.Symbol("x", real=True)
EVERYWHERE = (-mpmath.inf, mpmath.inf)


def _at(form: sp.Expr, points, dtype: str = "float64") -> np.ndarray:
    values = np.array(points, dtype=dtype)
    return run(lower([form], {x: "x"}), {"x": values}, dtype)[0]


def _bits(form: sp.Expr, expr: sp.Expr, points, dtype: str = "float64") -> float:
    """The worst error of `form` at `points` against the exact value of `expr`, in bits."""
    exact = reference(expr, (x,), np.array(points, dtype=np.float64)[:, None], dtype)
    return float(np.max(bits_error(_at(form, points, dtype), exact, dtype)))


def test_a_sum_over_a_power_is_multiplied_out_where_its_numerator_overflows():
    """(x**3/6 - x + sin(x))/x**5 at x = 1e120: x**3 overflows float64, the value 1/(6x**2)
    does not. Each term scaled alone stays finite; the quotient as written is inf/inf."""
    expr = (x**3 / 6 - x + sp.sin(x)) / x**5
    spread = _distributed(expr)
    assert sp.simplify(spread - expr) == 0
    assert sp.Add.make_args(spread) and len(sp.Add.make_args(spread)) == 3
    assert not np.isfinite(_at(expr, [1e120])[0])
    assert _bits(spread, expr, [1e120, 3e150, -2e140]) <= 2.0


def test_a_product_of_two_sums_is_not_multiplied_out():
    """(x - sin(x))*(x + sin(x)) multiplied out is x**2 - sin(x)**2, which cancels near 0
    more than the product does."""
    expr = (x - sp.sin(x)) * (x + sp.sin(x))
    assert _distributed(expr) == expr


@pytest.mark.parametrize(
    "text, truth",
    [
        ("asinh(x) - log(2*x)", lambda t: mpmath.asinh(t) - mpmath.log(2 * t)),
        ("acosh(x) - log(2*x)", lambda t: mpmath.acosh(t) - mpmath.log(2 * t)),
    ],
)
def test_an_inverse_hyperbolic_is_expanded_at_infinity(text, truth):
    """SymPy raises PoleError expanding asinh at oo; through its log it finds 1/(4x**2) - ..."""
    expr = sp.sympify(text, locals={"x": x})  # test-authored text, not a user's spec
    forms = dict(asymptotic_forms(expr, x, (1.0, mpmath.inf)))
    longest = [form for label, form in forms.items() if label.startswith("series +inf<")][-1]
    with mpmath.workdps(50):
        want = float(truth(mpmath.mpf(1e9)))
    closed = _at(expr, [1e9])[0]
    assert abs(closed - want) > 1e-3 * abs(want)  # the closed form has cancelled
    assert _at(longest, [1e9])[0] == pytest.approx(want, rel=1e-14)


def test_a_kink_at_zero_gets_the_series_from_the_left_too():
    """log(cosh(x)) - |x| is -x + x**2/2 - ... for x > 0 and x + x**2/2 - ... for x < 0."""
    expr = sp.log(sp.cosh(x)) - sp.Abs(x)
    forms = dict(series_candidates(expr, x))
    right, left = forms["series x<16>"], forms["series x<16> left"]
    assert _bits(left, expr, [-1e-3, -0.05, -1e-9]) <= 1.0
    assert _bits(right, expr, [1e-3, 0.05, 1e-9]) <= 1.0
    assert _bits(right, expr, [-1e-3]) > 8.0  # each series is wrong on the other side


def test_no_left_series_without_a_kink():
    labels = [label for label, _ in series_candidates(sp.log(sp.cosh(x)) - x, x)]
    assert not any(label.endswith("left") for label in labels)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sign_branches_write_the_sign_out_on_each_side(dtype):
    """tanh(x) - sign(x) is 2*E/(E + 1) for x < 0 and -2*E/(E + 1) for x > 0 (E = exp(-2|x|)):
    no cancellation of tanh against 1 in the tails."""
    expr = sp.tanh(x) - sp.sign(x)
    forms = sign_branch_forms(expr, (x,))
    assert forms
    points = [-80.0, -30.0, -2.0, -1e-3, 1e-3, 0.5, 7.0, 40.0]
    for _, form in forms:
        assert not any(p.has(sp.sign) for p in form.forms)
        assert _bits(form, expr, points, dtype) <= 3.0


def test_log_cosh_minus_abs_keeps_the_promise_at_every_order():
    """Neither mechanism was written for it: before them its value broke the promise near 0
    on the negative side (p99 17 bits in float64), and its f' in the tails (52 bits)."""
    spec = parse_spec_text(
        "name: f\nargs: [x]\nexpr: log(cosh(x)) - abs(x)\norder: 2\n", "specs/f.yaml"
    )
    forms = stabilize(derive(spec))
    for choice in forms.choices:
        for figures in shipped_at_verify(forms.spec, choice):
            assert figures.keeps_promise(), (choice.index, figures)
