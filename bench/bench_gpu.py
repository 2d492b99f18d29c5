"""Benchmark: the same DP-SHB run on NumPy (CPU) and CuPy (GPU), side by side.

Large problem: a diagonal quadratic with d = 10^6, 64 trials, subsampling and Laplace noise on
every coordinate (the noise draw dominates). Speed is the point, not the error level: with
n = 100 samples and d = 10^6 coordinates the L1-calibrated Laplace noise is huge. Prints
both wall times, the speed-up and the two mean final errors (they must agree statistically,
not bitwise: the GPU draws with cupy.random from the same per-trial seeds).

    python bench/bench_gpu.py [--d 1000000] [--trials 64] [--steps 50]

Without CuPy and a GPU it runs the NumPy side only and says so.
"""

from __future__ import annotations

import argparse
import math
import time

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.backend import cupy_available
from dpbounds.objectives import QuadraticObjective


def _run(f, args) -> tuple[float, float, float]:
    start = time.perf_counter()
    res = dp_heavy_ball(f, epsilon=1.0, steps=args.steps, batch_size=args.n // 10,
                        trials=args.trials, seed=0, trace=None)
    x = res.x_numpy()  # forces the device to finish before the clock stops
    elapsed = time.perf_counter() - start
    err = f.suboptimality(f.xp.asarray(x)) if f.xp.__name__ != "numpy" else f.suboptimality(x)
    err = [float(v) for v in err]
    mean = sum(err) / len(err)
    sd = math.sqrt(sum((v - mean) ** 2 for v in err) / max(1, len(err) - 1))
    return elapsed, mean, sd / math.sqrt(len(err))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, default=1_000_000)
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args(argv)
    f = QuadraticObjective.random(args.d, 0.1, 1.0, n=args.n, offset_scale=0.01, seed=0,
                                  rotate=False)
    print(f"DP-SHB on a diagonal quadratic: d={args.d}, n={args.n}, trials={args.trials}, "
          f"steps={args.steps}, eps=1 (Laplace)")
    t_cpu, m_cpu, se_cpu = _run(f, args)
    print(f"  numpy: {t_cpu:8.2f} s   mean F-F* = {m_cpu:.6g} +- {se_cpu:.2g}")
    if not cupy_available():
        print("  cupy : not available (no CuPy or no CUDA device) - nothing to compare")
        return 0
    g = f.to_backend("cupy")
    _run(g, argparse.Namespace(**{**vars(args), "steps": 2}))  # warm-up: kernels, allocator
    t_gpu, m_gpu, se_gpu = _run(g, args)
    print(f"  cupy : {t_gpu:8.2f} s   mean F-F* = {m_gpu:.6g} +- {se_gpu:.2g}")
    print(f"  speed-up numpy/cupy: {t_cpu / t_gpu:.1f}x; |mean diff| / combined s.e. = "
          f"{abs(m_cpu - m_gpu) / math.hypot(se_cpu, se_gpu):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
