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


# ---- extreme regimes (issue 8, item 3) --------------------------------------------------------
# Oracle: Balle & Wang's Theorem 8 exactly as written, Phi(a - b) - e^eps Phi(-a - b), in mpmath
# log-space with enough digits for the cancellation (an asymptotic series far in the tail, where
# mpmath's erfc gives up). The library uses a different formulation (Mills ratios), so this is
# an independent check.


def _log_ncdf_mp(u):
    if u < -1e6:
        v = 1 / (u * u)
        return (-u * u / 2 - mp.log(-u) - mp.log(2 * mp.pi) / 2
                + mp.log(1 - v + 3 * v**2 - 15 * v**3 + 105 * v**4 - 945 * v**5))
    if u > 1e6:
        return mp.mpf(0)
    return mp.log(mp.ncdf(u))


def _delta_exact(sigma, eps, sens, dps=400):
    with mp.workdps(dps):
        s, e, d = mp.mpf(sigma), mp.mpf(eps), mp.mpf(sens)
        a, b = d / (2 * s), e * s / d
        l1, l2 = _log_ncdf_mp(a - b), e + _log_ncdf_mp(-a - b)
        return mp.mpf(0) if l2 >= l1 else mp.exp(l1) * -mp.expm1(l2 - l1)


@pytest.mark.parametrize("ratio", [1e8, 1e9, 1e10, 1e12, 1e15, 1e50])
def test_epsilon_never_below_exact_for_huge_sensitivity_over_sigma(ratio):
    # before the fix: Delta/sigma >= 1e9 gave eps with delta(eps) = 0.9999995 (vs 1e-5)
    delta = 1e-5
    eps = g.gaussian_epsilon(1.0, delta, ratio)
    assert _delta_exact(1.0, eps, ratio, dps=120) <= delta
    # tight: about ratio^2/2 + ratio * z_{1-delta} (z = 4.2649), to float resolution
    assert eps == pytest.approx(ratio**2 / 2 + 4.264890793922825 * ratio, rel=1e-12)


@pytest.mark.parametrize(
    "sigma,eps,sens",
    [
        (1.0, 5e17 - 5e9, 1e9),  # delta ~ 1, was -0.0
        (1.0, 5e17, 1e9),  # delta = 1/2, was -0.0
        (1.0, 5e19 - 2e11, 1e10),  # delta ~ 0.977, was -0.0
        (1.0, 5e17 + 5e9, 1e9),  # delta ~ 2.9e-7, was -0.0
        (1e20, 1e-300, 1.0),  # Delta/sigma = 1e-20: delta ~ 4e-21, was -0.0
        (1e-200, 1e-300, 1e-300),  # was -0.0
        (1e300, 0.0, 1e-20),  # 4e-321, subnormal: was 3.987e-321
        (1.0, 1.0, 1.0),
        (28326968.974842384, 1e-6, 1.0),  # the sigma of analytic_gaussian_sigma(1e-6, 1e-185)
    ],
)
def test_delta_never_understated_in_extreme_regimes(sigma, eps, sens):
    exact = _delta_exact(sigma, eps, sens)
    ours = g.gaussian_delta(sigma, eps, sens)
    assert math.copysign(1.0, ours) == 1.0 and 0.0 < ours <= 1.0
    assert ours >= exact
    assert ours == pytest.approx(float(exact), rel=1e-10)


@pytest.mark.parametrize("eps,delta", [(1e18, 1e-5), (1e-6, 1e-185), (1e-20, 1e-300),
                                       (1e6, 1e-300), (1e300, 0.5)])
def test_analytic_sigma_never_overshoots_in_extreme_regimes(eps, delta):
    # before: (1e18, 1e-5) gave a sigma whose delta is 1; (1e-6, 1e-185) overshot by 4e-5 rel.
    sigma = g.analytic_gaussian_sigma(eps, delta)
    assert _delta_exact(sigma, eps, 1.0) <= delta
    assert _delta_exact(sigma * (1 - 1e-6), eps, 1.0) > delta  # tight


def test_extreme_calibrations_out_of_float_range_raise():
    with pytest.raises(ValueError, match="epsilon"):
        g.gaussian_epsilon(1e-160, 1e-5, 1e160)  # eps ~ 1e640
    with pytest.raises(ValueError, match="sigma"):
        g.analytic_gaussian_sigma(1e-320, 1e-320)  # sigma ~ 0.4/delta = 4e319


@settings(max_examples=60, deadline=None)
@given(log_sigma=st.floats(-30, 30), log_eps=st.floats(-30, 30), log_sens=st.floats(-30, 30))
def test_delta_upper_bounds_the_exact_profile(log_sigma, log_eps, log_sens):
    sigma, eps, sens = 10.0**log_sigma, 10.0**log_eps, 10.0**log_sens
    exact = _delta_exact(sigma, eps, sens, dps=120)
    ours = g.gaussian_delta(sigma, eps, sens)
    assert ours >= exact
    if exact > 1e-300:
        assert ours <= exact * (1 + 1e-10)
