"""The lowering of `gamma_difference(n, u, d)` = F_n(u) - F_n(u + d) (F_-1 = lgamma, F_n =
polygamma(n, .)): the difference computed itself, never as two rounded kernels subtracted.

In: the lowering's builder, the order n, and the lowered u and d. Out: the steps. For u > 0
and u + d > 0, with x_j = u + j, y_j = x_j + d:

    F_n(u) - F_n(u + d) = sum_{j < 12} [F_n(x_j) - F_n(x_j + 1) - F_n(y_j) + F_n(y_j + 1)]
                          + F_n(u + 12) - F_n(u + 12 + d),

each recurrence step an exact small difference (log1p(d/x_j) for lgamma; d/(x_j y_j) times
a sum of one sign for polygamma), and the last term the difference of Stirling's series at
x >= 12, where 1/x - 1/y = d/(x y) carries d as a factor. Where d < u, d is factored out of
every term and multiplied once at the end (terms near d/x**2 would underflow one by one);
where d >= u it is not (1/(x y) overflows where x and y are both tiny), nor for polygamma
where u >= 2**40 (1/(x y) underflows; d/y underflows there only if the result does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from codegen.front.gamma import polygamma_series_coefficients, tail_coefficients

SHIFT = 12  # recurrence steps
PER_D_BELOW = 2.0**40  # polygamma differences over d only below: 1/(x y) stays normal


@dataclass(frozen=True)
class _Pair:
    """x, y = x + d, t = 1/x, s = 1/y, and (1/x - 1/y), over d where `per_d`."""

    x: str
    y: str
    t: str
    s: str
    gap: str
    per_d: bool


def _pair(b, x, d, per_d: bool) -> _Pair:
    y = b.emit("add", x, d)
    t, s = b.emit("div", 1.0, x), b.emit("div", 1.0, y)
    gap = b.emit("mul", t, s) if per_d else b.emit("mul", t, b.emit("div", d, y))
    return _Pair(x, y, t, s, gap, per_d)


def _powers(b, p: _Pair, terms) -> str:
    """sum c (t**k - s**k) = gap * sum c h_k, h_k = sum_{i<k} t**i s**(k-1-i): every term of
    h_k has one sign (h_1 = 1, h_(k+1) = t h_k + s**k)."""
    wanted, h, s_power, hs = {k for k, _ in terms}, 1.0, 1.0, {}
    for k in range(1, max(wanted) + 1):
        if k in wanted:
            hs[k] = h
        s_power = p.s if k == 1 else b.emit("mul", s_power, p.s)
        h = b.emit("add", b.emit("mul", p.t, h) if k > 1 else p.t, s_power)
    total = 0.0
    for k, c in reversed(terms):  # the smallest first
        term = c if isinstance(hs[k], float) else b.emit("mul", hs[k], c)
        total = term if total == 0.0 else b.emit("add", total, term)
    return b.emit("mul", p.gap, total)


def _log1p_ratio(b, q) -> str:
    """log1p(q)/q for q >= 0; 1 where q is 0 (its limit, and where d/x underflowed)."""
    safe = b.emit("where_greater", q, 0.0, q, 1.0)
    return b.emit("where_greater", q, 0.0, b.emit("div", b.emit("log1p", safe), safe), 1.0)


def _log_ratio(b, p: _Pair, d) -> str:
    """log(y/x), over d where `per_d`; log y - log x where d/x overflows."""
    q = b.emit("div", d, p.x)
    finite = b.emit("where_less", q, math.inf, q, 1.0)
    near = b.emit("mul", _log1p_ratio(b, finite), p.t) if p.per_d else b.emit("log1p", finite)
    far = b.emit("sub", b.emit("log", p.y), b.emit("log", p.x))
    far = b.emit("div", far, d) if p.per_d else far
    return b.emit("where_less", q, math.inf, near, far)


def _step(b, n: int, p: _Pair, d) -> str:
    """F_n(x) - F_n(x + 1) - F_n(y) + F_n(y + 1), over d where `per_d`."""
    if n == -1:  # log(y) - log(x)
        return _log_ratio(b, p, d)
    if n == 0:  # -(1/x - 1/y)
        return b.emit("neg", p.gap)
    sign_factorial = float((-1) ** (n + 1) * math.factorial(n))  # times x**-(n+1) - y**-(n+1)
    return _powers(b, p, ((n + 1, sign_factorial),))


def _direct_step(b, n: int, p: _Pair, d) -> str:
    """The step as the difference of its two terms, for y >= 2x (d >= u), where that loses
    at most a bit: its derivatives, which autodiff takes beyond the last order, then have no
    cancelling terms of size 1/x**3 (the gap form's have, at u = 1e-30)."""
    if n == -1:
        return _log_ratio(b, p, d)
    if n == 0:  # 1/y - 1/x
        return b.emit("sub", p.s, p.t)
    power = float(n + 1)
    t_power = b.emit("pow", p.t, power)
    difference = b.emit("sub", t_power, b.emit("pow", p.s, power))
    direct = b.emit("mul", difference, float((-1) ** (n + 1) * math.factorial(n)))
    # where x**-(n+1) overflows, inf - inf: the gap form's inf there
    return b.emit("where_less", t_power, math.inf, direct, _step(b, n, p, d))


def _stirling(b, n: int, p: _Pair, d) -> str:
    """F_n(x) - F_n(y) for x >= 12 from Stirling's series, over d where `per_d`."""
    if n == -1:  # -(x - 1/2) log(y/x) - d log y + d
        if p.per_d:  # (x - 1/2) log(y/x) / d as (1 - t/2) log1p(q)/q: no x*t formed
            rho = _log1p_ratio(b, b.emit("div", d, p.x))
            scaled = b.emit("mul", b.emit("sub", 1.0, b.emit("mul", p.t, 0.5)), rho)
            lead = b.emit("sub", b.emit("sub", 1.0, scaled), b.emit("log", p.y))
        else:
            scaled = b.emit("mul", b.emit("sub", p.x, 0.5), _log_ratio(b, p, d))
            lead = b.emit("sub", b.emit("sub", d, scaled), b.emit("mul", d, b.emit("log", p.y)))
    elif n == 0:  # -log(y/x) - (1/x - 1/y)/2
        lead = b.emit("neg", b.emit("add", _log_ratio(b, p, d), b.emit("mul", p.gap, 0.5)))
    else:
        lead = _powers(b, p, polygamma_series_coefficients(n)[:2])
    return b.emit("add", lead, _powers(b, p, tail_coefficients(n)))


def _difference(b, n: int, u, d, per_d: bool) -> str:
    """The Stirling part and the 12 steps, smallest first. Over d, the first step is not for
    u < 1: there d/(x y) is the first step's own size, and 1/(x y) alone may overflow."""
    total = _stirling(b, n, _pair(b, b.emit("add", u, float(SHIFT)), d, per_d), d)
    for j in reversed(range(1, SHIFT)):
        total = b.emit("add", total, _step(b, n, _pair(b, b.emit("add", u, float(j)), d, per_d), d))
    first = _step(b, n, _pair(b, u, d, False), d)
    if not per_d:
        direct = _direct_step(b, n, _pair(b, u, d, False), d)
        return b.emit("add", total, b.emit("where_less", d, u, first, direct))
    first_per_d = _step(b, n, _pair(b, u, d, True), d)
    total = b.emit("add", total, b.emit("where_less", u, 1.0, 0.0, first_per_d))
    return b.emit("add", b.emit("mul", total, d), b.emit("where_less", u, 1.0, first, 0.0))


def lower_gamma_difference(b, n: int, u, d) -> str:
    """F_n(u) - F_n(u + d); where u <= 0 or u + d <= 0 the two kernels' difference (our
    side's inputs there are 1 and 0, so it stays finite at every order)."""
    y = b.emit("add", u, d)
    low = b.emit("minimum", u, y)
    inside_u = b.emit("where_greater", low, 0.0, u, 1.0)
    inside_d = b.emit("where_greater", low, 0.0, d, 0.0)
    small_d = _difference(b, n, inside_u, inside_d, per_d=True)
    large_d = _difference(b, n, inside_u, inside_d, per_d=False)
    ours = b.emit("where_less", inside_d, inside_u, small_d, large_d)
    if n >= 0:  # where 1/(x y) underflows, d/y does not unless the result does too
        ours = b.emit("where_less", inside_u, PER_D_BELOW, ours, large_d)
    kernel = "lgamma" if n == -1 else "digamma" if n == 0 else "polygamma"
    order = () if n <= 0 else (float(n),)
    outside = b.emit("sub", b.emit(kernel, *order, u), b.emit(kernel, *order, y))
    return b.emit("where_greater", low, 0.0, ours, outside)
