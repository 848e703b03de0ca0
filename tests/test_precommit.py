"""The pre-commit flow with the real `pre-commit` tool, in a throwaway git repository.

The hooks are this repository's `.pre-commit-hooks.yaml`, taken as they are (entry, files,
pass_filenames) and run as `repo: local` hooks with `language: system` and the console
script of this checkout, so nothing is downloaded. The spec is specs/log1pexp.yaml lowered to
order 1 (fast to build); exact references come from the repository's .hogen-cache.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
HOGEN = shutil.which("hogen", path=str(VENV_BIN)) or str(REPO / ".venv" / "bin" / "hogen")
PRE_COMMIT = shutil.which("pre-commit", path=str(VENV_BIN)) or shutil.which("pre-commit")
MODULE = Path("generated/log1pexp.py")
HEAVY = ("sympy", "tensorflow", "typer", "rich", "jinja2")

pytestmark = pytest.mark.skipif(
    PRE_COMMIT is None or shutil.which("git") is None, reason="needs git and pre-commit"
)


def _manifest() -> dict[str, dict]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {hook["id"]: hook for hook in hooks}


def _local(hook: dict, **extra) -> dict:
    """A manifest hook as a `repo: local` hook running this checkout's console script."""
    program, _, rest = hook["entry"].partition(" ")
    assert program == "hogen"
    return {
        "id": hook["id"],
        "name": hook["name"],
        "entry": f"{shlex.quote(HOGEN)} {rest}",
        "language": "system",
        "pass_filenames": hook["pass_filenames"],
        "files": hook["files"],
        "verbose": True,
        **extra,
    }


def _spec_text(doc: str = "Softplus") -> str:
    text = (REPO / "specs" / "log1pexp.yaml").read_text(encoding="utf-8")
    return text.replace("order: 3\n", "order: 1\n").replace("doc: Softplus", f"doc: {doc}")


@pytest.fixture
def project(tmp_path) -> Path:
    """A git repository with both hooks configured (the check hook in the manual stage)."""
    repo = tmp_path / "project"
    repo.mkdir()
    hooks = _manifest()
    config = {
        "repos": [
            {
                "repo": "local",
                "hooks": [_local(hooks["hogen"]), _local(hooks["hogen-check"], stages=["manual"])],
            }
        ]
    }
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for args in (
        ["init", "-q"],
        ["config", "user.name", "Test"],
        ["config", "user.email", "test@example.com"],
        ["config", "commit.gpgsign", "false"],
    ):
        _git(repo, *args)
    _git(repo, "add", ".pre-commit-config.yaml")
    _git(repo, "commit", "-q", "-m", "config")
    assert _run(repo, PRE_COMMIT, "install").returncode == 0
    return repo


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp / "pre-commit-home"),
        "HOGEN_CACHE": str(REPO / ".hogen-cache"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **extra,
    }


def _run(repo: Path, *args: str, home: Path | None = None, **env: str):
    """Run a command in `repo`; pre-commit keeps its cache under `home` (default: beside it)."""
    return subprocess.run(
        list(args),
        cwd=repo,
        env=_env(home or repo.parent, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _git(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    result = _run(repo, "git", *args, **env)
    assert result.returncode == 0 or args[0] == "commit", result.stdout + result.stderr
    return result


def _commit(repo: Path, message: str, **env: str) -> subprocess.CompletedProcess:
    _git(repo, "add", "-A")
    return _git(repo, "commit", "-q", "-m", message, **env)


def _poison(folder: Path) -> str:
    """A PYTHONPATH on which importing any heavy module fails loudly."""
    for name in HEAVY:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(f"raise ImportError('{name} was imported')\n")
    return str(folder)


def test_the_hook_regenerates_fails_then_passes(project):
    (project / "specs").mkdir()
    (project / "specs" / "log1pexp.yaml").write_text(_spec_text(), encoding="utf-8")

    first = _commit(project, "a new spec")  # the hook writes the module and fails the commit
    assert first.returncode == 1, first.stdout + first.stderr
    shown = first.stdout + first.stderr  # git shows a hook's output on stderr
    assert "Failed" in shown and "1 built, 0 unchanged" in shown
    assert (project / MODULE).is_file() and (project / "generated/__init__.py").is_file()
    assert _git(project, "log", "--format=%s").stdout.split("\n")[0] == "config"

    second = _commit(project, "a new spec")  # the user re-adds: it passes and commits
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Passed" in second.stdout + second.stderr
    assert "generated/log1pexp.py" in _git(project, "ls-files").stdout

    old = (project / MODULE).read_bytes()
    spec = project / "specs" / "log1pexp.yaml"
    spec.write_text(_spec_text("The softplus"), encoding="utf-8")
    edited = _commit(project, "edit the spec")  # stale: regenerated, the commit fails
    assert edited.returncode == 1, edited.stdout + edited.stderr
    new = (project / MODULE).read_bytes()
    assert new != old and b"The softplus" in new
    assert _commit(project, "edit the spec").returncode == 0

    before = (project / MODULE).stat().st_mtime_ns
    poison = _poison(project.parent / "poison")
    again = _run(project, PRE_COMMIT, "run", "--all-files", PYTHONPATH=poison)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 built, 1 unchanged, 0 removed" in again.stdout  # decided from headers alone
    assert (project / MODULE).stat().st_mtime_ns == before
    assert _git(project, "status", "--porcelain").stdout == ""


def test_the_check_hook_fails_on_a_stale_op_and_writes_nothing(project):
    (project / "specs").mkdir()
    spec = project / "specs" / "log1pexp.yaml"
    spec.write_text(_spec_text(), encoding="utf-8")
    _commit(project, "a new spec")
    assert _commit(project, "a new spec").returncode == 0

    poison = _poison(project.parent / "poison")
    fresh = _run(
        project, PRE_COMMIT, "run", "--hook-stage", "manual", "--all-files", PYTHONPATH=poison
    )
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert "1 of 1 fresh" in fresh.stdout

    spec.write_text(_spec_text("The softplus"), encoding="utf-8")
    _git(project, "add", "-A")
    old = (project / MODULE).read_bytes()
    stale = _run(project, PRE_COMMIT, "run", "--hook-stage", "manual", "hogen-check")
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "stale: specs/log1pexp.yaml" in stale.stdout
    assert (project / MODULE).read_bytes() == old


def test_the_repository_config_uses_the_manifest_hook(tmp_path):
    """This repository's own config runs the `hogen` hook with the manifest's entry and files."""
    hook = _manifest()["hogen"]
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    ours = next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == "hogen")
    assert ours["entry"].startswith(".venv/bin/" + hook["entry"])
    assert ours["pass_filenames"] is False
    assert ours["files"].startswith(hook["files"][:-2])
    for what, path in (
        ("manifest", ".pre-commit-hooks.yaml"),
        ("config", ".pre-commit-config.yaml"),
    ):
        result = _run(REPO, PRE_COMMIT, f"validate-{what}", path, home=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
