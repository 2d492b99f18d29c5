"""Trade-off curves: the empirical curve of a statistic beside the claim's.

Oracles: Gaussian scores have the closed-form curve of mu-GDP, Phi(Phi^-1(1 - a) - mu)
(Dong, Roth & Su 2022); mu-GDP is (eps(delta), delta)-DP, so its curve lies on or above the
claim's (eps, delta) curve everywhere and touches it; a copy with twice the mu falls below
(negative control).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbounds.audit.statistics import claim_tradeoff, empirical_tradeoff, gdp_epsilon


def test_claim_curve_closed_form_and_gdp_dominates_it():
    eps, delta = 1.0, 0.01
    a = np.array([0.0, 0.005, 0.1, 0.99])
    want = np.maximum.reduce([np.zeros(4), 1 - delta - np.e * a, (1 - delta - a) / np.e])
    assert claim_tradeoff(a, eps, delta) == pytest.approx(want, abs=1e-15)
    mu = 1.3
    e = gdp_epsilon(mu, delta)
    grid = np.linspace(1e-6, 1 - 1e-6, 20001)
    gdp = stats.norm.cdf(stats.norm.isf(grid) - mu)
    gap = gdp - claim_tradeoff(grid, e, delta)
    assert gap.min() >= -1e-9 and gap.min() <= 1e-3  # above it, and touching
    # negative control: a tighter claim than the mechanism is violated somewhere
    assert (gdp - claim_tradeoff(grid, 0.8 * e, delta)).min() < -1e-3


def test_empirical_curve_matches_gaussian_scores_and_flags_a_doubled_mu():
    rng = np.random.default_rng(4)
    mu, n = 1.5, 20_000
    rows = empirical_tradeoff(rng.normal(size=n), rng.normal(mu, 1.0, size=n))
    for row in rows:
        # the threshold's true FPR lies in the FPR interval; the exact curve decreases
        lo = stats.norm.cdf(stats.norm.isf(row["fpr_high"]) - mu)
        hi = stats.norm.cdf(stats.norm.isf(row["fpr_low"]) - mu) if row["fpr_low"] > 0 else 1.0
        assert row["fnr_low"] <= hi and lo <= row["fnr_high"], row
        assert abs(row["fpr"] - row["alpha"]) <= 1.0 / n + 1e-12
    e = gdp_epsilon(mu, 0.05)
    assert all(r["fnr_high"] >= claim_tradeoff(r["fpr_high"], e, 0.05) for r in rows)
    bad = empirical_tradeoff(rng.normal(size=n), rng.normal(2 * mu, 1.0, size=n))
    assert any(r["fnr_high"] < claim_tradeoff(r["fpr_high"], e, 0.05) for r in bad)
    # the side flips the orientation: D' below D
    flipped = empirical_tradeoff(-rng.normal(size=n), -rng.normal(mu, 1.0, size=n), side=-1)
    assert flipped[4]["fnr"] == pytest.approx(rows[4]["fnr"], abs=0.03)
    with pytest.raises(ValueError, match="alpha"):
        empirical_tradeoff(np.zeros(3), np.ones(3), alphas=(0.0,))


def test_bad_input_is_refused_by_name():
    import math as _m

    from dpbounds.audit.runner import calibrate_input, tight_claim
    from dpbounds.audit.statistics import claim_tradeoff

    assert float(claim_tradeoff(0.1, 1.0, 0.0)) == pytest.approx(1.0 - _m.e * 0.1)  # edge
    for args, name in (((0.1, float("nan"), 0.1), "epsilon"), ((0.1, -1.0, 0.1), "epsilon"),
                       ((0.1, 1.0, 1.5), "delta"), ((1.5, 1.0, 0.1), "alpha")):
        with pytest.raises(ValueError, match=name):
            claim_tradeoff(*args)
    with pytest.raises(ValueError, match="delta"):
        tight_claim(None, float("inf"))
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_input(None, "replace_one", 0.0, 0.05)
