"""`backends.doctext`: what a generated op's docstring claims about its accuracy.

A chosen form that breaks the promise at the build's own points (no candidate kept it)
must say so, with its failing points: the docstring may claim no more than was measured.
"""

from __future__ import annotations

import sympy as sp

from codegen.backends.doctext import _figures_text, public_doc
from codegen.front.spec import parse_spec_text
from codegen.judge.accuracy import Figures
from codegen.stabilize.measuring import Candidate
from codegen.stabilize.selection import Choice, StableForms

SPEC = parse_spec_text("name: gate\nargs: [x]\nexpr: x*erfc(-x)/2\norder: 1\n", "gate.yaml")
KEPT = Figures(0.1, 1.0, 0, 5919)


def _choice(index: tuple[int, ...], float64: Figures) -> Choice:
    x = sp.Symbol("x")
    candidate = Candidate("sympy", x, (KEPT, float64), ops=1)
    return Choice(index, x, candidate, (candidate,), promote_float32=False)


def test_a_form_that_keeps_the_promise_reads_as_before():
    text = _figures_text(_choice((0,), KEPT))
    assert text == "measured float32 mean 0.10 / p99 1.0 bits, float64 mean 0.10 / p99 1.0 bits"


def test_a_form_that_breaks_the_promise_says_where_and_how():
    text = _figures_text(_choice((0,), Figures(0.12, 1.0, 1, 5919)))
    assert text.endswith("float64 mean 0.12 / p99 1.0 bits / 1 failing point (breaks the promise)")
    wide = _figures_text(_choice((0,), Figures(0.5, 9.0, 0, 5919)))
    assert wide.endswith("float64 mean 0.50 / p99 9.0 bits (breaks the promise)")


def test_the_public_docstring_names_the_partials_that_break_it():
    forms = StableForms(SPEC, (_choice((0,), KEPT), _choice((1,), Figures(0.2, 1.0, 2, 5919))))
    doc = " ".join(public_doc(forms).split())
    assert "No form the build measured keeps the promise for f':" in doc
    whole = StableForms(SPEC, (_choice((0,), KEPT), _choice((1,), KEPT)))
    assert "keeps the promise for" not in " ".join(public_doc(whole).split())
