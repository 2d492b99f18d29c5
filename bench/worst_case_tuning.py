"""Benchmark: tuning DP heavy ball by its worst-case error vs by its bound (issue 32).

Run:  python bench/worst_case_tuning.py OUT.json [--only K ...] [--trials 2000]

For each problem (kappa = L/mu in 1..1e6, eps in 0.01..10, d in 1..1e4, m/n in 0.01..1) it
runs ``tune_heavy_ball`` (``objective="error"``, the default; CPU seconds by
``time.process_time``) and reports, for the four rows (tuned by worst-case error, tuned by the
bound (25), Polyak's and the paper's Section-5 choice, each at its best horizon):

* ``worst``: the certified worst-case E[F(x_T)] - F* over every admissible quadratic (upper end;
  the attained end is within 2%);
* ``bound``: the rigorous (25) at the same (alpha, beta, T);
* ``mc`` and ``mc_se``: a Monte Carlo mean of the real algorithm (``dp_heavy_ball``) on the
  row's worst instance, with its standard error (only where n * d <= 2e6, the data set being
  held in memory), and ``z`` = (mc - attained) / se;
* a dense oracle (48 x 48 grid of the search box on 257 eigenvalues, Nelder-Mead from its 4
  best points, each end certified on the fine grid) against the tuned run's attained worst
  case, like with like (``search_gap``, negative: the tuner did better).

Numbers are comparable only on the same machine and load; the file names the CPU (lscpu).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import time

import numpy as np
from scipy.optimize import minimize

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.bounds.strongly_convex.gradient_noise import laplace_scale_at_horizon
from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case
from dpbounds.objectives import QuadraticObjective
from dpbounds.tuning import tune_heavy_ball
from dpbounds.tuning._quadratic import sampling_variance_of_instance
from dpbounds.tuning._worst_case_search import heavy_ball_worst_by_horizon, worst_case_lambda_grid

PROBLEMS = [
    # the problems first
    dict(mu=0.02, L=5.1028, d=20, n=10**5, epsilon=1.0, sensitivity=40.0, initial_gap=10.0,
         max_horizon=1000),                                          # Fig. 3 (the demo)
    dict(mu=1e-3, L=1.0, d=100, n=10**5, m=10**4, epsilon=0.1, sensitivity=1.0, initial_gap=5.0,
         max_horizon=3000),                                          # the repro
    dict(mu=0.1, L=1.0, d=10, n=10**4, epsilon=1.0, sensitivity=1.0, initial_gap=1.0,
         max_horizon=1000),                                          # kappa 10
    dict(mu=0.01, L=1.0, d=10, n=10**5, epsilon=1.0, sensitivity=1.0, initial_gap=1.0,
         max_horizon=2000),                                          # kappa 100
    dict(mu=1e-3, L=1.0, d=10, n=10**6, epsilon=1.0, sensitivity=1.0, initial_gap=1.0,
         max_horizon=5000),                                          # kappa 1e3
    dict(mu=1e-4, L=1.0, d=10, n=10**7, epsilon=1.0, sensitivity=1.0, initial_gap=10.0,
         max_horizon=20000),                                         # kappa 1e4
    dict(mu=1e-6, L=1.0, d=1, n=10**9, epsilon=10.0, sensitivity=1.0, initial_gap=10.0,
         max_horizon=10**5),                                         # kappa 1e6
    dict(mu=1.0, L=1.0, d=5, n=1000, epsilon=1.0, sensitivity=1.0, initial_gap=1.0,
         max_horizon=100),                                           # kappa 1
    dict(mu=0.25, L=1.0, d=1, n=100, m=10, epsilon=0.3, sensitivity=4.0, initial_gap=0.1,
         max_horizon=200),                                           # kappa 4, m/n = 0.1
    dict(mu=0.01, L=1.0, d=10**4, n=10**6, epsilon=10.0, sensitivity=1.0, initial_gap=1.0,
         max_horizon=2000),                                          # d = 1e4
    dict(mu=0.05, L=1.0, d=2, n=10**4, m=100, epsilon=0.01, sensitivity=1.0, initial_gap=1.0,
         max_horizon=1000),                                          # eps 0.01, m/n 0.01
    dict(mu=0.001, L=0.1, d=50, n=10**5, epsilon=10.0, sensitivity=0.1, initial_gap=1.0,
         max_horizon=10000),                                         # kappa 100, eps 10
    dict(mu=0.3, L=30.0, d=3, n=5000, m=500, epsilon=0.5, sensitivity=10.0, initial_gap=100.0,
         max_horizon=500),                                           # kappa 100, large E0
]


def _lap(p):
    m = p.get("m", p["n"])

    def f(T):
        b = np.asarray(laplace_scale_at_horizon(np.asarray(T, float), p["sensitivity"], p["n"],
                                                m, p["epsilon"]))
        return 2.0 * b * b
    return f


def _objective(p, n_lambda=257):
    m = p.get("m", p["n"])
    lam = worst_case_lambda_grid(p["mu"], p["L"], n_lambda)
    smp = sampling_variance_of_instance(p["sensitivity"], p["n"], m)
    lap = _lap(p)

    def f(a, b, horizons=False):
        T, W = heavy_ball_worst_by_horizon(np.atleast_1d(a), np.atleast_1d(b), lam, d=p["d"],
                                           Tmax=p["max_horizon"], laplace_var=lap,
                                           sampling_var=smp, initial_gap=p["initial_gap"],
                                           dist_sq=None)
        return (T, W) if horizons else W
    return f


def _certified(p, a, b, T):
    """The attained worst case of (a, b, T) on the fine grid of quadratic_worst_case."""
    m = p.get("m", p["n"])
    bT = float(laplace_scale_at_horizon(T, p["sensitivity"], p["n"], m, p["epsilon"]))
    return quadratic_worst_case(p["mu"], p["L"], p["d"], alpha=a, beta=b, steps=T,
                                laplace_var=2 * bT * bT,
                                sampling_var=sampling_variance_of_instance(p["sensitivity"],
                                                                           p["n"], m),
                                initial_gap=p["initial_gap"]).value


def _oracle(p):
    """48 x 48 grid of the search box on a 257-eigenvalue surrogate, Nelder-Mead from its 4
    best points, each end certified: the best attained worst case (this file's code)."""
    f = _objective(p)
    L = p["L"]
    xs = np.linspace(math.log(1e-3 / L), math.log(4 / L), 48)
    ys = np.linspace(0.0, math.log(1e4), 48)
    X, Y = np.meshgrid(xs, ys)
    F = f(np.exp(X.ravel()), -np.expm1(-Y.ravel()))
    best = math.inf
    for i in np.argsort(F)[:4]:
        r = minimize(lambda z: math.log(max(float(f(math.exp(z[0]), -math.expm1(-z[1]))[0]),
                                            1e-300)),
                     [X.ravel()[i], Y.ravel()[i]], method="Nelder-Mead",
                     options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 400})
        a, b = math.exp(r.x[0]), -math.expm1(-r.x[1])
        T = int(f(a, b, horizons=True)[0][0])
        best = min(best, _certified(p, a, b, T))
    return best


def _monte_carlo(p, c, trials, seed):
    m = p.get("m", p["n"])
    n, d, S, E0 = p["n"], p["d"], p["sensitivity"], p["initial_gap"]
    if n * d > 2e6 or not math.isfinite(c.computed) or c.horizon < 1:
        return None
    lap = 2 * float(laplace_scale_at_horizon(c.horizon, S, n, m, p["epsilon"])) ** 2
    wc = quadratic_worst_case(p["mu"], p["L"], d, alpha=c.alpha, beta=c.beta, steps=c.horizon,
                              laplace_var=lap, sampling_var=sampling_variance_of_instance(S, n, m),
                              initial_gap=E0)
    lam = wc.instance(d)
    k = 0 if wc.same_coordinate else 1
    offsets = np.zeros((n, d))
    offsets[: n // 2, k], offsets[n // 2:, k] = S / 2, -S / 2
    x_star = np.zeros(d)
    x_star[0] = math.sqrt(2 * E0 / lam[0])
    f = QuadraticObjective(lam, b=lam * x_star, offsets=offsets, offset_l1_radius=S / 2)
    run = dp_heavy_ball(f, epsilon=p["epsilon"], steps=c.horizon, step_size=c.alpha,
                        momentum=c.beta, batch_size=m, trials=trials, seed=seed)
    sub = run.trace[:, -1]
    mean, se = float(np.mean(sub)), float(np.std(sub, ddof=1) / math.sqrt(sub.size))
    return {"mc": mean, "mc_se": se, "z": (mean - wc.value) / se if se > 0 else 0.0}


def cpu_model() -> str:
    """The CPU's model name as ``lscpu`` prints it (the benches name the host they ran on)."""
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines()
                 if ln.startswith("Model name")), platform.processor())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", type=int, nargs="*")
    ap.add_argument("--trials", type=int, default=2000)
    args = ap.parse_args()
    out = {"cpu": cpu_model(), "problems": []}
    for k, p in enumerate(PROBLEMS):
        if args.only and k not in args.only:
            continue
        t0 = time.process_time()
        res = tune_heavy_ball(**p)
        cpu_tune = time.process_time() - t0
        oracle = _oracle(p)
        tuned_val = res.tuned.computed
        rows = []
        for c in res.choices():
            r = {"label": c.label, "alpha": c.alpha, "beta": c.beta, "T": c.horizon,
                 "worst": c.worst_case_upper, "attained": c.computed, "bound": c.bound}
            mc = _monte_carlo(p, c, args.trials, seed=1000 + k)
            if mc:
                r.update(mc)
            rows.append(r)
        entry = {"k": k, "setting": p, "cpu_tune_s": cpu_tune, "rows": rows,
                 "lower_bound": res.lower_bound, "oracle": oracle, "tuned_objective": tuned_val,
                 "search_gap": tuned_val / oracle - 1.0}
        out["problems"].append(entry)
        print(json.dumps({"k": k, "cpu": round(cpu_tune, 2),
                          "worst": [f"{r['worst']:.3g}" for r in rows],
                          "search_gap": f"{entry['search_gap']:+.2e}"}), flush=True)
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
