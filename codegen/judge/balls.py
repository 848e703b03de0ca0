"""Expressions evaluated in python-flint `arb` balls, one point at a time.

In: a SymPy expression and its symbols. Out: `compile_balls`, a straight-line program over
balls (each SymPy node one operation: hogen's functions through the table `_ARB_FUNCS`,
comparisons and `where` as ball logic), and `point`, its value at one input row at the
current precision, rounded to a dtype when both ends of the ball round alike, or why not
("again": wider than a float, "zero", "undefined", "overflow"). `accuracy.reference`
drives the precision.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
from dataclasses import dataclass

import flint
import sympy as sp

from codegen.front.functions import by_class
from codegen.front.rounding import EXPONENT_PLACES
from codegen.judge.nearest import nearest

try:
    from sympy.codegen.numpy_nodes import logaddexp
except ImportError:  # pragma: no cover - older SymPy
    logaddexp = None


def _sigmoid(u, exp):
    if u < 0:  # surely negative: arb answers False when unsure
        return exp(u) / (1 + exp(u))
    return 1 / (1 + exp(-u))


def _softplus(u, exp, log1p):
    return u + log1p(exp(-u)) if u > 0 else log1p(exp(u))


def _polygamma(n, u):
    """psi^(n)(u) = (-1)^(n+1) n! zeta(n+1, u) for n >= 1; digamma for n = 0."""
    k = int(n.unique_fmpz())
    if k == 0:
        return u.digamma()
    return (-1) ** (k + 1) * math.factorial(k) * flint.arb(k + 1).zeta(u)


def _gamma_family(n, u):
    k = int(n.unique_fmpz())
    return u.lgamma() if k == -1 else _polygamma(n, u)


def _erfcx(u):
    """exp(u**2) erfc(u); past 1e4 the asymptotic series, its remainder in the radius."""
    if u > 10**4:
        inv2 = 1 / (2 * u * u)
        lead = 1 / (u * flint.arb.pi().sqrt())
        tail = lead * 15 * inv2**3
        return lead * (1 - inv2 + 3 * inv2 * inv2) + flint.arb(0, tail.upper())
    return (u * u).exp() * u.erfc()


def _erfc(u):
    """erfc(u); past 1e4 as erfcx(u)*exp(-u**2): arb's own erfc keeps only about 16 bits
    there, whatever the precision, and log_ndtr's tail lives there."""
    if u > 10**4:
        return _erfcx(u) * (-(u * u)).exp()
    return u.erfc()


def _exponent_error(u, p):
    """u**p - u**h, h = p to `EXPONENT_PLACES` binary places (front/rounding)."""
    scale = 2**EXPONENT_PLACES
    head = flint.arb(round(float(p.mid()) * scale)) / scale
    return u**p - u**head


def _method(name: str):
    return lambda u: getattr(u, name)()


_EXP, _LOG1P = _method("exp"), _method("log1p")
_ARB_FUNCS = {
    name: _method(name)
    for name in (
        "exp",
        "log",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "tanh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "log1p",
        "expm1",
    )
} | {
    "abs": abs,
    "sign": lambda u: u.sgn(),
    "sigmoid": lambda u: _sigmoid(u, _EXP),
    "softplus": lambda u: _softplus(u, _EXP, _LOG1P),
    "hypot": lambda a, b: (a * a + b * b).sqrt(),
    "logaddexp": lambda a, b: a + _softplus(b - a, _EXP, _LOG1P),
    "lgamma": _method("lgamma"),
    "digamma": _method("digamma"),
    "erfinv": _method("erfinv"),
    "polygamma": lambda n, u: _polygamma(n, u),
    "atan2": lambda y, x: flint.arb.atan2(y, x),
    "erfcx": _erfcx,
    "erfc": _erfc,
    "gamma_difference": lambda n, u, d: _gamma_family(n, u) - _gamma_family(n, u + d),
    "compensation": lambda slope, a, b: flint.arb(0),  # times a rounding error: 0 exactly
    "exponent_error": lambda u, p: _exponent_error(u, p),
    "square_head": lambda u, limit: u,  # any head is an identity where it is used
}
_OVERFLOWS = frozenset({"exp", "expm1", "sinh", "cosh", "erfcx"})
_OUTSIDE = {  # true where the operand surely lies outside the function's real domain
    "log": lambda u: u < 0,
    "log1p": lambda u: u < -1,
    "acosh": lambda u: u < 1,
    **dict.fromkeys(("asin", "acos", "atanh", "erfinv"), lambda u: u < -1 or u > 1),
}


@dataclass(frozen=True)
class _Op:
    arb: object
    args: tuple[int, ...]
    overflows: bool = False
    outside: object = None


@dataclass(frozen=True)
class _Program:
    """Slots: the inputs, then the constants (`leaves`), then one per op; `root` is the value,
    `cone` the ops it depends on, in order (programs compiled together share their ops)."""

    n_inputs: int
    leaves: tuple[sp.Expr, ...]
    ops: tuple[_Op, ...]
    root: int
    cone: tuple[int, ...]


def _integer_power(u, k: int):
    """u**k. python-flint answers NaN for a ball that contains 0 (it takes exp(k log u)), so
    there the power is taken by squaring: tanh(s)**2 at s = [+/- 1e-4932] is tiny, not NaN."""
    if k < 0:
        return 1 / _integer_power(u, -k)
    if k == 0 or u > 0 or u < 0:
        return u**k
    out, base = flint.arb(1), abs(u) if k % 2 == 0 else u
    while k:
        out, base, k = (out * base if k & 1 else out), base * base, k >> 1
    return out


def _pow_op(base: int, e: sp.Expr, visit) -> _Op:
    if e.is_Integer:
        k = int(e)
        return _Op(lambda u: _integer_power(u, k), (base,))
    if e.is_Rational:
        p, q = int(e.p), int(e.q)
        return _Op(
            lambda u: _integer_power(u.sqrt() if q == 2 else u.root(q), p),
            (base,),
            outside=lambda u: u < 0,
        )
    return _Op(
        lambda u, v: (v * u.log()).exp(),
        (base, visit(e)),
        overflows=True,
        outside=lambda u, v: u < 0,
    )


def _extremum_op(node: sp.Expr, visit) -> _Op:
    """Max/Min of balls (arb's max/min)."""
    method = "max" if isinstance(node, sp.Max) else "min"

    def fold(*args):
        return functools.reduce(lambda a, b: getattr(a, method)(b), args)

    return _Op(fold, tuple(visit(a) for a in node.args))


def _truth(surely: bool, surely_not: bool):
    """A condition as a ball: 1 true, 0 false, NaN undecided at this precision."""
    return flint.arb(1) if surely else flint.arb(0) if surely_not else flint.arb.nan()


_RELATIONS = {
    sp.StrictLessThan: lambda a, b: _truth(a < b, a >= b),
    sp.LessThan: lambda a, b: _truth(a <= b, a > b),
    sp.StrictGreaterThan: lambda a, b: _truth(a > b, a <= b),
    sp.GreaterThan: lambda a, b: _truth(a >= b, a < b),
    sp.Eq: lambda a, b: _truth(a == b, a != b),
    sp.Ne: lambda a, b: _truth(a != b, a == b),
}


def _pick(*values):
    """Piecewise: (cond, value) pairs in order; the first surely true condition picks."""
    for cond, value in zip(values[::2], values[1::2]):
        if not cond.is_finite():
            return flint.arb.nan()
        if cond == 1:
            return value
    return flint.arb.nan()


def _logic_op(node: sp.Basic, visit) -> _Op | None:
    """Ops for Piecewise and its conditions (where, min, max, clamp), or None."""
    if isinstance(node, sp.Piecewise):
        return _Op(_pick, tuple(visit(part) for pair in node.args for part in pair.args[::-1]))
    if node == sp.true:
        return _Op(lambda: flint.arb(1), ())
    if type(node) in _RELATIONS:
        return _Op(_RELATIONS[type(node)], (visit(node.lhs), visit(node.rhs)))
    if isinstance(node, (sp.And, sp.Or)):
        fold = min if isinstance(node, sp.And) else max
        return _Op(
            lambda *v: flint.arb.nan() if not all(u.is_finite() for u in v) else fold(v),
            tuple(visit(a) for a in node.args),
        )
    if isinstance(node, sp.Not):
        return _Op(lambda u: 1 - u, (visit(node.args[0]),))
    return None


def _folded(combine):
    return lambda *a: functools.reduce(combine, a)


def _op_for(node: sp.Expr, visit) -> _Op:
    logic = _logic_op(node, visit)
    if logic is not None:
        return logic
    if isinstance(node, (sp.Add, sp.Mul)):
        combine = operator.add if isinstance(node, sp.Add) else operator.mul
        args = tuple(visit(a) for a in node.args)  # (a + b) + c, as sum() with no 0 first
        return _Op(combine if len(args) == 2 else _folded(combine), args)
    if isinstance(node, sp.Pow):
        return _pow_op(visit(node.args[0]), node.args[1], visit)
    if isinstance(node, sp.UnevaluatedExpr):
        return _Op(lambda u: u, (visit(node.args[0]),))
    if isinstance(node, (sp.Max, sp.Min)):
        return _extremum_op(node, visit)
    is_lae = logaddexp is not None and isinstance(node, logaddexp)
    name = "logaddexp" if is_lae else getattr(by_class(node.func), "name", None)
    if name not in _ARB_FUNCS:
        raise TypeError(f"reference cannot evaluate {type(node).__name__}: {node}")
    return _Op(
        _ARB_FUNCS[name], tuple(visit(a) for a in node.args), name in _OVERFLOWS, _OUTSIDE.get(name)
    )


def compile_balls(expr: sp.Expr, symbols: tuple[sp.Symbol, ...]) -> _Program:
    """Compile once, run per point: one op per distinct subexpression, operands first."""
    return compile_joint((expr,), symbols)[0]


def compile_joint(exprs, symbols: tuple[sp.Symbol, ...]) -> tuple[_Program, ...]:
    """One program per expression, all over the same ops (each distinct subexpression of any
    of them once), so one run per point evaluates them all: a function's partials share most
    of their work."""
    exprs = [e if isinstance(e, sp.Basic) else sp.Float(e) for e in exprs]  # never parses text
    atoms = set().union(*(e.atoms(sp.Number, sp.NumberSymbol) for e in exprs))
    leaves = tuple(sorted(atoms, key=sp.default_sort_key))
    slots = {s: i for i, s in enumerate((*symbols, *leaves))}
    ops: list[_Op] = []

    def visit(node: sp.Expr) -> int:
        if node not in slots:
            ops.append(_op_for(node, visit))
            slots[node] = len(slots)
        return slots[node]

    roots = [visit(e) for e in exprs]
    first, frozen = len(symbols) + len(leaves), tuple(ops)
    return tuple(_Program(len(symbols), leaves, frozen, r, _cone(frozen, r, first)) for r in roots)


def _cone(ops: tuple[_Op, ...], root: int, first: int) -> tuple[int, ...]:
    """The indices of the ops `root` depends on (itself included), in program order."""
    needed, stack = set(), [root]
    while stack:
        slot = stack.pop()
        if slot >= first and slot - first not in needed:
            needed.add(slot - first)
            stack.extend(ops[slot - first].args)
    return tuple(sorted(needed))


def leaf(c: sp.Expr):
    """A constant as an arb ball at the current precision."""
    if c.is_Rational or c.is_Float:
        r = sp.Rational(c)
        return flint.arb(flint.fmpq(int(r.p), int(r.q)))
    if c in (sp.pi, sp.E):
        return flint.arb.pi() if c == sp.pi else flint.arb(1).exp()
    raise TypeError(f"reference cannot evaluate the constant {c}")


def _run(prog: _Program, inputs: list, leaves: list) -> list:
    vals = [*inputs, *leaves]
    for op in prog.ops:
        vals.append(op.arb(*[vals[i] for i in op.args]))
    return vals


def run_once(prog: _Program, row: tuple, leaves: list):
    """The ball of the program's value at one input row, at the current precision."""
    return _run(prog, [flint.arb(v) for v in row], leaves)[prog.root]


def _diagnose(prog: _Program, vals: list) -> str:
    """Why an arb result is not finite: "overflow", "zero", "domain" or "undefined"."""
    first = prog.n_inputs + len(prog.leaves)
    for k in prog.cone:
        op, val = prog.ops[k], vals[first + k]
        if val.is_finite():
            continue
        ins = [vals[i] for i in op.args]
        if op.overflows:
            return "overflow"
        if op.outside is not None and op.outside(*ins):
            return "domain"
        if all(v.is_exact() for v in ins):  # more precision cannot change exact operands
            return "zero" if any(v.is_zero() for v in ins) else "domain"
        return "undefined"
    return "domain"


def point(prog: _Program, row: tuple, leaves: list, dtype: str) -> tuple[str, float]:
    """(status, value) of one evaluation at the current precision; status "done" or why not."""
    return outcome(prog, _run(prog, [flint.arb(v) for v in row], leaves), dtype)


def run_row(prog: _Program, row: tuple, leaves: list, ops: tuple[int, ...] | None = None) -> list:
    """The balls of the slots at one input row, at the current precision, for `outcome` of
    the programs compiled with `prog` (`compile_joint`): every op, or only `ops` (in order;
    the union of the cones of the programs wanted) with None in the other slots."""
    inputs = [flint.arb(v) for v in row]
    if ops is None:
        return _run(prog, inputs, leaves)
    vals, first = [*inputs, *leaves, *([None] * len(prog.ops))], len(inputs) + len(leaves)
    for k in ops:
        op = prog.ops[k]
        vals[first + k] = op.arb(*[vals[i] for i in op.args])
    return vals


def outcome(prog: _Program, vals: list, dtype: str) -> tuple[str, float]:
    """(status, value) of `prog`'s root among the slots of one run (`point`)."""
    out = vals[prog.root]
    if not out.is_finite():
        return _diagnose(prog, vals), math.nan
    value = nearest(out, dtype)
    return ("again", math.nan) if value is None else ("done", value)


@contextlib.contextmanager
def precision(prec: int):
    saved, flint.ctx.prec = flint.ctx.prec, prec
    try:
        yield
    finally:
        flint.ctx.prec = saved
