"""Tran & Cutkosky Algorithms 1 and 2 against independent oracles.

Oracles: a NumPy momentum-NSGD loop with hand-written gradients (epsilon = inf: Algorithm 1
with reshuffling, Algorithm 2 with one permutation, whose reconstruction must equal the plain
momentum it estimates); the exact noise covariance of the released momentum computed from
:func:`dpbounds.privacy.tree.compose` (Monte Carlo, 5-sigma band); dp_accounting's RDP
accountant for the ledger; brute-force node counts; array-api-strict.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from dpbounds.algorithms.tree_momentum import (
    _first_epoch_node_count,
    sensitivity_reduced_nsgd,
    tree_momentum_nsgd,
)
from dpbounds.backend import TrialRandom, to_numpy
from dpbounds.objectives import NonconvexLogisticRegression, QuadraticObjective
from dpbounds.privacy.rdp import DEFAULT_ORDERS
from dpbounds.privacy.tree import compose, dyadic_nodes

N, D, LAM = 24, 3, 0.1


def _problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, D))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    y = np.sign(A @ np.ones(D) + 0.5 * rng.standard_normal(N))
    y[y == 0] = 1.0
    return A, y, NonconvexLogisticRegression(A, y, lam=LAM)


def _full_sample_grad(A, y, x):
    """Gradient of log(1+exp(-y a.x)) + LAM sum x^2/(1+x^2) for one sample (a, y)."""
    data = -(y / (1.0 + np.exp(y * (A @ x)))) * A
    return data + LAM * 2 * x / (1 + x * x) ** 2


def _plain_momentum_nsgd(A, y, *, epochs, eta, trials, seed, batch, reshuffle):
    sampler = TrialRandom(seed, trials).split(3)[0]
    steps = N // batch
    alpha = 1.0 / steps
    x = np.zeros((trials, D))
    m = np.zeros((trials, D))
    perm = None
    for _ in range(epochs):
        if perm is None or reshuffle:
            perm = to_numpy(sampler.permutation(N))
        for i in range(steps):
            g = np.stack([
                np.mean([_full_sample_grad(A[j], y[j], x[k])
                         for j in perm[k, i * batch:(i + 1) * batch]], axis=0)
                for k in range(trials)])
            m = (1 - alpha) * m + alpha * g
            x = x - eta * m / np.linalg.norm(m, axis=1, keepdims=True)
    return x


@pytest.mark.parametrize("batch", [1, 4])
def test_algorithm_1_epsilon_inf_is_momentum_nsgd(batch):
    A, y, f = _problem()
    res = tree_momentum_nsgd(f, epsilon=math.inf, delta=1e-6, epochs=3, step_size=0.02,
                             batch_size=batch, trials=2, seed=9, trace=None)
    oracle = _plain_momentum_nsgd(A, y, epochs=3, eta=0.02, trials=2, seed=9, batch=batch,
                                  reshuffle=True)
    np.testing.assert_allclose(to_numpy(res.x), oracle, rtol=0, atol=1e-12)
    assert res.ledger.notion == "non-private"


@pytest.mark.parametrize("release", ["online", "compose"])
def test_algorithm_2_zero_noise_reconstructs_the_momentum(release):
    """Noise-free, m_hat_t = P_t + (1-gamma) m_hat_(t-S) equals the plain momentum."""
    A, y, f = _problem(1)
    res = sensitivity_reduced_nsgd(f, epsilon=math.inf, delta=1e-6, epochs=4, step_size=0.02,
                                   mixing=0.3, trials=2, seed=3, trace="grad_norm",
                                   release=release)
    oracle = _plain_momentum_nsgd(A, y, epochs=4, eta=0.02, trials=2, seed=3, batch=1,
                                  reshuffle=False)
    np.testing.assert_allclose(to_numpy(res.x), oracle, rtol=0, atol=1e-12)
    # the recorded ||m_hat_t - m_t|| (plain recursion of the raw gradients) vanishes too
    assert np.max(res.diagnostics["noise_error"]) < 1e-13
    # 2 gradient evaluations per step after the first epoch
    assert res.gradient_evaluations == N + 2 * 3 * N


def _zero_objective():
    return QuadraticObjective(np.zeros(D), offsets=np.zeros((N, D)))


def test_algorithm_1_tree_noise_variance_monte_carlo():
    """E||m_hat_t - m_t||^2 / d = sigma^2 sum_COMPOSE(1,t) (1-alpha)^(2(t-b)) (Lemma 12)."""
    trials = 400
    res = tree_momentum_nsgd(_zero_objective(), epsilon=3.0, delta=1e-5, epochs=3,
                             step_size=0.1, clip_threshold=1.0, trials=trials, seed=1, trace="loss")
    sigma, alpha = res.params["sigma"], res.params["momentum_weight"]
    err2 = res.diagnostics["noise_error"] ** 2 / D  # (trials, T)
    for k, t in enumerate(res.diagnostics["step"] + 1):
        var = sigma**2 * sum((1 - alpha) ** (2 * (t - b)) for _, b in compose(1, int(t)))
        band = 5 * var * math.sqrt(2 / (trials * D))
        assert abs(np.mean(err2[:, k]) - var) < band, t


def _algorithm_2_noise_variance(t, steps, alpha, gamma, sigma_1, sigma_2):
    """Per-coordinate variance of m_hat_t = sum_k (1-gamma)^k Z_(t-kS), from COMPOSE."""
    coeff: dict[tuple[int, int], float] = {}
    k = 0
    while t - k * steps >= 1:
        s = t - k * steps
        for a, b in compose(1, s):
            coeff[(a, b)] = coeff.get((a, b), 0.0) + (1 - gamma) ** k * (1 - alpha) ** (s - b)
        k += 1
    return sum(c**2 * (sigma_1 if a <= steps else sigma_2) ** 2 for (a, b), c in coeff.items())


def test_algorithm_2_noise_variance_monte_carlo_two_levels():
    trials = 400
    res = sensitivity_reduced_nsgd(_zero_objective(), epsilon=3.0, delta=1e-5, epochs=4,
                                   step_size=0.01, clip_threshold=1.0, smoothness=1.0, mixing=0.3,
                                   trials=trials, seed=2, trace="loss")
    p = res.params
    # the two noise levels: D = L eta S = 0.24 < G = 1, so later nodes are less sensitive
    assert p["sigma_1"] > p["sigma_2"] > 0
    err2 = res.diagnostics["noise_error"] ** 2 / D
    for k, t in enumerate(res.diagnostics["step"] + 1):
        var = _algorithm_2_noise_variance(int(t), p["steps_per_epoch"], p["momentum_weight"],
                                          p["mixing"], p["sigma_1"], p["sigma_2"])
        band = 5 * var * math.sqrt(2 / (trials * D))
        assert abs(np.mean(err2[:, k]) - var) < band, t


def _rdp_epsilon(groups, delta):
    acc = rdp_privacy_accountant.RdpAccountant(
        list(DEFAULT_ORDERS), dp_accounting.NeighboringRelation.REPLACE_ONE)
    for noise_multiplier, count in groups:
        acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier), count)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("epsilon,delta", [(0.5, 1e-6), (2.0, 1e-5), (8.0, 1e-8)])
def test_ledgers_within_target_by_dp_accounting(epsilon, delta):
    """Each node is a Gaussian mechanism with multiplier sigma/Delta; a sample is in <= K."""
    _, _, f = _problem()
    r1 = tree_momentum_nsgd(f, epsilon=epsilon, delta=delta, epochs=5, step_size=0.01,
                            trace=None)
    p = r1.params
    assert r1.ledger.within_target
    oracle = _rdp_epsilon([(p["sigma"] / p["node_sensitivity"], p["node_count"])], delta)
    assert oracle <= epsilon * (1 + 1e-9)
    r2 = sensitivity_reduced_nsgd(f, epsilon=epsilon, delta=delta, epochs=5, step_size=0.01,
                                  trace=None)
    q = r2.params
    assert r2.ledger.within_target
    oracle = _rdp_epsilon([(q["sigma_1"] / q["node_sensitivity_1"], q["node_count_1"]),
                           (q["sigma_2"] / q["node_sensitivity_2"], q["node_count_2"])], delta)
    assert oracle <= epsilon * (1 + 1e-9)
    # sensitivity reduction: later nodes are less sensitive than first-epoch ones
    assert q["node_sensitivity_2"] < q["node_sensitivity_1"] == pytest.approx(
        p["node_sensitivity"])


@pytest.mark.parametrize("steps,epochs", [(4, 3), (5, 4), (8, 5), (12, 3), (3, 9)])
def test_first_epoch_node_count_bounds_brute_force(steps, epochs):
    """K_1 >= max over positions of #nodes starting in epoch 1 that hold an occurrence."""
    n_steps = steps * epochs
    nodes = [(a, b) for a, b in dyadic_nodes(n_steps) if a <= steps]
    worst = max(
        sum(any(a <= i + k * steps <= b for k in range(epochs)) for a, b in nodes)
        for i in range(1, steps + 1)
    )
    assert worst <= _first_epoch_node_count(steps, n_steps)


def test_array_api_strict_and_seeds():
    _, _, f = _problem(2)
    fs = f.to_backend("array_api_strict")
    for alg in (tree_momentum_nsgd, sensitivity_reduced_nsgd):
        kw = dict(epsilon=2.0, delta=1e-5, epochs=2, step_size=0.05, trials=2, seed=8,
                  trace_every=6)
        a = alg(f, **kw)
        b = alg(fs, **kw)
        assert b.backend == "array_api_strict"
        np.testing.assert_allclose(to_numpy(b.x), to_numpy(a.x), rtol=0, atol=1e-12)
        np.testing.assert_allclose(to_numpy(b.x_output), to_numpy(a.x_output), atol=1e-12)
        np.testing.assert_allclose(b.trace, a.trace, atol=1e-12)
        np.testing.assert_array_equal(to_numpy(alg(f, **kw).x), to_numpy(a.x))
        assert not np.allclose(to_numpy(alg(f, **{**kw, "seed": 9}).x), to_numpy(a.x))


def test_output_is_a_uniform_iterate_and_steps_have_length_eta():
    _, _, f = _problem()
    res = tree_momentum_nsgd(f, epsilon=1.0, delta=1e-5, epochs=2, step_size=0.05,
                             trials=300, seed=0, trace=None)
    # x_hat = x_tau with tau uniform on 1..T; x_1 = x0 = 0 is chosen with probability 1/T
    zero = np.all(to_numpy(res.x_output) == 0.0, axis=1)
    T = res.params["steps"]
    assert abs(zero.mean() - 1 / T) < 5 * math.sqrt((1 / T) / 300) + 1e-12
    # every step moves exactly eta, so ||x_T - x_0|| <= eta * T
    assert np.all(np.linalg.norm(to_numpy(res.x), axis=1) <= 0.05 * T * (1 + 1e-12))


def test_bad_configuration():
    _, _, f = _problem()
    kw = dict(epsilon=1.0, delta=1e-5, epochs=2, step_size=0.1)
    for alg in (tree_momentum_nsgd, sensitivity_reduced_nsgd):
        for key, value, name in [
            ("step_size", -0.1, "step_size"), ("step_size", 0.0, "step_size"),
            ("batch_size", N + 1, "batch_size"), ("epsilon", 0.0, "epsilon"),
            ("epsilon", -2.0, "epsilon"), ("delta", 0.0, "delta"), ("epochs", 0, "epochs"),
            ("momentum_weight", 1.5, "momentum_weight"),
            ("momentum_weight", 0.0, "momentum_weight"),
            ("neighbouring", "x", "neighbour"),
            ("neighbouring", "add_remove", "replace_one"),
            ("clip_threshold", -1.0, "clip_threshold"), ("release", "fast", "release"),
        ]:
            with pytest.raises(ValueError, match=name):
                alg(f, **{**kw, key: value})
        with pytest.raises(ValueError, match="x0"):
            alg(f, **kw, x0=np.zeros(D + 1))
        with pytest.raises(ValueError, match="clip_threshold"):
            alg(_zero_objective(), **kw)  # no finite gradient bound
    with pytest.raises(ValueError, match="mixing"):
        sensitivity_reduced_nsgd(f, **kw, mixing=1.2)
    with pytest.raises(ValueError, match="noise_split"):
        sensitivity_reduced_nsgd(f, **kw, noise_split=1.0)
