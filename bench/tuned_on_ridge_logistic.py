"""The tuners' picks run on one ridge logistic regression (a walkthrough's problem of stop 75).

The problem: n = 20000 Gaussian records in d = 10 with column scales from 1 down to 0.1 and
largest row norm 1, labels from a logistic model, ridge l2 = 2e-4 (mu = 2e-4, L = 0.0113),
eps = 1, full batch, start x0 = 0 (F(x0) - F* = 0.054). Printed:

* ``tune_heavy_ball``'s quadratic-class pick, and whether it has a Prop. 3.4 rate
  certificate on all of S_mu,L (the ``class:`` line of ``tune hb``);
* ``dp_nag_opt`` with the paper's guess E0 = 10 and with the gap itself (the horizon moves);
* ``tune_nesterov``'s worst-case row (T = 15) run as tuned, beside Remark 4.1's T = 6.

Mean F(x_T) - F* over ``TRIALS`` runs at two seeds, with standard errors. Run:
``python bench/tuned_on_ridge_logistic.py`` (about 20 CPU-s); the README's and dp_nag's
numbers.
"""

from __future__ import annotations

import numpy as np

from dpbounds.algorithms import dp_nag, dp_nag_opt
from dpbounds.lmi.heavy_ball_lmi import LMICertificate, heavy_ball_lmi_rate
from dpbounds.objectives import LogisticRegression
from dpbounds.tuning import tune_heavy_ball, tune_nesterov

TRIALS = 400
SEEDS = (0, 3)


def problem(n: int = 20_000, d: int = 10, seed: int = 7, l2: float = 2e-4
            ) -> LogisticRegression:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d)) * np.geomspace(1.0, 0.1, d)
    A /= np.linalg.norm(A, axis=1).max()
    w = rng.standard_normal(d) * 5
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-A @ w)), 1.0, -1.0)
    return LogisticRegression(A, y, l2=l2)


def mean_se(f: LogisticRegression, run) -> str:
    out = []
    for seed in SEEDS:
        v = f.suboptimality(run(seed).x_numpy())
        out.append(f"{v.mean():.3g} +- {v.std(ddof=1) / np.sqrt(TRIALS):.1g}")
    return " | ".join(out)


def main() -> None:
    f = problem()
    mu, L, d, n = f.strong_convexity, f.smoothness, f.d, f.n
    gap = float(f.suboptimality(np.zeros((1, d)))[0])
    print(f"mu = {mu:.3g}, L = {L:.4g}, S1 = {f.l1_sensitivity:.4g}, F(x0) - F* = {gap:.4g}; "
          f"{TRIALS} runs, seeds {SEEDS}\n")
    hb = tune_heavy_ball(mu, L, d=d, n=n, epsilon=1.0, sensitivity=f.l1_sensitivity,
                         initial_gap=gap, max_horizon=2000)
    t = hb.tuned
    cert = heavy_ball_lmi_rate(mu, L, t.alpha, t.beta)
    print(f"tune hb (quadratic class): alpha = {t.alpha:.4g}, beta = {t.beta:.4g}, "
          f"T = {t.horizon}; certified on S_mu,L: {isinstance(cert, LMICertificate)} ({cert})\n")
    nag = tune_nesterov(mu, L, d=d, n=n, epsilon=1.0, sensitivity=f.l1_sensitivity,
                        initial_gap=gap, max_horizon=2000)
    tuned = nag.choices[0]
    rows = {
        "dp_nag_opt, E0 = 10 (default)": lambda s: dp_nag_opt(f, epsilon=1.0, steps=2000,
                                                              trials=TRIALS, seed=s),
        f"dp_nag_opt, E0 = {gap:.3g} (the gap)": lambda s: dp_nag_opt(
            f, epsilon=1.0, steps=2000, initial_error=gap, trials=TRIALS, seed=s),
        f"tune nag worst-case row, T = {tuned.horizon}": lambda s: dp_nag(
            f, epsilon=1.0, steps=tuned.horizon, budgets=tuned.epsilons, trials=TRIALS,
            seed=s),
    }
    print("| run | horizon | " + " | ".join(f"seed {s}" for s in SEEDS) + " |")
    print("|---|---|" + "---|" * len(SEEDS))
    for name, run in rows.items():
        horizon = run(SEEDS[0]).params.get("horizon", tuned.horizon)
        print(f"| {name} | {horizon} | {mean_se(f, run)} |")


if __name__ == "__main__":
    main()
