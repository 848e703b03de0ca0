"""The stabilizer on each kind of candidate issue 3 names, measured against the exact reference.

Each spec exercises one mechanism: forms in x - y (logaddexp), the hypot rule and
bounded ratios (hypot), series joined by regimes near a removable singularity
(exprel), a zero piece where a derivative underflows (gelu f''), a form of float32's own
where no one form serves both dtypes (gelu f''), and computing float32 in float64 where no
float32 form keeps the promise (lbeta; log_ndtr was until session 18). The assertion is
always the promise itself (mean, p99, failures against ball arithmetic), plus the
structural fact that the mechanism was what kept it.
"""

from __future__ import annotations

import pytest
import sympy as sp

from codegen.derive import derive
from codegen.front.functions import hypot, sigmoid
from codegen.front.spec import load_spec
from codegen.lower import Regimes
from codegen.stabilize import StableForms, choose, equals_exact, stabilize


def _forms(name: str) -> StableForms:
    return stabilize(derive(load_spec(f"specs/{name}.yaml")))


@pytest.fixture(scope="module")
def logaddexp() -> StableForms:
    return _forms("logaddexp")


@pytest.fixture(scope="module")
def hypot_forms() -> StableForms:
    return _forms("hypot")


@pytest.fixture(scope="module")
def exprel() -> StableForms:
    return _forms("exprel")


@pytest.fixture(scope="module")
def gelu() -> StableForms:
    return _forms("gelu")


@pytest.fixture(scope="module")
def silu() -> StableForms:
    return _forms("silu")


@pytest.fixture(scope="module")
def lbeta() -> StableForms:
    return _forms("lbeta")


def _pieces(form):
    return form.forms if isinstance(form, Regimes) else (form,)


def test_logaddexp_partials_are_sigmoids_of_the_difference(logaddexp):
    """f_x and f_y are sigmoid(+-(x - y)), alone, compensated for the rounding of x - y
    (`stabilize/compensated.py`), or as the pieces of regimes on one arg, each piece exactly
    the derivative."""
    x, y = logaddexp.spec.arg_symbols
    for choice in logaddexp.choices:
        assert choice.keeps_promise(), choice.index
    first = [c for c in logaddexp.choices if sum(c.index) == 1]
    for choice in first:
        own = [choice.float32_form.form] if choice.float32_form is not None else []
        pieces = [p for form in (choice.chosen.form, *own) for p in _pieces(form)]
        sigmoids = [s for p in pieces for s in p.atoms(sigmoid)]
        assert sigmoids, choice.index
        assert all(sp.simplify(s.args[0] ** 2 - (x - y) ** 2) == 0 for s in sigmoids)
        assert all(equals_exact(p, choice.exact, logaddexp.spec) for p in pieces), choice.index


def test_naive_logaddexp_derivatives_break_the_promise(logaddexp):
    for choice in logaddexp.choices[1:]:
        naive = next(c for c in choice.tried if c.label == "sympy")
        assert not naive.keeps_promise()


def _pieces_have(form, function) -> bool:
    """True if `form`, or a piece of it (pieces at ±inf wrap the chosen form), uses `function`."""
    if isinstance(form, Regimes):
        return any(_pieces_have(piece, function) for piece in form.forms)
    return form.has(function)


def test_hypot_uses_the_scaled_form_and_keeps_the_promise(hypot_forms):
    for choice in hypot_forms.choices:
        assert choice.keeps_promise(), choice.index
        assert _pieces_have(choice.chosen.form, hypot), choice.index
    value = hypot_forms.choices[0]
    assert not next(c for c in value.tried if c.label == "sympy").keeps_promise()


def test_exprel_joins_a_series_at_zero_with_exact_forms(exprel):
    for choice in exprel.choices:
        form = choice.chosen.form
        assert choice.keeps_promise(), choice.index
        assert isinstance(form, Regimes), choice.index
        x = exprel.spec.arg_symbols[0]
        assert form.piece_at(0.0).is_polynomial(x), "the piece that owns 0 is a Taylor polynomial"


def test_gelu_second_derivative_has_a_zero_piece_where_it_underflows(gelu):
    second = gelu.choices[2]
    assert second.keeps_promise()
    assert isinstance(second.chosen.form, Regimes)
    assert sp.S.Zero in second.chosen.form.forms


def test_gelu_float32_has_a_form_of_its_own(gelu):
    """gelu's f'': float32 ships a form of its own, which keeps float32's promise with room
    at fewer transcendentals than float64's (counted as the last order ships, each piece
    on its own clipped input: three pieces at 2, against five whose two repeated formulas
    cost twice). Until session 35 float64's form broke float32's promise instead; silu's
    f'' was the example before its sign branches served both dtypes."""
    assert not gelu.promote_float32
    second = gelu.choices[2]
    own = second.float32_form
    assert own is not None and own.form != second.chosen.form
    assert own.roomy_in(0), "float32's own form keeps float32's promise with room"
    assert own.transcendentals < second.chosen.transcendentals
    assert second.chosen.figures[1].keeps_promise()
    assert second.keeps_promise()


def test_silu_needs_no_form_of_its_own(silu):
    """silu's sign branches in one exp(-|x|/2) keep the promise in both dtypes, where
    sigmoid(-x) flushed to 0 near x = 90 once made float32 need pieces of its own."""
    assert not silu.promote_float32
    for choice in silu.choices:
        assert choice.float32_form is None, choice.index
        assert choice.keeps_promise(), choice.index


def test_lbeta_float32_is_computed_in_float64(lbeta):
    assert lbeta.promote_float32
    # float32 alone breaks the promise for some order, with no form of its own: the first pass
    first_pass = [choose(lbeta.spec, partial) for partial in derive(lbeta.spec).partials]
    needing = [c for c in first_pass if c.promote_float32]
    assert needing, "some partial needs float64 to keep the float32 promise"
    for choice in needing:
        assert choice.float32_form is None
        assert not choice.chosen.figures[0].keeps_promise(), "float32 alone breaks it"
        assert choice.promoted_float32.keeps_promise(), "float32 computed in float64 keeps it"


def test_promoted_op_chooses_every_order_as_it_ships(lbeta):
    """One compute dtype per op: every order is chosen measuring float32 in float64."""
    for choice in lbeta.choices:
        assert choice.promote_float32, choice.index
        assert choice.chosen.figures[0] == choice.promoted_float32
        assert choice.promoted_float32.keeps_promise(), choice.index
