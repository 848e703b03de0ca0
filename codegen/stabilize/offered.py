"""The candidate forms offered for one partial: those that equal it.

In: the spec and one partial. Out: (label, form) pairs, the derivative as SymPy wrote it
first, then every closed form of `candidates` and every sign-branch form of `exp_branches`
that equals the derivative at the check points (a `Regimes` at the points each piece owns);
and, once its lower orders are chosen, the derivatives of their forms that equal it (`derived`).
Args whose domain is nonnegative are given to the rewrites as nonnegative symbols, and the
forms are written in the spec's symbols again.
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from codegen.derive import Partial
from codegen.front.spec import Spec
from codegen.lower import Regimes
from codegen.stabilize.candidates import candidates
from codegen.stabilize.derived import derived_forms
from codegen.stabilize.exp_branches import sign_branch_forms
from codegen.stabilize.measuring import equals_exact
from codegen.stabilize.refinements import lowers


def valid_candidates(spec: Spec, partial: Partial) -> list[tuple[str, object]]:
    """The closed candidate forms of one partial that equal it. A rewrite the reference
    cannot evaluate (SymPy's simplify writes sign(x) as a Piecewise on x == 0) is not
    offered; the derivative as SymPy wrote it always is."""
    if isinstance(partial.expr, sp.Piecewise):  # each piece gets its candidates in `choose`
        return [("sympy", partial.expr)]
    known = _domain_symbols(spec)
    back = {v: k for k, v in known.items()}
    args = tuple(known.get(a, a) for a in spec.arg_symbols)
    out = []
    written = partial.expr.xreplace(known)
    for label, form in [*candidates(written, args), *sign_branch_forms(written, args)]:
        form = _restored(form, back)
        lowered = not known or lowers(form)  # only forms written under assumptions may not
        if form == partial.expr or (lowered and _valid(form, partial.expr, spec, known)):
            out.append((label, form))
    return out if out and out[0][0] == "sympy" else [("sympy", partial.expr), *out]


def valid_derived(spec: Spec, partial: Partial, choices) -> list[tuple[str, sp.Expr]]:
    """The derivatives of the forms chosen for a partial's ancestors (`derived`, `choices`
    the choices made so far) that equal it and lower."""
    if isinstance(partial.expr, sp.Piecewise):
        return []
    chosen = {c.index: (c.chosen.label, c.chosen.form) for c in choices}
    known = _domain_symbols(spec)
    return [
        (label, form)
        for label, form in derived_forms(partial, chosen, spec.arg_symbols)
        if lowers(form) and _valid(form, partial.expr, spec, known)
    ]


def _restored(form, back: dict):
    """`form` with the args the domain made positive as the spec's own symbols again."""
    if isinstance(form, Regimes):
        pieces = tuple(f.xreplace(back) for f in form.forms)
        return replace(form, arg=form.arg.xreplace(back), forms=pieces)
    return form.xreplace(back)


def _valid(form, exact: sp.Expr, spec: Spec, known: dict) -> bool:
    """Equal to the derivative at the check points, or (a form that used the domain's
    assumptions) at those inside the domain."""
    if _checked_equal(form, exact, spec):
        return True
    return bool(known) and _checked_equal(form, exact, spec, in_domain=True)


def _domain_symbols(spec: Spec) -> dict[sp.Symbol, sp.Symbol]:
    """Each arg whose domain is nonnegative, as a symbol SymPy knows to be nonnegative (or
    positive, where the domain excludes 0), so rewrites may use it (sqrt(x**2 + y) =
    hypot(x, sqrt(y)) for y >= 0; sign(x)**2/x**2 = 1/x**2 for x >= 1e-3, which lets the
    terms of log(x**2 + y**2) - 2*log(abs(x))'s f_xx cancel over a common denominator)."""
    return {
        a: sp.Symbol(a.name, positive=True) if lo > 0 else sp.Symbol(a.name, nonnegative=True)
        for a, (lo, _) in zip(spec.arg_symbols, spec.domain)
        if lo >= 0
    }


def _checked_equal(form, exact: sp.Expr, spec: Spec, in_domain: bool = False) -> bool:
    try:
        return equals_exact(form, exact, spec, in_domain)
    except TypeError:
        return False
