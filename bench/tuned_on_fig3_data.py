"""The tuned heavy ball on Fig. 3's own data set (Kuru et al. Section 5), not on the class.

``tune_heavy_ball`` minimises the worst-case error over every quadratic with spectrum in
[mu, L] and every start with F(x0) - F* <= E0. This script runs its picks on the logistic
data of Fig. 3 (n = 1e5, d = 20, lambda = 0.01, eps = 1), from the paper's start x0 = 10 and
from three other starts of the same gap (along the Hessian's extreme eigenvectors at x*, and
a random direction), with the paper's inputs (L = 5.1, E0 = 10: ``settings``) and with the
data's own (true smoothness, F(x0) - F*), beside the bound's pick and one grid point fitted
to the paper's start. Mean suboptimality over ``TRIALS`` runs, with its standard error.

Run: ``python bench/tuned_on_fig3_data.py`` (about 2 CPU-minutes); README's numbers.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.settings import logistic_regression, logistic_regression_grid
from dpbounds.tuning import tune_heavy_ball

TRIALS = 40


def main() -> None:
    s, g = logistic_regression(), logistic_regression_grid()
    ds = kuru_synthetic(n=100_000, d=20, seed=1)
    f = LogisticRegression.kuru(*ds, lam=g["lam"], paper_smoothness=True, **ds.domain())
    true_L = LogisticRegression.kuru(*ds, lam=g["lam"], **ds.domain()).smoothness
    x10 = np.full(20, float(g["x0"]))
    E0 = float(f.suboptimality(x10[None])[0])
    paper = tune_heavy_ball(**s, max_horizon=300, grid=12)
    own = tune_heavy_ball(**dict(s, L=true_L, initial_gap=E0), max_horizon=300, grid=12)
    xs = f.optimum.x
    A, _ = ds
    z = A @ xs
    w = 1 / (1 + np.exp(-z))
    H = (A.T * (w * (1 - w))) @ A / len(A) + 2 * g["lam"] * np.eye(20)
    _, V = np.linalg.eigh(H)

    def at_gap(v: np.ndarray) -> np.ndarray:
        v = v / np.linalg.norm(v)
        c = brentq(lambda c: f.suboptimality((xs + c * v)[None])[0] - E0, 1e-3, 1e4)
        return xs + c * v

    starts = {"x0 = 10 (paper)": x10, "slowest direction": at_gap(V[:, 0]),
              "fastest direction": at_gap(V[:, -1]),
              "random direction": at_gap(np.random.default_rng(0).standard_normal(20))}
    picks = {
        f"tuned, paper's L = {s['L']:g}, E0 = {s['initial_gap']:g}": paper.tuned,
        "bound's pick, paper's L, E0": paper.by_bound,
        f"tuned, data's L = {true_L:.3g}, E0 = {E0:.3g}": own.tuned,
    }
    rows = {k: (c.alpha, c.beta, c.horizon) for k, c in picks.items()}
    rows["grid point fitted to x0 = 10"] = (0.5, 0.7, 35)
    print(f"F(x0) - F* at x0 = 10: {E0:.4g}; true smoothness {true_L:.4g} (paper {s['L']:g}); "
          f"{TRIALS} runs each, mean +- standard error\n")
    print("| pick | alpha | beta | T | " + " | ".join(starts) + " |")
    print("|---|---|---|---|" + "---|" * len(starts))
    for name, (a, b, T) in rows.items():
        cells = []
        for x0 in starts.values():
            r = dp_heavy_ball(f, epsilon=1.0, steps=T, step_size=a, momentum=b,
                              trials=TRIALS, seed=9, x0=x0, trace=None)
            v = f.suboptimality(r.x_numpy())
            cells.append(f"{v.mean():.3g} +- {v.std(ddof=1) / np.sqrt(TRIALS):.2g}")
        print(f"| {name} | {a:.4g} | {b:.4g} | {T} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
