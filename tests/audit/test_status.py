"""Audit status (issue 34 items 5, 6): a null control that fires never passes, and a GDP
estimate that exceeds the claim is reported as a finding (an estimate) beside the bound."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpbounds.audit import audit
from dpbounds.audit.runner import FINDING_Z, AuditResult
from dpbounds.audit.statistics import fit_gdp
from dpbounds.cli import main


def _result(**kw: float) -> AuditResult:
    base = AuditResult(algorithm="x", neighbouring="replace_one", claimed_epsilon=1.0,
                       delta=1e-5, epsilon_lower=0.5, epsilon_estimate=0.7, epsilon_upper=1.2,
                       confidence=0.95, trials=2000, statistic="s", pair="p", tpr=0.5,
                       fpr=0.1, noise_factor=1.0, seed=0, elapsed=0.0, null_epsilon_lower=0.0)
    return dataclasses.replace(base, **kw)


def test_status_rules() -> None:
    """PASS only without a violation, a firing null or an estimate above the claim."""
    assert _result().status == "PASS"
    assert _result(epsilon_lower=1.5).status == "FAIL"
    assert _result(null_epsilon_lower=0.2).status == "INCONCLUSIVE"  # never a pass
    assert _result(epsilon_lower=1.5, null_epsilon_lower=0.2).status == "FAIL"
    assert "null control fired" in str(_result(null_epsilon_lower=0.2))


@pytest.mark.parametrize("mu_true, finding", [(1.0, False), (1.5, True)])
def test_finding_against_a_simulated_gdp_pair(mu_true: float, finding: bool) -> None:
    """Oracle: scores drawn from N(0, 1) and N(mu_true, 1) are mu_true-GDP exactly. Against a
    claim mu_claim = 1: the true mu 1.5 is reported as a finding (an estimate, labelled),
    the true mu 1.0 -- the claim itself, the negative control -- is not."""
    rng = np.random.default_rng(1)
    fit = fit_gdp(rng.standard_normal(2000), mu_true + rng.standard_normal(2000))
    r = _result(mu_hat=fit.mu, mu_low=fit.mu_low, mu_high=fit.mu_high,
                mu_gof_pvalue=fit.gof_pvalue, mu_claim=1.0)
    assert r.estimate_exceeds_claim is finding
    assert r.status == ("INCONCLUSIVE" if finding else "PASS")
    assert ("FINDING (an estimate, not a certificate)" in str(r)) is finding
    assert r.to_dict()["estimate_exceeds_claim"] is finding


def test_finding_needs_a_gaussian_shape_and_a_claim() -> None:
    """No finding without a claimed mu or when the Gaussian shape is rejected."""
    kw = dict(mu_hat=3.0, mu_low=2.8, mu_high=3.2, mu_claim=1.0)
    assert _result(**kw, mu_gof_pvalue=0.5).estimate_exceeds_claim
    assert not _result(**kw, mu_gof_pvalue=1e-4).estimate_exceeds_claim
    assert not _result(**dict(kw, mu_claim=math.nan), mu_gof_pvalue=0.5).estimate_exceeds_claim
    # FINDING_Z standard errors: mu_hat - 3 se must clear the claim
    se = 0.2 / 1.959964
    assert not _result(mu_hat=1.0 + 0.99 * FINDING_Z * se, mu_low=0.5,
                       mu_high=1.0 + 0.99 * FINDING_Z * se + 0.2, mu_claim=1.0,
                       mu_gof_pvalue=0.5).estimate_exceeds_claim


def test_reused_noise_does_not_pass(capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: noise reused across steps is not a pass (exit 1 or 3); correct dp_sgd
    PASSes with a silent null control and no finding (the negative control). (Noise reused
    across *trials*, whose null fires, has no mutant here yet: the rule is tested above.)"""
    bad = audit("dp_sgd", mutant="reused_noise", quick=True, progress=False)
    assert bad.status != "PASS"
    ok = audit("dp_sgd", quick=True, progress=False)
    assert ok.status == "PASS" and not ok.null_false_positive
    assert main(["audit", "dp_sgd", "--mutant", "reused_noise", "--quick", "--json"]) in (1, 3)
    capsys.readouterr()
