"""Every generated piecewise op (its spec uses where/min/max/clamp): no NaN at any order.

At each boundary where a condition compares an arg with a number (params at their
defaults): on either side of it (the neighbouring floats and points further out), exactly
at it, and at ±inf, the value and every derivative up to one order beyond the spec's
custom orders (autodiff differentiates the last form) are not NaN wherever the exact
reference is not NaN, in float32 and float64. NaN there would mean an unused branch
leaked into a value or a gradient (the double-`where` problem). The other args sit at a
moderate point inside their domain.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp
from conftest_tf import REPO_ROOT, tf

import generated
from codegen.front.spec import load_spec
from codegen.judge import accuracy
from codegen.measure import verify
from codegen.pieces import boundaries

SPECS = {
    name: spec
    for name in sorted(generated.__all__)
    if isinstance((spec := load_spec(REPO_ROOT / "specs" / f"{name}.yaml")).expr, sp.Piecewise)
}


def _moderate(lo: float, hi: float) -> float:
    if lo <= 0.5 <= hi:
        return 0.5
    return (lo + hi) / 2 if np.isfinite(lo) and np.isfinite(hi) else lo + 1.0


def _edges(spec) -> list[tuple[int, float]]:
    """(arg index, boundary value) for each condition comparing one arg with a number."""
    values = {s: sp.Rational(v) for s, (_, v) in zip(spec.param_symbols, spec.params)}
    out = []
    for rel in boundaries([pair.cond.subs(values) for pair in spec.expr.args]):
        for side, other in ((rel.lhs, rel.rhs), (rel.rhs, rel.lhs)):
            if side in spec.arg_symbols and other.is_number:
                out.append((spec.arg_symbols.index(side), float(other)))
    return sorted(set(out))


def _points(c: float, dtype) -> list[float]:
    np_dtype = np.dtype(dtype.name)
    c32 = np_dtype.type(c)
    near = [
        np.nextafter(c32, np_dtype.type(-np.inf)),
        c32,
        np.nextafter(c32, np_dtype.type(np.inf)),
    ]
    return [float(v) for v in near] + [c - 1.0, c + 1.0, c - 1e3, c + 1e3, -np.inf, np.inf]


def _sequences(n_args: int, order: int):
    for k in range(order + 2):  # one order beyond the custom ones: autodiff of the last form
        yield from itertools.product(range(n_args), repeat=k)


def test_there_are_piecewise_ops():
    assert {"elu", "selu", "huber"} <= set(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64], ids=["float32", "float64"])
def test_no_nan_around_boundaries(name, dtype):
    spec = SPECS[name]
    op = getattr(generated, name)
    edges = _edges(spec)
    assert edges, "a piecewise spec whose boundaries this test cannot find"
    values = {s: sp.Rational(v) for s, (_, v) in zip(spec.param_symbols, spec.params)}
    for arg, c in edges:
        column = _points(c, dtype)
        rows = np.array([[_moderate(*spec.domain[i]) for i in range(len(spec.args))]] * len(column))
        rows[:, arg] = column
        rows = rows[(rows[:, arg] >= spec.domain[arg][0]) & (rows[:, arg] <= spec.domain[arg][1])]
        inputs = [tf.constant(rows[:, i], dtype) for i in range(len(spec.args))]
        for sequence in _sequences(len(spec.args), spec.order):
            got = verify.partial_derivative(op, inputs, list(sequence)).numpy()
            expr = spec.expr.subs(values)
            for i in sequence:
                expr = sp.diff(expr, spec.arg_symbols[i])
            finite_rows = np.isfinite(rows).all(axis=1)
            exact = np.full(len(rows), 0.0)
            exact[finite_rows] = accuracy.reference(
                expr, spec.arg_symbols, rows[finite_rows], "float64"
            )
            bad = np.isnan(got) & ~np.isnan(exact)
            assert not bad.any(), f"{name} d{sequence} is NaN at {rows[bad].tolist()}"
