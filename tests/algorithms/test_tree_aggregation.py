"""Online tree aggregation against independent oracles.

Oracles: the plain momentum recursion (computed here), the direct COMPOSE-and-sum reference
driven by :func:`dpbounds.privacy.tree.compose` (an independent COMPOSE implementation),
the closed-form noise variance of Lemma 12 (Monte Carlo with a 5-sigma band), and the
array-api-strict namespace.
"""

from __future__ import annotations

import math

import array_api_strict
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.algorithms.tree_aggregation import (
    ComposeAndSumAggregator,
    TreeAggregator,
    compose_noise_variance,
    node_formed_at,
    tree_momentum_reference,
)
from dpbounds.privacy.tree import compose, nodes_ending_at


def _plain_momentum(g: np.ndarray, alpha: float) -> np.ndarray:
    m = np.zeros(g.shape[1:])
    out = []
    for t in range(g.shape[0]):
        m = (1.0 - alpha) * m + alpha * g[t]
        out.append(m)
    return np.stack(out)


def _run(cls, g, alpha, noise=None, **kw):
    tree = cls(g.shape[1:], alpha, xp=np, **kw)
    return np.stack([tree.step(g[t], None if noise is None else noise[t])
                     for t in range(g.shape[0])])


@settings(max_examples=25, deadline=None)
@given(
    alpha=st.floats(1e-4, 1.0),
    n_steps=st.integers(1, 700),
    resync=st.sampled_from([1, 7, 64, 10**9]),
    seed=st.integers(0, 2**31),
)
def test_zero_noise_equals_plain_momentum(alpha, n_steps, resync, seed):
    g = np.random.default_rng(seed).standard_normal((n_steps, 2, 3))
    online = _run(TreeAggregator, g, alpha, resync_every=resync)
    plain = _plain_momentum(g, alpha)
    # round-off only: the incremental release adds O(eps) per step, damped by (1-alpha)
    tol = 1e-13 * (1.0 + min(n_steps, resync, 1.0 / alpha))
    np.testing.assert_allclose(online, plain, rtol=0, atol=tol)


@settings(max_examples=15, deadline=None)
@given(alpha=st.floats(0.0, 1.0), n_steps=st.integers(1, 160), seed=st.integers(0, 2**31))
def test_online_equals_direct_compose_reference(alpha, n_steps, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n_steps, 3, 2))
    zeta = 0.7 * rng.standard_normal((n_steps, 3, 2))
    direct = tree_momentum_reference(g, alpha, zeta, xp=np, compose=compose)
    np.testing.assert_allclose(_run(TreeAggregator, g, alpha, zeta), direct, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        _run(ComposeAndSumAggregator, g, alpha, zeta), direct, rtol=0, atol=1e-12
    )


def test_live_nodes_are_compose_and_memory_is_logarithmic():
    tree = TreeAggregator((1, 1), 0.1, xp=np)
    for t in range(1, 1025):
        assert tree.next_node() == nodes_ending_at(t)[-1] == node_formed_at(t)
        tree.step(np.ones((1, 1)))
        nodes = [(n.start, n.end) for n in tree.live_nodes()]
        assert nodes == compose(1, t)
        assert len(tree._slots) <= t.bit_length()


def test_long_horizon_no_drift():
    # small alpha: the un-damped incremental update would accumulate round-off
    rng = np.random.default_rng(3)
    n_steps, alpha = 1 << 14, 1e-5
    g = rng.standard_normal((n_steps, 1, 2))
    zeta = rng.standard_normal((n_steps, 1, 2))
    online = _run(TreeAggregator, g, alpha, zeta)
    composed = _run(ComposeAndSumAggregator, g, alpha, zeta)
    assert np.max(np.abs(online - composed)) < 1e-11


def test_noise_variance_matches_lemma_12_monte_carlo():
    """Per-coordinate variance of m_hat_t - m_t = sigma^2 sum_COMPOSE (1-alpha)^(2(t-b))."""
    rng = np.random.default_rng(12)
    trials, d, n_steps, alpha, sigma = 400, 50, 64, 0.05, 1.3
    tree = TreeAggregator((trials, d), alpha, xp=np)
    m = np.zeros((trials, d))
    n_samples = trials * d
    for t in range(1, n_steps + 1):
        g = rng.standard_normal((trials, d))
        m = (1 - alpha) * m + alpha * g
        m_hat = tree.step(g, sigma * rng.standard_normal((trials, d)))
        err = (m_hat - m).ravel()
        expected = sigma**2 * sum((1 - alpha) ** (2 * (t - b)) for _, b in compose(1, t))
        # 5-sigma band of the sample variance of n Gaussian samples (plus the mean)
        band = 5.0 * expected * math.sqrt(2.0 / (n_samples - 1))
        assert abs(np.var(err, ddof=1) - expected) < band, t
        assert abs(np.mean(err)) < 5.0 * math.sqrt(expected / n_samples)
        # compose_noise_variance uses privacy.tree.compose; the binary counter's live nodes
        # are an independent enumeration of COMPOSE(1, t)
        live = sigma**2 * sum((1 - alpha) ** (2 * (t - nd.end)) for nd in tree.live_nodes())
        assert compose_noise_variance(t, alpha, sigma) == pytest.approx(live, rel=1e-12)


def test_compose_noise_variance_popcount_and_bound():
    for t in range(1, 2000):
        assert compose_noise_variance(t, 0.0) == bin(t).count("1")
        # closed form from the set bits of t (the node ending at b has b = t with the bits
        # below the current one cleared): an independent bit-walk
        bits = [j for j in range(t.bit_length()) if t >> j & 1]
        ends = [t - (t & ((1 << j) - 1)) for j in bits]
        expected = 4.0 * math.fsum(0.7 ** (2 * (t - b)) for b in ends)
        assert compose_noise_variance(t, 0.3, 2.0) == pytest.approx(expected, rel=1e-12)
        assert compose_noise_variance(t, 0.3, 2.0) <= 4.0 * (math.floor(math.log2(t)) + 1)


def test_prefix_sum_tree_alpha_zero():
    rng = np.random.default_rng(0)
    g = rng.standard_normal((100, 1, 4))
    np.testing.assert_allclose(_run(TreeAggregator, g, 0.0), np.cumsum(g, axis=0), atol=1e-12)


def test_array_api_strict_matches_numpy():
    rng = np.random.default_rng(5)
    g = rng.standard_normal((90, 2, 3))
    zeta = rng.standard_normal((90, 2, 3))
    tree = TreeAggregator((2, 3), 0.2, xp=array_api_strict)
    strict = [tree.step(array_api_strict.asarray(g[t]), array_api_strict.asarray(zeta[t]))
              for t in range(90)]
    assert all(isinstance(x, array_api_strict._array_object.Array) for x in strict)
    strict_np = np.stack([np.asarray(x) for x in strict])
    np.testing.assert_allclose(strict_np, _run(TreeAggregator, g, 0.2, zeta), atol=1e-14)
    ref = tree_momentum_reference(
        array_api_strict.asarray(g), 0.2, array_api_strict.asarray(zeta), compose=compose
    )
    np.testing.assert_allclose(np.asarray(ref), strict_np, atol=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        TreeAggregator((1, 2), 1.5)
    with pytest.raises(ValueError, match="alpha"):
        TreeAggregator((1, 2), -0.1)
    with pytest.raises(ValueError, match="shape"):
        TreeAggregator((1, 0), 0.5)
    tree = TreeAggregator((1, 2), 0.5, xp=np)
    with pytest.raises(ValueError, match="value must have shape"):
        tree.step(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="node_noise must have shape"):
        tree.step(np.zeros((1, 2)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="t must be"):
        node_formed_at(0)
    with pytest.raises(ValueError, match="node_noises"):
        tree_momentum_reference(np.zeros((3, 1, 2)), 0.5, np.zeros((2, 1, 2)), compose=compose)
