"""DP-GD, DP-SHB, DP-NAG(-opt), DP-MASG(-opt) (Kuru et al.).

Oracles: the Laplace law (KS test, variance 2b² with a 5-sigma CI) of the noise recovered
from one-step runs; eqs. (12)-(13) and the amplification formula of Balle et al. (Thm A.3)
re-implemented here; dp_accounting's PLD accountant for the composition; independent NumPy
implementations of the non-private methods on the same mini-batches (ε = ∞); the stationary
error of heavy ball on a quadratic from the 2x2 discrete Lyapunov equation
(scipy.linalg.solve_discrete_lyapunov); Theorem 4.1's recursion and the exact DP-NAG
covariance propagation of dpbounds.bounds.strongly_convex.nesterov (Monte Carlo with CIs).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.linalg
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs

from dpbounds.algorithms import dp_gd, dp_heavy_ball, dp_masg, dp_masg_opt, dp_nag, dp_nag_opt
from dpbounds.algorithms._common import make_streams
from dpbounds.backend import to_numpy
from dpbounds.bounds.strongly_convex.nesterov import (
    masg_schedule,
    nesterov_expected_error_quadratic,
    nesterov_recursion,
    nesterov_schedule,
)
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression, QuadraticObjective
from dpbounds.privacy.mechanisms import Neighbouring

ALGOS = [dp_gd, dp_heavy_ball, dp_nag, dp_nag_opt, dp_masg, dp_masg_opt]


def _logistic(n=400, d=4, backend="numpy"):
    ds = kuru_synthetic(n=n, d=d, seed=5)
    return LogisticRegression.kuru(*ds, lam=0.05, backend=backend, **ds.domain())


def _eps0(eps, T, n, m):  # eq. (13), written out independently
    return math.log(1.0 + (math.exp(eps / T) - 1.0) * n / m)


def _amplified_exact(eps_batch, n, m):
    """Thm A.3 (Balle, Barthe, Gaboardi 2018, Thm 9) in 50-digit mpmath: the float form
    log(1 + m/n (e^x - 1)) loses ~1e-16/x relative to cancellation at small x."""
    with mpmath.workdps(50):
        return mpmath.log1p(mpmath.mpf(m) / n * mpmath.expm1(mpmath.mpf(float(eps_batch))))


def _amplified(eps_batch, n, m):
    return float(_amplified_exact(eps_batch, n, m))


@pytest.mark.parametrize("m", [5, 1])
def test_injected_laplace_noise_has_the_calibrated_law(m):
    """One DP-GD step from x* of a quadratic: x_1 - x_0 = -alpha (grad + eta) reveals eta."""
    n, d, trials, eps, S = 5, 4, 3000, 0.7, 2.0
    q = QuadraticObjective([1.0, 2.0, 3.0, 4.0], offsets=np.zeros((n, d)))
    r = dp_gd(q, epsilon=eps, steps=1, step_size=0.1, batch_size=m, trials=trials, seed=3,
              sensitivity=S, trace=None)
    eta = -to_numpy(r.x) / 0.1  # x0 = x* = 0 and no data noise: x_1 = -alpha eta
    b = S / (m * _eps0(eps, 1, n, m))  # eq. (12)
    assert r.params["laplace_scales"][0] == pytest.approx(b, rel=1e-12)
    sample = eta.ravel()
    assert st.kstest(sample, st.laplace(scale=b).cdf).pvalue > 1e-4
    se = math.sqrt(20.0 * b**4 / sample.size)  # Var(X^2) = 20 b^4 for Laplace(b)
    assert abs(np.mean(sample**2) - 2 * b**2) < 5 * se


@pytest.mark.parametrize("m", [400, 40])
def test_ledger_matches_an_independent_accountant(m):
    f = _logistic()
    S1 = f.l1_sensitivity
    for alg in ALGOS:
        r = alg(f, epsilon=1.3, steps=30, batch_size=m, trials=2, seed=0, trace=None)
        led = r.ledger
        b = r.params["laplace_scales"]
        per_step = np.array([_amplified(S1 / (m * bt), f.n, m) for bt in b])
        np.testing.assert_allclose(led.per_step, per_step, rtol=1e-10)
        # the naive formula above rounds at the 1e-16 level; the ledger is log-space exact
        assert per_step.sum() <= 1.3 * (1 + 1e-12) and led.epsilon <= led.target_epsilon
        assert led.notion == "pure-DP" and led.neighbouring is Neighbouring.REPLACE_ONE
        if m == f.n and alg in (dp_gd, dp_heavy_ball, dp_nag, dp_masg):
            assert per_step.sum() == pytest.approx(1.3, rel=1e-9)  # uniform budget: all spent


def test_composition_against_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    f = _logistic()
    r = dp_nag_opt(f, epsilon=1.0, steps=25, trials=1, seed=0, trace=None)
    # m = n: each step is the Laplace mechanism on the mean (sensitivity S_1/n) with scale
    # b_t, i.e. noise multiplier b_t n / S_1; for Laplace the relation only enters through
    # the sensitivity (dp_accounting models it under add/remove).
    # The max privacy loss of Laplace is S/b, so the PLD at a tiny delta is at most the pure-DP
    # sum (up to the accountant's pessimistic discretisation, 1e-5 per step) and close to it.
    acc = pld_privacy_accountant.PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
                                               value_discretization_interval=1e-5)
    scales = r.params["laplace_scales"]
    for bt in scales:
        acc.compose(dpa.LaplaceDpEvent(bt * f.n / f.l1_sensitivity))
    pld_eps = acc.get_epsilon(1e-10)
    assert 0.9 * r.ledger.epsilon <= pld_eps <= r.ledger.epsilon + 2e-5 * len(scales)
    assert r.ledger.epsilon <= 1.0


def _reference_momentum(f, kind, alphas, betas, restarts, m, seed, trials, x0):
    """Independent NumPy implementation of (5)/(6) on the algorithms' mini-batches."""
    sampler, _ = make_streams(seed, trials, f.xp)
    A, y = f.features_np, f.labels_np
    lam2 = f.l2
    x = np.tile(np.asarray(x0, float), (trials, 1))
    xp_ = x.copy()
    for t in range(len(alphas)):
        if restarts[t]:
            xp_ = x.copy()
        idx = to_numpy(sampler.subsample(f.n, m)) if m < f.n else None
        point = x + betas[t] * (x - xp_) if kind == "nag" else x
        g = np.empty_like(x)
        for k in range(trials):
            rows = slice(None) if idx is None else idx[k]
            z = y[rows] * (A[rows] @ point[k])
            g[k] = -(A[rows] * (y[rows] / (1 + np.exp(z)))[:, None]).mean(0) + lam2 * point[k]
        new = point - alphas[t] * g
        if kind == "hb":
            new = new + betas[t] * (x - xp_)
        xp_, x = x, new
    return x


@pytest.mark.parametrize("m", [400, 50])
def test_infinite_epsilon_recovers_the_non_private_methods(m):
    f = _logistic()
    x0 = np.full(f.d, 2.0)
    a = 0.5 / f.smoothness
    for alg, kind in [(dp_gd, "hb"), (dp_heavy_ball, "hb"), (dp_nag, "nag"),
                      (dp_masg, "nag")]:
        kw = dict(epsilon=math.inf, steps=40, batch_size=m, trials=3, seed=7, x0=x0)
        if alg is not dp_masg:
            kw["step_size"] = a
        r = alg(f, **kw)
        p = r.params
        restarts = np.zeros(40, bool)
        if alg is dp_masg:
            restarts[1:] = p["stages"][1:] != p["stages"][:-1]
        want = _reference_momentum(f, kind, p["step_sizes"], p["momenta"], restarts, m, 7, 3, x0)
        np.testing.assert_allclose(to_numpy(r.x), want, rtol=1e-11, atol=1e-13,
                                   err_msg=r.algorithm)
        assert r.ledger.notion == "non-private" and np.all(p["laplace_scales"] == 0)


def test_heavy_ball_reaches_the_lyapunov_stationary_error():
    lam = np.array([0.5, 1.0, 2.0])
    q = QuadraticObjective(lam, b=[1.0, -1.0, 0.5])
    alpha, beta, T, eps, S, trials = 0.3, 0.5, 160, 40.0, 0.05, 1500
    r = dp_heavy_ball(q, epsilon=eps, steps=T, step_size=alpha, momentum=beta, trials=trials,
                      seed=11, x0=q.optimum.x, sensitivity=S)
    b = S / _eps0(eps, T, 1, 1)  # n = m = 1: b = S T / eps
    sigma2 = 2 * b * b
    want = 0.0
    for li in lam:  # per eigen-direction: (e_t, e_{t-1}) with M and input (-alpha, 0)
        M = np.array([[1 + beta - alpha * li, -beta], [1.0, 0.0]])
        P = scipy.linalg.solve_discrete_lyapunov(M, np.diag([alpha**2 * sigma2, 0.0]))
        want += 0.5 * li * P[0, 0]
    # Kuru et al. m(alpha, beta) (Thm 3.5, sheet §11 item 8) is the same stationary value
    kuru_m = 0.5 * np.sum(sigma2 * alpha * (1 + beta)
                          / ((1 - beta) * (2 + 2 * beta - alpha * lam)))
    assert want == pytest.approx(kuru_m, rel=1e-10)
    tail = r.trace[:, -40:].mean(axis=1)  # per-trial time averages, iid over trials
    se = tail.std(ddof=1) / math.sqrt(trials)
    assert abs(tail.mean() - want) < 5 * se, (tail.mean(), want, se)


def test_dp_nag_matches_exact_covariance_and_respects_theorem_4_1():
    lam = np.array([0.2, 1.0, 3.0])
    q = QuadraticObjective(lam)  # x* = 0
    T, eps, S, trials = 60, 30.0, 0.02, 2000
    x0 = np.array([1.0, -1.0, 2.0])
    a = 1.0 / q.smoothness
    r = dp_nag(q, epsilon=eps, steps=T, step_size=a, trials=trials, seed=4, x0=x0,
               sensitivity=S)
    b = r.params["laplace_scales"]
    sched = nesterov_schedule(a, T)
    exact = nesterov_expected_error_quadratic(sched, q.strong_convexity, lam, 2 * b**2, x0)
    mean = r.trace.mean(0)
    se = r.trace.std(0, ddof=1) / math.sqrt(trials)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-12)
    bound = nesterov_recursion(sched, q.strong_convexity, q.smoothness, float(q.loss(
        x0[None])[0] - q.optimum.value), b, q.d)
    assert np.all(mean <= bound * (1 + 1e-12) + 5 * se)


def test_masg_uses_the_schedule_and_restarts():
    f = _logistic()
    r = dp_masg(f, epsilon=1.0, steps=300, c=0.5, trials=1, seed=0, trace=None)
    sched = masg_schedule(f.strong_convexity, f.smoothness, horizon=300, c=0.5)
    np.testing.assert_array_equal(r.params["step_sizes"], sched.steps)
    beta = (1 - np.sqrt(f.strong_convexity * sched.steps)) / (1 + np.sqrt(
        f.strong_convexity * sched.steps))
    np.testing.assert_allclose(r.params["momenta"], beta)


def test_opt_variants_reselect_the_horizon_and_spend_more_later():
    f = _logistic()
    r = dp_nag_opt(f, epsilon=0.5, steps=400, trials=1, seed=0, trace=None)
    assert 1 <= r.params["horizon"] == r.steps <= 400 and r.trace.shape == (1, 0)
    eps_t = r.ledger.per_step
    assert r.ledger.epsilon <= 0.5
    assert np.all(np.diff(eps_t) >= -1e-15)  # Prop. 4.2: a_{T,t} grows with t
    full = dp_nag(f, epsilon=0.5, steps=50, allocation="optimal", trials=1, seed=0,
                  trace=None)
    assert full.params["horizon"] == 50


@pytest.mark.parametrize("alg", ALGOS)
def test_array_api_strict_and_reproducibility(alg):
    f_np = _logistic(n=120, d=3)
    f_st = _logistic(n=120, d=3, backend="array_api_strict")
    kw = dict(epsilon=2.0, steps=15, batch_size=30, trials=3, seed=9, x0=1.0)
    r1, r2, r3 = alg(f_np, **kw), alg(f_st, **kw), alg(f_np, **kw)
    assert r2.backend == "array_api_strict"
    np.testing.assert_allclose(to_numpy(r2.x), to_numpy(r1.x), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(to_numpy(r3.x), to_numpy(r1.x))
    np.testing.assert_array_equal(r3.trace, r1.trace)
    r4 = alg(f_np, **{**kw, "seed": 10})
    assert not np.allclose(to_numpy(r4.x), to_numpy(r1.x))


def test_bad_configurations_raise_clear_errors():
    f = _logistic()
    cases = [
        (dict(step_size=-0.1), "step_size"),
        (dict(batch_size=f.n + 1), "batch_size"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(momentum=1.0), "momentum"),
        (dict(steps=0), "steps"),
        (dict(x0=np.zeros(f.d + 1)), "x0"),
        (dict(budgets=np.full(10, 0.2)), "budgets"),
    ]
    for extra, name in cases:
        kw = dict(epsilon=1.0, steps=10, trials=1, seed=0)
        kw.update(extra)
        with pytest.raises(ValueError, match=name):
            dp_heavy_ball(f, **kw)
    with pytest.raises(ValueError, match="allocation"):
        dp_nag(f, epsilon=1.0, steps=5, allocation="best")
    with pytest.raises(ValueError, match="sensitivity"):
        dp_gd(QuadraticObjective([1.0, 2.0]).__class__([1.0], basis=None), epsilon=1.0,
              steps=3, sensitivity=math.inf)
    with pytest.raises(ValueError, match="delta"):
        dp_gd(f, epsilon=1.0, steps=3, mechanism="gaussian", clip_threshold=1.0)


def test_gaussian_dp_gd_ledger_and_noise():
    f = _logistic()
    r = dp_gd(f, epsilon=0.8, delta=1e-6, mechanism="gaussian", clip_threshold=0.5, steps=20,
              trials=2, seed=0)
    led = r.ledger
    # independent: rho = (sqrt(log(1/d)+eps) - sqrt(log(1/d)))^2 split over T, Delta = 2C/n
    L = math.log(1e6)
    rho = (math.sqrt(L + 0.8) - math.sqrt(L)) ** 2
    sigma = (2 * 0.5 / f.n) / math.sqrt(2 * rho / 20)
    assert r.params["sigma"] == pytest.approx(sigma, rel=1e-9)
    assert led.rho <= rho * (1 + 1e-12) and led.epsilon <= 0.8
    assert led.epsilon == pytest.approx(0.8, rel=1e-6)
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant

    # neighbouring means are at most Delta = 2C/n apart: a unit-distance Gaussian with
    # multiplier sigma / Delta in dp_accounting's add/remove convention
    acc = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dpa.GaussianDpEvent(r.params["sigma"] / (2 * 0.5 / f.n)), 20)
    assert acc.get_epsilon(1e-6) <= 0.8


@settings(max_examples=20, deadline=None)
@given(n=hs.integers(2, 500), frac=hs.floats(0.01, 1.0), T=hs.integers(1, 40),
       eps=hs.floats(1e-3, 20.0))
def test_ledger_never_overshoots(n, frac, T, eps):
    m = max(1, min(n, int(round(frac * n))))
    q = QuadraticObjective([1.0], offsets=np.linspace(-1, 1, n)[:, None])
    r = dp_heavy_ball(q, epsilon=eps, steps=T, step_size=0.1, momentum=0.3, batch_size=m,
                      trials=1, seed=0, trace=None)
    S = q.l1_sensitivity
    # exact sum (the float oracle rounded a spent 1e-3 to 1e-3 + 1.1e-15 at n = 2, T = 11)
    with mpmath.workdps(50):
        spent = mpmath.fsum(_amplified_exact(S / (m * b), n, m)
                            for b in r.params["laplace_scales"])
        assert spent <= mpmath.mpf(eps) and r.ledger.epsilon <= eps


def test_dp_nag_source_names_the_noise_scale_it_uses():
    # kuru_et_al.md §11 item 4: (27) prints S_1/(n eps_0), (12) gives S_1/(m eps_0); the code
    # uses (12), so the citation must say so and cannot be VERBATIM.
    from dpbounds.provenance import Provenance

    f = _logistic()
    m, T, eps = 40, 10, 1.0
    r = dp_nag(f, epsilon=eps, steps=T, batch_size=m, trials=1, seed=0, trace=None)
    assert r.source.provenance is Provenance.RECONSTRUCTED
    assert "(27)" in r.source.result and "(12)" in r.source.result
    assert "§11" in r.source.note
    b = f.l1_sensitivity / (m * _eps0(eps, T, f.n, m))  # eq. (12), uniform budgets
    np.testing.assert_allclose(r.params["laplace_scales"], b, rtol=1e-12)
    assert not np.allclose(r.params["laplace_scales"], b * m / f.n)  # not (27)'s printed n


def test_reselected_horizon_is_the_horizon_the_opt_methods_run():
    """``reselected_horizon`` predicts ``params["horizon"]``; two requested T with the same
    horizon are the same run bit for bit (what bench_kuru_workload relies on to run it once);
    control: a different horizon gives a different run."""
    from dpbounds.algorithms import dp_masg_opt, dp_nag_opt, reselected_horizon
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression

    ds = kuru_synthetic(n=2000, d=5, seed=0)
    f = LogisticRegression.kuru(*ds, lam=0.01, paper_smoothness=True)
    for alg, method in ((dp_nag_opt, "nag"), (dp_masg_opt, "masg")):
        for T, m, c in ((30, 100, 1.0), (500, 2000, 0.1), (1000, 2000, 0.1), (400, 100, 1.0)):
            r = alg(f, epsilon=1.0, steps=T, batch_size=m, c=c, trials=2, seed=3)
            h = reselected_horizon(f, method=method, epsilon=1.0, steps=T, batch_size=m, c=c)
            assert h == r.params["horizon"] <= T
        kw = dict(epsilon=1.0, batch_size=2000, c=0.1, trials=2, seed=3)
        a, b = alg(f, steps=500, **kw), alg(f, steps=1000, **kw)
        assert a.params["horizon"] == b.params["horizon"]
        assert np.array_equal(a.trace, b.trace) and np.array_equal(a.x, b.x)
        short = alg(f, steps=20, **kw)  # capped below the re-selected horizon
        assert short.params["horizon"] == 20 != a.params["horizon"]
        # the functions' own arguments that move the horizon are honoured
        extra = (dict(step_size=0.05) if method == "nag" else dict(p=2.0, first_stage=7))
        r = alg(f, epsilon=1.0, steps=800, batch_size=2000, trials=1, seed=3, **extra)
        assert r.params["horizon"] == reselected_horizon(f, method=method, epsilon=1.0,
                                                         steps=800, **extra)
    assert reselected_horizon(f, method="nag", epsilon=float("inf"), steps=77) == 77
    with pytest.raises(ValueError, match="method"):
        reselected_horizon(f, method="hb", epsilon=1.0, steps=10)
