"""The mirror's XLA path: XLA's algebraic simplifier reassociates divisions before it
compiles, and the stabilizer must measure forms the way XLA will run them.

`(a/b)/c` becomes `a/(b*c)` and `a/(b/c)` becomes `(a*c)/b`: each step of the program stays
in range while the rewritten product overflows. hypot's f_xx written as ((y/h)/sqrt(h))**2
returned 0 under XLA for h near 1e27 (float32) until the stabilizer measured this path.
The TensorFlow tests check the model against XLA itself.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from conftest_tf import tf

from codegen.judge.numeric import PATHS, run
from codegen.lower import lower

A, B, C = sp.symbols("a b c", real=True)
NAMES = {A: "a", B: "b", C: "c"}
# float32 inputs where the quotients stay in range and the products do not
INPUTS = {
    "a": np.array([1e30], np.float32),
    "b": np.array([1e20], np.float32),
    "c": np.array([1e20], np.float32),
}
# (a/b)/c as a form can hold it: SymPy would flatten it into a/(b*c)
NESTED = sp.Mul(sp.Mul(A, sp.Pow(B, -1), evaluate=False), sp.Pow(C, -1), evaluate=False)


def test_paths_are_eager_and_xla():
    assert PATHS == ("eager", "xla", "graph")


def test_a_quotient_divided_again_overflows_only_under_xla():
    program = lower([NESTED], NAMES)
    assert [s.op for s in program.steps] == ["div", "div"]
    eager = run(program, INPUTS, "float32", "eager")[0]
    xla = run(program, INPUTS, "float32", "xla")[0]
    np.testing.assert_allclose(eager, [1e-10], rtol=1e-6)
    assert xla[0] == 0.0  # 1e30 / (1e20 * 1e20 = inf)


def test_xla_itself_reassociates_the_division():
    """The model's source: XLA's simplifier on this machine's TensorFlow."""
    a, b, c = (tf.constant(INPUTS[k]) for k in "abc")

    def nested(a, b, c):
        return (a / b) / c

    eager = nested(a, b, c).numpy()
    xla = tf.function(nested, jit_compile=True)(a, b, c).numpy()
    np.testing.assert_allclose(eager, [1e-10], rtol=1e-6)
    assert xla[0] == 0.0


def test_programs_without_nested_division_run_the_same_on_both_paths():
    program = lower([sp.sqrt(A) * B / C + sp.exp(-A * 1e-30)], NAMES)
    eager = run(program, INPUTS, "float32", "eager")[0]
    xla = run(program, INPUTS, "float32", "xla")[0]
    np.testing.assert_array_equal(eager, xla)


def test_a_reciprocal_square_root_factor_is_multiplied_not_divided_by():
    """`(a/b)/sqrt(c)` would be a nested division that XLA reassociates into a/(b*sqrt(c));
    lowered as a multiply by 1/sqrt(c) no division divides a quotient, on every path."""
    form = sp.Mul(sp.UnevaluatedExpr(A / B), sp.Pow(C, -sp.S.Half), evaluate=False)
    program = lower([form], NAMES)
    made_by = {s.target: s.op for s in program.steps}
    divisions = [s for s in program.steps if s.op == "div"]
    assert not [s for s in divisions if any(made_by.get(o) == "div" for o in s.operands)]
    assert program.steps[-1].op == "mul"
    inputs = {"a": np.array([1e30], np.float32), "b": np.array([1e-5], np.float32)}
    inputs["c"] = np.array([1e30], np.float32)  # b*sqrt(c) = 1e10 but (a/b) = 1e35 is finite
    for path in PATHS:
        np.testing.assert_allclose(run(program, inputs, "float32", path)[0], [1e20], rtol=1e-6)


# a / exp(b) and a / pow(b, 1.5) are normal float32 numbers; exp(-b) and pow(b, -1.5) are not.
RECIPROCAL_CASES = {
    "exp": (sp.exp(B), 1e10, 88.5),
    "pow": (B ** sp.Rational(3, 2), 1e10, 2e25),
}


@pytest.mark.parametrize("name", sorted(RECIPROCAL_CASES))
def test_a_division_by_exp_or_pow_becomes_a_product_under_xla(name):
    den, a_value, b_value = RECIPROCAL_CASES[name]
    program = lower([sp.Mul(A, sp.Pow(den, -1, evaluate=False), evaluate=False)], NAMES)
    inputs = {"a": np.full(8, a_value, np.float32), "b": np.full(8, b_value, np.float32)}
    inputs["c"] = np.ones(8, np.float32)
    eager = run(program, inputs, "float32", "eager")[0]
    mirror = run(program, inputs, "float32", "xla")[0]
    exact = a_value / float(sp.N(den.subs(B, b_value), 30))
    np.testing.assert_allclose(eager, exact, rtol=1e-6)
    assert mirror[0] == 0.0

    def quotient(a, b):
        return a / (tf.math.exp(b) if name == "exp" else tf.math.pow(b, 1.5))

    a, b = tf.constant(inputs["a"]), tf.constant(inputs["b"])
    assert tf.function(quotient, jit_compile=True)(a, b).numpy()[0] == 0.0  # XLA itself
    np.testing.assert_allclose(quotient(a, b).numpy(), exact, rtol=1e-6)


D = sp.Symbol("d", real=True)
CHAIN_NAMES = {**NAMES, D: "d"}


def _quotient(num, den):
    return sp.Mul(num, sp.Pow(den, -1, evaluate=False), evaluate=False)


# Each case: a form whose divisions divide quotients, float32 inputs where every step stays
# in range, the exact value, and the tf function XLA compiles. XLA merges divisions to a
# fixed point: (a/b)/(c/d) -> (a*d)/(b*c), and ((a/b)/c)/d -> (a/(b*c))/d -> a/((b*c)*d).
NESTED_CASES = {
    "quotient of quotients": (
        _quotient(_quotient(A, B), _quotient(C, B)),  # (x/m)/(y/m), scaled args
        {"a": 1e30, "b": 1e20, "c": 1e10},
        1e20,
        lambda a, b, c, d: (a / b) / (c / b),
    ),
    "quotient divided twice": (
        _quotient(_quotient(_quotient(A, B), C), D),
        {"a": 1e30, "b": 1e20, "c": 1e10, "d": 1e10},
        1e-10,
        lambda a, b, c, d: ((a / b) / c) / d,
    ),
}


@pytest.mark.parametrize("name", sorted(NESTED_CASES))
def test_divisions_merge_to_a_fixed_point_under_xla(name):
    form, values, exact, tf_form = NESTED_CASES[name]
    program = lower([form], CHAIN_NAMES)
    inputs = {k: np.full(8, values.get(k, 1.0), np.float32) for k in "abcd"}
    eager = run(program, inputs, "float32", "eager")[0]
    np.testing.assert_allclose(eager, exact, rtol=1e-6)
    merged = run(program, inputs, "float32", "xla")[0]
    assert merged[0] in (0.0, np.inf)  # a product of the merged division left the range
    args = [tf.constant(inputs[k]) for k in "abcd"]
    np.testing.assert_allclose(tf_form(*args).numpy(), exact, rtol=1e-6)
    xla = tf.function(tf_form, jit_compile=True)(*args).numpy()
    assert xla[0] == merged[0]  # XLA itself, on this machine's TensorFlow


# (1.0*(a/b))/c and -(a/b)/c, in the steps lowering emits for them (a unit factor is what a
# series written x**-2*(p*x**-2) lowers to); TensorFlow functions computing the same steps
UNIT = sp.Mul(sp.Float(1.0), sp.Mul(A, sp.Pow(B, -1), evaluate=False), evaluate=False)
NEGATED = sp.Mul(-1, sp.UnevaluatedExpr(sp.Mul(A, sp.Pow(B, -1), evaluate=False)), evaluate=False)
FACTORED_CASES = {  # form, TensorFlow's steps, eager value, XLA's value
    "a quotient times 1 is merged": (
        sp.Mul(UNIT, sp.Pow(C, -1), evaluate=False),
        lambda a, b, c: tf.math.truediv(tf.math.multiply(1.0, tf.math.truediv(a, b)), c),
        1e-10,
        0.0,  # 1e30 / (1e20 * 1e20 = inf)
    ),
    "a negated quotient is not": (
        sp.Mul(NEGATED, sp.Pow(C, -1), evaluate=False),
        lambda a, b, c: tf.math.truediv(tf.math.negative(tf.math.truediv(a, b)), c),
        -1e-10,
        -1e-10,
    ),
}


@pytest.mark.parametrize("name", sorted(FACTORED_CASES))
def test_a_unit_factor_does_not_hide_a_quotient_from_xla(name):
    """XLA's simplifier drops 1*q before it merges divisions, and does not see through
    -(q): the mirror agrees with XLA itself on both, at inputs where a/(b*c) overflows."""
    form, tf_form, eager, xla = FACTORED_CASES[name]
    program = lower([form], NAMES)
    ops = {step.op for step in program.steps}
    assert ("mul" if "times 1" in name else "neg") in ops  # the steps this case is about
    assert run(program, INPUTS, "float32", "eager")[0][0] == pytest.approx(eager, rel=1e-6)
    assert run(program, INPUTS, "float32", "xla")[0][0] == pytest.approx(xla, rel=1e-6)
    args = [tf.constant(INPUTS[k]) for k in "abc"]
    assert tf_form(*args).numpy()[0] == pytest.approx(eager, rel=1e-6)
    compiled = tf.function(tf_form, jit_compile=True)(*args).numpy()[0]
    assert compiled == pytest.approx(xla, rel=1e-6)  # XLA itself, on this machine


X = sp.Symbol("x", real=True)
SINH_POINTS = np.concatenate([[0.25, 2.0, 30.0], np.linspace(600.0, 700.0, 41)])


def _ulps_off(values: np.ndarray, exact, points) -> np.ndarray:
    want = np.array([float(exact.subs(X, sp.Float(p, 40)).evalf(40)) for p in points])
    return np.abs(values - want) / np.spacing(np.abs(want))


@pytest.mark.parametrize("func", [sp.sinh, sp.cosh])
def test_xla_expands_sinh_and_cosh_with_a_rounded_exponent(func):
    """XLA computes sinh(x) and cosh(x) as exp(x + log(1/2)) -+ exp(-x + log(1/2)): rounding
    x + log(1/2) costs up to |x|/2 ulps (up to 350 at x = 700 in float64), where
    TensorFlow's own kernel (eager mode) is within an ulp."""
    program = lower([func(X)], {X: "x"})
    assert [s.op for s in program.steps] == [func.__name__]
    eager = _ulps_off(run(program, {"x": SINH_POINTS}, "float64", "eager")[0], func(X), SINH_POINTS)
    xla = _ulps_off(run(program, {"x": SINH_POINTS}, "float64", "xla")[0], func(X), SINH_POINTS)
    assert (eager <= 1).all(), eager
    assert xla[3:].max() > 64, xla  # the exponent's rounding, up to half an ulp of 600..700


@pytest.mark.parametrize("func", [tf.math.sinh, tf.math.cosh])
def test_the_mirror_is_no_kinder_to_sinh_than_xla_itself(func):
    """The model's source, on this machine's TensorFlow: the mirror's XLA path is at least as
    far off as XLA (within 2 ulps), so a form it passes XLA passes too (a newer XLA that
    computes sinh better still passes this)."""
    expr = getattr(sp, func.__name__)(X)
    program = lower([expr], {X: "x"})
    mirror = _ulps_off(run(program, {"x": SINH_POINTS}, "float64", "xla")[0], expr, SINH_POINTS)
    compiled = tf.function(func, jit_compile=True)(tf.constant(SINH_POINTS)).numpy()
    xla = _ulps_off(compiled, expr, SINH_POINTS)
    assert (mirror >= xla - 2).all(), (mirror, xla)


TINY32 = np.finfo(np.float32).tiny
ASIN_POINTS = np.array([TINY32, 1.5 * TINY32, -TINY32, 2 * TINY32, 1e-30, 0.5], np.float32)


def test_xla_flushes_asin_of_the_smallest_normals():
    """XLA computes asin(x) as 2*atan2(x, 1 + sqrt(1 - x*x)): the atan2, about x/2, is
    subnormal and flushed below 2 * tiny, so asin(tiny) is 0 there, not tiny; asin(x)/x then
    returned 0 under XLA at x = tiny until the mirror modelled it. Eager mode keeps it."""
    program = lower([sp.asin(X)], {X: "x"})
    eager = run(program, {"x": ASIN_POINTS}, "float32", "eager")[0]
    xla = run(program, {"x": ASIN_POINTS}, "float32", "xla")[0]
    assert (eager[:3] != 0).all(), eager
    assert (xla[:3] == 0).all(), xla
    np.testing.assert_array_equal(xla[3:], eager[3:])


def test_the_mirror_is_no_kinder_to_asin_than_xla_itself():
    """On this machine's TensorFlow: wherever XLA's asin is 0 and the exact value is not, so
    is the mirror's (a newer XLA that keeps asin(tiny) still passes)."""
    program = lower([sp.asin(X)], {X: "x"})
    mirror = run(program, {"x": ASIN_POINTS}, "float32", "xla")[0]
    compiled = tf.function(tf.math.asin, jit_compile=True)(tf.constant(ASIN_POINTS)).numpy()
    assert (mirror[compiled == 0] == 0).all(), (mirror, compiled)
