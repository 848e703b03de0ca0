"""Every rewrite rule in `codegen.stabilize.rules.STABLE_RULES`, tested three ways.

(a) the expected rewrite on small examples, written by hand from the identity;
(b) an expression the rule (and every other rule) must leave alone;
(c) the original and the rewrite agree to 30 digits at several points.
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np
import pytest
import rule_cases_differences
import rule_cases_logsumexp
import sympy as sp
from sympy.codegen.cfunctions import expm1, hypot, log1p

from codegen.front.functions import erfcx, sigmoid, softplus
from codegen.judge.accuracy import P99_LIMIT, bits_error, reference
from codegen.judge.numeric import run
from codegen.judge.removable import plain
from codegen.lower import lower
from codegen.stabilize.rewriting import TooManyRewrites, innermost_first, rewrite_budget
from codegen.stabilize.rules import FINAL_RULES, STABLE_RULES, Rule, apply_rules

x, y = sp.symbols("x y", real=True)
POINTS_X = (-3.5, -0.75, 0.3, 1.25, 4.0)
POINTS_XY = ((-3.5, 2.0), (-0.75, -0.75), (0.3, -1.5), (1.25, 0.5), (4.0, 9.0))
DIGITS = 30


@dataclass(frozen=True)
class Case:
    rewrites: tuple[tuple[sp.Expr, sp.Expr], ...]  # (original, expected) under STABLE_RULES
    untouched: tuple[sp.Expr, ...]  # no rule at all may change these
    alone: sp.Expr | None = None  # an example the rule rewrites by itself (default: the first)

    def alone_example(self) -> sp.Expr:
        return self.rewrites[0][0] if self.alone is None else self.alone


CASES: dict[str, Case] = {
    "log1p": Case(
        rewrites=((sp.log(1 + x**2), log1p(x**2)), (sp.log(1 + 2 * x**4), log1p(2 * x**4))),
        untouched=(sp.log(2 + x), sp.log(x)),
    ),
    "expm1": Case(
        rewrites=(
            (sp.exp(x) - 1, expm1(x)),
            (1 - sp.exp(x), -expm1(x)),
            (3 * sp.exp(2 * x) - 3, 3 * expm1(2 * x)),
        ),
        untouched=(sp.exp(x) - 2, sp.exp(x) + 1),
    ),
    "softplus": Case(
        rewrites=(
            (sp.log(1 + sp.exp(x)), softplus(x)),
            (log1p(sp.exp(x)), softplus(x)),
            (sp.log(1 + sp.exp(-x)), softplus(-x)),
        ),
        untouched=(log1p(2 * sp.exp(x)), log1p(sp.exp(x) + x)),
        alone=log1p(sp.exp(x)),  # log(1 + exp(x)) needs the log1p rule first
    ),
    "sigmoid": Case(
        rewrites=((1 / (1 + sp.exp(-x)), sigmoid(x)), ((1 + sp.exp(x)) ** -2, sigmoid(-x) ** 2)),
        untouched=(1 / (2 + sp.exp(-x)), (1 + sp.exp(x)) ** 2),
    ),
    "exp_sigmoid": Case(
        rewrites=(
            (sp.exp(x) * sigmoid(-x), sigmoid(x)),
            (sp.exp(x) * sigmoid(-x) ** 2, sigmoid(x) * sigmoid(-x)),
            # exp(2v)*sigmoid(-v)**3, from sigmoid(-v)'': k = 2 of n = 3
            (y * sp.exp(2 * x) * sigmoid(-x) ** 3, y * sigmoid(x) ** 2 * sigmoid(-x)),
            # exp(x + y)/(exp(x + y) + 1)**2: the product's exp goes whole, with no
            # exp(-x - y)*exp(x + y) left for the rule to fire on again
            (sp.exp(x + y) / (sp.exp(x + y) + 1) ** 2, sigmoid(x + y) * sigmoid(-x - y)),
        ),
        untouched=(sp.exp(x) * sigmoid(x), sp.exp(2 * x) * sigmoid(-x)),
    ),
    "sigmoid_complement": Case(
        rewrites=(
            (1 - sigmoid(x), sigmoid(-x)),
            (1 - 2 * sigmoid(x), -sp.tanh(x / 2)),
            (2 * sigmoid(x) - 1, sp.tanh(x / 2)),
        ),
        untouched=(1 - 3 * sigmoid(x), 1 + sigmoid(x)),
    ),
    "log_sigmoid": Case(
        rewrites=((sp.log(sigmoid(x)), -softplus(-x)), (sp.log(sigmoid(-x)), -softplus(x))),
        untouched=(sp.log(3 * sigmoid(x)), sp.log(sigmoid(x) + 2)),
    ),
    "logaddexp": Case(
        rewrites=((sp.log(sp.exp(x) + sp.exp(y)), sp.Max(x, y) + softplus(-sp.Abs(x - y))),),
        # scaled exponentials are no logaddexp (no rule takes two; three are logsumexp's)
        untouched=(sp.log(2 * sp.exp(x) + 2 * sp.exp(y)),),
    ),
    "atan_complement": Case(
        rewrites=(
            (sp.pi / 2 - sp.atan(x), sp.atan2(1, x)),
            (-sp.pi / 2 - sp.atan(x), -sp.atan2(1, -x)),
            (sp.pi - 2 * sp.atan(x), 2 * sp.atan2(1, x)),
        ),
        untouched=(sp.pi - sp.atan(x), 1 - sp.atan(x)),
    ),
    "erfc": Case(
        # erfc(-x) must stay erfc(-x): SymPy's automatic erfc(-x) -> 2 - erfc(x) is the very
        # cancellation the rule exists to avoid.
        rewrites=((1 + sp.erf(x), sp.erfc(-x, evaluate=False)), (1 - sp.erf(x), sp.erfc(x))),
        untouched=(2 + sp.erf(x), 1 + 2 * sp.erf(x)),
    ),
    "one_minus_cos": Case(
        rewrites=(
            (1 - sp.cos(x), 2 * sp.sin(x / 2) ** 2),
            (3 - 3 * sp.cos(x), 6 * sp.sin(x / 2) ** 2),
        ),
        untouched=(1 + sp.cos(x), 2 - sp.cos(x)),
    ),
    "sech_squared": Case(
        rewrites=((1 - sp.tanh(x) ** 2, 4 * sigmoid(2 * x) * sigmoid(-2 * x)),),
        untouched=(1 + sp.tanh(x) ** 2, 1 - sp.tanh(x) ** 3),
    ),
    "hypot": Case(
        rewrites=(
            (sp.sqrt(x**2 + y**2), hypot(x, y)),
            ((x**2 + y**2) ** sp.Rational(-3, 2), hypot(x, y) ** -3),
        ),
        untouched=(sp.sqrt(x**2 + 2 * y**2), sp.sqrt(x**2 + y**3), (x**2 + y**2) ** 2),
    ),
    "log_cosh": Case(
        rewrites=((sp.log(sp.cosh(x)), sp.Abs(x) + softplus(-2 * sp.Abs(x)) - sp.log(2)),),
        untouched=(sp.log(sp.sinh(x) + 2), sp.cosh(x)),
    ),
    "log_erfc": Case(
        rewrites=(
            (sp.log(sp.erfc(x)), sp.log(erfcx(x)) - x**2),
            (sp.log(sp.erfc(2 * x) / 2), sp.log(erfcx(2 * x) / 2) - 4 * x**2),
        ),
        untouched=(sp.log(x * sp.erf(x)), sp.log(x + sp.erfc(x)), sp.erfc(x)),
    ),
    "pow_log1p": Case(
        rewrites=(
            ((1 + x) ** y, sp.exp(y * log1p(x))),
            ((1 + x / 2) ** (2 * y), sp.exp(2 * y * log1p(x / 2))),
        ),
        untouched=((1 + x) ** 3, (2 + x) ** y, x**y),
    ),
    "erfc_exp": Case(
        rewrites=(
            (sp.exp(-(x**2)) / sp.erfc(x), 1 / erfcx(x)),
            (y * sp.exp(-(x**2) + y) / sp.erfc(x) ** 2, y * sp.exp(x**2 + y) / erfcx(x) ** 2),
            (sp.exp(x**2 / 2) * sp.erfc(x / sp.sqrt(2)), erfcx(x / sp.sqrt(2))),
            (sp.exp(x) * sp.erfc(x), sp.exp(x - x**2) * erfcx(x)),
        ),
        untouched=(1 / sp.erfc(x), sp.erfc(x) ** 2, sp.exp(x) / (1 + sp.erfc(x))),
    ),
    "hypot_const": Case(
        rewrites=(
            (sp.sqrt(x**2 + 4), hypot(2, x)),
            (1 / sp.sqrt(x**2 + 1), 1 / hypot(1, x)),
        ),
        untouched=(sp.sqrt(x**2 - 4), sp.sqrt(x**3 + 1), (x**2 + 1) ** 2),
    ),
    "inverse_hyperbolic": Case(
        rewrites=(
            (sp.log(x + sp.sqrt(x**2 + 1)), sp.asinh(x)),
            (sp.log(2 * x + sp.sqrt(4 * x**2 + 9)), sp.asinh(2 * x / 3) + sp.log(9) / 2),
        ),
        untouched=(sp.log(x + sp.sqrt(x**2 + y)), sp.log(x + sp.sqrt(x**3 + 1))),
        alone=sp.log(x + sp.sqrt(x**2 - 1)),
    ),
    "pow_expm1": Case(
        rewrites=(
            ((x**2 + 2) ** y - 1, expm1(y * sp.log(x**2 + 2))),
            (2**x - 1, expm1(x * sp.log(2))),
            (1 - 2 ** (x * y), -expm1(x * y * sp.log(2))),
        ),
        untouched=(x**2 - 1, x**y - 2),
    ),
    "abs_ratio": Case(
        rewrites=(
            (x**2 / sp.Abs(x), sp.Abs(x)),
            (y * sp.exp(x) / sp.Abs(y), sp.exp(x) * sp.sign(y)),
        ),
        untouched=(y * sp.Abs(x), x / sp.Abs(y)),
    ),
    "log_exp_factor": Case(
        rewrites=(
            (sp.log(sp.exp(x) + 2), x + log1p(2 * sp.exp(-x))),
            (sp.log(sp.exp(2 * x) + y**2), 2 * x + log1p(y**2 * sp.exp(-2 * x))),
            # a magnitude, as split logs of a quotient write it: exp(x) > 0 comes out whole
            (sp.log(sp.Abs(y - sp.exp(x))), x + sp.log(sp.Abs(1 - y * sp.exp(-x)))),
        ),
        untouched=(sp.log(2 * sp.exp(x) + 3), sp.log(x + sp.exp(2))),
    ),
    "cosh_minus_one": Case(
        rewrites=(
            (sp.cosh(x) - 1, 2 * sp.sinh(x / 2) ** 2),
            (3 - 3 * sp.cosh(2 * y), -6 * sp.sinh(y) ** 2),
        ),
        untouched=(sp.cosh(x) - 2, sp.cosh(x) + 1),
    ),
    "log_sinh": Case(
        rewrites=(
            (sp.log(sp.sinh(x**2)), x**2 + sp.log(-expm1(-2 * x**2)) - sp.log(2)),
            (sp.log(sp.Abs(sp.sinh(x))), sp.Abs(x) + sp.log(-expm1(-2 * sp.Abs(x))) - sp.log(2)),
        ),
        untouched=(sp.log(sp.sinh(x) + x), sp.sinh(sp.log(x))),
    ),
    "log_tanh": Case(
        rewrites=(
            # log_sinh and log_cosh finish it; expm1 takes the 1 - exp(-2x) log_sinh leaves
            (sp.log(sp.tanh(x**2)), sp.log(-expm1(-2 * x**2)) - softplus(-2 * x**2)),
            (
                sp.log(sp.Abs(sp.tanh(x))),
                sp.log(-expm1(-2 * sp.Abs(x))) - softplus(-2 * sp.Abs(x)),
            ),
        ),
        untouched=(sp.log(sp.tanh(x) + x), sp.tanh(sp.log(x))),
    ),
    "log_expm1": Case(
        rewrites=(
            (sp.log(expm1(x**2)), x**2 + sp.log(-expm1(-(x**2)))),
            (sp.log(sp.exp(2 * x**2) - 1), 2 * x**2 + sp.log(-expm1(-2 * x**2))),  # after expm1
            (sp.log(sp.Abs(expm1(x))), sp.Max(x, 0) + sp.log(-expm1(-sp.Abs(x)))),
        ),
        untouched=(sp.log(expm1(x) + x), sp.log(-expm1(-x))),
    ),
    "hypot_many": Case(
        rewrites=(
            (sp.sqrt(x**2 + y**2 + 1), hypot(hypot(1, x), y)),
            (1 / sp.sqrt(x**2 + y**2 + 4), 1 / hypot(hypot(2, x), y)),
        ),
        untouched=(sp.sqrt(x**2 + y**2 + x), sp.sqrt(x**2 + y**3 + 1)),
    ),
    "softplus_reflection": Case(
        rewrites=(
            (softplus(x) - x, softplus(-x)),
            (2 * softplus(x) - 2 * x + y, y + 2 * softplus(-x)),
            (
                softplus(x) - x * y,
                softplus(-sp.Abs(x)) + sp.Max(x, 0) * (1 - y) - sp.Min(x, 0) * y,
            ),
            (  # a label that is a probability: the Bernoulli entropy of logit x
                softplus(x) - x * sigmoid(x),
                softplus(-sp.Abs(x)) + sp.Max(x, 0) * sigmoid(-x) - sp.Min(x, 0) * sigmoid(x),
            ),
            (
                softplus(x) - x * sigmoid(y),
                softplus(-sp.Abs(x)) + sp.Max(x, 0) * sigmoid(-y) - sp.Min(x, 0) * sigmoid(y),
            ),
        ),
        untouched=(
            softplus(x) + x,
            softplus(x) - y,
            softplus(-x) + x * (1 - y),
            softplus(x) - x * sp.exp(y),  # not a polynomial in args and sigmoids
        ),
    ),
    "log_ratio": Case(
        rewrites=(
            (sp.log(x**2 + y**2) - sp.log(x**2), log1p(y**2 / x**2)),
            (
                2 * sp.log(x**2 + 2 * y**2) - 2 * sp.log(x**2 + y**2),
                2 * log1p(y**2 / (x**2 + y**2)),
            ),
        ),
        untouched=(sp.log(x) - sp.log(y), sp.log(x) + sp.log(y)),
    ),
    "log_exp_product": Case(
        rewrites=(
            (sp.log(x**2 * sp.exp(x)), x + sp.log(x**2)),
            (sp.log(x**2 * sp.exp(-y)), -y + sp.log(x**2)),
        ),
        untouched=(sp.log(x + sp.exp(2)), sp.log(x * sp.exp(x) * sp.exp(y))),
    ),
    "exp_difference": Case(
        rewrites=(
            (sp.exp(x) - sp.exp(y), -sp.sign(x - y) * sp.exp(sp.Max(x, y)) * expm1(-sp.Abs(x - y))),
            (
                2 * sp.exp(x) - 2 * sp.exp(y) + x,
                x - 2 * sp.sign(x - y) * sp.exp(sp.Max(x, y)) * expm1(-sp.Abs(x - y)),
            ),
        ),
        untouched=(sp.exp(x) + sp.exp(y), sp.exp(x) - 2 * sp.exp(y)),
    ),
    "exp_sum_factor": Case(
        rewrites=(
            (
                x * sp.exp(x) - y * sp.exp(y),
                sp.exp(sp.Max(x, y))
                * (x * sp.exp(x - sp.Max(x, y)) - y * sp.exp(y - sp.Max(x, y))),
            ),
        ),
        untouched=(x * sp.exp(x) + sp.exp(2 * x), x * sp.exp(x) * sp.exp(y)),
    ),
    "sum_to_product": Case(
        rewrites=(
            (sp.cosh(x) - sp.cosh(y), 2 * sp.sinh(x / 2 - y / 2) * sp.sinh(x / 2 + y / 2)),
            (x + 3 * sp.sin(x) - 3 * sp.sin(2 * y), x + 6 * sp.sin(x / 2 - y) * sp.cos(x / 2 + y)),
            (sp.cos(x) - sp.cos(y), -2 * sp.sin(x / 2 - y / 2) * sp.sin(x / 2 + y / 2)),
        ),
        untouched=(sp.cosh(x) + sp.cosh(y), sp.cos(x) - 2 * sp.cos(y)),
    ),
    "extreme_minus_arg": Case(
        rewrites=(
            (sp.Max(x, y) - x + 1, sp.Max(0, y - x) + 1),
            (2 * sp.Min(x, y, 1) - 2 * y + x, x + 2 * sp.Min(0, 1 - y, x - y)),
        ),
        untouched=(sp.Max(x, y) - 2 * x + 1, sp.Max(x, y) + x + 1, sp.Max(x, y) - x),
    ),
    "erf_saturate": Case(
        rewrites=(
            (sp.erf(x), sp.erf(sp.Max(-6, sp.Min(6, x)))),
            (sp.erf(x - y), sp.erf(sp.Max(-6, sp.Min(6, x - y)))),
        ),
        untouched=(sp.erf(sp.Max(-6, sp.Min(6, x))), sp.erfc(x)),
    ),
    "acosh_one_plus": Case(
        rewrites=(
            (sp.acosh(1 + x**2), log1p(x**2 + sp.Abs(x) * hypot(sp.sqrt(2), x))),
            (sp.acosh(2 * y**2 + 1), log1p(2 * y**2 + sp.sqrt(2 * y**2) * sp.sqrt(2 * y**2 + 2))),
        ),
        untouched=(sp.acosh(x + 2), sp.acosh(x)),
    ),
    "arc_near_one": Case(
        rewrites=(
            # arguments in [-1, 1] at every test point
            (sp.acos(1 - x**2 / 16), 2 * sp.asin(sp.sqrt(2) * sp.Abs(x) / 8)),
            (sp.acos(y**2 / 100 - 1), sp.pi - 2 * sp.asin(sp.sqrt(2) * sp.Abs(y) / 20)),
            (sp.asin(1 - x**2 / 16), sp.pi / 2 - 2 * sp.asin(sp.sqrt(2) * sp.Abs(x) / 8)),
        ),
        untouched=(sp.acos(x), sp.acos(2 - x), sp.asin(x / 2)),
    ),
    "log_complement": Case(
        rewrites=(
            (sp.log(sp.erf(x**2 + 1)), log1p(-sp.erfc(x**2 + 1))),
            (sp.log(sp.cos(y / 8)), log1p(-2 * sp.sin(y / 16) ** 2)),
        ),
        untouched=(sp.log(x**2), sp.log(sp.sin(x))),
    ),
}

CASES.update(
    {
        name: Case(rewrites, cases.UNTOUCHED[name])
        for cases in (rule_cases_logsumexp, rule_cases_differences)
        for name, rewrites in cases.REWRITES.items()
    }
)
RULES = {rule.name: rule for rule in (*STABLE_RULES, *FINAL_RULES)}


def test_every_rule_has_cases():
    assert set(CASES) == set(RULES)
    assert len(RULES) == len(STABLE_RULES) + len(FINAL_RULES), "rule names must be unique"


def _plain(expr: sp.Expr) -> sp.Expr:
    """`expr` in functions SymPy's evalf knows."""
    return plain(expr).replace(erfcx, lambda u: sp.exp(u**2) * sp.erfc(u))


def _at(expr: sp.Expr, point) -> mpmath.mpf:
    values = dict(zip((x, y), map(sp.Rational, point), strict=False))
    return mpmath.mpf(sp.N(_plain(expr).subs(values), DIGITS, maxn=400))


def _points(expr: sp.Expr):
    return POINTS_XY if y in expr.free_symbols else [(p,) for p in POINTS_X]


def _assert_equal_values(original: sp.Expr, rewritten: sp.Expr) -> None:
    with mpmath.workdps(DIGITS + 10):
        for point in _points(original):
            a, b = _at(original, point), _at(rewritten, point)
            assert mpmath.almosteq(a, b, rel_eps=mpmath.mpf(10) ** -(DIGITS - 5)), (
                f"{original} = {a} but {rewritten} = {b} at {point}"
            )


@pytest.mark.parametrize("name", sorted(CASES))
def test_expected_rewrite(name):
    for original, expected in CASES[name].rewrites:
        out, used = apply_rules(original)
        assert out == expected, f"{original}: expected {expected}, got {out}"
        assert name in used


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_fires_alone(name):
    """The rule by itself changes its first example, and reports only its own name."""
    rule: Rule = RULES[name]
    original = CASES[name].alone_example()
    assert rule.rewrite(original) is not None
    out, used = apply_rules(original, (rule,), final=())
    assert out != original
    assert used == (name,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_leaves_alone(name):
    for expr in CASES[name].untouched:
        assert RULES[name].rewrite(expr) is None
        assert apply_rules(expr, final=()) == (expr, ())


@pytest.mark.parametrize("name", sorted(CASES))
def test_rewrite_equals_original(name):
    for original, expected in CASES[name].rewrites:
        out, _ = apply_rules(original)
        _assert_equal_values(original, out)
        _assert_equal_values(original, expected)


def test_rules_apply_bottom_up_inside_larger_expressions():
    """Rules reach nested nodes: the softplus derivative chain rewrites to sigmoid forms."""
    f1 = sp.diff(sp.log(1 + sp.exp(x)), x)  # exp(x)/(1 + exp(x))
    out, used = apply_rules(f1)
    assert out == sigmoid(x)
    assert "sigmoid" in used and "exp_sigmoid" in used
    out, used = apply_rules(sp.sin(x) + sp.log(1 + sp.exp(x)) * sp.cos(sp.exp(x) - 1))
    assert out == sp.sin(x) + softplus(x) * sp.cos(expm1(x))
    assert used == ("expm1", "log1p", "softplus")


def test_outermost_first_fires_the_outer_rule_where_both_match():
    """log(1 - exp(-x)): innermost first, expm1 takes the inner sum (accurate for small x);
    outermost first, log1p takes the log (accurate for large x). Both are offered."""
    inner, _ = apply_rules(sp.log(1 - sp.exp(-x)))
    outer, used = apply_rules(sp.log(1 - sp.exp(-x)), outermost=True)
    assert inner == sp.log(-expm1(-x))
    assert outer == log1p(-sp.exp(-x)) and used == ("log1p",)
    again, _ = apply_rules(sp.log(sp.exp(x) - 1), outermost=True)
    assert again == x + log1p(-sp.exp(-x))
    # innermost, the difference of exps is a product first, and its exp leaves the log
    assert apply_rules(sp.log(sp.exp(x) - sp.exp(y)))[0] == sp.Max(x, y) + sp.log(
        -sp.sign(x - y) * expm1(-sp.Abs(x - y))
    )
    assert apply_rules(sp.log(sp.exp(x) - sp.exp(y)), outermost=True)[0] == x + log1p(
        -sp.exp(y - x)
    )


def test_rules_that_leave_a_log1mexp_offer_both_orders():
    """log_sinh and log_expm1 leave log(1 - exp(-a)) for the two orders to finish: past a
    = 37, -expm1(-a) rounds to 1, and only log1p(-exp(-a)) keeps -exp(-a)."""
    a = 2 * x
    assert apply_rules(sp.log(sp.sinh(x)))[0] == x + sp.log(-expm1(-a)) - sp.log(2)
    assert apply_rules(sp.log(sp.sinh(x)), outermost=True)[0] == x + log1p(-sp.exp(-a)) - sp.log(2)
    assert apply_rules(sp.log(expm1(x)), outermost=True)[0] == x + log1p(-sp.exp(-x))
    exact = reference(sp.log(sp.tanh(x)), (x,), np.array([[40.0]]), "float64")
    outer, _ = apply_rules(sp.log(sp.tanh(x)), outermost=True)
    assert bits_error(_float64(outer, (40.0,)), exact, "float64")[0] <= P99_LIMIT


def test_innermost_first_reaches_a_fixed_point():
    out, used = innermost_first(sp.log(1 + sp.exp(x)), STABLE_RULES)
    assert out == softplus(x)
    again, more = apply_rules(out)
    assert again == out and more == ()


_f, _g = sp.Function("f"), sp.Function("g")
SWAP = (
    Rule("f_to_g", "f(u) = g(u)", lambda node: _g(*node.args) if node.func is _f else None),
    Rule("g_to_f", "g(u) = f(u)", lambda node: _f(*node.args) if node.func is _g else None),
)
GROW = (Rule("grow", "f(u) = f(u + 1)", lambda n: _f(n.args[0] + 1) if n.func is _f else None),)


def test_rules_that_undo_each_other_end_where_the_cycle_closes():
    """Before, each of the nested rounds went around the cycle again: 20**8 rewrites."""
    with rewrite_budget(50):
        out, used = innermost_first(_f(x), SWAP)
    assert (out, used) == (_g(x), ["f_to_g"])


def test_a_cycle_of_the_library_rules_ends_too():
    """abs_ratio took this factor of y*(sqrt(1 + (x/y)**2) - 1)'s derivatives around a cycle
    of four forms, and its build past 300 s."""
    u = y / x
    with rewrite_budget(200):
        innermost_first(-sp.Abs(u) * hypot(1, u) * u**2, STABLE_RULES)


def test_rules_that_grow_their_input_stop_at_the_rewrite_budget():
    with rewrite_budget(100), pytest.raises(TooManyRewrites):
        innermost_first(_f(x), GROW)
    assert apply_rules(_f(x), GROW, ()) == (_f(x), ())  # past the budget: nothing offered


REFUSED = (
    # a rule whose own SymPy calls raise, as _softmax's factor_terms did on a Max of scaled args
    Rule("raises", "f(u) = f(u)", lambda n: sp.Max(n, sp.I) if n.func is _f else None),
    # a rule whose output the parent node refuses: Max asks its args to be comparable
    Rule("to_imaginary", "g(u) = I", lambda n: sp.I if n.func is _g else None),
)


def test_a_rule_sympy_refuses_is_not_applied_and_raises_nothing():
    """x/tanh(x/y) exited 123: a scaled form's Max of args SymPy cannot compare made a rule,
    and the rebuilding of the Max around a rewritten child, raise ValueError. Such a rewrite
    is not made; the rest of the expression is still rewritten."""
    with pytest.raises(ValueError):
        sp.Max(_f(x), sp.I)
    assert innermost_first(_f(x) + _g(y), REFUSED[:1]) == (_f(x) + _g(y), [])
    out, used = innermost_first(sp.Max(_g(x), y) + _g(y), REFUSED[1:])
    assert out == sp.Max(_g(x), y) + sp.I and used == ["to_imaginary"]


def test_used_names_are_sorted_and_unique():
    expr = sp.log(1 + sp.exp(x)) + sp.log(1 + sp.exp(2 * x)) + (sp.exp(x) - 1)
    _, used = apply_rules(expr)
    assert list(used) == sorted(set(used))


# Why each rule exists: a point where the original loses every digit in float64 and the
# rewrite, computed op by op as TensorFlow will compute it, keeps the promise there (at most
# P99_LIMIT bits: NumPy's exp, log, ... round differently on different processors, so no
# tighter ulp count holds on every machine).
UNSTABLE_AT = {
    "log1p": (sp.log(1 + x**2), (1e-10,)),
    "expm1": (sp.exp(x) - 1, (1e-20,)),
    "softplus": (sp.log(1 + sp.exp(x)), (800.0,)),
    "sigmoid": (sp.exp(x) / (1 + sp.exp(x)), (800.0,)),
    "exp_sigmoid": (sp.exp(x) * sigmoid(-x), (800.0,)),
    "sigmoid_complement": (1 - sigmoid(x), (40.0,)),
    "log_sigmoid": (sp.log(sigmoid(x)), (-800.0,)),
    "logaddexp": (sp.log(sp.exp(x) + sp.exp(y)), (800.0, 799.0)),
    "erfc": (1 + sp.erf(x), (-10.0,)),
    "atan_complement": (sp.pi / 2 - sp.atan(x), (1e20,)),
    "one_minus_cos": (1 - sp.cos(x), (1e-9,)),
    "sech_squared": (1 - sp.tanh(x) ** 2, (20.0,)),
    "hypot": (sp.sqrt(x**2 + y**2), (1e200, 1e200)),
    "log_cosh": (sp.log(sp.cosh(x)), (800.0,)),
    "log_erfc": (sp.log(sp.erfc(x)), (30.0,)),
    "erfc_exp": (sp.exp(-(x**2)) / sp.erfc(x), (30.0,)),
    "pow_log1p": ((1 + x) ** y, (1e-20, 1e20)),
    "hypot_const": (1 / sp.sqrt(x**2 + 1), (1e200,)),
    "inverse_hyperbolic": (sp.log(x + sp.sqrt(x**2 + 1)), (-1e10,)),
    "pow_expm1": (x**y - 1, (2.0, 1e-20)),
    "abs_ratio": (x**2 / sp.Abs(x), (1e-200,)),
    "erf_saturate": (sp.erf(x), (1e200,)),
    "log_exp_factor": (sp.log(sp.exp(x) + 2), (800.0,)),
    "hypot_many": (sp.sqrt(x**2 + y**2 + 1), (1e200, 1e200)),
    # expm1(800) overflows; the value is 800 - 3.6e-348
    "log_expm1": (sp.log(expm1(x)), (800.0,)),
    # cosh(1e-9) rounds to 1; the value is 5e-19
    "cosh_minus_one": (sp.cosh(x) - 1, (1e-9,)),
    # sinh(800) overflows; the value is 800 - log(2)
    "log_sinh": (sp.log(sp.sinh(x)), (800.0,)),
    # tanh(30) rounds to 1, and log(1) is 0; the value is -1.7e-26
    "log_tanh": (sp.log(sp.tanh(x)), (30.0,)),
    "softplus_reflection": (softplus(x) - x, (40.0,)),
    "log_ratio": (sp.log(x**2 + y**2) - sp.log(x**2), (1e10, 1.0)),
    "log_exp_product": (sp.log(x**2 * sp.exp(x)), (800.0,)),
    "exp_difference": (sp.exp(x) - sp.exp(y), (1e-10, 2e-10)),
    "sum_to_product": (sp.cosh(x) - sp.cosh(y), (1e-10, 2e-10)),
    # log(exp(x) + exp(y)) is 40.0 exactly, and less x, 0: softplus(-39) is 1.2e-17
    "extreme_minus_arg": (sp.log(sp.exp(x) + sp.exp(y)) - x, (40.0, 1.0)),
    # exp(-760) flushes to 0 and x**20 times it is 4e-273: the y term alone is left
    "exp_sum_factor": (x**20 * sp.exp(x) - y * sp.exp(y), (-760.0, -700.0)),
    # 1 + 1e-20 rounds to 1, and acosh(1) is 0; the value is sqrt(2e-20)
    "acosh_one_plus": (sp.acosh(1 + x**2), (1e-10,)),
    # 1 - 1e-20 rounds to 1, and acos(1) is 0; the value is sqrt(2e-20)
    "arc_near_one": (sp.acos(1 - x**2), (1e-10,)),
    # erf(10) rounds to 1, and log(1) is 0; the value is -erfc(10) = -2.1e-45
    "log_complement": (sp.log(sp.erf(x)), (10.0,)),
    **rule_cases_logsumexp.UNSTABLE_AT,
    **rule_cases_differences.UNSTABLE_AT,
}


def _float64(expr: sp.Expr, point) -> np.ndarray:
    symbols = (x, y)[: len(point)]
    program = lower([expr], {s: s.name for s in symbols})
    columns = {s.name: np.array([v]) for s, v in zip(symbols, point, strict=True)}
    return run(program, columns, "float64")[0]


def test_every_rule_has_an_unstable_point():
    assert set(UNSTABLE_AT) == set(RULES)


@pytest.mark.parametrize("name", sorted(UNSTABLE_AT))
def test_rewrite_is_stable_where_the_original_is_not(name):
    """Of the two orders the stabilizer offers, one keeps the promise there: log_tanh's
    innermost log(-expm1(-60)) rounds to 0 as the original does, its outermost
    log1p(-exp(-60)) does not."""
    original, point = UNSTABLE_AT[name]
    rewritten = [apply_rules(original, outermost=outer) for outer in (False, True)]
    assert all(name in used for _, used in rewritten)
    symbols = (x, y)[: len(point)]
    exact = reference(original, symbols, np.array([point]), "float64")
    assert np.isfinite(exact).all() and (exact != 0).all()
    assert bits_error(_float64(original, point), exact, "float64")[0] > 10
    errors = [bits_error(_float64(form, point), exact, "float64")[0] for form, _ in rewritten]
    assert min(errors) <= P99_LIMIT


def test_logsumexp_rules_leave_sums_whose_max_sympy_refuses():
    """SymPy's Max asks its args to be real, and softplus(2*w) of an unevaluated w is not
    known to be (the monomial forms substitute one): the rules leave such sums alone."""
    w = sp.UnevaluatedExpr(x * y)
    total = 1 + sp.exp(2 * w) + sp.exp(3 * w)
    with pytest.raises(ValueError):
        sp.Max(softplus(2 * w), 3 * w)
    assert RULES["logsumexp"].rewrite(sp.log(total)) is None
    assert RULES["softmax"].rewrite(1 / total) is None
    assert RULES["logsumexp"].rewrite(sp.log(1 + sp.exp(2 * x) + sp.exp(3 * x))) is not None
