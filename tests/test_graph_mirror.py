"""The mirror's "graph" path (judge/graphs.py): sums and products as Grappler regroups them
before a TensorFlow graph runs (`tf.function`, SavedModel, Keras `fit` without XLA).

Each TensorFlow test below checks the model against Grappler itself at inputs where the
regrouping changes the result by a whole category (a normal number against zero), so the
figures hold on any processor: + - * / are correctly rounded everywhere, and TensorFlow's
CPU kernels flush subnormal results to zero everywhere.
"""

from __future__ import annotations

import numpy as np
from conftest_tf import tf

from codegen.judge.graphs import regrouped, regrouped_in_graphs
from codegen.judge.numeric import paths_for, run
from codegen.lower import Program, Step

F32 = np.float32


def _program(*steps: tuple) -> Program:
    return Program(tuple(Step(*s) for s in steps), (steps[-1][0],))


def _full(**values) -> dict[str, np.ndarray]:
    return {k: np.full(8, v, F32) for k, v in values.items()}


# 0.5*s*(x/p)*(x/q), d_smooth_abs's f_eps in float32: the product of the two quotients is
# subnormal, every other product of its factors is normal.
PRODUCT = _program(
    ("a", "mul", ("s", 0.5)),
    ("t1", "div", ("x", "p")),
    ("b", "mul", ("a", "t1")),
    ("t2", "div", ("x", "q")),
    ("out", "mul", ("b", "t2")),
)
PRODUCT_INPUTS = _full(x=1.0859735e-20, s=5.07, p=-0.197, q=0.0985)


def _product_tf(x, s, p, q):
    a = tf.math.multiply(s, 0.5)
    b = tf.math.multiply(a, tf.math.truediv(x, p))
    return tf.math.multiply(b, tf.math.truediv(x, q))


def test_a_product_with_a_constant_is_regrouped_in_pairs():
    """Constants first, then pairs, each queued behind the leaves: 0.5*s*u*v -> (0.5*s)*(u*v)."""
    steps = regrouped(PRODUCT).steps
    products = {s.target: s.operands for s in steps if s.op == "mul"}
    assert products["out_g0"] == (0.5, "s")
    assert products["out_g1"] == ("t1", "t2")
    assert products["out"] == ("out_g0", "out_g1")


def test_the_regrouped_product_underflows_in_the_mirror_and_in_tensorflow():
    eager = run(PRODUCT, PRODUCT_INPUTS, "float32", "eager")[0]
    graph = run(PRODUCT, PRODUCT_INPUTS, "float32", "graph")[0]
    assert eager[0] < -1.5e-38  # a normal float32
    assert graph[0] == 0.0
    inputs = [tf.constant(PRODUCT_INPUTS[k]) for k in "xspq"]
    assert _product_tf(*inputs).numpy()[0] == eager[0]
    assert tf.function(_product_tf)(*inputs).numpy()[0] == 0.0  # Grappler itself


# (x + c) - c: constant folding pushes the constants together, x + (c - c) = x.
SUM = _program(("u", "add", ("x", 1e-20)), ("out", "sub", ("u", 1e-20)))


def _sum_tf(x):
    return tf.math.subtract(tf.math.add(x, 1e-20), 1e-20)


def test_constants_of_a_sum_are_folded_together_in_graphs():
    inputs = _full(x=1e-30)
    assert run(SUM, inputs, "float32", "eager")[0][0] == 0.0  # x is lost in x + 1e-20
    assert run(SUM, inputs, "float32", "graph")[0][0] == F32(1e-30)
    x = tf.constant(inputs["x"])
    assert _sum_tf(x).numpy()[0] == 0.0
    assert tf.function(_sum_tf)(x).numpy()[0] == F32(1e-30)  # Grappler itself


# x / c runs as x * (1/c): at x = 2**-126 * 1.5 and c = 3, x/c is the subnormal 2**-127
# (flushed to 0), and so is x * fl(1/3); at c = 0.75 the quotient is normal, 1/c rounds.
QUOTIENT = _program(("out", "div", ("x", 3.0)))


def test_division_by_a_constant_is_a_product_by_its_reciprocal_in_graphs():
    steps = regrouped(QUOTIENT).steps
    assert [(s.op, s.operands) for s in steps] == [("div", (1.0, 3.0)), ("mul", ("x", "out_r"))]
    x = np.linspace(1.0, 2.0, 4097, dtype=F32)
    by_reciprocal = x * (F32(1.0) / F32(3.0))
    assert not np.array_equal(x / F32(3.0), by_reciprocal)  # the two differ at some x
    np.testing.assert_array_equal(run(QUOTIENT, {"x": x}, "float32", "graph")[0], by_reciprocal)
    graph = tf.function(lambda t: tf.math.truediv(t, 3.0))(tf.constant(x)).numpy()
    np.testing.assert_array_equal(graph, by_reciprocal)  # Grappler itself


def test_a_right_nested_sum_is_summed_left_to_right():
    """a + (b + c) is one AddN over a, b, c: (a + b) + c."""
    program = _program(("u", "add", ("b", "c")), ("out", "add", ("a", "u")))
    inputs = _full(a=1.0, b=1e8, c=-1e8)
    assert run(program, inputs, "float32", "eager")[0][0] == 1.0
    assert run(program, inputs, "float32", "graph")[0][0] == 0.0  # (1 + 1e8) - 1e8


def test_a_step_used_twice_stays_a_leaf():
    program = _program(
        ("u", "mul", ("x", 0.5)), ("v", "mul", ("u", "y")), ("out", "mul", ("v", "u"))
    )
    assert regrouped(program) == program  # u feeds two products: no tree has two steps


def test_only_programs_grappler_regroups_get_the_graph_path():
    left_deep = _program(("u", "add", ("x", "y")), ("out", "add", ("u", "z")))
    assert not regrouped_in_graphs(left_deep)  # ((x + y) + z) is one AddN in the same order
    assert paths_for(left_deep) == ("eager",)
    assert paths_for(PRODUCT) == ("eager", "graph")


# A subnormal constant: TensorFlow on CPU reads it as 0, in comparisons and in arithmetic.
SUBNORMAL = 5.562684646268003e-309  # a regime bound once placed between 0 and a float64 normal
BELOW = _program(("out", "less", ("x", SUBNORMAL)))
SCALED = _program(("out", "mul", ("x", SUBNORMAL)))


def test_a_subnormal_constant_is_zero_in_the_mirror_as_in_tensorflow():
    x = np.array([0.0, 1.0], dtype=np.float64)
    assert run(BELOW, {"x": x}, "float64")[0].tolist() == [False, False]
    assert run(SCALED, {"x": x}, "float64")[0].tolist() == [0.0, 0.0]
    tensor = tf.constant(x)
    assert tf.math.less(tensor, SUBNORMAL).numpy().tolist() == [False, False]
    assert tf.math.multiply(tensor, SUBNORMAL).numpy().tolist() == [0.0, 0.0]


def test_no_regime_bound_is_a_float64_subnormal():
    """A split on y/x, whose values below float64's smallest normal TF flushes to 0, is
    y/x <= 0 there, not a subnormal bound that TF reads as 0 (y*log(1 + x/y) - x once split
    at 5.56e-309, and its value was inf at x = 8.2e250, y = 6.9e-82)."""
    import sympy as sp

    from codegen.stabilize.regimes import _split
    from codegen.stabilize.split_on import coordinate

    x, y = sp.symbols("x y", positive=True)
    values = coordinate(y / x, (x, y))(np.array([[8.2e250, 6.9e-82], [1.0, 5.6e-309]]))
    assert values.tolist() == [0.0, 0.0]
    assert _split(0.0, 5.6e-309) == (0.0, True)
