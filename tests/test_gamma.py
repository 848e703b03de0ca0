"""Differences of the log-gamma family: the function, its lowering, the candidates that use it.

`gamma_difference(n, u, d)` = F_n(u) - F_n(u + d) (F_-1 = lgamma, F_n = polygamma(n, .)) is
measured against the exact reference over the float range of both args in both dtypes, where
the difference of the two kernels loses every digit; the candidates are checked to equal
what they rewrite, and the float64 polygamma of the NumPy mirror against mpmath.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from codegen.front.gamma import fast_polygamma, gamma_difference, gamma_family
from codegen.judge import accuracy
from codegen.judge.numeric import run
from codegen.lower import lower
from codegen.stabilize.gamma import gamma_difference_forms

a, b = sp.symbols("a b", positive=True)


@pytest.mark.parametrize("dtype", accuracy.DTYPES)
@pytest.mark.parametrize("n", [-1, 0, 1, 2])
def test_lowering_keeps_the_promise_where_the_kernels_cancel(n, dtype):
    points = accuracy.sample_points(((0.0, np.inf), (0.0, np.inf)), dtype, 1000)
    points = points[np.isfinite(points).all(axis=1) & (points > 0).all(axis=1)]
    form = gamma_difference(n, a, b)
    exact = accuracy.reference(form.rewrite(sp.polygamma), (a, b), points, dtype)
    columns = {"a": points[:, 0], "b": points[:, 1]}
    ours = run(lower([form], {a: "a", b: "b"}), columns, dtype)[0]
    kernels = run(lower([form.rewrite(sp.polygamma)], {a: "a", b: "b"}), columns, dtype)[0]
    assert accuracy.figures(ours, exact, dtype).keeps_promise()
    assert not accuracy.figures(kernels, exact, dtype).keeps_promise()  # what it is for


def test_derivatives_step_through_the_family():
    form = gamma_difference(-1, a, b)
    assert sp.diff(form, a) == gamma_difference(0, a, b)
    assert sp.diff(form, b) == -sp.polygamma(0, a + b)
    point = {a: sp.Rational(3, 2), b: sp.Rational(7, 3)}
    want = sp.loggamma(a) - sp.loggamma(a + b)
    assert abs(sp.N(form.subs(point), 30) - sp.N(want.subs(point), 30)) < 1e-25


def _equal_at_points(form, expr) -> bool:
    rows = np.array([[0.3, 2.5], [7.0, 1e-3], [1e5, 40.0], [2.0, 2.0]])
    want = accuracy.reference(expr, (a, b), rows, "float64")
    got = accuracy.reference(form, (a, b), rows, "float64")
    return bool(np.array_equal(want, got))


def test_lbeta_gets_both_pairings_and_the_pairing_by_size():
    lbeta = sp.loggamma(a) + sp.loggamma(b) - sp.loggamma(a + b)
    forms = dict(gamma_difference_forms(lbeta))
    assert set(forms) == {"gamma difference a", "gamma difference b", "gamma difference by size"}
    assert forms["gamma difference a"] == gamma_difference(-1, a, b) + sp.loggamma(b)
    assert all(_equal_at_points(form, lbeta) for form in forms.values())


@pytest.mark.parametrize("n", [0, 1, 3])
def test_polygamma_differences_pair_once(n):
    expr = 2 * gamma_family(n, a) - 2 * gamma_family(n, a + b) + a
    forms = gamma_difference_forms(expr)
    assert forms == [("gamma difference a", a + 2 * gamma_difference(n, a, b))]
    assert _equal_at_points(forms[0][1], expr)


def test_sums_without_a_pair_get_nothing():
    assert gamma_difference_forms(sp.loggamma(a) + sp.loggamma(b)) == []
    assert gamma_difference_forms(sp.polygamma(1, a) - sp.polygamma(2, a + b)) == []
    assert gamma_difference_forms(sp.loggamma(a) - sp.loggamma(a + 1)) == []  # d a number


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_fast_polygamma_agrees_with_mpmath_or_defers(n):
    u = np.concatenate([np.geomspace(1e-300, 1e300, 601), [-0.5, 0.0, np.inf, np.nan]])
    got = fast_polygamma(n, u)
    for value, out in zip(u, got):
        if np.isnan(out):
            assert not (value > 0 and np.isfinite(value) and (value < 1e-8 or value >= 10))
            continue
        want = float(mpmath.psi(n, mpmath.mpf(float(value))))
        assert out == want or abs(out - want) <= 8 * np.spacing(abs(want)) + 1e-300, (value, want)
