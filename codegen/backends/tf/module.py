"""Stage 4: StableForms -> the source text of a generated TensorFlow module.

In: `StableForms`. Out: a string, the module's source (and `render_init` for
the package's `__init__.py`). Every name and line is computed here (docstring
text in `doctext`, the lines of each lowered form in `tfsource`) and handed to
logic-free Jinja2 templates rendered with `StrictUndefined`.

The module's shape (see docs/design.md, "The generated module"): a public op that
converts inputs and casts float16/bfloat16 (and float32, where measured
necessary) to the compute dtype; one `tf.custom_gradient` function whose
value is computed from `tf.stop_gradient` of the inputs (so forward mode
cannot differentiate the ops inside) and whose gradient is a truncated Taylor
jet `sum_a t**a / a! * f_(i+a)` in `t = x - stop_gradient(x)` (zero, carrying
derivative one), with every stable form computed once from the stopped
inputs. That structure survives eager, `tf.function`, XLA, TF1 graphs,
forward-over-reverse and SavedModel alike; nested custom gradients do not
survive SavedModel. The last form is evaluated at `x0 + t/order`, so autodiff
one order beyond differentiates it exactly once.

Eager mode, which is never traced or saved, takes a cheaper path: each
derivative is recorded as one op through TensorFlow's recording API (what
`tf.custom_gradient` itself calls), one order at a time and only while a tape
can use it (`_eager_partial`). Every chosen form is one function of the
module, shared by both paths.
"""

from __future__ import annotations

import math

from codegen import __version__
from codegen.backends.doctext import dispatch_doc, docstring, public_doc, wrap
from codegen.backends.forms import (
    Printer,
    form_functions,
    module_locals,
    partials_table,
    render_init,
    signature,
    tuple_display,
)
from codegen.backends.templates_env import render
from codegen.backends.tf.source import program_lines
from codegen.derive import multi_indices
from codegen.front import names
from codegen.stabilize import StableForms

PRINTER = Printer(program_lines, "tf.float32")


def _is_pure_square(alpha) -> bool:
    return sorted(alpha) == [0] * (len(alpha) - 1) + [2]


def _jet_term(d: str, args, alpha, loc: names.Locals) -> str:
    """`d * t^alpha / alpha!` as code, NaN-free where `d` is infinite and t is 0.

    A pure square t**2/2 is written `(2 d) * square(t / 2)`: reverse mode then never forms
    d/2, which TensorFlow flushes to 0 when d lies within a factor 2 of the smallest normal.
    """
    if sum(alpha) == 0:
        return d
    if _is_pure_square(alpha):
        q = loc.half_square(args[alpha.index(2)])
        return f"tf.math.multiply_no_nan(tf.math.multiply({d}, 2.0), {q})"
    factors = [loc.tangent(a) for a, n in zip(args, alpha) for _ in range(n)]
    monomial = factors[0]
    for factor in factors[1:]:
        monomial = f"tf.math.multiply({monomial}, {factor})"
    denom = math.prod(math.factorial(n) for n in alpha)
    if denom > 1:
        monomial = f"tf.math.truediv({monomial}, {float(denom)!r})"
    return f"tf.math.multiply_no_nan({d}, {monomial})"


def _sum_lines(target: str, terms: list[str], same_shapes: bool) -> list[str]:
    """`target = sum(terms)`: one AddN when the terms share a shape, else chained adds."""
    if len(terms) == 1:
        return [f"{target} = {terms[0]}"]
    if same_shapes:
        return [f"{target} = tf.math.add_n([", *[f"    {t}," for t in terms], "])"]
    return [
        f"{target} = {terms[0]}",
        *(f"{target} = tf.math.add({target}, {t})" for t in terms[1:]),
    ]


def _grad_lines(args: tuple[str, ...], order: int, loc: names.Locals) -> list[str]:
    lines = []
    for i, arg in enumerate(args):
        terms = []
        for k in range(order):
            for alpha in multi_indices(len(args), k):
                index = tuple(n + (j == i) for j, n in enumerate(alpha))
                terms.append(_jet_term(loc.partial(args, index), args, alpha, loc))
        lines += _sum_lines(loc.grad_local(arg), terms, same_shapes=len(args) == 1)
    return lines


def _backward(forms: StableForms) -> list[str]:
    spec = forms.spec
    args, order, loc = spec.args, spec.order, module_locals(spec)
    lines = [f"{loc.stopped(a)} = tf.stop_gradient({a})" for a in args]
    lines += [f"{loc.tangent(a)} = _zero_tangent({a})" for a in args]
    shift = [
        f"tf.math.add({loc.stopped(a)}, tf.math.truediv({loc.tangent(a)}, {order:.1f}))"
        for a in args
    ]
    if len(args) == 1:  # else guarded per form (_last_operand)
        shift = [f"_nan_free_gradient({s})" for s in shift]
    lines += [f"{loc.shifted(a)} = {s}" for a, s in zip(args, shift, strict=True)]
    if order >= 3:
        lines += [
            f"{loc.half_square(a)} = tf.math.square(tf.math.multiply({loc.tangent(a)}, 0.5))"
            for a in args
        ]
    lines += _partial_calls(forms)
    lines += _grad_lines(args, order, loc)
    if len(args) == 1:
        grads = [f"tf.math.multiply(dy, {loc.grad_local(args[0])})"]
    else:
        grads = [f"_sum_to(tf.math.multiply(dy, {loc.grad_local(a)}), {a})" for a in args]
    grads += ["None"] * len(spec.params)
    lines.append("return " + ", ".join(grads))
    return lines


def _partial_calls(forms: StableForms) -> list[str]:
    """Lines computing every partial of order >= 1 for the jet, the last order at x_last."""
    spec = forms.spec
    params = [p for p, _ in spec.params]
    lines, loc = [], module_locals(spec)
    for c in forms.choices[1:]:
        at = _last_operand(loc, len(spec.args)) if sum(c.index) == spec.order else loc.stopped
        operands = ", ".join([*(at(a) for a in spec.args), *params])
        target = loc.partial(spec.args, c.index)
        lines.append(f"{target} = {names.partial_fn(spec.name, spec.args, c.index)}({operands})")
    return lines


def _last_operand(loc: names.Locals, arity: int):
    """How a last form gets an arg: x_last, guarded once (one arg, one last form), or, with
    several args, guarded per form. One last form's backward pass can be NaN (0 * inf, a
    zero tangent into a form that is infinite inside: hypot's f_xx at y = 0) where the
    others' are not; a guard shared by all of them would zero their terms with it (hypot's
    f_xyy at y = 0 came out 0, not -1/x**2)."""
    if arity == 1:
        return loc.shifted
    return lambda a: f"_nan_free_gradient({loc.shifted(a)})"


def _context(forms: StableForms) -> dict:
    spec = forms.spec
    args = spec.args
    params = [p for p, _ in spec.params]
    call = ", ".join([*args, *params])
    return {
        "version": __version__,
        "spec_path": spec.path,
        "sha256": spec.sha256,
        "name": spec.name,
        "module_doc": docstring(
            f"{spec.name}: generated by hogen; stable derivatives to order {spec.order}.",
            wrap(spec.doc, ""),
            indent="",
        ),
        "compute_dtypes": _compute_dtypes(forms),
        "signature": signature(spec),
        "arg_list": ", ".join(args),
        "arg_targets": tuple_display(args),
        "public_doc": public_doc(forms),
        "param_casts": [f"{p} = tf.cast({p}, compute)" for p in params],
        "dispatch": names.dispatch(spec.name),
        "dispatch_doc": dispatch_doc(spec),
        "impl": names.impl(spec.name),
        "call": call,
        "cast_call": ", ".join([*(f"tf.cast({a}, compute)" for a in args), *params]),
        "eager_call": _eager_call(spec),
        "impl_doc": docstring(
            f"{spec.name} with custom derivatives of orders 1 to {spec.order}.",
            ["The gradient is the Taylor jet of the stable forms below, in t = x - x0 = 0."],
        ),
        "forward": [
            *(f"{module_locals(spec).stopped(a)} = tf.stop_gradient({a})" for a in args),
            f"value = {names.partial_fn(spec.name, args, (0,) * len(args))}"
            f"({', '.join([*map(module_locals(spec).stopped, args), *params])})",
        ],
        "backward": _backward(forms),
        "functions": form_functions(forms, names.temp_prefix((*args, *params)), PRINTER),
        "partials": partials_table(forms),
        "helpers": [
            render(f"tf/{helper}.py.j2", {}).rstrip("\n") for helper in _helpers(len(args))
        ],
    }


def _helpers(arity: int) -> tuple[str, ...]:
    """The helper templates a module of `arity` args needs (broadcasting only with two or more)."""
    if arity == 1:
        eager: tuple[str, ...] = ("helper_eager_derivative",)
    else:
        eager = ("helper_eager_partial", "helper_sum_to")
    return ("helper_float_inputs", *eager, "helper_nan_free_gradient", "helper_zero_tangent")


def _compute_dtypes(forms: StableForms) -> list[str]:
    wide = "tf.float64" if forms.promote_float32 else "tf.float32"
    return [
        "tf.float16: tf.float32,",
        "tf.bfloat16: tf.float32,",
        f"tf.float32: {wide},",
        "tf.float64: tf.float64,",
    ]


def _eager_call(spec) -> str:
    value_index = (0,) * len(spec.args)
    inputs, params = tuple_display(spec.args), tuple_display([p for p, _ in spec.params])
    return f'_eager_partial("{spec.name}", {spec.order}, {value_index!r}, {inputs}, {params})'


def emit(forms: StableForms) -> str:
    """The generated module's source text."""
    return render("tf/module.py.j2", _context(forms))


__all__ = ["emit", "render_init"]
