"""An independent oracle of DP heavy ball's worst-case error over quadratics (issue 32 item 4).

Written from the formulas, not from the library's code: the Laplace scale of eqs. (12)-(13)
(each step eps/T-DP, deamplified for sampling m of n), the sampling variance of the data
+-S/2 e_j, the worst-case composition of
``dpbounds.bounds.strongly_convex.quadratic_worst_case``'s docstring (start and data in one
coordinate, or in two; the privacy noise in every coordinate), and the per-eigenvalue scalar
recursions run one step at a time (the library carries 2x2 second moments by congruences and
doubles its stride; here the impulse responses are summed directly). The search is a plain
grid of (log alpha, -log(1 - beta)) at every horizon, then Nelder-Mead from its best points.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from scipy.optimize import minimize


def noise_levels(p: dict, Tmax: int) -> tuple[np.ndarray, float]:
    """Per-coordinate Laplace variance 2 b_T^2 for T = 1..Tmax, and the sampling variance."""
    n, m, S, eps = p["n"], p.get("m", p["n"]), p["sensitivity"], p["epsilon"]
    T = np.arange(1, Tmax + 1, dtype=float)
    eps0 = np.log1p(np.expm1(eps / T) * n / m)  # eq. (13): eps/T = log(1 + m/n (e^eps0 - 1))
    b = S / (m * eps0)                          # eq. (12)
    k = n // 2                                   # k samples at +S/2, n - k at -S/2
    smp = 0.0 if m >= n else S * S * k * (n - k) / n**2 / m * (n - m) / (n - 1)
    return 2.0 * b * b, smp


def lambda_grid(mu: float, L: float, size: int) -> np.ndarray:
    """Uniform, geometric and cosine-spaced points of [mu, L] together (``size`` each). The
    cosine spacing clusters at both ends, where a polynomial of degree n has peaks 1/n^2
    apart; a search on a grid without it settles where a peak near L falls between points
    (measured: 0.3% low at L/mu = 1e3, T = 100)."""
    k = np.arange(size)
    cosine = 0.5 * (L + mu) + 0.5 * (L - mu) * np.cos(k * math.pi / max(size - 1, 1))
    return np.unique(np.clip(np.concatenate([np.linspace(mu, L, size),
                                             np.geomspace(mu, L, size), cosine]), mu, L))


def worst_by_horizon(alpha: np.ndarray, beta: np.ndarray, p: dict, Tmax: int,
                     lam: np.ndarray) -> np.ndarray:
    """Worst-case E[F(x_T)] - F* on the eigenvalues ``lam`` for T = 1..Tmax: (points, Tmax);
    ``inf`` where the method is unstable on the grid."""
    alpha = np.atleast_1d(np.asarray(alpha, float))[:, None]
    beta = np.atleast_1d(np.asarray(beta, float))[:, None]
    lam = np.asarray(lam, float)[None, :]
    d, E0 = p["d"], p["initial_gap"]
    ell, smp = noise_levels(p, Tmax)
    a = 1.0 + beta - alpha * lam
    # bias: e_{t+1} = a e_t - beta e_{t-1}, e_{-1} = e_0 = 1; noise: q_0 = 1, q_{-1} = 0
    e_prev, e = np.ones_like(a), np.ones_like(a)
    q_prev, q = np.zeros_like(a), np.ones_like(a)
    qsum = np.zeros_like(a)
    out = np.empty((alpha.shape[0], Tmax))
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(Tmax):
            e_prev, e = e, a * e - beta * e_prev
            qsum = qsum + q * q                  # sum_{j <= t} q_j^2 (the response at T = t+1)
            q_prev, q = q, a * q - beta * q_prev
            A = E0 * e * e
            U = 0.5 * lam * alpha * alpha * qsum  # unit-variance noise, weighted lambda / 2
            G, Sm = ell[t] * U, smp * U
            Gmax = np.max(G, axis=1)
            one = np.max(A + Sm + G, axis=1) + (d - 1) * Gmax
            if d >= 2:
                two = np.max(A + G, axis=1) + np.max(Sm + G, axis=1) + (d - 2) * Gmax
                one = np.maximum(one, two)
            out[:, t] = one
    stable = np.all((np.abs(a) < 1 + beta) & (beta < 1), axis=1)
    out[~stable] = np.inf
    return np.where(np.isfinite(out), out, np.inf)


def worst_at(alpha: float, beta: float, T: int, p: dict, lam: np.ndarray) -> float:
    """The worst case of one (alpha, beta, T) on the eigenvalues ``lam``."""
    return float(worst_by_horizon(np.array([alpha]), np.array([beta]), p, T, lam)[0, T - 1])


def fine_size(Tmax: int) -> int:
    """Eigenvalues per half of a grid fine enough for polynomials of degree 2 Tmax + 1 (8 per
    degree: a search on a coarser grid settles where a peak falls between its points)."""
    return 8 * (2 * Tmax + 1)


def dense_minimum(p: dict, Tmax: int, *, grid: int = 40, n_lambda: int = 257,
                  starts: int = 4) -> tuple[float, float, float, int]:
    """(value, alpha, beta, T): the best of a ``grid`` x ``grid`` search of log(alpha L) in
    [log 1e-3, log 4] and -log(1 - beta) in [0, log 1e4] at every T <= Tmax (on
    ``n_lambda`` eigenvalues), refined by Nelder-Mead from its ``starts`` best points on the
    fine grid of :func:`fine_size`, where the value is reported."""
    L = p["L"]
    lam = lambda_grid(p["mu"], L, n_lambda)
    fine = lambda_grid(p["mu"], L, fine_size(Tmax))
    xs = np.linspace(math.log(1e-3 / L), math.log(4 / L), grid)
    ys = np.linspace(0.0, math.log(1e4), grid)
    X, Y = (v.ravel() for v in np.meshgrid(xs, ys))
    F = np.concatenate([np.min(worst_by_horizon(np.exp(X[i:i + 64]), -np.expm1(-Y[i:i + 64]),
                                                p, Tmax, lam), axis=1)
                        for i in range(0, X.size, 64)])

    def best_T(z: np.ndarray) -> tuple[float, int]:
        row = worst_by_horizon(np.array([math.exp(z[0])]), np.array([-math.expm1(-z[1])]), p,
                               Tmax, fine)[0]
        k = int(np.argmin(row))
        return float(row[k]), k + 1

    def objective(z: np.ndarray) -> float:
        v = best_T(z)[0]
        return math.log(max(v, 1e-300)) if math.isfinite(v) else 1e300

    best = (math.inf, math.nan, math.nan, 0)
    for i in np.argsort(F)[:starts]:
        r = minimize(objective, [X[i], Y[i]], method="Nelder-Mead",
                     options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 300})
        v, T = best_T(r.x)
        if v < best[0]:
            best = (v, math.exp(r.x[0]), -math.expm1(-r.x[1]), T)
    return best


#: The oracle's searches on ``tests/tuning/test_worst_case_oracle.py``'s problems, stored: each
#: takes 8-10 CPU-s, and the suite re-runs two of them (``test_the_stored_oracle_is_the_oracles``)
#: while every problem's stored point is re-evaluated. Regenerate with
#: ``python -m tests.tuning.hb_worst_oracle`` after changing a problem or this file.
REFERENCE = Path(__file__).with_name("hb_worst_oracle_reference.json")


def problem_key(p: dict, Tmax: int) -> str:
    """A problem's key in :data:`REFERENCE`: every parameter, so a changed problem has no entry."""
    return json.dumps({**p, "max_horizon": Tmax}, sort_keys=True)


def reference() -> dict[str, dict]:
    """The stored searches: key -> {value, alpha, beta, T}."""
    return json.loads(REFERENCE.read_text())


def main() -> None:
    from tests.tuning.test_worst_case_oracle import ORACLE_SEARCH, PROBLEMS

    table = {}
    for p, Tmax in PROBLEMS:
        value, a, b, T = dense_minimum(p, Tmax, **ORACLE_SEARCH)
        table[problem_key(p, Tmax)] = dict(value=value, alpha=a, beta=b, T=T)
        print(f"{problem_key(p, Tmax)}: {value:.9g} at alpha={a:.6g} beta={b:.6g} T={T}")
    REFERENCE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
