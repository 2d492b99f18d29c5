"""Kamath's convex DP-ERM baselines: accountant check, exponents, minimiser sensitivity."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from dpbounds.bounds.convex import noisy_projected_sgd, objective_perturbation, output_perturbation


def test_bst14_sigma_is_accepted_by_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    n, L, eps, delta = 100, 1.0, 1.0, 1e-5
    sigma = noisy_projected_sgd.bst14_sigma.evaluate(L=L, n=n, eps=eps, delta=delta)
    assert sigma**2 == pytest.approx(32 * L**2 * n**2 * math.log(n / delta)
                                     * math.log(1 / delta) / eps**2, rel=1e-14)
    # noise on n * grad l (sensitivity n L), one sample per step (q = 1/n), T = n^2 steps
    acc = rdp.RdpAccountant()
    event = dp_accounting.PoissonSampledDpEvent(1 / n, dp_accounting.GaussianDpEvent(
        sigma / (n * L)))
    acc.compose(event, n * n)
    eps_acct = acc.get_epsilon(delta)
    assert eps_acct <= eps  # the lecture's calibration is sufficient (and loose)
    assert eps_acct < 0.5 * eps


def test_bst14_exponents_match_the_lecture():
    s = noisy_projected_sgd.bst14_excess_risk.exponents(("d", "n", "eps", "log(1/delta)"))
    assert dict(s.powers) == {"d": sp.Rational(1, 2), "n": 0, "eps": -1,
                              "log(1/delta)": sp.Rational(1, 2)}
    avg = noisy_projected_sgd.bst14_excess_risk_average.exponents(("d", "n", "eps"))
    assert dict(avg.powers) == {"d": sp.Rational(1, 2), "n": -1, "eps": -1}


def test_output_perturbation_sensitivity_by_simulation():
    """Ridge-regularised logistic regression (1-Lipschitz, sum form) on replace-one
    neighbours: the minimiser moves by at most 2/lambda (DERIVED) <= 2n/lambda (lecture)."""
    rng = np.random.default_rng(3)
    n, dim, lam = 30, 3, 0.5
    X = rng.normal(size=(n, dim))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = rng.choice([-1.0, 1.0], size=n)

    def argmin(X, y):
        def f(w):
            m = y * (X @ w)
            return np.sum(np.logaddexp(0, -m)) + lam / 2 * w @ w

        def g(w):
            m = y * (X @ w)
            return -(X.T @ (y / (1 + np.exp(m)))) + lam * w

        return minimize(f, np.zeros(dim), jac=g, method="L-BFGS-B",
                        options={"gtol": 1e-12, "ftol": 1e-15}).x

    w0 = argmin(X, y)
    worst = 0.0
    for _ in range(20):
        X2, y2 = X.copy(), y.copy()
        j = rng.integers(n)
        v = rng.normal(size=dim)
        X2[j] = v / max(1.0, np.linalg.norm(v))
        y2[j] = -y[j]
        worst = max(worst, np.linalg.norm(argmin(X2, y2) - w0))
    assert worst <= 2 / lam
    op = output_perturbation
    ratio = (op.output_perturbation_sigma.evaluate(n=n, lam=lam, eps=0.5, delta=1e-5)
             / op.output_perturbation_sigma_tight.evaluate(lam=lam, eps=0.5, delta=1e-5))
    assert ratio == pytest.approx(n, rel=1e-12)


def test_objective_perturbation_sigma_formula():
    s = objective_perturbation.objective_perturbation_sigma.evaluate(eps=0.8, delta=1e-6, zeta=1.0)
    assert s**2 == pytest.approx((8 * math.log(2e6) + 3.2) / 0.64, rel=1e-14)


@settings(max_examples=40, deadline=None)
@given(n=st.floats(2.0, 1e6), d=st.floats(1.0, 1e4), steps=st.floats(1.0, 1e12),
       sigma=st.floats(1e-6, 1e6), lip=st.floats(0.01, 100.0), diam=st.floats(0.01, 100.0))
def test_bound_at_the_runs_horizon_is_shamir_zhang_written_out(n, d, steps, sigma, lip, diam):
    """The bound of a run of T steps at noise sigma, against Theorem 2 written out by hand:
    2 diam G (2 + log T)/sqrt(T) with G^2 = n^2 L^2 + d sigma^2, divided by n."""
    from dpbounds.bounds.convex.noisy_projected_sgd import bst14_excess_risk_at_steps

    got = bst14_excess_risk_at_steps.evaluate(n=n, d=d, T=steps, sigma=sigma, L=lip, diam=diam)
    G = math.sqrt(n * n * lip * lip + d * sigma * sigma)
    assert got == pytest.approx(2 * diam * G * (2 + math.log(steps)) / (n * math.sqrt(steps)),
                                rel=1e-10)


@pytest.mark.parametrize("n", [50.0, 300.0, 1e4])
def test_bound_at_the_runs_horizon_is_the_lectures_at_t_n_squared(n):
    """At the lecture's T = n^2 and sigma the run's bound is the registered (lecture) bound;
    at T = 20 n < n^2 it is larger (control: the horizon matters)."""
    from dpbounds.bounds.convex import noisy_projected_sgd as npsgd

    p = dict(L=2.0, d=5.0, delta=1e-5, diam=20.0, eps=1.0, n=n)
    sigma = float(npsgd.bst14_sigma.evaluate(ignore_extra=True, **p))
    at = npsgd.bst14_excess_risk_at_steps.evaluate(ignore_extra=True, T=n * n, sigma=sigma, **p)
    assert at == pytest.approx(float(npsgd.bst14_excess_risk_average.evaluate(**p)), rel=1e-12)
    short = npsgd.bst14_excess_risk_at_steps.evaluate(ignore_extra=True, T=20 * n, sigma=sigma,
                                                      **p)
    assert short > at * 1.01
    assert str(npsgd.bst14_excess_risk_at_steps.provenance) == "DERIVED"
