"""White-box audits, the GDP estimate and the planner.

Oracles: the μ-GDP privacy profile in closed form (Dong, Roth & Su 2022, Cor. 2.13:
δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)), written out here independently of
``gaussian_epsilon``; Monte Carlo coverage of the GDP interval on exact Gaussian scores,
with a Laplace-shaped negative control the goodness-of-fit check must flag; the
noise-free transcript of the tree (its node signals over σ, the exact μ of what the
auditor sees); and the real held-out estimator on simulated Gaussian scores for the
planner's power model.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpbounds.audit import AUDITS, audit
from dpbounds.audit.mutation import scaled_noise
from dpbounds.audit.planner import binomial_runs, gaussian_lower, gaussian_runs, lower_at
from dpbounds.audit.runner import claimed_mu
from dpbounds.audit.statistics import fit_gdp, gdp_epsilon, held_out_bound


def _gdp_delta(mu: float, eps: float) -> float:
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@settings(max_examples=30, deadline=None)
@given(mu=st.floats(0.1, 5.0), delta=st.sampled_from([1e-5, 1e-3, 0.05, 0.2]))
def test_gdp_epsilon_solves_the_closed_form_profile(mu, delta):
    eps = gdp_epsilon(mu, delta)
    if eps == 0.0:
        assert _gdp_delta(mu, 0.0) <= delta * (1 + 1e-9)
    else:
        assert _gdp_delta(mu, eps) == pytest.approx(delta, rel=1e-6)


def test_gdp_interval_covers_mu_and_the_fit_check_flags_a_wrong_shape():
    rng = np.random.default_rng(7)
    mu, m, reps = 1.2, 2000, 100
    covered, pvals = 0, []
    for _ in range(reps):
        g = fit_gdp(rng.normal(size=m), rng.normal(mu, 1.0, size=m))
        covered += g.mu_low <= mu <= g.mu_high
        pvals.append(g.gof_pvalue)
    # 95% interval: coverage 0.95 +- 3 binomial sd over 100 reps
    assert covered >= 88
    assert np.mean(np.array(pvals) < 0.01) < 0.1  # Gaussian scores pass the fit check
    # negative control: Laplace scores with the same shift must fail the fit check
    bad = [fit_gdp(rng.laplace(size=m), rng.laplace(mu, 1.0, size=m)).gof_pvalue
           for _ in range(10)]
    assert max(bad) < 0.01


@pytest.mark.parametrize("name,T", [("tree_momentum_nsgd_T3", 3), ("tree_momentum_nsgd_T8", 8)])
def test_white_box_tree_mu_matches_the_transcript_exact_mu(name, T):
    spec = AUDITS[name]
    r = audit(name, trials=4000, seed=2)
    # the runs asked for the epsilon whose tight claim is the target
    setting = spec.build(spec.relations[0], r.input_epsilon, spec.delta)
    nodes = []
    for obj in setting.pair:  # noise-free runs: the node signals
        with scaled_noise(0.0), setting.tap() as seen:
            res = spec.function(obj, trials=1, seed=0, **setting.kwargs)
        nodes.append(setting.features(res, seen)[0])
    assert len(nodes[0]) == T
    exact = float(np.linalg.norm(nodes[1] - nodes[0])) / res.params["sigma"]
    se = (r.mu_high - r.mu_low) / (2 * 1.959964)  # the interval's standard error
    assert abs(r.mu_hat - exact) <= 3 * se, (r.mu_hat, exact, se)  # 3 sigma: 0.3% misses
    # the charged mu is sqrt(K / T) larger (K nodes charged, T formed hold the record)
    assert r.mu_claim == pytest.approx(claimed_mu(res.privacy.ledger))
    K = res.params["node_count"]
    assert exact == pytest.approx(r.mu_claim * math.sqrt(T / K), rel=1e-9)
    assert not r.violation and r.null_epsilon_lower == 0.0
    # negative control: sigma halved doubles the transcript's mu, outside the interval
    half = audit(name, trials=4000, seed=2, mutant="sigma/2", null=False)
    assert half.mu_low > 1.5 * exact


def test_planner_power_model_matches_the_real_estimator():
    # the held-out estimator on exact Gaussian scores, median over repetitions
    rng = np.random.default_rng(3)
    mu, runs, delta = 1.0, 4000, 0.05
    got = [held_out_bound(rng.normal(size=runs), rng.normal(mu, 1.0, size=runs), delta,
                          0.95).bound.lower for _ in range(30)]
    model = gaussian_lower(mu, runs, delta)
    # the model assumes the best threshold is found; selecting it on half the runs costs a
    # little: the real median is below the model, and not by much
    assert 0.8 * model <= float(np.median(got)) <= model * 1.05


def test_planner_runs_are_minimal_and_unreachable_targets_are_infinite():
    mu, delta = 1.0, 0.05
    target = 0.8 * gdp_epsilon(mu, delta)
    n = gaussian_runs(target, mu, delta)
    tpr = stats.norm.sf(np.linspace(-4, mu + 9, 600) - mu)
    fpr = stats.norm.sf(np.linspace(-4, mu + 9, 600))
    assert lower_at(tpr, fpr, n, delta, power=0.95) >= target
    assert lower_at(tpr, fpr, int(n * 0.97), delta, power=0.95) < target
    assert gaussian_runs(gdp_epsilon(mu, delta), mu, delta) == math.inf
    # negative control: a weaker signal needs more runs
    assert gaussian_runs(target, 0.9 * mu, delta) > n
    assert binomial_runs(1.0, 0.2, 0.1, 0.0) == math.inf  # log 2 < 1: never
    assert 200 <= binomial_runs(1.0, 0.5, 0.05, 0.0) < math.inf
