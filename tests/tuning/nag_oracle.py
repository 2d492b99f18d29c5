"""An independent oracle of the DP-NAG / DP-MASG horizon-and-allocation bound (issue 19 item 2).

Written from the paper's formulas, not from the library: the schedules (Theorem 4.1: constant
step c/L; (33): n_1 = ceil(2 sqrt(kappa) ln sqrt(kappa)), n_k = 2^k ceil(sqrt(kappa) (p+2) ln 2),
alpha_k = c / (4^k L)), the weights of (29)/(34) as direct products (O(T^2), where the library
uses suffix sums in log-space), and for m = n the optimum of (30) over budgets summing to
epsilon by Lagrange/Hoelder: min sum_t a_t (S/(n e_t))^2 d = d (S/(n eps))^2 (sum_t a_t^(1/3))^3.
"""

from __future__ import annotations

import math

import numpy as np


def schedule(method, mu, L, T, c=1.0, p=1.0):
    """(steps, stage index) of the first T iterations."""
    if method == "nag":
        return np.full(T, c / L), np.ones(T, dtype=int)
    kappa = L / mu
    n1 = max(1, math.ceil(2.0 * math.sqrt(kappa) * math.log(math.sqrt(kappa)) - 1e-12))
    C = math.ceil(math.sqrt(kappa) * (p + 2) * math.log(2.0) - 1e-12)
    steps, stages, k = [], [], 1
    while len(steps) < T:
        n_k = n1 if k == 1 else 2**k * C
        alpha = c / L if k == 1 else c / (4.0**k * L)
        take = min(n_k, T - len(steps))
        steps += [alpha] * take
        stages += [k] * take
        k += 1
    return np.array(steps), np.array(stages)


def weights(method, mu, L, T, c=1.0):
    """a_{T,0} and a_{T,t}, t = 1..T, by direct products."""
    alpha, s = schedule(method, mu, L, T, c)
    f = np.maximum(1.0 - np.sqrt(mu * alpha), 0.0)  # contraction factors, t = 1..T
    sT = s[-1]
    a0 = 2.0 ** (sT - 1) * np.prod(f)
    a = np.array([2.0 ** (sT - s[t]) * np.prod(f[t + 1:]) * alpha[t] * (1 + alpha[t] * L)
                  for t in range(T)])
    return a0, a


def best_horizon(method, mu, L, d, n, eps, S, E0, Tmax, c=1.0):
    """min over T <= Tmax of a_{T,0} E0 + d (S/(n eps))^2 (sum_t a_{T,t}^(1/3))^3, and the T."""
    vals = []
    for T in range(1, Tmax + 1):
        a0, a = weights(method, mu, L, T, c)
        vals.append(a0 * E0 + d * (S / (n * eps)) ** 2 * np.sum(np.cbrt(a)) ** 3)
    vals = np.array(vals)
    j = int(np.argmin(vals))
    return float(vals[j]), j + 1


def subsampled_value(a0, a, d, n, m, eps, S, E0):
    """(29)/(34) at the optimal budgets for m < n by the KKT conditions, solved by bisection.

    Budgets e_t > 0 with sum e_t = eps, scales b_t = S / (m g(e_t)),
    g(e) = ln(1 + (n/m)(e^e - 1)) (eq. (13) inverted): minimise sum_t a_t d b_t^2. The
    objective is convex (1/g^2 convex decreasing), so e_t solves 2 a_t g'(e)/g(e)^3 = lam (left
    side decreasing in e) and lam is set by the budget; both by bisection in log-space.
    """
    r = n / m

    def g(e):
        return np.log1p(r * np.expm1(e))

    def gp(e):
        return r * np.exp(e) / (1.0 + r * np.expm1(e))

    def budgets(log_lam):
        lo = np.full(a.shape, math.log(eps) - 80.0)
        hi = np.full(a.shape, math.log(eps))
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            e = np.exp(mid)
            big = np.log(2.0 * a * gp(e)) - 3.0 * np.log(g(e)) > log_lam
            lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
        return np.exp(0.5 * (lo + hi))

    llo, lhi = -200.0, 200.0
    for _ in range(50):
        mid = 0.5 * (llo + lhi)
        if np.sum(budgets(mid)) > eps:
            llo = mid
        else:
            lhi = mid
    e = budgets(lhi)  # sum(e) <= eps: feasible
    e *= eps / np.sum(e) * (1 - 1e-15) if np.sum(e) > eps else 1.0
    sig = S * S / (4.0 * m) * (n - m) / (n - 1)
    primal = a0 * E0 + np.sum(a * (d * (S / (m * g(e))) ** 2 + sig / 2.0))
    return float(primal)


def best_horizon_subsampled(method, mu, L, d, n, m, eps, S, E0, Tmax, c=1.0):
    vals = []
    for T in range(1, Tmax + 1):
        a0, a = weights(method, mu, L, T, c)
        vals.append(subsampled_value(a0, a, d, n, m, eps, S, E0))
    vals = np.array(vals)
    j = int(np.argmin(vals))
    return float(vals[j]), j + 1


# ----------------------------------------------------------------------------- m < n, brute force
def subsampled_noise_scipy(a, n, m, eps, S, restarts=3, seed=0):
    """min over budgets e > 0, sum e = eps, of sum_t a_t (S / (m g(e_t)))^2, by scipy (BFGS).

    Independent of the library's KKT/Newton code path: the budgets are eps * softmax(z) (any z is
    feasible), the objective is log sum_t a_t / g(e_t)^2 with its gradient by the chain rule, and
    BFGS runs from ``restarts`` starts (uniform, the m = n rule a^(1/3), random; seeded) keeping
    the best. g(e) = ln(1 + (n/m)(e^e - 1)) is eq. (11) inverted. Steps with a_t = 0 get no
    budget (their noise never reaches the bound). Returns a feasible value: >= the optimum.
    """
    from scipy.optimize import minimize

    a = np.asarray(a, dtype=float)
    a = a[a > 0]
    r = n / m
    la = np.log(a)

    def budgets(z):
        w = np.exp(z - z.max())
        return eps * w / w.sum()

    def fun(z):
        e = budgets(z)
        g = np.log1p(r * np.expm1(e))
        terms = a / g**2
        tot = terms.sum()
        dg = r * np.exp(e) / (1.0 + r * np.expm1(e))
        G = -2.0 * terms * dg / g / tot          # d log f / d e_t
        grad = e * (G - np.dot(G, e) / eps)       # through e = eps softmax(z)
        return math.log(tot), grad

    rng = np.random.default_rng(seed)
    starts = [np.zeros(a.size), la / 3.0] + [rng.normal(0, 2, a.size)
                                              for _ in range(max(restarts - 2, 0))]
    best = math.inf
    for z0 in starts[:max(restarts, 1)]:
        res = minimize(fun, z0, jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 2000})
        best = min(best, math.exp(float(res.fun)))
    return (S / m) ** 2 * best


def best_horizon_subsampled_scipy(method, mu, L, d, n, m, eps, S, E0, Tmax, c=1.0, restarts=3):
    """min over T <= Tmax of a_{T,0} E0 + d V*(T) + sigma_s^2/2 sum_t a_{T,t}, V* by scipy."""
    sig = S * S / (4.0 * m) * (n - m) / (n - 1)  # (21)
    vals = []
    for T in range(1, Tmax + 1):
        a0, a = weights(method, mu, L, T, c)
        vals.append(a0 * E0 + d * subsampled_noise_scipy(a, n, m, eps, S, restarts)
                    + sig / 2.0 * float(np.sum(a)))
    vals = np.array(vals)
    j = int(np.argmin(vals))
    return float(vals[j]), j + 1, vals
