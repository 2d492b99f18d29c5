"""Is the tuner's search or the lower bound loose? A dense brute force over (alpha, beta, T)
on the two problems of ``bench/worst_case_bracket.md`` with the widest brackets (kappa 100 with
m < n; kappa 1e3 at d = 1), independent of the tuner's search and of the branch and bound (it
imports only the noise calibration): the worst case of every horizon 1..T_max on 8,000
eigenvalues (uniform and geometric) at every point of a grid in (log alpha, -log(1 - beta)),
a coarse one over the whole domain and a dense one around the valley.

Run: ``PYTHONPATH=. python bench/worst_case_bracket_dense.py`` (~6 CPU-minutes). Measured
2026-12-03 (2-core AMD EPYC, shared): the tuned points' worst cases on this grid are 0.243358
(m < n) and 5.13156e-05 (d = 1); the least grid values 0.243386 (50 x 50 around the valley;
0.244296 on the 60 x 60 global grid) and 5.16096e-05 (40 x 40; 5.23581e-05 global), 103 and
235 CPU-s: no better point, so the brackets' width was the lower bound's.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dpbounds.bounds.strongly_convex.gradient_noise import laplace_scale_at_horizon
from dpbounds.tuning._quadratic import sampling_variance_of_instance

# (mu, L, d, n, m, eps, S1, E0, Tmax), as in bench/worst_case_bracket.py
PROBLEMS = {"kappa 100, m < n": (0.01, 1.0, 3, 10**3, 10**2, 0.3, 2.0, 0.5, 1000),
            "kappa 1e3, d 1": (1e-3, 1.0, 1, 10**4, 10**4, 10.0, 1.0, 1.0, 1000)}
#: (global grid: log alpha, -log(1 - beta) ranges), (dense grid around the valley), stop level
GRIDS = {"kappa 100, m < n": ((-7, 1.386, 0, 8, 60, 1500), (-0.7, 0.7, 1.5, 2.4, 50, 4000), 0.26),
         "kappa 1e3, d 1": ((-7, 1.386, 0, 8, 60, 1500), (-0.3, 0.8, 2.3, 3.1, 40, 4000), 5.4e-5)}


def worst_by_horizon(alpha, beta, prob, nlam, stop_at=np.inf):
    """W(alpha, beta, T) for T = 1..Tmax (rows: points), the sup over eigenvalues taken on a
    grid (a lower end of the sup), by the recursions of the residual and impulse response."""
    mu, L, d, n, m, eps, S, E0, Tmax = prob
    Ts = np.arange(1, Tmax + 1, dtype=float)
    ell = 2 * np.asarray(laplace_scale_at_horizon(Ts, S, n, m, eps)) ** 2
    smp = sampling_variance_of_instance(S, n, m)
    lam = np.unique(np.concatenate([np.linspace(mu, L, nlam), np.geomspace(mu, L, nlam)]))
    al, be = np.asarray(alpha, float)[:, None], np.asarray(beta, float)[:, None]
    a = 1 + be - al * lam
    e, ep, h, hp, ssum = (np.ones_like(a), np.ones_like(a), np.ones_like(a), np.zeros_like(a),
                          np.zeros_like(a))
    out = np.full((al.shape[0], Tmax), np.inf)
    with np.errstate(all="ignore"):
        for T in range(1, Tmax + 1):
            e, ep = a * e - be * ep, e
            ssum = ssum + h * h
            h, hp = a * h - be * hp, h
            U, A, lv = 0.5 * lam * al ** 2 * ssum, E0 * e * e, ell[T - 1]
            mU = U.max(1)
            W = (A + (lv + smp) * U).max(1) + (d - 1) * lv * mU
            if d >= 2:
                W = np.maximum(W, (A + lv * U).max(1) + (smp + (d - 1) * lv) * mU)
            out[:, T - 1] = W
            if np.all((d * lv + smp) * mU >= stop_at):  # the noise alone only grows
                break
    return out


def scan(prob, x0, x1, y0, y1, k, nlam, stop):
    X, Y = np.meshgrid(np.linspace(x0, x1, k), np.linspace(y0, y1, k))
    al, be = np.exp(X.ravel()), -np.expm1(-Y.ravel())
    best = []
    for s in range(0, al.size, 100):
        W = worst_by_horizon(al[s:s + 100], be[s:s + 100], prob, nlam, stop)
        best += list(zip(W.min(1), al[s:s + 100], be[s:s + 100], W.argmin(1) + 1))
    return min(best)


def main() -> None:
    for label in sys.argv[1:] or PROBLEMS:
        prob = PROBLEMS[label]
        t = time.process_time()
        (g, dense, stop) = GRIDS[label]
        gb = scan(prob, *g, stop)
        db = scan(prob, *dense, stop)
        print(f"{label}: global grid least {gb[0]:.6g} at alpha {gb[1]:.5g}, beta {gb[2]:.5g}, "
              f"T {gb[3]}; dense grid least {db[0]:.6g} at alpha {db[1]:.5g}, beta {db[2]:.5g}, "
              f"T {db[3]} ({time.process_time() - t:.0f} CPU-s)", flush=True)


if __name__ == "__main__":
    main()
