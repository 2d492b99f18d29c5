"""The PLD accountant at the extremes (issue 8, items 4 and 8), against independent oracles.

* Gaussian compositions: Balle & Wang's exact profile evaluated in mpmath (written out here);
* 10^7 Poisson-subsampled Gaussian steps: prv_accountant's bracket (computed once, 295 s, see
  ``PRV_1E7``) and our RDP accountant (an upper bound the PLD must beat);
* Laplace / pure DP beyond dp_accounting's float range: a clean refusal.
"""

from __future__ import annotations

import logging
import math

import mpmath as mp
import pytest

from dpbounds.cli import main
from dpbounds.privacy import accountants as A
from dpbounds.privacy import mechanisms as M
from dpbounds.privacy.calibrate import calibrate, epsilon_for_noise_multiplier, epsilon_of

pytest.importorskip("dp_accounting")

logging.getLogger().setLevel(logging.ERROR)


def _gaussian_delta_mp(mu, eps):
    """delta(eps) of a Gaussian with sensitivity/sigma = mu: Phi(mu/2 - eps/mu)
    - e^eps Phi(-mu/2 - eps/mu), 120 digits."""
    with mp.workdps(120):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("sigma", [1e-3, 1e-2, 1e3])
def test_pld_gaussian_of_any_noise_is_exact(sigma):
    # before: sigma = 1e-3 asked numpy for 76 GiB (MemoryError)
    eps = epsilon_of(M.GaussianMechanism(sigma), 1e-5, "pld")
    mu = 1.0 / sigma
    assert _gaussian_delta_mp(mu, eps) <= 1e-5
    assert _gaussian_delta_mp(mu, eps * (1 - 1e-6)) > 1e-5  # tight


def test_pld_calibration_with_large_sensitivity():
    # before: the search started at noise 1.0 = sensitivity / 1000 and ran out of memory
    sigma = calibrate(lambda s: M.GaussianMechanism(s, 1e3), 1.0, 1e-5, accountant="pld")
    assert _gaussian_delta_mp(1e3 / sigma, 1.0) <= 1e-5
    assert _gaussian_delta_mp(1e3 / (sigma * (1 - 1e-5)), 1.0) > 1e-5


def test_pld_grid_is_bounded_for_huge_privacy_losses():
    # sigma = 1e-3 under Poisson sampling: one step's loss reaches ~5e5; with 1000 steps the
    # interval 1e-4 would need ~1e11 points. The grid is coarsened to max_points instead.
    acc = A.PldAccountant(max_points=2**18).compose(M.SubsampledGaussianMechanism(1e-3, 0.01),
                                                    1000)
    acc.compose(M.LaplaceMechanism(1.0), 10)
    eps = acc.get_epsilon(1e-5)
    remove, add = acc._composed_pld()
    assert remove.probs.size <= acc.max_points and add.probs.size <= acc.max_points
    # oracle: RDP is an upper bound, and the PLD (tight) must be far below it here
    rdp = A.RdpAccountant().compose(M.SubsampledGaussianMechanism(1e-3, 0.01), 1000)
    rdp.compose(M.LaplaceMechanism(1.0), 10)
    assert math.isfinite(eps) and eps <= rdp.get_epsilon(1e-5)
    # ... and at least the loss of the ~26 inclusions a 1e-5 tail of Binomial(1000, 0.01)
    # holds: each adds about 1/(2 sigma^2) + log(q) = 5e5 - 4.6
    assert eps >= 20 * (0.5e6 - 5)


def test_pld_refuses_losses_beyond_float_range():
    # before: Laplace(b = 1e-3) gave eps = inf silently, PureDp(800) an OverflowError
    with pytest.raises(A.UnsupportedMechanismError, match="700"):
        epsilon_of(M.LaplaceMechanism(1e-3), 1e-5, "pld")
    with pytest.raises(A.UnsupportedMechanismError, match="pure"):
        epsilon_of(M.PureDpMechanism(800.0), 1e-5, "pld")
    with pytest.raises(ValueError, match="count"):
        A.PldAccountant().compose(M.LaplaceMechanism(1.0), 10**30)
    # a calibration that crosses the limit on its way down still finds the right noise
    b = calibrate(lambda s: M.LaplaceMechanism(s), 650.0, 1e-5, "pld", rtol=1e-5)
    assert 1 / 650 <= b <= (1 + 2e-5) / 650


# prv_accountant 0.2: PRVAccountant(PoissonSubsampledGaussianMechanism(128, 0.01),
# eps_error=0.01, delta_error=1e-9).compute_epsilon(1e-5, [10**7]) -> (lower, estimate, upper)
PRV_1E7 = (0.9043909988541599, 0.9143971191765234, 0.9244032400762029)


def test_pld_ten_million_steps_inside_prv_bracket():
    # before: 45 s per call in dp_accounting's sparse self-composition and eps = 1.044
    # (14% above prv's upper end: the 1e-4 grid is too coarse for a per-step loss of ~1e-4)
    acc = A.PldAccountant().compose(M.SubsampledGaussianMechanism(128.0, 0.01), 10**7)
    eps = acc.get_epsilon(1e-5)
    assert PRV_1E7[0] <= eps <= PRV_1E7[2]
    assert eps <= epsilon_for_noise_multiplier(128.0, 1e-5, 0.01, 10**7)  # RDP upper bound
    assert epsilon_for_noise_multiplier(128.0, 1e-5, 0.01, 10**7, accountant="pld") == eps


def test_cli_privacy_with_tiny_sigma(capsys):
    # before: a numpy MemoryError traceback after several GB (dp_accounting's Gaussian PLD)
    assert main(["privacy", "--sigma", "1e-3", "--json"]) == 0
    out = capsys.readouterr().out
    assert "Traceback" not in out and "PLD" in out
