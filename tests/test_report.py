"""The showcase: every op in specs/ keeps the promise on every path, generated/ is fresh, and
the committed docs/accuracy.md was measured from today's specs, modules and measuring code.

docs/accuracy.md is a measurement taken on one machine (TensorFlow's kernels round
differently on other processors), so its freshness is checked by the inputs digest it
records, never by comparing its figures or its plots' bytes with what this machine measures.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from conftest_tf import REPO_ROOT, np, pytest, tf  # noqa: F401  (quiet TF first)

from codegen.derive import multi_indices
from codegen.front.spec import load_spec
from codegen.judge import accuracy
from codegen.measure import builtins, plots, report, verify

os.environ.setdefault("HOGEN_CACHE", str(REPO_ROOT / ".hogen-cache"))
SPECS = {p.stem: load_spec(p) for p in sorted((REPO_ROOT / "specs").glob("*.yaml"))}
GENERATED, DOCS = REPO_ROOT / "generated", REPO_ROOT / "docs"
FOLDERS = {"tf": "generated", "jax": "generated_jax", "torch": "generated_torch"}
OUT_DIRS = {backend: REPO_ROOT / folder for backend, folder in FOLDERS.items()}
HOGEN = Path(sys.executable).parent / "hogen"
# Ops with a plotted point where hogen has every bit wrong (NaN where the exact value is 0).
NON_FINITE: dict[str, str] = {}  # op -> why some plotted point is still NaN/inf (none today)


def _partial_names(spec) -> list[str]:
    names = []
    for order in range(spec.order + 1):
        for index in multi_indices(len(spec.args), order):
            names.append("f" + "_" * bool(order) + "".join(a * n for a, n in zip(spec.args, index)))
    return names


ROWS = [
    pytest.param(op, partial, dtype, id=f"{op}-{partial}-{dtype}")
    for op, spec in SPECS.items()
    for partial in _partial_names(spec)
    for dtype in accuracy.DTYPES
]


@functools.cache
def _verified(op: str, seed: int = 0) -> dict:
    rows = verify.verify_spec(SPECS[op], GENERATED, seed=seed)
    return {(r.partial, r.dtype): r.figures for r in rows if r.tool == "hogen"}


def test_specs_are_the_showcase():
    assert len(SPECS) == 21
    for table in builtins.BY_BACKEND.values():
        assert set(table) <= set(SPECS)


@pytest.mark.parametrize("op", sorted(SPECS))
def test_verify_measures_every_partial(op):
    assert sorted(_verified(op)) == sorted(
        (p, d) for p in _partial_names(SPECS[op]) for d in accuracy.DTYPES
    )


@pytest.mark.parametrize("op, partial, dtype", ROWS)
def test_keeps_the_promise(op, partial, dtype):
    figures = _verified(op)[(partial, dtype)]
    assert figures.keeps_promise(), figures


@pytest.mark.parametrize("op, partial, dtype", ROWS)
def test_keeps_the_promise_at_points_no_build_chose_on(op, partial, dtype):
    """Seed 2's points: the stabilizer chose every form on seeds 0 and 1 (log_ndtr's value
    was -inf at x = -1.5e154 on seed 2's points until the stabilizer measured the band where
    x**2 overflows)."""
    figures = _verified(op, 2)[(partial, dtype)]
    assert figures.keeps_promise(), figures


def test_generated_modules_are_fresh():
    result = subprocess.run(
        [str(HOGEN), "build", "--check"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def _committed_report() -> str:
    return (DOCS / "accuracy.md").read_text(encoding="utf-8")


def test_accuracy_md_was_measured_from_the_current_inputs():
    recorded = report.recorded_digest(_committed_report())
    assert recorded == report.inputs_digest(list(SPECS.values()), OUT_DIRS), "run `make report`"


def test_accuracy_md_says_where_it_was_measured():
    text = _committed_report()
    assert "Measured with TensorFlow " in text and " on CPU (" in text
    assert "TF_ENABLE_ONEDNN_OPTS=" in text


def _copy_inputs(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    specs = tmp_path / "specs"
    specs.mkdir()
    folders = {backend: tmp_path / folder for backend, folder in FOLDERS.items()}
    for name in SPECS:
        (specs / f"{name}.yaml").write_bytes((REPO_ROOT / "specs" / f"{name}.yaml").read_bytes())
        for backend, folder in folders.items():
            folder.mkdir(exist_ok=True)
            source = OUT_DIRS[backend] / f"{name}.py"
            (folder / f"{name}.py").write_bytes(source.read_bytes())
    return specs, folders


def _digest_of(specs: Path, folders: dict[str, Path]) -> str:
    return report.inputs_digest([load_spec(p) for p in sorted(specs.glob("*.yaml"))], folders)


def test_a_copy_of_the_inputs_has_the_recorded_digest(tmp_path):
    specs, generated = _copy_inputs(tmp_path)
    assert _digest_of(specs, generated) == report.recorded_digest(_committed_report())


def test_an_edited_spec_makes_the_report_stale(tmp_path):
    specs, generated = _copy_inputs(tmp_path)
    path = specs / "gelu.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert _digest_of(specs, generated) != report.recorded_digest(_committed_report())


@pytest.mark.parametrize("backend", sorted(FOLDERS))
def test_an_edited_module_makes_the_report_stale(tmp_path, backend):
    specs, generated = _copy_inputs(tmp_path)
    path = generated[backend] / "sigmoid.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert _digest_of(specs, generated) != report.recorded_digest(_committed_report())


def test_write_report_records_the_digest_and_writes_a_plot(tmp_path):
    spec = SPECS["log1pexp"]
    written = report.write_report([spec], OUT_DIRS, tmp_path, 64)
    assert sorted(p.name for p in written) == ["accuracy.md", "log1pexp.png"]
    text = (tmp_path / "accuracy.md").read_text(encoding="utf-8")
    assert report.recorded_digest(text) == report.inputs_digest([spec], OUT_DIRS)
    assert "## JAX and PyTorch" in text and "`jax.nn.softplus(x)`" in text
    assert (tmp_path / "plots" / "log1pexp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@functools.cache
def _curves(op: str) -> tuple[list, bytes]:
    return report._plot(SPECS[op], GENERATED)


def test_plot_bytes_are_deterministic():
    curves, first = _curves("log1pexp")
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"Software" not in first and b"matplotlib" not in first
    labels = {
        "hogen": "hogen",
        "autodiff": "TF autodiff of expr",
        "builtin": "tf.nn.softplus(x)",
        "jax builtin": "jax.nn.softplus(x)",
        "torch builtin": "F.softplus(x)",
    }
    assert plots.render_plot(SPECS["log1pexp"], curves, labels) == first


def test_readme_shows_the_log1pexp_table_of_the_report():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## What you get", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    docs = (DOCS / "accuracy.md").read_text(encoding="utf-8")
    log1pexp = docs.split("## log1pexp", 1)[1].split("\n## ", 1)[0]
    assert len(table) == 10 and table == [
        line for line in log1pexp.splitlines() if line.startswith("|")
    ]
    assert "docs/plots/log1pexp.png" in section and "docs/accuracy.md" in section


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(op, marks=pytest.mark.xfail(strict=True, reason=NON_FINITE[op]))
        if op in NON_FINITE
        else op
        for op in sorted(SPECS)
    ],
)
def test_no_point_of_the_plot_grid_has_every_bit_wrong(op):
    """Full width (32/64 bits): NaN or inf where the exact value is finite, or the reverse."""
    for curve in _curves(op)[0]:
        width = 8 * np.dtype(curve.dtype).itemsize
        for bits in curve.bits:
            assert not (bits["hogen"] >= width).any(), curve.dtype


def test_accuracy_md_lists_the_corpus_expressions_that_break_the_promise():
    """Issue 13: each corpus expression that breaks the promise is listed in accuracy.md with
    its kind. The list is corpus.md's; a corpus.md edited without `make report` fails here."""
    failures = report.corpus_failures(DOCS)
    assert any(line.startswith("- d_") and "(dev, kind " in line for line in failures)
    text = _committed_report()
    assert "\n".join(failures) in text, "run `make report`"


def test_corpus_failures_reads_only_its_section(tmp_path):
    (tmp_path / "corpus.md").write_text(
        "# Corpus\n\n## Totals\n\n- dev 1/2\n\n"
        f"{report.CORPUS_FAILURES}\n\n- d_a (dev, kind 5): `a`: f/64:2.0,9\n\n"
        "## Every expression\n\n|x|\n",
        encoding="utf-8",
    )
    assert report.corpus_failures(tmp_path) == ["- d_a (dev, kind 5): `a`: f/64:2.0,9"]
    assert report.corpus_failures(tmp_path / "missing") == []
