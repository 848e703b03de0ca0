"""What one `hogen build` would change: the plan and the specs in, files to write and remove out.

In: the spec paths of the run, the `Plan` from `outputs.plan`, the folders of
generated modules and (optionally) generated tests, whether to rebuild fresh
specs, and a function that builds specs into module text (the CLI's, which
shows progress and may use processes). Out: `Changes`, the text of every file
to write (op modules, test modules, `__init__.py`) and hogen's own files to
remove: modules and tests whose spec is gone, and those a spec built before it
was renamed. Reads files, writes none; the CLI writes.

Raises `SpecError` for a bad spec (every spec is validated before any is
built), `BuildError` when two specs define the same op or a build would
overwrite a file hogen did not write or the op of a spec outside the run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codegen.cli import outputs


class BuildError(Exception):
    """Specs that cannot be built together; the message names the files."""


@dataclass(frozen=True)
class Changes:
    modules: dict[Path, str]  # op modules by path
    tests: dict[Path, str]  # test modules by path
    init: tuple[Path, str]  # out/__init__.py and its text
    removals: tuple[Path, ...]  # hogen's own files to delete

    def texts(self) -> dict[Path, str]:
        """Every file to write, in path order."""
        return dict(sorted({**self.modules, **self.tests, self.init[0]: self.init[1]}.items()))


def _show(path: Path | str) -> str:
    return outputs.display_path(Path(path))


def load_specs(spec_paths: list[Path], out: Path) -> dict[Path, object]:
    """Every spec validated; each Spec's `path` is how headers name it (root-relative)."""
    from codegen.front.spec import load_spec

    specs = {}
    for path in spec_paths:
        spec = load_spec(_show(path))
        specs[path] = dataclasses.replace(spec, path=outputs.header_spec_path(path, out))
    return specs


def check_names(
    specs: dict, targets: list[Path], out: Path, tests: Path | None, backend: str = "tf"
) -> None:
    """One op per name, and no build over a file that belongs to someone else."""
    first: dict[str, Path] = {}
    for path, spec in specs.items():
        if spec.name in first:
            raise BuildError(
                f"{_show(first[spec.name])} and {_show(path)} both define the op "
                f"{spec.name!r}; rename one of them"
            )
        first[spec.name] = path
    root, in_run = outputs.project_root(out), {os.path.abspath(p) for p in specs}
    for path in targets:
        files = [out / f"{specs[path].name}.py"]
        files += [tests / outputs.test_module_name(specs[path].name, backend)] if tests else []
        for file in filter(Path.exists, files):
            header = outputs.read_header(file)
            if header is None:
                raise BuildError(
                    f"{_show(path)}: {_show(file)} was not written by hogen; not overwritten"
                )
            owner = os.path.normpath(os.path.join(root, header.spec))
            if owner not in in_run and os.path.isfile(owner):
                raise BuildError(
                    f"{_show(path)}: {_show(file)} is the op {specs[path].name!r} built from "
                    f"{_show(owner)}; build both specs in one run, or rename one"
                )


def changes(
    plan: outputs.Plan,
    spec_paths: list[Path],
    out: Path,
    tests: Path | None,
    rebuild: bool,
    render: Callable[[list], list[str]],
    backend: str = "tf",
) -> Changes:
    """The files a build writes and removes; `rebuild` rebuilds fresh specs too."""
    targets = list(spec_paths if rebuild else plan.to_build)
    tests_only = [spec for spec, _ in plan.tests_due if spec not in targets]
    specs = load_specs(spec_paths, out) if targets or tests_only else {}
    check_names(specs, targets + tests_only, out, tests, backend)
    texts = render([specs[path] for path in targets])
    modules = {out / f"{specs[p].name}.py": text for p, text in zip(targets, texts)}
    test_texts = _test_modules(specs, targets + tests_only, (out, tests, backend))
    written = {*modules, *test_texts}
    root = outputs.project_root(out)
    superseded = [
        module
        for path in targets
        for module in outputs.claimants(path, [out, tests], root)
        if module not in written
    ]
    removals = tuple(sorted({*plan.extra, *superseded}))
    names = {m.stem for m in _ours(out) if m not in removals} | {m.stem for m in modules}
    from codegen.backends.forms import render_init

    return Changes(
        modules, test_texts, (out / outputs.INIT_NAME, render_init(sorted(names))), removals
    )


def _test_modules(specs: dict, paths: list[Path], where) -> dict:
    """The generated test modules; `where` is (out, tests, backend)."""
    out, tests, backend = where
    if tests is None:
        return {}
    from codegen.cli.testgen import render_tests

    return {
        tests / outputs.test_module_name(specs[p].name, backend): render_tests(
            specs[p], p, out, tests, backend
        )
        for p in paths
    }


def _ours(out: Path) -> list[Path]:
    """The modules in `out` that carry hogen's header."""
    return [out / f"{name}.py" for name in outputs.module_names(out)]
