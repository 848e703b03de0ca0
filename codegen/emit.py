"""Stage 4: StableForms -> the source text of a generated TensorFlow module.

In: `StableForms`. Out: a string, the module's source (and `render_init` for
the package's `__init__.py`). Every name and line is computed here and handed
to logic-free Jinja2 templates rendered with `StrictUndefined`.

The module's shape (see DESIGN.md, "The generated module"): a public op that
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
import textwrap

import sympy as sp

from codegen import __version__, accuracy, names
from codegen.derive import multi_indices
from codegen.lower import Program, Regimes, free_symbols, lower_each
from codegen.stabilize import Choice, StableForms
from codegen.templates_env import render

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
        named = free_symbols(form) != {form.arg}  # several args: say which one is split
        pieces = [
            f"{_interval(lo, hi, form.arg if named else None)}: {_piece(f)}"
            for lo, hi, f in zip(lows, highs, form.forms)
        ]
        return "; ".join(pieces)
    return sp.sstr(form)


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
    parts = []
    for dtype, fig in zip(accuracy.DTYPES, choice.shipped_figures()):
        parts.append(f"{dtype} mean {fig.mean_bits:.2f} / p99 {fig.p99_bits:.1f} bits")
    suffix = " (float32 computed in float64)" if choice.promote_float32 else ""
    return "measured " + ", ".join(parts) + suffix


def partial_label(args: tuple[str, ...], index: tuple[int, ...]) -> str:
    order = sum(index)
    if len(args) == 1:
        return PRIME.get(order, f"f^({order})") if order else "f"
    return "f" if not order else "f_" + "".join(a for a, n in zip(args, index) for _ in range(n))


def _wrap(text: str, indent: str, hanging: bool = True) -> list[str]:
    """`text` wrapped to fit after `indent`; continuation lines hang by four spaces if asked."""
    return textwrap.wrap(
        text,
        96 - len(indent),
        break_long_words=True,
        break_on_hyphens=False,
        initial_indent="",
        subsequent_indent="    " if hanging else "",
    ) or [""]


def _choice_doc(args, choice: Choice, indent: str) -> list[str]:
    label = partial_label(args, choice.index)
    lines = _wrap(f"{label} = {sp.sstr(choice.exact)}", indent)
    lines += _wrap(f"form ({choice.chosen.label}): {describe_form(choice.chosen.form)}", indent)
    lines += _wrap(_figures_text(choice), indent)
    return lines


def _docstring(summary: str, body: list[str], indent: str = "    ") -> str:
    if not body:
        return summary
    return (
        summary + "\n\n" + "\n".join(indent + line if line else "" for line in body) + "\n" + indent
    )


def _program_lines(program: Program, outputs: list[str], zeros_like: str) -> list[str]:
    """Assignment lines for `program`, with output temporaries renamed to `outputs`."""
    rename: dict[str, str] = {}
    lines: list[str] = []
    for out, wanted in zip(program.outputs, outputs):
        if (
            isinstance(out, str)
            and out.startswith(tuple(names.TEMP_PREFIXES))
            and out not in rename
        ):
            rename[out] = wanted
    for step in program.steps:
        target = rename.get(step.target, step.target)
        lines += _fit(f"{target} = {_tf_expr(step.op, step.operands, rename)}")
    for out, wanted in zip(program.outputs, outputs):
        if isinstance(out, float):
            lines.append(f"{wanted} = tf.math.add(tf.zeros_like({zeros_like}), {out!r})")
        elif rename.get(out) != wanted:
            lines.append(f"{wanted} = {rename.get(out, out)}")
    return lines


LINE_LIMIT = 96  # ruff's 100, less the indentation of a function body


def _fit(line: str) -> list[str]:
    """`target = f(a, b, ...)` as one line, or split inside the call's parentheses when long:
    the arguments on one indented line, or one per line if that is still too long."""
    if len(line) <= LINE_LIMIT or not line.endswith(")") or "(" not in line:
        return [line]
    head, _, rest = line.partition("(")
    parts = _top_level_split(rest[:-1])
    inner = ", ".join(parts)
    if len(inner) + 4 <= LINE_LIMIT:
        return [f"{head}(", f"    {inner}", ")"]
    return [f"{head}(", *(f"    {part}," for part in parts), ")"]


def _top_level_split(text: str) -> list[str]:
    """`text` split at the commas outside parentheses and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "([":
            depth += 1
        elif not quoted and char in ")]":
            depth -= 1
        elif not quoted and char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def _operand(value, rename) -> str:
    if isinstance(value, float) and math.isinf(value):
        return f'float("{value!r}")'
    if isinstance(value, float):
        return repr(value)
    return rename.get(value, value)


def _binary(op: str, a: list[str], constant_first: bool) -> str:
    """A binary step as the cheapest eager call: tf.math functions, constants second."""
    if op in ("add", "mul"):
        name = "add" if op == "add" else "multiply"
        first, second = (a[1], a[0]) if constant_first else (a[0], a[1])
        return f"tf.math.{name}({first}, {second})"
    # A Python number first: the operator converts it to the tensor's dtype (tf.math.reciprocal
    # would be faster, but its float32 kernel is up to 2 ulps off).
    if constant_first:
        return f"{a[0]} {'-' if op == 'sub' else '/'} {a[1]}"
    return f"tf.math.{'subtract' if op == 'sub' else 'truediv'}({a[0]}, {a[1]})"


def _tf_expr(op: str, operands, rename) -> str:
    from codegen.functions import ALL_FUNCTIONS

    a = [_operand(v, rename) for v in operands]
    if op in ("add", "sub", "mul", "div"):
        return _binary(op, a, isinstance(operands[0], float))
    if op == "neg":
        return f"tf.math.negative({a[0]})"
    if op == "div_no_nan":
        return f"tf.math.divide_no_nan({a[0]}, {a[1]})"
    if op in ("square", "sqrt", "rsqrt", "maximum", "minimum", "pow"):
        return f"tf.math.{op}({', '.join(a)})"
    if op == "no_neg_inf":  # -inf becomes the lowest finite float of the dtype
        return f"tf.math.maximum({a[0]}, {a[0]}.dtype.min)"
    if op == "no_pos_inf":
        return f"tf.math.minimum({a[0]}, {a[0]}.dtype.max)"
    if op == "clip":
        lo, hi = operands[1], operands[2]
        if math.isinf(lo):
            return f"tf.math.minimum({a[0]}, {a[2]})"
        if math.isinf(hi):
            return f"tf.math.maximum({a[0]}, {a[1]})"
        return f"tf.clip_by_value({a[0]}, {a[1]}, {a[2]})"
    if op == "fill_like" and operands[1] == 0.0:  # sign(x) * 0 is 0, and NaN for NaN
        return f"tf.math.multiply(tf.math.sign({a[0]}), 0.0)"
    if op == "fill_like":  # sign(x) * 0 + c is c, and NaN for NaN
        return f"tf.math.add(tf.math.multiply(tf.math.sign({a[0]}), 0.0), {a[1]})"
    if op in _SELECTS:
        chosen, other = (
            f"tf.constant({v}, {a[0]}.dtype)" if isinstance(raw, float) else v
            for v, raw in zip(a[2:], operands[2:])
        )
        return f"tf.where(tf.math.{_SELECTS[op]}({a[0]}, {a[1]}), {chosen}, {other})"
    return f"{ALL_FUNCTIONS[op].tf_name}({a[0]})"


_SELECTS = {
    "where_less": "less",
    "where_less_equal": "less_equal",
    "where_greater": "greater",
    "where_greater_equal": "greater_equal",
}


def _is_pure_square(alpha) -> bool:
    return sorted(alpha) == [0] * (len(alpha) - 1) + [2]


def _jet_term(d: str, args, alpha) -> str:
    """`d * t^alpha / alpha!` as code, NaN-free where `d` is infinite and t is 0.

    A pure square t**2/2 is written `(2 d) * square(t / 2)`: reverse mode then never forms
    d/2, which TensorFlow flushes to 0 when d lies within a factor 2 of the smallest normal.
    """
    if sum(alpha) == 0:
        return d
    if _is_pure_square(alpha):
        q = names.half_square(args[alpha.index(2)])
        return f"tf.math.multiply_no_nan(tf.math.multiply({d}, 2.0), {q})"
    factors = [names.tangent(a) for a, n in zip(args, alpha) for _ in range(n)]
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


def _grad_lines(args: tuple[str, ...], order: int) -> list[str]:
    lines = []
    for i, arg in enumerate(args):
        terms = []
        for k in range(order):
            for alpha in multi_indices(len(args), k):
                index = tuple(n + (j == i) for j, n in enumerate(alpha))
                terms.append(_jet_term(names.partial(args, index), args, alpha))
        lines += _sum_lines(names.grad_local(arg), terms, same_shapes=len(args) == 1)
    return lines


def _backward(forms: StableForms) -> list[str]:
    spec = forms.spec
    args, order = spec.args, spec.order
    lines = [f"{names.stopped(a)} = tf.stop_gradient({a})" for a in args]
    lines += [f"{names.tangent(a)} = _zero_tangent({a})" for a in args]
    lines += [
        f"{names.shifted(a)} = _nan_free_gradient(tf.math.add({names.stopped(a)}, "
        f"tf.math.truediv({names.tangent(a)}, {float(order)!r})))"
        for a in args
    ]
    if order >= 3:
        lines += [
            f"{names.half_square(a)} = tf.math.square(tf.math.multiply({names.tangent(a)}, 0.5))"
            for a in args
        ]
    lines += _partial_calls(forms)
    lines += _grad_lines(args, order)
    if len(args) == 1:
        grads = [f"tf.math.multiply(dy, {names.grad_local(args[0])})"]
    else:
        grads = [f"_sum_to(tf.math.multiply(dy, {names.grad_local(a)}), {a})" for a in args]
    grads += ["None"] * len(spec.params)
    lines.append("return " + ", ".join(grads))
    return lines


def _partial_calls(forms: StableForms) -> list[str]:
    """Lines computing every partial of order >= 1 for the jet, the last order at x_last."""
    spec = forms.spec
    params = [p for p, _ in spec.params]
    lines = []
    for c in forms.choices[1:]:
        at = names.shifted if sum(c.index) == spec.order else names.stopped
        operands = ", ".join([*(at(a) for a in spec.args), *params])
        target = names.partial(spec.args, c.index)
        lines.append(f"{target} = {names.partial_fn(spec.name, spec.args, c.index)}({operands})")
    return lines


def _form_body(forms: StableForms, choice: Choice, prefix: str) -> list[str]:
    """The body of the function computing one chosen form at the function's own parameters.

    Forms below the last order are evaluated where no gradient flows (stopped inputs, or with
    recording stopped), so their regimes skip the clip; the last order's form is
    differentiated by autodiff beyond the spec's order, so its branches are clipped.
    """
    spec = forms.spec
    env = {s: s.name for s in (*spec.arg_symbols, *spec.param_symbols)}
    stopped = sum(choice.index) < spec.order
    unclipped = frozenset(env.values()) if stopped else frozenset(p for p, _ in spec.params)
    program = lower_each([(choice.chosen.form, env)], prefix, unclipped=unclipped)
    out = "value" if not sum(choice.index) else names.partial(spec.args, choice.index)
    lines = _program_lines(program, [out], spec.args[0])
    if not sum(choice.index) and not set(spec.arg_symbols) <= _symbols_of(choice.chosen.form):
        lines.append(f"value = value + tf.zeros_like({' + '.join(spec.args)})")
    return lines + [f"return {out}"]


def _form_functions(forms: StableForms, prefix: str) -> list[dict]:
    """One function per chosen form: the value, then every partial derivative."""
    spec = forms.spec
    functions = []
    for choice in forms.choices:
        order = sum(choice.index)
        if not order:
            summary = f"The value of {spec.name}."
        else:
            label = partial_label(spec.args, choice.index)
            summary = f"{label} of {spec.name}" + (
                " (the last custom order: autodiff beyond it differentiates this form)."
                if order == spec.order
                else "."
            )
        functions.append(
            {
                "name": names.partial_fn(spec.name, spec.args, choice.index),
                "params": ", ".join([*spec.args, *(p for p, _ in spec.params)]),
                "doc": _docstring(summary, _choice_doc(spec.args, choice, "    ")),
                "body": _form_body(forms, choice, prefix),
            }
        )
    return functions


def _partials_table(forms: StableForms) -> list[str]:
    spec = forms.spec
    return [
        f"{c.index!r}: {names.partial_fn(spec.name, spec.args, c.index)}," for c in forms.choices
    ]


def _symbols_of(form) -> set:
    return free_symbols(form)


def _domain_sentence(spec) -> str:
    """Where accuracy is promised, and what happens elsewhere."""
    bounds = ", ".join(f"{a} in [{lo!r}, {hi!r}]" for a, (lo, hi) in zip(spec.args, spec.domain))
    return (
        f"Accuracy (every order, float32 and float64) is measured and promised for {bounds}. "
        "Outside it the same forms are evaluated without that promise; where the function has "
        "no real value the result is NaN, as for TensorFlow's own ops. NaN in gives NaN out."
    )


def _public_doc(forms: StableForms) -> str:
    spec = forms.spec
    body = _wrap(spec.doc, "    ", hanging=False)
    body += ["", "Args:"]
    body += [
        f"    {a}: float tensor, NumPy array or Python number (inputs broadcast)."
        for a in spec.args
    ]
    body += [f"    {p}: float parameter, no gradient (default {v!r})." for p, v in spec.params]
    body += ["", *_wrap(_domain_sentence(spec), "    ", hanging=False)]
    body += [
        "",
        "Returns:",
        "    A tensor of the inputs' dtype. float16 and bfloat16 are computed in",
        "    float32 and cast back"
        + (
            "; float32 is computed in float64 (measured necessary)."
            if forms.promote_float32
            else "."
        ),
        "",
        "Raises:",
        "    TypeError: if the inputs are not of one floating-point dtype.",
    ]
    summary = f"{spec.name}({', '.join(spec.args)}) = {sp.sstr(spec.expr)}"
    return _docstring(summary if len(summary) < 90 else spec.name, body)


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
        "module_doc": _docstring(
            f"{spec.name}: generated by hogen; stable derivatives to order {spec.order}.",
            _wrap(spec.doc, ""),
            indent="",
        ),
        "compute_dtypes": _compute_dtypes(forms),
        "signature": ", ".join(args)
        + (", *, " + ", ".join(f"{p}={v!r}" for p, v in spec.params) if params else ""),
        "arg_list": ", ".join(args),
        "arg_targets": _tuple(args),
        "public_doc": _public_doc(forms),
        "param_casts": [f"{p} = tf.cast({p}, compute)" for p in params],
        "dispatch": names.dispatch(spec.name),
        "dispatch_doc": _dispatch_doc(spec),
        "impl": names.impl(spec.name),
        "call": call,
        "cast_call": ", ".join([*(f"tf.cast({a}, compute)" for a in args), *params]),
        "eager_call": _eager_call(spec),
        "impl_doc": _docstring(
            f"{spec.name} with custom derivatives of orders 1 to {spec.order}.",
            ["The gradient is the Taylor jet of the stable forms below, in t = x - x0 = 0."],
        ),
        "forward": [
            *(f"{names.stopped(a)} = tf.stop_gradient({a})" for a in args),
            f"value = {names.partial_fn(spec.name, args, (0,) * len(args))}"
            f"({', '.join([*map(names.stopped, args), *params])})",
        ],
        "backward": _backward(forms),
        "functions": _form_functions(forms, names.temp_prefix((*args, *params))),
        "partials": _partials_table(forms),
        "helpers": [
            render(f"{helper}.py.j2", {}).rstrip("\n")
            for helper in _helpers(len(args))
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


def _tuple(items) -> str:
    """A Python tuple display of `items`: (), (a,), (a, b)."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _eager_call(spec) -> str:
    value_index = (0,) * len(spec.args)
    inputs, params = _tuple(spec.args), _tuple([p for p, _ in spec.params])
    return f'_eager_partial("{spec.name}", {spec.order}, {value_index!r}, {inputs}, {params})'


def _dispatch_doc(spec) -> str:
    return _docstring(
        f"{spec.name} in the compute dtype: one recorded op per order in eager mode, else the jet.",
        [
            "Eager mode records each derivative only when a tape or accumulator can use it",
            "(_eager_partial); graphs (tf.function, XLA, SavedModel, TF1) get the",
            f"tf.custom_gradient op {names.impl(spec.name)}.",
        ],
    )


def emit(forms: StableForms) -> str:
    """The generated module's source text."""
    return render("module.py.j2", _context(forms))


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


__all__ = ["emit", "render_init"]
