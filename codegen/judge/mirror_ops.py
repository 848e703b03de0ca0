"""The TensorFlow ops of a lowered `Program` as NumPy functions, for the mirror (`numeric`).

In: an op's name, its operands' arrays and a dtype. Out: its output as TensorFlow on CPU
computes it: cast to the dtype, subnormal results flushed to zero (`flush_subnormals`),
subnormal constants read as zero (`operand_value`), transcendentals rounded alike on every
processor (`portable`). `op_function` resolves an op once, so a program compiled to a
straight line (`numeric`) calls its functions directly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from codegen.front.functions import ALL_FUNCTIONS
from codegen.judge import portable

_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": portable.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "div_no_nan": lambda a, b: np.where(b == 0, np.zeros_like(a), a / b),
}
_UNARY = {
    "neg": np.negative,
    "square": np.square,
    "sqrt": np.sqrt,
    "rsqrt": lambda v: np.ones_like(v) / np.sqrt(v),
    "round": np.round,  # half to even, as tf.math.round
}


def operand_value(operand, values: dict, dtype) -> np.ndarray:
    """A step's output, or a constant as TensorFlow on CPU reads it: a subnormal one as 0
    (it treats subnormal operands as 0, so x < 5.6e-309 is False at x = 0 in float64)."""
    if isinstance(operand, str):
        return values[operand]
    constant = np.asarray(operand, dtype=dtype)
    return constant if not 0 < abs(constant) < _TINY[constant.dtype] else np.zeros((), dtype)


_BOOLEAN = {
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}


# Ops whose every output is one of their inputs (or its negation): over inputs flushed
# already, flushing again only turns -0.0 into +0.0 (`flush_subnormals`), as adding +0.0 does.
PICKS = frozenset(
    {"select", "maximum", "minimum", "clip", "neg", "abs", "no_neg_inf", "no_pos_inf"}
    | {"where_less", "where_less_equal", "where_greater", "where_greater_equal"}
)


def all_flushed(operands, producers: dict, dtype) -> bool:
    """Whether every operand is a step's output (flushed) or a constant that is 0 or normal;
    program inputs are neither."""
    for operand in operands:
        if isinstance(operand, str):
            if operand not in producers:
                return False
        elif operand != 0 and not abs(float(operand)) >= np.finfo(dtype).tiny:
            return False
    return True


def apply_op(op: str, args: list[np.ndarray], dtype, flush: bool = True) -> np.ndarray:
    """One op of the mirror on its args' arrays: a mask as it comes, any other output cast to
    `dtype` and flushed (`finished`)."""
    function, mask = op_function(op, np.dtype(dtype))
    out = function(*args)
    return out if mask else finished(out, dtype, flush)


@functools.cache
def op_function(op: str, dtype: np.dtype) -> tuple[Callable, bool]:
    """(the NumPy function of `op`'s args, True where it returns a mask (`where` conditions
    stay boolean)); its output is then `finished`."""
    if op in _BOOLEAN:
        return _BOOLEAN[op], True
    if op == "logical_not":
        return np.logical_not, True
    return _NUMERIC.get(op) or _BINARY.get(op) or _UNARY.get(op) or _bounded(op, dtype), False


def _bounded(op: str, dtype: np.dtype) -> Callable:
    """no_neg_inf and no_pos_inf, which clip to `dtype`'s finite range; else hogen's functions."""
    if op == "no_neg_inf":
        return lambda a: np.maximum(a, np.finfo(dtype).min)
    if op == "no_pos_inf":
        return lambda a: np.minimum(a, np.finfo(dtype).max)
    return ALL_FUNCTIONS[op].numpy_func


def _fill_like(a, value):
    """A constant piece keeps NaN in, as TensorFlow's sign(x) * 0 does."""
    return np.sign(a) * 0 if value == 0 else np.sign(a) * 0 + value


_NUMERIC = {
    "select": np.where,
    "clip": np.clip,
    "fill_like": _fill_like,
    "where_less_equal": lambda a, b, t, f: np.where(a <= b, t, f),
    "where_less": lambda a, b, t, f: np.where(a < b, t, f),
    "where_greater_equal": lambda a, b, t, f: np.where(a >= b, t, f),
    "where_greater": lambda a, b, t, f: np.where(a > b, t, f),
}


def finished(out, dtype, flush: bool) -> np.ndarray:
    """An op's output as the mirror keeps it: cast to `dtype`, subnormals flushed (`flush`),
    and always an array of its own."""
    out = np.asarray(out, dtype=dtype)
    if flush or not out.flags.writeable:
        return flush_subnormals(out)
    return np.add(out, 0, out=out)  # a new array, each op's own


_TINY = {np.dtype(t): np.finfo(t).tiny.astype(t) for t in (np.float16, np.float32, np.float64)}


def flush_subnormals(values: np.ndarray) -> np.ndarray:
    """TensorFlow on CPU flushes subnormal results to zero; so does the mirror. Every zero
    it returns is +0.0 but a flushed negative one, -0.0 (as it always has: the builds'
    bytes depend on it)."""
    tiny = _TINY.get(values.dtype)
    tiny = np.finfo(values.dtype).tiny if tiny is None else tiny
    magnitude = np.abs(values)
    if not values.size or not np.fmin.reduce(magnitude, axis=None) < tiny:  # fmin skips NaN
        return values
    small = magnitude < tiny
    out = values.copy()
    np.putmask(out, small, 0.0)
    negative = small & (values < 0)
    if negative.any():
        np.putmask(out, negative, -0.0)
    return out


def _xla_sinh(x: np.ndarray) -> np.ndarray:
    """sinh as XLA expands it (`xla/client/lib/math.cc`): where |x| >= 1, exp(x + log(1/2)) -
    exp(-x + log(1/2)), whose rounded exponent costs |x| ulps (8 bits at x = 300 in float64,
    where tf.math.sinh in eager mode is within one); below 1, (t + t/(t + 1))/2 with t =
    expm1(x). Each step rounded in x's dtype."""
    dtype = x.dtype
    half, log_half = dtype.type(0.5), portable.log(dtype.type(0.5))
    large = portable.exp(x + log_half) - portable.exp(-x + log_half)
    t = portable.expm1(x)
    small = half * (t + t / (t + dtype.type(1)))
    return np.where(np.abs(x) < 1, small, large).astype(dtype)


def _xla_cosh(x: np.ndarray) -> np.ndarray:
    """cosh as XLA expands it: exp(x + log(1/2)) + exp(-x + log(1/2)) everywhere."""
    log_half = portable.log(x.dtype.type(0.5))
    return (portable.exp(x + log_half) + portable.exp(-x + log_half)).astype(x.dtype)


def _xla_asin(x: np.ndarray) -> np.ndarray:
    """asin as XLA expands it, 2*atan2(x, 1 + sqrt(1 - x*x)): the atan2, about x/2, is
    subnormal and flushed where |x| < 2 * tiny, so asin(tiny) is 0 under XLA (measured)."""
    flushed = np.abs(x) < 2 * np.finfo(x.dtype).tiny
    return np.where(flushed, x * 0, portable.arcsin(x)).astype(x.dtype)


# Ops XLA expands into other ops, whose rounding differs from TensorFlow's kernels
XLA_EXPANDED: dict[str, Callable] = {"sinh": _xla_sinh, "cosh": _xla_cosh, "asin": _xla_asin}
