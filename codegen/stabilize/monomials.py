"""Partials of two args that are a power of one arg times a function of one monomial of both.

In: a partial (SymPy) and the spec's two args. Out: `monomial_forms`, `(label, form)`
candidates `y**c * g(w)` for each monomial w = x*y, x/y, ... of the args that occurs in the
partial and of which it is such a function, with w computed once: g as SymPy writes it and
with the rules applied; and `monomial_series`, approximations that regimes split on w use
only where they measured accurate (`split_on`): g's Taylor polynomials at w = 0 (also with
their lowest term multiplied in before w is formed), 0, and g's leading term at w -> +inf
spread over the args. Of the two ways to write the partial (solved for x or for y), the one
with the smaller power of the other arg outside g wins, then the one whose power is >= 0.

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

SECONDS = 0.5  # of work, per monomial and arg solved for: writing the partial in w expands it
POWER_LAW_SECONDS = 4 * SECONDS  # two limits, of g and of t*g'/g: 0.7 s for log(sinh(x/y))'s f_yy
MAX_OTHER_POWER = 6  # y**c outside g: |c| at most this
SERIES_TERMS = (6, 10, 16)


def monomial_forms(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """`expr` written as a power of one arg times a function of a monomial w of both, for
    each monomial in it of which it is one (see the module docstring): closed forms."""
    return [form for monomial, found in _monomials(expr, args) for form in _forms(monomial, *found)]


def monomial_label(monomial: sp.Expr) -> str:
    """The start of the labels of the series in `monomial`."""
    return f"series {_name(monomial)}"


def _name(monomial: sp.Expr) -> str:
    return f"in {sp.sstr(monomial)}"


def monomial_series(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> list[tuple[str, sp.Expr]]:
    """For the first monomial w of `of_one_monomial`: the power of one arg times g's Taylor
    polynomials at w = 0, 0 (where w overflows g(w) may be 0 while a form in w is NaN), and
    g's leading term at w -> +inf (`_at_infinity`); approximations for regimes split on w."""
    found = _monomials(expr, args)
    if not found:
        return []
    monomial, (other, power, g, t) = found[0]
    name = _name(monomial)
    zero = [(f"series {name} zero", sp.S.Zero)]
    series = _series(g, t, sp.UnevaluatedExpr(monomial), name)
    series = [(label, _times_power(form, other, power)) for label, form in series]
    ends = _at_infinity(g, t, monomial, other, power, name) + _at_zero(g, t, monomial, other, power)
    return series + zero + ends


def _times_power(form: sp.Expr, other: sp.Symbol, power: int) -> sp.Expr:
    """other**power * form, multiplied in one factor of other at a time where |power| >= 2:
    y**2 overflows in float32 at y = 2e19 where y*(y*g(x*y)) is a normal number. A negative
    power multiplies by 1/y each time: XLA's simplifier merges (g/y)/y into g/(y*y), and y*y
    underflows at y = 1e-162 where the piece is a normal number (log(sinh(x/y))'s f_yy)."""
    if abs(power) < 2:
        return other**power * form
    factor = other if power > 0 else sp.UnevaluatedExpr(1 / other)
    for _ in range(abs(power)):
        form = sp.UnevaluatedExpr(form) * factor
    return form


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
        found = _in_monomial(expr, monomial, args)
        if found is not None:
            out.append((monomial, found))
    return tuple(out)


def _in_monomial(expr: sp.Expr, monomial: sp.Expr, args) -> tuple | None:
    """(other arg, c, g(t), t) with expr = other**c * g(monomial) and t a Dummy; else None.
    Where both args can be solved for, the smaller |c| wins, then c >= 0: x**2*g''(x*y)
    solved for x is y**-2 * w**2*g''(w), whose y**-2 overflows where y is tiny and w is not."""
    powers = monomial.as_powers_dict()
    best = None
    for solved in (a for a in args if powers.get(a) in (1, -1)):
        found = bounded(SECONDS, None, _solved_for, expr, monomial, solved, args)
        if found is not None and (best is None or _rank(found) < _rank(best)):
            best = found
        if best is not None and best[1] == 0:  # no other power: none does better
            break
    return best


def _rank(found: tuple) -> tuple[int, bool]:
    return abs(found[1]), found[1] < 0


def _solved_for(expr: sp.Expr, monomial: sp.Expr, solved: sp.Symbol, args) -> tuple | None:
    """`_in_monomial` with `monomial` solved for the arg `solved`."""
    powers = monomial.as_powers_dict()
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
    name = _name(monomial)
    closed = [(name, g)]  # each term in w alone; over a common denominator, the rules'
    together = sp.together(g)  # patterns show: (1 - cos(w))/w**2, 2*sin(w/2)**2/w**2
    if together != g:
        closed.append((f"{name}+together", together))
    closed += [(f"{label}+rules", apply_rules(form)[0]) for label, form in list(closed)]
    closed += [
        (f"{label}+{more}", f) for label, form in list(closed) for more, f in spread_forms(form)
    ]
    closed = list({sp.srepr(form): (label, form) for label, form in closed}.values())
    return [
        (label, other**power * written)
        for label, form in closed
        if (written := _substituted(form, t, w)) is not None
    ]


def _substituted(form: sp.Expr, t, w: sp.UnevaluatedExpr) -> sp.Expr | None:
    """`form` with w for t, or None where SymPy refuses it: Max and Min ask their args to be
    real, and softplus(2*w) of an unevaluated w is not known to be (a fold of
    `rules_logsumexp`, max(w, softplus(2*w)) + ...); nor where a piecewise's condition holds
    t, which a later rewrite that rebuilds the form would meet ('Invalid comparison of
    non-real', the piecewise of `rules_differences.softplus_difference`)."""
    conditions = [cond for p in form.atoms(sp.Piecewise) for _, cond in p.args]
    if any(t in cond.free_symbols for cond in conditions):
        return None
    try:
        return form.subs(t, w)
    except (TypeError, ValueError):
        return None


def _series(g: sp.Expr, t, w, name: str) -> list[tuple[str, sp.Expr]]:
    """g's Taylor polynomials at w = 0 (exact series arithmetic; none where g has no Taylor
    series with rational coefficients there)."""
    exact = power_series.expansion(g, t, max(SERIES_TERMS))
    if exact is None or any(p < 0 for p in exact):
        return []
    polys = {n: sum((c * t**p for p, c in exact.items() if p < n), sp.S.Zero) for n in SERIES_TERMS}
    out = [
        (f"series {name}<{n}>", sp.horner(poly, t).subs(t, w))
        for n, poly in polys.items()
        if poly.has(t)
    ]
    longest = max(SERIES_TERMS)
    lead = _lead_in_args(polys[longest], t, w)
    if lead is not None:
        out.append((f"series {name}<{longest}>, lead in args", lead))
    return out


def _lead_in_args(poly: sp.Expr, t, w: sp.UnevaluatedExpr) -> sp.Expr | None:
    """`poly` in w with its lowest term c*w**p written c*x*y * w**(p - 1), the constant
    multiplied in before the monomial is formed, or None where that term is constant: where
    |c| > 1, c*x*y can be normal though x*y rounds to a subnormal, which TensorFlow flushes
    to 0 (tanh(x*y)/(x*y)'s f_xy is -4/3*x*y + ... near x*y = 0)."""
    lowest = min(sp.Poly(poly, t).monoms())[0]
    if lowest == 0:
        return None
    c = poly.coeff(t, lowest)
    rest = sp.expand(poly - c * t**lowest)
    lead = sp.UnevaluatedExpr(c * w.args[0]) * w ** (lowest - 1)
    return lead + (sp.horner(rest, t).subs(t, w) if rest != 0 else 0)


def _at_infinity(g: sp.Expr, t, monomial: sp.Expr, other, power: int, name: str) -> list:
    """other**power * g's leading term c*w**a at w -> +inf, with w**a written as the product
    of |arg|**(e*a) over the monomial's args and other's powers gathered: where x*y
    overflows, sqrt(x*y + 1) - 1 is sqrt(x)*sqrt(y), and its f_xx, -y**2/(4*(x*y + 1)**(3/2)),
    is -sqrt(y)/(4*x**(3/2)). Where SymPy finds no such term (g holds exp(w)), g's finite
    limit L != 0, a constant: log(expm1(x*y))'s f_xy tends to 1, and its forms in w are
    inf*0 where x*y overflows; else g's power law c*w**a found by limits (`_power_law`).
    [] where there is none of these."""
    s = sp.Dummy("s", positive=True)
    lead = bounded(SECONDS, None, _leading_term, g.subs(t, 1 / s), s)
    if lead is None:
        lead = bounded(SECONDS, None, _finite_limit, g, t)
    if lead is None:
        lead = bounded(POWER_LAW_SECONDS, None, _power_law, g, t)
    if lead is None:
        return []
    c, a = lead
    exponents = {arg: e * a for arg, e in monomial.as_powers_dict().items()}
    odd = (1 if power > 0 else -1) if power % 2 else 0  # other**power = other**odd*|other|**rest
    exponents[other] = exponents.get(other, 0) + power - odd
    form = c * other**odd * sp.Mul(*(_abs_power(arg, e) for arg, e in exponents.items()))
    label = f"{name} at inf"  # x**(3/2) overflows where x**(-1/2) thrice does not
    return [(label, form)] + [(f"{label}+{more}", f) for more, f in spread_forms(form)]


def _abs_power(arg: sp.Symbol, e: sp.Rational) -> sp.Expr:
    """|arg|**e, kept a power where SymPy would write it as a product: |y|**-3 is |y|/y**4
    for a real y, and y**4 overflows where |y|**-3, spread one 1/|y| at a time, does not."""
    power = sp.Abs(arg) ** e
    return sp.UnevaluatedExpr(sp.Abs(arg)) ** e if power.is_Mul else power


def _at_zero(g: sp.Expr, t, monomial: sp.Expr, other, power: int) -> list:
    """other**power * g's leading term at w -> 0+ where g has a pole or a log there, with w
    written through the args, for where w rounds to 0 or a subnormal: c*w**a (a < 0 whole)
    as the product of the args' powers (y/expm1(x*y) is 1/x where x = y = 1e-170), and
    c*log(w) + k as c*(e*log|x| + f*log|y|) + k for w = x**e*y**f (log(1 - exp(-x*y)) is
    log(x) + log(y) there); [] where g has neither."""
    s = sp.Dummy("s", positive=True)
    lead = bounded(SECONDS, None, _pole_or_log, g.subs(t, s), s)
    if lead is None:
        return []
    c, a, k = lead
    powers = monomial.as_powers_dict()
    if a is None:  # c*log(w) + k
        logs = sp.Add(*(e * sp.log(sp.Abs(arg)) for arg, e in powers.items()))
        form = other**power * (c * logs + k)
    else:
        exponents = {arg: e * a for arg, e in powers.items()}
        exponents[other] = exponents.get(other, 0) + power
        form = c * sp.Mul(*(arg**e for arg, e in exponents.items()))
    label = f"{_name(monomial)} at 0"
    return [(label, form)] + [(f"{label}+{more}", f) for more, f in spread_forms(form)]


def _pole_or_log(expr: sp.Expr, s: sp.Symbol) -> tuple | None:
    """(c, a, 0) with expr ~ c*s**a as s -> 0+, a < 0 whole; (c, None, k) with expr ~
    c*log(s) + k; else None. c and k real numbers, c nonzero."""
    try:
        lead = sp.expand_log(expr.as_leading_term(s), force=True)
    except Exception:  # noqa: BLE001 - SymPy raises many kinds (PoleError, NotImplemented)
        return None
    c = lead.coeff(sp.log(s))
    if c != 0:
        k = sp.expand(lead - c * sp.log(s))
        numbers = c.is_number and k.is_number and c.is_real and k.is_real
        return (c, None, k) if numbers else None
    c, a = lead.as_coeff_exponent(s)
    whole_pole = a.is_Integer and a < 0
    return (c, a, 0) if whole_pole and c.is_number and c.is_real and c != 0 else None


def _finite_limit(g: sp.Expr, t) -> tuple[sp.Expr, sp.Integer] | None:
    """(L, 0) for g's limit L at t -> +inf, a nonzero real number; else None."""
    try:
        limit = sp.limit(g, t, sp.oo)
    except Exception:  # noqa: BLE001 - SymPy raises many kinds (NotImplementedError, PoleError)
        return None
    finite = limit.is_number and limit.is_real and limit.is_finite and limit != 0
    return (limit, sp.S.Zero) if finite else None


def _power_law(g: sp.Expr, t) -> tuple[sp.Expr, sp.Rational] | None:
    """(c, a) with g ~ c*t**a as t -> +inf, found by limits where SymPy has no leading term
    (g holds exp(w)): a = lim t*g'(t)/g(t), a rational, and c = lim g/t**a, a nonzero real
    number; else None. log(sinh(x/y))'s f_yy is y**-2*g(x/y) with g ~ 2w."""
    try:
        a = sp.limit(t * sp.diff(g, t) / g, t, sp.oo)
        if not a.is_Rational:
            return None
        c = sp.limit(g / t**a, t, sp.oo)
    except Exception:  # noqa: BLE001 - SymPy raises many kinds (NotImplementedError, PoleError)
        return None
    finite = c.is_number and c.is_real and c.is_finite and c != 0
    return (c, a) if finite else None


def _leading_term(expr: sp.Expr, s: sp.Symbol) -> tuple[sp.Expr, sp.Rational] | None:
    """(c, a) with expr ~ c * s**-a as s -> 0+, c a nonzero real number; else None (and
    where SymPy cannot expand it: exp(x*y) has no leading term at x*y -> inf)."""
    try:
        c, exponent = expr.as_leading_term(s).as_coeff_exponent(s)
    except Exception:  # noqa: BLE001 - SymPy raises many kinds (PoleError for exp(1/s))
        return None
    if c.has(s) or not c.is_number or c == 0 or not c.is_real or not exponent.is_Rational:
        return None
    return c, -exponent
