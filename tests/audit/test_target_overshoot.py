"""An audit whose run's ledger claims more than the target it was calibrated for fails
(stop 72; an independent adversary's mutant).

The mutant: Gaussian DP-GD calibrated its sigma for one step of T (``calibrate(..., count=1)``)
while its ledger recorded the T steps it ran. The audit judged the run against the ledger's
claim (5.57 at a target of 3) and passed it: the claim was honest, the calibration was not,
and nothing compared the two. Oracle: the zCDP closed form of T Gaussian steps (rho = T
Delta^2 / (2 sigma^2), eps = rho + 2 sqrt(rho log(1/delta))), computed here, says how far above
the target the mutant's ledger must read; the control (the real code) claims the target.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from dpbounds.audit import audit
from dpbounds.audit.runner import CALIBRATION_RTOL, AuditResult


def _result(**kw: float) -> AuditResult:
    base = AuditResult(algorithm="x", neighbouring="replace_one", claimed_epsilon=3.0,
                       delta=1e-5, epsilon_lower=0.5, epsilon_estimate=0.7, epsilon_upper=1.2,
                       confidence=0.95, trials=2000, statistic="s", pair="p", tpr=0.5,
                       fpr=0.1, noise_factor=1.0, seed=0, elapsed=0.0, null_epsilon_lower=0.0,
                       target_epsilon=3.0)
    return dataclasses.replace(base, **kw)


def test_status_of_a_claim_above_its_target() -> None:
    assert _result().status == "PASS"
    # at the calibration's own tolerance: the target, as every correct algorithm claims it
    assert _result(claimed_epsilon=3.0 * (1 + CALIBRATION_RTOL)).status == "PASS"
    over = _result(claimed_epsilon=3.3)
    assert over.overshoots_target and over.status == "FAIL"
    assert "above the target 3" in str(over) and over.to_dict()["overshoots_target"]
    # an old record without a target: nothing to compare
    assert not _result(claimed_epsilon=9.0, target_epsilon=math.nan).overshoots_target


def _zcdp_eps(rho: float, delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


@pytest.mark.parametrize("mutated", [False, True])
def test_dp_gd_calibrated_for_one_step_fails_the_audit(monkeypatch, mutated: bool) -> None:
    import dpbounds.algorithms.gradient_descent as gd

    if mutated:
        real = gd.calibrate

        def one_step(make, epsilon, delta, accountant, count=1, **kw):
            return real(make, epsilon, delta, accountant, 1, **kw)

        monkeypatch.setattr(gd, "calibrate", one_step)
    r = audit("dp_gd_gaussian", trials=200, seed=3)
    assert r.target_epsilon == 3.0
    if not mutated:  # control: the real calibration claims the target
        assert r.claimed_epsilon == pytest.approx(3.0, rel=4 * CALIBRATION_RTOL)
        assert not r.overshoots_target
        return
    assert r.overshoots_target and r.status == "FAIL", str(r)
    # the oracle: one step's rho at the input eps (zCDP, the calibration's accountant), T
    # of them as exact GDP (mu = sqrt(2 T rho)), read at the ledger's delta
    from scipy.optimize import brentq
    from scipy.stats import norm

    from dpbounds.audit.registry import AUDITS

    T = AUDITS["dp_gd_gaussian"].build(r.neighbouring, r.input_epsilon, r.delta).kwargs["steps"]
    rho1 = brentq(lambda rho: _zcdp_eps(rho, r.delta) - r.input_epsilon, 1e-12, 1e6)
    mu = math.sqrt(2.0 * T * rho1)

    def gdp_delta(eps: float) -> float:
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)

    exact = brentq(lambda e: gdp_delta(e) - r.delta, 0.0, 100.0)
    assert T > 1 and r.claimed_epsilon == pytest.approx(exact, rel=1e-3)
    assert r.claimed_epsilon > 1.5 * r.target_epsilon
