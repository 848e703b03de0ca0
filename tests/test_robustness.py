"""`hogen build` under hostile conditions, through the console script, in scratch projects.

- Atomic writes: a build killed with SIGKILL, at random moments and (deterministically)
  between writing a temp file and renaming it, leaves every output old or new, never torn;
  the temp files it leaves are never imported, and a later build ignores them.
- Two builds at once into one folder both succeed and leave exactly the uninterrupted output.
- Output paths never leave --out: names that try to escape are refused with exit 2 and write
  nothing; a symlink in --out is replaced, not written through; a spec's *file name* cannot
  inject code into the module.
- Resource limits: an exp tower at order 4 stops at --max-ops with an error naming the order
  and the size; without it, the build must still end within a bounded time.
"""

from __future__ import annotations

import ast
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
HOGEN = shutil.which("hogen", path=str(VENV_BIN)) or str(REPO / ".venv" / "bin" / "hogen")
CACHE = REPO / ".hogen-cache"  # exact references of the repository's specs: fast builds
SPECS = ("gelu", "log_cosh", "logit", "xlogx")  # order 2 each
GONE = "retired"  # in the old build only: the new build removes its module
OUT = "generated"

# Runs codegen.cli.entry.main() (what the console script runs) with os.fsync instrumented: at the
# n-th fsync of a temp file ($HOGEN_TEST_PAUSE_AT) it creates $HOGEN_TEST_MARKER and sleeps,
# so a test can SIGKILL the build after that temp file is complete but before its rename.
PAUSING_BUILD = """
import os, sys, time
real_fsync, calls = os.fsync, []
def fsync_then_pause(fd):
    real_fsync(fd)
    calls.append(fd)
    if len(calls) == int(os.environ["HOGEN_TEST_PAUSE_AT"]):
        open(os.environ["HOGEN_TEST_MARKER"], "w").close()
        time.sleep(300)
os.fsync = fsync_then_pause
from codegen.cli.entry import main
sys.argv = ["hogen", *sys.argv[1:]]
sys.exit(main())
"""


def start_paused_build(project: Path, pause_at: int, marker: Path) -> subprocess.Popen:
    """`hogen build --force` stopped at its `pause_at`-th fsync (see PAUSING_BUILD)."""
    marker.unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", PAUSING_BUILD, "build", "--force"],
        cwd=project,
        env=_env(HOGEN_TEST_MARKER=str(marker), HOGEN_TEST_PAUSE_AT=str(pause_at)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait(timeout=60)
            raise AssertionError(f"the build never reached its fsync number {pause_at}")
        time.sleep(0.02)
    return process


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "HOGEN_CACHE": str(CACHE), "PYTHONHASHSEED": "0", **extra}


def hogen(*args: str, cwd: Path, timeout: float = 180, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [HOGEN, *args], cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=timeout
    )


def spec_text(name: str, old: bool) -> str:
    text = (REPO / "specs" / f"{name}.yaml").read_text(encoding="utf-8")
    assert "\norder: 2\n" in text, name
    return text.replace("\ndoc: ", "\ndoc: (old) ", 1) if old else text


def write_specs(project: Path, old: bool) -> None:
    specs = project / "specs"
    shutil.rmtree(specs, ignore_errors=True)
    specs.mkdir(parents=True)
    for name in SPECS:
        (specs / f"{name}.yaml").write_text(spec_text(name, old), encoding="utf-8")
    if old:
        gone = spec_text("logit", old=True).replace("name: logit", f"name: {GONE}")
        (specs / f"{GONE}.yaml").write_text(gone, encoding="utf-8")


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def outputs(folder: Path) -> dict[str, bytes]:
    return {name: data for name, data in files(folder).items() if name.endswith(".py")}


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict:
    """A project whose out folder holds the old build, and the bytes of the old and new builds.

    Old: the specs with '(old)' in each doc, and one more spec (`retired`) that the new
    build no longer has. New: the specs as in the repository, built uninterrupted.
    """
    project = tmp_path_factory.mktemp("project")
    write_specs(project, old=True)
    result = hogen("build", cwd=project)
    assert result.returncode == 0, result.stderr
    old = outputs(project / OUT)
    write_specs(project, old=False)
    result = hogen("build", "--force", "--out", "new", cwd=project)
    assert result.returncode == 0, result.stderr
    new = outputs(project / "new")
    shutil.rmtree(project / "new")
    assert set(old) == {"__init__.py", f"{GONE}.py", *(f"{n}.py" for n in SPECS)}
    assert set(new) == set(old) - {f"{GONE}.py"}
    assert all(old[name] != new[name] for name in new), "old and new must differ everywhere"
    return {"project": project, "old": old, "new": new}


def reset_to_old(project: Path, old: dict[str, bytes]) -> None:
    out = project / OUT
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for name, data in old.items():
        (out / name).write_bytes(data)


def imported_names(init: bytes) -> set[str]:
    tree = ast.parse(init)
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


def check_old_or_new(out: Path, old: dict[str, bytes], new: dict[str, bytes]) -> dict[str, str]:
    """Each output is byte-for-byte old or new (the retired module: old or gone); the package
    imports only modules that exist. Returns {name: 'old' | 'new' | 'gone'}."""
    state = {}
    present = outputs(out)
    assert set(present) <= set(old), sorted(present)
    for name, data in old.items():
        if name not in present:
            assert name == f"{GONE}.py", f"{name} vanished"
            state[name] = "gone"
        elif data == present[name]:
            state[name] = "old"
        else:
            assert present[name] == new.get(name), f"{name} is torn: neither old nor new"
            state[name] = "new"
    for module in imported_names(present["__init__.py"]):
        assert f"{module}.py" in present, f"__init__.py imports {module}, which is gone"
        assert not module.endswith(".tmp") and not module.startswith(".")
    return state


# --- atomic writes under SIGKILL ---------------------------------------------------------------


def test_killed_at_random_moments_every_output_is_old_or_new(builds):
    project, old, new = builds["project"], builds["old"], builds["new"]
    reset_to_old(project, old)
    start = time.perf_counter()
    assert hogen("build", "--force", cwd=project).returncode == 0
    full = time.perf_counter() - start
    assert outputs(project / OUT) == new
    rng = random.Random(6)
    delays = [0.2, 0.5, 1.0, 2.0] + [rng.uniform(0.7, 1.02) * full for _ in range(4)]
    seen = set()
    for delay in delays:
        reset_to_old(project, old)
        process = subprocess.Popen(
            [HOGEN, "build", "--force"],
            cwd=project,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        kill(process)
        state = check_old_or_new(project / OUT, old, new)
        seen.add(tuple(sorted(state.values())))
    assert seen  # which mixes were seen depends on the machine's speed; each was whole


@pytest.mark.parametrize("kill_after", [1, 3, 5])  # 5 temp files: 4 modules, __init__.py
def test_killed_between_temp_file_and_rename(builds, kill_after):
    """SIGKILL after the n-th temp file is written and synced, before its rename."""
    project, old, new = builds["project"], builds["old"], builds["new"]
    reset_to_old(project, old)
    kill(start_paused_build(project, kill_after, project / "paused"))
    out = project / OUT
    state = check_old_or_new(out, old, new)
    assert list(state.values()).count("new") == kill_after - 1, state
    stray = leftovers(out)
    assert len(stray) == 1 and stray[0].startswith("."), stray  # the one being renamed
    # A later build ignores the leftover: not an output, not extra, not imported.
    result = hogen("build", cwd=project)
    assert result.returncode == 0, result.stderr
    assert outputs(out) == new
    assert not any("tmp" in module for module in imported_names(new["__init__.py"]))
    check = hogen("build", "--check", cwd=project)
    assert check.returncode == 0, check.stderr
    assert set(leftovers(out)) <= set(stray), "a later build added temp files"


def test_temp_files_of_killed_builds_stay_harmless(builds):
    """Each kill mid-write leaves one `.<name>.*.tmp`; later builds remove or ignore them."""
    project, old, new = builds["project"], builds["old"], builds["new"]
    reset_to_old(project, old)
    out = project / OUT
    for _ in range(3):
        kill(start_paused_build(project, 1, project / "paused"))
    assert len(leftovers(out)) == 3
    assert hogen("build", "--force", cwd=project).returncode == 0
    assert outputs(out) == new
    assert len(leftovers(out)) in (0, 3)  # today 3: nothing removes them, they accumulate
    assert hogen("build", "--check", cwd=project).returncode == 0


# --- concurrent builds ---------------------------------------------------------------------------


def test_two_builds_at_once_both_succeed_with_the_uninterrupted_bytes(builds):
    project, old, new = builds["project"], builds["old"], builds["new"]
    reset_to_old(project, old)  # both also remove the retired module and rewrite __init__.py
    processes = [
        subprocess.Popen(
            [HOGEN, "build", "--force"],
            cwd=project,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=180), p.communicate()[1]) for p in processes]
    for code, stderr in results:
        assert code == 0, stderr
    assert outputs(project / OUT) == new
    assert leftovers(project / OUT) == []


# --- output paths ---------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / "specs").mkdir(parents=True)
    return root


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


ESCAPES = ["../escaped", "../../escaped", "{tmp}/escaped", "sub/escaped", "..", ".", "a\\b"]


@pytest.mark.parametrize("name", ESCAPES)
def test_a_name_that_leaves_out_is_refused_and_writes_nothing(project, tmp_path, name):
    name = name.replace("{tmp}", str(tmp_path))  # an absolute path
    text = spec_text("logit", old=False).replace("name: logit", f"name: {name!r}".replace("'", '"'))
    (project / "specs" / "evil.yaml").write_text(text, encoding="utf-8")
    before = tree(tmp_path)
    result = hogen("build", cwd=project, HOGEN_CACHE=str(tmp_path / "cache"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "name" in result.stderr and "Traceback" not in result.stderr
    assert tree(tmp_path) == before
    assert not (project / OUT).exists()


@pytest.mark.parametrize("victim_kind", ["hogen-header", "foreign"])
def test_a_symlink_in_out_is_never_written_through(builds, project, tmp_path, victim_kind):
    """out/logit.py and out/__init__.py are symlinks to files outside --out.

    A target carrying hogen's header (a copy of an old module) is ours to replace: the build
    must replace the link, not the target. A foreign target may be refused (exit 2) or the
    link replaced; either way the file outside stays as it was.
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    victim, victim_init = outside / "victim.py", outside / "victim_init.py"
    foreign = victim_kind == "foreign"
    victim.write_bytes(b"VICTIM = 1\n" if foreign else builds["old"]["logit.py"])
    victim_init.write_bytes(b"VICTIM_INIT = 1\n" if foreign else builds["old"]["__init__.py"])
    before = tree(outside)
    (project / "specs" / "logit.yaml").write_text(spec_text("logit", old=False))
    out = project / OUT
    out.mkdir()
    (out / "logit.py").symlink_to(victim)
    (out / "__init__.py").symlink_to(victim_init)
    result = hogen("build", "--force", cwd=project)
    assert tree(outside) == before, "a file outside --out was written through a symlink"
    assert result.returncode in ((0, 2) if foreign else (0,)), result.stderr
    if result.returncode == 0:
        assert not (out / "logit.py").is_symlink() and (out / "logit.py").is_file()
        assert (out / "logit.py").read_bytes() == builds["new"]["logit.py"]
        assert not (out / "__init__.py").is_symlink()


def code_tokens(source: str) -> list[str]:
    """The text of every token that Python executes: no comments, no blank lines."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING}
    return [
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type not in skip
    ]


@pytest.mark.parametrize("newline", ["\n", "\r"], ids=["LF", "CR"])
def test_a_spec_file_name_cannot_inject_code(project, newline):
    payload = "open('CANARY', 'w').write('pwned')"
    name = f"a{newline}{payload}{newline}#.yaml"
    text = spec_text("logit", old=False).replace("order: 2", "order: 1")
    (project / "specs" / name).write_text(text, encoding="utf-8")
    result = hogen("build", cwd=project)
    assert result.returncode in (0, 2), result.stderr
    if result.returncode == 0:
        source = (project / OUT / "logit.py").read_text(encoding="utf-8")
        assert not any("CANARY" in token for token in code_tokens(source)), source[:400]
        assert source.splitlines()[2].startswith("# spec-sha256: ")
    assert not (project / "CANARY").exists()


def test_a_build_writes_only_its_outputs(project, tmp_path):
    """Nothing lands in the working folder but what was asked for: the exact references go to
    the user's cache folder ($XDG_CACHE_HOME/hogen here) when $HOGEN_CACHE is unset."""
    text = spec_text("logit", old=False).replace("order: 2\n", "order: 1\n")
    (project / "specs" / "logit.yaml").write_text(text)
    before = set(tree(project))
    env = {k: v for k, v in _env().items() if k != "HOGEN_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    result = subprocess.run(
        [HOGEN, "build"], cwd=project, env=env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr
    created = set(tree(project)) - before
    assert created == {f"{OUT}/logit.py", f"{OUT}/__init__.py"}
    cached = list((tmp_path / "xdg-cache" / "hogen").rglob("*.npy"))
    assert cached, "the exact references are cached in the user's cache folder"


def test_a_later_build_removes_the_temp_files_a_killed_build_left(project):
    out = project / OUT
    out.mkdir(exist_ok=True)
    stale, fresh, foreign = (
        out / ".logit.py.ab12cd_9.tmp",
        out / ".logit.py.zz99yy_0.tmp",
        out / ".notes.tmp",
    )
    for path in (stale, fresh, foreign):
        path.write_text("partial write")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    os.utime(foreign, (old, old))
    (project / "specs" / "logit.yaml").write_text(spec_text("logit", old=False))
    result = hogen("build", cwd=project)
    assert result.returncode == 0, result.stderr
    assert not stale.exists(), "a temp file of a killed build is removed"
    assert fresh.exists(), "a recent one may belong to a build running beside this one"
    assert foreign.exists(), "files hogen did not name are never touched"


# --- resource limits ------------------------------------------------------------------------------

TOWER = "name: tower\nargs: [x]\nexpr: exp(exp(exp(exp(x))))\norder: 4\n"


def test_an_exp_tower_at_order_4_stops_at_max_ops_naming_order_and_size(project, tmp_path):
    (project / "specs" / "tower.yaml").write_text(TOWER)
    start = time.perf_counter()
    result = hogen("build", "--max-ops", "200", cwd=project, HOGEN_CACHE=str(tmp_path / "c"))
    elapsed = time.perf_counter() - start
    assert result.returncode == 2, result.stdout + result.stderr
    message = " ".join(result.stderr.split())
    assert "specs/tower.yaml" in message and "order-" in message, message
    sizes = [int(word) for word in message.replace(",", " ").split() if word.isdigit()]
    assert any(size > 200 for size in sizes) and "200" in message, message
    assert elapsed < 20, f"took {elapsed:.1f} s"
    assert not (project / OUT).exists()


def test_an_exp_tower_without_max_ops_ends_in_bounded_time(project, tmp_path):
    (project / "specs" / "tower.yaml").write_text(TOWER)
    start = time.perf_counter()
    result = hogen("build", cwd=project, timeout=120, HOGEN_CACHE=str(tmp_path / "c"))
    elapsed = time.perf_counter() - start
    assert result.returncode in (0, 2), result.stderr
    if result.returncode == 2:
        assert "order-" in result.stderr, result.stderr
    assert elapsed < 120
