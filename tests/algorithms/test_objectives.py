"""dpbounds.objectives: gradients, fused clipping paths, constants and optima.

Oracles: central finite differences, explicit per-sample NumPy loops, Hessian eigenvalues
from finite differences, an independent SciPy BFGS solve and the closed form Q^{-1} b,
brute-force sensitivity over sample pairs.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as hs

from dpbounds.backend import TrialRandom, to_numpy
from dpbounds.data import finite_sum_offsets, kuru_synthetic
from dpbounds.objectives import (
    HuberSVM,
    LogisticRegression,
    NonconvexLogisticRegression,
    QuadraticObjective,
)

N, D = 300, 4


def _data(seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, D)) / 2
    y = np.sign(A @ rng.normal(size=D) + 0.3 * rng.normal(size=N))
    y[y == 0] = 1
    return A, y


def _objectives(backend="numpy"):
    A, y = _data()
    return [
        LogisticRegression(A, y, l2=0.05, backend=backend),
        HuberSVM(A, y, l2=0.05, h=0.5, backend=backend),
        NonconvexLogisticRegression(A, y, lam=0.3, backend=backend),
        QuadraticObjective.random(D, 0.2, 3.0, n=N, offset_scale=0.5, seed=1, backend=backend),
    ]


def _fd_grad(fun, x, h=1e-6):
    g = np.zeros_like(x)
    for j in range(x.shape[1]):
        e = np.zeros(x.shape[1])
        e[j] = h
        g[:, j] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_gradient_matches_finite_differences(backend):
    rng = np.random.default_rng(1)
    for f in _objectives(backend):
        xp = f.xp
        x = rng.normal(size=(3, D))
        fd = _fd_grad(lambda z, f=f, xp=xp: to_numpy(f.loss(xp.asarray(z))), x)
        g = to_numpy(f.grad(xp.asarray(x)))
        np.testing.assert_allclose(g, fd, atol=1e-7, err_msg=f.name)
        loss, g2 = f.loss_and_grad(xp.asarray(x))
        np.testing.assert_allclose(to_numpy(g2), g, atol=1e-13)
        np.testing.assert_allclose(to_numpy(loss), to_numpy(f.loss(xp.asarray(x))), rtol=1e-13)
        # the look-ahead form: F at x, the gradient at another point, from one data pass
        p = x + rng.normal(size=x.shape)
        loss3, g3 = f.loss_and_grad(xp.asarray(x), grad_at=xp.asarray(p))
        np.testing.assert_allclose(to_numpy(loss3), to_numpy(loss), rtol=1e-13)
        np.testing.assert_allclose(to_numpy(g3), to_numpy(f.grad(xp.asarray(p))), atol=1e-13)
        assert not np.allclose(to_numpy(g3), g)  # negative control: not the gradient at x


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_minibatch_paths_match_explicit_per_sample_loops(backend):
    rng = np.random.default_rng(2)
    for f in _objectives(backend):
        xp = f.xp
        x = rng.normal(size=(2, D))
        idx = TrialRandom(3, 2, xp).subsample(f.n, 17)
        idx_np = to_numpy(idx)
        # oracle: per-sample gradients by finite differences of the per-sample losses
        G = np.zeros((2, 17, D))
        for k in range(2):
            for j, i in enumerate(idx_np[k]):
                def li(z, i=i, f=f, xp=xp):
                    one = xp.asarray(np.tile(z, (1, 1)))
                    ii = xp.asarray(np.array([[i]]))
                    return float(to_numpy(f.sample_losses(one, ii))[0, 0])
                for c in range(D):
                    e = np.zeros(D)
                    e[c] = 1e-6
                    G[k, j, c] = (li(x[k] + e) - li(x[k] - e)) / 2e-6
        np.testing.assert_allclose(to_numpy(f.sample_grads(xp.asarray(x), idx)), G, atol=1e-7)
        reg = to_numpy(f.regularizer_grad(xp.asarray(x)))
        np.testing.assert_allclose(to_numpy(f.grad(xp.asarray(x), idx)), G.mean(1) + reg,
                                   atol=1e-7)
        norms = np.linalg.norm(G, axis=-1, keepdims=True)
        clipped = (G * np.minimum(1.0, 0.4 / norms)).mean(1)
        normalized = (G / (norms + 0.1)).mean(1)
        np.testing.assert_allclose(to_numpy(f.clipped_mean_grad(xp.asarray(x), idx, 0.4)),
                                   clipped, atol=1e-7)
        np.testing.assert_allclose(to_numpy(f.normalized_mean_grad(xp.asarray(x), idx, 0.1)),
                                   normalized, atol=1e-7)


def test_full_data_fused_paths_do_not_depend_on_blocking():
    rng = np.random.default_rng(3)
    for f in _objectives()[:3]:
        x = rng.normal(size=(3, D))
        G = to_numpy(f.sample_grads(x))
        norms = np.maximum(np.linalg.norm(G, axis=-1, keepdims=True), 1e-300)
        want_c = (G * np.minimum(1.0, 0.3 / norms)).mean(1)
        want_n = (G / (norms + 0.2)).mean(1)
        for block in (256, 1 << 14):
            f.block_elements = block
            np.testing.assert_allclose(to_numpy(f.clipped_mean_grad(x, None, 0.3)), want_c,
                                       atol=1e-13)
            np.testing.assert_allclose(to_numpy(f.normalized_mean_grad(x, None, 0.2)), want_n,
                                       atol=1e-13)
            np.testing.assert_allclose(f.grad(x), G.mean(1) + f.regularizer_grad(x), atol=1e-13)


def _fd_hessian(f, x):
    H = np.zeros((D, D))
    for j in range(D):
        e = np.zeros(D)
        e[j] = 1e-5
        H[:, j] = (to_numpy(f.grad((x + e)[None]))[0] - to_numpy(f.grad((x - e)[None]))[0]) / 2e-5
    return 0.5 * (H + H.T)


def test_smoothness_and_strong_convexity_bound_the_hessian():
    rng = np.random.default_rng(4)
    for f in _objectives():
        eigs = np.concatenate([np.linalg.eigvalsh(_fd_hessian(f, rng.normal(size=D) * 2))
                               for _ in range(20)])
        assert eigs.max() <= f.smoothness * (1 + 1e-6) + 1e-8, f.name
        assert eigs.min() >= f.strong_convexity - 1e-6, f.name


def test_constants_are_attained():
    A, y = _data()
    # logistic at x = 0: Hessian = A^T A/(4n) + l2 I exactly, so L is tight there
    f = LogisticRegression(A, y, l2=0.05)
    H = _fd_hessian(f, np.zeros(D))
    assert np.linalg.eigvalsh(H).max() == pytest.approx(f.smoothness, rel=1e-6)
    assert f.smoothness_conservative == pytest.approx(
        np.linalg.eigvalsh(A.T @ A / N).max() + 0.05)
    # quadratic: the Hessian's eigenvalues are the spectrum
    q = QuadraticObjective([0.5, 1.0, 7.0], basis="random", seed=3)
    ev = np.linalg.eigvalsh(q.hessian)
    assert (q.strong_convexity, q.smoothness) == pytest.approx((ev.min(), ev.max()))
    # non-convex regulariser: min of λ(2-6t²)/(1+t²)³ is -λ/2 at t = 1
    g = NonconvexLogisticRegression(A, y, lam=0.3)
    t = np.linspace(-5, 5, 200001)
    assert np.min(0.3 * (2 - 6 * t**2) / (1 + t**2) ** 3) == pytest.approx(g.strong_convexity)
    # gradient of the regulariser: max |λ 2t/(1+t²)²| = λ 3√3/8 per coordinate, so the
    # L2 bound of the whole vector is that times sqrt(d)
    assert np.max(np.abs(0.3 * 2 * t / (1 + t**2) ** 2)) * np.sqrt(D) == pytest.approx(
        g.lipschitz(0) - g.gradient_bound, rel=1e-6)


def test_optimum_against_independent_solvers():
    for f in _objectives():
        opt = f.optimum
        res = scipy.optimize.minimize(lambda w, f=f: float(to_numpy(f.loss(w[None]))[0]),
                                      np.zeros(D), method="BFGS",
                                      jac=lambda w, f=f: to_numpy(f.grad(w[None]))[0],
                                      options={"gtol": 1e-10})
        assert opt.value <= res.fun + 1e-12, f.name
        assert opt.value == pytest.approx(res.fun, abs=1e-10), f.name
        assert opt.grad_norm < 1e-10
        assert opt.is_global == f.convex
    q = QuadraticObjective([1.0, 2.0, 4.0], basis="random", b=[1.0, -2.0, 0.5], seed=0)
    np.testing.assert_allclose(q.optimum.x, np.linalg.solve(q.hessian, [1.0, -2.0, 0.5]))


def test_sensitivities_bound_every_pair_of_samples():
    rng = np.random.default_rng(5)
    ds = kuru_synthetic(n=200, d=5, seed=2)
    f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
    assert f.l1_sensitivity == 2 * 5.0  # eq. (36): S_1 = 2 sup ||u||_1, here sup = d = 5
    q = QuadraticObjective.random(5, 0.5, 2.0, n=60, offset_scale=0.3, seed=4)
    for obj in (f, q):
        for _ in range(5):
            x = rng.normal(size=(1, 5)) * 3
            G = to_numpy(obj.sample_grads(x))[0]
            l1 = np.abs(G[:, None, :] - G[None, :, :]).sum(-1).max()
            l2 = np.linalg.norm(G[:, None, :] - G[None, :, :], axis=-1).max()
            assert l1 <= obj.l1_sensitivity + 1e-12
            assert l2 <= obj.l2_sensitivity + 1e-12


def test_quadratic_finite_sum_mean_is_the_quadratic():
    e = finite_sum_offsets(40, 3, tau0=0.7, seed=1)
    q = QuadraticObjective([1.0, 2.0, 3.0], b=[1.0, 0.0, -1.0], offsets=e)
    x = np.random.default_rng(0).normal(size=(2, 3))
    full = np.tile(np.arange(40), (2, 1))
    np.testing.assert_allclose(q.grad(x, full), q.grad(x), atol=1e-13)
    np.testing.assert_allclose(to_numpy(q.sample_losses(x)).mean(1), q.loss(x), atol=1e-13)


def test_backends_agree():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, D))
    for f_np, f_st in zip(_objectives("numpy"), _objectives("array_api_strict")):
        xs = f_st.xp.asarray(x)
        np.testing.assert_allclose(to_numpy(f_st.loss(xs)), f_np.loss(x), rtol=1e-13)
        np.testing.assert_allclose(to_numpy(f_st.clipped_mean_grad(xs, None, 0.5)),
                                   f_np.clipped_mean_grad(x, None, 0.5), atol=1e-14)
        g = f_np.to_backend("array_api_strict")
        np.testing.assert_allclose(to_numpy(g.grad(xs)), f_np.grad(x), atol=1e-14)


def test_bad_inputs():
    A, y = _data()
    f = LogisticRegression(A, y)
    with pytest.raises(ValueError, match="x must have shape"):
        f.loss(np.zeros((2, D + 1)))
    with pytest.raises(ValueError, match="idx"):
        f.grad(np.zeros((2, D)), np.zeros((3, 4), dtype=int))
    with pytest.raises(ValueError, match="labels"):
        LogisticRegression(A, y[:-1])
    with pytest.raises(ValueError, match="labels"):
        LogisticRegression(A, np.zeros(N))
    with pytest.raises(ValueError, match="clip_norm"):
        f.clipped_mean_grad(np.zeros((1, D)), None, 0.0)
    with pytest.raises(ValueError, match="r must"):
        f.normalized_mean_grad(np.zeros((1, D)), None, 0.0)
    with pytest.raises(ValueError, match="l1_radius"):
        LogisticRegression(A, y, l1_radius=1e-3)
    with pytest.raises(ValueError, match="positive-definite"):
        _ = QuadraticObjective([-1.0, 1.0]).optimum


@settings(max_examples=30, deadline=None)
@given(C=hs.floats(0.01, 10), r=hs.floats(1e-3, 10), seed=hs.integers(0, 1000))
def test_clipped_and_normalized_means_are_bounded(C, r, seed):
    f = _objectives()[0]
    x = np.random.default_rng(seed).normal(size=(2, D)) * 5
    idx = TrialRandom(seed, 2).subsample(N, 11)
    assert np.all(np.linalg.norm(f.clipped_mean_grad(x, idx, C), axis=1) <= C * (1 + 1e-12))
    assert np.all(np.linalg.norm(f.normalized_mean_grad(x, idx, r), axis=1) < 1.0)


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_clipping_with_the_regularizer_inside_each_example(backend):
    rng = np.random.default_rng(7)
    for f in _objectives(backend):
        xp = f.xp
        x = xp.asarray(rng.normal(size=(3, D)) * 2)
        idx = TrialRandom(1, 3, xp).subsample(f.n, 20)
        for ii in (None, idx):
            G = to_numpy(f.sample_grads(x, ii)) + to_numpy(f.regularizer_grad(x))[:, None, :]
            norms = np.linalg.norm(G, axis=-1, keepdims=True)
            want = (G * np.minimum(1.0, 0.7 / np.maximum(norms, 1e-300))).mean(1)
            got = to_numpy(f.clipped_mean_grad(x, ii, 0.7, include_regularizer=True))
            np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f.name)
        losses = to_numpy(f.sample_losses(x)) + to_numpy(f.regularizer(x))[:, None]
        # each example's loss clipped to [0, C] (NoisyMax's sensitivity needs the lower end
        # too: some of these objectives have negative per-example losses)
        np.testing.assert_allclose(to_numpy(f.clipped_loss(x, 0.8, include_regularizer=True)),
                                   np.clip(losses, 0.0, 0.8).mean(1), atol=1e-13)


def test_cosh_cosine_rig():
    from dpbounds.data import finite_sum_offsets
    from dpbounds.objectives import CoshCosineObjective

    e = finite_sum_offsets(30, 3, tau0=0.5, seed=2)
    for backend in ("numpy", "array_api_strict"):
        f = CoshCosineObjective(3, a=1.0, b=2.0, offsets=e, backend=backend)
        xp = f.xp
        x = np.random.default_rng(0).normal(size=(2, 3))
        fd = _fd_grad(lambda z, f=f, xp=xp: to_numpy(f.loss(xp.asarray(z))), x)
        np.testing.assert_allclose(to_numpy(f.grad(xp.asarray(x))), fd, atol=1e-7)
        full = xp.asarray(np.tile(np.arange(30), (2, 1)))
        np.testing.assert_allclose(to_numpy(f.grad(xp.asarray(x), full)),
                                   to_numpy(f.grad(xp.asarray(x))), atol=1e-13)
    # global minimum: a dense 1-D grid per coordinate (separable) agrees
    t = np.linspace(-4, 4, 400001)
    assert f.optimum.value == pytest.approx(3 * np.min(np.cosh(t) + np.cos(2 * t)), abs=1e-9)
    assert f.strong_convexity == pytest.approx(np.min(np.cosh(t) - 4 * np.cos(2 * t)),
                                               abs=1e-6)
    # (L0, L1): |F''| <= L0 + L1 |F'| per coordinate
    g1, g2 = np.sinh(t) - 2 * np.sin(2 * t), np.cosh(t) - 4 * np.cos(2 * t)
    assert np.all(np.abs(g2) <= f.l0_smoothness + f.l1_smoothness * np.abs(g1) + 1e-12)
    assert f.l2_sensitivity <= 2 * 0.5 + 1e-12


def test_branchless_sigmoid_has_the_bits_of_the_where_form():
    # _sigmoid_neg on NumPy avoids np.where (slow on random signs); oracle 1: the where form
    # bit for bit; oracle 2: scipy's expit to 1 ulp-ish
    from scipy.special import expit

    from dpbounds.objectives.glm import _sigmoid_neg

    rng = np.random.default_rng(3)
    z = np.concatenate([rng.standard_normal(5000) * 5, rng.standard_normal(100) * 400,
                        [0.0, -0.0, 1e-300, -1e-300, 709.0, -709.0, 745.0, -745.0]])
    e = np.exp(-np.abs(z))
    inv = 1.0 / (1.0 + e)
    where_form = np.where(z >= 0, e * inv, inv)
    got = _sigmoid_neg(np, z)
    assert np.array_equal(got, where_form)
    np.testing.assert_allclose(got, expit(-z), rtol=4e-16, atol=1e-300)
