"""The proven bracket of a plug-in whose family is a slice of heavy ball (issue 33): gradient
descent (``LinearMomentum(alpha="eta")``: beta = gamma = 0), a fixed momentum, a fixed step.
The lower bound (:func:`dpbounds.tuning._certify_error.certify_error_minimum` with ``beta=`` /
``alpha=``, the branch and bound over the slice) is checked against a dense brute force over
the free coefficient written here, with no helper of the package:

* gradient descent in closed form: from a start with F(x0) - F* = R in the coordinate of
  curvature lam, E F(x_T) - F* = R q^T + v (lam / 2) eta^2 (1 - q^T) / (1 - q), q = (1 - eta
  lam)^2, v the per-coordinate noise variance; the worst quadratic puts the start and one
  noise coordinate at the worst lam of their sum, the other d - 1 at the worst lam of the
  noise: W = max_lam (A + G) + (d - 1) max_lam G (lam on a grid with mu and L);
* heavy ball by its recursions (residual from rest, impulse response) for the fixed-momentum
  and fixed-step slices.

The noise is the pure-DP Laplace calibration in closed form: scale T S1 / (N eps), variance
2 b^2 (the plug-in's is a bisection to 1e-6 of it). The bound must sit below the brute
force's minimum, within the stated factor (1.05) of it, and the reported gap must be at most
that factor. Negative controls the same oracle catches: the bound x1.2, and box bounds read
at the wrong end of an alpha-box (the start term's monotone side: the left corner where the
error falls with alpha, the right corner where it grows)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds import extend as ex

BASE = dict(mu=0.1, L=1.0, d=4, N=1000.0, eps=1.0, S1=1.0, R=1.0)
TMAX = 60
FACTOR = 1.05  # the stated bracket: certified upper end over the lower bound


def noise_var(T, p):
    b = np.asarray(T, dtype=float) * p["S1"] / (p["N"] * p["eps"])
    return 2.0 * b * b


def gd_worst(eta, p, Tmax=TMAX):
    """W(eta, T) for every eta (rows) and T = 1..Tmax (columns), closed form (docstring)."""
    lam = np.unique(np.concatenate([np.geomspace(p["mu"], p["L"], 120), [p["mu"], p["L"]]]))
    q = (1.0 - np.asarray(eta, float)[:, None] * lam[None, :]) ** 2
    scale = 0.5 * lam * np.asarray(eta, float)[:, None] ** 2
    with np.errstate(divide="ignore"):
        inv = np.where(q == 1.0, np.inf, 1.0 / (1.0 - q))
    out = np.empty((q.shape[0], Tmax))
    qT = np.ones_like(q)
    for T in range(1, Tmax + 1):
        qT = qT * q  # q^T
        with np.errstate(invalid="ignore", over="ignore"):
            s = np.where(q == 1.0, float(T), (1.0 - qT) * inv)
            G = scale * (noise_var(T, p) * s)
            W = np.max(p["R"] * qT + G, axis=1) + (p["d"] - 1) * np.max(G, axis=1)
        out[:, T - 1] = np.where(np.isnan(W), np.inf, W)
    return out


def gd_dense_minimum(p):
    """min over a dense eta grid (1500 points of [1e-3/L, 4/L], refined by 500 more around
    the best) and every T <= TMAX; an upper end of the true minimum up to the lam grid."""
    etas = np.geomspace(1e-3 / p["L"], 4.0 / p["L"], 1500)
    W = gd_worst(etas, p).min(axis=1)
    i = int(np.argmin(W))
    fine = np.linspace(etas[max(i - 1, 0)], etas[min(i + 1, etas.size - 1)], 500)
    Wf = gd_worst(fine, p).min(axis=1)
    return float(min(W.min(), Wf.min()))


def _gd_method(name):
    return ex.Method(name, step=lambda x, g, z, p: x - p["eta"] * (g(x) + z),
                     mechanism="laplace", sensitivity=lambda f, p: f.l1_sensitivity / f.n,
                     linear=ex.LinearMomentum(alpha="eta"))


# the example's shape (kappa 10) and kappa 1e3 (tuned step above 1/L: the start term at L
# is what bounds it)
@pytest.mark.parametrize("over", [{}, dict(mu=1e-3, eps=0.1)], ids=["kappa10", "kappa1e3"])
def test_gradient_descent_bracket_against_a_dense_brute_force(over):
    p = {**BASE, **over}
    r = ex.tune(_gd_method("gd_bracket"), p, objective="error", max_horizon=TMAX)
    oracle = gd_dense_minimum(p)
    t = r.tuned
    assert "gradient descent (beta = 0" in r.lower_bound_by
    # two-sided: the tuned point is the brute force's optimum (its grid and lam grid)
    assert t.worst_case == pytest.approx(oracle, rel=2e-3)
    assert 0 < r.lower_bound <= oracle * (1 + 1e-9), (r.lower_bound, oracle)
    assert r.lower_bound >= oracle / FACTOR
    assert 1 + r.certified_gap <= FACTOR
    assert r.certified_gap == pytest.approx(t.worst_case_upper / r.lower_bound - 1, rel=1e-12)
    # negative control: the bound x1.2 is caught by the same oracle
    assert 1.2 * r.lower_bound > oracle
    # the reported bound is capped by the tuned row's attained worst case (its incumbent):
    # the branch and bound on its own, with a loose incumbent, must sit below the oracle too
    from dpbounds.tuning._certify_error import certify_error_minimum

    loose = certify_error_minimum(p["mu"], p["L"], p["d"], TMAX, lambda T: noise_var(T, p),
                                  0.0, best=10 * oracle, initial_gap=p["R"], any_noise=True,
                                  beta=0.0, max_boxes=1500).lower
    assert oracle / FACTOR <= loose <= oracle * (1 + 1e-9), (loose, oracle)


def _slice_boxes(p, rng, k=30):
    """Random alpha-boxes [a0, a1] (beta = 0) in [0.05/L, 3.5/L], widths up to 60%."""
    a0 = np.exp(rng.uniform(math.log(0.05 / p["L"]), math.log(3.5 / p["L"]), k))
    return a0, a0 * (1.0 + rng.uniform(0.01, 0.6, k))


def _box_violations(bound_fn, p, seed=3):
    """Boxes whose bound is above the least W over the box (21 alphas, ends included) and
    every T (relative 1e-9), and the boxes with a positive bound."""
    from dpbounds.tuning._certify_error import make_problem

    prob = make_problem(p["mu"], p["L"], p["d"], TMAX, lambda T: noise_var(T, p), 0.0,
                        p["R"], None)
    a0, a1 = _slice_boxes(p, np.random.default_rng(seed))
    lb = bound_fn(prob, a0, a1)
    u = np.linspace(0.0, 1.0, 21)
    pts = a0[:, None] + u[None, :] * (a1 - a0)[:, None]
    W = gd_worst(pts.ravel(), p).min(axis=1).reshape(pts.shape).min(axis=1)
    return int(np.sum(lb > W * (1 + 1e-9))), int(np.sum(lb > 0))


def _ours(prob, a0, a1):
    from dpbounds.tuning._certify_error import box_lower_bounds

    z = np.zeros_like(a0)
    return box_lower_bounds(prob, a0, a1, z, z)


@pytest.mark.parametrize("over", [{}, dict(mu=1e-3, eps=0.1)], ids=["kappa10", "kappa1e3"])
def test_gradient_descent_box_bounds_and_wrong_side_mutants(over):
    p = {**BASE, **over}
    bad, positive = _box_violations(_ours, p)
    assert bad == 0
    assert positive >= 20  # not vacuous
    # mutants: each box read at one end (a point bound used for the box): the left end is
    # the wrong side where the error falls with alpha, the right end where it grows
    left, _ = _box_violations(lambda prob, a0, a1: _ours(prob, a0, a0), p)
    right, _ = _box_violations(lambda prob, a0, a1: _ours(prob, a1, a1), p)
    assert left >= 5 and right >= 5, (left, right)


def hb_worst(alpha, beta, p, Tmax=TMAX):
    """min over T <= Tmax of heavy ball's W at each (alpha, beta) (rows), by the recursions:
    residual e_{t+1} = c e_t - beta e_{t-1} (e_0 = e_{-1} = 1), impulse response h (h_0 = 1,
    h_{-1} = 0), c = 1 + beta - alpha lam; W = max_lam (R e^2 + v U) + (d - 1) v max_lam U,
    U = lam / 2 alpha^2 sum_{j<T} h_j^2."""
    lam = np.unique(np.concatenate([np.geomspace(p["mu"], p["L"], 100), [p["mu"], p["L"]]]))
    al, be = np.asarray(alpha, float)[:, None], np.asarray(beta, float)[:, None]
    c = 1.0 + be - al * lam[None, :]
    e_prev, e = np.ones_like(c), np.ones_like(c)
    h_prev, h = np.zeros_like(c), np.ones_like(c)
    sq = np.zeros_like(c)
    best = np.full(c.shape[0], np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        for T in range(1, Tmax + 1):
            e_prev, e = e, c * e - be * e_prev
            sq = sq + h * h
            h_prev, h = h, c * h - be * h_prev
            U = 0.5 * lam * al * al * sq
            v = float(noise_var(T, p))
            W = np.max(p["R"] * e * e + v * U, axis=1) + (p["d"] - 1) * v * np.max(U, axis=1)
            best = np.minimum(best, np.where(np.isnan(W), np.inf, W))
    return best


@pytest.mark.parametrize("fixed", [dict(beta=0.5), dict(alpha=1.0)], ids=["beta", "alpha"])
def test_fixed_momentum_and_fixed_step_slices_against_a_dense_brute_force(fixed):
    from dpbounds.tuning._certify_error import certify_error_minimum

    p = dict(BASE, mu=0.01)
    if "beta" in fixed:
        free = np.geomspace(1e-3 / p["L"], 4.0 / p["L"], 1200)
        W = hb_worst(free, np.full(free.size, fixed["beta"]), p)
    else:
        free = np.concatenate([np.linspace(0.0, 0.99, 800), 1.0 - np.geomspace(1e-2, 1e-4, 100)])
        W = hb_worst(np.full(free.size, fixed["alpha"]), free, p)
    oracle = float(W.min())
    lower = certify_error_minimum(p["mu"], p["L"], p["d"], TMAX, lambda T: noise_var(T, p),
                                  0.0, best=oracle, initial_gap=p["R"], any_noise=True,
                                  **fixed).lower
    assert 0 < lower <= oracle * (1 + 1e-9)
    assert lower >= oracle / FACTOR, (lower, oracle)
    assert 1.2 * lower > oracle  # negative control
    # the slice's bound is far above the best heavy ball's (what it replaced)
    hb = certify_error_minimum(p["mu"], p["L"], p["d"], TMAX, lambda T: noise_var(T, p),
                               0.0, best=oracle, initial_gap=p["R"], any_noise=True,
                               max_boxes=800).lower
    assert hb < lower


def test_a_fixed_coefficient_that_is_not_a_constant_is_refused():
    def step(x, g, z, p, memory):
        prev = memory.get("prev", x)
        memory["prev"] = x
        return x + (1 - 1 / p["T"]) * (x - prev) - p["eta"] * (g(x) + z)

    m = ex.Method("hb_by_T", step=step, mechanism="laplace",
                  sensitivity=lambda f, p: f.l1_sensitivity / f.n,
                  linear=ex.LinearMomentum(alpha="eta", beta=lambda p: 1 - 1 / p["T"]))
    with pytest.raises(ValueError, match="hb_by_T's declared beta changes with the searched"):
        ex.tune(m, BASE, objective="error", max_horizon=TMAX)
    with pytest.raises(ValueError, match="beta must be in"):
        from dpbounds.tuning._certify_error import certify_error_minimum

        certify_error_minimum(0.1, 1.0, 1, 10, lambda T: np.ones(np.shape(T)), 0.0, best=1.0,
                              initial_gap=1.0, beta=1.0)
