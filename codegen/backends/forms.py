"""The chosen forms as functions of a generated module, for every backend.

In: `StableForms`, a temporary-name prefix and a backend's `Printer` (how a lowered
program becomes lines). A form free of some arg is made NaN where that arg is NaN, and
broadcast against it.
Out: one dict per chosen form (name, parameters, docstring, body lines) for a template,
and small shared pieces of the module plan (the partials table, tuple displays,
the package's `__init__.py`).

Forms below the last order are evaluated where no gradient flows (stopped inputs in
TensorFlow, a custom rule's primal in JAX, an autograd.Function's forward in PyTorch), so
their regimes skip the clip; the last order's form is differentiated by autodiff beyond
the spec's order, so its branches are clipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from codegen import __version__
from codegen.backends import header_sha256
from codegen.backends.doctext import choice_doc, docstring, partial_label, public_doc, wrap
from codegen.backends.templates_env import render
from codegen.front import names
from codegen.lower import free_symbols, lower_each
from codegen.stabilize import Choice, StableForms


@dataclass(frozen=True)
class Printer:
    """`lines(program, outputs, zeros_like, indent)` prints a lowered program; `float32` is
    the framework's name of the dtype (a form of float32's own is selected by it)."""

    lines: Callable[..., list[str]]
    float32: str


def module_locals(spec) -> names.Locals:
    """The derived locals of `spec`'s module, making way for its name, arg and param names."""
    return names.Locals((spec.name, *spec.args, *(p for p, _ in spec.params)))


def form_body(forms: StableForms, choice: Choice, prefix: str, printer: Printer) -> list[str]:
    """The body of the function computing one chosen form at the function's own parameters."""
    spec = forms.spec
    env = {s: s.name for s in (*spec.arg_symbols, *spec.param_symbols)}
    stopped = sum(choice.index) < spec.order
    unclipped = frozenset(env.values()) if stopped else frozenset(p for p, _ in spec.params)
    out = "value" if not sum(choice.index) else module_locals(spec).partial(spec.args, choice.index)

    def body(form, indent: int) -> list[str]:
        used = free_symbols(form)
        missing = tuple(s.name for s in spec.arg_symbols if s not in used)  # NaN in, NaN out
        program = lower_each([(form, env)], prefix, unclipped, carry_nan_of=missing)
        return printer.lines(program, [out], spec.args[0], indent) + [f"return {out}"]

    lines = []
    if choice.float32_form is not None:  # the dtype is static when a framework traces
        lines.append(f"if {spec.args[0]}.dtype == {printer.float32}:")
        lines += ["    " + line for line in body(choice.float32_form.form, 4)]
    return lines + body(choice.chosen.form, 0)


def form_summary(forms: StableForms, choice: Choice) -> str:
    spec = forms.spec
    if not sum(choice.index):
        return f"The value of {spec.name}."
    label = partial_label(spec.args, choice.index)
    last = sum(choice.index) == spec.order
    return f"{label} of {spec.name}" + (
        " (the last custom order: autodiff beyond it differentiates this form)." if last else "."
    )


def form_functions(forms: StableForms, prefix: str, printer: Printer) -> list[dict]:
    """One function per chosen form: the value, then every partial derivative."""
    spec = forms.spec
    return [
        {
            "name": names.partial_fn(spec.name, spec.args, choice.index),
            "params": ", ".join([*spec.args, *(p for p, _ in spec.params)]),
            "doc": docstring(form_summary(forms, choice), choice_doc(spec.args, choice, "    ")),
            "body": form_body(forms, choice, prefix, printer),
        }
        for choice in forms.choices
    ]


def partials_table(forms: StableForms) -> list[str]:
    """`index: function,` lines of the table of every chosen form by multi-index."""
    spec = forms.spec
    return [
        f"{c.index!r}: {names.partial_fn(spec.name, spec.args, c.index)}," for c in forms.choices
    ]


def tuple_display(items) -> str:
    """A Python tuple display of `items`: (), (a,), (a, b)."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def signature(spec) -> str:
    """The public op's parameters: the args, then the params keyword-only with defaults."""
    params = [p for p, _ in spec.params]
    return ", ".join(spec.args) + (
        ", *, " + ", ".join(f"{p}={v!r}" for p, v in spec.params) if params else ""
    )


def chain_context(forms: StableForms, backend: str, printer: Printer, limits: tuple) -> dict:
    """What the JAX and PyTorch templates share: a public op calling a chain of custom
    functions, one per partial (`_OPS`), and the chosen forms as functions. `limits` are
    paragraphs for the module docstring (the first) and the public op's (the rest)."""
    spec = forms.spec
    args, params = spec.args, [p for p, _ in spec.params]
    framework = {"jax": "JAX", "torch": "PyTorch"}[backend]
    paragraphs = [line for p in limits for line in ["", *wrap(p, "", hanging=False)]]
    return {
        "version": __version__,
        "spec_path": spec.path,
        "sha256": header_sha256(spec.sha256, backend),
        "name": spec.name,
        "module_doc": docstring(
            f"{spec.name}: generated by hogen for {framework}; stable derivatives to order "
            f"{spec.order}.",
            [*wrap(spec.doc, ""), *paragraphs],
            indent="",
        ),
        "order": spec.order,
        "arity": len(args),
        "signature": signature(spec),
        "arg_list": ", ".join(args),
        "arg_targets": tuple_display(args),
        "public_doc": public_doc(forms, backend, tuple(limits[1:])),
        "value_index": repr((0,) * len(args)),
        "call": ", ".join([*args, *params]),
        "functions": form_functions(forms, names.temp_prefix((*args, *params)), printer),
        "partials": partials_table(forms),
        "promote": forms.promote_float32,
    }


def render_init(op_names: list[str]) -> str:
    """The generated package's `__init__.py`, re-exporting every op, sorted."""
    ops = sorted(op_names)
    return render(
        "init.py.j2",
        {
            "version": __version__,
            "imports": [f"from .{op} import {op}" for op in ops],
            "names": ops,
        },
    )
