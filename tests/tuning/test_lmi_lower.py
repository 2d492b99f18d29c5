"""The LMI-class tuner's proven lower bound (:mod:`dpbounds.tuning._lmi_lower`).

Oracle: the exact mean squared error of heavy ball on the instance of the module docstring
(one eigenvalue lam in every coordinate, start +-sqrt(D'/d), noise of variance E_T/d per
coordinate), propagated here by its own 2x2 mean/covariance recursion. The linear-MMSE bound
must lie below it for every (alpha, beta, T); a negative control (the unbiased Cramer-Rao value
E_T / (2 T lam), which ignores the prior) is not a lower bound and the check catches it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.tuning import tune_heavy_ball
from dpbounds.tuning._lmi_lower import linear_mmse_error


def exact_error(alpha, beta, lam, T, noise, Dp):
    """E[F(x_T)] - F* summed over coordinates, start ||e0||^2 = Dp (x_{-1} = x_0)."""
    M = np.array([[1.0 + beta - alpha * lam, -beta], [1.0, 0.0]])
    mean = np.array([1.0, 1.0]) * np.sqrt(Dp)  # one coordinate carrying all of ||e0||^2
    cov = np.zeros((2, 2))
    for _ in range(T):
        mean = M @ mean
        cov = M @ cov @ M.T
        cov[0, 0] += alpha * alpha * noise  # total noise E_T (sum over coordinates)
    return 0.5 * lam * (mean[0] ** 2 + cov[0, 0])


@settings(max_examples=60, deadline=None)
@given(st.floats(-3.0, 1.0), st.floats(0.0, 0.99), st.floats(-4.0, 0.0),
       st.integers(1, 60), st.floats(-8.0, 2.0), st.floats(-1.0, 3.0))
def test_linear_mmse_bound_is_below_the_exact_error(la, beta, llam, T, lnoise, lD):
    lam = 10.0**llam
    alpha = 10.0**la * 2.0 * (1.0 + beta) / lam  # up to the stability limit 2(1 + beta)/lam
    if alpha * lam >= 2.0 * (1.0 + beta):
        alpha = 0.999 * 2.0 * (1.0 + beta) / lam
    noise, D = 10.0**lnoise, 10.0**lD
    lb = float(linear_mmse_error(lam, T, noise, D, 1e300))
    assert lb <= exact_error(alpha, beta, lam, T, noise, D) * (1 + 1e-9)


def test_negative_control_the_unbiased_bound_is_not_a_lower_bound():
    lam, T, noise, D = 1.0, 5, 10.0, 1.0
    fake = noise / (2.0 * T * lam)  # Cramer-Rao for unbiased estimates: ignores ||e0|| <= D
    assert exact_error(1e-4, 0.0, lam, T, noise, D) < fake
    assert linear_mmse_error(lam, T, noise, D, 1e300) <= exact_error(1e-4, 0.0, lam, T, noise, D)


def test_lmi_tuning_reports_a_proven_bracket():
    res = tune_heavy_ball(0.1, 1.0, objective="bound",
                          d=5, n=10**4, epsilon=1.0, sensitivity=1.0, initial_gap=1.0,
                          max_horizon=50, grid=3, function_class="smooth_strongly_convex")
    assert 0 < res.lower_bound <= res.tuned.bound
    assert res.tuned.bound == pytest.approx(res.lower_bound * (1 + res.certified_gap),
                                            rel=1e-12)
    assert "optimum bracketed" in res.table()
