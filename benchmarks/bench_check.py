"""`hogen build --check` on 20 fresh specs, timed beside `python -c pass`.

In: the standard library in specs/ (copied under 20 distinct names into a temp
folder and built once, in parallel). Out: the median wall time of each command
over --runs interleaved runs, and their ratio, on stdout; exit 1 if the ratio
is above --limit (the design's goal: a fresh check costs at most 4x starting
Python). Both commands run with the same interpreter, as subprocesses.

    .venv/bin/python benchmarks/bench_check.py [--count 20] [--runs 15] [--limit 4]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOGEN = shutil.which("hogen", path=str(Path(sys.executable).parent)) or "hogen"


def make_project(folder: Path, count: int) -> None:
    """`count` copies of the standard library's specs under distinct names, built once."""
    sources = sorted((REPO / "specs").glob("*.yaml"))
    (folder / "specs").mkdir()
    for i in range(count):
        source = sources[i % len(sources)]
        name = f"{source.stem}_{i:02d}"
        text = re.sub(r"(?m)^name: .*$", f"name: {name}", source.read_text(encoding="utf-8"))
        (folder / "specs" / f"{name}.yaml").write_text(text, encoding="utf-8")
    jobs = str(os.cpu_count() or 1)
    subprocess.run([HOGEN, "build", "-q", "-j", jobs], cwd=folder, check=True, env=_env())


def _env() -> dict[str, str]:
    return {**os.environ, "HOGEN_CACHE": os.environ.get("HOGEN_CACHE", str(REPO / ".hogen-cache"))}


def _time(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=_env(), capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed


def measure(folder: Path, runs: int) -> tuple[float, float]:
    """Medians of `hogen build --check` and `python -c pass`, run alternately."""
    check, bare = [HOGEN, "build", "--check", "-q"], [sys.executable, "-c", "pass"]
    _time(check, folder), _time(bare, folder)  # warm the file cache
    times: dict[str, list[float]] = {"check": [], "pass": []}
    for _ in range(runs):
        times["check"].append(_time(check, folder))
        times["pass"].append(_time(bare, folder))
    return statistics.median(times["check"]), statistics.median(times["pass"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20, help="fresh specs in the project")
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each command")
    parser.add_argument("--limit", type=float, default=4.0, help="the largest ratio accepted")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hogen-bench-") as tmp:
        folder = Path(tmp)
        make_project(folder, options.count)
        check, bare = measure(folder, options.runs)
    ratio = check / bare
    print(f"specs: {options.count}, runs: {options.runs} (medians)")
    print(f"hogen build --check  {check * 1000:7.1f} ms")
    print(f"python -c pass       {bare * 1000:7.1f} ms")
    print(f"ratio                {ratio:7.2f}x (limit {options.limit}x)")
    return 0 if ratio <= options.limit else 1


if __name__ == "__main__":
    sys.exit(main())
