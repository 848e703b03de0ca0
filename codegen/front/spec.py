"""Spec loading: the text of a YAML spec in, a validated `Spec` out.

In: the bytes of a spec file (docs/design.md, "The spec"). Out: a frozen `Spec`
whose `expr` is a SymPy expression built node by node from Python's `ast`,
walked with a whitelist: user text never reaches `eval`, `sympify` or their
kin. YAML is composed with the safe loader, and only plain values pass: no
tags beyond str/int/float/bool/null, no anchors or aliases. Every problem
raises `SpecError`, one line naming file:line:col, what was expected and what
arrived. `SCHEMA` and `KNOWN_KEYS` come from `_FIELDS`, the same table the
loader validates with.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import hashlib
import keyword
import math
import pathlib
import re
import unicodedata
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp
import yaml

from codegen import __version__
from codegen.front.functions import FUNCTIONS
from codegen.front.names import collisions, is_reserved

__all__ = [
    "KNOWN_KEYS",
    "SCHEMA",
    "Spec",
    "SpecError",
    "load_spec",
    "parse_expression",
    "parse_spec_text",
]

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
_CONSTANTS = {"pi": sp.pi, "E": sp.E}
_DOC_CONTROL = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
_TOO_BIG = f"expected a spec of at most {MAX_FILE} bytes, got more"
_SIZE_ERRORS = (RecursionError, MemoryError)
_SYMPY_ERRORS = (ArithmeticError, ValueError, TypeError, AttributeError, *_SIZE_ERRORS)


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


# --- YAML nodes to plain values -------------------------------------------------------------


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


# --- fields ---------------------------------------------------------------------------------


def _reserved_reason(name: str, what: str) -> str | None:
    if name in FUNCTIONS and what != "name":  # an op may be called sigmoid; an arg may not
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
            "description": "The function, in hogen's expression grammar.",
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


# --- the expression grammar -----------------------------------------------------------------

_EXPECTED = "expected a number, a name, + - * / **, parentheses or a function call"
_CONSTRUCTS = {
    "Attribute": "attribute access",
    "Subscript": "a subscript",
    "Lambda": "a lambda",
    "ListComp": "a list comprehension",
    "SetComp": "a set comprehension",
    "Set": "a set",
    "DictComp": "a dict comprehension",
    "GeneratorExp": "a generator expression",
    "JoinedStr": "an f-string",
    "NamedExpr": "an assignment (:=)",
    "Compare": "a comparison",
    "BoolOp": "'and'/'or'",
    "IfExp": "a conditional expression",
    "Starred": "'*'",
    "List": "a list",
    "Tuple": "a tuple",
    "Dict": "a dict",
    "Await": "'await'",
    "Yield": "'yield'",
    "FloorDiv": "'//'",
    "Mod": "'%'",
    "MatMult": "'@'",
    "BitAnd": "'&'",
    "BitOr": "'|'",
    "BitXor": "'^'",
    "LShift": "'<<'",
    "RShift": "'>>'",
    "Not": "'not'",
    "Invert": "'~'",
}
_CHAINS = {
    ast.Add: (ast.Add, ast.Sub),
    ast.Sub: (ast.Add, ast.Sub),
    ast.Mult: (ast.Mult, ast.Div),
    ast.Div: (ast.Mult, ast.Div),
}


def _construct(node: ast.AST) -> str:
    return _CONSTRUCTS.get(type(node).__name__, type(node).__name__)


def _bits(expr: sp.Expr) -> int:
    """About log2 of the size of expr's rational coefficient (0 for 1 or none)."""
    coeff = expr.as_coeff_Mul()[0] if isinstance(expr, sp.Expr) else None
    if not isinstance(coeff, sp.Rational):
        return 0
    return max(abs(coeff.p).bit_length() - 1, 0) + coeff.q.bit_length() - 1


class _Walker:
    """Builds SymPy objects from the ast of `text`, accepting only the grammar.

    `origin` is where `text` starts in the file; with `exact`, errors point into the text.
    """

    def __init__(self, text: str, names: Mapping[str, sp.Symbol], origin, exact: bool):
        self.text, self.names, self.origin, self.exact = text, dict(names), origin, exact
        self.lines = re.split("\r\n|\r|\n", text)

    def where(self, lineno: int, offset: int, in_bytes: bool = True) -> tuple[int, int]:
        if not self.exact or not 1 <= lineno <= len(self.lines):
            return self.origin
        if in_bytes:  # ast columns count UTF-8 bytes
            offset = len(self.lines[lineno - 1].encode()[:offset].decode(errors="ignore"))
        line, col = self.origin
        return (line, col + offset) if lineno == 1 else (line + lineno - 1, offset + 1)

    def fail(self, node: ast.AST, message: str):
        _fail(self.where(node.lineno, node.col_offset), message)

    def build(self) -> sp.Expr:
        if not 1 <= len(self.text) <= MAX_EXPR:
            _fail(self.origin, f"expected 1..{MAX_EXPR} characters, got {len(self.text)}")
        try:
            with warnings.catch_warnings():  # SyntaxWarnings about user text are noise here
                warnings.simplefilter("ignore")
                tree = ast.parse(self.text, mode="eval")
        except SyntaxError as err:
            where = self.where(err.lineno or 1, (err.offset or 1) - 1, in_bytes=False)
            _fail(where, f"invalid syntax: {err.msg}")
        except _SIZE_ERRORS:
            _fail(self.origin, "expression nested too deeply or too long")
        except ValueError as err:
            _fail(self.origin, f"invalid expression: {err}")
        expr = self.visit(tree.body, 0)
        if expr.has(sp.zoo, sp.nan, sp.oo, -sp.oo, sp.I):
            self.fail(tree.body, f"expected a finite real expression, got {_show(str(expr))}")
        if any(_bits(atom) > MAX_BITS for atom in expr.atoms(sp.Rational)):
            self.fail(tree.body, f"expected numbers under 2**{MAX_BITS}, got a larger one")
        return expr

    def visit(self, node: ast.AST, depth: int) -> sp.Expr:
        if depth > MAX_DEPTH:
            self.fail(node, f"expression nested too deeply (more than {MAX_DEPTH} levels)")
        handler = self.HANDLERS.get(type(node))
        if handler is None:
            self.fail(node, f"{_EXPECTED}, got {_construct(node)}")
        try:
            return handler(self, node, depth)
        except _SYMPY_ERRORS as err:
            self.fail(node, f"SymPy cannot build this: {type(err).__name__} {_show(str(err))}")

    def binop(self, node: ast.BinOp, depth: int) -> sp.Expr:
        if isinstance(node.op, ast.Pow):
            return self.power(node, depth)
        if type(node.op) not in _CHAINS:
            self.fail(node, f"{_EXPECTED}, got {_construct(node.op)}")
        kinds, links = _CHAINS[type(node.op)], []
        while isinstance(node, ast.BinOp) and isinstance(node.op, kinds):  # a+b-c: one Add
            links.append(node)
            node = node.left
        items = [self.visit(node, depth + 1)]
        for link in reversed(links):
            item = self.visit(link.right, depth + 1)
            items.append(
                -item
                if isinstance(link.op, ast.Sub)
                else sp.Pow(item, -1)
                if isinstance(link.op, ast.Div)
                else item
            )
        if kinds[0] is ast.Add:
            return sp.Add(*items)
        if sum(_bits(item) for item in items) > MAX_BITS:
            self.fail(links[0], f"expected numbers under 2**{MAX_BITS}, got a larger product")
        return sp.Mul(*items)

    def power(self, node: ast.BinOp, depth: int) -> sp.Expr:
        base = self.visit(node.left, depth + 1)
        exponent = self.visit(node.right, depth + 1)
        if isinstance(exponent, sp.Number):  # guard before SymPy evaluates
            if isinstance(base, sp.Number) and abs(exponent) > MAX_EXPONENT:
                self.fail(
                    node,
                    f"exponent too large: expected at most {MAX_EXPONENT} for a "
                    f"number, got {_show(str(exponent))}",
                )
            if abs(exponent) * _bits(base) > MAX_BITS:
                self.fail(node, f"expected numbers under 2**{MAX_BITS}, got a larger power")
        return sp.Pow(base, exponent)

    def unary(self, node: ast.UnaryOp, depth: int) -> sp.Expr:
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            self.fail(node, f"{_EXPECTED}, got {_construct(node.op)}")
        operand = self.visit(node.operand, depth + 1)
        return -operand if isinstance(node.op, ast.USub) else operand

    def constant(self, node: ast.Constant, depth: int) -> sp.Expr:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(node, f"expected a real number, got {type(value).__name__} {_show(value)}")
        if isinstance(value, int):
            if abs(value) >= 10**MAX_INT_DIGITS:
                self.fail(node, f"expected an integer of at most {MAX_INT_DIGITS} digits")
            return sp.Integer(value)
        text = (ast.get_source_segment(self.text, node) or repr(value)).replace("_", "")
        exact = Fraction(text) if len(text) <= MAX_FLOAT_CHARS else None
        if exact is None or not math.isfinite(value) or (value == 0) != (exact == 0):
            self.fail(
                node,
                f"expected a float within the float64 range and of at most "
                f"{MAX_FLOAT_CHARS} characters, got {_show(text)}",
            )
        return sp.Rational(exact.numerator, exact.denominator)  # exactly as written

    def name(self, node: ast.Name, depth: int) -> sp.Expr:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            self.fail(node, f"expected a call such as {node.id}(x), got the bare name {node.id!r}")
        known = [*self.names, *_CONSTANTS]
        hint = _close(node.id, known) or f"; expected one of: {', '.join(known)}"
        self.fail(node, f"undefined name {node.id!r}{hint}")

    def call(self, node: ast.Call, depth: int) -> sp.Expr:
        func = node.func
        if not isinstance(func, ast.Name):
            self.fail(func, f"expected a function name before '(', got {_construct(func)}")
        if func.id not in FUNCTIONS:
            hint = _close(func.id, FUNCTIONS) or f"; expected one of: {', '.join(FUNCTIONS)}"
            self.fail(func, f"unknown function {func.id!r}{hint}")
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            got = "keyword arguments" if node.keywords else f"{len(node.args)} arguments"
            got = "'*' arguments" if any(isinstance(a, ast.Starred) for a in node.args) else got
            self.fail(node, f"{func.id}(): expected exactly one positional argument, got {got}")
        return FUNCTIONS[func.id].sympy_func(self.visit(node.args[0], depth + 1))

    HANDLERS = {
        ast.BinOp: binop,
        ast.UnaryOp: unary,
        ast.Constant: constant,
        ast.Name: name,
        ast.Call: call,
    }


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
