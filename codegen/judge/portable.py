"""Elementary functions that round the same on every processor, for the NumPy mirror.

In: NumPy's transcendental ufuncs (exp, log, tanh, log1p, pow, ...). Out: wrappers that
compute in a wider type and round back to the argument's dtype: float32 through float64,
float64 through `np.longdouble` where it is wider (x86-64 Linux: a 64-bit significand).

Why: NumPy sends float32 and float64 transcendentals to kernels chosen by the processor's
SIMD level (baseline SSE, AVX2, AVX-512 with SVML), and those differ in the last bits. The
stabilizer measures every candidate form on the mirror, so its regime bounds and the
figures it writes into generated docstrings came out different on different machines:
the same library built at three SIMD levels of one machine gave three sets of figures, and
on an AVX2 machine four library specs got other regime bounds than on the AVX-512 machine
that committed them. A result computed wider and rounded back differs between two
processors only where both wider results sit within their few units of error of a
rounding boundary of the narrower type: 2**-11 of the points for float64, 2**-29 for
float32, and then by one unit in the last place.

Where `np.longdouble` is no wider than float64 (Windows, Apple silicon), float64 goes
through the plain ufunc: output there may differ in those last bits.
"""

from __future__ import annotations

import collections
import functools
import hashlib

import numpy as np

WIDE64 = np.longdouble if np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant else np.float64
_WIDER = {np.dtype(np.float32): np.float64, np.dtype(np.float64): WIDE64}


MEMO_BYTES = 64 << 20  # results kept, the newest first: a build's candidates share inputs
_MEMO: collections.OrderedDict = collections.OrderedDict()
_memo_bytes = [0]


def _remember(key: tuple, out: np.ndarray) -> None:
    out.flags.writeable = False  # shared by every caller with these inputs
    _MEMO[key] = out
    _memo_bytes[0] += out.nbytes
    while _memo_bytes[0] > MEMO_BYTES and _MEMO:
        _memo_bytes[0] -= _MEMO.popitem(last=False)[1].nbytes


def _memo_key(name: str, arrays: list[np.ndarray]) -> tuple:
    """The function and its inputs' dtypes, shapes and SHA-1 digests of their bytes: a third
    of blake2b's time where the processor has SHA instructions (both are far from any
    accidental collision), read from the array's own buffer without a copy."""
    return (name, *((a.dtype.str, a.shape, _digest(a)) for a in arrays))


def _digest(array: np.ndarray) -> bytes:
    return hashlib.sha1(np.ascontiguousarray(array), usedforsecurity=False).digest()


def portable(ufunc, wide=None):
    """`ufunc` computed one type wider than its float arguments and rounded back to their
    dtype (`wide`, if given, computes it in `WIDE64`); other dtypes (bools, ints,
    longdouble) go through `ufunc` as they are.

    Results are remembered by their inputs' bytes (the newest `MEMO_BYTES`, read-only): the
    stabilizer measures dozens of candidates of a partial at the same sample points, and
    most compute the same exp(-(x - y)**2) or log(x), which `WIDE64` makes slow (x87, one
    element at a time)."""

    @functools.wraps(ufunc)
    def rounded(*args):
        arrays = [np.asarray(a) for a in args]
        dtype = np.result_type(*arrays)
        wider = _WIDER.get(dtype)
        if wider is None:
            return ufunc(*arrays)
        key = _memo_key(ufunc.__name__, arrays)
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
        compute = wide if wide is not None and wider is WIDE64 is not np.float64 else ufunc
        with np.errstate(all="ignore"):
            out = compute(*(a.astype(wider) for a in arrays)).astype(dtype)
        if isinstance(out, np.ndarray) and out.ndim:  # scalars are cheap, and immutable
            _remember(key, out)
        return out

    return rounded


exp = portable(np.exp)
expm1 = portable(np.expm1)
log = portable(np.log)
log1p = portable(np.log1p)
log2 = portable(np.log2)
logaddexp = portable(np.logaddexp)
MAX_SMALL_POWER = 4


def _wide_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x**y in `WIDE64`: exp2(y*log2(x)) for positive finite x and finite y, 13 times faster
    than `np.longdouble`'s powl and within a unit of float64's last place after rounding
    (log2 carries 64 bits, so y*log2(x) up to 1024 loses at most 2**-54); small integer
    powers by products; powl elsewhere (0, negative bases with integer exponents, inf, NaN)."""
    x, y = np.broadcast_arrays(x, y)
    out = np.empty(x.shape, dtype=WIDE64)
    fast = (x > 0) & np.isfinite(x) & np.isfinite(y)
    out[fast] = np.exp2(y[fast] * np.log2(x[fast]))
    out[~fast] = np.power(x[~fast], y[~fast])
    for k in range(-MAX_SMALL_POWER, MAX_SMALL_POWER + 1):  # squares, cubes: by products,
        small = fast & (y == k)  # each rounded to 64 bits, so float64 gets them rounded right
        if small.any():
            product = np.ones(int(small.sum()), dtype=WIDE64)
            for _ in range(abs(k)):
                product = product * x[small]
            out[small] = product if k >= 0 else 1 / product
    return out


power = portable(np.power, wide=_wide_power)
sin, cos, tan = portable(np.sin), portable(np.cos), portable(np.tan)
arcsin, arccos, arctan = portable(np.arcsin), portable(np.arccos), portable(np.arctan)
sinh, cosh, tanh = portable(np.sinh), portable(np.cosh), portable(np.tanh)
arcsinh, arccosh, arctanh = portable(np.arcsinh), portable(np.arccosh), portable(np.arctanh)
