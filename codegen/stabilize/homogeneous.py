"""Homogeneous functions of several args, computed at scaled args: no overflow in between.

In: a SymPy form and the spec's args. Out: `(label, form)` candidates. A function of several
args is homogeneous of degree d when F(t*x, t*y) = t**d * F(x, y) for every t > 0: rational
functions whose terms all have one degree, and roots of them (x/(x**2 + y**2) has d = -1,
sqrt(x**2 + y**2) - x has d = 1, 1 - x/hypot(x, y) has d = 0). Such a form is computed as

    m**d * F(x/m, y/m),    m = max(|x|, |y|),

so its inside sees args in [-1, 1]: x**2*y**2 cannot overflow at 1e100 or underflow at
1e-100, where the result is a normal number. The scaled args are rounded once (half an ulp
each), and m**d is multiplied out one factor at a time. Homogeneity is checked at two random
points scaled by 2 and 3, in 30 digits, and `stabilize` measures each candidate against the
exact reference.

`halved_forms` scales only the sums under a root, of any form: (a + b)**p as
2**p*(a/2 + b/2)**p, for a sum that overflows at the top of the range where its root does not
(sqrt(x + hypot(x, y)) at x = 3e38 in float32), with no arg rounded to a subnormal as m's
scaling does to y/m.

`stabilize` offers them only where the best forms measured miss the promise or its margin,
for the best few: a form accurate already needs no longer one.
"""

from __future__ import annotations

import functools
import math
import random

import flint
import sympy as sp

from codegen.front.rounding import opened
from codegen.judge.balls import compile_balls, leaf, precision, run_once
from codegen.judge.nearest import nearest
from codegen.stabilize.products import spread_forms
from codegen.stabilize.rules import apply_rules
from codegen.timebound import bounded

HOMOGENEOUS_SECONDS = 0.5  # for the check and the rewrite of one form
DEGREE_DENOMINATORS = (1, 2, 3, 4)  # degrees are rationals with these denominators
_POINTS = 2
_DIGITS = 30


_BALL_BITS = 256  # the check's values in arb balls first: far past the 30 digits it needs


def _value(expr: sp.Expr, args, point) -> complex | None:
    try:
        number = complex(sp.N(expr.xreplace(dict(zip(args, point))), _DIGITS))
    except (TypeError, ValueError, ArithmeticError):
        return None
    return number if number == number and abs(number) not in (0.0, float("inf")) else None


def _ball_value(program, point) -> float | None:
    """The value at a point of rationals as the nearest float, if its arb ball is finite,
    clear of 0 and tight; else None (complex, undefined, 0 or cancelling: `_value` decides)."""
    with precision(_BALL_BITS):
        row = tuple(flint.fmpq(int(p.p), int(p.q)) for p in point)
        try:
            ball = run_once(program, row, [leaf(c) for c in program.leaves])
        except (TypeError, ValueError, ArithmeticError):
            return None
        if not ball.is_finite() or 0 in ball:
            return None
        return nearest(ball, "float64")


def _evaluator(expr: sp.Expr, args):
    """The value of `expr` at a point of rationals, as `_value` gives it: from arb balls
    where they settle it, else SymPy's `N` of `expr` with the point substituted (exact
    rationals in radicals make that substitution slow: 25 ms a point in profiles)."""
    expr = opened(expr)
    try:
        program = compile_balls(expr, tuple(args))
    except TypeError:
        program = None

    def value(point) -> complex | None:
        number = _ball_value(program, point) if program is not None else None
        if number is None:
            return _value(expr, args, point)
        return complex(number) if number != 0 and math.isfinite(number) else None  # as `_value`

    return value


def homogeneous_degree(expr: sp.Expr, args) -> sp.Rational | None:
    """d where `expr` is homogeneous of degree d in `args` (checked at random points), else
    None. The points come from a fixed seed: the same form gives the same answer."""
    rng = random.Random(20261202)
    degree, value = None, _evaluator(expr, args)
    for _ in range(_POINTS):
        point = [sp.Rational(rng.randint(1, 999), rng.randint(1, 999)) for _ in args]
        base, twice, thrice = (value([k * p for p in point]) for k in (1, 2, 3))
        if base is None or twice is None or thrice is None:
            return None
        ratio = twice / base
        if abs(ratio.imag) > 1e-20 * abs(ratio) or ratio.real <= 0:
            return None
        d = _rational(sp.log(ratio.real, 2).evalf(_DIGITS))
        if d is None or abs(thrice / base - 3.0 ** float(d)) > 1e-12 * 3.0 ** float(d):
            return None
        if degree is not None and d != degree:
            return None
        degree = d
    return degree


def _rational(value: sp.Float) -> sp.Rational | None:
    for q in DEGREE_DENOMINATORS:
        p = round(float(value) * q)
        if abs(float(value) * q - p) < 1e-15 * max(1, abs(p)) + 1e-18:
            return sp.Rational(p, q)
    return None


def _scaled(expr: sp.Expr, args, degree: sp.Rational) -> sp.Expr:
    """m**d * F(x/m, y/m); sign(y) stays sign(y), not sign(y/m), which is 0 where y/m
    underflows (y = 1e-300, x = 1e20)."""
    m = sp.Max(*(sp.Abs(a) for a in args))
    signs = {s: sp.Dummy("sign") for s in expr.atoms(sp.sign) if s.args[0] in args}
    inside = expr.xreplace(signs).xreplace({a: sp.UnevaluatedExpr(a / m) for a in args})
    inside = inside.xreplace({d: s for s, d in signs.items()})
    return sp.UnevaluatedExpr(inside) * m**degree if degree != 0 else inside


def _versions(form: sp.Expr) -> list[tuple[str, sp.Expr]]:
    ruled, used = apply_rules(form)
    out = [("scaled args+rules", ruled)] if used else []
    return out + [(f"scaled args+{n}", f) for n, f in spread_forms(ruled)]


def _forms(expr: sp.Expr, args) -> list[tuple[str, sp.Expr]]:
    degree = bounded(HOMOGENEOUS_SECONDS, None, homogeneous_degree, expr, args)
    if degree is None:
        return []
    form = _scaled(expr, args, degree)
    return [("scaled args", form), *bounded(HOMOGENEOUS_SECONDS, [], _versions, form)]


def homogeneous_forms(expr: sp.Expr, args) -> list[tuple[str, sp.Expr]]:
    """The scaled candidates of `expr` if it is homogeneous in two or more args; none for one
    arg, a form free of one of the args, or past the time bound of the check (the scaled
    form alone past that of its versions with rules)."""
    used = [a for a in args if a in expr.free_symbols]
    if len(args) < 2 or len(used) < len(args):
        return []
    return list(_remembered_forms(expr, tuple(args)))


@functools.lru_cache(maxsize=256)
def _remembered_forms(expr: sp.Expr, args: tuple) -> tuple[tuple[str, sp.Expr], ...]:
    """`_forms`, kept for the build (`forget_forms`): each screening round and the float64
    pass of a promoted op scale the same best forms again, and the rules applied to a
    scaled form cost most of the time (0.5*sqrt(2*(sqrt(a**2 + b**2) + a)): 137 calls, 38
    forms, and 76 s of CPU before, 67 s after)."""
    return tuple(_forms(expr, args))


def forget_forms() -> None:
    """Forget the scaled forms found (`selection.stabilize` starts each build without them)."""
    _remembered_forms.cache_clear()


def _halved(node: sp.Pow) -> sp.Expr:
    half = sp.Add(*(term / 2 for term in node.base.args))
    return sp.UnevaluatedExpr(half**node.exp) * 2**node.exp


def _halved_log(node: sp.log) -> sp.Expr:
    inner = node.args[0]
    total = inner.args[0] if inner.func is sp.Abs else inner
    half = sp.Add(*(term / 2 for term in total.args))
    return sp.log(sp.Abs(half) if inner.func is sp.Abs else half) + sp.log(2)


def _is_log_of_sum(n) -> bool:
    if n.func is not sp.log:
        return False
    inner = n.args[0]
    return (inner.args[0] if inner.func is sp.Abs else inner).is_Add


def halved_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """`expr` with every sum under a root (or any power not an integer) or a log halved
    inside and the 2 taken out (log(a + b) as log(a/2 + b/2) + log(2)); none where it has no
    such sum. Halving is exact (but for subnormal terms): a sum that overflows, halved,
    does not."""

    def is_target(n) -> bool:
        return n.is_Pow and n.exp.is_Rational and not n.exp.is_Integer and n.base.is_Add

    halved = expr.replace(is_target, _halved).replace(_is_log_of_sum, _halved_log)
    return [("halved sums", halved)] if halved != expr else []
