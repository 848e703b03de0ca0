"""The JAX and PyTorch part of `hogen report`: hogen's ops for each, beside that framework's
autodiff of the naive `expr` and its own op (`jax.nn`, `torch.nn.functional`, ...).

In: loaded specs, the folders of their generated JAX and PyTorch modules, the sample count.
Out: `verify.Row`s per backend (`measure`), with the figures `hogen verify --backend B`
measures, and the markdown of the section (`section`): a summary of rows kept per op and
backend, where hogen breaks the promise there, and per op a table of mean / p99 / failures
of every tool. Imports JAX and PyTorch.
"""

from __future__ import annotations

from pathlib import Path

from codegen.front.spec import Spec
from codegen.judge import accuracy
from codegen.measure import builtins, frameworks, verify

BACKENDS = {"jax": "JAX", "torch": "PyTorch"}


def measure(specs: list[Spec], out_dirs: dict[str, Path], samples: int) -> list[verify.Row]:
    """Rows of hogen, autodiff and the built-in (where there is one), JAX then PyTorch; each
    row's `path` names its backend's path ("jit" or "eager") and its `tool` the backend."""
    rows = []
    for backend in BACKENDS:
        for spec in specs:
            extra = builtins.tool(spec.name, backend, spec.params)
            found = frameworks.verify_spec(spec, out_dirs[backend], samples, backend, extra)
            rows += [_tagged(row, backend) for row in found]
    return rows


def _tagged(row: verify.Row, backend: str) -> verify.Row:
    tool = f"{backend} {row.tool}"
    return verify.Row(row.op, row.partial, row.dtype, tool, row.figures, row.path)


def kept(rows: list[verify.Row], tool: str) -> str:
    """ "k / n": of `rows` measured with `tool`, how many keep the promise ("—" if none)."""
    mine = [r for r in rows if r.tool == tool]
    if not mine:
        return "—"
    return f"{sum(r.figures.keeps_promise() for r in mine)} / {len(mine)}"


def _cell(figures: accuracy.Figures | None) -> str:
    if figures is None:
        return "—"
    mark = "" if figures.keeps_promise() else " ✗"
    return f"{figures.mean_bits:.2f} / {figures.p99_bits:.1f} / {figures.failures}{mark}"


def _summary(specs: list[Spec], rows: list[verify.Row]) -> list[str]:
    tools = [f"{b} {t}" for b in BACKENDS for t in ("hogen", "autodiff", "builtin")]
    heads = [f"{BACKENDS[t.split()[0]]} {t.split()[1]}" for t in tools]
    lines = ["| op | " + " | ".join(heads) + " |", "|---|" + "--:|" * len(tools)]
    for spec in specs:
        mine = [r for r in rows if r.op == spec.name]
        lines.append(f"| {spec.name} | " + " | ".join(kept(mine, t) for t in tools) + " |")
    return lines


def _broken(rows: list[verify.Row]) -> list[str]:
    hogen = [r for r in rows if r.tool.endswith(" hogen") and not r.figures.keeps_promise()]
    return [
        f"- {BACKENDS[r.tool.split()[0]]}: {r.op} {r.partial} {r.dtype}: mean "
        f"{r.figures.mean_bits:.2f}, p99 {r.figures.p99_bits:.1f}, {r.figures.failures} "
        f"failures; `hogen verify --backend {r.tool.split()[0]}` exits 1."
        for r in hogen
    ] or ["Nowhere: every op keeps it in JAX and in PyTorch, every partial and dtype."]


def _op_table(spec: Spec, rows: list[verify.Row]) -> list[str]:
    by_key = {(r.partial, r.dtype, r.tool): r.figures for r in rows}
    labels = {b: builtins.BY_BACKEND[b].get(spec.name) for b in BACKENDS}
    named = ", ".join(f"{BACKENDS[b]} `{v.label}`" for b, v in labels.items() if v) or "none"
    notes = " ".join(f"{v.label}: {v.note}" for v in labels.values() if v and v.note)
    tools = [(b, t) for b in BACKENDS for t in ("hogen", "builtin") if t == "hogen" or labels[b]]
    lines = [
        f"### JAX and PyTorch: {spec.name}",
        "",
        f"Built-ins: {named}." + (f" {notes}" if notes else ""),
        "",
        "| partial | dtype | " + " | ".join(f"{BACKENDS[b]} {t}" for b, t in tools) + " |",
        "|---|---|" + "--:|" * len(tools),
    ]
    for target in verify.targets(spec):
        for dtype in accuracy.DTYPES:
            cells = [_cell(by_key.get((target.name, dtype, f"{b} {t}"))) for b, t in tools]
            lines.append(f"| {target.name} | {dtype} | " + " | ".join(cells) + " |")
    return lines + [""]


def section(specs: list[Spec], rows: list[verify.Row]) -> list[str]:
    """The markdown of the JAX and PyTorch section."""
    lines = [
        "## JAX and PyTorch",
        "",
        "The ops `hogen build --backend jax` and `--backend torch` generate from the same "
        "specs, measured as `hogen verify --backend jax|torch` measures them, at the same "
        "points against the same exact reference: JAX under `jax.jit` and `jax.vmap`, "
        "derivatives by `jax.grad` (with `jax_enable_x64`, so float64 is float64); PyTorch "
        "eagerly, derivatives by nested `torch.autograd.grad(create_graph=True)`. Beside "
        "them: each framework's autodiff of the spec's `expr`, and its own op where it has "
        "one.",
        "",
        "Rows (partial × dtype) that keep the promise:",
        "",
        *_summary(specs, rows),
        "",
        "Where hogen breaks the promise in JAX or PyTorch:",
        "",
        *_broken(rows),
        "",
        "In the tables below each cell is mean bits / p99 bits / failures; ✗ marks a row "
        "that breaks the promise.",
        "",
    ]
    for spec in specs:
        lines += _op_table(spec, [r for r in rows if r.op == spec.name])
    return lines


def versions() -> str:
    """The JAX and PyTorch versions the section was measured with."""
    import jax
    import torch

    return f"JAX {jax.__version__} and PyTorch {torch.__version__}"
