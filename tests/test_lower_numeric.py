"""Lowering to a straight-line program, and its NumPy interpreter.

The interpreter's results are judged against the exact reference (accuracy.reference), not
against NumPy's own exp, log, ...: those round differently on different processors (SIMD
loops), so only a tolerance derived from the promise (accuracy.P99_LIMIT bits per point)
holds on every machine.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import sigmoid, softplus
from codegen.judge import accuracy
from codegen.judge.graphs import regrouped
from codegen.judge.mirror_ops import PICKS, all_flushed, apply_op, operand_value
from codegen.judge.numeric import PATHS, run, run_paths
from codegen.lower import Program, Regimes, Step, lower, lower_each, op_count

x, y = sp.symbols("x y", real=True)
ENV = {x: "x", y: "y"}
XS = np.array([-3.5, -1.25, -0.375, 0.0, 0.3125, 0.75, 2.5, 6.0])
YS = np.array([1.5, -0.5, 2.0, 0.25, -3.0, 0.125, 4.0, -1.0])


def _ops(program, op):
    return [step for step in program.steps if step.op == op]


def test_common_subexpressions_are_lowered_once():
    program = lower([sigmoid(x) * sigmoid(-x) + sigmoid(x)], ENV)
    sigmoids = _ops(program, "sigmoid")
    assert [s.operands for s in sigmoids].count(("x",)) == 1
    assert len(sigmoids) == 2  # sigmoid(x) and sigmoid(-x)
    assert len(_ops(program, "neg")) == 1
    targets = [step.target for step in program.steps]
    assert len(targets) == len(set(targets))


def test_subexpressions_shared_across_outputs():
    program = lower([sp.exp(x) + 1, sp.exp(x) * y, sp.exp(x)], ENV)
    assert len(_ops(program, "exp")) == 1
    assert len(program.outputs) == 3
    (exp_step,) = _ops(program, "exp")
    assert program.outputs[2] == exp_step.target


def test_lower_each_shares_between_environments_only_where_equal():
    program = lower_each([(sp.exp(x), {x: "a"}), (sp.exp(x), {x: "b"}), (sp.exp(x), {x: "a"})])
    assert [s.operands for s in _ops(program, "exp")] == [("a",), ("b",)]
    assert program.outputs[0] == program.outputs[2] != program.outputs[1]


def test_steps_only_read_earlier_values():
    program = lower([sp.log(1 + sp.exp(x)) / (1 + x**2) - sp.sqrt(sp.Abs(y)) * sp.tanh(x * y)], ENV)
    known = {"x", "y"}
    for step in program.steps:
        assert all(isinstance(o, float) or o in known for o in step.operands), step
        known.add(step.target)


def test_op_count_counts_steps():
    assert op_count(x) == 0
    assert op_count(sp.exp(x)) == 1
    assert op_count(sigmoid(x) * sigmoid(-x)) == 4  # sigmoid, neg, sigmoid, mul


SIMPLE_FORMS = [
    (x + y, lambda a, b: a + b),
    (x - y, lambda a, b: a - b),
    (3 * x * y, lambda a, b: 3.0 * a * b),
    (x / y, lambda a, b: a / b),
    (-x / (2 * y), lambda a, b: -a / (2.0 * b)),
    (x**2 + 3 * x - 1, lambda a, b: a * a + 3.0 * a - 1.0),
    (x**3 * y**4, lambda a, b: a**3 * b**4),
    (x**-2, lambda a, b: 1.0 / (a * a)),
    (sp.sqrt(x**2 + y**2), lambda a, b: np.sqrt(a * a + b * b)),
    (1 / sp.sqrt(1 + x**2), lambda a, b: 1.0 / np.sqrt(1.0 + a * a)),
    (sp.exp(x) * sp.sin(y), lambda a, b: np.exp(a) * np.sin(b)),
    (sp.log(1 + x**2), lambda a, b: np.log(1.0 + a * a)),
    (sp.cos(x) - sp.tanh(y), lambda a, b: np.cos(a) - np.tanh(b)),
    (sp.atan(x) + sp.asinh(y), lambda a, b: np.arctan(a) + np.arcsinh(b)),
    (log1p(x**2) + expm1(y), lambda a, b: np.log1p(a * a) + np.expm1(b)),
    (sp.Abs(x - y), lambda a, b: np.abs(a - b)),
    (sp.Max(x, y) + sp.Min(x, 0), lambda a, b: np.maximum(a, b) + np.minimum(a, 0.0)),
    (
        sp.erf(x) + sp.erfc(y),
        lambda a, b: np.array([math.erf(v) + math.erfc(w) for v, w in zip(a, b, strict=True)]),
    ),
    (sigmoid(x), lambda a, b: 1.0 / (1.0 + np.exp(-a))),
    (softplus(y), lambda a, b: np.log1p(np.exp(b))),
    (x**1.5, lambda a, b: np.abs(a) ** 1.5),
]


@pytest.mark.parametrize(("form", "numpy_fn"), SIMPLE_FORMS, ids=[str(f) for f, _ in SIMPLE_FORMS])
def test_numeric_matches_the_exact_value_float64(form, numpy_fn):
    """Each form, evaluated op by op, within the promise's per-point limit of its exact value.

    These points are well conditioned for every form, so a few ulps per op stay far inside
    it, while a wrong op (or operand) is off by far more. Where the form has no finite value
    (x**-2 at 0) the reference scores nothing; there IEEE arithmetic decides, as in `numpy_fn`.
    """
    a, b = (np.abs(XS) if form == x**1.5 else XS), YS
    program = lower([form], ENV)
    (out,) = run(program, {"x": a, "y": b}, "float64")
    assert out.dtype == np.float64
    exact = accuracy.reference(form, (x, y), np.stack([a, b], axis=1), "float64")
    scored = ~np.isnan(exact)
    bits = accuracy.bits_error(out[scored], exact[scored], "float64")
    assert (bits <= accuracy.P99_LIMIT).all(), (bits, out[scored], exact[scored])
    with np.errstate(all="ignore"):
        expected = numpy_fn(a, b)
    np.testing.assert_array_equal(out[~scored], expected[~scored])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_dtype_is_kept(dtype):
    program = lower([sp.exp(x) * y + 0.1, sigmoid(x), sp.S(2)], ENV)
    outs = run(program, {"x": XS.astype(np.float64), "y": YS.astype(np.float64)}, dtype)
    assert [o.dtype for o in outs] == [np.dtype(dtype)] * 3
    assert [o.shape for o in outs] == [XS.shape] * 3


def test_float32_is_computed_in_float32():
    """exp(100) overflows in float32: the interpreter must not compute in float64 and cast."""
    program = lower([sp.exp(x) / (1 + sp.exp(x))], ENV)
    (out32,) = run(program, {"x": np.array([100.0])}, "float32")
    (out64,) = run(program, {"x": np.array([100.0])}, "float64")
    assert np.isnan(out32[0])
    assert out64[0] == 1.0


def test_constant_output_broadcasts_to_the_inputs():
    program = lower([sp.S(1) / 2], ENV)
    (out,) = run(program, {"x": XS}, "float64")
    assert out.shape == XS.shape and (out == 0.5).all()


def test_inputs_broadcast():
    program = lower([x * y], ENV)
    (out,) = run(program, {"x": XS[:, None], "y": YS[None, :3]}, "float64")
    assert out.shape == (len(XS), 3)
    np.testing.assert_array_equal(out, XS[:, None] * YS[None, :3])


def test_regimes_evaluate_each_piece_on_its_interval():
    form = Regimes(x, (0.0,), (sp.sqrt(-x), sp.log(x)))
    program = lower([form], ENV)
    for dtype in ("float32", "float64"):
        (out,) = run(program, {"x": np.array([-4.0, 0.25])}, dtype)
        assert not np.isnan(out).any()
        np.testing.assert_allclose(out, [2.0, math.log(0.25)], rtol=1e-6)


def test_regimes_bound_belongs_to_the_upper_piece():
    form = Regimes(x, (-1.0, 1.0), (sp.S(-7), x**2, sp.S(7)))
    program = lower([form], ENV)
    (out,) = run(program, {"x": np.array([-5.0, -1.0, 0.5, 1.0, 5.0])}, "float64")
    np.testing.assert_array_equal(out, [-7.0, 1.0, 0.25, 7.0, 7.0])


def test_constant_pieces_cost_no_op_and_nan_falls_to_a_form():
    """Constants are scalars in the selects; NaN reaches the last non-constant piece."""
    form = Regimes(x, (-1.0, 1.0), (sp.S(-7), x**2, sp.S(7)))
    program = lower([form], ENV)
    assert [s.op for s in program.steps] == [
        "clip",
        "square",
        "where_greater_equal",
        "where_less",
    ]
    (out,) = run(program, {"x": np.array([math.nan, -math.inf, math.inf])}, "float64")
    assert np.isnan(out[0])
    np.testing.assert_array_equal(out[1:], [-7.0, 7.0])


def test_all_constant_pieces_keep_nan():
    form = Regimes(x, (0.0,), (sp.S(-1), sp.S(1)))
    (out,) = run(lower([form], ENV), {"x": np.array([math.nan, -2.0, 2.0])}, "float32")
    assert np.isnan(out[0])
    np.testing.assert_array_equal(out[1:], [-1.0, 1.0])


def test_regimes_never_see_points_outside_their_piece():
    """A branch not taken is fed its clipped input: 1/x near 0 and exp(x) for huge x never
    produce inf or NaN that a select (or its gradient) could leak."""
    form = Regimes(x, (-1.0, 1.0), (1 / x, sp.sin(x) / (1 + x**2), sp.exp(-x) * x))
    program = lower([form], ENV)
    clips = _ops(program, "clip")
    assert [(c.operands[1], c.operands[2]) for c in clips] == [
        (-math.inf, -1.0),
        (-1.0, 1.0),
        (1.0, math.inf),
    ]
    xs = np.array([-1e300, -2.0, -1.0, 0.0, 1e-300, 0.5, 1.0, 3.0, 800.0])
    (out,) = run(program, {"x": xs}, "float64")
    assert np.isfinite(out).all()
    # evaluate every intermediate value: none is NaN or infinite
    values = {"x": xs}
    for step in program.steps:
        args = [operand_value(o, values, np.dtype("float64")) for o in step.operands]
        with np.errstate(all="ignore"):
            values[step.target] = apply_op(step.op, args, np.dtype("float64"))
        if not step.op.startswith("where_"):
            assert np.isfinite(values[step.target]).all(), step


def test_regimes_share_subexpressions_with_other_outputs():
    form = Regimes(x, (0.0,), (sp.exp(x), sp.exp(-x)))
    program = lower([form, sp.exp(x)], ENV)
    # exp(x) in the first piece reads the clipped input, so it is not the same value
    exps = _ops(program, "exp")
    assert len(exps) == 3
    (out, plain) = run(program, {"x": np.array([-2.0, 2.0])}, "float64")
    np.testing.assert_allclose(out, [math.exp(-2.0), math.exp(-2.0)])
    np.testing.assert_allclose(plain, [math.exp(-2.0), math.exp(2.0)])


def _step_by_step(program, inputs: dict, dtype: str) -> list[np.ndarray]:
    """The program interpreted one step at a time, each op through `apply_op`: what the
    straight-line runner (`numeric._straight`) must reproduce bit for bit."""
    np_dtype = np.dtype(dtype)
    values = {k: np.asarray(v, dtype=np_dtype) for k, v in inputs.items()}
    made = set()
    with np.errstate(all="ignore"):
        for step in program.steps:
            args = [operand_value(o, values, np_dtype) for o in step.operands]
            picked = step.op in PICKS and all_flushed(step.operands, made, np_dtype)
            values[step.target] = apply_op(step.op, args, np_dtype, flush=not picked)
            made.add(step.target)
    return [np.broadcast_to(operand_value(o, values, np_dtype), XS.shape) for o in program.outputs]


# Forms with pieces, masks, constants (0.0 and -0.0 among them), picks and transcendentals.
STRAIGHT_FORMS = [
    sp.Piecewise((log1p(sp.exp(x)), x < 20), (x, True)) * y - sp.Float(-0.0) * x,
    sp.Max(x, y) - sp.Min(x, 0) + sp.Abs(y) * x,
    sigmoid(x - y) * softplus(-x) / (1 + x**2) + expm1(y / 3),
    sp.sqrt(x**2 + y**2) - x + sp.Float(1e-310) * y,
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("form", STRAIGHT_FORMS, ids=range(len(STRAIGHT_FORMS)))
def test_the_straight_line_runner_matches_the_step_by_step_interpreter(form, dtype):
    """Every path's outputs, run together (eager mode's steps reused) and alone, are the
    step-by-step interpreter's to the bit (the graph path: of the regrouped program)."""
    program = lower([form, form * y - x / 7], ENV)
    inputs = {"x": XS * 1e-36, "y": YS} if dtype == "float32" else {"x": XS * 1e-306, "y": YS}
    for scale in (1.0, None):
        columns = inputs if scale is None else {"x": XS, "y": YS}
        together = run_paths(program, columns, dtype, PATHS)
        for path, outputs in zip(PATHS, together, strict=True):
            alone = run(program, columns, dtype, path)
            for a, b in zip(outputs, alone, strict=True):
                assert a.tobytes() == b.tobytes()
        for path, steps_of in (("eager", program), ("graph", regrouped(program))):
            expected = _step_by_step(steps_of, columns, dtype)
            got = run(program, columns, dtype, path)
            assert [a.tobytes() for a in got] == [b.tobytes() for b in expected]


def test_the_straight_line_runner_keeps_the_regrouped_root_of_its_own():
    """0.5*s*(x/p)*(x/q) in float32, regrouped (0.5*s)*((x/p)*(x/q)) in graphs: the product
    of the quotients is subnormal there, so the graph's root is 0 where eager mode's is a
    normal number. The root keeps its name in both programs; eager mode's value must not
    be reused for it."""
    steps = [
        ("a", "mul", ("s", 0.5)),
        ("t1", "div", ("x", "p")),
        ("b", "mul", ("a", "t1")),
        ("t2", "div", ("x", "q")),
        ("out", "mul", ("b", "t2")),
    ]
    program = Program(tuple(Step(*s) for s in steps), ("out",))
    inputs = {
        k: np.full(8, v, np.float32)
        for k, v in dict(x=1.0859735e-20, s=5.07, p=-0.197, q=0.0985).items()
    }
    eager, xla, graph = (outs[0] for outs in run_paths(program, inputs, "float32", PATHS))
    assert eager[0] < -1.5e-38 and graph[0] == 0.0  # a normal float32, and zero
    assert graph.tobytes() == _step_by_step(regrouped(program), inputs, "float32")[0].tobytes()
