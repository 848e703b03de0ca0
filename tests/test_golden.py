"""Golden files: the generated code for founding specs, byte for byte.

A change to the generated code must be deliberate. To accept one, regenerate the goldens and
review their diff:

    HOGEN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
    git diff tests/golden/
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from codegen.front.spec import load_spec
from codegen.pipeline import build

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"
SPECS = ("log1pexp", "logaddexp")
UPDATE = os.environ.get("HOGEN_UPDATE_GOLDEN") == "1"


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
    expected = golden.read_bytes()
    if source.encode("utf-8") != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.decode("utf-8").splitlines(True),
                source.splitlines(True),
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
