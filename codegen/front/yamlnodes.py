"""YAML nodes to plain values, and where each came from.

In: the text of a spec file. Out: a composed PyYAML node tree (safe loader, no anchors
or aliases, only plain tags) and helpers that read scalars, mappings and numbers from
its nodes. Every problem raises `_Invalid` at a 1-based (line, col); `spec` attaches the
path and source line. The size limits of the whole front live here too.
"""

from __future__ import annotations

import difflib
import math
import re

import yaml

MAX_FILE, MAX_NAME, MAX_DOC, MAX_EXPR = 2**16, 64, 2000, 10_000  # PyYAML reads ~100 kB/s
MAX_ARGS, MAX_ORDER, MAX_DEPTH, MAX_NESTING = 4, 4, 100, 20
MAX_INT_DIGITS, MAX_FLOAT_CHARS, MAX_EXPONENT, MAX_BITS = 30, 100, 64, 4096
INF = math.inf
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_PLAIN_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")
_INF_WORDS = {"inf": INF, "+inf": INF, "-inf": -INF, ".inf": INF, "+.inf": INF, "-.inf": -INF}
_BRACKETS = re.compile(r"[\[\]{}]")
_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")  # the breaks PyYAML counts lines by
_YAML_TAG = "tag:yaml.org,2002:"
_TAGS = {
    yaml.ScalarNode: {"str", "int", "float", "bool", "null", "timestamp"},
    yaml.SequenceNode: {"seq"},
    yaml.MappingNode: {"map"},
}
_SIZE_ERRORS = (RecursionError, MemoryError)


class _Invalid(Exception):
    """A problem at a 1-based (line, col), before the path and source line are attached."""

    def __init__(self, where: tuple[int, int], message: str):
        super().__init__(message)
        self.where, self.message = where, message


def _at(node_or_mark) -> tuple[int, int]:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return mark.line + 1, mark.column + 1


def _fail(where, message: str):
    raise _Invalid(where if isinstance(where, tuple) else _at(where), message)


def _expect(node: yaml.Node, what: str, expected: str):
    _fail(node, f"{what}: expected {expected}, got {_got(node)}")


def _show(value) -> str:
    """A short, one-line rendering of a value that arrived."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _close(word: str, options) -> str:
    """'; did you mean ...?' for the option nearest `word`, or ''."""
    matches = difflib.get_close_matches(word, list(options), n=1)
    return f"; did you mean {matches[0]!r}?" if matches else ""


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing anchors and aliases: no alias bombs."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if getattr(event, "anchor", None) is not None:
            _fail(event.start_mark, "expected plain YAML values, got an anchor or alias")
        return super().compose_node(parent, index)


_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _position(text: str, index: int) -> tuple[int, int]:
    lines = _LINE_BREAK.split(text[:index])
    return len(lines), len(lines[-1]) + 1


def _check_nesting(text: str) -> None:
    """PyYAML scans deep flow collections in quadratic time: refuse them before it starts."""
    level = 0
    for bracket in _BRACKETS.finditer(text):
        level = level + 1 if bracket[0] in "[{" else max(level - 1, 0)
        if level > MAX_NESTING:
            _fail(
                _position(text, bracket.start()),
                f"invalid YAML: expected at most {MAX_NESTING} nested brackets, got more",
            )


def _compose(text: str) -> yaml.Node | None:
    _check_nesting(text)
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        _fail(mark or (1, 1), f"invalid YAML: {err.problem or err.context}")
    except yaml.reader.ReaderError as err:
        _fail(
            _position(text, err.position),
            f"invalid YAML: unacceptable character {chr(err.character)!r}",
        )
    except yaml.YAMLError as err:
        _fail((1, 1), f"invalid YAML: {type(err).__name__}")
    except _SIZE_ERRORS:
        _fail((1, 1), "invalid YAML: nested too deeply")


def _check_tags(root: yaml.Node) -> None:
    stack = [root]
    while stack:
        node = stack.pop()
        if not (node.tag.startswith(_YAML_TAG) and node.tag[len(_YAML_TAG) :] in _TAGS[type(node)]):
            tag = node.tag.replace(_YAML_TAG, "!!")
            _fail(node, f"expected plain YAML values, got the tag {tag!r}")
        if isinstance(node, yaml.MappingNode):
            stack.extend(item for pair in node.value for item in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _scalar(node: yaml.Node):
    """The value of a scalar node (str, int, float, bool or None); None for collections."""
    if not isinstance(node, yaml.ScalarNode):
        return None
    tag = node.tag[len(_YAML_TAG) :]
    if tag in ("str", "timestamp"):
        return node.value
    try:
        return getattr(_CONSTRUCTOR, f"construct_yaml_{tag}")(node)
    except (ValueError, OverflowError):  # an integer of thousands of digits: keep its text
        return node.value


def _got(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return f"a list of {len(node.value)}"
    return _show(_scalar(node))


def _mapping(node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        _expect(node, what, "a mapping")
    entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in node.value:
        key = _scalar(key_node)
        if not isinstance(key, str):
            _expect(key_node, what, "a name as key")
        if key in entries:
            first = entries[key][0].start_mark.line + 1
            _fail(key_node, f"{what}: duplicate key {key!r} (first on line {first})")
        entries[key] = (key_node, value_node)
    return entries


def _number(node: yaml.Node, what: str, allow_inf: bool = False) -> float:
    value = _scalar(node)
    word = value.strip().lower() if isinstance(value, str) else None
    if allow_inf and word in _INF_WORDS:
        return _INF_WORDS[word]
    if word and node.style is None and _PLAIN_NUMBER.fullmatch(word):
        value = float(word)  # YAML 1.1 reads 1e-3 as a string
    expected = "a number, inf or -inf" if allow_inf else "a finite number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _expect(node, what, expected)
    try:
        number = float(value)
    except OverflowError:  # a YAML integer of hundreds of digits
        number = math.copysign(INF, value)
    if math.isnan(number) or (math.isinf(number) and not allow_inf):
        _expect(node, what, expected)
    return number
