"""`regimes._split_points`: the cheapest split of sorted samples into pieces, each piece one
form and holding samples of every dtype, checked against exhaustive search on small random
cases."""

from __future__ import annotations

import itertools

import numpy as np

from codegen.stabilize.regimes import PIECE_PENALTY, _running_argmin, _split_points


def _cost_of(pieces, cost: np.ndarray) -> float:
    n = cost.shape[1]
    ends = [start for start, _ in pieces[1:]] + [n]
    total = sum(cost[form, start:end].sum() for (start, form), end in zip(pieces, ends))
    return total + PIECE_PENALTY * (len(pieces) - 1)


def _cheapest(n_pieces: int, x: np.ndarray, cost: np.ndarray, groups: np.ndarray) -> float:
    """Every way to cut between distinct neighbours into at most `n_pieces` pieces, each with
    a sample of every group."""
    n = cost.shape[1]
    cuts = [i for i in range(1, n) if x[i] > x[i - 1]]
    best = np.inf
    for m in range(n_pieces):
        for chosen in itertools.combinations(cuts, m):
            bounds = [0, *chosen, n]
            if any(set(groups[a:b]) != set(groups) for a, b in zip(bounds, bounds[1:])):
                continue
            total = sum(cost[:, a:b].sum(axis=1).min() for a, b in zip(bounds, bounds[1:]))
            best = min(best, total + PIECE_PENALTY * m)
    return best


def test_split_points_find_the_cheapest_split():
    rng = np.random.default_rng(7)
    for _ in range(150):
        k, n = int(rng.integers(1, 5)), int(rng.integers(1, 12))
        x = np.sort(rng.integers(0, n, n).astype(float))  # ties: no cut between equal x
        cost = np.where(rng.random((k, n)) < 0.5, 0.0, rng.integers(0, 40, (k, n)) * 1.0)
        groups = rng.integers(0, int(rng.integers(1, 3)), n)  # one dtype's samples, or two
        for n_pieces in (1, 2, 3):
            pieces = _split_points(n_pieces, x, cost, groups)
            assert len(pieces) <= n_pieces
            assert all(x[s] > x[s - 1] for s, _ in pieces[1:])
            assert np.isclose(_cost_of(pieces, cost), _cheapest(n_pieces, x, cost, groups))


def test_a_piece_needs_samples_of_every_dtype():
    """Form 1 is exact at samples 4 and 5, both of dtype 0, and far off at every sample of
    dtype 1: the piece it would win holds no sample of dtype 1, so it is not taken."""
    x = np.arange(8.0)
    groups = np.array([0, 1, 0, 1, 0, 0, 1, 0])
    cost = np.array([[0, 0, 0, 0, 30, 30, 0, 0], [60, 60, 60, 60, 0, 0, 60, 60]], dtype=float)
    pieces = _split_points(3, x, cost, groups)
    assert pieces == [(0, 0)]
    assert _split_points(3, x, cost, np.zeros(8, dtype=int)) == [(0, 0), (4, 1), (6, 0)]


def test_running_argmin_is_the_first_minimum_so_far():
    values = np.array([3.0, np.inf, 3.0, 1.0, 2.0, 1.0, 0.5, np.inf])
    assert _running_argmin(values).tolist() == [0, 0, 0, 3, 3, 3, 6, 6]
