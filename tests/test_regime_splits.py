"""`regimes._split_points`: the cheapest split of sorted samples into pieces, each piece one
form and holding samples of every dtype, checked against exhaustive search on small random
cases; and `regimes.best_regimes`: pieces of a split among several args hold several points,
closed forms win ties with regimes of another line."""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from codegen.stabilize.measuring import Candidate
from codegen.stabilize.regimes import PIECE_PENALTY, _running_argmin, _split_points, best_regimes


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


def _enough_per_group(groups: np.ndarray, bounds: list[int], least: int) -> bool:
    pieces = [groups[a:b] for a, b in zip(bounds, bounds[1:])]
    return all(np.sum(p == g) >= least for p in pieces for g in set(groups))


def test_split_points_with_several_points_per_piece_find_the_cheapest_split():
    """As above, each piece holding at least `least` samples of every dtype."""
    rng = np.random.default_rng(11)
    for _ in range(150):
        k, n = int(rng.integers(1, 4)), int(rng.integers(2, 12))
        x = np.arange(n, dtype=float)
        cost = np.where(rng.random((k, n)) < 0.5, 0.0, rng.integers(0, 40, (k, n)) * 1.0)
        groups = rng.integers(0, 2, n)
        least = int(rng.integers(1, 4))
        if not _enough_per_group(groups, [0, n], least):
            continue
        cuts = range(1, n)
        want = min(
            sum(cost[:, a:b].sum(axis=1).min() for a, b in zip(bounds, bounds[1:]))
            + PIECE_PENALTY * m
            for m in range(3)
            for chosen in itertools.combinations(cuts, m)
            for bounds in [[0, *chosen, n]]
            if _enough_per_group(groups, bounds, least)
        )
        pieces = _split_points(3, x, cost, groups, least)
        bounds = [s for s, _ in pieces] + [n]
        assert _enough_per_group(groups, bounds, least)
        assert np.isclose(_cost_of(pieces, cost), want)


def _candidate(label: str) -> Candidate:
    return Candidate(label, sp.Symbol(label.replace(" ", "_")), (), ops=1)


def _points(n: int, n_args: int) -> dict:
    column = np.arange(n, dtype=np.float64).reshape(-1, 1)
    pts = np.concatenate([column] * n_args, axis=1)
    return {"float32": pts.astype(np.float32), "float64": pts}


def test_a_piece_of_several_args_needs_more_than_a_point_or_two():
    """Form b is exact at one point of each dtype where form a is 30 bits off: with one arg
    that point's piece is taken; with several, one point does not sample the other args, and
    it is not."""
    bad = np.zeros(40)
    bad[20] = 30.0
    bits = {"a": {d: bad for d in ("float32", "float64")}}
    bits["b"] = {d: np.where(bad > 0, 0.0, 30.0) for d in ("float32", "float64")}
    tried = [_candidate("a"), _candidate("b")]
    x = sp.Symbol("x")
    one_arg = best_regimes(tried, bits, _points(40, 1), x)
    assert one_arg is not None and one_arg.label == "a | b | a"
    assert best_regimes(tried, bits, _points(40, 2), x) is None


def test_closed_forms_win_ties_with_regimes_of_another_line():
    """Regimes found on another arg, off at the first 5 samples only (the least total error),
    tie `closed` above the first 10, where `conj` stops being exact: that piece takes the
    closed form, whose accuracy between the samples does not hang on pieces fitted to them."""
    n = 40
    low = np.arange(n) < 10
    bits = {
        "closed": np.where(low, 30.0, 0.0),
        "conj": np.where(low, 0.0, 30.0),
        "regimes in y(conj | closed)": np.where(np.arange(n) < 5, 30.0, 0.0),
    }
    bits = {label: {d: b for d in ("float32", "float64")} for label, b in bits.items()}
    tried = [_candidate(label) for label in bits]
    chosen = best_regimes(tried, bits, _points(n, 1), sp.Symbol("x"))
    assert chosen is not None and chosen.label == "conj | closed"


def test_series_in_a_coordinate_of_two_args_are_pieces_only_of_splits_on_it():
    """A series in x - y holds near the line, one in x*y where x*y is small: regimes on one
    arg leave the other free, and took log(sigmoid(x)/sigmoid(y))'s series in x - y where
    the stabilizer's points lay near the line (1e35 at x = -1e14 among the verifier's)."""
    from types import SimpleNamespace

    from codegen.stabilize.search import Measured

    labels = ["sympy", "series x - y<4>", "series in x*y<6>", "series x<16>", "series at 0.5<8>"]
    record = Measured(tried=[SimpleNamespace(label=k) for k in labels])
    record.bits = dict.fromkeys(labels)
    plain = [c.label for c in record.plain()]
    assert plain == ["sympy", "series x<16>", "series at 0.5<8>"]  # regimes on one arg
    on_line = [c.label for c in record.plain(own_series="series x - y")]
    assert on_line == ["sympy", "series x - y<4>", "series x<16>", "series at 0.5<8>"]
    on_monomial = [c.label for c in record.plain(own_series="series in x*y")]
    assert on_monomial == ["sympy", "series in x*y<6>", "series x<16>", "series at 0.5<8>"]
