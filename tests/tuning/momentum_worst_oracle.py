"""An independent oracle of the worst-case error over quadratics of the DP linear momentum
method with a constant gamma, per horizon.

Written here from the method's definition, not from the library: on each eigenvalue of a grid
the iteration y_t = x_t + gamma (x_t - x_{t-1}), x_{t+1} = x_t + beta (x_t - x_{t-1})
- alpha (lam y_t + w_t) is run in its own (x, y) form, from the start x_{-1} = x_0 = 1 without
noise (the residual p_t) and from rest with one unit noise at step 0 (the impulse response
h_j = -x_{j+1} / alpha), and combined into the worst case of
:mod:`dpbounds.bounds.strongly_convex.quadratic_worst_case` with sampling variance 0 (start
F(x0) - F* <= E0 on the worst eigenvalue, per-coordinate noise variance ell):

    W(T) = max_lam [E0 p_T(lam)^2 + ell U_T(lam)] + (d - 1) ell max_lam U_T(lam),
    U_T(lam) = lam / 2 alpha^2 sum_{j<T} h_j(lam)^2.

A finite grid gives a lower end of the sup over lambda, so ``bound <= W_grid`` at sampled
points is a sufficient check of ``bound <= W``.
"""

from __future__ import annotations

import numpy as np


def lambda_grid(mu: float, L: float, size: int) -> np.ndarray:
    """Geometric and uniform points of [mu, L], both ends included."""
    if L <= mu:
        return np.array([mu])
    return np.unique(np.concatenate([np.geomspace(mu, L, size), np.linspace(mu, L, size),
                                     [mu, L]]))


def per_horizon(alpha: float, beta: float, gamma: float, lam: np.ndarray, Tmax: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(p_T^2, U_T) for T = 1..Tmax (rows) on each eigenvalue (columns)."""
    lam = np.asarray(lam, dtype=float)
    x, xp = np.ones_like(lam), np.ones_like(lam)
    z, zp = np.zeros_like(lam), np.zeros_like(lam)
    p2 = np.empty((Tmax, lam.size))
    U = np.empty((Tmax, lam.size))
    acc = np.zeros_like(lam)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(Tmax):
            y = x + gamma * (x - xp)
            x, xp = x + beta * (x - xp) - alpha * lam * y, x
            yz = z + gamma * (z - zp)
            z, zp = z + beta * (z - zp) - alpha * (lam * yz + (1.0 if t == 0 else 0.0)), z
            h = -z / alpha
            acc = acc + h * h
            p2[t] = x * x
            U[t] = 0.5 * lam * alpha * alpha * acc
    return p2, U


def worst(alpha: float, beta: float, gamma: float, lam: np.ndarray, Tmax: int, d: int,
          E0: float, ell: np.ndarray) -> np.ndarray:
    """W(T), T = 1..Tmax (``ell[T - 1]`` the noise variance of horizon T)."""
    p2, U = per_horizon(alpha, beta, gamma, lam, Tmax)
    ell = np.asarray(ell, dtype=float)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.max(E0 * p2 + ell * U, axis=1) + (d - 1) * ell[:, 0] * np.max(U, axis=1)
