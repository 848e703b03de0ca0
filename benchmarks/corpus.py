"""The generalization corpus (issue 13): build each expression at order 2, measure, report.

In: benchmarks/corpus/dev.yaml, heldout.yaml and fresh.yaml (name, expr, args, optional domain and
params, the failure kind 1-8 it exercises, why). Out: a table on stdout, per expression and
in total: does the hogen op keep DESIGN's promise at orders 0-2, float32 and float64
(mean <= 1.5 bits, p99 <= 8 bits, no failures, against the exact reference), does TF
autodiff of the naive expression, the build's CPU time (one core, so
load does not inflate it) with an empty reference cache of its own (a user's first build:
every exact reference computed), the CPU time of the same build again with the cache it
filled (a rebuild, as the pre-commit hook runs it), and why not when it does not.
With `--json PATH`, the same as data. Nothing in the repository is written: each spec is
built into a temporary folder.

Each expression runs in its own child process (build timed alone, then TensorFlow
measurement on the paths of `--paths`, worst reported, as `hogen verify` does), killed at
`--timeout` seconds so no expression can hang the run.

    python benchmarks/corpus.py                      # all parts, 2000 points, -j 2
    python benchmarks/corpus.py --part dev --samples 400 --only d_silu
    python benchmarks/corpus.py --seed 0     # at points the builds chose their forms on
    python benchmarks/corpus.py --paths none --json b.json  # build times and output digests
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "benchmarks" / "corpus"
PARTS = ("dev", "heldout", "fresh")  # fresh: written in session 45 before its changes
sys.path.insert(0, str(ROOT))

from codegen.judge import VERIFY_SEED  # noqa: E402 - after the path; imports no NumPy


def load_entries(parts: tuple[str, ...], only: list[str] | None) -> list[dict]:
    """The corpus entries of `parts`, each tagged with its part; `only` filters by name."""
    entries = []
    for part in parts:
        for entry in yaml.safe_load((CORPUS / f"{part}.yaml").read_text(encoding="utf-8")):
            if not only or entry["name"] in only:
                entries.append({**entry, "part": part})
    return entries


def spec_text(entry: dict) -> str:
    """The order-2 spec of one corpus entry, as YAML."""
    spec = {"name": entry["name"], "args": entry["args"], "expr": entry["expr"], "order": 2}
    if entry.get("params"):
        spec["params"] = entry["params"]
    if entry.get("domain"):
        spec["domain"] = {k: [float(v) for v in r] for k, r in entry["domain"].items()}
    return yaml.safe_dump(spec, sort_keys=False)


REBUILD = "rebuild"  # the child's `paths` for a second build only, with the cache the first filled
BUILD_ONLY = "none"  # the child's `paths` for a build without measurement (`--paths none`)


def child(
    spec_path: str, out_dir: str, samples: int, seed: int, status_path: str, paths: str
) -> None:
    """In a child process: build (timed), write the status, then measure with TensorFlow; or,
    with `paths` REBUILD, build again (timed) and compare the bytes with the first build's."""
    status = Path(status_path)
    from codegen.front.spec import load_spec
    from codegen.pipeline import build

    spec = load_spec(spec_path)
    module = Path(out_dir) / f"{spec.name}.py"
    start, cpu_start = time.perf_counter(), time.process_time()
    source = build(spec)
    seconds, wall = time.process_time() - cpu_start, time.perf_counter() - start
    if paths == REBUILD:
        result = json.loads(status.read_text())
        result.update(rebuild_s=seconds, rebuild_same=source == module.read_text("utf-8"))
        status.write_text(json.dumps(result), encoding="utf-8")
        return
    result = {"built": True, "build_s": seconds, "build_wall_s": wall}
    result["sha256"] = _digest(source)
    module.write_text(source, encoding="utf-8")
    status.write_text(json.dumps(result), encoding="utf-8")
    if paths == BUILD_ONLY:
        return
    from codegen.measure.verify import verify_spec

    paths_run = tuple(paths.split(","))
    rows = verify_spec(spec, Path(out_dir), samples=samples, paths=paths_run, seed=seed)
    worst: dict[str, list] = {"hogen": [], "autodiff": []}
    for r in rows:
        f = r.figures
        if not f.keeps_promise():
            worst[r.tool].append(f"{r.partial}/{r.dtype[-2:]}:{f.mean_bits:.1f},{f.p99_bits:.0f}")
            worst[r.tool][-1] += f",{f.failures}f" if f.failures else ""
    result.update({tool: {"keeps": not bad, "broken": bad} for tool, bad in worst.items()})
    status.write_text(json.dumps(result), encoding="utf-8")


def _digest(source: str) -> str:
    """sha256 of a generated module without the header lines that name the spec's path (a
    temporary folder of its own per run)."""
    named = ("# Generated by ", "# Regenerate with: ")
    kept = [line for line in source.splitlines() if not line.startswith(named)]
    return hashlib.sha256("\n".join(kept).encode("utf-8")).hexdigest()


def _run_child(args: list[str], timeout: float, env: dict) -> str:
    """Run this script as a child with `args`; the error it ended with, if any."""
    cmd = [sys.executable, __file__, "--child", *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return f"timeout after {timeout:.0f} s"
    return _last_line(proc.stderr) if proc.returncode else ""


def run_one(entry: dict, samples: int, timeout: float, paths: str, seed: int = VERIFY_SEED) -> dict:
    """Build and measure one entry in a child process; the row of the report."""
    with tempfile.TemporaryDirectory(prefix="hogen-corpus-") as tmp:
        spec_path, status = Path(tmp) / f"{entry['name']}.yaml", Path(tmp) / "status.json"
        spec_path.write_text(spec_text(entry), encoding="utf-8")
        args = [str(spec_path), tmp, str(samples), str(seed), str(status)]
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONHASHSEED": "0"}
        env["HOGEN_CACHE"] = str(Path(tmp) / "cache")  # cold: nothing from earlier runs
        start = time.perf_counter()
        error = _run_child([*args, paths], timeout, env)
        if not error and paths != BUILD_ONLY:
            error = _run_child([*args, REBUILD], timeout, env)
        result = json.loads(status.read_text()) if status.exists() else {"built": False}
    result.setdefault("build_s", time.perf_counter() - start)
    row = {k: entry[k] for k in ("name", "part", "kind", "expr")}
    row.update(built=result["built"], build_s=round(result["build_s"], 2), error=error)
    row["build_wall_s"] = round(result.get("build_wall_s", result["build_s"]), 2)
    row["rebuild_s"] = round(result.get("rebuild_s", math.nan), 2)
    row["sha256"], row["measured"] = result.get("sha256", ""), paths != BUILD_ONLY
    if not result.get("rebuild_same", True) and not error:
        error = "the rebuild with a warm reference cache wrote other bytes"
    for tool in ("hogen", "autodiff"):
        got = result.get(tool, {"keeps": False, "broken": []})
        row[tool], row[f"{tool}_broken"] = got["keeps"], got["broken"]
    return row


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "failed"


def _why(row: dict) -> str:
    if row["error"]:
        return ("build: " if not row["built"] else "measure: ") + row["error"]
    return " ".join(row["hogen_broken"][:3])


HEADER = (
    f"{'expression':26} {'part':7} {'kind':4} {'hogen':5} {'tf ad':5} {'build cpu s':>11} "
    f"{'rebuild':>7}  why"
)


def row_line(r: dict) -> str:
    yes = {True: "yes", False: "NO"} if r.get("measured", True) else {True: "-", False: "-"}
    return (
        f"{r['name']:26} {r['part']:7} {r['kind']:<4} {yes[r['hogen']]:5} "
        f"{yes[r['autodiff']]:5} {r['build_s']:11.1f} {r['rebuild_s']:7.1f}  "
        f"{'' if r['hogen'] and not r['error'] else _why(r)}"
    )


def report(rows: list[dict]) -> str:
    """The table, one line per expression, then totals per part."""
    lines = [HEADER, *map(row_line, rows)]
    for part in sorted({r["part"] for r in rows}):
        lines.append(_totals(part, [r for r in rows if r["part"] == part]))
    return "\n".join(lines)


def _median_max(times: list[float]) -> str:
    times = [t for t in times if not math.isnan(t)]
    if not times:
        return "median - max -"
    return f"median {statistics.median(times):.1f} max {max(times):.1f}"


def _totals(part: str, rows: list[dict]) -> str:
    built = [r for r in rows if r["built"]]
    promise = (
        f"hogen keeps the promise {sum(r['hogen'] for r in rows)}/{len(rows)}, "
        f"TF autodiff {sum(r['autodiff'] for r in rows)}/{len(rows)}, "
        if all(r.get("measured", True) for r in rows)
        else "not measured, "
    )
    return (
        f"{part}: {promise}built {len(built)}/{len(rows)}, build CPU s (cold cache) "
        f"{_median_max([r['build_s'] for r in built])}, rebuild "
        f"{_median_max([r['rebuild_s'] for r in built])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=(*PARTS, "all"), default="all")
    parser.add_argument("--only", nargs="*", help="names of the entries to run")
    parser.add_argument("--samples", type=int, default=2000, help="points per dtype")
    parser.add_argument(
        "--seed",
        type=int,
        default=VERIFY_SEED,
        help=f"measure at these points ({VERIFY_SEED}: verify's; 0, 1: those builds chose on)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per expression")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument(
        "--paths",
        default="eager,function,xla",
        help="TF paths the hogen op is measured on; none: build only (times, output digests)",
    )
    parser.add_argument("--progress", action="store_true", help="rows on stderr as they end")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    parts = PARTS if args.part == "all" else (args.part,)
    entries = load_entries(parts, args.only)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        run = (args.samples, args.timeout, args.paths, args.seed)
        futures = [pool.submit(run_one, e, *run) for e in entries]
        if args.progress:
            for future in as_completed(futures):
                print(row_line(future.result()), file=sys.stderr, flush=True)
        rows = [f.result() for f in futures]
    print(report(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "--child":
        spec_arg, out_arg, samples_arg, seed_arg, status_arg, paths_arg = sys.argv[2:]
        child(spec_arg, out_arg, int(samples_arg), int(seed_arg), status_arg, paths_arg)
    else:
        main()
