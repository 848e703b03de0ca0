"""Spec loading: the text of a YAML spec in, a validated `Spec` out.

In: the bytes of a spec file (docs/design.md, "The spec"). Out: a frozen `Spec`
whose `expr` is a SymPy expression built node by node from Python's `ast`,
walked with a whitelist: user text never reaches `eval`, `sympify` or their
kin. YAML is composed with the safe loader, and only plain values pass: no
tags beyond str/int/float/bool/null, no anchors or aliases. Every problem
raises `SpecError`, one line naming file:line:col, what was expected and what
arrived. Modules: `yamlnodes` (YAML to values), `fields` (one parser per key, the
JSON Schema), `grammar` (the expression walker).
"""

from __future__ import annotations

import hashlib
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
import yaml

from codegen import __version__
from codegen.front.fields import _FIELDS, KNOWN_KEYS, SCHEMA
from codegen.front.grammar import _Walker
from codegen.front.names import collisions
from codegen.front.yamlnodes import (
    _LINE_BREAK,
    MAX_FILE,
    _check_tags,
    _close,
    _compose,
    _fail,
    _got,
    _Invalid,
    _mapping,
)

__all__ = [
    "KNOWN_KEYS",
    "SCHEMA",
    "Spec",
    "SpecError",
    "load_spec",
    "parse_expression",
    "parse_spec_text",
]

_TOO_BIG = f"expected a spec of at most {MAX_FILE} bytes, got more"


class SpecError(Exception):
    """A spec that cannot be used. `str()` is one line: `path:line:col: message`."""

    def __init__(
        self, path: str, line: int, col: int, message: str, source_line: str | None = None
    ):
        self.path, self.line, self.col, self.source_line = str(path), line, col, source_line
        self.message = " ".join(message.splitlines())
        super().__init__(f"{self.path}:{line}:{col}: {self.message}")

    def __reduce__(self):  # picklable, e.g. across worker processes
        return SpecError, (self.path, self.line, self.col, self.message, self.source_line)


@dataclass(frozen=True)
class Spec:
    """A validated spec; `expr` is built from Symbols `Symbol(name, real=True)`."""

    name: str
    doc: str
    args: tuple[str, ...]
    params: tuple[tuple[str, float], ...]
    expr: sp.Expr
    expr_text: str
    order: int
    domain: tuple[tuple[float, float], ...]
    path: str
    sha256: str

    @property
    def arg_symbols(self) -> tuple[sp.Symbol, ...]:
        return tuple(sp.Symbol(arg, real=True) for arg in self.args)

    @property
    def param_symbols(self) -> tuple[sp.Symbol, ...]:
        return tuple(sp.Symbol(param, real=True) for param, _ in self.params)


def parse_expression(
    text: str, names: Mapping[str, sp.Symbol], *, path: str, line: int, col: int
) -> sp.Expr:
    """SymPy from an expression of the grammar; `text` starts at `line`:`col` of `path`."""
    try:
        return _Walker(text.strip(), names, (line, col), text == text.lstrip()).build()
    except _Invalid as bad:
        raise SpecError(str(path), *bad.where, bad.message) from None


# --- the whole spec -------------------------------------------------------------------------


def _validate(root: yaml.Node | None, lines: list[str]) -> dict:
    expected = f"a mapping with the keys {', '.join(KNOWN_KEYS)}"
    if root is None:
        _fail((1, 1), f"expected {expected}, got an empty file")
    _check_tags(root)
    if not isinstance(root, yaml.MappingNode):
        _fail(root, f"expected {expected}, got {_got(root)}")
    entries = _mapping(root, "spec")
    for key, (key_node, _) in entries.items():
        if key not in KNOWN_KEYS:
            _fail(
                key_node,
                f"unknown key {key!r}"
                + (_close(key, KNOWN_KEYS) or f"; expected one of {expected}"),
            )
    required = [field.key for field in _FIELDS if field.default is None]
    missing = [key for key in required if key not in entries]
    if missing:
        _fail(
            root,
            f"expected the required keys {', '.join(required)}; missing: " + ", ".join(missing),
        )
    ctx: dict = {"_lines": lines, "_names": {}}
    for field in _FIELDS:
        entry = entries.get(field.key)
        ctx[field.key] = field.parse(entry[1], ctx) if entry else field.default(ctx)
    for problem in collisions(ctx["name"], ctx["args"], tuple(dict(ctx["params"]))):
        what, node = next(
            (ctx["_names"][name] for name in reversed(ctx["_names"]) if f"'{name}'" in problem),
            ("name", root),
        )
        _fail(node, f"{what}: {problem}")
    return {field.key: ctx[field.key] for field in _FIELDS}


def _spec(text: str, path: str, data: bytes) -> Spec:
    text = text.removeprefix("\ufeff")
    lines = _LINE_BREAK.split(text)
    try:
        if len(data) > MAX_FILE:
            _fail((1, 1), _TOO_BIG)
        values = _validate(_compose(text), lines)
    except _Invalid as bad:
        line, col = bad.where
        source = lines[line - 1] if 1 <= line <= len(lines) else None
        raise SpecError(path, line, col, bad.message, source) from None
    expr, expr_text = values.pop("expr")
    sha256 = hashlib.sha256(data + b"\0" + __version__.encode()).hexdigest()
    return Spec(**values, expr=expr, expr_text=expr_text, path=path, sha256=sha256)


def parse_spec_text(text: str, path: str) -> Spec:
    """A Spec from the text of a spec file; `path` is named in errors and kept."""
    return _spec(text, str(path), text.encode("utf-8", "surrogatepass"))


def load_spec(path: str | pathlib.Path) -> Spec:
    """Read and validate the spec file at `path`."""
    path = str(path)
    try:
        with open(path, "rb") as handle:  # not read_bytes: /dev/zero must not fill memory
            data = handle.read(MAX_FILE + 1)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise SpecError(path, 1, 1, f"expected a readable file, got {reason}") from None
    if len(data) > MAX_FILE:
        raise SpecError(path, 1, 1, _TOO_BIG)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = len(data[data.rfind(b"\n", 0, err.start) + 1 : err.start].decode(errors="replace"))
        raise SpecError(
            path, line, col + 1, f"expected UTF-8 text, got the byte 0x{data[err.start]:02x}"
        ) from None
    return _spec(text, path, data)
