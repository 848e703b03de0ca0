"""A sum of two exp terms of different args factored by the larger exp (rule exp_sum_factor):
where both exps overflow, which term wins, and with which sign, depends on both args, which
no regimes on one arg can tell. Written after the rule (developed on x*exp(x) - y*exp(y)).
"""

from __future__ import annotations

from codegen.derive import derive
from codegen.front.spec import parse_spec_text
from codegen.stabilize import stabilize
from codegen.stabilize.measuring import shipped_at_verify


def test_a_term_minus_an_exp_of_another_arg_keeps_the_promise():
    """x*exp(x) - exp(y): before, regimes on x took x*exp(x) alone past x = 82, +inf in
    float32 where y > x makes the difference -inf (p99 32 bits at verify's points)."""
    text = "name: p\nargs: [x, y]\nexpr: x*exp(x) - exp(y)\norder: 1\n"
    forms = stabilize(derive(parse_spec_text(text, "specs/p.yaml")))
    for figures in shipped_at_verify(forms.spec, forms.choices[0]):
        assert figures.keeps_promise(), (forms.choices[0].chosen.label, figures)
