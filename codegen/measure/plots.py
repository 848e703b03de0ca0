"""Error plots for `hogen report`: bits of error along a dense 1-D line through the inputs.

In: a `Spec`, its tools ({"hogen" | "autodiff" | "builtin": callable on the args}, and
other frameworks' built-ins with their derivative runners). Out:
`Curves` (per dtype, the bits of error of every tool and partial at each plotted x, against
`accuracy.reference`) and `render_plot`, a PNG with a row per partial and a column per
dtype. The line each op follows is `SLICES` (default: along x, 0 and ±2^k for k in
[-20, 10], the model-typical magnitudes of docs/design.md). PNG bytes carry no version or
timestamp.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib
import numpy as np

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import tensorflow as tf  # noqa: E402

from codegen.front.spec import Spec  # noqa: E402
from codegen.judge import accuracy  # noqa: E402
from codegen.measure import verify  # noqa: E402

PLOT_POINTS = 600  # per dtype, before clipping to the domain
_STYLE = {  # tool: (colour, line width, z-order); hogen on top, autodiff widest underneath
    "autodiff": ("#d62728", 2.6, 1),
    "builtin": ("#ff9f1c", 1.2, 2),
    "jax builtin": ("#2ca02c", 1.0, 2),
    "torch builtin": ("#9467bd", 1.0, 2),
    "hogen": ("#1f4e9c", 1.0, 3),
}


@dataclass(frozen=True)
class Slice:
    """The line a plot follows: the args as functions of the plotted x, and how x is spaced.

    scale "symlog": 0 and ±2^k for k evenly spaced over `octaves` (None: the dtype's whole
    normal range); "log": 2^k only; "logit": 2^-k and 1 - 2^-k. Clipped to the domain.
    """

    label: str
    args: Callable[[np.ndarray], tuple[np.ndarray, ...]]
    scale: str = "symlog"
    octaves: tuple[int, int] | None = (-20, 10)


_ALONG_X = Slice("x", lambda x: (x,))
SLICES: dict[str, Slice] = {
    "hypot": Slice("x > 0, with y = x/2", lambda x: (x, x / 2), scale="log", octaves=None),
    "logaddexp": Slice("x, with y = 0.5", lambda x: (x, np.full_like(x, 0.5))),
    "logit": Slice("p", lambda p: (p,), scale="logit", octaves=(1, 60)),
    "xlogy": Slice(
        "y > 0, with x = 1.5", lambda y: (np.full_like(y, 1.5), y), scale="log", octaves=None
    ),
}


def line_of(spec: Spec) -> Slice:
    """The op's line; for an op of several args without one, the diagonal (every arg = x)."""
    if spec.name in SLICES:
        return SLICES[spec.name]
    if len(spec.args) > 1:
        n = len(spec.args)
        return Slice("x, every arg equal to x", lambda x: (x,) * n)
    return _ALONG_X


def _grid(spec: Spec, line: Slice, dtype: str) -> np.ndarray:
    """The plotted x values: inside the domain, normal (or 0) in `dtype`, sorted, unique."""
    info = np.finfo(dtype)
    lo_k, hi_k = line.octaves or (int(np.log2(info.tiny)) + 8, int(np.log2(info.max)) - 8)
    ks = np.linspace(lo_k, hi_k, PLOT_POINTS // 2)
    if line.scale == "logit":
        xs = np.concatenate([2.0**-ks, 1 - 2.0**-ks])
    elif line.scale == "log":
        xs = 2.0**ks
    else:
        xs = np.concatenate([-(2.0**ks), [0.0], 2.0**ks])
    xs = xs.astype(dtype)
    columns = line.args(xs)
    keep = np.ones(len(xs), bool)
    for (lo, hi), column in zip(spec.domain, columns):
        c = column.astype(np.float64)
        keep &= (c >= lo) & (c <= hi) & ((c == 0) | (np.abs(c) >= info.tiny))
    if line.scale == "logit":
        keep &= (xs > 0) & (xs < 1)
    return np.unique(xs[keep])


@dataclass(frozen=True)
class Curves:
    """Bits of error along an op's plotted line in one dtype: per partial, per tool."""

    dtype: str
    xs: np.ndarray
    bits: tuple[dict[str, np.ndarray], ...]


def plot_curves(spec: Spec, tools: dict[str, Callable], others=None) -> list[Curves]:
    """The bits of error of every tool and partial along the op's line, float32 and float64.

    `tools` are TensorFlow callables, differentiated by tapes; `others` are {name: (fn,
    derivative)} of another framework, `derivative(fn, points, sequence, dtype)` as NumPy.
    """
    others = others or {}
    line = line_of(spec)
    out = []
    for dtype in accuracy.DTYPES:
        xs = _grid(spec, line, dtype)
        points = np.stack([c.astype(dtype) for c in line.args(xs)], axis=1)
        inputs = [tf.constant(points[:, i]) for i in range(points.shape[1])]
        panels = []
        for target in verify.targets(spec):
            exact = accuracy.reference(
                target.expr, spec.arg_symbols, points, dtype, cache_dir=accuracy.default_cache_dir()
            )
            sequence = list(target.sequence)
            approx = {
                tool: verify.partial_derivative(fn, inputs, sequence).numpy()
                for tool, fn in tools.items()
            }
            for tool, (fn, derivative) in others.items():
                approx[tool] = derivative(fn, points, sequence, dtype)
            panels.append({t: accuracy.bits_error(a, exact, dtype) for t, a in approx.items()})
        out.append(Curves(dtype, xs, tuple(panels)))
    return out


def _label(target: verify.Target, spec: Spec) -> str:
    return target.name if len(spec.args) > 1 else "f" + "'" * len(target.sequence)


def render_plot(spec: Spec, curves: list[Curves], labels: dict[str, str]) -> bytes:
    """The PNG of one op: a row per partial, a column per dtype, a line per tool (`labels`)."""
    targets = verify.targets(spec)
    fig, axes = plt.subplots(
        len(targets), len(curves), figsize=(12, 0.9 + 2.1 * len(targets)), dpi=80, squeeze=False
    )
    buffer = io.BytesIO()
    try:
        with np.errstate(over="ignore"):  # matplotlib's log transform near float64's max
            _draw(fig, axes, spec, curves, labels)
            fig.savefig(buffer, format="png", metadata={"Software": None})
    finally:
        plt.close(fig)
    return buffer.getvalue()


def _draw(fig, axes, spec: Spec, curves: list[Curves], labels: dict[str, str]) -> None:
    line = line_of(spec)
    for col, curve in enumerate(curves):
        width = 8 * np.dtype(curve.dtype).itemsize
        for row, (target, bits) in enumerate(zip(verify.targets(spec), curve.bits)):
            ax = axes[row][col]
            for tool in sorted(bits, key=lambda t: _STYLE[t][2]):
                colour, lw, z = _STYLE[tool]
                ax.plot(curve.xs, bits[tool], color=colour, lw=lw, zorder=z, label=labels[tool])
            ax.axhline(accuracy.P99_LIMIT, color="0.4", lw=0.8, ls="--", zorder=0)
            _axes_style(ax, line, curve.xs, width)
            ax.set_title(f"{_label(target, spec)}  ({curve.dtype})", fontsize=10)
            ax.set_ylabel("bits of error", fontsize=8)
        axes[-1][col].set_xlabel(line.label, fontsize=9)
    handles, names = axes[0][0].get_legend_handles_labels()
    legend_rows = -(-len(handles) // 3)
    top = 1 - (0.55 + 0.2 * legend_rows) / fig.get_figheight()
    fig.suptitle(f"{spec.name}: bits of error along {line.label}", fontsize=12, y=0.995)
    fig.legend(
        handles[::-1],
        names[::-1],
        loc="lower center",
        bbox_to_anchor=(0.5, top),
        fontsize=9,
        ncol=3,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0, 1, top))


def _ticks(line: Slice, xs: np.ndarray) -> tuple[list[float], list[float]]:
    """Labelled and unlabelled x ticks at decades inside the plotted range."""
    if line.scale == "logit":
        major = [10.0**-k for k in (16, 12, 8, 4)] + [0.5] + [1 - 10.0**-k for k in (4, 8, 12, 16)]
        return major, []
    mags = np.abs(xs[xs != 0])
    lo, hi = int(np.ceil(np.log10(mags.min()))), int(np.floor(np.log10(mags.max())))
    if line.scale == "log":
        step = max((hi - lo) // 60 * 10, 10)
        return [10.0**k for k in range(lo + (-lo) % step, hi + 1, step)], []
    every = [k for k in range(lo + 1, hi + 1)]
    labelled = [k for k in every if k % (2 if k >= 0 else 3) == 0]
    signed = lambda ks: sorted(s * 10.0**k for k in ks for s in (-1.0, 1.0))  # noqa: E731
    return [0.0, *signed(labelled)], signed(every)


def _tick_label(value: float, _position=None) -> str:
    return f"1-{1 - value:.0e}" if 0.5 < value < 1 else f"{value:g}"


def _axes_style(ax, line: Slice, xs: np.ndarray, width: int) -> None:
    if line.scale == "symlog":
        ax.set_xscale("symlog", linthresh=float(xs[xs > 0].min()), linscale=0.3)
    else:
        ax.set_xscale(line.scale)
    major, minor = _ticks(line, xs)
    inside = lambda ts: [t for t in ts if xs.min() <= t <= xs.max()]  # noqa: E731
    ax.set_xticks(inside(major))
    ax.set_xticks(inside(minor), minor=True)
    if line.scale != "log":
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_tick_label))
    ax.set_xlim(float(xs.min()), float(xs.max()))
    ax.set_ylim(-1, width + 2)
    ax.set_yticks(range(0, width + 1, width // 4))
    ax.tick_params(labelsize=7)
    ax.grid(True, which="both", lw=0.3, color="0.85")
