"""`hogen build --backend jax|torch`: where outputs go, freshness per backend, no framework.

In a scratch project (log1pexp at order 1): each backend writes its own folder
(generated/, generated_jax/, generated_torch/) with a header hash that names the backend, so
a module built for one is never fresh for another; the build path and the fast fresh check
import no framework; the committed generated_jax/ and generated_torch/ are fresh.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import test_workflow as workflow
from test_workflow import REPO, console, hogen

from codegen import pipeline
from codegen.cli import outputs

PROBE = """
import sys
from codegen.cli.entry import main
sys.argv = ['hogen', *{args!r}]
try:
    code = main()
except SystemExit as done:
    code = done.code
frameworks = [m for m in ('tensorflow', 'jax', 'torch') if m in sys.modules]
print(code, frameworks, file=sys.stderr)
"""


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A scratch project: specs/log1pexp.yaml at order 1, nothing built (test_workflow's)."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "log1pexp.yaml").write_text(workflow._spec_text(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOGEN_CACHE", str(REPO / ".hogen-cache"))
    monkeypatch.setattr(pipeline, "build", workflow._memo_build)
    return tmp_path


def _probe(args, cwd) -> str:
    run = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return run.stderr.splitlines()[-1]


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_each_backend_builds_into_its_own_folder_importing_no_framework(project, backend):
    assert _probe(["build", "--backend", backend], project) == "0 []"
    module = project / f"generated_{backend}" / "log1pexp.py"
    header = outputs.read_header(module)
    assert header is not None and header.spec == "specs/log1pexp.yaml"
    assert not (project / "generated").exists()
    assert f"hogen build --backend {backend} specs/log1pexp.yaml" in module.read_text()
    assert _probe(["build", "--check", "--backend", backend], project) == "0 []"  # fast path
    assert hogen("build", "--check").exit_code == 1  # TF's outputs are missing
    assert hogen("build").exit_code == 0
    tf_header = outputs.read_header(project / "generated" / "log1pexp.py")
    assert tf_header.sha256 != header.sha256
    assert hogen("build", "--check", "--backend", backend).exit_code == 0


def test_a_module_of_another_backend_is_stale_not_fresh(project):
    assert hogen("build", "--backend", "jax", "--out", "ops").exit_code == 0
    check = hogen("build", "--check", "--backend", "torch", "--out", "ops")
    assert check.exit_code == 1 and "stale" in check.stderr
    assert hogen("build", "--backend", "torch", "--out", "ops").exit_code == 0
    assert "import torch" in (project / "ops" / "log1pexp.py").read_text()


def test_an_unknown_backend_is_a_usage_error(project):
    result = console("build", "--backend", "mxnet", cwd=project)
    assert result.returncode == 2 and "tf, jax, torch" in result.stderr
    assert not any(Path(project).glob("generated*"))


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_committed_modules_are_fresh(backend):
    assert _probe(["build", "--check", "--backend", backend], REPO) == "0 []"
