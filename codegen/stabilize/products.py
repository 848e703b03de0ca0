"""Candidate rewrites of products: no factor overflows or underflows before the product.

In: a SymPy form. Out: `(label, form)` candidates (none where a rewrite leaves the form as it
was), each the same function with its products grouped so that near the ends of the float
range no partial product leaves the range where the whole does not:

- `absorbed_forms`: c*F*exp(u) as sign(c*F)*exp(u + log|c*F|), and c*exp(u) as
  sign(c)*exp(u + log|c|) with the exponent's rounding compensated;
- `hypot_forms`: powers of hypot(a, b) with the bounded ratios a/hypot, b/hypot (sums of
  two squares first written as hypot(a, b)**2 by `squares_as_hypot`);
- `reciprocal_forms`: b**-k as (1/b)**k;
- `spread_forms`: c*b**k multiplied out one factor at a time;
- `ratio_forms`: a**k/b**k as (a/b)**k.

Exact identities: `stabilize` checks each against the derivative and measures it.
"""

from __future__ import annotations

import functools

import sympy as sp

from codegen.front.functions import hypot
from codegen.front.rounding import compensation


def _sign_and_log(rest: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """(sign(rest), log|rest|) factor by factor: x**2 as (1, 2*log|x|), so neither overflows
    nor underflows where x**2 does."""
    number, rest = rest.as_coeff_Mul()
    constant = [f for f in sp.Mul.make_args(rest) if f.is_number]
    number = number * sp.Mul(*constant)  # one constant: its log is one number
    sign, log = sp.sign(number), sp.log(sp.Abs(number))
    for factor in sp.Mul.make_args(rest):
        base, exp = factor.as_base_exp()
        if factor.is_number:
            continue
        if _clipped(factor) is not None:  # max(u, 0) is sign(max(u, 0))*|u|: no log of 0
            sign, log = sign * sp.sign(factor), log + sp.log(sp.Abs(_clipped(factor)))
        elif not exp.is_number:
            sign, log = sign * sp.sign(factor), log + sp.log(sp.Abs(factor))
        elif exp.is_Integer:  # sign(x)**-2 is 1, not 1/0, where the logs cancel at x = 0
            sign, log = sign * sp.sign(base) ** (exp % 2), log + exp * sp.log(sp.Abs(base))
        else:  # a real fractional power of a base that must be >= 0
            log = log + exp * sp.log(base)
    return sign, log


def _clipped(factor: sp.Expr) -> sp.Expr | None:
    """u for max(u, 0) or min(u, 0) (the cross-entropy's reflection keeps u*(1 - y) where
    u > 0), else None."""
    if isinstance(factor, (sp.Max, sp.Min)) and len(factor.args) == 2 and 0 in factor.args:
        return next(a for a in factor.args if a != 0)
    return None


def _absorbed(node: sp.Expr, constants: bool = False) -> sp.Expr:
    """c*F*exp(u) -> sign(c*F)*exp(u + log|c*F|): no underflow of exp(u) before the product;
    log|c*F| as a sum over F's factors (log(x**2) overflows where 2*log|x| does not). A
    constant alone, c*exp(u), only with `constants` (`_absorbed_constant`)."""
    exps = [f for f in node.args if f.func is sp.exp]
    rest = sp.Mul(*[f for f in node.args if f.func is not sp.exp])
    if len(exps) != 1 or isinstance(exps[0].args[0], sp.UnevaluatedExpr):
        return node
    if rest.is_number:
        return _absorbed_constant(rest, exps[0].args[0]) if constants else node
    sign, log = _sign_and_log(rest)
    exponent = sp.UnevaluatedExpr(exps[0].args[0] + log)  # SymPy would undo it
    return sign * sp.exp(exponent)


def _absorbed_constant(c: sp.Expr, u: sp.Expr) -> sp.Expr:
    """c*exp(u) -> sign(c)*exp(s)*(1 + e), s = fl(u + log|c|), e its rounding error by
    TwoSum: 1.76*exp(x) is a normal float32 down to x = -87.9, where exp(x) alone is
    subnormal and flushed. Rounding u + log|c| costs |u|/2 ulps of the result (6 bits at
    |u| = 88 in float32); the factor 1 + e gives them back (exp(s)*e, added, would be
    subnormal exactly where it matters)."""
    log = sp.log(sp.Abs(c))
    if c.is_zero or log.is_zero or not c.is_real:
        return c * sp.exp(u)
    head = sp.UnevaluatedExpr(u)
    rounded = sp.exp(sp.UnevaluatedExpr(head + log))
    return sp.sign(c) * rounded * sp.Add(1, compensation(1, head, log), evaluate=False)


def absorbed_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Products with an exp written as one exp, for tails where exp(u) alone underflows;
    then also constant factors absorbed, with the exponent's rounding compensated."""
    if not expr.has(sp.exp):
        return []
    out: list[tuple[str, sp.Expr]] = []
    for label, constants in (("absorb exp", False), ("absorb exp and constants", True)):
        try:
            form = expr.replace(
                lambda n: n.is_Mul and any(f.func is sp.exp for f in n.args),
                lambda n, c=constants: _absorbed(n, c),
            )
        except RecursionError:
            continue
        if form != expr and all(form != f for _, f in out):
            out.append((label, form))
    return out


def _scaled_by_hypot(node: sp.Expr, balanced: bool) -> sp.Expr:
    """a**e * hypot**-k -> (a/hypot)**e * hypot**(e-k): bounded ratios, no overflow.

    `balanced` also spreads a remaining negative power of hypot over the ratios,
    (a/hypot * hypot**((e-k)/e))**e, so no ratio is squared into underflow first.
    """
    hyps = [f for f in node.args if f.as_base_exp()[0].func is hypot]
    if len(hyps) == 2:  # hypot(y, 1)**2 / hypot(x, y, 1)**3: the smaller one is a ratio
        hyps = [f for f in hyps if f.as_base_exp()[1].is_negative]
    if len(hyps) != 1:
        return node
    h, power = hyps[0].as_base_exp()
    ratios, rest = [], []
    for factor in node.args:
        base, e = factor.as_base_exp()
        over = base.is_Symbol or (base.func is hypot and factor is not hyps[0])
        if over and e.is_Integer and e > 0:
            ratios.append((base / h, e))
            power += e
        elif factor is not hyps[0]:
            rest.append(factor)
    if not ratios:
        return node
    total = sum(e for _, e in ratios)
    if balanced and power < 0:
        share = h ** (power / total)
        ratio = [sp.UnevaluatedExpr(sp.UnevaluatedExpr(r) * share) ** e for r, e in ratios]
        return sp.Mul(*rest, *ratio)
    return sp.Mul(*rest, *(sp.UnevaluatedExpr(r) ** e for r, e in ratios), h**power)


def hypot_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Products with a power of hypot(a, b) written with the bounded ratios a/hypot, b/hypot."""
    if not expr.has(hypot):
        return []
    out = []
    for label, balanced in (("hypot ratios", False), ("hypot ratios balanced", True)):
        form = expr.replace(
            lambda n: n.is_Mul and n.has(hypot), lambda n, b=balanced: _scaled_by_hypot(n, b)
        )
        if form != expr:
            out.append((label, form))
    return out


def _square_roots(node: sp.Expr) -> tuple[sp.Expr, ...] | None:
    """(a, b, ...) where `node` is a**2 + b**2 + ... (a number c > 0 as sqrt(c)**2), else
    None."""
    if not node.is_Add:
        return None
    roots, numbers = [], 0
    for term in node.args:
        base, e = term.as_base_exp()
        if term.is_number and term.is_positive:
            roots.append(sp.sqrt(term))
            numbers += 1
        elif e == 2 and not base.is_number:
            roots.append(base)
        else:
            return None
    if numbers > 1:  # SymPy adds numbers up: two would be an unevaluated sum
        return None
    return tuple(roots)


def squares_as_hypot(expr: sp.Expr) -> sp.Expr:
    """Each sum of squares a**2 + b**2 (+ c) as hypot(a, b)**2: 1/(x**2 + y**2) overflows and
    log(x**2 + y**2) is inf past 1e154, where 1/hypot(x, y)**2 and 2*log(hypot(x, y)) are
    not; y**2 + 1 is hypot(y, 1)**2."""
    squares = expr.replace(
        lambda n: _square_roots(n) is not None,
        lambda n: functools.reduce(hypot, _square_roots(n)) ** 2,
    )
    return squares.replace(  # log(hypot**2) as 2*log(hypot): hypot >= 0
        lambda n: n.func is sp.log and n.args[0].is_Pow and n.args[0].base.func is hypot,
        lambda n: n.args[0].exp * sp.log(n.args[0].base),
    )


def reciprocal_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """b**-k as (1/b)**k (k > 1, also a fraction): near underflow, 1/b**2 overflows to inf
    where (1/b)**2 is finite, and b**(3/2) is subnormal where b**(-3/2) is a normal number."""

    def is_target(n):
        return n.is_Pow and n.exp.is_Rational and n.exp < -1 and not n.base.is_number

    form = expr.replace(is_target, lambda n: sp.UnevaluatedExpr(1 / n.base) ** (-n.exp))
    return [] if form == expr else [("reciprocal powers", form)]


MAX_SPREAD_POWER = 8


def _spread_unit(power: sp.Pow) -> tuple[sp.Expr, int] | None:
    """(unit, count) with power = unit**count, count in 2..MAX_SPREAD_POWER: b**3 is b three
    times, b**-2 is (1/b) twice, b**(-3/2) is b**(-1/2) three times."""
    exp = power.exp
    if power.base.is_number or not exp.is_Rational or exp.q > 4:
        return None
    count = abs(int(exp.p))
    if not 2 <= count <= MAX_SPREAD_POWER:
        return None
    if exp.is_Integer:
        return (power.base if exp > 0 else sp.UnevaluatedExpr(1 / power.base)), count
    return sp.UnevaluatedExpr(power.base ** sp.Rational(1 if exp > 0 else -1, exp.q)), count


def _spread(node: sp.Expr, units_first: bool = False) -> sp.Expr:
    """c*b**k (|k| >= 2, k = m/n a fraction too) multiplied out one factor at a time,
    ((c*F)*u)*u, or with `units_first` c*(u*u) then F (a small c and u > 1: c alone may be
    subnormal)."""
    units = {f: _spread_unit(f) for f in node.args if f.is_Pow}
    powers = [f for f, unit in units.items() if unit is not None]
    rest = [f for f in node.args if f not in powers]
    if not powers or not rest:
        return node
    coefficient, others = sp.Mul(*rest).as_coeff_Mul()
    product = coefficient if units_first else coefficient * others
    for power in powers:
        unit, count = units[power]
        for _ in range(count):
            product = (product if product.is_number else sp.UnevaluatedExpr(product)) * unit
    return sp.UnevaluatedExpr(product) * others if units_first else product


def _paired(node: sp.Expr) -> sp.Expr:
    """a**k * b**-m -> (a/b)**k * b**(k - m) for m >= k >= 2, the largest such k: a**k and
    b**m overflow where their ratio does not (y**2/(x + y)**3 is (y/(x + y))**2/(x + y))."""
    ups = {f.exp: f.base for f in node.args if f.is_Pow and f.exp.is_Integer and f.exp > 1}
    for f in node.args:
        if f.is_Pow and f.exp.is_Integer and f.exp < 0 and not f.base.is_number:
            fits = [k for k in ups if k <= -f.exp]
            if not fits:
                continue
            k = max(fits)
            top = ups[k]
            rest = [g for g in node.args if g is not f and g != top**k]
            return sp.Mul(*rest, sp.UnevaluatedExpr(top / f.base) ** k, f.base ** (f.exp + k))
    return node


def ratio_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Products a**k/b**k written (a/b)**k: x**2/(1 + e*x)**2 stays finite for huge x."""
    try:
        form = expr.replace(lambda n: n.is_Mul, _paired)
    except RecursionError:
        return []
    return [] if form == expr else [("paired powers", form)]


def spread_forms(expr: sp.Expr, both_orders: bool = False) -> list[tuple[str, sp.Expr]]:
    """Products with a power, c*x**-2, multiplied out one factor at a time, (c/x)/x: near the
    ends of the float range x**-2 overflows or underflows (and flushes to 0) where the
    product is a normal number. `both_orders` adds the powers multiplied first."""
    out = []
    for label, first in (("spread powers", False), ("spread powers first", True)):
        if first and not both_orders:
            break
        try:
            form = expr.replace(lambda n: n.is_Mul, lambda n, f=first: _spread(n, f))
        except RecursionError:
            continue
        except (TypeError, ValueError):  # a Max, Min or condition of the products refused
            continue
        if form != expr:
            out.append((label, form))
    return out
