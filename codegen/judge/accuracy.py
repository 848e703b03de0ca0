"""Accuracy as docs/design.md defines it: sample points, exact references, bits of error.

In: a SymPy expression, its symbols, a domain per symbol and a dtype name
("float32" or "float64"). Out: `sample_points` (the inputs every figure is
measured at), `reference` (the exact value at each point, correctly rounded to
the dtype: 0.0 where it rounds below the smallest normal, ±inf where it
overflows, NaN where the point is not scored) and `bits_error`, `failure_mask`
and `figures` (how far an op's output lies from it, and whether that keeps the
promise).

The reference runs the expression in python-flint `arb` balls at doubling
precision (64 to 16384 bits) until both ends of the ball round to the same
float. arb's exp overflows only for arguments of 2**(2 * precision) or more, so
doubling also cures overflow: from 512 bits every float argument is fine, and
at 16384 bits exp(2**32767) takes 3 ms (mpmath.iv needs 26 s for 2**16384,
so it is no fallback). Where an operand is exactly 0 (sin(x)/x at 0) the value
is SymPy's limit, if both sides agree. Sampled inputs are never subnormal:
TensorFlow flushes them to 0 on CPU.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import flint
import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from codegen.front.functions import by_class, sigmoid, softplus
from codegen.timebound import SymPyTimeout, time_limit

try:
    from sympy.codegen.numpy_nodes import logaddexp
except ImportError:  # pragma: no cover - older SymPy
    logaddexp = None

__all__ = [
    "DTYPES",
    "MEAN_LIMIT",
    "P99_LIMIT",
    "Figures",
    "sample_points",
    "ordinal",
    "reference",
    "default_cache_dir",
    "bits_error",
    "failure_mask",
    "figures",
]

DTYPES = ("float32", "float64")
MEAN_LIMIT = 1.5
P99_LIMIT = 8.0
_SPECIALS = (0.0, 1.0, -1.0, 20.0, -20.0, 40.0, -40.0, 88.0, -88.0, 100.0, -100.0, 700.0, -700.0)
_FORMAT = {"float32": (24, -126, 127), "float64": (53, -1022, 1023)}  # precision, emin, emax
_START_PREC, _MAX_PREC = 64, 2**14
_CACHE_VERSION = b"hogen-accuracy-3"  # 3: erfc past 1e4 through erfcx
LIMIT_SECONDS = 3.0  # SymPy's limit at a point where an operand is 0 (x/x, sin(x)/x)
LIMITS_BUDGET_SECONDS = 20.0  # all limits of one reference call, CPU time


@dataclass(frozen=True)
class Figures:
    """Accuracy over the scored points: mean and p99 bits of error, failures, how many scored."""

    mean_bits: float
    p99_bits: float
    failures: int
    scored: int

    def keeps_promise(self) -> bool:
        """True if mean <= 1.5 bits, p99 <= 8 bits and nothing failed."""
        return self.broken_criteria() == 0

    def broken_criteria(self) -> int:
        """How many of the promise's three criteria (failures, p99, mean) these figures break."""
        return (self.failures > 0) + (self.p99_bits > P99_LIMIT) + (self.mean_bits > MEAN_LIMIT)


def ordinal(values: np.ndarray) -> np.ndarray:
    """int64 numbering float32 or float64 values in order; -0.0 and 0.0 are both 0."""
    v = np.asarray(values)
    if v.dtype not in (np.float32, np.float64):
        raise TypeError(f"ordinal expects float32 or float64, got {v.dtype}")
    wide = v.dtype == np.float64
    bits = np.ascontiguousarray(v).view(np.int64 if wide else np.int32).reshape(v.shape)
    bits = bits.astype(np.int64)
    return np.where(bits < 0, -(bits & (2 ** (63 if wide else 31) - 1)), bits)


def _from_ordinal(ords: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return np.where(ords < 0, -ords | 2**31, ords).astype(np.uint32).view(np.float32)
    return np.where(ords < 0, -ords | np.int64(-(2**63)), ords).astype(np.int64).view(np.float64)


def _inner_edges(lo: float, hi: float, dtype: str) -> tuple:
    """The smallest and largest finite floats of `dtype` in [lo, hi]."""
    t = np.dtype(dtype).type
    fmax = float(np.finfo(t).max)
    lo_f, hi_f = t(max(lo, -fmax)), t(min(hi, fmax))
    lo_f = np.nextafter(lo_f, t(np.inf)) if lo_f < lo else lo_f
    return lo_f, (np.nextafter(hi_f, t(-np.inf)) if hi_f > hi else hi_f)


def _specials(lo: float, hi: float, dtype: str) -> np.ndarray:
    """docs/design.md's special points in [lo, hi]: fixed values, edges, just inside them."""
    tiny = np.finfo(dtype).tiny
    lo_f, hi_f = _inner_edges(lo, hi, dtype)
    edges = ((lo_f, hi_f, lo), (hi_f, lo_f, hi))
    inside = [np.nextafter(a, b) for a, b, edge in edges if abs(edge) < np.inf]
    inside = [np.copysign(tiny, v) if 0 < abs(v) < tiny else v for v in inside]  # never subnormal
    cands = np.array([*_SPECIALS, lo_f, hi_f, *inside]).astype(dtype)
    wide = cands.astype(np.float64)
    return _unique_rows(cands[(wide >= lo) & (wide <= hi)].reshape(-1, 1))[:, 0]


def _collect(draw, k: int) -> np.ndarray:
    """Up to k values from `draw(size)`, which returns only the values it keeps."""
    parts, got = [], 0
    for _ in range(8):
        if got < k:
            parts.append(draw(max(2 * (k - got), 16)))
            got += len(parts[-1])
    return np.concatenate(parts)[:k] if parts else np.empty(0)


def _draw_1d(lo: float, hi: float, dtype: str, k: int, rng: np.random.Generator) -> np.ndarray:
    """k values in [lo, hi]: half uniform over bit patterns, half ±2^U(-20, 10); none subnormal."""
    tiny, span = np.finfo(dtype).tiny, ordinal(np.array(_inner_edges(lo, hi, dtype)))
    if span[0] > span[1]:
        return np.empty(0, dtype)

    def bit_patterns(size):
        v = _from_ordinal(rng.integers(span[0], span[1], size=size, endpoint=True), dtype)
        return v[(v == 0) | (np.abs(v) >= tiny)]

    def log_uniform(size):
        v = (rng.choice((-1.0, 1.0), size) * 2.0 ** rng.uniform(-20, 10, size)).astype(dtype)
        return v[(v.astype(np.float64) >= lo) & (v.astype(np.float64) <= hi)]

    logs = _collect(log_uniform, k // 2)
    return rng.permutation(np.concatenate([_collect(bit_patterns, k - len(logs)), logs]))


def _combinations(specials: list[np.ndarray], cap: int) -> np.ndarray:
    """Each special of each arg, the others all 0, 1 or -1 (where in domain); at most cap rows."""
    rows = []
    for k, sk in enumerate(specials):
        for s, c in itertools.product(sk, (0.0, 1.0, -1.0)):
            rows.append([s if j == k else c if c in sj else sj[0] for j, sj in enumerate(specials)])
    rows = _unique_rows(np.array(rows, dtype=specials[0].dtype))
    return rows[np.unique(np.linspace(0, len(rows) - 1, min(cap, len(rows))).astype(int))]


def _unique_rows(rows: np.ndarray) -> np.ndarray:
    """Rows without repeats (-0.0 counted as 0.0), in order of first appearance."""
    rows = rows + rows.dtype.type(0)
    return rows[np.sort(np.unique(rows, axis=0, return_index=True)[1])]


def sample_points(
    domain: tuple[tuple[float, float], ...], dtype: str, n: int = 2000, seed: int = 0
) -> np.ndarray:
    """Up to n unique points, shape (m, len(domain)), in `dtype`; the same for the same seed.

    Specials first (several args: their combinations, at most n // 5 rows), then rows whose
    coordinates are drawn independently by `_draw_1d`.
    """
    rng = np.random.default_rng(seed)
    specials = [_specials(float(lo), float(hi), dtype) for lo, hi in domain]
    if min(len(s) for s in specials) == 0:
        return np.empty((0, len(domain)), dtype)
    head = specials[0].reshape(-1, 1) if len(domain) == 1 else _combinations(specials, n // 5)
    cols = [_draw_1d(float(lo), float(hi), dtype, max(n - len(head), 0), rng) for lo, hi in domain]
    body = np.stack([c[: min(map(len, cols))] for c in cols], axis=1).astype(dtype)
    return _unique_rows(np.concatenate([head, body]))[:n]


def _round_dyadic(man: int, exp: int, dtype: str) -> float:
    """man * 2**exp rounded to nearest, ties to even, in `dtype`; subnormal results are 0.0."""
    prec, emin, emax = _FORMAT[dtype]
    sign, m = (-1.0 if man < 0 else 1.0), abs(man)
    top = m.bit_length() - 1 + exp
    if m == 0 or top < emin - 1:  # below half the smallest normal: 0 however it rounds
        return 0.0
    if top > emax + 1:
        return sign * math.inf
    shift = max(top, emin) - prec + 1 - exp  # the IEEE quantum of this binade, in bits
    if shift > 0:
        q, r, half = m >> shift, m & ((1 << shift) - 1), 1 << (shift - 1)
        m, exp = q + (r > half or (r == half and q & 1)), exp + shift
    top = m.bit_length() - 1 + exp
    if m == 0 or top < emin:
        return 0.0
    return sign * math.inf if top > emax else sign * math.ldexp(m, exp)


def _round_ends(lo: tuple[int, int], hi: tuple[int, int], dtype: str) -> float | None:
    """The float both ends of an enclosure round to, or None if they round apart."""
    a, b = _round_dyadic(*lo, dtype), _round_dyadic(*hi, dtype)
    return a if a == b else None


def _sigmoid(u, exp):
    if u < 0:  # surely negative: arb answers False when unsure
        return exp(u) / (1 + exp(u))
    return 1 / (1 + exp(-u))


def _softplus(u, exp, log1p):
    return u + log1p(exp(-u)) if u > 0 else log1p(exp(u))


def _polygamma(n, u):
    """psi^(n)(u) = (-1)^(n+1) n! zeta(n+1, u) for n >= 1; digamma for n = 0."""
    k = int(n.unique_fmpz())
    if k == 0:
        return u.digamma()
    return (-1) ** (k + 1) * math.factorial(k) * flint.arb(k + 1).zeta(u)


def _gamma_family(n, u):
    k = int(n.unique_fmpz())
    return u.lgamma() if k == -1 else _polygamma(n, u)


def _erfcx(u):
    """exp(u**2) erfc(u); past 1e4 the asymptotic series, its remainder in the radius."""
    if u > 10**4:
        inv2 = 1 / (2 * u * u)
        lead = 1 / (u * flint.arb.pi().sqrt())
        tail = lead * 15 * inv2**3
        return lead * (1 - inv2 + 3 * inv2 * inv2) + flint.arb(0, tail.upper())
    return (u * u).exp() * u.erfc()


def _erfc(u):
    """erfc(u); past 1e4 as erfcx(u)*exp(-u**2): arb's own erfc keeps only about 16 bits
    there, whatever the precision, and log_ndtr's tail lives there."""
    if u > 10**4:
        return _erfcx(u) * (-(u * u)).exp()
    return u.erfc()


def _method(name: str):
    return lambda u: getattr(u, name)()


_EXP, _LOG1P = _method("exp"), _method("log1p")
_ARB_FUNCS = {
    name: _method(name)
    for name in (
        "exp",
        "log",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "tanh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "log1p",
        "expm1",
    )
} | {
    "abs": abs,
    "sign": lambda u: u.sgn(),
    "sigmoid": lambda u: _sigmoid(u, _EXP),
    "softplus": lambda u: _softplus(u, _EXP, _LOG1P),
    "hypot": lambda a, b: (a * a + b * b).sqrt(),
    "logaddexp": lambda a, b: a + _softplus(b - a, _EXP, _LOG1P),
    "lgamma": _method("lgamma"),
    "digamma": _method("digamma"),
    "erfinv": _method("erfinv"),
    "polygamma": lambda n, u: _polygamma(n, u),
    "atan2": lambda y, x: flint.arb.atan2(y, x),
    "erfcx": _erfcx,
    "erfc": _erfc,
    "gamma_difference": lambda n, u, d: _gamma_family(n, u) - _gamma_family(n, u + d),
}
_OVERFLOWS = frozenset({"exp", "expm1", "sinh", "cosh", "erfcx"})
_OUTSIDE = {  # true where the operand surely lies outside the function's real domain
    "log": lambda u: u < 0,
    "log1p": lambda u: u < -1,
    "acosh": lambda u: u < 1,
    **dict.fromkeys(("asin", "acos", "atanh", "erfinv"), lambda u: u < -1 or u > 1),
}


@dataclass(frozen=True)
class _Op:
    arb: object
    args: tuple[int, ...]
    overflows: bool = False
    outside: object = None


@dataclass(frozen=True)
class _Program:
    """Slots: the inputs, then the constants (`leaves`), then one per op; `root` is the value."""

    n_inputs: int
    leaves: tuple[sp.Expr, ...]
    ops: tuple[_Op, ...]
    root: int


def _pow_op(base: int, e: sp.Expr, visit) -> _Op:
    if e.is_Integer:
        k = int(e)
        return _Op(lambda u: u**k, (base,))
    if e.is_Rational:
        p, q = int(e.p), int(e.q)
        return _Op(
            lambda u: (u.sqrt() if q == 2 else u.root(q)) ** p, (base,), outside=lambda u: u < 0
        )
    return _Op(
        lambda u, v: (v * u.log()).exp(),
        (base, visit(e)),
        overflows=True,
        outside=lambda u, v: u < 0,
    )


def _extremum_op(node: sp.Expr, visit) -> _Op:
    """Max/Min of balls (arb's max/min)."""
    method = "max" if isinstance(node, sp.Max) else "min"

    def fold(*args):
        return functools.reduce(lambda a, b: getattr(a, method)(b), args)

    return _Op(fold, tuple(visit(a) for a in node.args))


def _truth(surely: bool, surely_not: bool):
    """A condition as a ball: 1 true, 0 false, NaN undecided at this precision."""
    return flint.arb(1) if surely else flint.arb(0) if surely_not else flint.arb.nan()


_RELATIONS = {
    sp.StrictLessThan: lambda a, b: _truth(a < b, a >= b),
    sp.LessThan: lambda a, b: _truth(a <= b, a > b),
    sp.StrictGreaterThan: lambda a, b: _truth(a > b, a <= b),
    sp.GreaterThan: lambda a, b: _truth(a >= b, a < b),
    sp.Eq: lambda a, b: _truth(a == b, a != b),
    sp.Ne: lambda a, b: _truth(a != b, a == b),
}


def _pick(*values):
    """Piecewise: (cond, value) pairs in order; the first surely true condition picks."""
    for cond, value in zip(values[::2], values[1::2]):
        if not cond.is_finite():
            return flint.arb.nan()
        if cond == 1:
            return value
    return flint.arb.nan()


def _logic_op(node: sp.Basic, visit) -> _Op | None:
    """Ops for Piecewise and its conditions (where, min, max, clamp), or None."""
    if isinstance(node, sp.Piecewise):
        return _Op(_pick, tuple(visit(part) for pair in node.args for part in pair.args[::-1]))
    if node == sp.true:
        return _Op(lambda: flint.arb(1), ())
    if type(node) in _RELATIONS:
        return _Op(_RELATIONS[type(node)], (visit(node.lhs), visit(node.rhs)))
    if isinstance(node, (sp.And, sp.Or)):
        fold = min if isinstance(node, sp.And) else max
        return _Op(
            lambda *v: flint.arb.nan() if not all(u.is_finite() for u in v) else fold(v),
            tuple(visit(a) for a in node.args),
        )
    if isinstance(node, sp.Not):
        return _Op(lambda u: 1 - u, (visit(node.args[0]),))
    return None


def _op_for(node: sp.Expr, visit) -> _Op:
    logic = _logic_op(node, visit)
    if logic is not None:
        return logic
    if isinstance(node, (sp.Add, sp.Mul)):
        fold = sum if isinstance(node, sp.Add) else math.prod
        return _Op(lambda *a: fold(a), tuple(visit(a) for a in node.args))
    if isinstance(node, sp.Pow):
        return _pow_op(visit(node.args[0]), node.args[1], visit)
    if isinstance(node, sp.UnevaluatedExpr):
        return _Op(lambda u: u, (visit(node.args[0]),))
    if isinstance(node, (sp.Max, sp.Min)):
        return _extremum_op(node, visit)
    is_lae = logaddexp is not None and isinstance(node, logaddexp)
    name = "logaddexp" if is_lae else getattr(by_class(node.func), "name", None)
    if name not in _ARB_FUNCS:
        raise TypeError(f"reference cannot evaluate {type(node).__name__}: {node}")
    return _Op(
        _ARB_FUNCS[name], tuple(visit(a) for a in node.args), name in _OVERFLOWS, _OUTSIDE.get(name)
    )


def _compile(expr: sp.Expr, symbols: tuple[sp.Symbol, ...]) -> _Program:
    """Compile once, run per point: one op per distinct subexpression, operands first."""
    leaves = tuple(sorted(expr.atoms(sp.Number, sp.NumberSymbol), key=sp.default_sort_key))
    slots = {s: i for i, s in enumerate((*symbols, *leaves))}
    ops: list[_Op] = []

    def visit(node: sp.Expr) -> int:
        if node not in slots:
            ops.append(_op_for(node, visit))
            slots[node] = len(slots)
        return slots[node]

    root = visit(expr if isinstance(expr, sp.Basic) else sp.Float(expr))  # never parses text
    return _Program(len(symbols), leaves, tuple(ops), root)


def _leaf(c: sp.Expr):
    """A constant as an arb ball at the current precision."""
    if c.is_Rational or c.is_Float:
        r = sp.Rational(c)
        return flint.arb(flint.fmpq(int(r.p), int(r.q)))
    if c in (sp.pi, sp.E):
        return flint.arb.pi() if c == sp.pi else flint.arb(1).exp()
    raise TypeError(f"reference cannot evaluate the constant {c}")


def _run(prog: _Program, inputs: list, leaves: list) -> list:
    vals = [*inputs, *leaves]
    for op in prog.ops:
        vals.append(op.arb(*[vals[i] for i in op.args]))
    return vals


def _diagnose(prog: _Program, vals: list) -> str:
    """Why an arb result is not finite: "overflow", "zero", "domain" or "undefined"."""
    first = prog.n_inputs + len(prog.leaves)
    for op, val in zip(prog.ops, vals[first:], strict=True):
        if val.is_finite():
            continue
        ins = [vals[i] for i in op.args]
        if op.overflows:
            return "overflow"
        if op.outside is not None and op.outside(*ins):
            return "domain"
        if all(v.is_exact() for v in ins):  # more precision cannot change exact operands
            return "zero" if any(v.is_zero() for v in ins) else "domain"
        return "undefined"
    return "domain"


def _point(prog: _Program, row: tuple, leaves: list, dtype: str) -> tuple[str, float]:
    """(status, value) of one evaluation at the current precision; status "done" or why not."""
    vals = _run(prog, [flint.arb(v) for v in row], leaves)
    out = vals[prog.root]
    if not out.is_finite():
        return _diagnose(prog, vals), math.nan
    ends = [tuple(int(z) for z in e.man_exp()) for e in (out.lower(), out.upper())]
    value = _round_ends(*ends, dtype)
    return ("again", math.nan) if value is None else ("done", value)


@contextlib.contextmanager
def _precision(prec: int):
    saved, flint.ctx.prec = flint.ctx.prec, prec
    try:
        yield
    finally:
        flint.ctx.prec = saved


def _evaluate(
    expr: sp.Expr, symbols: tuple[sp.Symbol, ...], points: np.ndarray, dtype: str
) -> np.ndarray:
    """The reference, uncached: arb at doubling precision, then limits where an operand is 0."""
    prog = _compile(expr, symbols)
    rows = [tuple(float(v) for v in row) for row in points]
    out, status = np.full(len(rows), np.nan), ["again"] * len(rows)
    todo, prec = list(range(len(rows))), _START_PREC
    while todo and prec <= _MAX_PREC:
        with _precision(prec):
            leaves = [_leaf(c) for c in prog.leaves]
            for i in todo:
                status[i], out[i] = _point(prog, rows[i], leaves, dtype)
        todo = [i for i in todo if status[i] in ("again", "undefined", "overflow")]
        prec *= 2
    if len(symbols) == 1:
        deadline = time.process_time() + LIMITS_BUDGET_SECONDS
        for i in (i for i, s in enumerate(status) if s in ("zero", "undefined")):
            if time.process_time() > deadline:
                break  # the rest are not scored: no build waits on SymPy point by point
            out[i] = _limit_value(expr, symbols[0], rows[i][0], dtype)
    return out.astype(dtype)


def plain(expr: sp.Expr) -> sp.Expr:
    """`expr` in functions SymPy's `limit` knows."""
    return (
        expr.replace(sigmoid, lambda u: 1 / (1 + sp.exp(-u)))
        .replace(softplus, lambda u: sp.log(1 + sp.exp(u)))
        .replace(log1p, lambda u: sp.log(1 + u))
        .replace(expm1, lambda u: sp.exp(u) - 1)
    )


@functools.lru_cache(maxsize=512)
def _limit(expr: sp.Expr, x: sp.Symbol, at: sp.Rational) -> sp.Expr | None:
    """The limit of expr as x -> at, if both sides agree and it is finite."""
    try:
        with time_limit(LIMIT_SECONDS):
            sides = {sp.limit(plain(expr), x, at, d) for d in ("+", "-")}
    except (NotImplementedError, ValueError, ArithmeticError, TypeError, SymPyTimeout):
        return None  # no limit found in time: the point is not scored
    lim = sides.pop()
    return lim if not sides and lim.is_real and lim.is_finite else None


def _limit_value(expr: sp.Expr, x: sp.Symbol, at: float, dtype: str) -> float:
    lim = _limit(expr, x, sp.Rational(at))
    return math.nan if lim is None else float(_evaluate(lim, (), np.zeros((1, 0)), dtype)[0])


def default_cache_dir() -> Path:
    """Where callers keep references: $HOGEN_CACHE, else the user's cache folder by the
    platform's convention (XDG on Linux: $XDG_CACHE_HOME/hogen or ~/.cache/hogen; macOS:
    ~/Library/Caches/hogen; Windows: %LOCALAPPDATA%\\hogen\\Cache), never the working folder."""
    if os.environ.get("HOGEN_CACHE"):
        return Path(os.environ["HOGEN_CACHE"])
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "hogen" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "hogen"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else home / ".cache") / "hogen"


def _save_atomic(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def reference(
    expr: sp.Expr,
    symbols: tuple[sp.Symbol, ...],
    points: np.ndarray,
    dtype: str,
    *,
    cache_dir: Path | None = None,
) -> np.ndarray:
    """The exact value of expr at each row of points, correctly rounded to dtype.

    0.0 where it rounds below the smallest normal, ±inf where it overflows, NaN where it has
    no real value and no limit. With `cache_dir`, results are kept there as .npy files.
    """
    if dtype not in _FORMAT:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    pts = np.ascontiguousarray(points)
    pts, symbols = (pts.reshape(len(pts), -1) if pts.ndim == 1 else pts), tuple(symbols)
    if cache_dir is None:
        return _evaluate(expr, symbols, pts, dtype)
    parts = [
        _CACHE_VERSION,
        sp.srepr(expr),
        ",".join(s.name for s in symbols),
        dtype,
        pts.dtype.str,
        str(pts.shape),
    ]
    key = hashlib.sha256("\0".join(map(str, parts)).encode() + pts.tobytes()).hexdigest()
    path = Path(cache_dir) / f"{key}.npy"
    with contextlib.suppress(OSError, ValueError):
        return np.load(path)
    result = _evaluate(expr, symbols, pts, dtype)
    _save_atomic(path, result)
    return result


def bits_error(approx: np.ndarray, exact: np.ndarray, dtype: str) -> np.ndarray:
    """Per point log2(1 + |ord(approx) - ord(exact)|), with the design's rules for NaN, inf, 0."""
    t = np.dtype(dtype)
    width, tiny = 8 * t.itemsize, np.finfo(t).tiny
    a, e = np.asarray(approx).astype(t), np.asarray(exact).astype(t)
    oa, oe = ordinal(a), ordinal(e)
    same_side = np.abs(oa - oe).astype(np.float64)  # exact in int64 when signs agree
    bits = np.log2(
        1.0
        + np.where(
            (oa >= 0) == (oe >= 0),
            same_side,
            np.abs(oa).astype(np.float64) + np.abs(oe).astype(np.float64),
        )
    )
    with np.errstate(invalid="ignore"):
        bits[(e == 0) & (np.abs(a) < tiny)] = 0.0
        bits[np.isfinite(e) & ~np.isfinite(a)] = width
        bits[np.isinf(e)] = np.where(a == e, 0.0, width)[np.isinf(e)]
    bits[np.isnan(e)] = np.nan
    return bits


def failure_mask(approx: np.ndarray, exact: np.ndarray, dtype: str) -> np.ndarray:
    """True where approx is NaN, inf or 0 while exact is a finite, non-zero normal number."""
    t = np.dtype(dtype)
    a, e = np.asarray(approx).astype(t), np.asarray(exact).astype(t)
    with np.errstate(invalid="ignore"):
        normal = np.isfinite(e) & (np.abs(e) >= np.finfo(t).tiny)
    return normal & (~np.isfinite(a) | (a == 0))


def figures(approx: np.ndarray, exact: np.ndarray, dtype: str) -> Figures:
    """Figures over the scored points; p99 is numpy's percentile with method="higher"."""
    scored = ~np.isnan(np.asarray(exact).astype(dtype))
    if not scored.any():
        return Figures(0.0, 0.0, 0, 0)
    bits = bits_error(approx, exact, dtype)[scored]
    return Figures(
        float(bits.mean()),
        float(np.percentile(bits, 99, method="higher")),
        int(failure_mask(approx, exact, dtype)[scored].sum()),
        int(scored.sum()),
    )
