"""Speed of the generated JAX and PyTorch ops beside each framework's built-ins.

In: nothing (the ops are imported from `generated_jax/` and `generated_torch/`). Out: a
markdown table on stdout: for each op with a built-in, the time of value + f' + f'' of a
1-D float32 array of 10^3, 10^5 and 10^7 elements, hogen's and the built-in's, and the
ratio hogen ÷ built-in (below 1.0 hogen is faster). JAX is timed under `jax.jit` (the
three outputs of one jitted function, f' and f'' by jax.grad of sums), PyTorch eagerly
(nested torch.autograd.grad, create_graph for the first). hogen and the built-in are run
interleaved in one process after a warm-up; the figure is the median of the reps.

    python benchmarks/bench_backends.py            # sizes 10^3, 10^5, 10^7
    python benchmarks/bench_backends.py --quick    # sizes 10^3, 10^5, fewer reps
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # generated_*, codegen


ROOT = pathlib.Path(__file__).resolve().parents[1]


def _pairs(backend: str, constant) -> dict:
    """{op: (hogen's op, the built-in, its label, the first arg's domain)} for every library
    op with a built-in in `backend` (codegen.measure.builtins); a second arg is held at 0.5
    (`constant(0.5)`), params at the spec's defaults."""
    import importlib

    from codegen.front.spec import load_spec
    from codegen.measure import builtins

    module = importlib.import_module(f"generated_{backend}")
    pairs = {}
    for name, builtin in sorted(builtins.BY_BACKEND[backend].items()):
        spec = load_spec(ROOT / "specs" / f"{name}.yaml")
        params = dict(spec.params)
        rest = [constant(0.5)] * (len(spec.args) - 1)
        ours = getattr(module, name)
        pairs[name] = (
            lambda x, ours=ours, rest=rest: ours(x, *rest),
            lambda x, fn=builtin.fn, rest=rest, params=params: fn(x, *rest, **params),
            builtin.label,
            spec.domain[0],
        )
    return pairs


def _inputs(domain: tuple[float, float], n: int) -> np.ndarray:
    """n float32 points in [-10, 10], mapped into (0, 1) or (0, inf) where the domain is."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-10, 10, n).astype(np.float32)
    lo, hi = domain
    if lo >= 0 and hi <= 1:
        return 1 / (1 + np.exp(-x))
    return np.abs(x) + np.float32(1e-3) if lo >= 0 else x


def _jax_runner(f):
    import jax

    d1 = jax.grad(lambda v: f(v).sum())
    d2 = jax.grad(lambda v: d1(v).sum())
    fn = jax.jit(lambda x: (f(x), d1(x), d2(x)))
    return lambda x: jax.block_until_ready(fn(x))


def _torch_runner(f):
    import torch

    def run(x):
        x = x.detach().requires_grad_(True)
        y = f(x)
        (d1,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        if not d1.requires_grad:  # a built-in whose f' is piecewise constant (huber's tails)
            return y, d1, torch.zeros_like(x)
        (d2,) = torch.autograd.grad(d1.sum(), x)
        return y, d1, d2

    return run


def _median_times(runs, x, reps: int) -> list[float]:
    for run in runs:  # warm-up (and jit compile)
        run(x)
    times = [[] for _ in runs]
    for _ in range(reps):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run(x)
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _table(framework: str, pairs: dict, runner, to_array, sizes, reps) -> list[str]:
    lines = [
        f"### {framework}: value + f' + f'' of float32 arrays",
        "",
        "| op | built-in | n | hogen ms | built-in ms | hogen ÷ built-in |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, (ours, builtin, label, domain) in pairs.items():
        for n in sizes:
            x = to_array(_inputs(domain, n))
            count = max(3, reps // max(1, n // 100_000))
            a, b = _median_times([runner(ours), runner(builtin)], x, count)
            lines.append(
                f"| {name} | {label} | {n:.0e} | {a * 1e3:.3f} | {b * 1e3:.3f} | {a / b:.2f} |"
            )
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 10^3 and 10^5 only")
    parser.add_argument("--only", choices=["jax", "torch"], help="one framework only")
    options = parser.parse_args()
    sizes = [10**3, 10**5] if options.quick else [10**3, 10**5, 10**7]
    reps = 5 if options.quick else 21
    if options.only in (None, "jax"):
        import jax.numpy as jnp

        pairs = _pairs("jax", lambda v: jnp.asarray(v, jnp.float32))
        print("\n".join(_table("JAX (jax.jit)", pairs, _jax_runner, jnp.asarray, sizes, reps)))
    if options.only in (None, "torch"):
        import torch

        torch.set_num_threads(max(1, torch.get_num_threads()))
        pairs = _pairs("torch", lambda v: torch.tensor(v, dtype=torch.float32))
        table = _table("PyTorch (eager)", pairs, _torch_runner, torch.from_numpy, sizes, reps)
        print("\n".join(table))


if __name__ == "__main__":
    main()
