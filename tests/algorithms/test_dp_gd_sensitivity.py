"""Gaussian DP-GD: the sensitivity it uses against explicit neighbouring datasets.

Regression test for the add/remove overshoot (the replace-one difference bound
``l2_sensitivity`` was halved and used as a per-sample norm bound; for a quadratic the norm is
unbounded while the difference is not). Oracles:

* explicit neighbours: datasets ``D ∪ {z}``, ``D \\ {z_k}`` (add/remove) and ``D`` with
  ``z_k -> z`` (replace-one), the noise-free released query recomputed here with closed-form
  logistic gradients in NumPy (convention of the algorithm: a public denominator ``N``,
  ``q(D) = (1/N) Σ_{i∈D} ∇ℓ_i + ∇R``; ``N = n`` under replace-one, the declared ``public_n``
  under add/remove), its actual change <= the sensitivity the algorithm used;
* dp_accounting's RDP accountant with the sensitivity recomputed here from the data domain;
* the noise actually added (one step, many trials): sample variance within a 5-sigma band.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.algorithms import dp_gd
from dpbounds.algorithms.gradient_descent import gaussian_gd_sensitivity
from dpbounds.objectives import LogisticRegression, QuadraticObjective
from dpbounds.privacy.mechanisms import Neighbouring

RADIUS = 2.0  # declared L2 bound on the feature rows (the data domain)
L2 = 0.1


def _sample_grads(A: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Closed-form logistic per-sample gradients -y a / (1 + exp(y aᵀx)) (independent)."""
    margin = y * (A @ x)
    return -(y / (1.0 + np.exp(margin)))[:, None] * A


def _query(A: np.ndarray, y: np.ndarray, x: np.ndarray, n_public: int) -> np.ndarray:
    """The noise-free released query with the public n as the mean's denominator."""
    return _sample_grads(A, y, x).sum(axis=0) / n_public + L2 * x


def _dataset(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    A *= (RADIUS * rng.uniform(0.2, 1.0, n) / np.linalg.norm(A, axis=1))[:, None]
    y = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    return A, y


def _worst_point(x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """A domain point whose gradient norm is close to RADIUS at x (a very negative margin)."""
    u = x / np.linalg.norm(x) if np.linalg.norm(x) > 0 else rng.standard_normal(x.size)
    return RADIUS * u / np.linalg.norm(u), -1.0


def _max_changes(A, y, x, z, yz):
    n = A.shape[0]
    q = _query(A, y, x, n)
    add = np.linalg.norm(_query(np.vstack([A, z]), np.append(y, yz), x, n) - q)
    remove = max(np.linalg.norm(_query(np.delete(A, k, 0), np.delete(y, k), x, n) - q)
                 for k in range(n))
    replace = 0.0
    for k in range(n):
        A2, y2 = A.copy(), y.copy()
        A2[k], y2[k] = z, yz
        replace = max(replace, np.linalg.norm(_query(A2, y2, x, n) - q))
    return max(add, remove), replace


def _used_sensitivity(f, neighbouring):
    r = dp_gd(f, epsilon=1.0, delta=1e-5, steps=3, mechanism="gaussian",
              neighbouring=neighbouring, seed=0, trace=None,
              public_n=f.n if neighbouring == "add/remove" else None)
    return r.params["sensitivity"]


def test_query_oracle_matches_objective_gradient():
    A, y = _dataset(30, 3, 0)
    f = LogisticRegression(A, y, l2=L2, l2_radius=RADIUS)
    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(np.asarray(f.grad(x[None, :]))[0], _query(A, y, x, 30),
                               rtol=1e-12, atol=1e-14)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 60), d=st.integers(1, 5), seed=st.integers(0, 2**31),
       scale=st.sampled_from([0.0, 0.5, 50.0]))
def test_neighbour_change_within_used_sensitivity(n, d, seed, scale):
    A, y = _dataset(n, d, seed)
    f = LogisticRegression(A, y, l2=L2, l2_radius=RADIUS)
    rng = np.random.default_rng(seed + 1)
    x = scale * rng.standard_normal(d)
    z, yz = _worst_point(x, rng)
    add_remove, replace = _max_changes(A, y, x, z, yz)
    sens_ar = _used_sensitivity(f, "add/remove")
    sens_ro = _used_sensitivity(f, "replace-one")
    assert sens_ar == pytest.approx(RADIUS / n, rel=1e-12)  # G = sup|ψ'| · radius, n public
    assert add_remove <= sens_ar * (1 + 1e-12)
    assert replace <= sens_ro * (1 + 1e-12)
    if scale == 50.0:  # far out the worst added point attains the bound: it is not loose
        assert add_remove >= 0.99 * sens_ar


def test_quadratic_add_remove_without_clip_raises():
    # the reviewer's case: l2_sensitivity = 2 sup||e|| is finite, gradient_bound is infinite
    q = QuadraticObjective.random(4, 0.5, 2.0, n=400, offset_scale=0.05, seed=0)
    assert math.isfinite(q.l2_sensitivity) and math.isinf(q.gradient_bound)
    with pytest.raises(ValueError, match="gradient_bound"):
        dp_gd(q, epsilon=1.0, delta=1e-5, steps=10, mechanism="gaussian",
              neighbouring="add/remove", public_n=q.n)
    with pytest.raises(ValueError, match="gradient_bound"):
        gaussian_gd_sensitivity(q, "add/remove", public_n=q.n)
    # explicit neighbour: the old value l2_sensitivity / (2n) is exceeded away from x*
    lam, b = np.array([1.0, 3.0]), np.array([1.0, -2.0])
    rng = np.random.default_rng(0)
    qd = QuadraticObjective(lam, b=b, offsets=0.1 * rng.standard_normal((50, 2)))
    x = np.array([4.0, 1.0])
    e_new = qd.offsets_np[0]  # a domain point: an offset of the data set itself
    change = np.linalg.norm(lam * x - b + e_new) / qd.n  # (1/n)·∇ℓ_new, n public
    assert change > 10 * qd.l2_sensitivity / (2 * qd.n)
    # clipping gives a true norm bound: C/n
    r = dp_gd(q, epsilon=1.0, delta=1e-5, steps=10, mechanism="gaussian",
              neighbouring="add/remove", clip_threshold=0.7, seed=0, trace=None, public_n=q.n)
    assert r.params["sensitivity"] == pytest.approx(0.7 / q.n, rel=1e-12)
    # replace-one: the quadratic parts cancel, the difference bound 2 sup||e|| / n is right
    assert gaussian_gd_sensitivity(q, "replace-one") == pytest.approx(
        2 * np.max(np.linalg.norm(q.offsets_np, axis=1))
        / q.n, rel=1e-12)


def test_add_remove_ledger_against_rdp_accountant_and_noise():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant

    n, d, T, eps, delta = 200, 4, 25, 1.0, 1e-5
    A, y = _dataset(n, d, 3)
    f = LogisticRegression(A, y, l2=L2, l2_radius=RADIUS)
    r = dp_gd(f, epsilon=eps, delta=delta, steps=T, mechanism="gaussian",
              neighbouring="add/remove", seed=0, trace=None, public_n=n)
    sens = RADIUS / n  # recomputed here: |ψ'| <= 1, ||a|| <= RADIUS, public n
    sigma = r.params["sigma"]
    acc = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dpa.GaussianDpEvent(sigma / sens), T)
    rdp_eps = acc.get_epsilon(delta)
    assert rdp_eps <= eps
    assert r.ledger.neighbouring is Neighbouring.ADD_REMOVE
    assert rdp_eps <= r.ledger.epsilon * (1 + 1e-9) <= eps * (1 + 1e-9)
    # the noise actually added has that sigma: one step from x0, x1 = x0 - a (∇F(x0) + Z)
    trials, alpha = 4000, 0.5
    x0 = np.array([0.2, -0.1, 0.3, 0.0])
    one = dp_gd(f, epsilon=eps, delta=delta, steps=1, mechanism="gaussian", step_size=alpha,
                neighbouring="add/remove", trials=trials, seed=1, x0=x0, trace=None,
                public_n=n)
    z = (x0 - np.asarray(one.x)) / alpha - _query(A, y, x0, n)
    s = one.params["sigma"]
    m = z.size
    assert abs(np.var(z, ddof=1) - s**2) < 5 * s**2 * math.sqrt(2 / (m - 1))
