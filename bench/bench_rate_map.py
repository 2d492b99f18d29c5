"""Benchmark: 100x100 heavy-ball LMI rate map (Kuru et al. Prop. 3.4) vs the naive approach.

Run:  .venv/bin/python bench/bench_rate_map.py [--size 100] [--processes 2] [--naive-points 40]

* fast: :func:`dpbounds.lmi.rate_map.lmi_rate_map` (SDP set up once per worker, closed-form lower
  bound, continuation brackets, Illinois search, 2 processes), every certificate verified;
* naive: rebuild the cvxpy problem and solve it at every step of a plain bisection on (0, 1)
  (:func:`dpbounds.lmi.heavy_ball_lmi.naive_heavy_ball_lmi_rate`), timed on a random subset of
  the same grid and extrapolated to the full grid (stated in the output).

Both run in this one process run, side by side, so the ratio is meaningful even on a shared
machine; absolute times are not.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dpbounds.lmi.heavy_ball_lmi import naive_heavy_ball_lmi_rate
from dpbounds.lmi.rate_map import closed_form_rate_map, default_grid, lmi_rate_map


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--naive-points", type=int, default=40)
    ap.add_argument("--mu", type=float, default=0.1)
    ap.add_argument("--L", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    # the naive baseline solves near-degenerate problems; cvxpy warns, the result is kept as is
    warnings.filterwarnings("ignore", message="Solution may be inaccurate")

    alphas, betas = default_grid(args.L, args.size)
    t0 = time.perf_counter()
    cf = closed_form_rate_map(args.mu, args.L, alphas, betas)
    t_cf = time.perf_counter() - t0

    rm = lmi_rate_map(args.mu, args.L, alphas, betas, tol=args.tol, processes=args.processes)
    print(rm.summary())
    n_points = alphas.size * betas.size

    rng = np.random.default_rng(args.seed)
    idx = rng.choice(n_points, size=args.naive_points, replace=False)
    pts = [(alphas[k % alphas.size], betas[k // alphas.size]) for k in idx]
    t0 = time.perf_counter()
    naive = []
    for a, b in pts:
        r = naive_heavy_ball_lmi_rate(args.mu, args.L, a, b, tol=args.tol)
        naive.append(np.nan if r is None else r)
    t_naive = time.perf_counter() - t0
    naive = np.array(naive)
    fast = rm.rho_lmi.ravel()[idx]
    both = ~np.isnan(naive) & ~np.isnan(fast)
    agree_cert = np.mean(np.isnan(naive) == np.isnan(fast))
    t_naive_full = t_naive / len(pts) * n_points

    print(f"closed-form map ({n_points} points): {t_cf * 1e3:.2f} ms")
    print(f"LMI map, fast path: {rm.seconds:.1f} s on {rm.processes} processes "
          f"({rm.solves / n_points:.2f} SDP solves per point, all certificates verified: "
          f"{bool(np.all(rm.verified == rm.certified))})")
    print(f"naive rebuild-and-solve bisection: {t_naive:.1f} s for {len(pts)} random grid points "
          f"(1 process) -> extrapolated {t_naive_full:.0f} s for the {n_points}-point map")
    print(f"ratio naive/fast (extrapolated, wall clock): {t_naive_full / rm.seconds:.0f}x; "
          f"per process-second: {t_naive_full / (rm.seconds * rm.processes):.0f}x")
    if both.any():
        print(f"naive vs fast rates on the subset: max |diff| = "
              f"{np.max(np.abs(naive[both] - fast[both])):.2e} (tol {args.tol}); "
              f"certified/uncertified agreement {agree_cert:.0%}")
    print(f"LMI >= closed form everywhere certified: "
          f"{bool(np.all(rm.rho_lmi[rm.certified] >= cf.rho_closed_form[rm.certified] - 1e-9))}")


if __name__ == "__main__":
    main()
