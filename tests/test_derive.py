"""Stage 2: derivatives of every order and every partial, each computed once, and the size bound."""

from __future__ import annotations

import math

import pytest
import sympy as sp

from codegen import derive as derive_module
from codegen.derive import DeriveError, derive, multi_indices
from codegen.front.spec import parse_spec_text


def _spec(expr: str, args: str = "[x]", order: int = 2, name: str = "f"):
    return parse_spec_text(f"name: {name}\nargs: {args}\nexpr: {expr}\norder: {order}\n", "t.yaml")


@pytest.mark.parametrize(
    ("n_args", "order", "count"),
    [
        (1, 0, 1),
        (1, 1, 1),
        (1, 4, 1),
        (2, 1, 2),
        (2, 2, 3),
        (2, 3, 4),
        (3, 2, 6),
        (3, 3, 10),
        (4, 4, 35),
    ],
)
def test_multi_index_counts(n_args, order, count):
    indices = multi_indices(n_args, order)
    assert len(indices) == count == math.comb(n_args + order - 1, order)
    assert len(set(indices)) == count
    assert all(len(i) == n_args and sum(i) == order and min(i) >= 0 for i in indices)


def test_multi_index_order_is_fixed():
    assert multi_indices(2, 2) == [(2, 0), (1, 1), (0, 2)]
    assert multi_indices(3, 3)[:3] == [(3, 0, 0), (2, 1, 0), (2, 0, 1)]
    assert multi_indices(3, 3)[-1] == (0, 0, 3)


def test_one_arg_derivatives_match_sympy():
    spec = _spec("log(1 + exp(x))", order=3)
    (x,) = spec.arg_symbols
    d = derive(spec)
    assert [p.index for p in d.partials] == [(0,), (1,), (2,), (3,)]
    for k in range(4):
        (partial,) = d.of_order(k)
        assert partial.order == k
        assert sp.simplify(partial.expr - sp.diff(spec.expr, x, k)) == 0


def test_mixed_partials_once_and_equal_in_either_order():
    spec = _spec("exp(x*y)*sin(z) + x**3*y*z**2", args="[x, y, z]", order=3)
    x, y, z = spec.arg_symbols
    d = derive(spec)
    indices = [p.index for p in d.partials]
    assert len(indices) == len(set(indices)) == 1 + 3 + 6 + 10
    for partial in d.partials[1:]:
        wrt = [s for s, n in zip((x, y, z), partial.index, strict=True) for _ in range(n)]
        for symbols in (wrt, wrt[::-1]):  # either order of differentiation, same function
            assert sp.simplify(partial.expr - sp.diff(spec.expr, *symbols)) == 0, partial.index
    f_xy = d.get((1, 1, 0)).expr
    assert sp.simplify(f_xy - sp.diff(spec.expr, y, x)) == 0
    assert sp.simplify(f_xy - sp.diff(spec.expr, x, y)) == 0
    with pytest.raises(KeyError):
        d.get((1, 1, 2))


def test_each_partial_differentiated_once(monkeypatch):
    calls = []
    real_diff = sp.diff

    def counting_diff(expr, *symbols):
        calls.append(symbols)
        return real_diff(expr, *symbols)

    monkeypatch.setattr(derive_module.sp, "diff", counting_diff)
    spec = _spec("log(exp(x) + exp(y))", args="[x, y]", order=3)
    d = derive(spec)
    # one sp.diff per partial of order >= 1 (2 + 3 + 4), each by one symbol
    assert len(calls) == len(d.partials) - 1 == 9
    assert all(len(symbols) == 1 for symbols in calls)


def test_partials_are_ordered_by_order_then_index():
    d = derive(_spec("x**2*y", args="[x, y]", order=2))
    assert [p.index for p in d.partials] == [(0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2)]
    assert [p.index for p in d.of_order(1)] == [(1, 0), (0, 1)]


def test_order_bound_names_the_order():
    spec = _spec("exp(exp(exp(exp(x))))", order=4, name="tower")
    with pytest.raises(DeriveError, match=r"order-\d") as info:
        derive(spec, max_ops=40)
    message = str(info.value)
    assert "t.yaml" in message
    assert "order-2" in message  # f'' of the tower is the first past 40 operations
    assert "40" in message


def test_order_bound_not_hit_by_default():
    d = derive(_spec("exp(exp(exp(exp(x))))", order=4, name="tower"))
    assert len(d.partials) == 5
