"""The DP-MASG verify study (Kuru et al. Section 4.2): its independent schedule, weights and
exact error, and the study's verdicts on correct code and on mutants.

Oracles: the stage boundaries of (33) by hand at kappa = 20 (n_1 = ceil(2 sqrt 20 ln sqrt 20)
= 14, C = ceil(sqrt 20 ln 8) = 10: stages of 14, 40, 80, 160 steps); (34)'s weights as explicit
products; the exact error with restarts against a second derivation (the bounds' 2x2
second-moment propagation, ``nesterov_expected_error_quadratic(restart=True)``). Negative
controls: the recursion without restarts differs; the study fails the mutant that keeps the
momentum across stage changes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.verify import exact as ex
from dpbounds.verify import scaling_study
from dpbounds.verify.studies.masg import masg_schedule_33, weights_34


def test_schedule_33_by_hand() -> None:
    alpha, beta, restarts = masg_schedule_33(1.0, 20.0, 140)
    assert list(np.flatnonzero(restarts)) == [14, 54, 134]  # stages of 14, 40, 80, ...
    np.testing.assert_allclose(alpha[[0, 13, 14, 53, 54, 133, 134]],
                               [1 / 20, 1 / 20, 1 / 320, 1 / 320, 1 / 1280, 1 / 1280,
                                1 / 5120])
    s = math.sqrt(1 / 320)
    assert beta[20] == pytest.approx((1 - s) / (1 + s), rel=1e-15)
    a2, _, r2 = masg_schedule_33(1.0, 20.0, 140, c=0.5)
    np.testing.assert_allclose(a2, 0.5 * alpha)
    assert np.array_equal(r2, restarts)


def test_weights_34_are_the_printed_products() -> None:
    mu, L = 0.5, 2.0
    alpha = np.array([0.5, 0.5, 0.125, 0.125])
    stage = np.array([1, 1, 2, 2])
    a0, a = weights_34(alpha, stage, mu, L)
    q = 1 - np.sqrt(mu * alpha)
    assert a0 == pytest.approx(2 * np.prod(q))
    # a_{T,1}: 2^(2-1) q_2 q_3 q_4 alpha_1 (1 + alpha_1 L); a_{T,4}: alpha_4 (1 + alpha_4 L)
    assert a[0] == pytest.approx(2 * q[1] * q[2] * q[3] * 0.5 * 2.0)
    assert a[3] == pytest.approx(0.125 * 1.25)


def test_exact_error_with_restarts_matches_a_second_derivation() -> None:
    from dpbounds.bounds.strongly_convex.nesterov import nesterov_expected_error_quadratic
    from dpbounds.schedules import masg_schedule

    mu, L, T = 0.1, 1.0, 60
    lam = np.array([0.1, 0.3, 1.0])
    e0 = np.array([1.0, -0.5, 0.2])
    alpha, beta, restarts = masg_schedule_33(mu, L, T)
    b = np.linspace(0.01, 0.03, T)
    value, _ = ex.momentum_exact(lam, e0, kind="nag", step_sizes=alpha, momenta=beta,
                                 laplace_scales=b, restarts=restarts)
    other = nesterov_expected_error_quadratic(masg_schedule(mu, L, horizon=T), mu, lam,
                                              2.0 * b**2, e0, restart=True)[-1]
    assert value == pytest.approx(float(other), rel=1e-10)
    kept, _ = ex.momentum_exact(lam, e0, kind="nag", step_sizes=alpha, momenta=beta,
                                laplace_scales=b)
    assert abs(kept - value) > 0.05 * value  # negative control: the restarts matter here


def test_masg_study_passes_and_the_no_restart_mutant_fails() -> None:
    """At N = 1000, eps = 4 the horizons are 92 and 36 steps (three and two stages); measured
    (1500 trials, seed 0): PASS, and the no-restart mutant fails both exact checks."""
    ok = scaling_study("strongly_convex.masg", vary={"d": [2, 8]}, trials=1500)
    assert ok.status == "PASS"
    assert all(p["stages"] >= 2 for p in ok.params)
    bad = scaling_study("strongly_convex.masg", vary={"d": [2, 8]}, trials=1500,
                        mutation="masg_no_restart")
    assert bad.status == "FAIL"
    failed = {v.case for v in bad.verdicts if not v.holds}
    assert {"subopt_exact over d", "subopt_exact_uniform over d"} <= failed
