"""A total budget, planned: does a private selection at a total epsilon beat one run at it?

The researcher's question behind ``plan_selection`` (``tune runs --private --total-epsilon``):
with a total of eps = 1 (or 2) for the whole tuning, plan each run's epsilon so that the Rényi
selection (Papernot & Steinke 2022) costs at most the total, run the selection, and compare its
released run with one untuned DP-SGD run that spends the whole total itself.

Problem and grid as ``bench/private_selection_rdp.py``: Kuru et al.'s synthetic logistic data
(n = 20000, d = 20, x0 = 1), DP-SGD without replacement (batches of 500, 200 steps, grid noise,
delta_run = 1e-6), step size x clipping norm (10 x 4 points), score eps 0.1, B = 4,
gamma = 0.05, the reference run on public synthetic data of the same n, d and radii (seed 2).
Each row: 30 selections (seeds 0-29), mean F(x) - F* of the released run with a 95%
Student-t interval; the untuned run (step 1, clip 1, and the grid's median step 0.5 x clip 1)
at the whole total, 30 trials.

Run: ``python bench/plan_total_budget.py``; output in ``bench/plan_total_budget.md``.
"""

from __future__ import annotations

import time

import numpy as np

from bench.private_selection_rdp import (  # the same problem, grid and law
    GAMMA,
    GRID,
    LOSS_BOUND,
    RUN,
    SCORE_EPS,
    SELECTIONS,
    TARGET_DELTA,
    _interval,
)
from bench.tuned_by_runs import cpu_model
from dpbounds.algorithms import dp_sgd
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.tuning import plan_selection, select_privately

ROWS = [(1.0, 0.0), (1.0, 1.0), (2.0, 0.0)]  # (total eps, shape eta)


def main() -> None:
    t0, c0 = time.time(), time.process_time()
    print(f"CPU: {cpu_model()}\n")
    ds = kuru_synthetic(n=20_000, d=20, seed=1)
    f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
    pub = kuru_synthetic(n=20_000, d=20, seed=2)  # public: the reference runs' data
    g = LogisticRegression.kuru(*pub, lam=0.01, **ds.domain())
    law = dict(score_epsilon=SCORE_EPS, loss_bound=LOSS_BOUND, stop_probability=GAMMA,
               target_delta=TARGET_DELTA)
    print(f"n = {f.n}, d = {f.d}, grid 10 x 4, gamma = {GAMMA:g}, B = {LOSS_BOUND:g}, "
          f"{SELECTIONS} selections or runs per row\n")
    print("| total eps | choice | eps per run | eps of the whole tuning | mean F(x) - F* | "
          "95% interval | plan CPU-s | CPU-s |")
    print("|---|---|---|---|---|---|---|---|")
    for total, eta in ROWS:
        c1 = time.process_time()
        plan = plan_selection(dp_sgd, g, GRID, total_epsilon=total, shape=eta, **law, **RUN)
        c2 = time.process_time()
        sels = [select_privately(dp_sgd, f, GRID, epsilon=plan.epsilon, shape=eta, seed=s,
                                 reference_objective=g, **law, **RUN)
                for s in range(SELECTIONS)]
        m, lo, hi = _interval(np.array([s.suboptimality for s in sels]))
        print(f"| {total:g} | selection, shape {eta:g} | {plan.epsilon:.4g} | "
              f"{sels[0].epsilon:.4g} | {m:.4g} | [{lo:.4g}, {hi:.4g}] | {c2 - c1:.1f} | "
              f"{time.process_time() - c1:.1f} |")
        if eta != 0.0:
            continue
        for step in (1.0, 0.5):
            c1 = time.process_time()
            one = dp_sgd(f, epsilon=total, step_size=step, clip_threshold=1.0,
                         trials=SELECTIONS, seed=(9, 1), noise="grid",
                         **{**RUN, "delta": TARGET_DELTA})
            m, lo, hi = _interval(np.asarray(one.trace, dtype=float)[:, -1])
            print(f"| {total:g} | one run, step {step:g}, clip 1 | {total:g} | {total:g} | "
                  f"{m:.4g} | [{lo:.4g}, {hi:.4g}] | - | {time.process_time() - c1:.1f} |")
    print(f"\nwall {time.time() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s")


if __name__ == "__main__":
    main()
