"""Independent review of the exact worst case over quadratics (issue 32 item 2).

Oracles written for this file only (no helper shared with the code under test):

* the exact E[F(x_T)] - F* of an arbitrary instance (a rotated Hessian, a start that is not
  concentrated in one eigen-direction, a full-rank or rank-one data covariance) by the
  covariance recursion of the stacked state (x_t - x*, x_{t-1} - x*) in the original basis;
* a scalar recursion of the mean and variance on a dense uniform grid of eigenvalues.

Claims checked: no instance exceeds ``upper`` (the one-coordinate reduction of the start and
the data, every eigenvalue chosen on its own); the attained ``value`` is reproduced by a
rotated copy of the reported instance (two-sided); the grid certificate is needed and enough
on a coarse grid; the tuner's rows are the worst case of the run as calibrated (Laplace
variance 2 b^2). Negative controls: a start scaled above E0, the privacy noise halved in the
tuner's row, a certificate factor of 1 on a coarse grid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.bounds.strongly_convex.gradient_noise import laplace_scale_at_horizon
from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case
from dpbounds.tuning import tune_heavy_ball


class _NoBracket:
    """Stands in for heavy ball's branch and bound, which ``tune_heavy_ball`` runs after the
    search and which feeds only ``lower_bound`` / ``certified_gap`` (read by no test here):
    the rows the tests below check are the same without it, at a fraction of the CPU (it was
    11 of the 16 s of the dense-search test). The bracket is checked in
    ``tests/tuning/test_certify_error.py`` and ``tests/tuning/test_worst_case_tuning.py``."""

    lower = -math.inf


@pytest.fixture
def _rows_only(monkeypatch):
    import dpbounds.tuning.heavy_ball as hb

    monkeypatch.setattr(hb, "certify_error_minimum", lambda *a, **k: _NoBracket())


def _exact(H, e0, T, al, be, ga, lap, covs, objective="function_value"):
    """E[F(x_T)] - F* (or E||x_T - x*||^2) of the noisy method on F = (x-x*)'H(x-x*)/2: the
    mean and covariance of the state (e_t, e_{t-1}) propagated step by step."""
    d = H.shape[0]
    eye = np.eye(d)
    mean = np.concatenate([e0, e0])
    cov = np.zeros((2 * d, 2 * d))
    for t in range(T):
        a = (1 + be[t]) * eye - al[t] * (1 + ga[t]) * H
        b = be[t] * eye - al[t] * ga[t] * H
        M = np.block([[a, -b], [eye, np.zeros((d, d))]])
        Q = np.zeros((2 * d, 2 * d))
        Q[:d, :d] = al[t] ** 2 * (lap[t] * eye + covs[t])
        mean, cov = M @ mean, M @ cov @ M.T + Q
    e, C = mean[:d], cov[:d, :d]
    W = 0.5 * H if objective == "function_value" else eye
    return float(e @ W @ e + np.trace(W @ C))


def _schedule(rng, T, kind):
    al = np.full(T, rng.uniform(0.2, 1.8))
    be = np.full(T, rng.uniform(0.0, 0.9)) if kind != "gd" else np.zeros(T)
    if rng.random() < 0.5:  # per-step parameters
        al *= rng.uniform(0.6, 1.1, T)
        be *= rng.uniform(0.0, 1.0, T)
    ga = be.copy() if kind == "nesterov" else np.zeros(T)
    return al, be, ga


@pytest.mark.parametrize("seed", range(6))
def test_no_random_instance_beats_upper(seed):
    rng = np.random.default_rng(seed)
    d, T = 2 + seed % 3, 6 + 2 * seed
    mu, L = 10 ** rng.uniform(-2, -0.3), 1.0
    kind = ("gd", "heavy ball", "nesterov")[seed % 3]
    al, be, ga = _schedule(rng, T, kind)
    lap, smp = rng.uniform(0, 0.02, T), rng.uniform(0, 0.05, T)
    E0 = 1.5
    objective = "distance" if seed == 5 else "function_value"
    wc = quadratic_worst_case(mu, L, d, alpha=al, beta=be, gamma=ga, laplace_var=lap,
                              sampling_var=smp, initial_gap=E0, objective=objective)
    top = 0.0
    for _ in range(60):
        lam = rng.uniform(mu, L, d)
        lam[rng.integers(d)] = rng.choice([mu, L, lam[0]])
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        H = Q @ np.diag(lam) @ Q.T
        e0 = rng.standard_normal(d)
        e0 *= math.sqrt(E0 / (0.5 * e0 @ H @ e0))  # F(x0) - F* = E0, spread over directions
        R = rng.standard_normal((d, d)) if rng.random() < 0.5 else rng.standard_normal((1, d))
        Sy = R.T @ R
        Sy /= np.trace(Sy)  # a fixed data covariance, trace smp[t] at step t
        v = _exact(H, e0, T, al, be, ga, lap, [s * Sy for s in smp], objective)
        assert v <= wc.upper * (1 + 1e-9), (v, wc)
        top = max(top, v)
    # the reported instance, rotated, attains ``value`` (two-sided); start above E0: refuted
    lam = wc.instance(d)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    H = Q @ np.diag(lam) @ Q.T
    e0 = Q[:, 0] * math.sqrt(2 * E0 / lam[0])
    k = 0 if wc.same_coordinate else 1
    Sy = np.outer(Q[:, k], Q[:, k])
    v = _exact(H, e0, T, al, be, ga, lap, [s * Sy for s in smp], objective)
    assert v == pytest.approx(wc.value, rel=1e-9)
    assert top <= wc.value * 1.0201
    # the degree the certificate uses: (lambda / 2) p_T^2 with p_T a product of T factors
    assert wc.degree >= 2 * T + 1
    # negative control: 10% more of everything (start energy, both noises) is refuted
    over = _exact(H, math.sqrt(1.1) * e0, T, al, be, ga, 1.1 * lap,
                  [1.1 * s * Sy for s in smp], objective)
    assert over > wc.upper


def test_coarse_grid_is_certified_and_the_certificate_is_needed():
    # gradient descent with Chebyshev steps for [0.075, 1.1] run on [0.2, 1] from
    # ||x0 - x*||^2 <= 1: (lambda / 2) p_T^2 has its peaks between the points of a coarse grid
    mu, L, T, D = 0.2, 1.0, 6, 1.0
    roots = 0.5875 + 0.5125 * np.cos((np.arange(T) + 0.5) * math.pi / T)
    al = 1.0 / roots
    wc = quadratic_worst_case(mu, L, 1, alpha=al, laplace_var=0.0, initial_distance_sq=D,
                              oversampling=2)
    lam = np.linspace(mu, L, 200_001)
    p = np.ones_like(lam)
    for t in range(T):
        p *= 1.0 - al[t] * lam
    true = float(np.max(0.5 * lam * D * p * p))
    assert true <= wc.upper
    # negative control: the grid maximum alone (a certificate factor of 1, or one with the
    # Bernstein term 8 times too small) is refuted
    assert true > wc.value * 1.06
    x = (wc.degree * math.pi / (wc.grid_points - 1)) ** 2 / 8
    assert true > wc.value / (1 - x / 8)


def _own_row_worst(p, a, b, T, n_lam=20_001):
    """The worst case of one heavy-ball row by this file's own scalar recursions: the start
    (F(x0) - F* = E0), Laplace noise 2 b_T^2 per coordinate and the sampling variance each
    put where they cost most (m = n here: no sampling), on a dense uniform grid."""
    lam = np.linspace(p["mu"], p["L"], n_lam)
    bT = float(laplace_scale_at_horizon(T, p["sensitivity"], p["n"], p["n"], p["epsilon"]))
    e, ep = np.ones_like(lam), np.ones_like(lam)
    h, hp = np.ones_like(lam), np.zeros_like(lam)
    energy = np.zeros_like(lam)
    for _ in range(T):
        e, ep = (1 + b - a * lam) * e - b * ep, e
        energy += h * h
        h, hp = (1 + b - a * lam) * h - b * hp, h
    G = 0.5 * lam * a * a * energy * 2 * bT * bT
    return float(np.max(p["initial_gap"] * e * e + G) + (p["d"] - 1) * np.max(G))


def test_tuned_rows_are_the_worst_case_of_the_calibrated_run(_rows_only):
    p = dict(mu=0.05, L=1.0, d=3, n=200, epsilon=0.5, sensitivity=1.0, initial_gap=1.0)
    res = tune_heavy_ball(**p, max_horizon=60, grid=8)
    for c in (res.tuned, res.classical, res.paper_section5):
        own = _own_row_worst(p, c.alpha, c.beta, c.horizon)
        assert c.computed / 1.0201 <= own <= c.worst_case_upper * (1 + 1e-9), (c, own)
    # negative control: the tuned run with half the privacy variance (Laplace b^2, not 2 b^2)
    half = dict(p, epsilon=p["epsilon"] * math.sqrt(2))  # m = n: b_T is 1/epsilon
    t = res.tuned
    assert _own_row_worst(half, t.alpha, t.beta, t.horizon) < t.computed / 1.0201


@pytest.mark.parametrize("d,start", [(1, "distance"), (1, "gap"), (4, "distance")])
def test_search_pass_with_sampling_and_a_distance_start(d, start):
    # the tuner's all-horizons pass, against a step-by-step evaluation written here, for the
    # cases its own tests leave out: d = 1 (start and data in one coordinate only), m < n
    # (sampling noise in that coordinate) and a start ||x0 - x*||^2 <= D
    from dpbounds.tuning._worst_case_search import heavy_ball_worst_by_horizon

    mu, L, a, b, D, E0, smp, Tmax = 0.01, 1.0, 0.8, 0.85, 2.0, 1.0, 0.3, 400
    lam = np.linspace(mu, L, 41)

    def ell(T):
        return 1e-5 * np.asarray(T, float) ** 2  # privacy variance growing with the horizon

    best, bT = math.inf, 0
    e, ep = np.ones_like(lam), np.ones_like(lam)
    h, hp = np.ones_like(lam), np.zeros_like(lam)
    U = np.zeros_like(lam)
    for T in range(1, Tmax + 1):
        e, ep = (1 + b - a * lam) * e - b * ep, e
        U += 0.5 * lam * a * a * h * h
        h, hp = (1 + b - a * lam) * h - b * hp, h
        A = (D * 0.5 * lam if start == "distance" else E0) * e * e
        lt = float(ell(T))
        # d = 1: start and data share the coordinate; d >= 2: the better of together / apart
        W = np.max(A + (lt + smp) * U) + (d - 1) * lt * np.max(U)
        if d >= 2:
            W = max(W, np.max(A + lt * U) + np.max((lt + smp) * U) + (d - 2) * lt * np.max(U))
        if W < best:
            best, bT = W, T
    T, W = heavy_ball_worst_by_horizon(
        np.array([a]), np.array([b]), lam, d=d, Tmax=Tmax, laplace_var=ell, sampling_var=smp,
        initial_gap=E0 if start == "gap" else None, dist_sq=D if start == "distance" else None)
    assert int(T[0]) == bT and float(W[0]) == pytest.approx(best, rel=1e-9)
    # negative control: the sampling variance left out of the oracle changes the answer
    assert float(np.max((float(ell(bT)) + smp) * U)) > 1.01 * float(np.max(float(ell(bT)) * U))


def test_tuned_is_never_worse_than_the_rows_it_is_compared_with(_rows_only):
    # kappa = 1: Polyak's alpha = 1/L, beta = 0 is exact in one step; the search's grid does
    # not hold it, so "tuned" must fall back on the compared row
    res = tune_heavy_ball(1.0, 1.0, d=4, n=100, epsilon=1.0, sensitivity=1.0, initial_gap=1.0,
                          max_horizon=20, grid=6)
    others = [res.classical, res.paper_section5, res.by_bound]
    assert res.tuned.computed <= min(c.computed for c in others)
    # the exact error at alpha = 1/L, beta = 0, T = 1: only the noise, d * (L/2) * 2 b_1^2
    b1 = float(laplace_scale_at_horizon(1, 1.0, 100, 100, 1.0))
    assert res.tuned.computed == pytest.approx(4 * 0.5 * 2 * b1 * b1, rel=1e-9)


def test_tuned_is_within_a_tenth_of_a_percent_of_a_dense_search(_rows_only):
    # issue 32 item 4: the search once ranked (alpha, beta, T) by the worst case on 129
    # eigenvalues only; at Fig. 3 that was 3.1% low at its own minimiser, a run 1.2% worse
    # than the point below
    p = dict(mu=0.02, L=5.1028, d=20, n=10**5, epsilon=1.0, sensitivity=40.0, initial_gap=10.0)
    res = tune_heavy_ball(**p, max_horizon=400)
    t = res.tuned

    def certified(a, b, T):
        bT = float(laplace_scale_at_horizon(T, p["sensitivity"], p["n"], p["n"], p["epsilon"]))
        return quadratic_worst_case(p["mu"], p["L"], p["d"], alpha=a, beta=b, steps=T,
                                    laplace_var=2 * bT * bT, initial_gap=p["initial_gap"],
                                    oversampling=64)

    # found by an own grid (28 x 28 in (log alpha, -log(1 - beta)), 900 eigenvalues, every
    # T <= 400) and Nelder-Mead, then certified
    other = certified(0.2525504529894917, 0.875516475153297, 64)
    assert certified(t.alpha, t.beta, t.horizon).value <= other.upper * 1.001
    # negative control: the run the coarse search chose is refuted by the same check
    assert certified(0.24648040303223642, 0.8775479008600982, 65).value > other.upper * 1.001
