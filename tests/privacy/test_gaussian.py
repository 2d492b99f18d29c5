"""Gaussian mechanism: classic and analytic calibration.

Oracles: the Dwork-Roth closed form, dp_accounting's exact Gaussian PLD / get_sigma_gaussian,
mpmath evaluation of Balle & Wang's delta(eps), and a Monte Carlo estimate of the privacy
profile from the privacy-loss random variable.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.privacy import gaussian as g

mp.mp.dps = 60


def _delta_mp(sigma, eps, sens):
    a = mp.mpf(sens) / (2 * mp.mpf(sigma))
    b = mp.mpf(eps) * mp.mpf(sigma) / sens
    return mp.ncdf(a - b) - mp.e ** mp.mpf(eps) * mp.ncdf(-a - b)


def test_classic_closed_form():
    s = g.classic_gaussian_sigma(0.5, 1e-5, 2.0)
    assert s == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-15)
    assert g.classic_gaussian_epsilon(s, 1e-5, 2.0) == pytest.approx(0.5, rel=1e-14)
    with pytest.raises(ValueError, match="epsilon"):
        g.classic_gaussian_sigma(1.0, 1e-5)
    with pytest.raises(ValueError, match="sigma"):
        g.classic_gaussian_epsilon(0.1, 1e-5)


@pytest.mark.parametrize(
    "sigma,eps,sens", [(1.0, 0.5, 1.0), (10.0, 0.1, 1.0), (0.3, 20.0, 2.0), (50.0, 0.01, 3.0),
                       (2.0, 10.0, 1.0)]
)
def test_delta_matches_mpmath(sigma, eps, sens):
    ref = float(_delta_mp(sigma, eps, sens))
    assert g.gaussian_delta(sigma, eps, sens) == pytest.approx(ref, rel=1e-11)


def test_delta_matches_dp_accounting_pld():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    for sigma in [0.8, 3.0]:
        pld = pldlib.from_gaussian_mechanism(sigma, sensitivity=1.0,
                                             value_discretization_interval=1e-4)
        for eps in [0.1, 1.0, 3.0]:
            ours = g.gaussian_delta(sigma, eps, 1.0)
            ref = pld.get_delta_for_epsilon(eps)
            assert ours <= ref * (1 + 1e-9) + 1e-15  # PLD is pessimistic
            assert ours == pytest.approx(ref, rel=2e-3, abs=1e-12)
    del dpa


def test_analytic_sigma_matches_dp_accounting_and_beats_classic():
    pytest.importorskip("dp_accounting")
    from dp_accounting import gaussian_mechanism as gm

    worst = 0.0
    for eps in [0.01, 0.1, 0.5, 0.99, 2.0, 10.0]:
        for delta in [1e-2, 1e-5, 1e-10]:
            ours = g.analytic_gaussian_sigma(eps, delta, 1.0)
            ref = gm.get_sigma_gaussian(eps, delta)
            worst = max(worst, abs(ours - ref) / ref)
            assert g.gaussian_delta(ours, eps) <= delta
            if eps < 1:
                assert ours <= g.classic_gaussian_sigma(eps, delta)
    assert worst < 1e-6


def test_privacy_profile_monte_carlo():
    # delta(eps) = E_{Z ~ N(Delta, sigma^2)}[(1 - e^{eps - L(Z)})_+],
    # L(z) = (2 z Delta - Delta^2) / (2 sigma^2)
    rng = np.random.default_rng(1)
    sigma, eps, sens = 1.5, 0.7, 1.0
    z = rng.normal(sens, sigma, size=2_000_000)
    loss = (2 * z * sens - sens**2) / (2 * sigma**2)
    samples = np.maximum(0.0, 1.0 - np.exp(eps - loss))
    mc, se = samples.mean(), samples.std() / math.sqrt(samples.size)
    assert abs(g.gaussian_delta(sigma, eps, sens) - mc) < 5 * se


@settings(max_examples=80, deadline=None)
@given(eps=st.floats(1e-3, 50.0), log10_delta=st.floats(-12.0, -2.0), sens=st.floats(1e-3, 1e3))
def test_analytic_never_overshoots(eps, log10_delta, sens):
    delta = 10.0**log10_delta
    s = g.analytic_gaussian_sigma(eps, delta, sens)
    assert np.isfinite(s) and s > 0
    assert g.gaussian_delta(s, eps, sens) <= delta
    assert g.gaussian_delta(s * (1 - 1e-7), eps, sens) > delta  # tight
    # self-consistency of the two inversions (rounding noise of the profile ~1e-10)
    e = g.gaussian_epsilon(s, delta, sens)
    assert e <= eps * (1 + 1e-9) and e == pytest.approx(eps, rel=1e-6)


@settings(max_examples=80, deadline=None)
@given(sigma=st.floats(1e-3, 1e4), eps=st.floats(0.0, 1e3), sens=st.floats(1e-3, 1e3))
def test_delta_is_a_probability(sigma, eps, sens):
    d = g.gaussian_delta(sigma, eps, sens)
    assert 0.0 <= d <= 1.0 and np.isfinite(d)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: g.analytic_gaussian_sigma(-1.0, 1e-5), "epsilon"),
        (lambda: g.analytic_gaussian_sigma(1.0, 0.0), "delta"),
        (lambda: g.analytic_gaussian_sigma(1.0, 1e-5, -1.0), "sensitivity"),
        (lambda: g.gaussian_delta(0.0, 1.0), "sigma"),
        (lambda: g.gaussian_epsilon(1.0, 2.0), "delta"),
        (lambda: g.classic_gaussian_sigma(0.5, 1e-5, float("inf")), "sensitivity"),
    ],
)
def test_invalid_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()
