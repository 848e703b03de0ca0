"""The `hogen` command line: the only module that writes files and decides exit codes.

In: argv (after `codegen.cli.entry`, the console script, has answered fresh builds
itself). Out: files under `--out` (and `--tests`), text on the terminal
through `codegen.cli.terminal`, and an exit code as black and ruff use them: 0
fine, 1 stale or a promise broken (or, with --exit-non-zero-on-change,
something was written), 2 bad spec or usage, 123 internal error. Heavy
imports (SymPy, TensorFlow) happen inside the commands that need them, so
`hogen build --check` on fresh outputs stays fast.
"""

from __future__ import annotations

import difflib
import os
import sys
import time
from pathlib import Path

import typer

from codegen.cli import outputs
from codegen.cli.terminal import Terminal
from codegen.judge import VERIFY_SEED

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Generate TensorFlow, JAX and PyTorch ops with numerically stable custom derivatives.",
)
EXIT_STALE, EXIT_USAGE, EXIT_INTERNAL = 1, 2, 123
PATHS = typer.Argument(None, help="Spec files or folders (default: specs/).")
OUT = typer.Option(
    None,
    "--out",
    help="Folder of generated modules (default: generated/, generated_jax/, generated_torch/).",
)
BACKEND = typer.Option("tf", "--backend", help="The framework: tf, jax or torch.")
QUIET = typer.Option(False, "--quiet", "-q", help="Print only errors and findings.")
VERBOSE = typer.Option(False, "--verbose", "-v", help="Print every step.")


def _usage(ui: Terminal, message: str) -> typer.Exit:
    ui.error(message)
    return typer.Exit(EXIT_USAGE)


def _specs(paths: list[Path] | None, ui: Terminal) -> list[Path]:
    found = outputs.find_specs(paths or [Path("specs")])
    for path in found:
        shown = outputs.display_path(path)
        if not shown.isprintable():  # the path goes into comments of the generated module
            raise _usage(ui, f"{shown!r}: expected a spec file name without control characters")
        if not path.is_file():
            raise _usage(ui, f"{shown}: no such spec file")
    return found


def _load(path: Path, ui: Terminal):
    from codegen.front.spec import SpecError, load_spec

    try:
        return load_spec(outputs.display_path(path))
    except SpecError as error:
        ui.spec_error(error)
        raise typer.Exit(EXIT_USAGE) from None


def _out(out_dir: Path | None, backend: str, ui: Terminal) -> Path:
    """`--out`, or the backend's default folder; a usage error for an unknown backend."""
    from codegen.backends import BACKENDS, DEFAULT_OUT

    if backend not in BACKENDS:
        raise _usage(ui, f"--backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    return out_dir if out_dir is not None else Path(DEFAULT_OUT[backend])


def _renderer(ui: Terminal, jobs: int, max_ops: int, backend: str = "tf"):
    """A function building specs into module text, with progress, in `jobs` processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    from codegen import pipeline

    def render(specs: list) -> list[str]:
        work = partial(pipeline.build, max_ops=max_ops, backend=backend)
        with ui.progress(len(specs), "building") as advance:
            if jobs <= 1 or len(specs) <= 1:
                return [_done(work(spec), spec, advance) for spec in specs]
            # spawn, not fork: a process that imported JAX or TensorFlow (a test run, a
            # notebook) has threads, and a forked child can deadlock on a lock one held
            spawn = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=spawn) as pool:
                reparsed = partial(_build_reparsed, max_ops=max_ops, backend=backend)
                futures = [pool.submit(reparsed, spec) for spec in specs]
                return [_done(f.result(), spec, advance) for f, spec in zip(futures, specs)]

    return render


def _build_reparsed(spec, max_ops: int, backend: str) -> str:
    """`pipeline.build` of `spec` with its expression parsed again in this worker: a pickled
    expression comes back re-evaluated by SymPy (ndtr's erfc(-u) as 2 - erfc(u)), and the
    module would not be the bytes one process builds."""
    import dataclasses

    import sympy as sp

    from codegen import pipeline
    from codegen.front.spec import parse_expression

    names = {n: sp.Symbol(n, real=True) for n in (*spec.args, *(p for p, _ in spec.params))}
    expr = parse_expression(spec.expr_text, names, path=spec.path, line=1, col=1)
    return pipeline.build(dataclasses.replace(spec, expr=expr), max_ops=max_ops, backend=backend)


def _done(text: str, spec, advance) -> str:
    advance(f"{spec.path} -> {spec.name}.py")
    return text


def _diff(path: Path, new: str) -> str:
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    name = outputs.display_path(path)
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), name, name))


def _report_check(plan: outputs.Plan, out_dir: Path, ui: Terminal) -> None:
    show = outputs.display_path
    for kind, specs in (("stale", plan.stale), ("missing", plan.missing)):
        for spec in specs:
            ui.finding(kind, show(spec))
    for spec, module in plan.tests_due:
        ui.finding("stale" if module.exists() else "missing", f"{show(module)} (from {show(spec)})")
    for module in plan.extra:
        ui.finding("extra", show(module))
    if plan.init_stale:
        ui.finding("stale", show(out_dir / outputs.INIT_NAME))
    for spec in plan.fresh:
        ui.step(f"fresh: {show(spec)}")
    ui.result(outputs.check_summary(plan), stderr=True)


def _plan_changes(plan, spec_paths, out_dir, tests_dir, rebuild, ui, jobs, max_ops, backend):
    from codegen.cli.building import BuildError, changes
    from codegen.derive import DeriveError
    from codegen.front.spec import SpecError

    try:
        render = _renderer(ui, jobs, max_ops, backend)
        return changes(plan, spec_paths, out_dir, tests_dir, rebuild, render, backend)
    except SpecError as error:
        ui.spec_error(error)
    except (BuildError, DeriveError) as error:
        ui.error(str(error))
    raise typer.Exit(EXIT_USAGE)


def _remove_stale_temp_files(folders: set[Path], ui: Terminal) -> None:
    """Temp files of killed builds (`.<name>.py.XXXXXXXX.tmp`) in the folders written to."""
    now = time.time()
    for folder in sorted(folders):
        for path in outputs.stale_temp_files(folder, now):
            path.unlink(missing_ok=True)
            ui.step(f"removed {outputs.display_path(path)} (left by an interrupted build)")


def _apply(todo, ui: Terminal) -> tuple[int, int, bool]:
    """Write and remove files; (op modules written, test modules written, anything changed)."""
    _remove_stale_temp_files({path.parent for path in todo.texts()}, ui)
    written = {path for path, text in todo.texts().items() if outputs.write_atomic(path, text)}
    for module in todo.removals:
        module.unlink(missing_ok=True)
        ui.step(f"removed {outputs.display_path(module)}")
    for path in sorted(written):
        ui.step(f"wrote {outputs.display_path(path)}")
    built = len(written & set(todo.modules))
    return built, len(written & set(todo.tests)), bool(written or todo.removals)


@app.command("build")
def build_command(
    paths: list[Path] | None = PATHS,
    out_dir: Path | None = OUT,
    backend: str = BACKEND,
    tests_dir: Path | None = typer.Option(
        None, "--tests", help="Also write a pytest module per op into this folder."
    ),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 if stale."),
    diff: bool = typer.Option(False, "--diff", help="Write nothing; print unified diffs."),
    force: bool = typer.Option(False, "--force", help="Rebuild fresh outputs too."),
    exit_on_change: bool = typer.Option(
        False, "--exit-non-zero-on-change", help="Exit 1 if any file was written or removed."
    ),
    quiet: bool = QUIET,
    verbose: bool = VERBOSE,
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Build specs in this many processes."),
    max_ops: int = typer.Option(
        20_000,
        "--max-ops",
        min=1,
        help="Stop with an error when a derivative grows past this size.",
    ),
) -> None:
    """Build specs into TensorFlow, JAX or PyTorch modules (skipping fresh ones)."""
    ui = Terminal(quiet, verbose)
    out_dir = _out(out_dir, backend, ui)
    spec_paths = _specs(paths, ui)
    if tests_dir is not None and outputs.relative(tests_dir, out_dir) == ".":
        raise _usage(ui, "--tests must name a folder other than --out")
    plan = outputs.plan(spec_paths, out_dir, tests_dir, backend)
    if check and not diff:
        _report_check(plan, out_dir, ui)
        raise typer.Exit(0 if plan.clean else EXIT_STALE)
    if plan.clean and not (force or diff):
        ui.result(outputs.build_summary(0, len(spec_paths), 0))
        return
    rebuild = force or diff
    todo = _plan_changes(plan, spec_paths, out_dir, tests_dir, rebuild, ui, jobs, max_ops, backend)
    if diff:
        texts = [_diff(path, text) for path, text in todo.texts().items()]
        texts += [_diff(path, "") for path in todo.removals]
        ui.diff("".join(texts))
        raise typer.Exit(EXIT_STALE if any(texts) else 0)
    built, tests_written, changed = _apply(todo, ui)
    summary = outputs.build_summary(built, len(spec_paths) - built, len(todo.removals))
    plural = "" if tests_written == 1 else "s"
    ui.result(summary + (f", {tests_written} test module{plural} written" if tests_written else ""))
    raise typer.Exit(EXIT_STALE if exit_on_change and changed else 0)


@app.command("new")
def new_command(
    name: str = typer.Argument(..., help="The op's name: a Python identifier."),
    expr: str = typer.Option(..., "--expr", help="The function, e.g. 'log(1 + exp(x))'."),
    args: str = typer.Option("x", "--args", help="Comma-separated arg names."),
    order: int = typer.Option(2, "--order", help="Custom derivatives up to this order (1..4)."),
    doc: str | None = typer.Option(None, "--doc", help="One line for the op's docstring."),
    specs_dir: Path = typer.Option(Path("specs"), "--dir", help="Where the spec goes."),
    schema: Path = typer.Option(
        Path("docs/spec.schema.json"), "--schema", help="The JSON Schema editors validate with."
    ),
) -> None:
    """Write specs/NAME.yaml, checked to build, with the schema line editors validate by."""
    from codegen.cli.newspec import new_spec, schema_text, split_args
    from codegen.front.spec import SpecError

    ui = Terminal()
    path = specs_dir / f"{name}.yaml"
    try:
        text, _ = new_spec(name, expr, split_args(args), order, doc, path, schema)
    except SpecError as error:
        ui.spec_error(error)
        raise typer.Exit(EXIT_USAGE) from None
    if path.exists():
        raise _usage(ui, f"{outputs.display_path(path)} exists; not overwritten")
    if not schema.exists():
        outputs.write_atomic(schema, schema_text())
        ui.result(
            f"wrote {outputs.display_path(schema)}: the JSON Schema the spec's first line "
            "points editors to (--schema PATH puts it elsewhere)"
        )
    outputs.write_atomic(path, text)
    ui.result(f"wrote {outputs.display_path(path)}; build it with: hogen build {path.as_posix()}")


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of a spec file (the loader validates with the same table)."""
    from codegen.cli.newspec import schema_text

    Terminal().write(schema_text())


@app.command("explain")
def explain_command(spec_path: Path = typer.Argument(..., help="A spec file.")) -> None:
    """Show each derivative, the candidate forms measured, and the one chosen."""
    from codegen.cli.explain import explain

    Terminal().write(explain(_load(spec_path, Terminal())) + "\n")


def _quiet_tensorflow() -> None:
    """Keep TensorFlow's C++ start-up log lines out of hogen's output, unless the user asked
    for them (TF_CPP_MIN_LOG_LEVEL=0); must run before TensorFlow is first imported.

    TensorFlow 2.21 writes absl's "before absl::InitializeLog()" and oneDNN notices while it
    is imported whatever TF_CPP_MIN_LOG_LEVEL says, so the import runs with file
    descriptor 2 on /dev/null; an import error still raises, with its Python traceback.
    """
    level = os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if level == "0" or "tensorflow" in sys.modules:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            try:
                import tensorflow  # noqa: F401 - imported here only to silence its start-up
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


@app.command("verify")
def verify_command(
    paths: list[Path] | None = PATHS,
    out_dir: Path | None = OUT,
    backend: str = BACKEND,
    json_path: Path | None = typer.Option(None, "--json", help="Also write the figures as JSON."),
    samples: int = typer.Option(2000, help="Sample points per dtype."),
    seed: int = typer.Option(
        VERIFY_SEED, help="The points' seed; 0 and 1 give those builds choose forms on."
    ),
) -> None:
    """Run the generated ops in their framework and measure them against the exact reference."""
    ui = Terminal()
    out_dir = _out(out_dir, backend, ui)
    specs = [_load(path, ui) for path in _specs(paths, ui)]
    _quiet_tensorflow()
    from codegen.measure import frameworks
    from codegen.measure.verify import format_table, verify_spec, write_json

    if backend == "tf":
        rows = [r for s in specs for r in verify_spec(s, out_dir, samples, seed=seed)]
    else:
        verify = frameworks.verify_spec
        rows = [r for s in specs for r in verify(s, out_dir, samples, backend, seed=seed)]
    ui.write(format_table(rows) + "\n")
    if json_path:
        write_json(rows, json_path)
    broken = [r for r in rows if r.tool == "hogen" and not r.figures.keeps_promise()]
    raise typer.Exit(EXIT_STALE if broken else 0)


@app.command("report")
def report_command(
    paths: list[Path] | None = PATHS,
    out_dir: Path | None = OUT,
    docs: Path = typer.Option(Path("docs"), "--docs", help="Where accuracy.md and plots go."),
    samples: int = typer.Option(2000, help="Sample points per dtype."),
    jax_out: Path | None = typer.Option(None, "--jax-out", help="Default: generated_jax/."),
    torch_out: Path | None = typer.Option(None, "--torch-out", help="Default: generated_torch/."),
) -> None:
    """Write docs/accuracy.md and error plots: hogen vs autodiff vs the built-ins, in
    TensorFlow, JAX and PyTorch (all three must be installed: hogen[jax,torch])."""
    import importlib.util

    ui = Terminal()
    missing = [m for m in ("jax", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        raise _usage(
            ui,
            f"report measures TensorFlow, JAX and PyTorch; not installed: {', '.join(missing)}"
            " (pip install 'hogen[jax,torch]')",
        )
    _quiet_tensorflow()
    from codegen.measure.report import write_report

    out_dirs = {
        "tf": _out(out_dir, "tf", ui),
        "jax": _out(jax_out, "jax", ui),
        "torch": _out(torch_out, "torch", ui),
    }
    specs = [_load(path, ui) for path in _specs(paths, ui)]
    for path in write_report(specs, out_dirs, docs, samples):
        ui.result(f"wrote {path}")


def main() -> int:
    """Run the typer app: exit 123 on anything unexpected."""
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
        Terminal().error(f"internal error: {type(error).__name__}: {error}")
        sys.exit(EXIT_INTERNAL)
