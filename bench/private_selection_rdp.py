"""Private selection of a Gaussian DP-SGD by Rényi accounting (Papernot & Steinke 2022).

Liu & Talwar's random stopping (``bench/private_selection.py``) composes pure runs only. With
``target_delta=`` ``select_privately`` accounts Gaussian and subsampled runs by Rényi DP, with
the number of trials drawn from a truncated negative binomial law of shape eta (1: geometric,
0: logarithmic). Two parts:

1. **The price of the selection** (no runs): the whole selection's eps at delta = 1e-5 for pure
   runs (eps_run = 1, eps_score = 0.1) against Liu & Talwar's 3.3, by shape and stop
   probability gamma (the expected number of trials beside it): with the reference run made
   on a public objective (``reference_objective=``), and made on the private data (its curve
   composed: its failure would abort the selection).
2. **Tuning DP-SGD privately** (without-replacement batches of 500, 200 steps, grid noise,
   delta_run = 1e-6) on the logistic problem of ``bench/tuned_by_runs.py`` (n = 20000,
   d = 20, x0 = 1) over step size x clipping norm (10 x 4 points): the released run's
   F(x) - F* over independent selections (seeds 0-29, 95% Student-t intervals), beside one
   untuned run (step 1, clip 1) that spends the selection's whole eps, and the grid's best and
   worst points measured non-privately at the runs' own budget (what tuning can reach). The
   reference run is made on public synthetic data of the same n, d and radii (seed 2).

Run: ``python bench/private_selection_rdp.py``; output in ``bench/private_selection_rdp.md``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats

from bench.tuned_by_runs import X0, cpu_model
from dpbounds.algorithms import dp_sgd
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.privacy.rdp import DEFAULT_ORDERS, rdp_to_dp
from dpbounds.tuning import select_privately
from dpbounds.tuning.private_selection import selection_rdp, trials_mean

SELECTIONS = 30
GRID = {"step_size": list(np.geomspace(0.05, 8.0, 10)), "clip_threshold": [0.1, 0.3, 1.0, 3.0]}
RUN = dict(batch_size=500, steps=200, sampling="without_replacement", delta=1e-6, x0=X0)
ROWS = [(1.0, 1.0), (1.0, 0.0), (0.5, 0.0)]  # (eps_run, shape eta)
GAMMA, SCORE_EPS, LOSS_BOUND, TARGET_DELTA = 0.05, 0.1, 4.0, 1e-5


def price_table() -> list[str]:
    o = DEFAULT_ORDERS
    trial = np.minimum(o * 1.0 / 2, 1.0) + np.minimum(o * SCORE_EPS**2 / 2, SCORE_EPS)
    lines = ["| shape eta | gamma | mean trials | eps at delta 1e-5, public reference "
             "(Liu & Talwar: 3.3 at any gamma) | eps, reference on the private data |",
             "|---|---|---|---|---|"]
    for eta in (-0.5, 0.0, 0.5, 1.0, 2.0):
        for g in (0.1, 0.02, 0.005):
            sel = selection_rdp(trial, o, shape=eta, stop_probability=g)
            eps = rdp_to_dp(sel, o, TARGET_DELTA)[0]
            ref = rdp_to_dp(sel + np.minimum(o * 1.0 / 2, 1.0), o, TARGET_DELTA)[0]
            lines.append(f"| {eta:g} | {g:g} | {trials_mean(eta, g):.3g} | {eps:.3g} | "
                         f"{ref:.3g} |")
    return lines


def _interval(v: np.ndarray) -> tuple[float, float, float]:
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def main() -> None:
    t0, c0 = time.time(), time.process_time()
    print(f"CPU: {cpu_model()}\n")
    print("## 1. The price of the selection (pure runs, eps_run = 1, eps_score = 0.1)\n")
    print("\n".join(price_table()))
    ds = kuru_synthetic(n=20_000, d=20, seed=1)
    f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
    pub = kuru_synthetic(n=20_000, d=20, seed=2)  # public: the reference run's data
    g = LogisticRegression.kuru(*pub, lam=0.01, **ds.domain())
    print(f"\n## 2. Tuning DP-SGD privately (n = {f.n}, d = {f.d}, grid 10 x 4, gamma = "
          f"{GAMMA:g}, B = {LOSS_BOUND:g}, {SELECTIONS} selections per row)\n")
    print("| choice | mean F(x) - F* of the released run | 95% interval | mean trials | "
          "eps of the whole tuning at delta 1e-5 | CPU-s |")
    print("|---|---|---|---|---|---|")
    for eps_run, eta in ROWS:
        c1 = time.process_time()
        sels = [select_privately(dp_sgd, f, GRID, epsilon=eps_run, score_epsilon=SCORE_EPS,
                                 loss_bound=LOSS_BOUND, stop_probability=GAMMA,
                                 target_delta=TARGET_DELTA, shape=eta, seed=s,
                                 reference_objective=g, **RUN)
                for s in range(SELECTIONS)]
        m, lo, hi = _interval(np.array([s.suboptimality for s in sels]))
        total = sels[0].epsilon
        print(f"| select_privately, eps_run = {eps_run:g}, shape {eta:g} | {m:.4g} | "
              f"[{lo:.4g}, {hi:.4g}] | {np.mean([s.trials_run for s in sels]):.1f} | "
              f"{total:.3g} | {time.process_time() - c1:.1f} |")
        one = dp_sgd(f, epsilon=total, step_size=1.0, clip_threshold=1.0, trials=SELECTIONS,
                     seed=(9, 1), noise="grid", **{**RUN, "delta": TARGET_DELTA})
        m, lo, hi = _interval(np.asarray(one.trace, dtype=float)[:, -1])
        print(f"| untuned (step 1, clip 1), one run at eps = {total:.3g} | {m:.4g} | "
              f"[{lo:.4g}, {hi:.4g}] | - | {total:.3g} | - |")
    c1 = time.process_time()
    means = []
    for a in GRID["step_size"]:
        for c in GRID["clip_threshold"]:
            r = dp_sgd(f, epsilon=1.0, step_size=a, clip_threshold=c, trials=20, seed=(9, 2),
                       noise="grid", **RUN)
            means.append((float(np.mean(np.asarray(r.trace, dtype=float)[:, -1])), a, c))
    means.sort()
    print(f"| grid's best point at eps_run = 1 (step {means[0][1]:.3g}, clip {means[0][2]:g};"
          f" 20 runs, non-private) | {means[0][0]:.4g} | - | - | - | "
          f"{time.process_time() - c1:.1f} |")
    print(f"| grid's worst point at eps_run = 1 (step {means[-1][1]:.3g}, clip "
          f"{means[-1][2]:g}) | {means[-1][0]:.4g} | - | - | - | - |")
    print(f"| grid's median point at eps_run = 1 | {means[len(means) // 2][0]:.4g} | - | - "
          f"| - | - |")
    print(f"\nwhole bench: {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} "
          "CPU-s")


if __name__ == "__main__":
    main()
