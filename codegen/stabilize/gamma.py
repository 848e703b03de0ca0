"""Candidates that write differences of the log-gamma family as one function.

In: a SymPy expression. Out: `(label, form)` pairs where terms `c F_n(u)` and `-c F_n(u + d)` of
a sum (F_-1 = lgamma, F_n = polygamma(n, .)) become `c gamma_difference(n, u, d)`, one form per
such pair. lbeta's `lgamma(a) + lgamma(b) - lgamma(a + b)` has two pairings, and each cancels
where the other does not (b small beside a, or a beside b); a sum `F(u) + F(v) - F(u + v)` also
gets the pairing by size, `F(min(u, v)) + gamma_difference(n, max(u, v), min(u, v))`.
Exact identities: `stabilize` checks each against the exact reference and measures it.
"""

from __future__ import annotations

import itertools

import sympy as sp

from codegen.front.gamma import gamma_difference, gamma_family

MAX_TERMS = 8  # sums with more terms get no pairings


def _gamma_term(term: sp.Expr) -> tuple[sp.Expr, int, sp.Expr] | None:
    """(c, n, u) for a term c*F_n(u) with c a number, else None."""
    coeff, factor = term.as_coeff_Mul()
    if factor.func is sp.loggamma:
        return coeff, -1, factor.args[0]
    if factor.func is sp.polygamma and factor.args[0].is_Integer:
        return coeff, int(factor.args[0]), factor.args[1]
    return None


def _pairings(expr: sp.Add):
    """(rest, c, n, u, d): terms c F_n(u) and -c F_n(u + d), d not a number nor negated (the
    pair the other way round is the same difference), and the sum of the other terms."""
    terms = sp.Add.make_args(expr)
    parsed = [_gamma_term(t) for t in terms]
    for i, j in itertools.permutations(range(len(terms)), 2):
        if parsed[i] is None or parsed[j] is None:
            continue
        (c, n, u), (c2, n2, v) = parsed[i], parsed[j]
        d = sp.expand(v - u)
        if n == n2 and c == -c2 and not (d.is_number or d.could_extract_minus_sign()):
            rest = sp.Add(*(t for k, t in enumerate(terms) if k not in (i, j)))
            yield rest, c, n, u, d


def gamma_difference_forms(expr: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """Each pairing of a sum's gamma-family terms as a `gamma_difference`, and the pairing by
    size where the sum is F(u) + F(v) - F(u + v)."""
    if not expr.is_Add or len(expr.args) > MAX_TERMS:
        return []
    out = []
    for rest, c, n, u, d in _pairings(expr):
        form = rest + c * gamma_difference(n, u, d)
        out.append((f"gamma difference {sp.sstr(u)}", form))
        term = (
            _gamma_term(rest) if rest.is_Mul or rest.func in (sp.loggamma, sp.polygamma) else None
        )
        if term is not None and term[0] == c and term[1] == n and sp.expand(term[2] - d) == 0:
            small, big = sp.Min(u, d), sp.Max(u, d)
            by_size = c * (gamma_family(n, small) + gamma_difference(n, big, small))
            out.append(("gamma difference by size", by_size))
    unique = {sp.srepr(form): (label, form) for label, form in out}
    return list(unique.values())
