"""`hogen new`: the text of a new spec file, validated by the loader before it is written.

In: a name, an expression, its args, an order, a doc line, and where the spec and
the JSON Schema live. Out: the spec's text, beginning with the
`# yaml-language-server: $schema=...` line that makes editors validate it
against `hogen schema`'s output, or a `SpecError` from `codegen.front.spec` (the same
checks `hogen build` makes: if it parses here, it builds). Scalars are written
by PyYAML, which quotes what YAML would misread. Writes nothing itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from codegen.cli import outputs
from codegen.front.spec import SCHEMA, Spec, SpecError, parse_spec_text


def schema_text() -> str:
    """The JSON Schema of a spec, as `hogen schema` prints it and docs/spec.schema.json holds."""
    return json.dumps(SCHEMA, indent=2, sort_keys=True) + "\n"


def _entry(key: str, value) -> str:
    """`key: value` with the value quoted as YAML needs: one line, lists in brackets."""
    flow = None if isinstance(value, list) else False
    return yaml.safe_dump({key: value}, allow_unicode=True, width=2**31, default_flow_style=flow)


def split_args(text: str) -> list[str]:
    """`x,y` or `x, y` -> ["x", "y"]."""
    return [part.strip() for part in text.split(",")]


def spec_text(name: str, expr: str, args: list[str], order: int, doc: str | None, schema: str):
    """The text of the spec; `schema` is the schema's path relative to the spec's folder."""
    doc = doc or f"{name}({', '.join(args)}), written by hogen new."
    lines = [
        f"# yaml-language-server: $schema={schema}\n",
        _entry("name", name),
        _entry("doc", doc),
        _entry("args", args),
        _entry("expr", expr),
        f"order: {order}\n",
    ]
    return "".join(lines)


def new_spec(
    name: str, expr: str, args: list[str], order: int, doc: str | None, path: Path, schema: Path
) -> tuple[str, Spec]:
    """The text for `path` and the Spec it parses to; `SpecError` if it would not build."""
    text = spec_text(name, expr, args, order, doc, outputs.relative(schema, path.parent))
    spec = parse_spec_text(text, outputs.display_path(path))
    if spec.expr_text != expr.strip():
        raise SpecError(outputs.display_path(path), 5, 7, f"expr: could not write {expr!r} as is")
    return text, spec
