"""Lowering: SymPy forms -> a straight-line program both back ends share.

In: SymPy expressions (the chosen forms, possibly `Regimes`), the names of
their free symbols. Out: a `Program`, a tuple of `Step`s in SSA form, with
common subexpressions computed once. `numeric` interprets a Program with
NumPy to measure a form exactly as TensorFlow will compute it; `emit` prints
the same Program as TensorFlow code. One lowering, two readers: what is
measured is what is shipped.

Regimes are lowered as a NaN-safe select (`regimes_form`): each branch gets its
input clipped to the interval it owns, so no branch sees a point where it may
overflow or divide by zero, and no gradient of a branch not taken can turn into NaN.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from codegen.composites import (
    lower_compensation,
    lower_erfcx,
    lower_exponent_error,
    lower_hypot,
    lower_lgamma,
    lower_polygamma,
    lower_square_head,
)
from codegen.front.functions import by_class, hypot
from codegen.front.rounding import exponent_head, opened
from codegen.gamma_lowering import lower_gamma_difference
from codegen.pieces import Pieces, lower_pieces, lowering_for_values_only
from codegen.regimes_form import Regimes as Regimes  # re-exported: stages import it from here
from codegen.regimes_form import free_symbols as free_symbols
from codegen.regimes_form import lower_regimes

LOWERED_CACHE_SIZE = 8192  # programs kept (`lower_each`); a build lowers a few hundred forms


@dataclass(frozen=True)
class Step:
    """`target = op(operands...)`; operands are step targets, symbol names or float constants."""

    target: str
    op: str
    operands: tuple[str | float, ...]


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]
    outputs: tuple[str | float, ...]


class _Builder:
    def __init__(self, prefix: str, unclipped: frozenset = frozenset()):
        self.prefix = prefix
        self.unclipped = unclipped  # inputs no gradient flows through: branches need no clip
        self.steps: list[Step] = []
        self.memo: dict[tuple, str] = {}
        self.ops: dict[str, str] = {}
        self.lowered: dict[tuple, str | float] = {}  # `_lower`'s results: emit dedups anyway

    def emit(self, op: str, *operands: str | float) -> str:
        key = (op, *operands)
        if key not in self.memo:
            target = f"{self.prefix}{len(self.steps)}"
            self.steps.append(Step(target, op, tuple(operands)))
            self.memo[key] = target
            self.ops[target] = op
        return self.memo[key]

    def op_of(self, value: str | float) -> str | None:
        """The op of the step that computed `value` (None for inputs and constants)."""
        return self.ops.get(value) if isinstance(value, str) else None


def _const(value: sp.Expr) -> float:
    """A number as a float; an UnevaluatedExpr inside it (which `sp.N` leaves alone) opened."""
    if value.has(sp.UnevaluatedExpr):
        value = opened(value)
    return float(sp.N(value, 30))


def _lower_pow(b: _Builder, base: str | float, exp: sp.Expr) -> str | float:
    if exp.is_Integer and 2 <= exp <= 4 and b.op_of(base) == "exp":
        # XLA's simplifier turns exp(a)*exp(a) into exp(a + a), a second exp (and a second
        # pass over memory); max(h, 0), h itself for h = exp(a), hides the pair from it
        factor = b.emit("maximum", base, 0.0)
        out = base
        for _ in range(int(exp) - 1):
            out = b.emit("mul", out, factor)
        return out
    if exp == 2:
        return b.emit("square", base)
    if exp == sp.Rational(1, 2):
        return b.emit("sqrt", base)
    if exp == sp.Rational(-1, 2):
        return b.emit("rsqrt", base)
    if exp.is_Integer and 2 < exp <= 4:
        out = base
        for _ in range(int(exp) - 1):
            out = b.emit("mul", out, base)
        return out
    return b.emit("pow", base, _const(exp))


def _split_mul(expr: sp.Mul) -> tuple[sp.Expr, list[sp.Expr], list[sp.Expr]]:
    """(numeric coefficient, numerator factors, denominator factors); every number is folded
    into the coefficient, so `sqrt(2)*x/2` is one multiply and cannot overflow in between."""
    coeff, num, den = sp.S.One, [], []
    for factor in expr.args:
        if factor.is_number:
            coeff *= factor
            continue
        base, exp = factor.as_base_exp()
        if exp.is_number and exp.is_negative and exp != -sp.S.Half:
            den.append(base ** (-exp))
        else:  # u**-1/2 multiplies by rsqrt(u): XLA would turn (a/b)/sqrt(u) into a/(b*sqrt(u))
            num.append(factor)
    return coeff, num, den


def _lower_mul(b: _Builder, expr: sp.Mul, env) -> str | float:
    coeff, num, den = _split_mul(expr)
    negative = bool(coeff.is_negative)
    magnitude = -coeff if negative else coeff
    out: str | float | None = None if magnitude == 1 else _const(magnitude)
    for factor in num:
        value = _lower(b, factor, env)
        out = value if out is None else b.emit("mul", out, value)
    out = 1.0 if out is None else out
    if den:
        divisor = _lower(b, sp.Mul(*den), env)
        out = b.emit("div", out, divisor)
    return b.emit("neg", out) if negative else out


def _lower_add(b: _Builder, expr: sp.Add, env) -> str | float:
    numbers = [t for t in expr.args if t.is_number]
    terms = [t for t in expr.args if not t.is_number]
    if numbers:  # log(2) + log(pi)/2: one constant, not an op on two constants
        terms.append(sp.Add(*numbers) if len(numbers) > 1 else numbers[0])
    terms = sorted(terms, key=lambda t: (t.could_extract_minus_sign(), sp.default_sort_key(t)))
    out = _lower(b, terms[0], env)
    for term in terms[1:]:
        if term.could_extract_minus_sign():
            out = b.emit("sub", out, _lower(b, -term, env))
        else:
            out = b.emit("add", out, _lower(b, term, env))
    return out


def _lower(b: _Builder, expr, env) -> str | float:
    """The name (or constant) of `expr` in `b`, its symbols named by `env`. A subexpression met
    again gives what it gave before: its steps are in `b` already (`emit` dedups)."""
    key = (expr, tuple(env.items()), b.unclipped)
    if key not in b.lowered:
        b.lowered[key] = _lower_new(b, expr, env)
    return b.lowered[key]


def _lower_new(b: _Builder, expr, env) -> str | float:
    if isinstance(expr, Regimes):
        return lower_regimes(b, expr, env, _lower)
    if isinstance(expr, (Pieces, sp.Piecewise)):
        pieces = expr if isinstance(expr, Pieces) else Pieces.of(expr)
        return lower_pieces(b, pieces, env, _lower)
    if isinstance(expr, sp.UnevaluatedExpr):
        return _lower(b, expr.args[0], env)
    if expr.is_Symbol:
        return env[expr]
    if expr.is_number:
        return _const(expr)
    if expr.is_Add:
        return _lower_add(b, expr, env)
    if expr.is_Mul:
        return _lower_mul(b, expr, env)
    if expr.is_Pow:
        base, exp = expr.args
        if exp.is_number and exp.is_negative:
            return b.emit("div", 1.0, _lower(b, base ** (-exp), env))
        if base == sp.E:
            return b.emit("exp", _lower(b, exp, env))
        if not exp.is_number:  # a power of args: (1 - x)**a
            return b.emit("pow", _lower(b, base, env), _lower(b, exp, env))
        return _lower_pow(b, _lower(b, base, env), exp)
    if isinstance(expr, (sp.Max, sp.Min)):
        op = "maximum" if isinstance(expr, sp.Max) else "minimum"
        args = [_lower(b, arg, env) for arg in expr.args]
        args.sort(key=lambda arg: isinstance(arg, float))  # tensor first: it sets the dtype
        out = args[0]
        for arg in args[1:]:
            out = b.emit(op, out, arg)
        # the frameworks' maximum(1, NaN) is 1: NaN of any arg is carried (sign(arg) * 0)
        return _carry_nan(b, out, tuple(a for a in args if not isinstance(a, float)))
    if expr.func is hypot:
        return lower_hypot(b, *(_lower(b, arg, env) for arg in expr.args))
    info = by_class(expr.func)
    if info is None:
        raise TypeError(f"cannot lower {expr.func.__name__} (in {expr})")
    if info.name == "erfcx":
        return lower_erfcx(b, _lower(b, expr.args[0], env))
    if info.name == "lgamma":
        return lower_lgamma(b, _lower(b, expr.args[0], env))
    if info.name == "polygamma" and expr.args[0] == 0:
        return b.emit("digamma", _lower(b, expr.args[1], env))
    if info.name == "polygamma":
        return lower_polygamma(b, int(expr.args[0]), _lower(b, expr.args[1], env))
    if info.name == "compensation":  # a - b as the form computes it: sub(a, b), not add(a, -b)
        slope = _lower(b, expr.args[0], env)
        p, q = sorted(expr.args[1:], key=lambda t: t.could_extract_minus_sign())
        subtract = bool(q.could_extract_minus_sign())
        r = _lower(b, -q if subtract else q, env)
        return lower_compensation(b, slope, _lower(b, p, env), r, subtract)
    if info.name == "exponent_error":
        u, p = expr.args
        head = exponent_head(p)
        return lower_exponent_error(b, _lower(b, u, env), float(head), float(p - head))
    if info.name == "square_head":
        return lower_square_head(b, _lower(b, expr.args[0], env), float(expr.args[1]))
    if info.name == "gamma_difference":
        n, u, d = expr.args
        return lower_gamma_difference(b, int(n), _lower(b, u, env), _lower(b, d, env))
    return b.emit(info.name, *(_lower(b, arg, env) for arg in expr.args))


def lower(exprs, env: dict[sp.Symbol, str], prefix: str = "v") -> Program:
    """Lower several forms in one environment into one program sharing subexpressions."""
    return lower_each([(expr, env) for expr in exprs], prefix)


def lower_each(
    pairs,
    prefix: str = "v",
    unclipped: frozenset = frozenset(),
    carry_nan_of: tuple = (),
    clipped_pairs=(),
) -> Program:
    """Lower `(form, environment)` pairs into one program sharing common subexpressions.

    Regime branches get their input clipped to the interval they own, so the gradient of
    a branch not taken cannot be NaN; inputs named in `unclipped` carry no gradient
    (they are stopped), and their branches skip the clip. Each output is made NaN where an
    input named in `carry_nan_of` is NaN, and broadcast against it (for forms free of it).
    `clipped_pairs` follow in the same program with every branch clipped (`stabilize.cost`).

    Memoized: the stabilizer lowers most forms several times (to measure them, to count
    their ops, to cost them with their siblings), and a Program depends on nothing else.
    """
    return _lowered(
        _hashable(pairs),
        prefix,
        frozenset(unclipped),
        tuple(carry_nan_of),
        _hashable(clipped_pairs),
        lowering_for_values_only(),
    )


def clear_lowered() -> None:
    """Forget the programs lowered so far (`pipeline.build` starts each build without them)."""
    _lowered.cache_clear()


def _hashable(pairs) -> tuple:
    return tuple((expr, tuple(env.items())) for expr, env in pairs)


@functools.lru_cache(maxsize=LOWERED_CACHE_SIZE)
def _lowered(pairs, prefix, unclipped, carry_nan_of, clipped_pairs, values_only) -> Program:
    """`lower_each`'s program; `values_only` (`pieces`, read by `lower_pieces`) keys it."""
    b = _Builder(prefix, unclipped)
    outputs = tuple(_carry_nan(b, _lower(b, expr, dict(env)), carry_nan_of) for expr, env in pairs)
    b.unclipped = frozenset()
    outputs += tuple(_lower(b, expr, dict(env)) for expr, env in clipped_pairs)
    return _live(Program(tuple(b.steps), outputs), prefix)


def _live(program: Program, prefix: str) -> Program:
    """`program` without the steps no output needs (a composite may emit a value only one
    of its cases uses), temporaries numbered again in order."""
    needed = {o for o in program.outputs if isinstance(o, str)}
    for step in reversed(program.steps):
        if step.target in needed:
            needed.update(o for o in step.operands if isinstance(o, str))
    kept = [step for step in program.steps if step.target in needed]
    if len(kept) == len(program.steps):
        return program
    names = {step.target: f"{prefix}{i}" for i, step in enumerate(kept)}
    steps = tuple(
        Step(
            names[st.target],
            st.op,
            tuple(names.get(o, o) if isinstance(o, str) else o for o in st.operands),
        )
        for st in kept
    )
    outputs = tuple(names.get(o, o) if isinstance(o, str) else o for o in program.outputs)
    return Program(steps, outputs)


def _carry_nan(b: _Builder, out: str | float, names: tuple) -> str | float:
    """`out + sign(n) * 0` for each input n: NaN where n is NaN, `out` everywhere else (also
    at n = ±inf), and shaped like `out` broadcast against n. A constant becomes a tensor."""
    for name in names:
        if isinstance(out, float):
            out = b.emit("fill_like", name, out)
        else:
            out = b.emit("add", out, b.emit("fill_like", name, 0.0))
    return out


def op_count(expr) -> int:
    """How many TensorFlow ops a form costs once lowered."""
    symbols = sorted(free_symbols(expr), key=str)
    return len(lower([expr], {s: s.name for s in symbols}).steps)
