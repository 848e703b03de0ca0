"""Piecewise forms (`where`, `min`, `max`, `clamp`) lowered as NaN-safe selects.

In: a SymPy `Piecewise`, or a `Pieces` (one chosen form per piece, from `stabilize`), and
the lowering's builder. Out: steps of the lowered program: the conditions as boolean steps,
each piece's form, and a chain of selects. Regimes split one arg at thresholds the
stabilizer chose; Pieces split the inputs where the spec's conditions say, and a piece may
itself be Regimes: the pieces of a `where` are stabilized as problems of their own, then
selected by the same kind of step.

A piece not taken must not reach a value or a gradient of any order, NaN or inf included
(the "double where"): each input of a piece whose form is not a polynomial is replaced,
where the piece is not taken, by a safe point where the piece and its first derivatives
are finite. The select then discards a finite value, and the gradient of the select's
unused side is 0 times something finite.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from contextvars import ContextVar
from dataclasses import dataclass

import sympy as sp

from codegen.front.rounding import opened
from codegen.judge import balls
from codegen.timebound import SymPyTimeout, time_limit

_SAFE_VALUES = (1.0, 0.5, 2.0, -1.0, -0.5, -2.0, 0.0, 4.0, -4.0, 0.125, 16.0, -16.0)
SAFE_POINT_SECONDS = 1.0  # to find a safe point (`timebound`); past them every input is 1
_VALUES_ONLY: ContextVar[bool] = ContextVar("values_only", default=False)


@contextlib.contextmanager
def values_only():
    """Lowering for values alone (the stabilizer measuring a form): a piece not taken gets 1
    for each input in place of its safe point. The select discards that piece's value either
    way, so every value is the same bit for bit; the safe point matters only to gradients,
    and finding one can take most of a build."""
    token = _VALUES_ONLY.set(True)
    try:
        yield
    finally:
        _VALUES_ONLY.reset(token)


def lowering_for_values_only() -> bool:
    """Whether lowering is inside `values_only` now."""
    return _VALUES_ONLY.get()


_RELATIONS = {
    sp.StrictLessThan: ("less", "greater"),
    sp.LessThan: ("less_equal", "greater_equal"),
    sp.StrictGreaterThan: ("greater", "less"),
    sp.GreaterThan: ("greater_equal", "less_equal"),
    sp.Eq: ("equal", "equal"),  # from SymPy's own rewrites (sign), never from a spec
    sp.Ne: ("not_equal", "not_equal"),
}
BOOLEAN_OPS = frozenset(
    {
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "equal",
        "not_equal",
        "logical_and",
        "logical_or",
        "logical_not",
    }
)


@dataclass(frozen=True)
class Pieces:
    """`forms[i]` where `conds[i]` holds and no earlier condition does; the last is True.

    `exact[i]` is the SymPy piece `forms[i]` equals (a form may be Regimes): the safe point
    of a piece not taken is sought on it.
    """

    conds: tuple[sp.Basic, ...]
    forms: tuple[object, ...]
    exact: tuple[sp.Expr, ...]

    @staticmethod
    def of(piecewise: sp.Piecewise) -> Pieces:
        pairs = list(piecewise.args)
        if pairs[-1].cond != sp.true:  # undefined outside the conditions: NaN there
            pairs.append(sp.functions.elementary.piecewise.ExprCondPair(sp.nan, sp.true))
        return Pieces(
            tuple(p.cond for p in pairs),
            tuple(p.expr for p in pairs),
            tuple(p.expr for p in pairs),
        )

    def with_forms(self, forms) -> Pieces:
        return Pieces(self.conds, tuple(forms), self.exact)


def boundaries(conds) -> list[sp.Basic]:
    """The relations whose sides meet where the pieces change, in order, without repeats."""
    out: list[sp.Basic] = []
    for cond in conds:
        for rel in sp.preorder_traversal(cond):
            if isinstance(rel, tuple(_RELATIONS)) and rel not in out:
                out.append(rel)
    return out


SAFE_POINT_PRECISION = 128  # bits of the balls a safe point is checked in


def _finite(value: sp.Expr) -> bool:
    try:
        number = complex(sp.N(value, 20))
    except (TypeError, ValueError, ArithmeticError):
        return False
    return number.imag == 0 and abs(number.real) < 1e300


def _ball_checks(checks: list[sp.Expr], symbols: tuple[sp.Symbol, ...]):
    """Each check compiled to an arb program (fast per point), or None where the balls cannot
    evaluate one: SymPy's N then checks the points."""
    try:
        return [balls.compile_balls(check, symbols) for check in checks]
    except TypeError:
        return None


def _finite_in_balls(programs, point: tuple[float, ...]) -> bool:
    """Every program's ball at `point` finite, real (arb gives NaN outside a domain) and
    below 1e300 in magnitude."""
    with balls.precision(SAFE_POINT_PRECISION):
        for program in programs:
            leaves = [balls.leaf(c) for c in program.leaves]
            try:
                value = balls.run_once(program, point, leaves)
            except (ValueError, ArithmeticError):
                return False
            if not value.is_finite() or abs(value).upper() >= 1e300:
                return False
    return True


@functools.lru_cache(maxsize=512)
def safe_point(exact: sp.Expr, symbols: tuple[sp.Symbol, ...]) -> tuple[float, ...]:
    """A point where `exact` and its first partials in `symbols` are finite and real.

    Other symbols (params) are taken as 1. Tried: the same value for every symbol, then
    combinations; 1.0 for every symbol if none is found. Checked in arb balls (SymPy's N
    where they cannot evaluate a check: it can take a second per point of a long form).
    """
    others = {s: sp.Integer(1) for s in exact.free_symbols if s not in symbols}
    tries = [(v,) * len(symbols) for v in _SAFE_VALUES]
    tries += list(itertools.islice(itertools.product(_SAFE_VALUES[:6], repeat=len(symbols)), 300))
    try:  # the search is bounded: a check can be long
        with time_limit(SAFE_POINT_SECONDS):
            plain = opened(exact)  # SymPy differentiates through guards: no Derivative left
            checks = [c.subs(others) for c in (exact, *(sp.diff(plain, s) for s in symbols))]
            # a step (max's derivative) is finite wherever it is taken: 1 for the balls
            checks = [c.replace(sp.Heaviside, lambda *_: sp.S.One) for c in checks]
            programs = _ball_checks(checks, symbols)
            for point in tries:
                if programs is not None and _finite_in_balls(programs, point):
                    return point
                values = {s: sp.Rational(v) for s, v in zip(symbols, point)}
                if programs is None and all(_finite(c.subs(values)) for c in checks):
                    return point
    except SymPyTimeout:
        pass
    return (1.0,) * len(symbols)


def lower_condition(b, cond: sp.Basic, env, lower_fn) -> str:
    """A boolean step for a condition: comparisons, and/or/not of them."""
    if isinstance(cond, (sp.And, sp.Or)):
        parts = [lower_condition(b, arg, env, lower_fn) for arg in cond.args]
        op = "logical_and" if isinstance(cond, sp.And) else "logical_or"
        return functools.reduce(lambda p, q: b.emit(op, p, q), parts)
    if isinstance(cond, sp.Not):
        return b.emit("logical_not", lower_condition(b, cond.args[0], env, lower_fn))
    kind = _RELATIONS.get(type(cond))
    if kind is None:
        raise TypeError(f"cannot lower the condition {cond}")
    lhs, rhs = lower_fn(b, cond.lhs, env), lower_fn(b, cond.rhs, env)
    if isinstance(lhs, float):  # the tensor first, so TF takes its dtype
        return b.emit(kind[1], rhs, lhs)
    return b.emit(kind[0], lhs, rhs)


def _taken(b, conds: list[str], i: int) -> str:
    """The mask of points piece i owns: its condition, and no earlier one."""
    if i == 0:
        return conds[0]
    earlier = functools.reduce(lambda p, q: b.emit("logical_or", p, q), conds[:i])
    not_earlier = b.emit("logical_not", earlier)
    return not_earlier if i == len(conds) else b.emit("logical_and", conds[i], not_earlier)


@functools.lru_cache(maxsize=1024)  # each candidate's pieces are lowered again and again
def _sorted_symbols(exact: sp.Expr) -> tuple[sp.Symbol, ...]:
    return tuple(sorted(exact.free_symbols, key=str))


@functools.lru_cache(maxsize=1024)
def _is_polynomial(exact: sp.Expr, symbols: tuple[sp.Symbol, ...]) -> bool:
    return exact.is_polynomial(*symbols)


def _guarded(b, pieces: Pieces, i: int, conds: list[str], env) -> dict:
    """`env` with each input of piece i swapped for a safe point where piece i is not taken."""
    exact = pieces.exact[i]
    symbols = tuple(s for s in _sorted_symbols(exact) if s in env and env[s] not in b.unclipped)
    if not symbols or _is_polynomial(exact, symbols):
        return env
    point = (1.0,) * len(symbols) if _VALUES_ONLY.get() else safe_point(exact, symbols)
    mask = _taken(b, conds, i)
    return {**env, **{s: b.emit("select", mask, env[s], v) for s, v in zip(symbols, point)}}


def lower_pieces(b, pieces: Pieces, env, lower_fn) -> str:
    """Selects over the pieces; a NaN input makes every comparison false: the last piece."""
    conds = [lower_condition(b, cond, env, lower_fn) for cond in pieces.conds[:-1]]
    values = [
        lower_fn(b, form, _guarded(b, pieces, i, conds, env)) for i, form in enumerate(pieces.forms)
    ]
    out = values[-1]
    if isinstance(out, float):  # c + sign(u) * 0 for each input u: NaN in any stays NaN
        inputs = sorted({s for c in pieces.conds for s in c.free_symbols if s in env}, key=str)
        if inputs:
            out = b.emit("fill_like", env[inputs[0]], out)
        for symbol in inputs[1:]:
            out = b.emit("add", out, b.emit("fill_like", env[symbol], 0.0))
    for i in reversed(range(len(conds))):
        out = b.emit("select", conds[i], values[i], out)
    return out


def free_symbols_of(pieces: Pieces, free_symbols) -> set:
    conds = set().union(*(c.free_symbols for c in pieces.conds))
    return conds.union(*(free_symbols(form) for form in pieces.forms))
