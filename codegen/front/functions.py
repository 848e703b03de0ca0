"""The functions a spec may call, and what each one is in every back end.

In: nothing (a table). Out: `FUNCTIONS`, a mapping from the name a spec
writes (`sigmoid`) to a `FunctionInfo` that says how SymPy builds it, how
TensorFlow computes it, and how NumPy mirrors that TensorFlow op. The ball
arithmetic reference (`accuracy`) looks up the same table by SymPy class, so
a function added here is known to the parser, the printer, the stabilizer
and the reference at once.

`sigmoid` and `softplus` are SymPy functions of our own: SymPy has neither,
and keeping them whole lets derivatives be written through them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1, hypot, log1p

from codegen.front.gamma import fast_polygamma, gamma_difference
from codegen.front.rounding import (
    compensation,
    exponent_error,
    exponent_error_values,
    square_head,
    square_head_values,
    two_sum_compensation,
)
from codegen.judge import portable

__all__ = [
    "FUNCTIONS",
    "ALL_FUNCTIONS",
    "FunctionInfo",
    "sigmoid",
    "softplus",
    "erfcx",
    "log1p",
    "expm1",
    "by_class",
]


class sigmoid(sp.Function):  # noqa: N801 - SymPy function classes are lower case
    """The logistic function 1 / (1 + exp(-u))."""

    nargs = 1

    def fdiff(self, argindex=1):
        u = self.args[0]
        return sigmoid(u) * sigmoid(-u)

    @classmethod
    def eval(cls, u):
        if u.is_zero:
            return sp.Rational(1, 2)
        return None

    def _eval_rewrite_as_exp(self, u, **kwargs):
        return 1 / (1 + sp.exp(-u))

    @staticmethod
    def taylor_term(n, x, *previous_terms):
        """The x**n term of sigmoid(x) = 1/2 + tanh(x/2)/2 at 0. SymPy's generic term puts 0
        for the whole argument into the n-th derivative: of sigmoid(-u) that leaves the
        sigmoid(u) factors standing, and the series came out wrong (a u**2 term), and slow
        (sigmoid(u)*sigmoid(-u) to 16 terms ran 100 s)."""
        if n == 0:
            return sp.Rational(1, 2)
        return sp.tanh.taylor_term(n, x / 2) / 2

    def _eval_evalf(self, prec):
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real

    def _eval_is_positive(self):
        return True if self.args[0].is_real else None


class softplus(sp.Function):  # noqa: N801
    """log(1 + exp(u)), computed without overflow."""

    nargs = 1

    def fdiff(self, argindex=1):
        return sigmoid(self.args[0])

    @classmethod
    def eval(cls, u):
        if u.is_zero:
            return sp.log(2)
        return None

    def _eval_rewrite_as_exp(self, u, **kwargs):
        return sp.log(1 + sp.exp(u))

    def _eval_rewrite_as_log(self, u, **kwargs):
        return sp.log(1 + sp.exp(u))

    @staticmethod
    def taylor_term(n, x, *previous_terms):
        """The x**n term at 0, from sigmoid's: softplus' = sigmoid (see `sigmoid.taylor_term`)."""
        if n == 0:
            return sp.log(2)
        return sigmoid.taylor_term(n - 1, x) * x / n

    def _eval_evalf(self, prec):
        return self.rewrite(sp.exp)._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real

    def _eval_is_positive(self):
        return True if self.args[0].is_real else None


class erfcx(sp.Function):  # noqa: N801
    """The scaled complementary error function exp(u**2) * erfc(u); TF has no kernel for it:
    `lower` computes it from stable pieces (`composites.lower_erfcx`)."""

    nargs = 1

    def fdiff(self, argindex=1):
        u = self.args[0]
        return 2 * u * erfcx(u) - 2 / sp.sqrt(sp.pi)

    @classmethod
    def eval(cls, u):
        if u.is_zero:
            return sp.Integer(1)
        return None

    def _eval_rewrite_as_erfc(self, u, **kwargs):
        return sp.exp(u**2) * sp.erfc(u)

    def _eval_evalf(self, prec):
        return self.rewrite(sp.erfc)._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real

    def _eval_is_positive(self):
        return True if self.args[0].is_real else None

    def _eval_aseries(self, n, args0, x, logx):
        """At +oo: 1/(z sqrt(pi)) sum_k (-1)**k (2k-1)!!/(2 z**2)**k, as SymPy's erfc has."""
        z = self.args[0]
        if args0[0] is not sp.oo:
            return super()._eval_aseries(n, args0, x, logx)
        try:
            _, ex = z.leadterm(x)
        except (ValueError, NotImplementedError):
            return self
        if not (-ex).is_positive:
            return super()._eval_aseries(n, args0, x, logx)
        terms = int(sp.ceiling(n / -ex))
        series = [
            sp.S.NegativeOne**k * sp.factorial2(2 * k - 1) / (z ** (2 * k + 1) * 2**k)
            for k in range(terms)
        ]
        # each term over sqrt(pi) and the Order outside: `removeO` strips only a top-level O
        return sp.Add(
            *(term / sp.sqrt(sp.pi) for term in series), sp.Order(1 / z ** (2 * terms + 1), x)
        )


def _erfcx(u: float) -> float:
    import mpmath

    return float(mpmath.exp(mpmath.mpf(u) ** 2) * mpmath.erfc(u)) if u < 1e8 else 0.5641895835 / u


def _ndtr(u):
    """erfc(-u / sqrt(2)) / 2, kept whole: SymPy would write erfc(-v) as 2 - erfc(v)."""
    return sp.erfc(-u / sp.sqrt(2), evaluate=False) / 2


def _np_sigmoid(u):
    # TensorFlow's kernel: exp of a non-positive argument only, so no overflow.
    e = portable.exp(-np.abs(u))
    one = np.ones_like(u)
    return np.where(u >= 0, one / (one + e), e / (one + e))


def _np_softplus(u):
    return portable.logaddexp(np.zeros_like(u), u)


def _np_erf(u):
    import math

    out = np.vectorize(math.erf, otypes=[np.float64])(u.astype(np.float64)).astype(u.dtype)
    if u.dtype == np.float64:  # TensorFlow's float64 kernel squares u: NaN once u*u overflows
        with np.errstate(over="ignore"):
            out = np.where(np.isinf(u * u), np.nan, out)
    return out


def _np_erfc(u):
    import math

    out = np.vectorize(math.erfc, otypes=[np.float64])(u.astype(np.float64))
    return out.astype(u.dtype)


def _elementwise(scalar):
    """A NumPy mirror from a float64 scalar function: errors give NaN, overflow inf."""

    def one(u: float) -> float:
        try:
            return float(scalar(u))
        except (ValueError, ZeroDivisionError):
            return math.nan
        except OverflowError:
            return math.inf

    def mirror(u):
        u = np.asarray(u)
        out = np.vectorize(one, otypes=[np.float64])(u.astype(np.float64))
        return out.astype(u.dtype)

    return mirror


def _lgamma(u: float) -> float:
    if u <= 0 and u == int(u):  # TensorFlow's lgamma: +inf at the poles
        return math.inf
    return math.lgamma(u)


# The mirror evaluates every candidate at one build's sample points: the same args, so the
# same values, thousands of times over (exp(lgamma(x + y) - lgamma(x) - lgamma(y)): 5 million
# digamma calls in mpmath, 100 s of its build). Each value is computed once.
_MPMATH_VALUES = 1 << 18


@functools.lru_cache(maxsize=_MPMATH_VALUES)
def _polygamma(n: float, u: float) -> float:
    import mpmath

    if u <= 0 and u == int(u):
        return math.nan if n == 0 else math.inf
    return float(mpmath.psi(int(n), u)) if math.isfinite(u) else _polygamma_at_inf(n, u)


def _polygamma_at_inf(n: float, u: float) -> float:
    if math.isnan(u) or u < 0:
        return math.nan
    return math.inf if n == 0 else 0.0


def _np_polygamma(n, u):
    """polygamma as TensorFlow computes it: n! * zeta(n + 1, u), whose terms u**-(n + 1)
    flush to 0 below the dtype's smallest normal (tf.math.polygamma(1, 1e19) is 0 in
    float32, (1, 1.4e154) in float64, where the exact values are normal numbers)."""
    u = np.asarray(u)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), u.shape)
    one = np.vectorize(_polygamma, otypes=[np.float64])
    with np.errstate(all="ignore"):
        out = fast_polygamma(int(n.flat[0]), u) if n.size else np.zeros(u.shape)
        rest = np.isnan(out) & (np.unique(n).size == 1)
        out[rest] = one(n[rest], u.astype(np.float64)[rest])
        out = out if np.unique(n).size == 1 else one(n, u.astype(np.float64))
        tiny = float(np.finfo(u.dtype).tiny) if u.dtype.kind == "f" else 0.0
        flushed = (n >= 1) & (np.abs(u.astype(np.float64)) ** -(n + 1) < tiny)
        return np.where(flushed, 0.0, out).astype(u.dtype)


@functools.lru_cache(maxsize=_MPMATH_VALUES)
def _gamma_difference(n: float, u: float, d: float) -> float:
    import mpmath

    f = mpmath.loggamma if n == -1 else lambda x: mpmath.psi(int(n), x)
    with mpmath.workdps(60):
        return float(f(mpmath.mpf(u)) - f(mpmath.mpf(u) + mpmath.mpf(d)))


@functools.lru_cache(maxsize=_MPMATH_VALUES)
def _erfinv(u: float) -> float:
    import mpmath

    if abs(u) > 1 or math.isnan(u):
        return math.nan
    return float(mpmath.erfinv(u)) if abs(u) < 1 else math.copysign(math.inf, u)


@dataclass(frozen=True)
class FunctionInfo:
    """One callable of the expression grammar."""

    name: str
    sympy_func: Callable[..., sp.Expr]
    tf_name: str
    numpy_func: Callable[[np.ndarray], np.ndarray]


FUNCTIONS: dict[str, FunctionInfo] = {
    info.name: info
    for info in (
        FunctionInfo("exp", sp.exp, "tf.math.exp", portable.exp),
        FunctionInfo("log", sp.log, "tf.math.log", portable.log),
        FunctionInfo("sqrt", sp.sqrt, "tf.math.sqrt", np.sqrt),
        FunctionInfo("sin", sp.sin, "tf.math.sin", portable.sin),
        FunctionInfo("cos", sp.cos, "tf.math.cos", portable.cos),
        FunctionInfo("tan", sp.tan, "tf.math.tan", portable.tan),
        FunctionInfo("asin", sp.asin, "tf.math.asin", portable.arcsin),
        FunctionInfo("acos", sp.acos, "tf.math.acos", portable.arccos),
        FunctionInfo("atan", sp.atan, "tf.math.atan", portable.arctan),
        FunctionInfo("sinh", sp.sinh, "tf.math.sinh", portable.sinh),
        FunctionInfo("cosh", sp.cosh, "tf.math.cosh", portable.cosh),
        FunctionInfo("tanh", sp.tanh, "tf.math.tanh", portable.tanh),
        FunctionInfo("asinh", sp.asinh, "tf.math.asinh", portable.arcsinh),
        FunctionInfo("acosh", sp.acosh, "tf.math.acosh", portable.arccosh),
        FunctionInfo("atanh", sp.atanh, "tf.math.atanh", portable.arctanh),
        FunctionInfo("erf", sp.erf, "tf.math.erf", _np_erf),
        FunctionInfo("erfc", sp.erfc, "tf.math.erfc", _np_erfc),
        FunctionInfo("log1p", log1p, "tf.math.log1p", portable.log1p),
        FunctionInfo("expm1", expm1, "tf.math.expm1", portable.expm1),
        FunctionInfo("sigmoid", sigmoid, "tf.math.sigmoid", _np_sigmoid),
        FunctionInfo("softplus", softplus, "tf.math.softplus", _np_softplus),
        FunctionInfo("abs", sp.Abs, "tf.math.abs", np.abs),
        FunctionInfo("lgamma", sp.loggamma, "tf.math.lgamma", _elementwise(_lgamma)),
        FunctionInfo(
            "digamma",
            lambda u: sp.polygamma(0, u),
            "tf.math.digamma",
            lambda u: _np_polygamma(0.0, u),
        ),
        FunctionInfo("erfinv", sp.erfinv, "tf.math.erfinv", _elementwise(_erfinv)),
        FunctionInfo("erfcx", erfcx, "", _elementwise(_erfcx)),  # lowered as a composite
        # sugar: SymPy builds them from erfc; the stabilizer's rules make them stable
        FunctionInfo("ndtr", lambda u: _ndtr(u), "", _np_erfc),
        FunctionInfo("log_ndtr", lambda u: sp.log(_ndtr(u)), "", _np_erfc),
    )
}

# Functions hogen's own forms may use but a spec may not (sign has no useful derivative).
INTERNAL_FUNCTIONS: dict[str, FunctionInfo] = {
    "sign": FunctionInfo("sign", sp.sign, "tf.math.sign", np.sign),
    # lowered as a composite (max * sqrt(1 + (min/max)**2)); no single TF op
    "hypot": FunctionInfo("hypot", hypot, "", np.hypot),
    # call forms of the grammar (front/calls.py) with more than one argument; polygamma(0, x)
    # is lowered as digamma
    "polygamma": FunctionInfo("polygamma", sp.polygamma, "tf.math.polygamma", _np_polygamma),
    "atan2": FunctionInfo("atan2", sp.atan2, "tf.math.atan2", np.arctan2),
    # lowered as a composite (gamma_lowering.py); no single op
    "gamma_difference": FunctionInfo(
        "gamma_difference", gamma_difference, "", np.vectorize(_gamma_difference)
    ),
    # lowered as a composite (TwoSum); 0 in exact arithmetic
    "compensation": FunctionInfo("compensation", compensation, "", two_sum_compensation),
    # lowered as a composite (the log-derivative times the exponent's rounding); 0 exactly
    "exponent_error": FunctionInfo("exponent_error", exponent_error, "", exponent_error_values),
    # lowered as a composite (round(256 u)/256); u in exact arithmetic
    "square_head": FunctionInfo("square_head", square_head, "", square_head_values),
}
ALL_FUNCTIONS: dict[str, FunctionInfo] = {**FUNCTIONS, **INTERNAL_FUNCTIONS}

_BY_CLASS: dict[type, FunctionInfo] = {info.sympy_func: info for info in ALL_FUNCTIONS.values()}


def by_class(func: type) -> FunctionInfo | None:
    """The table entry for a SymPy function class, or None if it is not one of ours."""
    return _BY_CLASS.get(func)
