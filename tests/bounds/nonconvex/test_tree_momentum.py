"""Tran & Cutkosky Algorithm 1: each lemma against a direct computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.bounds.nonconvex import tree_momentum as tc
from dpbounds.bounds.theorem import sym


# ------------------------------------------------------------------ Lemma 5 (pathwise)
def _smooth_problem(rng, dim):
    """F(x) = sum log(1 + (x_i - c_i)^2) + x^T A x / 2, L-smooth with L = 2 + ||A||."""
    c = rng.normal(size=dim)
    M = rng.normal(size=(dim, dim)) / math.sqrt(dim)
    A = M @ M.T * 0.5
    L = 2.0 + np.linalg.eigvalsh(A).max()

    def F(x):
        return float(np.sum(np.log1p((x - c) ** 2)) + 0.5 * x @ A @ x)

    def grad(x):
        return 2 * (x - c) / (1 + (x - c) ** 2) + A @ x

    return F, grad, L


def test_lemma5_holds_on_every_path():
    rng = np.random.default_rng(0)
    lhs_rhs = sp.lambdify([sym(n) for n in ("R", "eta", "T", "L", "noise_err")], tc.lemma5.expr)
    worst = 0.0
    for path in range(300):
        dim = int(rng.integers(1, 6))
        F, grad, L = _smooth_problem(rng, dim)
        T = int(rng.integers(5, 200))
        eta = 10 ** rng.uniform(-3, 0)
        scale = 10 ** rng.uniform(-2, 1)
        x = rng.normal(size=dim) * 3
        x1, norms, errs = x.copy(), [], []
        for _ in range(T):
            g = grad(x)
            kind = path % 3  # Gaussian errors, adversarial errors, a fixed bias
            if kind == 0:
                m = g + scale * rng.normal(size=dim)
            elif kind == 1:
                m = -g * rng.uniform(0, 2) + scale * rng.normal(size=dim)
            else:
                m = g + scale * np.ones(dim)
            if not np.any(m):
                m = g + 1e-9
            norms.append(np.linalg.norm(g))
            errs.append(np.linalg.norm(m - g))
            x = x - eta * m / np.linalg.norm(m)
        decrease = F(x1) - F(x)
        lhs = float(np.mean(norms))
        rhs = float(lhs_rhs(decrease, eta, T, L, np.mean(errs)))
        assert lhs <= rhs, (path, lhs, rhs)
        worst = max(worst, lhs / rhs)
    assert worst > 0.05  # the check is not vacuous


# ------------------------------------------------------------------ Lemma 11 (simulation)
def test_lemma11_bounds_the_reshuffled_momentum_error():
    """Non-private RR momentum on f(x, z) = ||x - z||^2/2 clipped to G-Lipschitz on a ball."""
    rng = np.random.default_rng(1)
    n, dim, G = 32, 3, 1.0
    z = rng.normal(size=(n, dim))
    z *= 0.5 / np.linalg.norm(z, axis=1, keepdims=True)  # grad = x - z, |x| <= 0.5 -> G = 1
    L = 1.0
    bound = sp.lambdify([sym(k) for k in ("t", "alpha", "G", "L", "eta", "N")], tc.lemma11.expr)
    for alpha, eta in [(1 / n, 1e-4), (0.1, 1e-3), (0.5, 1e-3)]:
        errs = np.zeros(4 * n)
        reps = 200
        for _ in range(reps):
            x = np.zeros(dim)
            m = np.zeros(dim)
            t = 0
            for _e in range(4):
                for i in rng.permutation(n):
                    m = (1 - alpha) * m + alpha * (x - z[i])
                    errs[t] += np.linalg.norm(m - (x - z.mean(axis=0)))
                    t += 1
                    x = x - eta * np.array([1.0, 0, 0])  # arbitrary unit-norm steps
        errs /= reps
        ts = np.arange(1, 4 * n + 1)
        assert np.all(errs <= bound(ts, alpha, G, L, eta, n) + 1e-12)


# ------------------------------------------------------------------ Lemma 12 (Monte Carlo)
def _prefix_cover(t):
    """Dyadic cover of [1, t] from the binary digits of t (independent of privacy.tree)."""
    out, a = [], 1
    for j in reversed(range(t.bit_length())):
        if t >> j & 1:
            out.append((a, a + (1 << j) - 1))
            a += 1 << j
    return out


def test_lemma12_tree_noise_matches_the_exact_variance_by_monte_carlo():
    from dpbounds.privacy.tree import compose

    rng = np.random.default_rng(2)
    T, alpha, sigma, d, reps = 45, 0.1, 0.7, 50, 400
    nodes = [(a, b) for t in range(1, T + 1) for (a, b) in _prefix_cover(t)]
    nodes = sorted(set(nodes))
    index = {node: k for k, node in enumerate(nodes)}
    lemma_bound = tc.lemma12.evaluate(sigma=sigma, d=d, T=T)
    for t in (1, 7, 16, 31, 45):
        cover = _prefix_cover(t)
        w = np.array([(1 - alpha) ** (t - b) for (_a, b) in cover])
        idx = [index[c] for c in cover]
        samples = np.empty((reps, d))
        for r in range(reps):
            zeta = rng.normal(0.0, sigma, size=(len(nodes), d))  # one draw per node
            samples[r] = w @ zeta[idx]
        exact = sigma**2 * sum((1 - alpha) ** (2 * (t - b)) for (_a, b) in compose(1, t))
        n_obs = reps * d
        var_hat = np.mean(samples**2)
        # 5-sigma interval of the mean of n_obs squared Gaussians (variance 2 v^2)
        assert abs(var_hat - exact) <= 5 * exact * math.sqrt(2 / n_obs)
        assert exact <= (1 + math.log2(T)) * sigma**2
        mean_norm = np.mean(np.linalg.norm(samples, axis=1))
        assert mean_norm <= lemma_bound


# ------------------------------------------------------------------ Theorem 4 (privacy)
@pytest.mark.parametrize(
    ("eps", "delta", "n", "epochs", "alpha"),
    [(1.0, 1e-5, 64, 4, 1 / 64), (0.5, 1e-6, 100, 10, 0.05), (4.0, 1e-5, 1000, 3, 1e-3),
     (2.0, 1e-8, 37, 25, 0.3)],
)
def test_theorem4_sigma_is_accepted_by_dp_accounting(eps, delta, n, epochs, alpha):
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    from dpbounds.privacy.tree import (
        max_nodes_per_sample,
        momentum_node_sensitivity,
        tree_momentum_sigma_closed_form,
    )

    sigma = tc.theorem4.evaluate(eps=eps, delta=delta, G=1.0, N=n, E=epochs, alpha=alpha)
    sens = momentum_node_sensitivity(1.0, alpha, n, form="tight")
    k = max_nodes_per_sample(n, epochs)
    acc = rdp.RdpAccountant(orders=np.concatenate([np.linspace(1.01, 10, 200),
                                                   np.arange(11, 512)]))
    acc.compose(dp_accounting.GaussianDpEvent(sigma / sens), k)
    assert acc.get_epsilon(delta) <= eps
    # the privacy helper's closed form uses floor(log2 N): ours is never smaller
    closed = tree_momentum_sigma_closed_form(eps, delta, 1.0, alpha, n, epochs)
    assert sigma >= closed
    if n & (n - 1) == 0:
        assert sigma == pytest.approx(closed, rel=1e-12)


def test_node_count_and_sensitivity_dominate_the_exact_values():
    from dpbounds.privacy.tree import max_nodes_per_sample, momentum_node_sensitivity

    count = sp.lambdify([sym("N"), sym("E")], tc.node_count)
    sens = sp.lambdify([sym("G"), sym("alpha"), sym("N")], tc.node_sensitivity)
    for n in (3, 8, 10, 33):
        for e in (1, 4, 7):
            assert max_nodes_per_sample(n, e, method="exact") <= count(n, e)
        for a in (1e-4, 1 / n, 0.5):
            assert momentum_node_sensitivity(1.0, a, n, form="sheet") <= sens(1.0, a, n) + 1e-15


# ------------------------------------------------------------------ Theorem 6
def test_theorem6_exponents_match_the_abstract():
    s = tc.theorem6_tuned.exponents(("d", "N", "eps"))
    assert dict(s.powers) == {"d": sp.Rational(1, 4), "N": sp.Rational(-1, 2),
                              "eps": sp.Rational(-1, 2)}
    assert s.log_factors  # the O~ hides logs, reported separately
    g = tc.gradient_count.exponents(("d", "N", "eps"))
    assert dict(g.powers) == {"d": sp.Rational(-1, 2), "N": 2, "eps": 1}


_P = {"G": 1.0, "L": 1.0, "R": 1.0, "delta": 1e-6}


@settings(max_examples=25, deadline=None)
@given(d=st.floats(1, 1e4), n=st.floats(1e4, 1e9), eps=st.floats(0.05, 5),
       k=st.floats(1.01, 10))
def test_theorem6_is_monotone(d, n, eps, k):
    f = tc.theorem6_tuned
    base = f.evaluate(d=d, N=n, eps=eps, invalid="nan", **_P)
    if not np.isfinite(base):
        return
    assert f.evaluate(d=d, N=n * k, eps=eps, invalid="nan", **_P) <= base
    assert f.evaluate(d=d, N=n, eps=min(eps * k, 13.0), invalid="nan", **_P) <= base
    bigger_d = f.evaluate(d=d * k, N=n, eps=eps, invalid="nan", **_P)
    assert not np.isfinite(bigger_d) or bigger_d >= base


def test_theorem6_tuning_does_not_lose_to_the_closed_form():
    res = tc.theorem6.optimize(["eta", "E", "alpha"], bounds={"alpha": (1e-300, 1.0)},
                               d=100, N=1e5, eps=1.0, delta=1e-5, G=1, L=1, R=1)
    assert res.value <= res.closed_form_value * (1 + 1e-9)
