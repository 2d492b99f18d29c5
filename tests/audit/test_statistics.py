"""The distinguishing tests and the ε bounds they certify.

Oracles: the binomial tail sums that define a Clopper–Pearson interval (scipy's binomial
distribution, not the beta quantiles the module uses), closed-form ε of the Laplace and
Gaussian mechanisms (exact Laplace ratio; Balle & Wang's δ(ε) via dpbounds' own
``gaussian_epsilon``, itself checked against mpmath in tests/privacy), the Neyman–Pearson
direction of a Gaussian shift, and Monte Carlo coverage over independent repetitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpbounds.audit.statistics import (
    clopper_pearson,
    epsilon_from_counts,
    fit_scorers,
    select_threshold,
)
from dpbounds.privacy.gaussian import gaussian_epsilon


@pytest.mark.parametrize("k,n", [(0, 10), (1, 10), (50, 100), (99, 100), (100, 100),
                                 (3, 5000), (4990, 5000)])
def test_clopper_pearson_solves_its_defining_tail_equations(k, n):
    lo, hi = clopper_pearson(k, n, 0.9)
    # lower end: P[X >= k | lo] = 0.05; upper end: P[X <= k | hi] = 0.05
    if k > 0:
        assert stats.binom.sf(k - 1, n, lo) == pytest.approx(0.05, rel=1e-6)
    else:
        assert lo == 0.0
    if k < n:
        assert stats.binom.cdf(k, n, hi) == pytest.approx(0.05, rel=1e-6)
    else:
        assert hi == 1.0


def test_clopper_pearson_rejects_bad_counts():
    with pytest.raises(ValueError, match="k"):
        clopper_pearson(11, 10, 0.95)
    with pytest.raises(ValueError, match="n"):
        clopper_pearson(0, 0, 0.95)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(20, 5000), a=st.floats(0, 1), b=st.floats(0, 1),
       delta=st.sampled_from([0.0, 1e-5, 1e-2]))
def test_epsilon_bounds_are_ordered_and_monotone(n, a, b, delta):
    tp, fp = int(a * n), int(b * n)
    r = epsilon_from_counts(tp, fp, n, delta, 0.95)
    assert r.lower >= 0.0
    assert r.lower <= max(r.estimate, 0.0) + 1e-12
    assert r.estimate <= r.upper + 1e-12
    # more true positives can only raise the certified bound; more false positives lower it
    if tp < n:
        assert epsilon_from_counts(tp + 1, fp, n, delta, 0.95).lower >= r.lower - 1e-12
    if fp < n:
        assert epsilon_from_counts(tp, fp + 1, n, delta, 0.95).lower <= r.lower + 1e-12


def test_epsilon_from_counts_closed_form_at_large_counts():
    # both forms: the event and its complement; at n -> infinity the bound -> the estimate
    n = 10**8
    r = epsilon_from_counts(int(0.6 * n), int(0.1 * n), n, 0.0, 0.95)
    assert r.estimate == pytest.approx(max(math.log(0.6 / 0.1), math.log(0.9 / 0.4)), rel=1e-6)
    assert r.lower == pytest.approx(r.estimate, rel=1e-3)
    r = epsilon_from_counts(int(0.95 * n), int(0.5 * n), n, 0.01, 0.95)  # complement wins
    assert r.estimate == pytest.approx(math.log((0.5 - 0.01) / 0.05), rel=1e-6)
    # delta is subtracted from the true-positive rate
    r = epsilon_from_counts(int(0.3 * n), int(0.01 * n), n, 0.1, 0.95)
    assert r.estimate == pytest.approx(math.log(0.2 / 0.01), rel=1e-6)


def _audit_samples(s_d, s_p, delta, confidence=0.95):
    """Select on the first half, certify on the second (the runner's protocol)."""
    h = len(s_d) // 2
    test = select_threshold(s_d[:h], s_p[:h], delta, confidence)
    ev_d, ev_p = test.event(s_d[h:]), test.event(s_p[h:])
    return epsilon_from_counts(int(ev_p.sum()), int(ev_d.sum()), len(s_d) - h, delta,
                               confidence)


def test_laplace_mechanism_bound_is_valid_and_nearly_tight():
    # Laplace(b) with shift Delta: exactly eps = Delta / b-DP, and the ratio e^eps is attained
    rng = np.random.default_rng(0)
    eps, n = 1.5, 40_000
    s_d = rng.laplace(0.0, 1.0, n)
    s_p = rng.laplace(eps, 1.0, n)
    r = _audit_samples(s_d, s_p, 0.0)
    assert 0.85 * eps < r.lower <= eps


def test_gaussian_mechanism_bound_never_exceeds_exact_epsilon():
    # 20 independent audits of N(0,1) vs N(mu,1) at confidence 0.9: each lower bound is below
    # the exact eps(delta) except with probability 0.1; 20 repetitions, allow at most 6
    # exceedances (binomial(20, 0.1) tail < 3e-3), and in fact expect none.
    rng = np.random.default_rng(1)
    mu, delta, n = 1.0, 1e-3, 4000
    exact = float(gaussian_epsilon(1.0 / mu, delta))
    lowers = []
    for _ in range(20):
        r = _audit_samples(rng.standard_normal(n), mu + rng.standard_normal(n), delta, 0.9)
        lowers.append(r.lower)
    assert sum(v > exact for v in lowers) <= 6
    assert max(lowers) < exact
    assert np.mean(lowers) > 0.4 * exact  # and the test has power


def test_identical_distributions_give_no_evidence():
    # negative control: D and D' indistinguishable -> the bound stays near 0
    rng = np.random.default_rng(2)
    r = _audit_samples(rng.standard_normal(20_000), rng.standard_normal(20_000), 1e-5)
    assert r.lower < 0.15


def test_linear_scorer_recovers_the_neyman_pearson_direction():
    # N(0, S) vs N(m, S): the optimal statistic is S^{-1} m (closed form)
    rng = np.random.default_rng(3)
    S = np.array([[2.0, 0.5], [0.5, 1.0]])
    m = np.array([1.0, -0.5])
    chol = np.linalg.cholesky(S)
    f_d = rng.standard_normal((50_000, 2)) @ chol.T
    f_p = m + rng.standard_normal((50_000, 2)) @ chol.T
    score = fit_scorers(f_d, f_p, ("linear",))["linear"]
    # score is affine in f: recover its gradient
    w = np.array([score(np.eye(2)[[i]])[0] - score(np.zeros((1, 2)))[0] for i in range(2)])
    w_opt = np.linalg.solve(S, m)
    assert np.dot(w, w_opt) / (np.linalg.norm(w) * np.linalg.norm(w_opt)) > 0.999


def test_gaussian_lr_scorer_sees_a_change_of_variance():
    # same mean, variance 1 vs 4: the Gaussian LR (sum of squares) beats any one projection
    rng = np.random.default_rng(4)
    f_d = rng.standard_normal((8000, 3))
    f_p = 2.0 * rng.standard_normal((8000, 3))
    scorers = fit_scorers(f_d[:4000], f_p[:4000])
    out = {}
    for name, score in scorers.items():
        s_d, s_p = score(f_d), score(f_p)
        out[name] = _audit_samples(np.concatenate([s_d[:4000], s_d[4000:]]),
                                   np.concatenate([s_p[:4000], s_p[4000:]]), 0.0).lower
    assert out["gaussian-lr"] > out["linear"] + 0.5
    # a shift of the mean alone is invisible to it only when both classes agree: control
    same = fit_scorers(f_d[:4000], f_d[4000:])["gaussian-lr"]
    assert _audit_samples(same(f_d[:4000]), same(f_d[4000:]), 0.0).lower < 0.3


def test_select_threshold_needs_equal_run_counts():
    with pytest.raises(ValueError, match="equally many"):
        select_threshold(np.zeros(10), np.zeros(11), 0.0, 0.95)


def test_round_off_is_not_evidence():
    # negative control: equal values computed along different floating-point paths
    # (0.1 + 0.2 vs 0.3) differ in their last bit; a threshold between them must not count
    n = 4000
    s_d = np.full(n, 0.1) + np.full(n, 0.2)
    s_p = np.full(n, 0.3)
    assert np.all(s_d != s_p)
    assert _audit_samples(s_d, s_p, 0.0).lower == 0.0
    # a clamped Laplace log-likelihood ratio: constant on both tails up to round-off
    rng = np.random.default_rng(5)
    e = 1.0

    def llr(x):
        return np.abs(x) - np.abs(x - e)

    r = _audit_samples(llr(rng.laplace(0, 1, 20_000)), llr(e + rng.laplace(0, 1, 20_000)), 0.0)
    assert r.lower <= e  # the mechanism is exactly e-DP
