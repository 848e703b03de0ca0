"""A user's loop: `hogen new`, `hogen schema`, fast no-op builds, stale/missing/extra outputs,
the terminal's messages, and the test modules `hogen build --tests` writes.

Scratch projects live under tmp_path; specs are the standard library's, lowered to order 1
or 2 where a build is needed; exact references come from the repository's .hogen-cache.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from codegen import pipeline
from codegen.backends.tf.module import render_init
from codegen.cli import app as cli
from codegen.cli import outputs, terminal

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
HOGEN = shutil.which("hogen", path=str(VENV_BIN)) or str(REPO / ".venv" / "bin" / "hogen")
_REAL_BUILD, _BUILT = pipeline.build, {}


def _memo_build(spec, max_ops: int = 20_000, backend: str = "tf") -> str:
    key = (spec.path, spec.sha256, backend)
    if key not in _BUILT:
        _BUILT[key] = _REAL_BUILD(spec, max_ops, backend)
    return _BUILT[key]


def _spec_text(name: str = "log1pexp", order: int = 1) -> str:
    text = (REPO / "specs" / "log1pexp.yaml").read_text(encoding="utf-8")
    return text.replace("order: 3\n", f"order: {order}\n").replace(
        "name: log1pexp", f"name: {name}"
    )


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "log1pexp.yaml").write_text(_spec_text(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOGEN_CACHE", str(REPO / ".hogen-cache"))
    monkeypatch.setattr(pipeline, "build", _memo_build)
    return tmp_path


def hogen(*args: str):
    result = CliRunner().invoke(cli.app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def console(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HOGEN_CACHE": str(REPO / ".hogen-cache"), **env}
    return subprocess.run(
        [HOGEN, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


# --- the fast path ---------------------------------------------------------------------------

PROBE = """
import sys
from codegen.cli.entry import main
sys.argv = ['hogen', *{args!r}]
code = main()
heavy = [m for m in ('sympy', 'tensorflow', 'typer', 'rich', 'yaml', 'jinja2') if m in sys.modules]
print(code, heavy, file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args", [["build"], ["build", "--check"], ["build", "-q", "--out=generated"]]
)
def test_fresh_builds_import_nothing_heavy_and_say_what_the_cli_says(project, args):
    assert hogen("build").exit_code == 0
    probe = PROBE.format(args=args)
    fast = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert fast.stderr.splitlines()[-1] == "0 []", fast.stderr
    slow = hogen(*args)
    assert slow.exit_code == 0
    assert fast.stdout + "".join(fast.stderr.splitlines(True)[:-1]) == slow.stdout + slow.stderr


def test_the_fast_path_hands_stale_outputs_and_other_options_to_the_cli(project):
    assert console("build", cwd=project).returncode == 0
    spec = project / "specs" / "log1pexp.yaml"
    spec.write_text(_spec_text().replace("doc: Softplus", "doc: The softplus"), encoding="utf-8")
    stale = console("build", "--check", cwd=project)
    assert stale.returncode == 1 and "stale: specs/log1pexp.yaml" in stale.stderr
    assert console("build", "--bogus", cwd=project).returncode == 2
    assert "Usage" in console("build", "--help", cwd=project).stdout


@pytest.mark.parametrize("names", [[], ["a"], ["silu", "gelu", "a_b2"]])
def test_the_fast_path_renders_init_as_the_template_does(names):
    assert outputs.init_text(names) == render_init(names)


def test_headers_name_specs_from_the_project_root_whatever_the_working_folder(project):
    assert hogen("build").exit_code == 0
    assert outputs.read_header(project / "generated/log1pexp.py").spec == "specs/log1pexp.yaml"
    (project / "elsewhere").mkdir()
    paths = ["../specs", "--out", "../generated"]
    check = console("build", "--check", *paths, cwd=project / "elsewhere")
    assert check.returncode == 0 and "1 of 1 fresh, 0 to build, 0 extra" in check.stderr
    build = console("build", *paths, cwd=project / "elsewhere")
    assert build.returncode == 0 and build.stdout == "0 built, 1 unchanged, 0 removed\n"
    absolute = [str(project / "specs"), "--out", str(project / "generated")]
    assert console("build", "--check", *absolute, cwd=Path("/")).returncode == 0
    spec = project / "specs" / "log1pexp.yaml"
    spec.write_text(_spec_text().replace("doc: Softplus", "doc: The softplus"), encoding="utf-8")
    assert console("build", *paths, cwd=project / "elsewhere").returncode == 0
    assert outputs.read_header(project / "generated/log1pexp.py").spec == "specs/log1pexp.yaml"
    assert console("build", "--check", cwd=project).returncode == 0


# --- stale, missing, extra -------------------------------------------------------------------


def test_check_names_stale_missing_and_extra_outputs(project):
    (project / "specs" / "old.yaml").write_text(_spec_text("old"), encoding="utf-8")
    assert hogen("build", "--tests", "tests/generated").exit_code == 0
    (project / "specs" / "old.yaml").unlink()
    (project / "specs" / "new.yaml").write_text(_spec_text("new"), encoding="utf-8")
    (project / "tests/generated/test_hogen_log1pexp.py").unlink()
    result = hogen("build", "--check", "--tests", "tests/generated")
    assert result.exit_code == 1
    for line in (
        "missing: specs/new.yaml",
        "missing: tests/generated/test_hogen_log1pexp.py (from specs/log1pexp.yaml)",
        "extra: generated/old.py",
        "extra: tests/generated/test_hogen_old.py",
        "stale: generated/__init__.py",
    ):
        assert line in result.stderr
    assert hogen("build", "--tests", "tests/generated").exit_code == 0
    assert sorted(p.name for p in (project / "tests/generated").iterdir()) == [
        "test_hogen_log1pexp.py",
        "test_hogen_new.py",
    ]
    assert hogen("build", "--check", "--tests", "tests/generated").exit_code == 0


def test_a_renamed_op_takes_its_test_module_along(project):
    assert hogen("build", "--tests", "t").exit_code == 0
    spec = project / "specs" / "log1pexp.yaml"
    spec.write_text(_spec_text("softplus_again"), encoding="utf-8")
    assert hogen("build", "--tests", "t").exit_code == 0
    assert [p.name for p in (project / "t").iterdir()] == ["test_hogen_softplus_again.py"]
    assert not (project / "generated/log1pexp.py").exists()


def test_build_refuses_to_overwrite_what_it_did_not_write(project):
    (project / "generated").mkdir()
    handwritten = project / "generated/log1pexp.py"
    handwritten.write_text("VALUE = 1\n", encoding="utf-8")
    result = hogen("build")
    assert result.exit_code == 2
    assert "generated/log1pexp.py was not written by hogen" in result.stderr
    assert handwritten.read_text() == "VALUE = 1\n"


def test_a_spec_outside_the_run_keeps_its_op(project):
    assert hogen("build").exit_code == 0
    (project / "more").mkdir()
    (project / "more" / "twin.yaml").write_text(_spec_text().replace("Softplus", "Twin"))
    result = hogen("build", "more")
    assert result.exit_code == 2
    assert "is the op 'log1pexp' built from specs/log1pexp.yaml" in result.stderr


def test_exit_non_zero_on_change_and_tests_folder_rules(project):
    assert hogen("build", "--exit-non-zero-on-change").exit_code == 1
    assert hogen("build", "--exit-non-zero-on-change").exit_code == 0
    (project / "generated" / "__init__.py").write_text("# edited\n")
    assert hogen("build", "--exit-non-zero-on-change").exit_code == 1
    assert hogen("build", "--tests", "generated").exit_code == 2
    assert hogen("build", "--tests", "./generated/").exit_code == 2


# --- the terminal ----------------------------------------------------------------------------


def test_quiet_and_verbose(project):
    quiet = hogen("build", "-q")
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
    verbose = hogen("build", "--force", "-v")
    assert "built specs/log1pexp.yaml -> log1pexp.py" in verbose.stderr
    assert "fresh: specs/log1pexp.yaml" in hogen("build", "--check", "-v").stderr


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("order: 1", "oder: 1", "unknown key 'oder'; did you mean 'order'?"),
        ("exp(x)", "sigmod(x)", "expr: unknown function 'sigmod'; did you mean 'sigmoid'?"),
    ],
)
def test_errors_point_at_the_line_with_a_suggestion(project, old, new, message):
    text = _spec_text().replace(old, new)
    (project / "specs" / "log1pexp.yaml").write_text(text, encoding="utf-8")
    line = next(line for line in text.splitlines() if new in line)
    number, col = text.splitlines().index(line) + 1, line.index(new) + 1
    result = console("build", cwd=project)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: specs/log1pexp.yaml:{number}:{col}: {message}"
    assert lines[1:3] == [f"  {line}", "  " + " " * (col - 1) + "^"]
    assert not (project / "generated").exists()


def test_diffs_are_colored_on_a_terminal(monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr(
        terminal, "out", Console(file=screen, force_terminal=True, color_system="standard")
    )
    terminal.Terminal().diff("--- a\n+++ a\n@@ -1 +1 @@\n-old\n+new\n same\n")
    shown = screen.getvalue()
    assert "\x1b[32m+new" in shown and "\x1b[31m-old" in shown and "\x1b[36m@@" in shown
    assert "same" in shown


# --- new and schema --------------------------------------------------------------------------


def test_new_writes_a_spec_that_builds_as_is(project):
    result = hogen("new", "softish", "--expr", "log(1 + exp(x))")
    assert result.exit_code == 0, result.output
    text = (project / "specs" / "softish.yaml").read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=../docs/spec.schema.json\n")
    assert json.loads((project / "docs" / "spec.schema.json").read_text()) == json.loads(
        hogen("schema").stdout
    )
    jsonschema.validate(yaml.safe_load(text), json.loads(hogen("schema").stdout))
    built = console("build", "specs/softish.yaml", cwd=project)  # the real pipeline, order 2
    assert built.returncode == 0, built.stderr
    assert "def softish(x):" in (project / "generated" / "softish.py").read_text()
    again = hogen("new", "softish", "--expr", "x")
    assert again.exit_code == 2 and "exists; not overwritten" in again.stderr
    assert (project / "specs" / "softish.yaml").read_text(encoding="utf-8") == text


def test_new_refuses_what_would_not_build(project):
    bad = hogen("new", "two", "--expr", "sigmod(x) * y", "--args", "x")
    assert bad.exit_code == 2
    assert "unknown function 'sigmod'; did you mean 'sigmoid'?" in bad.stderr
    assert hogen("new", "two", "--expr", "x * y", "--order", "5").exit_code == 2
    assert hogen("new", "class", "--expr", "x").exit_code == 2
    assert not (project / "specs" / "two.yaml").exists()
    ok = hogen("new", "two", "--expr", "x*y", "--args", "x, y", "--order", "3")
    assert ok.exit_code == 0, ok.output
    assert "args: [x, y]\n" in (project / "specs" / "two.yaml").read_text()


def test_schema_is_committed_and_validates_every_spec():
    schema = json.loads(hogen("schema").stdout)
    assert (REPO / "docs" / "spec.schema.json").read_text(encoding="utf-8") == hogen(
        "schema"
    ).stdout
    jsonschema.Draft202012Validator.check_schema(schema)
    specs = sorted((REPO / "specs").glob("*.yaml"))
    assert len(specs) >= 13
    for path in specs:
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# yaml-language-server: $schema=../docs/spec.schema.json\n"), path
        jsonschema.validate(yaml.safe_load(text), schema)
    for wrong in ({"oder": 2}, {"order": 7}, {"args": ["x", "x"]}, {"name": "1x"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**yaml.safe_load(specs[0].read_text()), **wrong}, schema)


# --- tests for the user's repository ---------------------------------------------------------


def test_the_committed_test_modules_are_fresh():
    """tests/generated/ holds `hogen build --tests tests/generated` for the standard library."""
    result = console("build", "--check", "--tests", "tests/generated", cwd=REPO)
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in (REPO / "tests" / "generated").glob("test_hogen_*.py"))
    assert names == [f"test_hogen_{p.stem}.py" for p in sorted((REPO / "specs").glob("*.yaml"))]


def test_generated_tests_fail_on_a_broken_op(tmp_path):
    """The second derivative replaced by the widely copied wrong answer 1 - e^x."""
    for folder, name in (("specs", "log1pexp.yaml"), ("generated", "log1pexp.py")):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / folder / name, tmp_path / folder / name)
    assert console("build", "--tests", "tests", cwd=tmp_path).returncode == 0
    module = tmp_path / "generated" / "log1pexp.py"
    source = module.read_text(encoding="utf-8")
    assert source.count("    d_xx = tf.math.multiply(v0, v2)\n") == 1
    module.write_text(
        source.replace("    d_xx = tf.math.multiply(v0, v2)\n", "    d_xx = 1.0 - tf.math.exp(x)\n")
    )
    assert console("build", "--check", "--tests", "tests", cwd=tmp_path).returncode == 0
    environment = {**os.environ, "HOGEN_CACHE": str(REPO / ".hogen-cache")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "tests"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    failed = sorted(
        line.split("::")[1].split(" ")[0]
        for line in result.stdout.splitlines()
        if line.startswith("FAILED")
    )
    assert failed == [
        "test_keeps_its_promise_against_the_exact_reference[f_xx-float32]",
        "test_keeps_its_promise_against_the_exact_reference[f_xx-float64]",
        "test_matches_autodiff_of_the_naive_expr_at_moderate_inputs[f_xx]",
    ]
    assert "9 passed" in result.stdout
