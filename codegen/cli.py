"""The `hogen` command line: the only module that touches files and decides exit codes.

In: argv. Out: files under `--out`, text on the terminal, and an exit code as
black and ruff use them: 0 fine, 1 stale or a promise broken, 2 bad spec or
usage, 123 internal error. Heavy imports (SymPy, TensorFlow) happen inside
the commands that need them, so `hogen build --check` on fresh outputs
stays fast.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import typer
from rich.console import Console

from codegen import outputs

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Generate TensorFlow ops with numerically stable custom derivatives.",
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)

EXIT_STALE, EXIT_USAGE, EXIT_INTERNAL = 1, 2, 123
PATHS = typer.Argument(None, help="Spec files or folders (default: specs/).")
OUT = typer.Option(Path("generated"), "--out", help="Folder of generated modules.")


def _fail_spec(error) -> None:
    err.print(f"error: {error}", markup=False)
    if getattr(error, "source_line", None):
        err.print("  " + error.source_line[:200], markup=False)
        err.print("  " + " " * max(error.col - 1, 0) + "^", markup=False)
    raise typer.Exit(EXIT_USAGE)


def _specs(paths: list[Path] | None) -> list[Path]:
    found = outputs.find_specs(paths or [Path("specs")])
    for path in found:
        if not path.is_file():
            err.print(f"error: {path}: no such spec file")
            raise typer.Exit(EXIT_USAGE)
    return found


def _load_all(spec_paths: list[Path]) -> list:
    """Every spec loaded and validated before any is built: a bad one fails the run first."""
    from codegen.spec import SpecError, load_spec

    specs = []
    for path in spec_paths:
        try:
            specs.append(load_spec(outputs.display_path(path)))
        except SpecError as error:
            _fail_spec(error)
    return specs


def _render(spec_paths: list[Path], verbose: bool, jobs: int, max_ops: int) -> dict[Path, str]:
    """Build every spec in memory (in `jobs` processes); nothing is written here."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    from codegen.derive import DeriveError
    from codegen.pipeline import build

    specs = _load_all(spec_paths)
    if verbose:
        for spec in specs:
            err.print(f"building {spec.path} -> {spec.name}.py", markup=False)
    work = partial(build, max_ops=max_ops)
    try:
        if jobs > 1 and len(specs) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                texts = list(pool.map(work, specs))
        else:
            texts = [work(spec) for spec in specs]
    except DeriveError as error:
        err.print(f"error: {error}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    return {Path(f"{spec.name}.py"): text for spec, text in zip(specs, texts)}


def _diff(path: Path, new: str) -> str:
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    return "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), str(path))
    )


@app.command("build")
def build_command(
    paths: list[Path] | None = PATHS,
    out_dir: Path = OUT,
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 if stale."),
    diff: bool = typer.Option(False, "--diff", help="Write nothing; print unified diffs."),
    force: bool = typer.Option(False, "--force", help="Rebuild fresh outputs too."),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Build specs in this many processes."),
    max_ops: int = typer.Option(
        20_000,
        "--max-ops",
        min=1,
        help="Stop with an error when a derivative grows past this size.",
    ),
) -> None:
    """Build specs into TensorFlow modules (skipping fresh ones)."""
    spec_paths = _specs(paths)
    plan = outputs.plan(spec_paths, out_dir)
    if check and not diff:
        _report_check(plan, quiet)
        raise typer.Exit(EXIT_STALE if plan.to_build or plan.extra else 0)
    targets = spec_paths if (force or diff) else list(plan.to_build)
    rendered = _render(targets, verbose, jobs, max_ops)
    if diff:
        texts = [_diff(out_dir / name, text) for name, text in sorted(rendered.items())]
        out.print("".join(texts), end="", markup=False)
        raise typer.Exit(EXIT_STALE if any(texts) else 0)
    written = [
        name
        for name, text in sorted(rendered.items())
        if outputs.write_atomic(out_dir / name, text)
    ]
    for module in plan.extra:
        module.unlink()
    from codegen.emit import render_init

    outputs.write_atomic(out_dir / outputs.INIT_NAME, render_init(outputs.module_names(out_dir)))
    if not quiet:
        out.print(
            f"{len(written)} built, {len(spec_paths) - len(written)} unchanged, "
            f"{len(plan.extra)} removed",
            markup=False,
        )


def _report_check(plan: outputs.Plan, quiet: bool) -> None:
    if quiet:
        return
    for kind, items in (("stale", plan.stale), ("missing", plan.missing), ("extra", plan.extra)):
        for item in items:
            err.print(f"{kind}: {item}", markup=False)
    total = len(plan.fresh) + len(plan.stale) + len(plan.missing)
    err.print(
        f"{len(plan.fresh)} of {total} fresh, {len(plan.to_build)} to build, "
        f"{len(plan.extra)} extra",
        markup=False,
    )


@app.command("explain")
def explain_command(spec_path: Path = typer.Argument(..., help="A spec file.")) -> None:
    """Show each derivative, the candidate forms measured, and the one chosen."""
    from codegen.explain import explain
    from codegen.spec import SpecError, load_spec

    try:
        spec = load_spec(outputs.display_path(spec_path))
    except (SpecError, OSError) as error:
        _fail_spec(error)
    out.print(explain(spec), markup=False)


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of a spec file."""
    import json

    from codegen.spec import SCHEMA

    out.print(json.dumps(SCHEMA, indent=2, sort_keys=True), markup=False)


@app.command("verify")
def verify_command(
    paths: list[Path] | None = PATHS,
    out_dir: Path = OUT,
    json_path: Path | None = typer.Option(None, "--json", help="Also write the figures as JSON."),
    samples: int = typer.Option(2000, help="Sample points per dtype."),
) -> None:
    """Run the generated ops in TensorFlow and measure them against the exact reference."""
    from codegen.spec import SpecError, load_spec
    from codegen.verify import format_table, verify_spec, write_json

    rows = []
    for path in _specs(paths):
        try:
            spec = load_spec(outputs.display_path(path))
        except SpecError as error:
            _fail_spec(error)
        rows += verify_spec(spec, out_dir, samples)
    print(format_table(rows))
    if json_path:
        write_json(rows, json_path)
    broken = [r for r in rows if r.tool == "hogen" and not r.figures.keeps_promise()]
    raise typer.Exit(EXIT_STALE if broken else 0)


@app.command("report")
def report_command(
    paths: list[Path] | None = PATHS,
    out_dir: Path = OUT,
    docs: Path = typer.Option(Path("docs"), "--docs", help="Where accuracy.md and plots go."),
    samples: int = typer.Option(2000, help="Sample points per dtype."),
) -> None:
    """Write docs/accuracy.md and error plots: hogen vs TF autodiff vs TF built-ins."""
    from codegen.report import write_report

    specs = _load_all(_specs(paths))
    written = write_report(specs, out_dir, docs, samples)
    for path in written:
        out.print(f"wrote {path}", markup=False)


def main() -> None:
    """Console entry point: exit 123 on anything unexpected."""
    try:
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except SystemExit:
        raise
    except Exception as error:  # noqa: BLE001 - the one place internal errors become exit 123
        if hasattr(error, "show") and hasattr(error, "exit_code"):  # a usage error from typer
            error.show()
            sys.exit(EXIT_USAGE)
        if isinstance(error, typer.Abort):
            sys.exit(EXIT_USAGE)
        err.print(f"internal error: {type(error).__name__}: {error}", markup=False)
        sys.exit(EXIT_INTERNAL)
