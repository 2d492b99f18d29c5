"""DP-AGD's NoisyMax recorded as the pure ε-DP mechanism it is (``noisy_max_ledger="pure"``).

Oracles: (1) the algorithm does not move: same seed, bit-identical iterates, and the zCDP
accountant's ε (the algorithm's own) equal to the default ledger's; (2) the PLD reading of
the run equals an independent closed-form computation: the hockey-stick divergence of the
Gaussian shift (μ from the ledger's measurements) composed with randomized response at the
NoisyMax's ε (the dominating pair of any ε-DP mechanism; Kairouz, Oh & Viswanath 2015),
solved for ε at δ by bisection — two-sided, the PLD grid only pessimistic; (3) negative
control: the default (zCDP) ledger admits no exact reading, its tightest claim sits far
above the same closed form.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpbounds.algorithms import dp_agd
from dpbounds.audit import audit
from dpbounds.audit.runner import claimed_mu, tight_claim
from dpbounds.audit.settings.dp_agd import _dp_agd
from dpbounds.privacy.mechanisms import GaussianMechanism, PureDpMechanism, ZcdpMechanism

DELTA = 0.05


def _runs(epsilon: float, ledger: str, trials: int = 4):
    setting = _dp_agd("add/remove", epsilon, DELTA)
    kwargs = dict(setting.kwargs, noisy_max_ledger=ledger)
    return dp_agd(setting.pair[1], trials=trials, seed=3, **kwargs)


def _exact_epsilon(ledger, delta: float) -> float:
    """ε at δ of sqrt(Σ μ_i²)-GDP composed with randomized response at each pure ε."""
    mu2, pure = 0.0, []
    for mech, count in ledger.entries:
        if isinstance(mech, GaussianMechanism):
            mu2 += count * (mech.sensitivity / mech.sigma) ** 2
        else:
            assert isinstance(mech, PureDpMechanism)
            pure += [mech.epsilon] * count
    mu = math.sqrt(mu2)
    # the privacy loss of the randomized-response part: its values and P-probabilities
    losses, probs = np.zeros(1), np.ones(1)
    for e in pure:
        p = math.exp(e) / (1.0 + math.exp(e))
        losses = np.concatenate([losses + e, losses - e])
        probs = np.concatenate([probs * p, probs * (1.0 - p)])

    def hockey(eps: float) -> float:
        a = eps - losses  # Gaussian hockey stick at e^a, weighted by P(y)
        h = stats.norm.cdf(-a / mu + mu / 2) - np.exp(a) * stats.norm.cdf(-a / mu - mu / 2)
        return float(np.sum(probs * h)) - delta

    return float(optimize.brentq(hockey, 0.0, 20.0, xtol=1e-12))


def test_pure_record_leaves_the_run_and_its_own_accounting_unchanged():
    zc, pu = _runs(4.0, "zcdp"), _runs(4.0, "pure")
    np.testing.assert_array_equal(zc.x_numpy(), pu.x_numpy())
    assert pu.ledger.epsilon == pytest.approx(zc.ledger.epsilon, rel=1e-12)
    assert pu.privacy.accountant == "zcdp"
    rho = pu.params["rho_nmax"]
    kinds = {type(m) for m, _ in pu.privacy.ledger.entries}
    assert kinds == {GaussianMechanism, PureDpMechanism}
    assert {type(m) for m, _ in zc.privacy.ledger.entries} == {GaussianMechanism, ZcdpMechanism}
    for m, _ in pu.privacy.ledger.entries:
        if isinstance(m, PureDpMechanism):
            assert m.epsilon ** 2 / 2 == pytest.approx(rho, rel=1e-14)
    # the audit's mu_claim reads the pure entry as the zCDP charge it replaces
    assert claimed_mu(pu.privacy.ledger) == pytest.approx(claimed_mu(zc.privacy.ledger),
                                                          rel=1e-12)


@pytest.mark.parametrize("epsilon", [3.0, 5.0])
def test_pld_reading_matches_an_independent_closed_form(epsilon):
    pu = _runs(epsilon, "pure")
    exact = _exact_epsilon(pu.privacy.ledger, DELTA)
    pld = pu.privacy.ledger.epsilon(DELTA, "pld")
    assert exact - 1e-6 <= pld <= exact + 0.02, (pld, exact)
    value, name = tight_claim(pu.privacy, DELTA)
    assert name == "pld" and value == pytest.approx(pld, rel=1e-12)
    # negative control: the zCDP record of the same run reads far above the exact value
    zc = _runs(epsilon, "zcdp")
    zvalue, zname = tight_claim(zc.privacy, DELTA)
    assert zname == "rdp" and zc.privacy.ledger.report(DELTA)["pld"] is None
    assert zvalue > exact + 0.3, (zvalue, exact)


def test_bad_choice_is_refused():
    with pytest.raises(ValueError, match="noisy_max_ledger"):
        _runs(3.0, "bounded_range")


def test_the_audit_reads_the_pure_record_and_stays_consistent():
    r = audit("dp_agd", trials=2000, seed=0, null=False)
    assert r.claim_accountant == "pld" and r.claimed_epsilon == pytest.approx(3.0, rel=1e-5)
    assert not r.violation, r
