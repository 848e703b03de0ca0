"""Golden files: the generated code for founding specs, byte for byte but for its figures.

Each form's docstring line `measured float32 mean M / p99 P bits, ...` is what the NumPy
mirror measured on the machine that built it: NumPy dispatches exp, log, tanh, log1p, ...
to kernels of the processor's SIMD level (AVX2, AVX-512, baseline), and these round
differently, so M moves in its second decimal from machine to machine. Those lines are
compared as a shape, and each figure is checked against the promise instead.

A change to the generated code must be deliberate. To accept one, regenerate the goldens and
review their diff:

    HOGEN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
    git diff tests/golden/
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest

from codegen.front.spec import load_spec
from codegen.judge.accuracy import MEAN_LIMIT, P99_LIMIT
from codegen.pipeline import build

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"
SPECS = ("log1pexp", "logaddexp")
UPDATE = os.environ.get("HOGEN_UPDATE_GOLDEN") == "1"
FIGURES = re.compile(r"(float32|float64) mean (\d+\.\d\d) / p99 (\d+\.\d) bits")


def _masked(source: str) -> str:
    """`source` with every measured figure written as `M`: its shape kept, its digits not."""
    return FIGURES.sub(lambda m: f"{m[1]} mean M / p99 M bits", source)


def _broken_figures(source: str) -> list[str]:
    """The measured figures in `source` that break the promise."""
    return [
        m[0]
        for m in FIGURES.finditer(source)
        if float(m[2]) > MEAN_LIMIT or float(m[3]) > P99_LIMIT
    ]


@pytest.fixture
def in_repo(monkeypatch):
    """Build from the repository root, as `hogen build specs/...` would: the header names
    `specs/<name>.yaml`, and the exact references come from the repository's cache."""
    monkeypatch.chdir(REPO)


@pytest.mark.parametrize("name", SPECS)
def test_generated_code_matches_golden(name, in_repo):
    source = build(load_spec(f"specs/{name}.yaml"))
    golden = GOLDEN / f"{name}.py"
    if UPDATE:
        golden.write_bytes(source.encode("utf-8"))
        return
    if not golden.exists():
        pytest.fail(
            f"{golden} is missing; create it with HOGEN_UPDATE_GOLDEN=1 "
            f".venv/bin/python -m pytest tests/test_golden.py, then review it"
        )
    expected = _masked(golden.read_bytes().decode("utf-8"))
    assert FIGURES.search(source), "the generated docstrings state no measured figures"
    assert not _broken_figures(source), f"figures that break the promise: {_broken_figures(source)}"
    if _masked(source) != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True),
                _masked(source).splitlines(True),
                f"tests/golden/{name}.py (golden)",
                f"build(specs/{name}.yaml)",
            )
        )
        pytest.fail(
            f"generated code for {name} differs from its golden file; if the change is "
            f"intended, regenerate with HOGEN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest "
            f"tests/test_golden.py and review `git diff tests/golden/`\n{diff}"
        )


@pytest.mark.parametrize("name", SPECS)
def test_golden_matches_the_committed_generated_module(name):
    """generated/ is built from the same specs by the same hogen: it must agree with the golden
    (if not, run `hogen build` or regenerate the goldens)."""
    committed = REPO / "generated" / f"{name}.py"
    golden = GOLDEN / f"{name}.py"
    if not committed.exists() or not golden.exists():
        pytest.skip("no generated module or golden to compare")
    assert committed.read_bytes() == golden.read_bytes()
