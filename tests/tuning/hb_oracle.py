"""An independent oracle of the quadratic-class DP heavy-ball bound (issue 19 item 2).

Written from the formulas, not from the library: eqs. (12), (13), (20), (21) for the noise, the
stationary variance for V, and the transient envelope through the three-term recurrence
p_{k+1} = a p_k - beta p_{k-1} (real roots) or beta^{(k-1)/2} min(k, 1/sqrt(1 - c^2))
(complex roots), where the library uses closed forms (Lucas sequences, arccosh).
"""

from __future__ import annotations

import numpy as np


def bound_table(alpha, beta, mu, L, d, n, m, eps, S, D, Tmax):
    """B(alpha, beta, T) for T = 1..Tmax, shape (points, Tmax), by direct recurrences."""
    alpha, beta = np.asarray(alpha, float)[:, None], np.asarray(beta, float)[:, None]
    T = np.arange(1, Tmax + 1, dtype=float)[None, :]
    eps0 = np.log1p(np.expm1(eps / T) * n / m)  # eq. (13)
    b = S / (m * eps0)  # eq. (12)
    samp = 0.0 if m == n else S * S / (4 * m) * (n - m) / (n - 1)  # eq. (21)
    E = 2 * d * b * b + samp  # eq. (20)
    V = np.zeros_like(alpha)
    for lam in (mu, L):
        V = np.maximum(V, alpha * (1 + beta) / ((1 - beta) * lam * (2 + 2 * beta - alpha * lam)))
    a = np.maximum(np.abs(1 + beta - alpha * mu), np.abs(1 + beta - alpha * L))
    real = a * a >= 4 * beta
    # p_k by p_{k+1} = a p_k - beta p_{k-1} (real roots: the envelope's value at the end point)
    p = np.zeros((alpha.shape[0], Tmax + 2))
    p[:, 1] = 1.0
    for k in range(1, Tmax + 1):
        p[:, k + 1] = a[:, 0] * p[:, k] - beta[:, 0] * p[:, k - 1]
    k = np.arange(Tmax + 2, dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.minimum(a / (2 * np.sqrt(beta)), 1.0)
        cplx = beta ** ((k - 1) / 2) * np.minimum(k, 1 / np.sqrt(1 - c * c))
    P = np.where(real, p, np.where(k == 0, 0.0, cplx))
    Ti = np.arange(1, Tmax + 1)
    tau = P[:, Ti + 1] ** 2 + (1 + beta**2) * P[:, Ti] ** 2 + beta**2 * P[:, Ti - 1] ** 2
    B = 0.5 * L * (2 * D * tau + V * E)
    return np.where(alpha * L < 2 * (1 + beta), B, np.inf)


def oracle_values(alpha, beta, mu, L, d, n, m, eps, S, D, Tmax=120):
    """min over T <= Tmax of B(alpha, beta, T) and the argmin."""
    B = bound_table(alpha, beta, mu, L, d, n, m, eps, S, D, Tmax)
    j = np.argmin(B, axis=1)
    return B[np.arange(B.shape[0]), j], j + 1
