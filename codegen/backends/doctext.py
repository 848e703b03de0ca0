"""The text of generated docstrings: derivative labels, forms, figures, the public doc.

In: chosen forms (`stabilize.Choice`, `lower.Regimes`) and the spec. Out: strings and
wrapped lines for the generated module's docstrings, and `describe_form` for
`hogen explain`.
"""

from __future__ import annotations

import textwrap

import sympy as sp

from codegen.backends.piecedoc import describe_pieces, smoothness_sentence
from codegen.front import names
from codegen.front.rounding import opened
from codegen.judge import accuracy
from codegen.lower import Regimes, free_symbols
from codegen.pieces import Pieces
from codegen.stabilize import Choice, StableForms

PRIME = {1: "f'", 2: "f''", 3: "f'''", 4: "f''''"}


def describe_form(form) -> str:
    if isinstance(form, Regimes):
        lows = [
            "(-inf",
            *(("(" if form.is_closed(i) else "[") + repr(b) for i, b in enumerate(form.bounds)),
        ]
        highs = [
            *(repr(b) + ("]" if form.is_closed(i) else ")") for i, b in enumerate(form.bounds)),
            "inf)",
        ]
        named = free_symbols(form) != {form.arg}  # several args: say what is split
        half, shown = _half_exp(form)
        pieces = [
            f"{_interval(lo, hi, form.arg if named else None)}: {_piece(f)}"
            for lo, hi, f in zip(lows, highs, shown.forms)
        ]
        where = f", with h = {sp.sstr(half)}" if half is not None else ""
        return "; ".join(pieces) + where
    if isinstance(form, Pieces):
        return describe_pieces(form, describe_form)
    return sp.sstr(form)


def _half_exp(form: Regimes):
    """(exp(-|u|/2), `form` with it written h) for total regimes (`exp_branches`), whose
    pieces share it and multiply it out one factor at a time; else (None, `form`)."""
    if not form.total:
        return None, form
    shared = {
        guard
        for piece in form.forms
        for guard in piece.atoms(sp.UnevaluatedExpr)
        if guard.args[0].func is sp.exp
    }
    if len(shared) != 1:
        return None, form
    (guard,) = shared
    h = sp.Symbol("h", positive=True)
    pieces = tuple(opened(piece.xreplace({guard: h})) for piece in form.forms)
    return guard.args[0], Regimes(form.arg, form.bounds, pieces, form.closed, form.total)


def _piece(form) -> str:
    return f"[{describe_form(form)}]" if isinstance(form, Regimes) else sp.sstr(form)


def _interval(low: str, high: str, arg=None) -> str:
    """A piece's interval (`x in [a, b)` with several args); one holding only an infinity
    reads `at -inf` or `at inf`."""
    prefix = f"{arg} " if arg is not None else ""
    if low == "(-inf" and high == "-inf]":
        return f"{prefix}at -inf"
    if low == "[inf" and high == "inf)":
        return f"{prefix}at inf"
    return f"{prefix}{'in ' if arg is not None else ''}{low}, {high}"


def _figures_text(choice: Choice) -> str:
    """The chosen form's figures at the build's points; where it breaks the promise there (no
    candidate kept it), its failures and that it does, so the docstring claims no more."""
    parts = []
    for dtype, fig in zip(accuracy.DTYPES, choice.shipped_figures()):
        text = f"{dtype} mean {fig.mean_bits:.2f} / p99 {fig.p99_bits:.1f} bits"
        if fig.failures:
            text += f" / {fig.failures} failing point{'s' if fig.failures > 1 else ''}"
        parts.append(text + ("" if fig.keeps_promise() else " (breaks the promise)"))
    suffix = " (float32 computed in float64)" if choice.promote_float32 else ""
    return "measured " + ", ".join(parts) + suffix


def partial_label(args: tuple[str, ...], index: tuple[int, ...]) -> str:
    order = sum(index)
    if len(args) == 1:
        return PRIME.get(order, f"f^({order})") if order else "f"
    return "f" if not order else "f_" + "".join(a for a, n in zip(args, index) for _ in range(n))


def wrap(text: str, indent: str, hanging: bool = True) -> list[str]:
    """`text` wrapped to fit after `indent`; continuation lines hang by four spaces if asked."""
    return textwrap.wrap(
        text,
        96 - len(indent),
        break_long_words=True,
        break_on_hyphens=False,
        initial_indent="",
        subsequent_indent="    " if hanging else "",
    ) or [""]


def choice_doc(args, choice: Choice, indent: str) -> list[str]:
    label = partial_label(args, choice.index)
    lines = wrap(f"{label} = {sp.sstr(choice.exact)}", indent)
    own = choice.float32_form
    dtypes = "" if own is None else "float64 "
    lines += wrap(
        f"{dtypes}form ({choice.chosen.label}): {describe_form(choice.chosen.form)}", indent
    )
    if own is not None:
        lines += wrap(f"float32 form ({own.label}): {describe_form(own.form)}", indent)
    lines += wrap(_figures_text(choice), indent)
    return lines


def docstring(summary: str, body: list[str], indent: str = "    ") -> str:
    if not body:
        return summary
    return (
        summary + "\n\n" + "\n".join(indent + line if line else "" for line in body) + "\n" + indent
    )


# How each backend's docstrings name its arrays, its framework, and its float32 promotion.
_WORDS = {
    "tf": ("float tensor, NumPy array or Python number", "A tensor", "TensorFlow's", ""),
    "jax": (
        "float JAX or NumPy array, or Python number",
        "An array",
        "jax.numpy's",
        "Only when jax_enable_x64 is on: without it float32 is computed in float32 and "
        "loses the promise near the edges of float32's range.",
    ),
    "torch": ("float tensor or Python number", "A tensor", "PyTorch's", ""),
}


def domain_sentence(spec, backend: str = "tf") -> str:
    """Where accuracy is promised, and what happens elsewhere."""
    bounds = ", ".join(f"{a} in [{lo!r}, {hi!r}]" for a, (lo, hi) in zip(spec.args, spec.domain))
    return (
        f"Accuracy (every order, float32 and float64) is measured and promised for {bounds}. "
        "Outside it the same forms are evaluated without that promise; where the function has "
        f"no real value the result is NaN, as for {_WORDS[backend][2]} own ops. "
        "NaN in gives NaN out."
    )


def _broken_sentence(partials: list[str]) -> str:
    """What a docstring says where no candidate the build measured kept the promise."""
    return (
        f"No form the build measured keeps the promise for {', '.join(partials)}: each misses "
        "it at the build's own sample points, as its figures in the private functions say."
    )


def public_doc(forms: StableForms, backend: str = "tf", limits: tuple[str, ...] = ()) -> str:
    """The public op's docstring; `limits` are paragraphs on what the framework cannot do."""
    spec = forms.spec
    kind, returns, _, promoted = _WORDS[backend]
    body = wrap(spec.doc, "    ", hanging=False)
    body += ["", "Args:"]
    body += [f"    {a}: {kind} (inputs broadcast)." for a in spec.args]
    body += [f"    {p}: float parameter, no gradient (default {v!r})." for p, v in spec.params]
    body += ["", *wrap(domain_sentence(spec, backend), "    ", hanging=False)]
    smooth = smoothness_sentence(spec, [c.exact for c in forms.choices if len(c.index) == 1])
    body += ["", *wrap(smooth, "    ", hanging=False)] if smooth else []
    broken = [partial_label(spec.args, c.index) for c in forms.choices if not c.keeps_promise()]
    for paragraph in [*limits, *([_broken_sentence(broken)] if broken else [])]:
        body += ["", *wrap(paragraph, "    ", hanging=False)]
    body += [
        "",
        "Returns:",
        f"    {returns} of the inputs' dtype. float16 and bfloat16 are computed in",
        "    float32 and cast back"
        + (
            "; float32 is computed in float64 (measured necessary)."
            if forms.promote_float32
            else "."
        ),
        *(
            ["    " + line for line in wrap(promoted, "        ", hanging=False)]
            if promoted and forms.promote_float32
            else []
        ),
        "",
        "Raises:",
        "    TypeError: if the inputs are not of one floating-point dtype.",
    ]
    summary = f"{spec.name}({', '.join(spec.args)}) = {sp.sstr(spec.expr)}"
    return docstring(summary if len(summary) < 90 else spec.name, body)


def dispatch_doc(spec) -> str:
    return docstring(
        f"{spec.name} in the compute dtype: one recorded op per order in eager mode, else the jet.",
        [
            "Eager mode records each derivative only when a tape or accumulator can use it",
            "(_eager_partial); graphs (tf.function, XLA, SavedModel, TF1) get the",
            f"tf.custom_gradient op {names.impl(spec.name)}.",
        ],
    )
