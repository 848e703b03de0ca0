"""Property tests of the whole pipeline: random valid expressions build, lint, import and run.

Hypothesis strategies write expressions of the grammar (numbers, pi, E, + - * /, small integer
powers, unary minus, the grammar's functions) nested at most three levels, at order 1 or 2.
Each is built with `codegen.pipeline.build` in process; only DeriveError is tolerated, and only
when it names the order. The text must compile, pass `ruff check`, import as a fresh module
from its own file and return the input's dtype for float32 and float64 tensors, for the value
and the first derivative.

Every build runs under a CPU-time limit (SIGPROF): a build that runs away fails the test
instead of hanging the suite. Examples are derandomized, so CI sees the same ones.

Two grammars, because of known bugs (each pinned by a strict xfail at the end of this file):
- over [x, y], the whole grammar with calls nested in calls: with two args the stabilizer
  skips Taylor-series candidates, so builds are quick;
- over [x], calls of the arg scaled or raised (`sin(3*x)`, `erf(x**2)`), not nested, and no
  `sigmoid`/`softplus`: today `taylor.series_forms` runs `sympy.series(expr, x, 0, 16)`
  without a bound, and `sigmoid(x)`, `softplus(-x)`, `erf(x + 2)` or `exp(exp(x))` take
  minutes to build.
Both leave out the bug classes that end in an internal error today: softplus of a constant
and |u| (`sqrt(u**2)` is `Abs(u)` for real u, whose derivatives bring DiracDelta/Piecewise),
and, over [x], calls of negative powers (`sin(1/x)`: AccumulationBounds at 0), which the
one-arg grammar does not write.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sympy as sp
import yaml
from hypothesis import HealthCheck, Phase, assume, example, given, settings
from hypothesis import strategies as st

from codegen.derive import DeriveError
from codegen.front.functions import softplus
from codegen.front.spec import SpecError, parse_spec_text
from codegen.pipeline import build

REPO = Path(__file__).resolve().parents[1]
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
NAME = "prop_op"
# Both limits catch a runaway (softsign's build once ran 300 s), not a slow or loaded processor:
# about twice the worst CPU time seen. Most builds here take 0.1-4 s. Two-arg ones whose series
# run into their bounds take far longer: exp(y - x)*softplus(y) at order 1 took 51 s of CPU on
# an idle core here (39 s once two-arg series got a smaller bound) and passed 60 s on CI, which
# the former 60 s limit failed. erf(x + 2) at order 2 (the known slow cases below) spends most of
# its build's series budget: 16 s here beside two other test runs, 49 to 58 s beside four on
# this 2-core machine (CPU time grows under load), which the former 40 s failed.
BUILD_LIMIT_S = 120
SLOW_LIMIT_S = 120

ALL_FUNCTIONS = ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "softplus", "log1p")
ALL_FUNCTIONS += ("expm1", "erf", "atan")
QUICK_FUNCTIONS = tuple(f for f in ALL_FUNCTIONS if f not in ("sigmoid", "softplus"))
NUMBERS = ("2", "3", "0.5", "1.5", "pi", "1", "E")
OPS = ("+", "-", "*", "/")
POWERS = ("2", "3", "-1", "-2")
SCALED = ("x", "2*x", "x/2", "3*x", "x**2", "x**3", "-x")


def _join(parts: tuple[str, str, str]) -> str:
    return f"({parts[0]} {parts[1]} {parts[2]})"


def nested(names: tuple[str, ...], depth: int = 3) -> st.SearchStrategy[str]:
    """The whole grammar over `names`, `depth` levels of calls, + - * / and powers over leaves.

    Leaves are args, numbers and negated args; below the top, a level may also be a leaf.
    """
    leaf = st.one_of(
        st.sampled_from(names), st.sampled_from(NUMBERS), st.sampled_from(names).map("-{}".format)
    )
    if depth == 0:
        return leaf
    inner = nested(names, depth - 1)
    shapes = [
        st.tuples(st.sampled_from(ALL_FUNCTIONS), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, st.sampled_from(OPS), inner).map(_join),
        st.tuples(inner, st.sampled_from(POWERS)).map(lambda t: f"({t[0]})**{t[1]}"),
    ]
    return st.one_of(*shapes) if depth == 3 else st.one_of(*shapes, leaf)


def one_arg() -> st.SearchStrategy[str]:
    """Over [x]: term, term op term or -term; a term is f(scaled x) or x op number or x**k."""
    number = st.sampled_from(NUMBERS)
    call = st.tuples(st.sampled_from(QUICK_FUNCTIONS), st.sampled_from(SCALED)).map(
        lambda t: f"{t[0]}({t[1]})"
    )
    term = st.one_of(
        call,
        st.tuples(st.just("x"), st.sampled_from(OPS), number).map(_join),
        st.tuples(number, st.sampled_from(OPS), st.just("x")).map(_join),
        st.sampled_from(POWERS).map(lambda k: f"x**{k}"),
    )
    return st.one_of(
        st.tuples(term, st.sampled_from(OPS), term).map(_join),
        term,
        term.map(lambda e: f"-{e}"),
    )


CASES = st.one_of(
    st.tuples(st.just(("x", "y")), nested(("x", "y"))),
    st.tuples(st.just(("x",)), one_arg()),
)
ORDERS = st.sampled_from([1, 2])


def spec_text(args: tuple[str, ...], expr: str, order: int) -> str:
    return yaml.safe_dump(
        {"name": NAME, "args": list(args), "expr": expr, "order": order}, sort_keys=False
    )


class BuildTooSlow(BaseException):  # not Exception: SymPy's `except Exception` would eat it
    """Raised by SIGPROF inside a build that ran past its limit."""


@contextlib.contextmanager
def time_limit(seconds: int, what: str):
    def alarm(signum, frame):
        raise BuildTooSlow(f"{what}: no result after {seconds} s")

    previous = signal.signal(signal.SIGPROF, alarm)
    # CPU time: the limit holds however loaded the machine is (hogen's own bounds count work).
    # Then again every second: a signal handled inside a __del__ or a GC callback has its
    # exception printed and dropped, and a single alarm would leave the build running.
    signal.setitimer(signal.ITIMER_PROF, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@pytest.fixture(scope="module", autouse=True)
def private_reference_cache(tmp_path_factory):
    """Random expressions must not fill the repository's .hogen-cache (nor the working folder's)."""
    old = os.environ.get("HOGEN_CACHE")
    os.environ["HOGEN_CACHE"] = str(tmp_path_factory.mktemp("hogen-cache"))
    yield
    if old is None:
        os.environ.pop("HOGEN_CACHE", None)
    else:
        os.environ["HOGEN_CACHE"] = old


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("prop-modules")


def parse(args: tuple[str, ...], expr: str, order: int):
    """The Spec of a generated expression; one that folds to a non-finite constant is skipped."""
    try:
        return parse_spec_text(spec_text(args, expr, order), "prop.yaml")
    except SpecError as error:
        assume("expected a finite real expression" not in str(error))  # e.g. 1/(x - x)
        raise AssertionError(f"{expr!r} was refused: {error}") from None


def has_known_bug(spec) -> bool:
    """An expression of a bug class pinned below by a strict xfail (see the module docstring)."""
    constant_softplus = any(not f.args[0].free_symbols for f in spec.expr.atoms(softplus))
    return constant_softplus or spec.expr.has(sp.Abs)


def build_within(spec, seconds: int, **options) -> str:
    with time_limit(seconds, f"build of {spec.expr_text!r} at order {spec.order}"):
        return build(spec, **options)


def ruff_problems(source: str) -> str:
    result = subprocess.run(
        [RUFF, "check", "--no-cache", "--stdin-filename", f"generated/{NAME}.py", "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr


def import_fresh(source: str, folder: Path):
    """The module `source` as a new module object, from its own file, not put in sys.modules."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = folder / f"hogen_prop_{digest}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_op(op, n_args: int, dtype_name: str):
    import tensorflow as tf

    dtype = tf.as_dtype(dtype_name)
    inputs = [tf.constant([0.5, 1.25, 2.0, -0.75], dtype) for _ in range(n_args)]
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        value = op(*inputs)
    grads = tape.gradient(value, inputs)
    return value, grads


SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],  # no explain: it traces every line
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@settings(SETTINGS, max_examples=40)
@given(case=CASES, order=ORDERS)
# found by this test: a long select line (E501) and sin(x)'s limit at inf, AccumBounds(-1, 1)
@example(case=(("x", "y"), "exp(exp(exp(y)))"), order=1)
@example(case=(("x", "y"), "sin(x)"), order=1)
# found on CI: threshold probes of a one-arg partial of a two-arg spec had one column
@example(case=(("x", "y"), "exp((x)**3)"), order=1)
def test_random_expression_builds_lints_imports_and_runs(case, order, module_dir):
    args, expr = case
    spec = parse(args, expr, order)
    assume(not has_known_bug(spec))
    try:
        source = build_within(spec, BUILD_LIMIT_S)
    except DeriveError as error:
        assert re.search(rf"order-[1-{order}]\b", str(error)), str(error)
        return
    code = compile(source, f"{NAME}.py", "exec")
    assert code is not None
    assert source.startswith("# Generated by hogen ")
    problems = ruff_problems(source)
    assert not problems, f"ruff on the module for {expr!r}:\n{problems}"
    module = import_fresh(source, module_dir)
    assert module.__all__ == [NAME]
    op = getattr(module, NAME)
    for dtype in ("float32", "float64"):
        value, grads = run_op(op, len(args), dtype)
        assert value.dtype.name == dtype and tuple(value.shape) == (4,), (expr, value)
        for grad in grads:
            assert grad is not None, f"{expr!r}: no gradient"
            assert grad.dtype.name == dtype and tuple(grad.shape) == (4,), (expr, grad)


@settings(SETTINGS, max_examples=20)
@given(case=CASES, order=ORDERS, max_ops=st.sampled_from([1, 3, 8]))
def test_tiny_max_ops_stops_with_the_order_and_size(case, order, max_ops):
    """With a tiny bound a build either fits or stops with a DeriveError naming order and size."""
    args, expr = case
    spec = parse(args, expr, order)
    assume(not has_known_bug(spec))
    try:
        build_within(spec, BUILD_LIMIT_S, max_ops=max_ops)
    except DeriveError as error:
        message = str(error)
        match = re.search(r"order-(\d) derivative .* has (\d+) operations", message)
        assert match, message
        assert 1 <= int(match[1]) <= order and int(match[2]) > max_ops, message
        assert f"bound of {max_ops}" in message and "prop.yaml" in message


COMPARISONS = ("<", "<=", ">", ">=")


def piecewise(names: tuple[str, ...]) -> st.SearchStrategy[str]:
    """where/min/max/clamp over expressions of one level of calls; conditions of comparisons
    of args and numbers, sometimes joined by and/or, sometimes nested one where deep."""
    value = nested(names, 1)
    side = st.one_of(st.sampled_from(names), st.sampled_from(NUMBERS))
    compare = st.tuples(side, st.sampled_from(COMPARISONS), side).map(" ".join)
    cond = st.one_of(
        compare,
        st.tuples(compare, st.sampled_from(("and", "or")), compare).map(" ".join),
    )
    where = st.tuples(cond, value, value).map(lambda t: f"where({t[0]}, {t[1]}, {t[2]})")
    return st.one_of(
        where,
        st.tuples(cond, where, value).map(lambda t: f"where({t[0]}, {t[1]}, {t[2]})"),
        st.tuples(st.sampled_from(("min", "max")), value, value).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"
        ),
        value.map(lambda v: f"clamp({v}, -1, 2)"),
        st.tuples(where, st.sampled_from(OPS), value).map(_join),
    )


@settings(SETTINGS, max_examples=15)
@given(expr=piecewise(("x", "y")), order=ORDERS)
@example(expr="where(x > y, x - y, log(y - x + 1))", order=2)
@example(expr="clamp(exp(x), -1, 2)", order=1)
def test_random_piecewise_expression_builds_lints_imports_and_runs(expr, order, module_dir):
    spec = parse(("x", "y"), expr, order)
    assume(not has_known_bug(spec))
    try:
        source = build_within(spec, BUILD_LIMIT_S)
    except DeriveError as error:
        assert re.search(rf"order-[1-{order}]\b", str(error)), str(error)
        return
    assert not ruff_problems(source), expr
    op = getattr(import_fresh(source, module_dir), NAME)
    for dtype in ("float32", "float64"):
        value, grads = run_op(op, 2, dtype)
        assert value.dtype.name == dtype and tuple(value.shape) == (4,), (expr, value)
        assert all(g is not None and g.dtype.name == dtype for g in grads), expr


# --- formerly known bugs, now regression tests --------------------------------------------

# (expr, order); softsign's lowering once searched a safe point of a conjugate piece for
# over 300 s (SymPy's N on one point took seconds)
SLOW = [("sigmoid(x)", 1), ("erf(x + 2)", 2), ("x/(1 + abs(x))", 2)]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see time_limit
@pytest.mark.parametrize("expr, order", SLOW, ids=[e for e, _ in SLOW])
def test_small_expression_builds_in_bounded_time(expr, order):
    start = time.thread_time()  # CPU time of this thread: bounded work, whatever else runs
    source = build_within(parse(("x",), expr, order), SLOW_LIMIT_S)
    assert compile(source, f"{NAME}.py", "exec") is not None
    assert time.thread_time() - start < SLOW_LIMIT_S


INTERNAL_ERRORS = [
    # (args, expr, order): each once ended in TypeError (exit 123); now built or refused
    (("x",), "x + softplus(1)", 1),  # lower._const: float(sp.N(softplus(1))) raises TypeError
    (("x",), "softplus(x + 2)", 1),  # the same, from softplus(2) in the Taylor series
    (("x",), "sin(1/x)", 1),  # accuracy: reference cannot evaluate AccumulationBounds
    (("x",), "abs(x)", 2),  # accuracy: reference cannot evaluate DiracDelta
    (("x", "y"), "sqrt(x**2) * y", 2),  # accuracy: reference cannot evaluate Piecewise
]


@pytest.mark.parametrize(
    "args, expr, order", INTERNAL_ERRORS, ids=[e for _, e, _ in INTERNAL_ERRORS]
)
def test_valid_expression_builds_or_is_refused_cleanly(args, expr, order):
    spec = parse(args, expr, order)
    try:
        source = build_within(spec, BUILD_LIMIT_S)
    except (DeriveError, SpecError) as error:  # a clean refusal names the problem: fine
        assert "prop.yaml" in str(error)
        return
    assert compile(source, f"{NAME}.py", "exec") is not None
