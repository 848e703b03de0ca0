"""Partials of two args that are a power of one arg times a function of one monomial of both.

In: a partial (SymPy) and the spec's two args. Out: `monomial_forms`, `(label, form)`
candidates `y**c * g(w)` for each monomial w = x*y, x/y, ... of the args that occurs in the
partial and of which it is such a function, with w computed once: g as SymPy writes it and
with the rules applied, and g's Taylor polynomials at w = 0 (approximations: regimes split on
w use one only where it measured accurate, `split_on`).

Why: (1 - cos(x*y))/(x*y)**2 is a function of w = x*y alone, but SymPy writes it over
x**2*y**2, which overflows where x = 1e200 and y = 1e-200 though w = 1, and its f_x is
y*(sin(w)/w**2 + 2*cos(w)/w**3 - 2/w**3), whose sum cancels near w = 0 for every x and y at
once. Written in w, one rounding of x*y feeds a function of one variable: its rules
(1 - cos(w) = 2*sin(w/2)**2) and its series at 0 apply as they would to a spec of one arg.
"""

from __future__ import annotations

import functools

import sympy as sp

from codegen.stabilize import power_series
from codegen.stabilize.products import spread_forms
from codegen.stabilize.rules import apply_rules
from codegen.stabilize.split_on import split_expressions
from codegen.timebound import bounded

SECONDS = 0.5  # of work, per monomial tried: writing the partial in w expands it
MAX_OTHER_POWER = 6  # y**c outside g: |c| at most this
SERIES_TERMS = (6, 10, 16)


def monomial_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """`expr` written as a power of one arg times a function of a monomial w of both, for
    each monomial in it of which it is one (see the module docstring): closed forms."""
    return [form for monomial, found in _monomials(expr, args) for form in _forms(monomial, *found)]


def monomial_series(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """For the first monomial w of `of_one_monomial`: the power of one arg times g's Taylor
    polynomials at w = 0, and 0 (where w overflows g(w) may be 0 while a form in w is NaN);
    approximations for regimes split on w."""
    found = _monomials(expr, args)
    if not found:
        return []
    monomial, (other, power, g, t) = found[0]
    name = f"in {sp.sstr(monomial)}"
    zero = [(f"series {name} zero", sp.S.Zero)]
    return _series(g, t, sp.UnevaluatedExpr(monomial), other**power, name) + zero


def of_one_monomial(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> sp.Expr | None:
    """The first monomial w of the args that `expr` is a power of one arg times a function
    of, or None: regimes split on w before they split on one arg (`search`), since the forms
    in w fail where w itself leaves the float range, for every x and y at once."""
    found = _monomials(expr, args)
    return found[0][0] if found else None


@functools.lru_cache(maxsize=256)
def _monomials(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> tuple:
    if len(args) != 2:
        return ()
    out = []
    for monomial in split_expressions(expr, args):
        if not monomial.is_Mul:  # x - y, hypot(x, y): no monomial
            continue
        found = bounded(SECONDS, None, _in_monomial, expr, monomial, args)
        if found is not None:
            out.append((monomial, found))
    return tuple(out)


def _in_monomial(expr: sp.Expr, monomial: sp.Expr, args) -> tuple | None:
    """(other arg, c, g(t), t) with expr = other**c * g(monomial) and t a Dummy; else None."""
    powers = monomial.as_powers_dict()
    solved = next((a for a in args if powers.get(a) in (1, -1)), None)
    if solved is None:
        return None
    other = args[1] if solved == args[0] else args[0]
    t = sp.Dummy("w", real=True)
    rest = monomial / solved ** powers[solved]  # monomial = solved**e * rest
    value = (t / rest) ** powers[solved]  # e = +-1
    written = sp.expand(sp.powsimp(sp.expand_power_base(expr.subs(solved, value), force=True)))
    exponents, g = set(), []
    for term in sp.Add.make_args(written):
        free, power = term.as_independent(other, as_Add=False)
        base, exponent = power.as_base_exp()
        if power == 1:
            exponent = sp.S.Zero
        elif base != other or not exponent.is_Integer:
            return None
        exponents.add(int(exponent))
        g.append(free)
    if len(exponents) != 1 or abs(next(iter(exponents))) > MAX_OTHER_POWER:
        return None
    return other, exponents.pop(), sp.Add(*g), t


def _forms(monomial: sp.Expr, other, power: int, g: sp.Expr, t) -> list[tuple[str, sp.Expr]]:
    """other**power * G(monomial) for g, g over a common denominator, each with the rules
    applied, and their products spread."""
    w = sp.UnevaluatedExpr(monomial)
    name = f"in {sp.sstr(monomial)}"
    closed = [(name, g)]  # each term in w alone; over a common denominator, the rules'
    together = sp.together(g)  # patterns show: (1 - cos(w))/w**2, 2*sin(w/2)**2/w**2
    if together != g:
        closed.append((f"{name}+together", together))
    closed += [(f"{label}+rules", apply_rules(form)[0]) for label, form in list(closed)]
    closed += [
        (f"{label}+{more}", f) for label, form in list(closed) for more, f in spread_forms(form)
    ]
    closed = list({sp.srepr(form): (label, form) for label, form in closed}.values())
    return [(label, other**power * form.subs(t, w)) for label, form in closed]


def _series(g: sp.Expr, t, w, factor: sp.Expr, name: str) -> list[tuple[str, sp.Expr]]:
    """factor * g's Taylor polynomials at w = 0 (exact series arithmetic; none where g has no
    Taylor series with rational coefficients there)."""
    exact = power_series.expansion(g, t, max(SERIES_TERMS))
    if exact is None or any(p < 0 for p in exact):
        return []
    out = []
    for terms in SERIES_TERMS:
        poly = sum((c * t**p for p, c in exact.items() if p < terms), sp.S.Zero)
        if poly.has(t):
            out.append((f"series {name}<{terms}>", factor * sp.horner(poly, t).subs(t, w)))
    return out
