"""Benchmark: vectorised evaluation of a composed bound on a 10^6-point grid vs a naive
sympy ``subs`` loop.

The naive loop (``expr.subs(...).evalf()`` per point) is far too slow to run on 10^6 points:
it is timed on a random subset and **extrapolated linearly** to the full grid (stated in the
output). Both run in the same process, side by side; the ratio is what to quote.

Run: ``.venv/bin/python bench/bench_bounds_eval.py [--points 1000000] [--subset 200]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpbounds.bounds.nonconvex import sensitivity_reduced, tree_momentum
from dpbounds.bounds.theorem import sym


def grid(points: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    side = int(round(points ** (1 / 3)))
    d = np.geomspace(10, 1e3, side)
    n = np.geomspace(1e5, 1e10, side)
    eps = np.geomspace(0.5, 4, points // (side * side))
    D, Nn, Ee = np.meshgrid(d, n, eps, indexing="ij")
    return {"d": D.ravel(), "N": Nn.ravel(), "eps": Ee.ravel(), "delta": 1e-6, "G": 1.0,
            "L": 1.0, "R": 1.0}


def run(points: int, subset: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    p = grid(points, rng)
    size = p["d"].size
    for thm in (tree_momentum.theorem6_tuned, sensitivity_reduced.theorem9_tuned):
        thm.evaluate(**{k: (v[:10] if isinstance(v, np.ndarray) else v) for k, v in p.items()})
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = thm.evaluate(**p)
            times.append(time.perf_counter() - t0)
        vec = min(times)
        idx = rng.choice(size, subset, replace=False)
        t0 = time.perf_counter()
        naive = []
        for i in idx:
            subs = {sym(k): (float(v[i]) if isinstance(v, np.ndarray) else v)
                    for k, v in p.items() if k in thm.parameters}
            naive.append(float(thm.expr.subs(subs).evalf()))
        per_point = (time.perf_counter() - t0) / subset
        rel = np.max(np.abs(np.array(naive) - out[idx]) / np.abs(np.array(naive)))
        extrapolated = per_point * size
        print(f"{thm.name}: {size:,} points")
        print(f"  vectorised evaluate (lambdify, cached): {vec:.3f} s (best of {repeats})")
        print(f"  naive subs+evalf loop: {per_point * 1e3:.2f} ms/point on {subset} points, "
              f"extrapolated to {size:,} points: {extrapolated:.0f} s")
        print(f"  ratio naive/vectorised: {extrapolated / vec:,.0f}x;  "
              f"max rel. difference on the subset: {rel:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--subset", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    run(a.points, a.subset, a.repeats)


if __name__ == "__main__":
    main()
