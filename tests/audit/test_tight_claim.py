"""Tight claims: the audit's claim is the run's ledger under the tightest accountant.

Oracles: ``dp_accounting``'s PLD accountant (an external library) for the exact Gaussian
composition :func:`~dpbounds.audit.runner.exact_gaussian_mu` reads; the calibration is
checked two-sided against its target; the audit with the tight claim catches a copy that
under-noises by 20% (the issue's "a bug that under-noises by 20-30% would pass"), which
the ledger's own zCDP claim lets pass (negative control of the claim, not of the test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.audit import AUDITS, audit
from dpbounds.audit.runner import (
    _probe_run,
    calibrate_input,
    exact_gaussian_mu,
    tight_claim,
)
from dpbounds.audit.statistics import gdp_epsilon
from dpbounds.privacy import Neighbouring, PrivacyLedger
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SubsampledGaussianMechanism,
    ZcdpMechanism,
)

RO = Neighbouring.REPLACE_ONE


def _dp_accounting_epsilon(noise_multiplier: float, count: int, delta: float) -> float:
    dp_accounting = pytest.importorskip("dp_accounting")
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier), count)
    return float(acc.get_epsilon(delta))


@pytest.mark.parametrize("sigma,sens,count,delta", [(4.4, 2.0, 5, 0.05), (1.3, 2.0, 1, 1e-5),
                                                    (3.0, 1.0, 3, 1e-3)])
def test_exact_gaussian_claim_matches_dp_accounting(sigma, sens, count, delta):
    led = PrivacyLedger(RO)
    led.record(GaussianMechanism(sigma, sens, RO), count)
    mu = exact_gaussian_mu(led)
    assert mu == pytest.approx(math.sqrt(count) * sens / sigma, rel=1e-12)
    ours = gdp_epsilon(mu, delta)
    oracle = _dp_accounting_epsilon(sigma / sens, count, delta)  # pessimistic PLD
    assert oracle - 2e-3 <= ours <= oracle + 1e-6  # two-sided: exact, the PLD is pessimistic
    eps, name = tight_claim(_Privacy(led), delta)
    assert eps == pytest.approx(ours, abs=1e-3) and eps <= led.report(delta)["rdp"]
    # a full-batch sampled Gaussian (rate 1) is the same Gaussian mechanism
    led2 = PrivacyLedger(RO)
    led2.record(SubsampledGaussianMechanism(sigma, 1.0, sens, "without_replacement", RO),
                count)
    assert exact_gaussian_mu(led2) == pytest.approx(mu, rel=1e-12)


class _Privacy:
    def __init__(self, ledger):
        self.ledger, self.trial_ledgers = ledger, ()


def test_exact_gaussian_refuses_what_is_not_gaussian():
    # a zCDP charge is not a Gaussian of the same rho; subsampling amplifies; Laplace is not
    # Gaussian; a mechanism under another relation needs a conversion: all give nan
    for mech in (ZcdpMechanism(0.5, RO), LaplaceMechanism(1.0, 1.0, RO),
                 SubsampledGaussianMechanism(2.0, 0.5, 2.0, "without_replacement", RO),
                 GaussianMechanism(2.0, 1.0, Neighbouring.ADD_REMOVE)):
        led = PrivacyLedger(RO)
        led.record(GaussianMechanism(2.0, 2.0, RO), 1)
        led.record(mech, 1)
        assert math.isnan(exact_gaussian_mu(led)), mech


@pytest.mark.parametrize("name", ["dp_gd_gaussian", "dp_sgd", "tree_momentum_nsgd_T3",
                                  "dp_agd"])
def test_calibration_reaches_the_target_claim(name):
    spec = AUDITS[name]
    rel = spec.relations[0]
    e_in = calibrate_input(spec, rel, 3.0, 0.05)
    res, _ = _probe_run(spec, spec.build(rel, e_in, 0.05))
    claim, _ = tight_claim(res.privacy, 0.05)
    assert 3.0 * (1 - 1e-5) <= claim <= 3.0  # two-sided, never above the target
    # the tight claim never exceeds the algorithm's own accountant's
    assert claim <= float(res.ledger.epsilon) * (1 + 1e-12)
    assert e_in > 3.0  # the own accountants are loose for all four


def test_tight_claim_catches_a_twenty_percent_under_noise():
    real = audit("dp_gd_gaussian", seed=3)
    assert real.claim_accountant == "gdp" and not real.violation
    assert real.claimed_epsilon == pytest.approx(3.0, rel=1e-5)
    assert real.epsilon_tight == pytest.approx(real.claimed_epsilon, rel=1e-5)
    assert real.ratio >= 0.8 and real.null_epsilon_lower == 0.0
    bad = audit("dp_gd_gaussian", seed=3, noise_factor=0.8, null=False)
    assert bad.violation, bad
    # the ledger's own zCDP claim (the old default) lets the same bug pass
    loose = audit("dp_gd_gaussian", seed=3, noise_factor=0.8, null=False, tight=False)
    assert not loose.violation and loose.claimed_epsilon == pytest.approx(3.0, rel=1e-6)
    assert np.isfinite(loose.ledger_epsilon)
