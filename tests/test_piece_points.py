"""Screening points inside each piece of a chosen form's regimes (`stabilize.piece_points`)."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from codegen.lower import Regimes
from codegen.stabilize.piece_points import PIECE_POINTS, piece_points

r, k = sp.symbols("r k", real=True)
DOMAIN = ((-math.inf, math.inf), (0.0, math.inf))
NAIVE = sp.exp(r) - k * r + sp.loggamma(k + 1)


def test_a_form_without_regimes_gets_no_points():
    assert piece_points(NAIVE, (r, k), DOMAIN, "float64", 3).shape == (0, 2)


def test_the_corner_a_sample_misses_is_drawn_inside_a_piece():
    """poisson_nll's value once took exp(r) alone on r >= 622; it is wrong there where k is
    huge (k = 1e300 at r = 650). A sample uniform in bit patterns holds about 1 in 10^4
    points with r in [622, 709.78] (where exp(r) is finite) and k > 1e250."""
    form = Regimes(r, (622.0,), (NAIVE, sp.exp(r)))
    points = piece_points(form, (r, k), DOMAIN, "float64", 3)
    assert 2 * PIECE_POINTS - 8 <= len(points) <= 2 * PIECE_POINTS
    corner = (points[:, 0] >= 622) & (points[:, 0] < 709.78) & (points[:, 1] > 1e250)
    assert corner.sum() >= 5
    assert points[:, 1].min() == 0.0 and points[:, 1].max() > 1e300  # k spread wide


def test_each_piece_stays_inside_its_nested_intervals():
    inner = Regimes(r, (622.0,), (NAIVE, sp.exp(r)))
    form = Regimes(k, (0.07267,), (sp.exp(r) - r * k, inner))
    points = piece_points(form, (r, k), DOMAIN, "float32", 3)
    first, second, third = (points[i * PIECE_POINTS : (i + 1) * PIECE_POINTS] for i in range(3))
    assert len(points) == 3 * PIECE_POINTS
    bound = np.float32(0.07267)
    assert np.all(first[:, 1] < bound) and np.ptp(first[:, 0]) > 1e30  # r unsplit: its ladder
    assert np.all((second[:, 1] >= bound) & (second[:, 0] < 622))
    assert np.all((third[:, 1] >= bound) & (third[:, 0] >= 622))
    assert np.all(np.isfinite(points))
    assert points.dtype == np.float32


def test_the_same_seed_gives_the_same_points():
    form = Regimes(r, (622.0,), (NAIVE, sp.exp(r)))
    a, b = (piece_points(form, (r, k), DOMAIN, "float64", 3) for _ in range(2))
    assert np.array_equal(a, b)
