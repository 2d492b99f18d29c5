"""The survivors of the tenth privacy-mutant hunt (stop 76), each now caught by its own oracle.

* M23: the zCDP accountant read a Laplace mechanism as (s/b)^2/4-zCDP (1.56x under at x20):
  Bun & Steinke 2016, Prop. 1.4 (eps-DP is eps^2/2-zCDP), written out.
* M11: ``PrivacyLedger.gdp`` took mu from one direction of the PLD pair (1.203 against
  1.439): dp_accounting's PLD of the same events, each direction's delta(eps) against the
  mu-GDP curve (Dong, Roth & Su 2022, Cor. 2.13).
* M08: DP-AGD's ledger counted one NoisyMax call fewer than the run made up to its last
  release: the calls counted by a spy on the module's ``noisy_max``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbounds.privacy import LaplaceMechanism, Neighbouring, PrivacyLedger


@pytest.mark.parametrize("scale, sens, count", [(2.0, 0.5, 7), (1.0, 1.0, 20), (0.3, 2.0, 1)])
def test_zcdp_reads_laplace_as_bun_steinkes_half_eps_squared(scale, sens, count):
    # Prop. 1.4 of Bun & Steinke: an eps-DP mechanism is eps^2 / 2-zCDP; Laplace of scale b
    # on a query of L1 sensitivity s is (s / b)-DP
    for relation in (Neighbouring.REPLACE_ONE, Neighbouring.ADD_REMOVE):
        led = PrivacyLedger(relation)
        led.record(LaplaceMechanism(scale, sens, relation), count)
        rho = led.accountant("zcdp").rho
        assert rho == pytest.approx(count * (sens / scale) ** 2 / 2, rel=1e-12)
    # and its epsilon is never below the RDP accountant's for the same Laplace (zCDP is the
    # looser of the two for Laplace: the RDP curve is Laplace's own)
    led = PrivacyLedger(Neighbouring.ADD_REMOVE)
    led.record(LaplaceMechanism(scale, sens, Neighbouring.ADD_REMOVE), count)
    assert led.epsilon(1e-6, accountant="zcdp") >= led.epsilon(1e-6, accountant="rdp") * (1 - 1e-9)


def _delta_mu(eps: np.ndarray, mu: float) -> np.ndarray:
    # Dong, Roth & Su 2022, Cor. 2.13: mu-GDP <=> delta(eps) <= this for every eps
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("z, q, steps", [(0.8, 0.1, 10), (0.6, 0.05, 50)])
def test_gdp_mu_holds_for_both_directions_of_dp_accountings_pld(z, q, steps):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    from dpbounds.privacy.mechanisms import Sampling, SubsampledGaussianMechanism

    mech = SubsampledGaussianMechanism(z, q, 1.0, Sampling.POISSON, "add_remove")
    mu = PrivacyLedger("add_remove", [(mech, steps)]).gdp()["mu"]
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps)
    pld = acc._pld  # noqa: SLF001 -- both directions of dp_accounting's own PLD
    eps = np.linspace(0.0, 20.0, 801)
    bound = _delta_mu(eps, mu)
    keep = bound >= 1e-8  # gdp() reads FPRs >= 1e-10: the curve's far tail is its truncation
    for pmf in (pld._pmf_remove, pld._pmf_add):  # noqa: SLF001
        delta = np.array([pmf.get_delta_for_epsilon(float(e)) for e in eps])
        assert np.all(delta[keep] <= bound[keep] * (1 + 1e-3) + 1e-12)
    # negative control: the mu of one direction alone (M11: 1.203 at z = 0.8) fails one
    if (z, q, steps) == (0.8, 0.1, 10):
        low = _delta_mu(eps, 1.203)
        keep = low >= 1e-8
        worst = max(np.max(np.array([pmf.get_delta_for_epsilon(float(e)) for e in eps])[keep]
                           / low[keep]) for pmf in (pld._pmf_remove, pld._pmf_add))  # noqa: SLF001
        assert worst > 1.2


def test_dp_agd_counts_every_noisy_max_call_up_to_the_last_release(monkeypatch):
    # a trial that reaches max_iterations stops at that release: every NoisyMax call it made
    # was made up to its last release and must be in its ledger
    import importlib

    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression
    from dpbounds.privacy.mechanisms import PureDpMechanism, ZcdpMechanism

    module = importlib.import_module("dpbounds.algorithms.dp_agd")
    calls: list[np.ndarray] = []
    real = module.noisy_max

    def spy(scores, *args, where=None, **kwargs):
        calls.append(np.array(where, dtype=bool, copy=True))
        return real(scores, *args, where=where, **kwargs)

    monkeypatch.setattr(module, "noisy_max", spy)
    A, y = kuru_synthetic(n=2000, d=5, seed=0)
    f = LogisticRegression(A, y, l2=1e-3, l1_radius=5.0)
    trials, cap = 6, 3
    res = module.dp_agd(f, epsilon=1.0, delta=1e-8, trials=trials, seed=0, max_iterations=cap,
                        noisy_max_ledger="zcdp")
    per_trial = np.sum(np.stack(calls), axis=0)
    iters = np.asarray(res.params["iterations"])
    assert np.any(iters == cap)
    rho_nmax = res.params["rho_nmax"]
    for k in np.flatnonzero(iters == cap):
        led = res.privacy.trial_ledgers[k]
        counted = sum(c for m, c in led.entries
                      if isinstance(m, ZcdpMechanism) and m.rho == pytest.approx(rho_nmax)
                      or isinstance(m, PureDpMechanism))
        assert counted == per_trial[k], (k, counted, per_trial[k])
    assert math.isfinite(rho_nmax)
