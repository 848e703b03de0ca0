"""The expression grammar: an expression's text in, a SymPy expression out.

In: the text of `expr`, the SymPy symbols its names stand for, and where the text starts
in the file. Out: a SymPy expression built node by node from Python's `ast`, walked with a
whitelist: user text never reaches `eval`, `sympify` or their kin. Every problem raises
`_Invalid` at the 1-based (line, col) of the offending node.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Mapping
from fractions import Fraction

import sympy as sp

from codegen.front.calls import CALL_FORMS, call_form
from codegen.front.functions import FUNCTIONS
from codegen.front.yamlnodes import (
    _SIZE_ERRORS,
    MAX_BITS,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_EXPR,
    MAX_FLOAT_CHARS,
    MAX_INT_DIGITS,
    _close,
    _fail,
    _show,
)

_CONSTANTS = {"pi": sp.pi, "E": sp.E}
MAX_PIECES = 16
_SYMPY_ERRORS = (ArithmeticError, ValueError, TypeError, AttributeError, *_SIZE_ERRORS)

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
        self.where_depth = 0  # where/min/max/clamp being built around the current node

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
        if expr.has(sp.Piecewise):  # pieces at the top: each one stabilized on its own
            expr = sp.piecewise_fold(expr)
            if isinstance(expr, sp.Piecewise) and len(expr.args) > MAX_PIECES:
                self.fail(
                    tree.body,
                    f"expected at most {MAX_PIECES} pieces once where/min/max/clamp are "
                    f"combined, got {len(expr.args)}",
                )
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
        if node.id in FUNCTIONS or node.id in CALL_FORMS:
            self.fail(node, f"expected a call such as {node.id}(x), got the bare name {node.id!r}")
        known = [*self.names, *_CONSTANTS]
        hint = _close(node.id, known) or f"; expected one of: {', '.join(known)}"
        self.fail(node, f"undefined name {node.id!r}{hint}")

    def call(self, node: ast.Call, depth: int) -> sp.Expr:
        func = node.func
        if not isinstance(func, ast.Name):
            self.fail(func, f"expected a function name before '(', got {_construct(func)}")
        if func.id in CALL_FORMS:
            return call_form(self, node, func.id, depth)
        if func.id not in FUNCTIONS:
            known = [*FUNCTIONS, *CALL_FORMS]
            hint = _close(func.id, known) or f"; expected one of: {', '.join(known)}"
            self.fail(func, f"unknown function {func.id!r}{hint}")
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            got = "keyword arguments" if node.keywords else f"{len(node.args)} arguments"
            got = "'*' arguments" if any(isinstance(a, ast.Starred) for a in node.args) else got
            self.fail(node, f"{func.id}(): expected exactly one positional argument, got {got}")
        return FUNCTIONS[func.id].sympy_func(self.visit(node.args[0], depth + 1))

    def comparison(self, node: ast.AST, depth: int) -> sp.Expr:
        self.fail(
            node,
            f"{_construct(node)} is allowed only as the condition of where(cond, a, b), "
            "not as a value",
        )

    HANDLERS = {
        ast.Compare: comparison,
        ast.BoolOp: comparison,
        ast.BinOp: binop,
        ast.UnaryOp: unary,
        ast.Constant: constant,
        ast.Name: name,
        ast.Call: call,
    }
