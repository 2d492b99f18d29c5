"""``tune hb`` (the worst-case tuner) with the tuner objective's NumPy pass against its compiled
pass (the ``fast`` extra), in fresh processes, same answers.

Run: ``python bench/bench_worst_case_kernel.py`` (Markdown table; CPU-s of each child process,
user + system, after one warm-up run that fills numba's cache).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

PROBLEMS = {
    "issue 32 (T <= 100)": dict(mu=1e-3, L=1.0, d=100, n=10**5, m=10**4, epsilon=0.1,
                                sensitivity=1.0, initial_gap=5.0, max_horizon=100),
    "Fig. 3 (T <= 100)": dict(mu=0.02, L=5.1028, d=20, n=10**5, epsilon=1.0, sensitivity=40.0,
                              initial_gap=10.0, max_horizon=100),
    "kappa 1e4 (T <= 2000)": dict(mu=1e-4, L=1.0, d=10, n=10**7, epsilon=1.0, sensitivity=1.0,
                                  initial_gap=10.0, max_horizon=2000),
}
CHILD = """
import json, sys, time
from dpbounds.tuning import tune_heavy_ball
p = json.loads(sys.argv[1])
t = time.process_time()
r = tune_heavy_ball(**p).tuned
print(json.dumps([time.process_time() - t, r.alpha, r.beta, r.horizon, r.computed]))
"""


def run(problem: dict, kernels: str) -> list:
    env = dict(os.environ, DPBOUNDS_KERNELS=kernels, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(problem)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    run(PROBLEMS["Fig. 3 (T <= 100)"], "auto")  # numba's on-disk cache
    print("| problem | NumPy pass CPU-s | compiled CPU-s | ratio | same (alpha, beta, T, value) |")
    print("|---|---|---|---|---|")
    for name, p in PROBLEMS.items():
        a, b = run(p, "numpy"), run(p, "auto")
        print(f"| {name} | {a[0]:.1f} | {b[0]:.1f} | {a[0] / b[0]:.2f}x | {a[1:] == b[1:]} |")
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"\n(children's total CPU {ru.ru_utime + ru.ru_stime:.0f} s)")


if __name__ == "__main__":
    main()
