"""Benchmark: CPU seconds of one default ``tune_heavy_ball`` (quadratic class), certified gap.

Run:  python bench/bench_tuning.py [--quick]

For a few problems spanning kappa = 1..1e6 and eps = 0.01..10 it times one call with the
defaults (``grid=30``, ``max_horizon=1000``) by ``time.process_time`` and prints the tuned bound,
the proven lower bound and the certified gap. To compare with another version of the code, run
the script with ``PYTHONPATH`` pointing at that checkout (the numbers of a row are comparable
only on the same machine and load).
"""

from __future__ import annotations

import argparse
import time

from dpbounds.tuning import tune_heavy_ball

# (kappa, eps, d, n, m, S1)
PROBLEMS = [
    (1.0, 1.0, 10, 10**5, None, 1.0), (10.0, 0.1, 20, 10**5, None, 4.0),
    (255.14, 1.0, 20, 10**5, None, 40.0), (1e3, 10.0, 10, 10**5, None, 1.0),
    (3e4, 0.3, 10, 10**5, 10**3, 1.0), (1e6, 0.03, 10, 10**6, None, 1.0),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="first three problems only")
    args = ap.parse_args()
    total = 0.0
    for kappa, eps, d, n, m, S in PROBLEMS[:3] if args.quick else PROBLEMS:
        t = time.process_time()
        res = tune_heavy_ball(1.0 / kappa, 1.0, objective="bound",
                              d=d, n=n, m=m, epsilon=eps, sensitivity=S,
                              initial_gap=1.0)
        cpu = time.process_time() - t
        total += cpu
        print(f"kappa={kappa:<8g} eps={eps:<5g} bound={res.tuned.bound:.7g} "
              f"lower={res.lower_bound:.7g} gap={100 * res.certified_gap:.3g}% "
              f"beta={res.tuned.beta:.4g} T={res.tuned.horizon} cpu={cpu:.2f}s", flush=True)
    print(f"total CPU {total:.2f}s")


if __name__ == "__main__":
    main()
