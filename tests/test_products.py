"""Product rewrites (stabilize/products.py): each an identity, each finite where it must be."""

from __future__ import annotations

import numpy as np
import sympy as sp

from codegen.front.functions import erfcx, sigmoid
from codegen.judge.numeric import run
from codegen.lower import lower
from codegen.stabilize.candidates import erfcx_forms
from codegen.stabilize.products import absorbed_forms, ratio_forms, spread_forms

x, y = sp.symbols("x y", real=True)


def _at(form, values: dict, dtype: str) -> np.ndarray:
    names = sorted(form.free_symbols, key=str)
    program = lower([form], {s: s.name for s in names})
    return run(program, {s.name: np.array(values[s.name], dtype) for s in names}, dtype)[0]


def test_absorbed_log_is_a_sum_over_factors():
    """x**2*exp(-x*y)/(1 + exp(-x*y))**2 at x = 1e30 in float32: log(x**2) overflows,
    2*log|x| does not (logistic loss's f_yy)."""
    expr = x**2 * sp.exp(-x * y) / (1 + sp.exp(-x * y)) ** 2
    ((_, form),) = absorbed_forms(expr)
    assert not form.has(sp.log(x**2)) and form.has(sp.log(sp.Abs(x)))
    got = _at(form, {"x": [1e30], "y": [-6e-29]}, "float32")[0]
    want = float(expr.subs({x: sp.Float(1e30), y: sp.Float(np.float32(-6e-29))}).evalf(30))
    assert np.isfinite(got) and abs(got - want) <= 2.0**-10 * abs(want)


def test_absorbed_constant_is_one_log():
    expr = sp.sqrt(2) * x * sp.exp(-(x**2) / 2) / (2 * sp.sqrt(sp.pi))
    ((_, form),) = absorbed_forms(expr)
    logs = [a for a in form.atoms(sp.log) if a.args[0].is_number]
    assert len(logs) == 1


def test_absorbed_even_power_has_no_sign_to_divide_by():
    """c*exp(u)/x**2 as exp(u - 2*log|x| + log c): no 1/sign(x)**2, which is 1/0 at x = 0
    where the logs of a rewritten form cancel (tanh(log(x))'s f'' is 4 there, not inf)."""
    expr = 4 * sp.exp(-x * y) / x**2
    ((_, form),) = absorbed_forms(expr)
    assert not form.has(sp.sign(x)), form
    got = _at(form, {"x": [-1e-20, 3.0], "y": [1.0, -2.0]}, "float64")
    want = [float(expr.subs({x: a, y: b})) for a, b in ((sp.Float(-1e-20), 1), (3, -2))]
    np.testing.assert_allclose(got, want, rtol=2.0**-40)


def test_absorbed_clipped_factor_takes_no_log_of_zero():
    """max(x, 0)*exp(-x) as sign(max(x, 0))*exp(-x + log|x|): 0 where x < 0, and no log(0),
    which the exact reference cannot evaluate (it answers NaN, so the form was not offered);
    normal at x = 709.7, where exp(-x) alone is subnormal."""
    expr = sp.Max(x, 0) * sp.exp(-x)
    ((_, form),) = absorbed_forms(expr)
    assert not form.has(sp.log(sp.Max(x, 0))), form
    points = (-3.0, 2.0, 709.7)
    got = _at(form, {"x": list(points), "y": [0.0] * 3}, "float64")
    want = [float(expr.subs(x, sp.Float(a)).evalf(30)) for a in points]
    np.testing.assert_allclose(got, want, rtol=2.0**-40)
    assert want[2] > np.finfo(np.float64).tiny and np.exp(-709.7) < np.finfo(np.float64).tiny


def test_spread_of_a_sigmoid_product_keeps_its_value():
    """x**2*sigmoid(u)*sigmoid(-u) as x*(x*(sigmoid(u)*sigmoid(-u))): finite where x**2
    overflows float32 and the product is a normal number."""
    expr = x**2 * sigmoid(x * y) * sigmoid(-x * y)
    (label, form), *_ = spread_forms(expr)
    assert label == "spread powers"
    assert sp.simplify(form.doit() - expr) == 0
    point = {"x": np.float32(3e30), "y": np.float32(-2e-29)}
    got = _at(form, {k: [v] for k, v in point.items()}, "float32")[0]
    want = float(expr.subs({x: sp.Float(float(point["x"])), y: sp.Float(float(point["y"]))}))
    with np.errstate(over="ignore"):
        assert np.isinf(np.float32(3e30) ** 2)  # x**2 alone overflows
    assert np.isfinite(got) and abs(got - want) <= 2.0**-10 * abs(want)


def test_a_paired_power_spread_keeps_a_normal_result():
    """d2/dx2 of x*y/(x + y) is -2*y**2/(x + y)**3. Paired, (y/(x + y))**2 is 1.6e-325 at
    x = 1.5e-108, y = 6e-271 and flushes to 0 before 1/(x + y) = 6.6e107 would bring it
    back to -1.4e-217; spread, each factor y/(x + y) meets 1/(x + y) in turn."""
    expr = -2 * y**2 / (x + y) ** 3
    ((_, paired),) = ratio_forms(expr)
    (label, spread), *_ = spread_forms(paired)
    assert label == "spread powers"
    point = {"x": [1.50866898e-108], "y": [5.96522971e-271]}
    want = float(expr.subs({x: sp.Float(1.50866898e-108), y: sp.Float(5.96522971e-271)}))
    assert _at(paired, point, "float64")[0] == 0.0
    got = _at(spread, point, "float64")[0]
    assert abs(got - want) <= 2.0**-50 * abs(want)


def test_a_form_xla_would_reassociate_gets_one_it_leaves_alone():
    """x/hypot(x, y)'s f_xy holds (y/h)/h**2: XLA's simplifier computes it as y/(h*h**2),
    which overflows to 0 at y = 8e102 though every step is in range. The candidates include
    the same form with its denominators as products of reciprocals, which XLA leaves alone,
    and it is right on the XLA path there."""
    from codegen.judge.numeric import rewritten_under_xla
    from codegen.stabilize.candidates import candidates

    expr = sp.diff(x / sp.sqrt(x**2 + y**2), x, y)
    forms = dict(candidates(expr, (x, y)))
    safe = {k: f for k, f in forms.items() if k.endswith("hypot ratios+reciprocal powers")}
    assert safe
    point = {"x": np.array([-384.0]), "y": np.array([8.14e102])}
    want = float(expr.subs({x: sp.Float(-384.0, 30), y: sp.Float(8.14e102, 30)}).evalf(30))
    for form in safe.values():
        program = lower([form], {x: "x", y: "y"})
        assert not rewritten_under_xla(program)
        got = run(program, point, "float64", "xla")[0][0]
        assert abs(got - want) <= 2.0**-48 * abs(want), (form, got, want)


def _log_sigmoid_candidate_at(expr, value: float, dtype: str) -> list[float]:
    """Values at x = `value` of every log-sigmoid candidate of `expr`."""
    from codegen.stabilize.candidates import candidates

    forms = [f for label, f in candidates(expr, (x,)) if "log-sigmoid" in label]
    return [float(_at(f, {"x": [value]}, dtype)[0]) for f in forms]


def test_log_sigmoid_forms_of_a_written_sigmoid():
    """x*sigmoid(1.702*x)'s f'' at x = 416 in float64 is -9.4e-306, a normal number, while
    sigmoid(-1.702*x) times x underflows first. The expression carries sigmoid itself (no
    exp to rewrite), and its candidates still include the one-exp log-sigmoid form."""
    expr = sp.diff(x * sigmoid(sp.Rational(851, 500) * x), x, 2)
    want = float(expr.subs(x, 416).evalf(40))
    got = _log_sigmoid_candidate_at(expr, 416.0, "float64")
    assert 1e-307 < abs(want) < 1e-304
    assert any(abs(g - want) <= 2.0**-30 * abs(want) for g in got), (got, want)


def test_log_sigmoid_forms_after_rules_bring_sigmoid():
    """x*tanh(x)'s f'' holds sech(x)**2, which a rule writes 4*sigmoid(2x)*sigmoid(-2x):
    subnormal in float32 at x = 45 where the whole, -1.65e-37, is normal. The log-sigmoid
    form of the rule's output is offered too."""
    expr = sp.diff(x * sp.tanh(x), x, 2)
    want = float(expr.subs(x, 45).evalf(40))
    got = _log_sigmoid_candidate_at(expr, 45.0, "float32")
    assert np.finfo(np.float32).tiny < abs(want) < 1e-36
    assert any(abs(g - want) <= 2.0**-14 * abs(want) for g in got), (got, want)


def test_a_constant_absorbed_into_exp_has_its_rounding_compensated():
    """1.7581*exp(x) as exp(fl(x + log c))*(1 + e): a normal float32 number where exp(x)
    alone is subnormal and flushed (x < -87.34), and within 2 ulps of the exact value on
    [-87.9, -60], where exp(fl(x + log c)) alone, uncompensated, is off by up to |x|/2 ulps."""
    c = sp.Float("1.7580993408473768", 30)
    forms = dict(absorbed_forms(c * sp.exp(x)))
    assert list(forms) == ["absorb exp and constants"]
    form = forms["absorb exp and constants"]
    points = np.linspace(-87.9, -60.0, 2000).astype(np.float32)
    exact = np.array([float(c * sp.exp(sp.Float(float(v), 30))) for v in points])
    ulps = np.spacing(exact.astype(np.float32)).astype(np.float64)
    got = _at(form, {"x": points}, "float32").astype(np.float64)
    assert np.all(np.abs(got - exact) <= 2 * ulps)
    uncompensated = _at(sp.exp(x + sp.log(c)), {"x": points}, "float32").astype(np.float64)
    assert np.max(np.abs(uncompensated - exact) / ulps) > 8  # what the compensation gives back


def test_erfc_as_erfcx_keeps_a_tail_product_normal():
    """x*erfc(-x/sqrt(2))/2 (gelu) at x = -13.1 in float32 is -2.2e-38, a normal number,
    while erfc(9.26) alone is subnormal and flushed. Written through erfcx with the product
    absorbed into one exp it stays within the promise (8 bits) of the exact value."""
    expr = x * sp.erfc(-x / sp.sqrt(2), evaluate=False) / 2  # SymPy would write 2 - erfc(..)
    forms = dict(erfcx_forms(expr))
    assert forms and all(f.has(erfcx) and not f.has(sp.erfc) for f in forms.values())
    points = np.linspace(-13.146, -13.004, 50).astype(np.float32)
    exact = np.array([float(expr.subs(x, sp.Float(float(v), 30)).evalf(30)) for v in points])
    ulps = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.all(_at(expr, {"x": points}, "float32") == 0)  # flushed
    for form in forms.values():
        got = _at(form, {"x": points}, "float32").astype(np.float64)
        assert np.all(np.abs(got - exact) <= 2.0**8 * ulps)
