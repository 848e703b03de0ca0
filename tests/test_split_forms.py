"""Mechanisms added in session 11 for issue 13: regimes split on a product of args, square
roots of conjugates taken of their parts, Taylor series in one arg whose coefficients hold
logs of another, powers whose exponent is not a float made exact.

Each is checked against exact values (mpmath at 50 digits) where the form it replaces
cancels, overflows or underflows in float64, and the selection is checked to pick the split
on a product of args on its own.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from codegen.derive import derive
from codegen.front.functions import hypot
from codegen.front.spec import load_spec
from codegen.judge.accuracy import bits_error
from codegen.judge.numeric import run
from codegen.lower import Regimes, free_symbols, lower
from codegen.stabilize.conjugates import conjugate_forms
from codegen.stabilize.selection import choose
from codegen.stabilize.split_on import coordinate, split_expressions
from codegen.stabilize.taylor import series_forms

x, y = sp.symbols("x y", real=True)
mpmath.mp.dps = 50


def _float64(form, args, rows: np.ndarray) -> np.ndarray:
    program = lower([form], {a: a.name for a in args})
    inputs = {a.name: rows[:, i].astype(np.float64) for i, a in enumerate(args)}
    return run(program, inputs, "float64")[0]


def _bits(got, exact) -> np.ndarray:
    return bits_error(np.asarray(got), np.array(exact, dtype=np.float64), "float64")


def test_split_expressions_are_the_products_of_args_in_the_derivative():
    f_y = sp.diff(sp.log(1 + x * y) / y, y)
    assert split_expressions(f_y, (x, y)) == [x * y]
    assert split_expressions(sp.log(x) + sp.exp(y), (x, y)) == []
    found = split_expressions((1 + x / y) ** y + 3 * x**2 * y, (x, y))
    assert found == [x / y, x**2 * y]


def test_a_homogeneous_derivative_may_split_on_the_ratio_of_its_args():
    """log1p((y/x)**2)'s f_xx, 2*y**2*(3*x**2 + y**2)/(x**2*(x**2 + y**2)**2), is homogeneous of
    degree -2: which form is accurate depends on y/x, at x = 1e53 as at x = 1."""
    f = sp.log(x**2 + y**2) - 2 * sp.log(x)
    f_xx = sp.diff(f, x, 2)
    assert split_expressions(f_xx, (x, y)) == [hypot(x, y), y / x]
    assert y / x not in split_expressions(sp.log(1 + x * y) / y, (x, y))  # not homogeneous
    rows = np.array([[1e53, -4e33], [2.0, -1.0]])
    assert coordinate(y / x, (x, y))(rows).tolist() == [-4e-20, -0.5]


def test_coordinate_is_the_products_value_at_each_point():
    rows = np.array([[2.0, 3.0], [-1.0, 0.5], [1e300, 1e300]])
    assert coordinate(x / y, (x, y))(rows).tolist() == [2 / 3, -2.0, 1.0]
    assert coordinate(x * y, (x, y))(rows)[2] == np.inf


def test_regimes_on_a_product_select_by_its_value():
    form = Regimes(x * y, (1.0,), (sp.S(-1), x + y))  # -1 where x*y < 1, else x + y
    rows = np.array([[0.5, 1.0], [4.0, 0.1], [2.0, 3.0], [-3.0, -3.0]])
    assert _float64(form, (x, y), rows).tolist() == [-1.0, -1.0, 5.0, -6.0]
    assert free_symbols(form) == {x, y}


def test_series_in_one_arg_may_have_logs_of_another():
    f_y = sp.diff((x**y - 1) / y, y)  # cancels as y -> 0 for every x
    forms = dict(series_forms(f_y, y))
    assert forms, "a Taylor series in y with log(x) in its coefficients"
    assert all(not any(y in f.free_symbols for f in s.atoms(sp.log)) for s in forms.values())
    rows = np.array([[3.0, 1e-9], [0.02, -2e-7]])
    exact = [
        float(mpmath.diff(lambda t, a=a: mpmath.expm1(t * mpmath.log(a)) / t, mpmath.mpf(b)))
        for a, b in rows
    ]
    longest = max(forms.items(), key=lambda item: sp.count_ops(item[1]))[1]
    assert _bits(_float64(longest, (x, y), rows), exact).max() <= 2.0
    assert _bits(_float64(f_y, (x, y), rows), exact).min() > 10  # the closed form cancels


def test_root_of_a_conjugate_is_taken_of_its_parts():
    half_angle = sp.sqrt(sp.sqrt(x**2 + y**2) - x)
    forms = dict(conjugate_forms(half_angle))
    form = forms["conjugate+roots of parts"]
    # y**2/(x + hypot) underflows before its root is taken: |y|/sqrt(x + hypot) does not
    rows = np.array([[1.6e132, -2.5e-88], [3.0, 4.0], [-2.0, 1e-5]])
    with mpmath.workdps(800):  # hypot - x cancels 440 digits at the first row
        exact = [
            float(mpmath.sqrt(mpmath.hypot(mpmath.mpf(a), mpmath.mpf(b)) - mpmath.mpf(a)))
            for a, b in rows
        ]
    assert _bits(_float64(form, (x, y), rows), exact).max() <= 2.0
    assert _float64(half_angle, (x, y), rows[:1])[0] == 0.0  # the sum as written cancels


def test_a_series_with_a_split_on_the_product_keeps_the_promise(tmp_path):
    spec_file = tmp_path / "log1p_xy_over_y.yaml"
    spec_file.write_text(
        "name: log1p_xy_over_y\nargs: [x, y]\nexpr: log(1 + x*y)/y\norder: 1\n"
        "domain: {x: [0, 10], y: [0, 1]}\n",
        encoding="utf-8",
    )
    spec = load_spec(spec_file)
    f_y = next(p for p in derive(spec).partials if p.index == (0, 1))
    choice = choose(spec, f_y, 400)
    assert choice.chosen.keeps_promise(), choice.chosen.label
    # the cancellation lies in x*y: a split on the product takes it, or the difference in f_y
    # written as a series in x*y (`sum_series`), which 300aaf1 added and this choice now takes
    label = choice.chosen.label
    assert "regimes in x*y" in label or "sum series" in label, label


def test_powers_with_a_rounded_exponent_are_made_exact():
    """u**(1/3) computed as pow(u, fl(1/3)) is off by |log u|/6 ulps (a mean of 5 bits over
    float64's range, 2.4 over float32's); u**h + exponent_error(u, 1/3) is not."""
    from codegen.judge.accuracy import reference
    from codegen.stabilize.compensated import exact_exponents

    u = sp.Symbol("u", positive=True)
    rng = np.random.default_rng(0)
    for dtype, top in (("float64", 300), ("float32", 37)):
        rows = (10.0 ** rng.uniform(-top, top, 300)).astype(dtype)
        for power in (u ** sp.Rational(1, 3), u ** sp.Rational(-2, 3)):
            form = exact_exponents(power)
            exact = reference(power, (u,), rows[:, None], dtype)
            assert (reference(form, (u,), rows[:, None], dtype) == exact).all()
            errors = {}
            for name, f in (("plain", power), ("exact", form)):
                got = run(lower([f], {u: "u"}), {"u": rows}, dtype)[0]
                errors[name] = bits_error(got, exact, dtype)
            assert errors["exact"].mean() <= 0.5 and errors["exact"].max() <= 2.0
            assert errors["plain"].mean() > 2.0
        at_ends = run(lower([form], {u: "u"}), {"u": np.array([0.0, np.inf], dtype)}, dtype)[0]
        assert at_ends.tolist() == [np.inf, 0.0]  # u**(-2/3) at 0 and inf


def test_a_series_too_slow_to_sixteen_terms_is_taken_to_six():
    """(1 + x*y)**(1/y)'s f_y in y at 0 does not reach 16 terms in its bound; 6 do, and the
    polynomial is exact in the limit y -> 0 where the closed form cancels."""
    f_y = sp.diff((1 + x * y) ** (1 / y), y)
    forms = dict(series_forms(f_y, y))
    assert set(forms) == {"series x<3>", "series x<6>"}
    rows = np.array([[-1.0, 1e-300], [0.75, 1e-30]])
    exact = [-0.5 * a * a * math.exp(a) for a, _ in rows]  # the limit; y is below an ulp of it
    assert _bits(_float64(forms["series x<6>"], (x, y), rows), exact).max() <= 1.0


def test_the_stabilizer_measures_where_a_square_of_the_arg_overflows():
    """x*x overflows at |x| > 1.34e154 in float64 while x**2/2 (log_ndtr's value there) does
    not: random points rarely land in that band, so the stabilizer's points include it, and
    the bands of x**3 and x**4 and of their underflow, inside the domain only."""
    from codegen.stabilize.measuring import stabilizer_points

    for dtype in ("float32", "float64"):
        big = float(np.finfo(dtype).max)
        pts = stabilizer_points(((-math.inf, math.inf),), dtype, 200)[:, 0].astype(np.float64)
        band = pts[(np.abs(pts) > math.sqrt(big)) & (np.abs(pts) < math.sqrt(2 * big))]
        assert (band < 0).any() and (band > 0).any()
    positive = stabilizer_points(((0.0, 1.0),), "float64", 200)[:, 0]
    assert positive.min() >= 0 and positive.max() <= 1  # the edges are sample points
    assert (np.abs(positive - math.sqrt(np.finfo(np.float64).tiny)) < 1e-154).any()
