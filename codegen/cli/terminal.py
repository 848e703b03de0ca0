"""What the CLI shows on the terminal, at the level `--quiet` or `--verbose` asks for.

In: messages, spec errors, diff text, a count of specs to build. Out: text on
stdout (results, diffs) and stderr (errors, findings, progress) through rich
consoles. Colors and the progress bar appear only where the stream is a
terminal (rich decides, honouring NO_COLOR and FORCE_COLOR); redirected
output is plain text, never wrapped, so scripts and tests can read it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

_DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))
_KIND_STYLES = {"stale": "yellow", "missing": "yellow", "extra": "magenta", "removed": "magenta"}


class Terminal:
    """The CLI's voice: `quiet` keeps only errors and findings; `verbose` adds each step."""

    def __init__(self, quiet: bool = False, verbose: bool = False):
        self.quiet, self.verbose = quiet, verbose and not quiet

    def error(self, message: str, source_line: str | None = None, col: int = 0) -> None:
        """`error: file:line:col: message`, then the offending line and a caret under `col`."""
        err.print(Text.assemble(("error", "bold red"), ": ", message))
        if source_line:
            err.print(Text("  " + source_line[:200]))
            err.print(Text("  " + " " * max(col - 1, 0) + "^", style="bold red"))

    def spec_error(self, error) -> None:
        """A `SpecError` (str is `file:line:col: message`), with its line and caret."""
        self.error(str(error), getattr(error, "source_line", None), getattr(error, "col", 0))

    def finding(self, kind: str, what: str) -> None:
        """One `stale:`/`missing:`/`extra:` line on stderr, unless quiet."""
        if not self.quiet:
            err.print(Text.assemble((kind, _KIND_STYLES.get(kind, "")), ": ", what))

    def step(self, text: str) -> None:
        """A line shown only with --verbose."""
        if self.verbose:
            err.print(Text(text, style="dim"))

    def result(self, text: str, stderr: bool = False) -> None:
        """A summary line, unless quiet."""
        if not self.quiet:
            (err if stderr else out).print(Text(text))

    def write(self, text: str) -> None:
        """Plain text on stdout byte for byte (no markup, wrapping or tabs expanded), even quiet."""
        out.file.write(text)
        out.file.flush()

    def diff(self, text: str) -> None:
        """A unified diff on stdout, colored by line kind where stdout is a terminal."""
        for line in text.splitlines():
            style = next((s for prefix, s in _DIFF_STYLES if line.startswith(prefix)), "")
            out.print(Text(line, style=style))

    @contextlib.contextmanager
    def progress(self, total: int, what: str) -> Iterator[Callable[[str], None]]:
        """A progress bar over `total` items on a terminal; yields `advance(label)`."""
        show = total > 1 and not self.quiet and err.is_terminal

        if not show:
            yield lambda label: self.step(f"built {label}")
            return
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, TimeElapsedColumn(), console=err, transient=True) as bar:
            task = bar.add_task(what, total=total)

            def advance(label: str) -> None:
                self.step(f"built {label}")
                bar.update(task, advance=1, description=f"{what} {label}")

            yield advance
