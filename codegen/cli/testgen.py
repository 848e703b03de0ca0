"""Generated test modules: a spec in, the source of a pytest module for its op out.

In: a validated `Spec`, the spec file, the folder of generated modules (`out`)
and the folder the test module goes to (`tests`). Out: the text of
`tests/test_hogen_<name>.py`, which checks the committed op, every partial of
orders 0..order, against the exact reference (through `codegen.measure.testkit`, which
runs `hogen verify`'s measurement) and against TF autodiff of the naive
expression. It finds the spec and the op relative to itself, and its header
hash covers the spec's bytes and both relative paths, so `build --check`
knows when it is stale. Pure: reads the spec file's bytes, writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from codegen import __version__
from codegen.backends import DEFAULT_OUT, header_sha256
from codegen.backends.templates_env import render
from codegen.cli import outputs
from codegen.derive import multi_indices
from codegen.front.spec import Spec


def partial_label(args: tuple[str, ...], index: tuple[int, ...]) -> str:
    """How `hogen verify` names a partial: f, f_x, f_xy, ..."""
    if not sum(index):
        return "f"
    return "f_" + "".join(arg for arg, count in zip(args, index) for _ in range(count))


def partials(spec: Spec) -> list[tuple[str, tuple[int, ...]]]:
    """Every partial of orders 0..order, as (label, multi-index), in verify's order."""
    orders = range(spec.order + 1)
    indices = [index for order in orders for index in multi_indices(len(spec.args), order)]
    return [(partial_label(spec.args, index), index) for index in indices]


def _literal(path: str) -> str:
    """A Python string literal in double quotes, as ruff format writes it."""
    return json.dumps(path)


def render_tests(spec: Spec, spec_file: Path, out: Path, tests: Path, backend: str = "tf") -> str:
    """The pytest module that tests the op built by `backend` from `spec_file` into `out`."""
    spec_from_here = outputs.relative(spec_file, tests)
    out_from_here = outputs.relative(out, tests)
    root = outputs.project_root(out)
    sha = outputs.tests_sha256(spec_file.read_bytes(), spec_from_here, out_from_here)
    sha = header_sha256(sha, backend)
    spec_path = outputs.header_spec_path(spec_file, out)
    out_name = outputs.relative(out, root)  # the project root holds `out`: run from there
    out_option = "" if out_name == DEFAULT_OUT[backend] else f"--out {out_name} "
    out_option = ("" if backend == "tf" else f"--backend {backend} ") + out_option
    command = f"{out_option}--tests {outputs.relative(tests, root)} {spec_path}"
    return render(
        "test_module.py.j2",
        {
            "version": __version__,
            "spec_path": spec_path,
            "command": command,
            "sha256": sha,
            "name": spec.name,
            "framework": {"tf": "TF", "jax": "JAX", "torch": "PyTorch"}[backend],
            "backend_arg": "" if backend == "tf" else f', backend="{backend}"',
            "order": spec.order,
            "spec_from_here": _literal(spec_from_here),
            "out_from_here": _literal(out_from_here),
            "partials": [f'"{label}": {index!r},' for label, index in partials(spec)],
        },
    )
