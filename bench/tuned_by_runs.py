"""Tuning by runs against tuning by the worst case, on stop 76's walkthrough problem.

The problem: Kuru et al.'s synthetic logistic data (``kuru_synthetic``, n = 20000, d = 20),
ridge lambda = 0.01 (mu = 0.02), eps = 1, full batch, start x0 = 1 in every coordinate. The
walkthrough found ``tune hb`` / ``tune nag`` (worst case over the class with this mu, L and
E0 = F(x0) - F*) 4.5x worse than a plain grid of runs. Printed, all on the same fresh seeds
(``tune_by_runs``' evaluation streams), mean F(x_T) - F* with its 95% interval:

* DP heavy ball: ``tune_by_runs``' pick, ``tune_heavy_ball``'s pick, and Polyak-like
  alpha = 1/L, beta = 0 at the same T;
* DP-NAG (uniform budget): ``tune_by_runs``' pick over (alpha, beta, T).

Run: ``python bench/tuned_by_runs.py`` (about 20 CPU-s on a Zen 4 vCPU); output in
``bench/tuned_by_runs.md``.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time

import numpy as np

from dpbounds.algorithms import dp_heavy_ball, dp_nag
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.tuning import tune_by_runs, tune_heavy_ball

X0 = 1.0
GRID = {"step_size": list(np.geomspace(0.1, 6.0, 14)), "momentum": [0.0, 0.3, 0.5, 0.7, 0.8,
                                                                     0.9],
        "steps": [2, 3, 4, 6, 8, 11, 16]}


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        return (f"{fields.get('Model name', '?').strip()}, family "
                f"{fields.get('CPU family', '?').strip()} model {fields.get('Model', '?').strip()}"
                f", {os.cpu_count()} vCPU")
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"


def main() -> None:
    t0, c0 = time.time(), time.process_time()
    ds = kuru_synthetic(n=20_000, d=20, seed=1)
    f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
    x0 = np.full((1, f.d), X0)
    gap = float(f.suboptimality(x0)[0])
    mu, L, S1 = f.strong_convexity, f.smoothness, f.l1_sensitivity
    print(f"CPU: {cpu_model()}")
    print(f"mu = {mu:.3g}, L = {L:.4g}, S1 = {S1:.4g}, d = {f.d}, n = {f.n}, "
          f"F(x0) - F* = {gap:.4g}, eps = 1\n")
    hb = tune_heavy_ball(mu, L, d=f.d, n=f.n, epsilon=1.0, sensitivity=S1, initial_gap=gap,
                         max_horizon=200).tuned
    worst = {"step_size": hb.alpha, "momentum": hb.beta, "steps": hb.horizon}
    runs = tune_by_runs(dp_heavy_ball, f, GRID, epsilon=1.0, trials=16, eval_trials=400,
                        seed=0, x0=X0, compare={
                            "tune_heavy_ball (worst case)": worst,
                            "alpha = 1/L, beta = 0, same T": {
                                "step_size": 1 / L, "momentum": 0.0, "steps": hb.horizon}})
    print("DP heavy ball\n" + runs.table() + "\n")
    nag = tune_by_runs(dp_nag, f, GRID, epsilon=1.0, trials=16, eval_trials=400, seed=0,
                       x0=X0)
    print("DP-NAG (uniform budget)\n" + nag.table())
    a = runs.evaluation["tuned by runs"].mean
    b = runs.evaluation["tune_heavy_ball (worst case)"].mean
    print(f"\nheavy ball: worst-case pick / by-runs pick = {b / a:.2f}")
    print(f"{time.time() - t0:.1f} s wall, {time.process_time() - c0:.1f} CPU-s (this process)")


if __name__ == "__main__":
    main()
