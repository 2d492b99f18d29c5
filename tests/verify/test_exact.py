"""The exact values of the two-sided verdicts against independent oracles (a second formula, a
Monte Carlo run of other code, a closed form), each with a negative control that must fail."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.algorithms.tree_aggregation import TreeAggregator
from dpbounds.backend import TrialRandom
from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_stationary_error
from dpbounds.verify.exact import (
    expected_norm_factor,
    momentum_exact,
    rho_for_epsilon,
    tree_check_rows,
    tree_noise_covariance,
    tree_sigma_for_epsilon,
    tree_step_levels,
)
from sims.tree_noise import compose_variance


@given(t=st.integers(1, 5000), alpha=st.floats(0.0, 1.0))
@settings(max_examples=60, deadline=None)
def test_alg1_variance_matches_the_binary_expansion(t: int, alpha: float) -> None:
    """Second method: the sims' variance from t's binary expansion (other code)."""
    c = tree_noise_covariance([t], alpha=alpha, sigma_1=1.3)
    assert c[0, 0] == pytest.approx(compose_variance(t, alpha, 1.3), rel=1e-12)


def _simulated_alg2_noise(n: int, epochs: int, alpha: float, gamma: float, s1: float,
                          s2: float, trials: int, d: int) -> np.ndarray:
    """The re-injected tree noise e_t = n_t + (1-gamma) e_(t-n), driven through the library's
    online aggregator with zero inputs (so the release is the noise)."""
    rng = TrialRandom(7, trials, np)
    tree = TreeAggregator((trials, d), alpha)
    zeros = np.zeros((trials, d))
    levels = tree_step_levels(n * epochs, s1, s2, n)
    out, past = [], [None] * n
    for t in range(1, n * epochs + 1):
        e = np.asarray(tree.step(zeros, rng.normal((d,), scale=levels[t - 1])))
        if t > n:
            e = e + (1.0 - gamma) * past[(t - 1) % n]
        past[(t - 1) % n] = e
        out.append(e)
    return np.stack(out, axis=1)  # (trials, T, d)


def test_alg2_covariance_against_a_monte_carlo_run() -> None:
    """Variances and a cross-epoch covariance (shared nodes) of Algorithm 2's noise within
    5 standard errors of 4000 x 3 simulated coordinates; 1/sqrt(2) of the noise fails."""
    n, epochs, alpha, gamma, s1, s2 = 6, 5, 0.3, 0.4, 1.0, 0.5
    e = _simulated_alg2_noise(n, epochs, alpha, gamma, s1, s2, trials=4000, d=3)
    steps = [1, 7, 13, 25, 30]
    c = tree_noise_covariance(steps, alpha=alpha, sigma_1=s1, sigma_2=s2, gamma=gamma,
                              steps_per_epoch=n)
    x = e[:, [s - 1 for s in steps], :].transpose(1, 0, 2).reshape(len(steps), -1)
    emp = x @ x.T / x.shape[1]
    se = np.sqrt((np.outer(np.diag(c), np.diag(c)) + c**2) / x.shape[1])
    assert np.all(np.abs(emp - c) <= 5 * se), (emp, c)
    assert c[3, 4] > 0.1 * c[4, 4]  # epochs share nodes: correlated, not white
    scaled = x / math.sqrt(2.0)
    emp_bad = scaled @ scaled.T / x.shape[1]
    assert np.any(np.abs(np.diag(emp_bad) - np.diag(c)) > 5 * np.diag(se))


def test_alg2_reinjection_exceeds_the_plain_tree() -> None:
    """gamma = 1 is Algorithm 1's tree; a smaller gamma adds ~1/(2 gamma) in variance."""
    kw = dict(alpha=0.01, sigma_1=1.0, sigma_2=1.0, steps_per_epoch=100)
    one = tree_noise_covariance([950], gamma=1.0, **kw)[0, 0]
    assert one == pytest.approx(tree_noise_covariance([950], alpha=0.01, sigma_1=1.0)[0, 0])
    assert tree_noise_covariance([950], gamma=0.1, **kw)[0, 0] > 3 * one


@given(eps=st.floats(1e-3, 50.0), delta=st.floats(1e-12, 0.1))
@settings(max_examples=50, deadline=None)
def test_rho_inverts_the_standard_conversion(eps: float, delta: float) -> None:
    rho = rho_for_epsilon(eps, delta)
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) == pytest.approx(eps, rel=1e-9)


def test_tree_sigma_matches_the_algorithms_calibration() -> None:
    """Independent closed form against the run's calibrate() (zCDP accountant)."""
    from dpbounds.algorithms.tree_momentum import tree_momentum_privacy

    priv = tree_momentum_privacy(4.0, 1e-6, n=50, epochs=3, alpha=0.02, clip_norm=1.0)
    (s,) = tree_sigma_for_epsilon(4.0, 1e-6, [(priv.sensitivity[0], priv.node_count[0], 1.0)])
    assert s == pytest.approx(priv.sigma, rel=1e-9)


def test_expected_norm_factor() -> None:
    assert expected_norm_factor(1) == pytest.approx(math.sqrt(2 / math.pi))
    assert expected_norm_factor(3) == pytest.approx(2 * math.sqrt(2 / math.pi))


def test_heavy_ball_recursion_reaches_the_stationary_closed_form() -> None:
    """From x0 = x*, long runs approach Kuru et al.'s stationary E[F - F*] (the Lyapunov
    closed form of the bounds module, other code); half the noise variance does not."""
    lam = np.array([0.1, 0.5, 1.0])
    alpha, beta, b = 0.5, 0.3, 0.01
    value, noise = momentum_exact(lam, np.zeros(3), kind="hb", step_sizes=[alpha] * 400,
                                  momenta=[beta] * 400, laplace_scales=[b] * 400)
    ref = heavy_ball_stationary_error(alpha, beta, lam, sigma2=2 * b * b)
    assert value == pytest.approx(noise)
    assert value == pytest.approx(float(ref.suboptimality), rel=1e-9)
    half, _ = momentum_exact(lam, np.zeros(3), kind="hb", step_sizes=[alpha] * 400,
                             momenta=[beta] * 400, laplace_scales=[b / math.sqrt(2)] * 400)
    assert half != pytest.approx(float(ref.suboptimality), rel=0.1)


def test_nesterov_recursion_against_a_direct_simulation() -> None:
    """The mean part against an iterated noiseless Nesterov run on a diagonal quadratic."""
    lam = np.array([0.2, 1.0])
    e0 = np.array([1.0, -2.0])
    a, bta, T = 0.9, 0.4, 7
    x, xp = e0.copy(), e0.copy()
    for _ in range(T):
        y = x + bta * (x - xp)
        x, xp = y - a * lam * y, x
    value, noise = momentum_exact(lam, e0, kind="nag", step_sizes=[a] * T, momenta=[bta] * T,
                                  laplace_scales=[0.0] * T)
    assert noise == 0.0
    assert value == pytest.approx(0.5 * float(np.sum(lam * x * x)), rel=1e-12)


# ----------------------------------------------------------------------------------------
# the former per-node Python loop (commit 6760ce0), kept as the oracle of the vectorised one
def _ref_compose(t: int) -> list[tuple[int, int]]:
    """COMPOSE(1, t): the dyadic nodes covering ``[1, t]``, one per set bit of ``t``."""
    out, start = [], 1
    for j in range(t.bit_length() - 1, -1, -1):
        if t >> j & 1:
            out.append((start, start + (1 << j) - 1))
            start += 1 << j
    return out


def _loop_covariance(steps: Sequence[int] | np.ndarray, *, alpha: float, sigma_1: float,
                          sigma_2: float | None = None, gamma: float | None = None,
                          steps_per_epoch: int | None = None) -> np.ndarray:
    r"""Per-coordinate covariance :math:`c_{tt'}` of the tree noise at the paper's ``steps``.

    Algorithm 1: ``sigma_1`` at every node. Algorithm 2 (``gamma`` and ``steps_per_epoch``
    ``S`` given): nodes starting in the first epoch get ``sigma_1``, later ones ``sigma_2``,
    and :math:`e_t=\sum_{k\ge0,\,t-kS\ge1}(1-\gamma)^k n_{t-kS}`.
    """
    alg2 = gamma is not None
    if alg2 and (steps_per_epoch is None or sigma_2 is None):
        raise ValueError("Algorithm 2 needs sigma_2, gamma and steps_per_epoch")
    q = 1.0 - alpha
    rows: list[dict[tuple[int, int], float]] = []
    for t in steps:
        t = int(t)
        w: dict[tuple[int, int], float] = {}
        k, s = 0, t
        while s >= 1:
            coef = (1.0 - gamma) ** k if gamma is not None else 1.0  # gamma given: alg2
            for node in _ref_compose(s):
                w[node] = w.get(node, 0.0) + coef * q ** (s - node[1])
            if not alg2 or coef == 0.0:
                break
            k, s = k + 1, s - steps_per_epoch  # type: ignore[operator]
        rows.append(w)
    from scipy import sparse  # noqa: PLC0415

    nodes = sorted({nd for w in rows for nd in w})
    col = {nd: i for i, nd in enumerate(nodes)}
    ri = [i for i, w in enumerate(rows) for _ in w]
    ci = [col[nd] for w in rows for nd in w]
    vals = [v for w in rows for v in w.values()]
    # sparse: Algorithm 2 at E epochs touches ~E log T nodes per traced step
    W = sparse.csr_matrix((vals, (ri, ci)), shape=(len(rows), len(nodes)))
    # alg2: steps_per_epoch and sigma_2 are set (checked above), so the `or` never applies
    var = np.array([(sigma_1 if not alg2 or a <= (steps_per_epoch or 0) else (sigma_2 or 0.0)) ** 2
                    for a, _ in nodes])
    return np.asarray((W @ sparse.diags(var) @ W.T).todense())


@given(steps=st.lists(st.integers(1, 3000), min_size=1, max_size=12),
       alpha=st.sampled_from([0.0, 0.003, 0.1, 0.5, 1.0]),
       gamma=st.sampled_from([None, 0.0, 0.05, 0.7, 1.0]), S=st.integers(1, 700))
@settings(max_examples=60, deadline=None)
def test_vectorised_covariance_equals_the_loop(steps: list[int], alpha: float,
                                               gamma: float | None, S: int) -> None:
    kw = {} if gamma is None else dict(sigma_2=0.7, gamma=gamma, steps_per_epoch=S)
    got = tree_noise_covariance(steps, alpha=alpha, sigma_1=1.3, **kw)
    want = _loop_covariance(steps, alpha=alpha, sigma_1=1.3, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # negative control: the other epoch's noise level is not interchangeable
    if gamma is not None and gamma < 1 and max(steps) > S + 1:
        swapped = tree_noise_covariance(steps, alpha=alpha, sigma_1=0.7, sigma_2=1.3,
                                        gamma=gamma, steps_per_epoch=S)
        assert not np.allclose(swapped, want, rtol=1e-6)


def test_check_rows_keep_every_step_or_an_even_subset() -> None:
    st_ = np.arange(1, 100_001, 50)
    assert tree_check_rows(st_).size == st_.size  # Algorithm 1: all
    assert tree_check_rows(st_, 100_000).size == st_.size  # one epoch: all
    rows = tree_check_rows(st_, 100, budget=20_000)
    pairs = ((st_[rows] - 1) // 100 + 1).sum()
    assert pairs <= 20_000 and rows.size > 30 and np.all(np.diff(rows) > 0)
    # at most 4096 rows whatever the algorithm: the dense covariance stays <= 134 MB (an
    # Algorithm 2 path run was killed at 23 GB); control: a short trace keeps every step
    long = np.arange(1, 1_000_001, 10)
    kept = tree_check_rows(long)
    assert kept.size == 4096 and kept[0] == 0 and kept[-1] == long.size - 1
    assert tree_check_rows(long[:4096]).size == 4096
