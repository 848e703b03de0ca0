"""How long `hogen build` takes for the standard library, cold and warm.

In: the specs in specs/ (or the paths given). Out: markdown tables on stdout (and with
`--json PATH`, the raw figures). Nothing in the repository is written: every build goes to
a temporary folder with a temporary reference cache.

Measured:
- per spec, in one child process per cache state: `codegen.pipeline.build(spec)` timed
  alone after the imports, first with an empty reference cache (cold: every exact reference
  is computed) and then with the cache that run filled (warm: references are read back);
  one process, so in-memory caches shared across specs count as they do in `hogen build`;
- the whole library through the command line, `hogen build --force -j N --out TMP`, cold
  (fresh HOGEN_CACHE) with -j 1 and -j N, and warm (HOGEN_CACHE reused) with -j 1;
  wall time of the process, imports included.

    python benchmarks/bench_build.py            # every spec in specs/, -j 1 and -j 2
    python benchmarks/bench_build.py --jobs 4 specs/log1pexp.yaml
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 5.0  # the goal for an order-2 spec on one core


def _specs(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for p in paths or [str(ROOT / "specs")]:
        path = Path(p)
        found += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return found


def per_spec_child(spec_paths: list[str]) -> dict:
    """Runs in a child: time build(spec) per spec after the imports (HOGEN_CACHE is set)."""
    sys.path.insert(0, str(ROOT))
    start = time.perf_counter()
    from codegen.front.spec import load_spec
    from codegen.pipeline import build

    imports = time.perf_counter() - start
    rows = []
    for path in spec_paths:
        spec = load_spec(path)
        t0 = time.perf_counter()
        build(spec)
        rows.append(
            {
                "spec": Path(path).name,
                "order": spec.order,
                "args": len(spec.args),
                "seconds": time.perf_counter() - t0,
            }
        )
    return {"imports": imports, "rows": rows}


def _child(spec_paths: list[Path], cache: Path) -> dict:
    env = dict(os.environ, HOGEN_CACHE=str(cache), PYTHONHASHSEED="0")
    args = [sys.executable, __file__, "--child", *map(str, spec_paths)]
    done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _hogen() -> list[str]:
    script = Path(sys.executable).with_name("hogen")
    return [str(script)] if script.exists() else [sys.executable, "-m", "codegen.cli.app"]


def cli_wall(spec_paths: list[Path], jobs: int, cache: Path) -> float:
    """Wall seconds of `hogen build --force -j jobs` into a temporary folder."""
    env = dict(os.environ, HOGEN_CACHE=str(cache), PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory(prefix="hogen-bench-out-") as out:
        args = [*_hogen(), "build", "--force", "-q", "-j", str(jobs), "--out", out]
        args += [str(p) for p in spec_paths]
        t0 = time.perf_counter()
        subprocess.run(args, env=env, cwd=ROOT, check=True, capture_output=True)
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="spec files or folders (default: specs/)")
    parser.add_argument(
        "--jobs", "-j", type=int, default=2, help="parallel run to compare with -j 1"
    )
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(per_spec_child(args.paths)))
        return

    specs = _specs(args.paths)
    with tempfile.TemporaryDirectory(prefix="hogen-bench-cache-") as tmp:
        tmp = Path(tmp)
        cold = _child(specs, tmp / "inproc")
        warm = _child(specs, tmp / "inproc")
        wall = {
            "cold -j 1": cli_wall(specs, 1, tmp / "cli1"),
            f"cold -j {args.jobs}": cli_wall(specs, args.jobs, tmp / f"cli{args.jobs}"),
            "warm -j 1": cli_wall(specs, 1, tmp / "cli1"),
        }

    print(
        f"Per-spec build time, `codegen.pipeline.build(spec)` in one process after imports "
        f"(imports: {cold['imports']:.1f} s cold):\n"
    )
    print("| spec | order | args | cold s | warm s | cold ≤ 5 s |")
    print("|---|---:|---:|---:|---:|:---:|")
    for c, w in zip(cold["rows"], warm["rows"]):
        ok = "yes" if c["seconds"] <= TARGET_S else "no"
        print(
            f"| {c['spec']} | {c['order']} | {c['args']} | {c['seconds']:.1f} "
            f"| {w['seconds']:.1f} | {ok} |"
        )
    total_cold = sum(r["seconds"] for r in cold["rows"])
    total_warm = sum(r["seconds"] for r in warm["rows"])
    print(f"| **all {len(specs)}** | | | **{total_cold:.1f}** | **{total_warm:.1f}** | |")
    print("\nWhole library, `hogen build --force -q -j N --out TMP`, wall time with imports:\n")
    print("| run | wall s |")
    print("|---|---:|")
    for name, seconds in wall.items():
        print(f"| {name} | {seconds:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"cold": cold, "warm": warm, "wall": wall}))


if __name__ == "__main__":
    main()
