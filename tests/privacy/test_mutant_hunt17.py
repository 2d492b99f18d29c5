"""Mutant hunt 17's survivors in the accountants (the code was right, untested).

M27: the PLD's delta must be the worse of the two directions (the better one read 1.47e-2 for
7.39e-2 at eps 0.5). M04: ``gdp()`` must read the worse direction's attack curve (the
better one gave mu = 5.89, i.e. eps 54 at delta 1e-10, where the PLD's eps is 67). Oracles:
dp_accounting's PLD accountant, and the GDP curve's own eps against the ledger's PLD.
"""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import Sampling, SubsampledGaussianMechanism

pytestmark = pytest.mark.xcheck


def _ledger(z: float, q: float, steps: int) -> PrivacyLedger:
    return PrivacyLedger("add_remove", [(SubsampledGaussianMechanism(
        z, q, 1.0, Sampling.POISSON, "add_remove"), steps)])


def test_the_pld_delta_is_the_worse_directions_against_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant as pld

    z, q, steps = 0.8, 0.1, 10
    ref = pld.PLDAccountant(value_discretization_interval=1e-4)
    ref.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps)
    led = _ledger(z, q, steps)
    for eps in (0.5, 2.0):
        want = ref.get_delta(eps)
        assert led.delta(eps, "pld") == pytest.approx(want, rel=0.02)  # the mutant: 5x / 3e11x
        assert led.delta_curve([eps])["pessimistic"][0] == pytest.approx(want, rel=0.02)


def _gdp_epsilon(mu: float, delta: float) -> float:
    """eps of mu-GDP at delta (Dong, Roth & Su 2019, Cor. 2.13), by bisection."""
    def d(e: float) -> float:
        return norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)

    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("z, q, steps", [(0.8, 0.1, 10), (0.9, 0.3, 5)])
def test_the_gdp_mu_covers_the_ledgers_own_epsilon(z, q, steps):
    led = _ledger(z, q, steps)
    mu = led.gdp()["mu"]
    assert math.isfinite(mu)
    # a mu that dominates the composition's trade-off curve bounds its eps at every delta
    for delta in (1e-5, 1e-10):
        assert _gdp_epsilon(mu, delta) >= 0.99 * led.epsilon(delta, "pld")


@pytest.mark.parametrize("z, q, steps", [(0.5, 0.5, 20), (0.7, 0.2, 10)])
def test_the_gdp_mu_of_an_unresolved_composition_is_inf(z, q, steps):
    # the worse direction's attack reaches FNR < 1e-10 where mu is not resolved (the better
    # direction's read mu = 5.89 at (0.5, 0.5, 20), whose eps 54.1 at 1e-10 is below the
    # ledger's 66.8; 2.33 at (0.7, 0.2, 10))
    assert _ledger(z, q, steps).gdp()["mu"] == math.inf
