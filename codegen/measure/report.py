"""`hogen report`: docs/accuracy.md and one error plot per op.

In: loaded specs, the folders of their generated modules (TensorFlow, JAX, PyTorch), the docs
folder and the sample count. Out: `<docs>/accuracy.md`, with docs/design.md's figures (mean
bits, p99 bits, failures) per op, partial and dtype for hogen, for TF autodiff of the naive
`expr` and for the TF built-in where one exists (`builtins.TF`), measured by
`verify.verify_spec`; the same for JAX and PyTorch (`report_frameworks`); and
`<docs>/plots/<op>.png` from `codegen.measure.plots`, with the three frameworks' built-ins.
The corpus expressions that break the promise (issue 13) are copied from `<docs>/corpus.md`,
where `make corpus`'s measurements are written up (`corpus_failures`).
The same specs, ops and frameworks on the same processor give the same bytes: no
timestamps, no version stamps in the PNGs, ops in sorted order.

The figures are a measurement: the frameworks' CPU kernels round differently on different
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
from pathlib import Path

import numpy as np
import tensorflow as tf

from codegen import __version__
from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.measure import builtins, frameworks, plots, promotions, report_frameworks, verify

_LABELS = {"hogen": "hogen", "autodiff": "TF autodiff of expr"}


def _builtin_tool(spec: Spec) -> dict[str, Callable]:
    return builtins.tool(spec.name, "tf", spec.params)


def _other_builtins(spec: Spec) -> dict[str, tuple[Callable, Callable]]:
    """The JAX and PyTorch built-ins of `spec`, each with its framework's derivative runner."""
    out = {}
    for backend in report_frameworks.BACKENDS:
        for tool, fn in builtins.tool(spec.name, backend, spec.params).items():
            out[f"{backend} {tool}"] = (fn, frameworks.runner(backend).derivative)
    return out


def _plot(spec: Spec, out_dir: Path) -> tuple[list[plots.Curves], bytes]:
    """The op's curves and its PNG: hogen, autodiff and the built-ins where there are some
    (TensorFlow's, JAX's and PyTorch's)."""
    tools = {"hogen": verify.load_op(spec, out_dir), "autodiff": verify.naive_op(spec)}
    tools.update(_builtin_tool(spec))
    labels = {**_LABELS}
    for backend, table in builtins.BY_BACKEND.items():
        if spec.name in table:
            labels["builtin" if backend == "tf" else f"{backend} builtin"] = table[spec.name].label
    curves = plots.plot_curves(spec, tools, _other_builtins(spec))
    return curves, plots.render_plot(spec, curves, labels)


# --- where and from what it was measured ----------------------------------------------------

_DIGEST_LINE = re.compile(r"^<!-- inputs-sha256: ([0-9a-f]{64}) -->$", re.M)


def _measuring_code() -> list[Path]:
    """The modules whose code decides the figures besides the ops: sampling, reference, paths,
    the other frameworks' runners and the built-ins."""
    modules = (accuracy, verify, plots, builtins, frameworks, report_frameworks, promotions)
    runners = [Path(verify.__file__).with_name(f"run_{b}.py") for b in ("jax", "torch")]
    stabilizer = sorted(Path(promotions.__file__).parents[1].joinpath("stabilize").glob("*.py"))
    return [Path(m.__file__) for m in modules] + runners + stabilizer + [Path(__file__)]


def inputs_digest(specs: list[Spec], out_dirs: dict[str, Path]) -> str:
    """sha256 of what determines the report: each spec (its hash covers hogen's version), its
    generated module for each backend in `out_dirs`, and the measuring code. Any edit to one
    of them changes it."""
    h = hashlib.sha256(f"hogen {__version__}\n".encode())
    for spec in sorted(specs, key=lambda s: s.name):
        for backend, out_dir in sorted(out_dirs.items()):
            module = hashlib.sha256((out_dir / f"{spec.name}.py").read_bytes()).hexdigest()
            h.update(f"{spec.name} {spec.sha256} {backend} {module}\n".encode())
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
        f"TensorFlow {tf.__version__}, {report_frameworks.versions()} on CPU "
        f"({_cpu_model()}), {platform.system()} "
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
    builtin = builtins.TF.get(spec.name)
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


CORPUS_FAILURES = "## Where hogen breaks the promise"  # the section of docs/corpus.md


def corpus_failures(docs_dir: Path) -> list[str]:
    """The list of corpus expressions that break the promise, each with its kind and worst
    rows, as `<docs_dir>/corpus.md` writes it (its section `CORPUS_FAILURES`, up to the next
    heading); [] where the page or the section is missing."""
    path = docs_dir / "corpus.md"
    if not path.exists():
        return []
    section = path.read_text(encoding="utf-8").partition("\n" + CORPUS_FAILURES + "\n")[2]
    return section.partition("\n## ")[0].strip().splitlines()


def _corpus_section(corpus: list[str]) -> list[str]:
    if not corpus:
        return []
    return [
        "",
        "## Beyond the library: corpus expressions that break the promise",
        "",
        "Copied from [corpus.md](corpus.md), which says how `make corpus` measured them "
        "(issue 13's corpus; kinds 1-8 are the issue's).",
        "",
        *corpus,
    ]


def render_markdown(
    specs: list[Spec],
    rows: list[verify.Row],
    curves: dict[str, list[plots.Curves]],
    samples: int,
    digest: str,
    promoted: list[str] = (),
    corpus: list[str] = (),
) -> str:
    """docs/accuracy.md: how it is measured, a summary, where hogen breaks, a table per op."""
    lines = [
        "# Accuracy: hogen against autodiff and the built-ins of TensorFlow, JAX and PyTorch",
        "",
        "<!-- Written by `hogen report` (`make report`); do not edit. -->",
        f"<!-- inputs-sha256: {digest} -->",
        "",
        f"Measured with {machine()}. The frameworks' CPU kernels round differently on "
        "different processors, so another machine gives slightly different figures; the "
        "promise is what must hold on every one. The line `inputs-sha256` above records the "
        "specs, generated modules, hogen version and measuring code this page was measured "
        "from: the test suite fails when any of them changes without `make report`.",
        "",
        'Every figure is measured as docs/design.md ("Accuracy, defined") defines '
        f"it. Per op and dtype, {samples} points "
        f"(seed {accuracy.VERIFY_SEED}, whose draws no build chose its forms on): the "
        "design's special points, then half drawn uniformly over the dtype's bit "
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
        "Expressions beyond the library (the generalization corpus of issue 13, one line "
        "each) are measured in [corpus.md](corpus.md); those that break the promise are "
        "listed at the end of this page, with their kinds.",
        "",
        "Each plot shows bits of error on a grid of up to "
        f"{plots.PLOT_POINTS} points per dtype along one line through the inputs (named in its "
        "title), against the same exact reference: hogen's TensorFlow op, TF autodiff, and "
        "the built-ins of TensorFlow, JAX (under `jax.jit`) and PyTorch where they exist; the "
        "dashed line is the p99 limit. Where "
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
        kept = [report_frameworks.kept(mine, tool) for tool in ("hogen", "autodiff", "builtin")]
        lines.append(f"| [{spec.name}](#{spec.name}) | {spec.order} | " + " | ".join(kept) + " |")
    lines += ["", "## Where hogen breaks the promise", ""]
    broken = [r for r in rows if r.tool == "hogen" and not r.figures.keeps_promise()]
    lines += [
        f"- {r.op} {r.partial} {r.dtype}: mean {r.figures.mean_bits:.2f}, "
        f"p99 {r.figures.p99_bits:.1f}, {r.figures.failures} failures "
        f"of {r.figures.scored} points; `hogen verify` exits 1."
        for r in broken
    ] or ["Nowhere: every op keeps it for every partial, float32 and float64."]
    lines += ["", *promoted]
    lines += _corpus_section(list(corpus))
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
    return "\n".join(lines + report_frameworks.section(specs, rows))


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


def write_report(
    specs: list[Spec], out_dirs: dict[str, Path], docs_dir: Path, samples: int
) -> list[Path]:
    """Measure every spec's op in each backend of `out_dirs` (tf, jax, torch: the folders of
    their generated modules), write accuracy.md and plots/<op>.png; the paths written."""
    specs = sorted(specs, key=lambda s: s.name)
    rows = []
    for spec in specs:
        rows += verify.verify_spec(spec, out_dirs["tf"], samples, extra_tools=_builtin_tool(spec))
    rows += report_frameworks.measure(specs, out_dirs, samples)
    curves, written = {}, []
    for spec in specs:
        curves[spec.name], png = _plot(spec, out_dirs["tf"])
        path = docs_dir / "plots" / f"{spec.name}.png"
        _write_atomic(path, png)
        written.append(path)
    path = docs_dir / "accuracy.md"
    digest = inputs_digest(specs, out_dirs)
    promoted = promotions.section(specs, out_dirs["tf"])
    corpus = corpus_failures(docs_dir)
    text = render_markdown(specs, rows, curves, samples, digest, promoted, corpus) + "\n"
    _write_atomic(path, text.encode("utf-8"))
    return [path, *written]
