"""Sums of logs that cancel, as one log1p: log(x + y) - log(x) = log1p(y/x).

In: a SymPy form. Out: `(label, form)` candidates in which a sum of logs with integer
coefficients of both signs, c1*log(A1) + c2*log(A2) + ..., is computed as log1p(u), where
u = A1**c1 * A2**c2 * ... - 1 is cancelled into one fraction, and, in a second candidate,
with its powers paired, a**k/b**k as (a/b)**k:

- log(x + y) - log(x) = log1p(y/x);
- log(x**2 + y**2) - 2*log(|x|) = log1p(y**2/x**2) = log1p((y/x)**2), and where |y/x| > 1
  (its square may overflow) 2*log|y/x| + log1p((x/y)**2).

Where the logs are nearly equal their difference cancels, and no form of the logs computes
it; `cancel` finds u exactly, and log1p keeps its small value. Where they are far apart
the logs themselves are accurate: `regimes` picks between the forms by measurement. The
identity holds where every A is positive, which is where the real logs are defined; the
stabilizer checks each candidate against the derivative and measures it.
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import log1p

from codegen.stabilize.products import ratio_forms
from codegen.timebound import bounded

LOG_SECONDS = 1.0  # for the rewrites of one form
MAX_LOGS = 4  # sums with more log terms are left alone
MAX_GROWTH = 3  # u may be at most this many times the size of the logs it replaces


def _logs_of(node: sp.Add) -> tuple[list[tuple[int, sp.Expr]], list[sp.Expr]]:
    """(coefficient, argument) of the terms c*log(A) with c an integer, and the other terms."""
    logs, rest = [], []
    for term in node.args:
        coeff, factor = term.as_coeff_Mul()
        if factor.func is sp.log and coeff.is_Integer:
            logs.append((int(coeff), factor.args[0]))
        else:
            rest.append(term)
    return logs, rest


def _combined(node: sp.Expr) -> sp.Expr:
    """A sum with logs of both signs, its logs as one log1p (or unchanged)."""
    if not node.is_Add:
        return node
    logs, rest = _logs_of(node)
    signs = {c > 0 for c, _ in logs}
    if not 2 <= len(logs) <= MAX_LOGS or signs != {True, False}:
        return node
    ratio = sp.Mul(*(a**c for c, a in logs))
    u = sp.factor(sp.cancel(sp.together(ratio - 1)))
    if sp.count_ops(u) > MAX_GROWTH * (sp.count_ops(sp.Add(*(sp.log(a) for _, a in logs))) + 1):
        return node
    return sp.Add(*rest) + log1p(u)


def _large_power(node: sp.Expr) -> sp.Expr:
    """log1p(p**k), k even, as log1p(p**k) where |p| <= 1 and k*log|p| + log1p(p**-k) beyond:
    p**k overflows where its log1p is a modest number."""
    if node.func is not log1p or not node.args[0].is_Pow:
        return node
    p, k = node.args[0].as_base_exp()
    if not (k.is_Integer and k > 0 and k % 2 == 0) or p.is_number:
        return node
    beyond = k * sp.log(sp.Abs(p)) + log1p(sp.UnevaluatedExpr(1 / p) ** k)
    return sp.Piecewise((node, sp.Abs(p) <= 1), (beyond, True))


def _bare(node: sp.Expr) -> sp.Expr:
    """`node` without the UnevaluatedExpr that keeps a product from being regrouped."""
    return node.args[0] if isinstance(node, sp.UnevaluatedExpr) else node


def _split(node: sp.log) -> sp.Expr:
    """log of a piecewise as a piecewise of logs; log of a product as the sum of the logs of
    its factors' magnitudes (log(a**k) as k*log|a|), equal wherever the product is positive."""
    inner = _bare(node.args[0])
    if isinstance(inner, sp.Piecewise):
        return sp.Piecewise(*((_split(sp.log(e)), c) for e, c in inner.args))
    if not inner.is_Mul:
        return node
    coeff, factors = inner.as_coeff_mul()
    terms = [sp.log(abs(coeff))] if abs(coeff) != 1 else []
    for factor in factors:
        base, power = _bare(factor).as_base_exp()
        base = _bare(base)
        part = _split(sp.log(base)) if base.is_Mul else sp.log(sp.Abs(base))
        terms.append(power * part)
    return sp.Add(*terms)


def split_log_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """`expr` with each log of a product or of a piecewise split (`_split`): y**2/(x + h)
    flushes to 0 at x = 1e307, y = 0.01, where 2*log|y| - log(x + h) is -712."""
    split = expr.replace(lambda n: n.func is sp.log, _split)
    return [("split logs", split)] if split != expr else []


def _forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    form = expr.replace(lambda n: n.is_Add, _combined)
    if form == expr:
        return []
    out = [("log ratio", form), *((f"log ratio+{n}", f) for n, f in ratio_forms(form))]
    for label, paired in out[1:]:
        large = paired.replace(lambda n: n.func is log1p, _large_power)
        if large != paired:
            out.append((f"{label}+large powers", large))
    return out


def log_ratio_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """The log1p candidates of `expr` (none if it has fewer than two logs, or past the time
    bound)."""
    if len(expr.atoms(sp.log)) < 2:
        return []
    return bounded(LOG_SECONDS, [], _forms, expr)
