"""Benchmark: horizon searches of ``dpbounds tune`` before and after issue 8 item 7, side by side.

Run:  python bench/bench_horizon.py [--quick]

Each row times the old method and the new one in this same process on the same inputs, checks
that they return the same answer, and records the peak traced memory (``tracemalloc``):

* heavy ball, (alpha, beta) grid: the old objective at every horizon for all 900 grid points
  (sequential 2x2 products, :func:`dpbounds.tuning.heavy_ball.naive_transient_sq`, O(k Tmax)
  memory) then
  ``argmin``, against the branch and bound on closed-form matrix powers (``_hb_search``);
* heavy ball, whole ``tune_heavy_ball``: the old tuner rebuilt from the same naive pieces (grid,
  Nelder-Mead, three reported choices) against the new one;
* (32) for DP-MASG with a first-stage override: the O(T^2) loop the momentum methods ran
  (:func:`~dpbounds.bounds.strongly_convex.noise_allocation.naive_select_horizon`) against the
  O(T) prefix sums of :func:`~dpbounds.bounds.strongly_convex.noise_allocation.select_horizon`;
* the subsampled rule: the old 40-candidate bracket search against the lower-bound-pruned
  exact search (the old one can return a worse horizon; the bound of each is printed).

The old methods are extrapolated where they would take too long (stated in the output). The
machine may be shared: compare the ratios of a row, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import math
import time
import tracemalloc

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

from dpbounds.bounds.strongly_convex.gradient_noise import (
    gradient_noise_variance,
    subsampling_variance,
)
from dpbounds.bounds.strongly_convex.heavy_ball import (
    classical_heavy_ball_parameters,
    heavy_ball_rate,
    stationary_variance,
)
from dpbounds.bounds.strongly_convex.nesterov import error_weights, masg_schedule, nesterov_momentum
from dpbounds.bounds.strongly_convex.noise_allocation import (
    naive_select_horizon,
    optimal_noise,
    select_horizon,
    select_horizon_subsampled,
)
from dpbounds.settings import logistic_regression
from dpbounds.tuning import tune_heavy_ball
from dpbounds.tuning.heavy_ball import _hb_search, naive_transient_sq

_S5 = logistic_regression()  # Kuru et al.'s Section-5 problem
FIG3 = dict(mu=_S5["mu"], L=_S5["L"], d=_S5["d"], n=_S5["n"], eps=_S5["epsilon"],
            S=_S5["sensitivity"], E0=_S5["initial_gap"])


def measure(fn, *args, **kwargs):
    """(result, seconds, peak MB) of one call."""
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return out, dt, peak


# ----------------------------------------------------------------------------- old heavy ball
def old_objective(alpha, beta, mu, L, d, n, eps, S, dist_sq, Tmax):
    """The pre-fix ``heavy_ball_dp_bound``: every horizon by sequential products."""
    alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
    beta = np.broadcast_to(np.asarray(beta, dtype=float), alpha.shape)
    out = np.full((alpha.size, Tmax), np.inf)
    ok = (beta < 1) & (beta >= 0)
    stable = np.zeros(alpha.size, dtype=bool)
    stable[ok] = np.asarray(heavy_ball_rate(alpha[ok], beta[ok], mu, L)) < 1
    if not np.any(stable):
        return out
    a, b = alpha[stable], beta[stable]
    trans = naive_transient_sq(a, b, np.linspace(mu, L, 24), Tmax) * 2.0 * dist_sq
    s2 = gradient_noise_variance(np.arange(1, Tmax + 1), S, n, n, eps)
    vmax = np.maximum(stationary_variance(a, b, mu), stationary_variance(a, b, L))
    out[stable] = 0.5 * L * (trans + d * vmax[:, None] * s2[None, :])
    return out


def old_tune(mu, L, d, n, eps, S, E0, Tmax, grid=30):
    """The pre-fix ``tune_heavy_ball`` (quadratic class), from the naive objective."""
    dist_sq = 2.0 * E0 / mu
    A, Bt = np.meshgrid(np.geomspace(1e-3 / L, 1.99 / L, grid), np.linspace(0.0, 0.995, grid))
    vals = old_objective(A.ravel(), Bt.ravel(), mu, L, d, n, eps, S, dist_sq, Tmax)
    k = int(np.argmin(np.min(vals, axis=1)))
    a0, b0 = A.ravel()[k], Bt.ravel()[k]

    def objective(z):
        v = old_objective(math.exp(z[0]), float(expit(z[1])), mu, L, d, n, eps, S, dist_sq,
                          Tmax)
        return float(np.log(np.min(v))) if np.isfinite(np.min(v)) else 1e300

    b0c = min(max(b0, 1e-4), 1 - 1e-4)
    res = minimize(objective, [math.log(a0), math.log(b0c / (1 - b0c))], method="Nelder-Mead",
                   options={"xatol": 1e-4, "fatol": 1e-6, "maxiter": 200})
    choices = [(math.exp(res.x[0]), float(expit(res.x[1]))), classical_heavy_ball_parameters(mu, L),
               (1 / L, float(nesterov_momentum(1 / L, mu)))]
    best = []
    for a, b in choices:
        v = old_objective(a, b, mu, L, d, n, eps, S, dist_sq, Tmax)[0]
        best.append((int(np.argmin(v)) + 1, float(np.min(v))))
    return best


def new_tune(mu, L, d, n, eps, S, E0, Tmax):
    r = tune_heavy_ball(mu, L, objective="bound",
                        d=d, n=n, epsilon=eps, sensitivity=S, initial_gap=E0,
                        max_horizon=Tmax)
    return [(c.horizon, c.bound) for c in (r.tuned, r.classical, r.paper_section5)]


# ----------------------------------------------------------------------------- old subsampled
def old_subsampled(mu, L, E0, d, S, n, m, eps, Tmax, method="masg", candidates=40):
    """The pre-fix rule: B on 40 geometric horizons, then every horizon next to the best."""
    full = masg_schedule(mu, L, horizon=Tmax)
    s2 = subsampling_variance(S, n, m)
    cache = {}

    def value(T):
        if T not in cache:
            w = error_weights(full.truncated(T), mu, L)
            cache[T] = (w.a0 * E0 + d * optimal_noise(w, S, n, m, eps).value
                        + s2 / 2 * float(np.exp(logsumexp(w.log_a))))
        return cache[T]

    grid = np.unique(np.round(np.geomspace(1, Tmax, candidates)).astype(int))
    vals = [value(int(T)) for T in grid]
    k = int(np.argmin(vals))
    for T in range(int(grid[max(k - 1, 0)]), int(grid[min(k + 1, grid.size - 1)]) + 1):
        value(T)
    T = min(cache, key=lambda t: (cache[t], t))
    return T, cache[T], len(cache)


def row(name, old, new, note=""):
    (_, o_t, o_mem), (_, n_t, n_mem) = old, new
    ratio = o_t / n_t if n_t > 0 else math.inf
    print(f"{name:<44}{o_t:>10.2f}s{o_mem:>9.0f}MB{n_t:>10.2f}s{n_mem:>9.0f}MB{ratio:>9.1f}x  "
          f"{note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a minute or two)")
    args = ap.parse_args()
    f = FIG3
    dist_sq = 2 * f["E0"] / f["mu"]
    print(f"{'':<44}{'old':>11}{'':>11}{'new':>11}{'':>11}{'ratio':>10}")

    A, Bt = np.meshgrid(np.geomspace(1e-3 / f["L"], 1.99 / f["L"], 30),
                        np.linspace(0.0, 0.995, 30))
    for Tmax in ((1000,) if args.quick else (1000, 4000)):
        old = measure(old_objective, A.ravel(), Bt.ravel(), f["mu"], f["L"], f["d"], f["n"],
                      f["eps"], f["S"], dist_sq, Tmax)
        new = measure(_hb_search, A.ravel(), Bt.ravel(), f["mu"], f["L"], f["d"], f["n"],
                      f["n"], f["eps"], f["S"], dist_sq, Tmax, joint=True, budget=10**9)
        same = math.isclose(np.min(old[0]), np.min(new[0][1]), rel_tol=1e-9)
        row(f"HB grid 30x30, Tmax={Tmax}", old, new, f"same minimum: {same}")

    for Tmax in ((300,) if args.quick else (300, 1000)):
        old = measure(old_tune, f["mu"], f["L"], f["d"], f["n"], f["eps"], f["S"], f["E0"], Tmax)
        new = measure(new_tune, f["mu"], f["L"], f["d"], f["n"], f["eps"], f["S"], f["E0"], Tmax)
        same = all(a[0] == b[0] and math.isclose(a[1], b[1], rel_tol=1e-9)
                   for a, b in zip(old[0][1:], new[0][1:]))
        tuned = f"tuned bound old {old[0][0][1]:.6g} / new {new[0][0][1]:.6g}"
        row(f"tune_heavy_ball, Tmax={Tmax}", old, new,
            f"Polyak & paper rows identical: {same}; {tuned}")
    sizes = (10**4, 10**6) if args.quick else (10**4, 10**5, 10**6, 10**7)
    for Tmax in sizes:
        new = measure(new_tune, f["mu"], f["L"], f["d"], f["n"], f["eps"], f["S"], f["E0"], Tmax)
        # old: every (alpha, beta) of the grid at every horizon, 900 Tmax floats at once
        old_note = f"(old: {900 * Tmax * 8 / 1e9:.3g} GB for one array)"
        print(f"{'tune_heavy_ball, Tmax=' + format(Tmax, '.0e'):<44}{old_note:>40}"
              f"{new[1]:>10.2f}s{new[2]:>9.0f}MB   T = {new[0][0][0]}")

    kw = dict(initial_error=f["E0"], d=f["d"], sensitivity=f["S"], n=f["n"], epsilon=f["eps"],
              method="masg", first_stage_length=7)
    for Tmax in ((500,) if args.quick else (500, 2000)):
        old = measure(naive_select_horizon, f["mu"], f["L"], max_horizon=Tmax, **kw)
        new = measure(select_horizon, f["mu"], f["L"], max_horizon=Tmax, **kw)
        err = float(np.max(np.abs(new[0].bounds / old[0][1] - 1)))
        row(f"(32), MASG n1=7, Tmax={Tmax}", old, new,
            f"same T: {old[0][0] == new[0].horizon}; max rel. diff {err:.1e}")
    for Tmax in (10**5, 10**7):
        new = measure(select_horizon, f["mu"], f["L"], max_horizon=Tmax, **kw)
        print(f"{'(32), MASG n1=7, Tmax=' + format(Tmax, '.0e'):<44}{'(old: O(T^2))':>40}"
              f"{new[1]:>10.2f}s{new[2]:>9.0f}MB   T = {new[0].horizon}")

    sub = dict(mu=0.02, L=5.1, E0=10.0, d=20, S=40.0, n=100_000, m=1000, eps=1.0)
    for Tmax in ((1000,) if args.quick else (1000, 10_000)):
        old = measure(old_subsampled, Tmax=Tmax, **sub)
        new = measure(select_horizon_subsampled, sub["mu"], sub["L"], initial_error=sub["E0"],
                      d=sub["d"], sensitivity=sub["S"], n=sub["n"], m=sub["m"],
                      epsilon=sub["eps"], max_horizon=Tmax, method="masg")
        evaluated = int(np.sum(~np.isnan(new[0].bounds)))
        row(f"subsampled MASG, Tmax={Tmax}", old, new,
            f"old T={old[0][0]} B={old[0][1]:.6g} ({old[0][2]} evaluated); new "
            f"T={new[0].horizon} B={new[0].bound:.6g} ({evaluated} evaluated, gap "
            f"{new[0].gap:g})")


if __name__ == "__main__":
    main()
