"""Expressions of several args that regimes may split on (issue 13, kind 1).

In: a partial's expression, the spec's args, sample points. Out: `split_expressions`, the
products and quotients of two or more args that occur in the expression (x*y in
log(1 + x*y)/y, i/n in (1 + i/n)**n), the magnitude hypot(x, y) where their squares are
summed, the ratio y/x where the expression is homogeneous, and x - y where it divides the
denominator, is the expression's only argument, or where swapping the args negates the
expression (`lines.split_difference`), in a fixed order;
`coordinate`, the values of one of them at sample points: the line `regimes.best_regimes`
splits; `within_domain`, a form split on one of them that leaves points outside a finite
domain to the derivative as written.

Why: one arg's thresholds cannot follow a boundary like |x*y| = 0.1, where a series in y
stops being accurate for every x at once, while the closed form cancels for every smaller
|x*y|.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import hypot

from codegen.lower import Regimes
from codegen.stabilize.homogeneous import HOMOGENEOUS_SECONDS, homogeneous_degree
from codegen.stabilize.lines import split_difference
from codegen.stabilize.regimes import outside_domain
from codegen.timebound import bounded

MAX_SPLIT_EXPRESSIONS = 3
MAX_POWER = 2  # x*y, x/y, x**2/y; not x**5*y


def split_expressions(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[sp.Expr]:
    """The monomials in two or more of `args` (integer powers up to `MAX_POWER`, no
    coefficient) that occur in `expr` as a product, simplest first."""
    found = set()
    for node in sp.preorder_traversal(expr):
        if node.is_Mul:
            monomial = _monomial(node, args)
            if monomial is not None:
                found.add(monomial)
    ranked = sorted(found, key=lambda m: (sp.count_ops(m), sp.default_sort_key(m)))
    line = split_difference(expr, args)
    first = [line] if line is not None else []
    magnitudes = [*_magnitudes(expr, args), *homogeneous_ratio(expr, args)]
    ordered = [*first, *ranked[: MAX_SPLIT_EXPRESSIONS - 1], *magnitudes, *ranked]
    return list(dict.fromkeys(ordered))[:MAX_SPLIT_EXPRESSIONS]


def homogeneous_ratio(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[sp.Expr]:
    """y/x where `expr` is homogeneous in its two args: its forms' accuracy then depends on
    the ratio alone (6*y**2/x**4 of log1p((y/x)**2)'s f_xx cancels in one form wherever
    |y| << x, at x = 1e53 as at x = 1), which no threshold on one arg follows."""
    if len(args) != 2:
        return []
    if bounded(HOMOGENEOUS_SECONDS, None, homogeneous_degree, expr, args) is None:
        return []
    return [args[1] / args[0]]


def _magnitudes(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[sp.Expr]:
    """hypot(x, y) where `expr` holds a sum of the squares of two args or more (x**2 + y**2
    + 1): where both are small the form of the sum cancels, where either is large another
    form's squares overflow, and no threshold on one arg separates the two."""
    for node in sp.preorder_traversal(expr):
        if node.is_Add:
            squared = [b for b, e in (t.as_base_exp() for t in node.args) if e == 2 and b in args]
            if len(set(squared)) >= 2:
                return [hypot(*sorted(set(squared), key=args.index))]
    return []


def _monomial(node: sp.Mul, args) -> sp.Expr | None:
    _, rest = node.as_coeff_Mul()
    powers = rest.as_powers_dict()
    if len(powers) < 2:
        return None
    for base, exp in powers.items():
        if base not in args or not exp.is_Integer or abs(exp) > MAX_POWER:
            return None
    return rest


def coordinate(monomial: sp.Expr, args: tuple[sp.Symbol, ...]):
    """A function of sample points (one column per arg) giving `monomial`'s values in
    float64: inf where they overflow, NaN for 0 * inf, 0 where they are subnormal (as
    TensorFlow on CPU computes them: a bound between 1e-320 and a normal would be one)."""
    return lambda points: _flushed(_unflushed(monomial, args)(points))


def _flushed(values: np.ndarray) -> np.ndarray:
    return np.where(np.abs(values) < np.finfo(np.float64).tiny, 0.0, values)


def _unflushed(monomial: sp.Expr, args: tuple[sp.Symbol, ...]):
    if monomial.is_Add:  # args[0] - args[1], from `lines.split_difference`
        return lambda points: points[:, 0].astype(np.float64) - points[:, 1].astype(np.float64)
    if monomial.func is hypot:
        columns = [args.index(a) for a in monomial.args]
        return lambda points: np.hypot(*(points[:, c].astype(np.float64) for c in columns))
    powers = monomial.as_powers_dict()
    exponents = [int(powers.get(arg, 0)) for arg in args]

    def values(points: np.ndarray) -> np.ndarray:
        out = np.ones(len(points))
        with np.errstate(all="ignore"):
            for column, k in enumerate(exponents):
                if k:
                    out = out * points[:, column].astype(np.float64) ** k
        return out

    return values


def within_domain(form: Regimes, args, domains, exact: sp.Expr) -> Regimes:
    """`form` (split on an expression), inside one select per arg with a finite end that
    gives the points beyond it the derivative as written (`regimes.outside_domain`)."""
    for arg, domain in zip(args, domains):
        if np.isfinite(domain).any():
            form = outside_domain(Regimes(arg, (), (form,)), domain, exact)
    return form
