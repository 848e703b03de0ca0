"""`hogen report`: docs/accuracy.md and one error plot per op.

In: loaded specs, the folder of generated modules, the docs folder and the sample count.
Out: `<docs>/accuracy.md`, with docs/design.md's figures (mean bits, p99 bits, failures) per op,
partial and dtype for hogen, for TF autodiff of the naive `expr` and for the TF built-in
where one exists (`BUILTINS`), measured by `verify.verify_spec`; and `<docs>/plots/<op>.png`
from `codegen.measure.plots`. The same specs, ops and TensorFlow on the same processor give
the same bytes: no timestamps, no version stamps in the PNGs, ops in sorted order.

The figures are a measurement: TensorFlow's CPU kernels round differently on different
processors, so the page says where it was measured (`machine`), and its freshness is judged
by its inputs, not by its bytes: `inputs_digest` hashes the specs, the generated modules,
hogen's version and the measuring code, and the page records it (`recorded_digest`).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tensorflow as tf

from codegen import __version__
from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.measure import plots, verify

_LABELS = {"hogen": "hogen", "autodiff": "TF autodiff of expr"}


@dataclass(frozen=True)
class Builtin:
    """A TF built-in computing the op: its label, a callable (args, **params), what to know."""

    label: str
    fn: Callable
    note: str = ""


BUILTINS: dict[str, Builtin] = {
    "log1pexp": Builtin("tf.nn.softplus(x)", lambda x: tf.nn.softplus(x)),
    "sigmoid": Builtin("tf.math.sigmoid(x)", lambda x: tf.math.sigmoid(x)),
    "log_sigmoid": Builtin("tf.math.log_sigmoid(x)", lambda x: tf.math.log_sigmoid(x)),
    "silu": Builtin("tf.nn.silu(x)", lambda x: tf.nn.silu(x)),
    "gelu": Builtin(
        "tf.nn.gelu(x, approximate=False)",
        lambda x: tf.nn.gelu(x, False),
        "In float64 it is only about as accurate as float32: it scales x by "
        "`math_ops.cast(0.7071067811865476, dtype)`, a float32 constant cast up.",
    ),
    "xlogx": Builtin("tf.math.xlogy(x, x)", lambda x: tf.math.xlogy(x, x)),
    "xlogy": Builtin("tf.math.xlogy(x, y)", lambda x, y: tf.math.xlogy(x, y)),
    "softplus_beta": Builtin(
        "tf.nn.softplus(beta * x) / beta", lambda x, beta: tf.nn.softplus(x * beta) / beta
    ),
    "logaddexp": Builtin(
        "tf.math.reduce_logsumexp(tf.stack([x, y]), axis=0)",
        lambda x, y: tf.math.reduce_logsumexp(tf.stack([x, y]), axis=0),
    ),
    "hypot": Builtin(
        "tf.norm(tf.stack([x, y]), axis=0)", lambda x, y: tf.norm(tf.stack([x, y]), axis=0)
    ),
    "elu": Builtin("tf.nn.elu(x)", lambda x: tf.nn.elu(x)),
    "selu": Builtin("tf.nn.selu(x)", lambda x: tf.nn.selu(x)),
    "huber": Builtin(
        "tf.keras.losses.huber(0, x, delta)",
        lambda x, delta: tf.keras.losses.huber(
            tf.zeros_like(x)[..., None], x[..., None], delta=delta
        ),
    ),
}


def _builtin_tool(spec: Spec) -> dict[str, Callable]:
    builtin = BUILTINS.get(spec.name)
    if builtin is None:
        return {}
    params = dict(spec.params)
    return {"builtin": lambda *args: builtin.fn(*args, **params)}


def _plot(spec: Spec, out_dir: Path) -> tuple[list[plots.Curves], bytes]:
    """The op's curves and its PNG: hogen, autodiff and the built-in where there is one."""
    tools = {"hogen": verify.load_op(spec, out_dir), "autodiff": verify.naive_op(spec)}
    tools.update(_builtin_tool(spec))
    builtin = BUILTINS.get(spec.name)
    labels = {**_LABELS, "builtin": builtin.label if builtin else ""}
    curves = plots.plot_curves(spec, tools)
    return curves, plots.render_plot(spec, curves, labels)


# --- where and from what it was measured ----------------------------------------------------

_DIGEST_LINE = re.compile(r"^<!-- inputs-sha256: ([0-9a-f]{64}) -->$", re.M)


def _measuring_code() -> list[Path]:
    """The modules whose code decides the figures besides the ops: sampling, reference, paths."""
    return [Path(m.__file__) for m in (accuracy, verify, plots)] + [Path(__file__)]


def inputs_digest(specs: list[Spec], out_dir: Path) -> str:
    """sha256 of what determines the report: each spec (its hash covers hogen's version), its
    generated module, and the measuring code. Any edit to one of them changes it."""
    h = hashlib.sha256(f"hogen {__version__}\n".encode())
    for spec in sorted(specs, key=lambda s: s.name):
        module = (out_dir / f"{spec.name}.py").read_bytes()
        h.update(f"{spec.name} {spec.sha256} {hashlib.sha256(module).hexdigest()}\n".encode())
    for path in _measuring_code():
        h.update(f"{path.name} {hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()


def recorded_digest(markdown: str) -> str | None:
    """The inputs digest a written docs/accuracy.md records, or None if it records none."""
    found = _DIGEST_LINE.search(markdown)
    return found.group(1) if found else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine() -> str:
    """Where the figures were measured: TensorFlow, CPU model, OS, oneDNN setting."""
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset")
    return (
        f"TensorFlow {tf.__version__} on CPU ({_cpu_model()}), {platform.system()} "
        f"{platform.machine()}, Python {platform.python_version()}, "
        f"TF_ENABLE_ONEDNN_OPTS={onednn}"
    )


# --- the markdown ---------------------------------------------------------------------------


def _cells(figures: accuracy.Figures | None) -> str:
    if figures is None:
        return "— | — | —"
    return f"{figures.mean_bits:.2f} | {figures.p99_bits:.1f} | {figures.failures}"


def _op_section(spec: Spec, rows: list[verify.Row]) -> list[str]:
    by_key = {(r.partial, r.dtype, r.tool): r.figures for r in rows}
    builtin = BUILTINS.get(spec.name)
    params = ", ".join(f"{k} = {v:g}" for k, v in spec.params)
    lines = [
        f"## {spec.name}",
        "",
        f"`{spec.expr_text}`" + (f" ({params})" if params else "") + f", order {spec.order}. "
        f"Built-in: {f'`{builtin.label}`' if builtin else 'none'}."
        + (f" {builtin.note}" if builtin and builtin.note else ""),
        "",
        "| partial | dtype | hogen mean | p99 | fail | keeps promise "
        "| autodiff mean | p99 | fail | built-in mean | p99 | fail |",
        "|---|---|--:|--:|--:|:-:|--:|--:|--:|--:|--:|--:|",
    ]
    for target in verify.targets(spec):
        for dtype in accuracy.DTYPES:
            hogen = by_key[(target.name, dtype, "hogen")]
            ok = "yes" if hogen.keeps_promise() else "**NO**"
            lines.append(
                f"| {target.name} | {dtype} | {_cells(hogen)} | {ok} "
                f"| {_cells(by_key[(target.name, dtype, 'autodiff')])} "
                f"| {_cells(by_key.get((target.name, dtype, 'builtin')))} |"
            )
    lines += ["", f"![{spec.name}: bits of error](plots/{spec.name}.png)", ""]
    return lines


def _kept(rows: list[verify.Row], tool: str) -> str:
    mine = [r for r in rows if r.tool == tool]
    if not mine:
        return "—"
    return f"{sum(r.figures.keeps_promise() for r in mine)} / {len(mine)}"


def _off_sample(spec: Spec, curves: list[plots.Curves]) -> list[str]:
    """One line per partial and dtype where hogen exceeds the p99 limit on the plot's grid."""
    line = plots.line_of(spec)
    out = []
    for curve in curves:
        for target, bits in zip(verify.targets(spec), curve.bits):
            hogen = np.nan_to_num(bits["hogen"], nan=0.0)
            over = hogen > accuracy.P99_LIMIT
            if over.any():
                worst = int(np.argmax(hogen))
                full = " (NaN or inf)" if hogen[worst] >= 8 * np.dtype(curve.dtype).itemsize else ""
                out.append(
                    f"- {spec.name} {target.name} {curve.dtype}: {int(over.sum())} of "
                    f"{len(hogen)} plotted points above {accuracy.P99_LIMIT:g} bits, worst "
                    f"{hogen[worst]:.1f} bits{full} at {line.label.split()[0].rstrip(',')} = "
                    f"{float(curve.xs[worst]):.10g}."
                )
    return out


def render_markdown(
    specs: list[Spec],
    rows: list[verify.Row],
    curves: dict[str, list[plots.Curves]],
    samples: int,
    digest: str,
) -> str:
    """docs/accuracy.md: how it is measured, a summary, where hogen breaks, a table per op."""
    lines = [
        "# Accuracy: hogen against TF autodiff and TF built-ins",
        "",
        "<!-- Written by `hogen report` (`make report`); do not edit. -->",
        f"<!-- inputs-sha256: {digest} -->",
        "",
        f"Measured with {machine()}. TensorFlow's CPU kernels round differently on "
        "different processors, so another machine gives slightly different figures; the "
        "promise is what must hold on every one. The line `inputs-sha256` above records the "
        "specs, generated modules, hogen version and measuring code this page was measured "
        "from: the test suite fails when any of them changes without `make report`.",
        "",
        'Every figure is measured as docs/design.md ("Accuracy, defined") defines '
        f"it. Per op and dtype, {samples} points "
        "(seed 0): the design's special points, then half drawn uniformly over the dtype's bit "
        "patterns inside the domain, half with magnitudes log-uniform in [2^-20, 2^10]. The "
        "exact value of each partial comes from python-flint `arb` balls at doubling "
        "precision. Error in bits is `log2(1 + |ord(approx) - ord(exact)|)`: 0 is exact, "
        "24 (float32) or 53 (float64) means no correct digit, NaN or inf counts 32 or 64. "
        "*mean* and *p99* are bits; *fail* counts points where the result is NaN, inf or 0 "
        "while the exact value is a finite, non-zero normal number. The promise: mean "
        f"≤ {accuracy.MEAN_LIMIT} bits, p99 ≤ {accuracy.P99_LIMIT:g} bits and no failures, "
        "for every partial, float32 and float64.",
        "",
        "- **hogen**: the generated op, derivatives by nested `tf.GradientTape`s, run "
        "eagerly, in `tf.function` and in `tf.function(jit_compile=True)`; each row shows "
        "the worst of the three.",
        "- **autodiff**: the spec's `expr` written with plain TF ops, differentiated by TF.",
        "- **built-in**: the TF op that computes the function, where there is one, "
        "differentiated by TF's registered gradients.",
        "",
        "Each plot shows bits of error on a grid of up to "
        f"{plots.PLOT_POINTS} points per dtype along one line through the inputs (named in its "
        "title), against the same exact reference; the dashed line is the p99 limit. Where "
        "a line meets the top of a panel the result is NaN, inf, or has no correct bit.",
        "",
        "## Summary",
        "",
        "Rows (partial × dtype) that keep the promise:",
        "",
        "| op | order | hogen | autodiff | built-in |",
        "|---|--:|--:|--:|--:|",
    ]
    for spec in specs:
        mine = [r for r in rows if r.op == spec.name]
        lines.append(
            f"| [{spec.name}](#{spec.name}) | {spec.order} | {_kept(mine, 'hogen')} "
            f"| {_kept(mine, 'autodiff')} | {_kept(mine, 'builtin')} |"
        )
    lines += ["", "## Where hogen breaks the promise", ""]
    broken = [r for r in rows if r.tool == "hogen" and not r.figures.keeps_promise()]
    lines += [
        f"- {r.op} {r.partial} {r.dtype}: mean {r.figures.mean_bits:.2f}, "
        f"p99 {r.figures.p99_bits:.1f}, {r.figures.failures} failures "
        f"of {r.figures.scored} points; `hogen verify` exits 1."
        for r in broken
    ] or ["Nowhere: every op keeps it for every partial, float32 and float64."]
    lines += [
        "",
        "## Beyond the sample",
        "",
        "The promise is judged at the sample points. The plots' grids are a second look: "
        "they reach regions the sample visits rarely (few bit patterns lie near p = 1, for "
        f"instance), and one bad point moves neither the mean nor the p99 of {samples} "
        "(nor is NaN a failure where the exact value is 0). On the plotted grids, hogen "
        f"exceeds the p99 limit of {accuracy.P99_LIMIT:g} bits here:",
        "",
    ]
    off = [line for spec in specs for line in _off_sample(spec, curves[spec.name])]
    lines += off or ["- none: hogen stays within the limit at every plotted point."]
    lines.append("")
    for spec in specs:
        lines += _op_section(spec, [r for r in rows if r.op == spec.name])
    return "\n".join(lines)


# --- files ------------------------------------------------------------------------------------


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(specs: list[Spec], out_dir: Path, docs_dir: Path, samples: int) -> list[Path]:
    """Measure every spec's op, write accuracy.md and plots/<op>.png; the paths written."""
    specs = sorted(specs, key=lambda s: s.name)
    rows = []
    for spec in specs:
        rows += verify.verify_spec(spec, out_dir, samples, extra_tools=_builtin_tool(spec))
    curves, written = {}, []
    for spec in specs:
        curves[spec.name], png = _plot(spec, out_dir)
        path = docs_dir / "plots" / f"{spec.name}.png"
        _write_atomic(path, png)
        written.append(path)
    path = docs_dir / "accuracy.md"
    text = render_markdown(specs, rows, curves, samples, inputs_digest(specs, out_dir)) + "\n"
    _write_atomic(path, text.encode("utf-8"))
    return [path, *written]
