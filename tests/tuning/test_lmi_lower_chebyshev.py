"""The Chebyshev (one polynomial for all lambda) term of :mod:`dpbounds.tuning._lmi_lower`.

Oracle: the exact noise-free error of heavy ball (x_{-1} = x_0) on F = lam/2 ||x - x*||^2 with
||e0||^2 = D' = min(D, 2 E0 / lam), by its own 2x2 recursion, maximised over a dense lam grid in
[mu, L]. The bound must lie below it for every (alpha, beta, T); a negative control (the plain
gradient-descent rate ((kappa-1)/(kappa+1))^(2T), which momentum beats) must be caught.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.tuning._lmi_lower import chebyshev_bias_bound, linear_method_lower_bound


def worst_bias(alpha, beta, T, mu, L, D, E0):
    lams = np.concatenate([np.geomspace(mu, L, 4001), np.linspace(mu, L, 4001)])
    p_prev = np.ones_like(lams)
    p = np.ones_like(lams)
    for _ in range(T):
        p, p_prev = (1.0 + beta - alpha * lams) * p - beta * p_prev, p
    return float(np.max(0.5 * lams * np.minimum(D, 2.0 * E0 / lams) * p * p))


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 4.0), st.floats(0.0, 0.999), st.integers(1, 80), st.floats(-2.0, 1.0),
       st.floats(-3.0, 1.0))
def test_chebyshev_term_is_below_the_exact_worst_bias(lk, beta, T, la, lD):
    mu, L = 1.0, 10.0**lk + 1.0
    alpha = 10.0**la / L
    D, E0 = 10.0**lD, 0.3 * 10.0**lD
    bound = float(chebyshev_bias_bound(mu, L, D, E0, T))
    assert bound <= worst_bias(alpha, beta, T, mu, L, D, E0) * (1.0 + 1e-9)


def test_negative_control_gradient_descent_rate_is_caught():
    mu, L, D, E0, T = 1.0, 100.0, 1.0, 0.5, 60
    kappa = L / mu
    a = 4.0 / (np.sqrt(L) + np.sqrt(mu)) ** 2  # Polyak's heavy ball
    b = ((np.sqrt(kappa) - 1.0) / (np.sqrt(kappa) + 1.0)) ** 2
    wrong = min(0.5 * mu * D, E0) * ((kappa - 1.0) / (kappa + 1.0)) ** (2 * T)
    exact = worst_bias(a, b, T, mu, L, D, E0)
    assert exact < wrong  # the wrong "bound" is above the exact error: caught
    assert float(chebyshev_bias_bound(mu, L, D, E0, T)) <= exact


def test_lower_bound_not_below_the_swap_free_linear_mmse_bound():
    # the new bound is >= the old max_lam min_T linear-MMSE value (Fig-3 problem)
    from dpbounds.bounds.strongly_convex.gradient_noise import dp_noise_level
    from dpbounds.tuning._lmi_lower import linear_mmse_error

    mu, L, d, n, eps, S, D, Tmax = 0.02, 5.1028, 20, 10**5, 1.0, 40.0, 10.0, 2000
    E0 = 0.5 * L * D
    lams = np.geomspace(mu, L, 65)
    T = np.arange(1, Tmax + 1, dtype=float)
    E = np.asarray(dp_noise_level(S, d, n, n, eps, T))
    old = float(np.max(np.min(linear_mmse_error(lams[:, None], T, E, D, E0), axis=1)))
    new = linear_method_lower_bound(mu, L, d, n, n, eps, S, D, E0, Tmax)
    assert new >= old
