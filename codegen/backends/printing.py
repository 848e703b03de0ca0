"""Lowered programs -> assignment lines, for any backend's printer of single steps.

In: a `lower.Program`, the names its outputs get, and a backend's `Dialect` (how one step
is printed, how a constant output is broadcast). Out: lines such as `v3 = f(x, v2)`, one
per step, split inside the call where a line would pass ruff's limit. Shared by every
backend, so only the printing of single steps differs between frameworks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from codegen.front import names
from codegen.lower import Program


@dataclass(frozen=True)
class Dialect:
    """How a backend prints: `expr(op, operands, rename)` for one step, and
    `constant(zeros_like, value)` for an output that is a constant."""

    expr: Callable[[str, tuple, dict], str]
    constant: Callable[[str, float], str]


def program_lines(
    program: Program, outputs: list[str], zeros_like: str, dialect: Dialect, indent: int = 0
) -> list[str]:
    """Assignment lines for `program`, with output temporaries renamed to `outputs`, fitting
    the line limit `indent` columns further in than a function body."""
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
        lines += fit(f"{target} = {dialect.expr(step.op, step.operands, rename)}", indent)
    for out, wanted in zip(program.outputs, outputs):
        if isinstance(out, float):
            lines.append(f"{wanted} = {dialect.constant(zeros_like, out)}")
        elif rename.get(out) != wanted:
            lines.append(f"{wanted} = {rename.get(out, out)}")
    return lines


LINE_LIMIT = 96  # ruff's 100, less the indentation of a function body


def fit(line: str, indent: int = 0) -> list[str]:
    """`target = f(a, b, ...)` as one line, or split inside the call's parentheses when long:
    the arguments on one indented line, or one per line if that is still too long."""
    limit = LINE_LIMIT - indent
    if len(line) <= limit or not line.endswith(")") or "(" not in line:
        return [line]
    head, _, rest = line.partition("(")
    parts = _top_level_split(rest[:-1])
    inner = ", ".join(parts)
    if len(inner) + 4 <= limit:
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


def operand(value, rename) -> str:
    """A step's operand as code: a renamed temporary, a name, or a float literal."""
    if isinstance(value, float) and math.isinf(value):
        return f'float("{value!r}")'
    if isinstance(value, float):
        return repr(value)
    return rename.get(value, value)


# Binary operations whose operands may be swapped, so that a constant goes second (the
# tensor's dtype then wins); atan2 and pow may not.
SYMMETRIC = frozenset({"add", "mul", "maximum", "minimum"})

SELECTS = {
    "where_less": ("less", "<"),
    "where_less_equal": ("less_equal", "<="),
    "where_greater": ("greater", ">"),
    "where_greater_equal": ("greater_equal", ">="),
}
# The masks of where conditions as operators, for the array backends (JAX, PyTorch) whose
# arrays overload them; TensorFlow prints the tf.math functions of the same names.
MASK_OPERATORS = {
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
    "equal": "==",
    "not_equal": "!=",
    "logical_and": "&",
    "logical_or": "|",
}


def mask_expr(op: str, a: list[str]) -> str | None:
    """A mask step as an operator expression, or None if `op` is no mask."""
    if op == "logical_not":
        return f"~{a[0]}"
    if op in MASK_OPERATORS:
        return f"({a[0]} {MASK_OPERATORS[op]} {a[1]})"
    return None
