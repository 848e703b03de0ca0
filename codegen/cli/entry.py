"""The `hogen` console script: answers fresh builds at once, hands everything else to the CLI.

In: argv. Out: an exit code. `hogen build` and `hogen build --check` on outputs
that are all fresh are decided here from header hashes alone (`outputs.plan`),
importing neither typer and rich nor SymPy, PyYAML, Jinja2 or TensorFlow, so
a pre-commit hook on an unchanged repository costs about as much as starting
Python. Any other command, option or state (something stale, missing or extra,
a usage error, `--help`) is handed to `codegen.cli.app.main`, which parses argv
afresh and prints exactly what it always does.
"""

from __future__ import annotations

import sys
from pathlib import Path

from codegen.backends import BACKENDS, DEFAULT_OUT
from codegen.cli import outputs

_FLAGS = {"--check", "--quiet", "-q", "--exit-non-zero-on-change"}
_VALUED = {"--out", "--tests", "--backend"}


def _parse(argv: list[str]) -> dict | None:
    """The options of a plain `build` command line, or None if the fast path does not apply."""
    if not argv or argv[0] != "build":
        return None
    options: dict = {"paths": [], "flags": set(), "--out": None, "--tests": None, "--backend": "tf"}
    rest = iter(argv[1:])
    for word in rest:
        name, equals, value = word.partition("=")
        if word in _FLAGS:
            options["flags"].add(word)
        elif name in _VALUED:
            value = value if equals else next(rest, None)
            if not value or value.startswith("-"):
                return None
            options[name] = value
        elif word.startswith("-") or not word:
            return None  # --diff, --force, --verbose, --help, -j ...: the full CLI decides
        else:
            options["paths"].append(Path(word))
    return options


def fast_build(argv: list[str]) -> int | None:
    """The exit code of a build whose outputs are all fresh, or None to run the full CLI."""
    options = _parse(argv)
    if options is None:
        return None
    specs = outputs.find_specs(options["paths"] or [Path("specs")])
    if not all(path.is_file() for path in specs):
        return None
    backend = options["--backend"]
    if backend not in BACKENDS:
        return None  # the CLI refuses this with a usage error
    out = Path(options["--out"] or DEFAULT_OUT[backend])
    tests = Path(options["--tests"]) if options["--tests"] else None
    if tests is not None and outputs.relative(tests, out) == ".":
        return None  # the CLI refuses this with a usage error
    try:
        plan = outputs.plan(specs, out, tests, backend)
    except OSError:
        return None
    if not plan.clean:
        return None
    quiet = bool(options["flags"] & {"--quiet", "-q"})
    if not quiet and "--check" in options["flags"]:
        print(outputs.check_summary(plan), file=sys.stderr)
    elif not quiet:
        print(outputs.build_summary(0, len(specs), 0))
    return 0


def main() -> int:
    """Console entry point."""
    code = fast_build(sys.argv[1:])
    if code is not None:
        return code
    from codegen.cli.app import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
