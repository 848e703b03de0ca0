"""The spec's fields: one parser per key, and the JSON Schema built from the same table.

In: the YAML node of each key (from `yamlnodes`) and a context holding the fields parsed
so far. Out: plain values (name, doc, args, params, the SymPy expr, order, domain);
`_FIELDS` is the table `spec` validates with, and `SCHEMA` / `KNOWN_KEYS` come from it.
"""

from __future__ import annotations

import builtins
import keyword
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp
import yaml

from codegen.front.calls import CALL_FORMS
from codegen.front.functions import FUNCTIONS
from codegen.front.grammar import _Walker
from codegen.front.names import is_reserved
from codegen.front.yamlnodes import (
    _IDENT,
    _INF_WORDS,
    INF,
    MAX_ARGS,
    MAX_DOC,
    MAX_EXPR,
    MAX_NAME,
    MAX_ORDER,
    _at,
    _close,
    _expect,
    _fail,
    _Invalid,
    _mapping,
    _number,
    _scalar,
)

_EXPR_DESCRIPTION = (
    "The function, in hogen's expression grammar: numbers, the args and params, pi, E, "
    "+ - * / **, parentheses; the functions "
    + " ".join(FUNCTIONS)
    + "; and "
    + ", ".join(form.signature for form in CALL_FORMS.values())
    + ". A condition of where is comparisons (< <= > >=) joined by 'and'/'or'."
)
_DOC_CONTROL = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}


def _reserved_reason(name: str, what: str) -> str | None:
    # an op may be called sigmoid; an arg may not
    if (name in FUNCTIONS or name in CALL_FORMS) and what != "name":
        return "a function of the expression grammar"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "a Python keyword"
    if hasattr(builtins, name):
        return "a Python builtin"
    return "a name the generated module uses" if is_reserved(name) else None


def _identifier(node: yaml.Node, what: str, ctx: dict) -> str:
    value = _scalar(node)
    if not isinstance(value, str) or not _IDENT.fullmatch(value) or len(value) > MAX_NAME:
        _expect(
            node,
            what,
            f"a Python identifier ([A-Za-z][A-Za-z0-9_]*, at most {MAX_NAME} characters)",
        )
    reason = _reserved_reason(value, what)
    if reason:
        _fail(node, f"{what}: expected a free name, got {value!r}, which is {reason}")
    ctx["_names"][value] = (what, node)
    return value


def _parse_doc(node, ctx) -> str:
    value = _scalar(node)
    doc = value.strip() if isinstance(value, str) else ""
    if not 1 <= len(doc) <= MAX_DOC:
        _expect(node, "doc", f"a string of 1..{MAX_DOC} characters")
    bad = [repr(q) for q in ('"""', "'''", "\\") if q in doc]
    bad += [repr(c) for c in doc if c not in "\n\t" and unicodedata.category(c) in _DOC_CONTROL]
    bad += ["a '\"' at the end"] if doc.endswith('"') else []
    if bad:
        _fail(
            node,
            "doc: expected text for a docstring (no triple quotes, backslashes or "
            f"control characters), got {bad[0]}",
        )
    return doc


def _parse_args(node, ctx) -> tuple[str, ...]:
    if not isinstance(node, yaml.SequenceNode) or not 1 <= len(node.value) <= MAX_ARGS:
        _expect(node, "args", f"a list of 1..{MAX_ARGS} names")
    args: list[str] = []
    for item in node.value:
        if _identifier(item, "args", ctx) in args:
            _fail(item, f"args: expected distinct names, got {item.value!r} twice")
        args.append(item.value)
    return tuple(args)


def _parse_params(node, ctx) -> tuple[tuple[str, float], ...]:
    params = {}
    for key, (key_node, value_node) in _mapping(node, "params").items():
        if _identifier(key_node, "params", ctx) in ctx["args"]:
            _fail(key_node, f"params: expected a name not in args, got {key!r}")
        params[key] = _number(value_node, f"params.{key}")
    return tuple(params.items())


def _parse_expr(node, ctx) -> tuple[sp.Expr, str]:
    value = _scalar(node)
    if not isinstance(value, str):
        _expect(node, "expr", "an expression string")
    text = value.strip()
    names = {n: sp.Symbol(n, real=True) for n in (*ctx["args"], *dict(ctx["params"]))}
    origin, exact = _at(node), False
    if text and node.start_mark.line == node.end_mark.line:  # the text on its line, past a quote
        lead = len(value) - len(value.lstrip()) + origin[1] - 1
        found = ctx["_lines"][origin[0] - 1].find(text, lead)
        if found in (lead, lead + 1):
            origin, exact = (origin[0], found + 1), True
    try:
        return _Walker(text, names, origin, exact).build(), text
    except _Invalid as bad:
        _fail(bad.where, f"expr: {bad.message}")


def _parse_order(node, ctx) -> int:
    value = _scalar(node)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ORDER:
        _expect(node, "order", f"an integer 1..{MAX_ORDER}")
    return value


def _parse_domain(node, ctx) -> tuple[tuple[float, float], ...]:
    bounds = dict.fromkeys(ctx["args"], (-INF, INF))
    for key, (key_node, value_node) in _mapping(node, "domain").items():
        if key not in bounds:
            _fail(
                key_node,
                f"domain: expected an arg ({', '.join(bounds)}), got {key!r}" + _close(key, bounds),
            )
        if not isinstance(value_node, yaml.SequenceNode) or len(value_node.value) != 2:
            _expect(value_node, f"domain.{key}", "[lo, hi]")
        lo, hi = (_number(item, f"domain.{key}", allow_inf=True) for item in value_node.value)
        if not lo < hi:
            _fail(value_node, f"domain.{key}: expected [lo, hi] with lo < hi, got [{lo}, {hi}]")
        bounds[key] = (lo, hi)
    return tuple(bounds.values())


@dataclass(frozen=True)
class _Field:
    key: str
    schema: dict
    parse: Callable[[yaml.Node, dict], object]
    default: Callable[[dict], object] | None = None  # None: the key is required


_IDENT_SCHEMA = {"type": "string", "pattern": f"^{_IDENT.pattern}$", "maxLength": MAX_NAME}
_BOUND_SCHEMA = {"anyOf": [{"type": "number"}, {"enum": sorted(_INF_WORDS)}]}
_FIELDS = (
    _Field(
        "name",
        {**_IDENT_SCHEMA, "description": "The op's function and module name."},
        lambda node, ctx: _identifier(node, "name", ctx),
    ),
    _Field(
        "doc",
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_DOC,
            "description": "One paragraph for the op's docstring.",
        },
        _parse_doc,
        lambda ctx: f"{ctx['name']}, generated by hogen.",
    ),
    _Field(
        "args",
        {
            "type": "array",
            "items": _IDENT_SCHEMA,
            "minItems": 1,
            "maxItems": MAX_ARGS,
            "uniqueItems": True,
            "description": "The differentiable inputs.",
        },
        _parse_args,
    ),
    _Field(
        "params",
        {
            "type": "object",
            "propertyNames": _IDENT_SCHEMA,
            "default": {},
            "additionalProperties": {"type": "number"},
            "description": "Non-differentiable floats with their defaults.",
        },
        _parse_params,
        lambda ctx: (),
    ),
    _Field(
        "expr",
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_EXPR,
            "description": _EXPR_DESCRIPTION,
        },
        _parse_expr,
    ),
    _Field(
        "order",
        {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_ORDER,
            "default": 2,
            "description": "Custom derivatives up to this order.",
        },
        _parse_order,
        lambda ctx: 2,
    ),
    _Field(
        "domain",
        {
            "type": "object",
            "propertyNames": _IDENT_SCHEMA,
            "additionalProperties": {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "prefixItems": [_BOUND_SCHEMA, _BOUND_SCHEMA],
            },
            "description": "Where accuracy is promised: [lo, hi] per arg.",
        },
        _parse_domain,
        lambda ctx: tuple((-INF, INF) for _ in ctx["args"]),
    ),
)
KNOWN_KEYS: tuple[str, ...] = tuple(field.key for field in _FIELDS)
SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hogen spec",
    "type": "object",
    "properties": {field.key: field.schema for field in _FIELDS},
    "required": [field.key for field in _FIELDS if field.default is None],
    "additionalProperties": False,
}
