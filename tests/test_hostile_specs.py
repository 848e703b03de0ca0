"""Hostile and broken specs: each raises SpecError, one line with file:line:col, and runs nothing.

The corpus lives in tests/hostile/: each file's first line is `# expect: TEXT`, and TEXT
must appear in `str(err)` after the path (so `4:8: order: ...` pins the position too).
Cases too big or too binary for a file are generated here.
"""

from __future__ import annotations

import pathlib
import re
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.front.spec import KNOWN_KEYS, Spec, SpecError, load_spec, parse_spec_text

CORPUS = sorted((pathlib.Path(__file__).parent / "hostile").glob("*.yaml"))
HEAD = "name: f\nargs: [x]\n"


def expectation(path: pathlib.Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].decode("ascii")
    assert first.startswith("# expect: "), f"{path.name} lacks its '# expect:' line"
    return first.removeprefix("# expect: ")


def check_error(err: SpecError, path: str) -> str:
    """The message after `path:line:col: `, once the shape of the error is checked."""
    text = str(err)
    assert "\n" not in text and "\r" not in text
    assert "Traceback" not in text
    match = re.match(re.escape(path) + r":(\d+):(\d+): (.+)$", text)
    assert match, text
    assert (int(match[1]), int(match[2])) == (err.line, err.col)
    assert err.line >= 1 and err.col >= 1 and err.path == path
    return text.removeprefix(f"{path}:")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Run every case in an empty folder and make sure no CANARY appears there."""
    monkeypatch.chdir(tmp_path)
    yield
    assert not (tmp_path / "CANARY").exists()


# A guard against runaway parsing (super-linear in the input), not a speed test: CPU time of
# this thread, so other threads and processes do not count. The slowest case, yaml_deep_wide
# (15,000 items), takes 0.45 s on a 2-core AMD EPYC and took 2.3 s on a CI runner; a parser
# quadratic in those items would take minutes.
RUNAWAY_CPU_SECONDS = 10


def test_corpus_is_there():
    assert len(CORPUS) > 100


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_hostile_file(path):
    start = time.thread_time()
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert time.thread_time() - start < RUNAWAY_CPU_SECONDS
    message = check_error(info.value, str(path))
    assert expectation(path) in message
    assert info.value.source_line is None or "\n" not in info.value.source_line


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_hostile_text_matches_file(path):
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8: only load_spec sees it")
    with pytest.raises(SpecError) as info:
        parse_spec_text(text, "specs/hostile.yaml")
    assert expectation(path) in check_error(info.value, "specs/hostile.yaml")


GENERATED = {
    "empty": ("", "1:1: expected a mapping"),
    "blank": ("   \n\n", "1:1: expected a mapping"),
    "parens_5000": (HEAD + "expr: " + "(" * 5000 + "x" + ")" * 5000 + "\n", "3:7: expr:"),
    "parens_1000": (
        HEAD + "expr: " + "(" * 1000 + "x" + ")" * 1000 + "\n",
        "expr: invalid syntax: too many nested parentheses",
    ),
    "calls_150": (
        HEAD + "expr: " + "exp(" * 150 + "x" + ")" * 150 + "\n",
        "3:411: expr: expression nested too deeply (more than 100 levels)",
    ),
    "power_chain": (
        HEAD + "expr: " + "**".join(["x"] * 2000) + "\n",
        "3:307: expr: expression nested too deeply (more than 100 levels)",
    ),
    "minus_9000": (HEAD + "expr: " + "-" * 9000 + "x\n", "3:7: expr: expression nested too deeply"),
    "sum_3000": (HEAD + "expr: " + "x+" * 3000 + "x\n", "3:7: expr: expression nested too deeply"),
    "expr_1mb": (
        HEAD + "expr: " + "x+" * 500_000 + "x\n",
        "1:1: expected a spec of at most 65536 bytes",
    ),
    "expr_10001": (
        HEAD + "expr: " + "x+" * 5000 + "x\n",
        "3:7: expr: expected 1..10000 characters, got 10001",
    ),
    "file_2mb": (HEAD + "expr: x\n" + "# padding\n" * 200_000, "1:1: expected a spec of at most"),
    "yaml_deep": (
        HEAD + "expr: x\ndoc: " + "[" * 1000 + "]" * 1000 + "\n",
        "4:26: invalid YAML: expected at most 20 nested brackets",
    ),
    "yaml_deep_wide": (
        HEAD + "expr: x\ndoc: " + "[" * 20 + "a, " * 15_000 + "]" * 20 + "\n",
        "4:6: doc: expected a string",
    ),
    "yaml_deep_blocks": (
        HEAD + "expr: x\ndoc:\n" + "".join(" " * i + "- \n" for i in range(300)),
        "5:1: doc: expected a string of 1..2000 characters, got a list of 1",
    ),
    "surrogate": (HEAD + "expr: x\ndoc: a\udc80b\n", "4:7: invalid YAML: unacceptable character"),
    "bom": ("\ufeffname: f\nargs: [x]\nexpr: x\norder: 9\n", "4:8: order: expected an integer"),
    "crlf": (HEAD.replace("\n", "\r\n") + "order: 9\r\nexpr: x\r\n", "3:8: order: expected"),
    "int_5000_digits": (HEAD + "expr: x + " + "9" * 5000 + "\n", "3:7: expr: invalid syntax"),
    "float_5000_digits": (
        HEAD + "expr: x + 0." + "1" * 5000 + "\n",
        "3:11: expr: expected a float within the float64 range",
    ),
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_hostile_text(name):
    text, expected = GENERATED[name]
    start = time.thread_time()
    with pytest.raises(SpecError) as info:
        parse_spec_text(text, "gen.yaml")
    assert time.thread_time() - start < RUNAWAY_CPU_SECONDS
    assert expected in check_error(info.value, "gen.yaml")


def test_utf16_file(tmp_path):
    path = tmp_path / "utf16.yaml"
    path.write_bytes((HEAD + "expr: x\n").encode("utf-16"))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "1:1: expected UTF-8 text, got the byte 0xff" in check_error(info.value, str(path))


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "1:1: expected a readable file" in check_error(info.value, str(path))


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path)
    assert "1:1: expected a readable file" in check_error(info.value, str(tmp_path))


def test_source_line_points_at_the_problem():
    with pytest.raises(SpecError) as info:
        parse_spec_text(HEAD + "expr: x + sigmod(x)\n", "s.yaml")
    err = info.value
    assert err.source_line == "expr: x + sigmod(x)"
    assert err.source_line[err.col - 1 :].startswith("sigmod")


# --- property tests -----------------------------------------------------------------------


def parse_or_error(text: str) -> None:
    try:
        result = parse_spec_text(text, "fuzz.yaml")
    except SpecError as err:
        check_error(err, "fuzz.yaml")
    else:
        assert isinstance(result, Spec)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_random_text(text):
    parse_or_error(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="xab()+-*/.e0123456789_ ,:=[]{}'\"sinexplogqrt\\jJ!@%<>", max_size=60))
def test_random_expressions(expr):
    parse_or_error(
        yaml.safe_dump({"name": "f", "args": ["x", "a"], "params": {"b": 2.0}, "expr": expr})
    )


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(
        [
            "x",
            "y",
            "a",
            "b",
            "inf",
            "-inf",
            "exp(x)",
            "log(1 + exp(x))",
            "x**2",
            "f",
            "class",
            "1e-3",
            ".inf",
        ]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.text(max_size=8), SCALARS), inner, max_size=3),
    ),
    max_leaves=6,
)
SPECS = st.dictionaries(
    st.one_of(st.sampled_from(KNOWN_KEYS), st.text(max_size=8)), VALUES, max_size=7
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SPECS)
def test_random_mappings(mapping):
    parse_or_error(yaml.safe_dump(mapping, allow_unicode=True))


@settings(max_examples=200, deadline=None)
@given(
    args=st.lists(st.sampled_from(["x", "a", "b", "z", "x0", "f", "pi", "t"]), max_size=5),
    order=st.one_of(st.integers(-2, 6), st.booleans(), st.text(max_size=3)),
    lo=st.floats(),
    hi=st.floats(),
    expr=st.sampled_from(["x", "a*b", "exp(z) + pi", "sigmoid(x)/a", "x**x", "1/0", "E**a"]),
)
def test_random_near_valid_specs(args, order, lo, hi, expr):
    spec = {
        "name": "f",
        "args": args,
        "expr": expr,
        "order": order,
        "domain": {arg: [lo, hi] for arg in args[:1]},
    }
    parse_or_error(yaml.safe_dump(spec))


def test_big_binary_file_is_too_big_not_undecodable(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"\xff" * (2**16 + 10))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "1:1: expected a spec of at most 65536 bytes" in check_error(info.value, str(path))
