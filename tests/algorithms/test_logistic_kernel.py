"""The compiled logistic pass (``dpbounds.objectives._logistic_kernel``, the ``fast`` extra).

Oracles: NumPy's ``exp`` and mpmath for the vectorised exponential; SciPy's ``logaddexp`` /
``expit`` in extended care (``np.longdouble`` sums) and the library's NumPy pass for the losses
and gradients; the definition itself (runs with other trial counts) for "trial k depends only on
its own state". Negative controls: a pass over one sample fewer, and the loss at ``-z``, must
fail the same comparisons.
"""

from __future__ import annotations

import unittest.mock

import mpmath
import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.algorithms import dp_heavy_ball, dp_masg, dp_nag
from dpbounds.algorithms._common import TraceRecorder
from dpbounds.objectives import HuberSVM, LogisticRegression, QuadraticObjective
from dpbounds.objectives import _logistic_kernel as kernel

pytestmark = pytest.mark.skipif(not kernel.AVAILABLE, reason="needs numba (the fast extra)")


def _problem(n: int, d: int, seed: int = 0, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1.0, 1.0, (n, d)) * scale
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return A, y


def _oracle(A, y, X, G):
    """Sum of log(1 + e^{-z}) at X and sum of psi'(z) u at G, in long double."""
    U = (A * y[:, None]).astype(np.longdouble)
    z = X.astype(np.longdouble) @ U.T
    loss = np.sum(np.logaddexp(0.0, -z.astype(float)).astype(np.longdouble), axis=1)
    zg = (G.astype(np.longdouble) @ U.T).astype(float)
    w = -scipy.special.expit(-zg)
    return np.asarray(loss, float), np.asarray(w.astype(np.longdouble) @ U, float)


def test_exp_is_within_one_ulp_of_numpy_and_mpmath():
    z = np.concatenate([np.linspace(-708.0, 708.0, 400_001), [0.0, -0.0, 1e-300, 5e-324],
                        np.random.default_rng(1).standard_normal(10_000) * 30])
    got = kernel.exp_neg_abs(z)
    want = np.exp(-np.abs(z))
    assert np.max(np.abs(got - want) / np.spacing(want)) <= 1.0
    for v in np.random.default_rng(2).uniform(-700, 700, 200):
        exact = mpmath.exp(-abs(mpmath.mpf(float(v))))
        assert abs(kernel.exp_neg_abs(np.array([v]))[0] - float(exact)) <= 1.5 * np.spacing(
            float(exact))


def test_exp_at_the_rounding_ties_of_its_exponent():
    """Where t log2 e crosses k + 1/2 (the kernel picks k by the 1.5 * 2^52 rounding trick) the
    reduced argument reaches ln2/2: still within 1 ulp of NumPy on both sides of every tie,
    over the whole exponent range. Control: the same degree-13 Taylor polynomial with k chosen
    by floor (r up to ln 2) is off by far more than 1 ulp at these points."""
    k = np.arange(0, 1021, dtype=float)
    ties = (k + 0.5) * np.log(2.0)
    z = np.concatenate([ties, np.nextafter(ties, 0.0), np.nextafter(ties, np.inf), -ties])
    got = kernel.exp_neg_abs(z)
    want = np.exp(-np.abs(z))
    assert np.max(np.abs(got - want) / np.spacing(want)) <= 1.0
    # control (NumPy, independent of the kernel): floor instead of round
    t = -np.abs(z)
    kf = np.floor(t / np.log(2.0))
    r = t - kf * np.log(2.0)
    poly = np.zeros_like(r)
    for j in range(13, -1, -1):
        poly = poly * r + 1.0 / np.prod(np.arange(1.0, j + 1.0))
    assert np.max(np.abs(np.ldexp(poly, kf.astype(int)) - want) / np.spacing(want)) > 4.0


def test_sigmoid_weights_are_within_a_few_ulp():
    """Newton's reciprocal instead of a division: 4 ulp of SciPy, 2 ulp of mpmath."""
    z = np.concatenate([np.linspace(-700.0, 700.0, 200_001),
                        np.random.default_rng(3).standard_normal(50_000) * 5])
    got, want = kernel.sigmoid_weights(z), -scipy.special.expit(-z)
    assert np.max(np.abs(got - want) / np.spacing(np.abs(want))) <= 4.0
    for v in np.random.default_rng(4).uniform(-30, 30, 200):
        exact = float(-1 / (1 + mpmath.exp(mpmath.mpf(float(v)))))
        assert abs(kernel.sigmoid_weights(np.array([v]))[0] - exact) <= 2 * np.spacing(abs(exact))
    # control: one Newton step fewer is visibly worse than the tolerance
    u = 1.0 + np.exp(-np.abs(z))
    r = 24 / 17 - 8 / 17 * u
    for _ in range(3):
        r = r + r * (1 - u * r)
    assert np.max(np.abs(r - 1 / u) / np.spacing(1 / u)) > 4.0


def test_exp_clamps_far_tails_to_a_normal_number():
    got = kernel.exp_neg_abs(np.array([709.0, -1e5, 1e300, -np.inf]))
    assert np.all(got > 0) and np.all(got <= np.exp(-708.0) * (1 + 1e-15))
    assert np.all(got >= np.finfo(float).tiny)  # never subnormal


@pytest.mark.parametrize("n,d,trials", [(1000, 20, 5), (257, 3, 1), (4096, 7, 9), (100, 1, 4)])
def test_loss_and_gradient_match_an_extended_precision_oracle(n, d, trials):
    A, y = _problem(n, d)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((trials, d)) * 5
    G = X + rng.standard_normal((trials, d))
    loss, grad = kernel.logistic_pass(np.ascontiguousarray((A * y[:, None]).T), X, G,
                                      loss=True, grad=True)
    want_loss, want_grad = _oracle(A, y, X, G)
    assert np.allclose(loss, want_loss, rtol=1e-13, atol=0)
    assert np.max(np.abs(grad - want_grad)) <= 1e-13 * np.max(np.abs(want_grad))
    # the loss alone (its factors 1 + e formed inside the product's loop) and beside the
    # gradient at X (the factors stored by the weights): the same oracle
    for g, want_g in ((None, False), (None, True)):
        only, _ = kernel.logistic_pass(np.ascontiguousarray((A * y[:, None]).T), X, g,
                                       loss=True, grad=want_g)
        assert np.allclose(only, want_loss, rtol=1e-13, atol=0)
    # negative controls: one sample fewer, or the loss of -z, fail the same comparison
    short, _ = _oracle(A[:-1], y[:-1], X, G)
    assert not np.allclose(short, want_loss, rtol=1e-13, atol=0)
    flipped, _ = _oracle(A, -y, X, G)
    assert not np.allclose(loss, flipped, rtol=1e-13, atol=0)


@pytest.mark.parametrize("scale", [1.0, 50.0, 1e4])  # margins up to ~1e5: the clamped tails
def test_matches_the_numpy_pass(monkeypatch, scale):
    A, y = _problem(3000, 6, seed=4, scale=scale)
    f = LogisticRegression(A, y, l2=0.02)
    rng = np.random.default_rng(5)
    X, G = rng.standard_normal((7, 6)), rng.standard_normal((7, 6))
    fast = [f.loss(X), *f.loss_and_grad(X), *f.loss_and_grad(X, grad_at=G), f.grad(X)]
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    slow = [f.loss(X), *f.loss_and_grad(X), *f.loss_and_grad(X, grad_at=G), f.grad(X)]
    for a, b in zip(fast, slow):
        assert np.all(np.isfinite(a))
        assert np.max(np.abs(a - b)) <= 1e-13 * max(np.max(np.abs(b)), 1.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 700), d=st.integers(1, 9), trials=st.integers(1, 9),
       k=st.integers(0, 8), seed=st.integers(0, 2**16))
def test_trial_k_has_the_same_bits_whatever_the_number_of_trials(n, d, trials, k, seed):
    k = min(k, trials - 1)
    A, y = _problem(n, d, seed)
    Zt = np.ascontiguousarray((A * y[:, None]).T)
    rng = np.random.default_rng(seed + 1)
    X, G = rng.standard_normal((trials, d)), rng.standard_normal((trials, d))
    for g in (None, G):
        all_loss, all_grad = kernel.logistic_pass(Zt, X, g, loss=True, grad=True)
        one_loss, one_grad = kernel.logistic_pass(Zt, X[k:k + 1], None if g is None
                                                  else g[k:k + 1], loss=True, grad=True)
        assert all_loss[k] == one_loss[0]
        assert np.array_equal(all_grad[k], one_grad[0])


def test_dispatch(monkeypatch):
    A, y = _problem(500, 4)
    calls = []
    real = kernel.logistic_pass
    monkeypatch.setattr(kernel, "logistic_pass",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    X = np.ones((2, 4))
    LogisticRegression(A, y).loss(X)
    assert len(calls) == 1
    HuberSVM(A, y).loss(X)  # another loss: the NumPy pass
    assert len(calls) == 1

    class Shifted(LogisticRegression):  # a redefined loss does not inherit the kernel
        def _psi(self, xp, z):
            return super()._psi(xp, z) + 1.0

    Shifted(A, y).loss(X)
    assert len(calls) == 1
    LogisticRegression(A, y).loss(X.astype(np.float32))  # not float64: the NumPy pass
    assert len(calls) == 1
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    LogisticRegression(A, y).loss(X)
    assert len(calls) == 1
    monkeypatch.setenv("DPBOUNDS_KERNELS", "fortran")
    with pytest.raises(ValueError, match="DPBOUNDS_KERNELS"):
        LogisticRegression(A, y).loss(X)


def test_bad_shapes_are_refused():
    Zt = np.zeros((3, 10))
    with pytest.raises(ValueError, match="shape"):
        kernel.logistic_pass(Zt, np.zeros((2, 4)), None, loss=True, grad=False)
    with pytest.raises(ValueError, match="shape"):
        kernel.logistic_pass(Zt, np.zeros((2, 3)), np.zeros((1, 3)), loss=True, grad=True)


@pytest.mark.parametrize("alg", [dp_nag, dp_heavy_ball])
def test_algorithms_agree_with_the_numpy_pass_to_round_off(monkeypatch, alg):
    A, y = _problem(2000, 5, seed=6)
    f = LogisticRegression.kuru(A, y, lam=0.01)
    kw = dict(epsilon=1.0, steps=60, trials=3, seed=7, x0=3.0, c=0.5, trace="suboptimality")
    fast = alg(f, **kw).trace
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    slow = alg(f, **kw).trace
    assert np.max(np.abs(fast - slow) / np.abs(slow)) < 1e-9
    # control: another seed is far from both
    other = alg(f, **{**kw, "seed": 8}).trace
    assert np.max(np.abs(other - slow) / np.abs(slow)) > 1e-3


def test_minibatch_gradient_matches_the_numpy_path_and_an_oracle(monkeypatch):
    A, y = _problem(3000, 7, seed=9)
    f = LogisticRegression(A, y, l2=0.02)
    rng = np.random.default_rng(10)
    X = rng.standard_normal((5, 7)) * 3
    idx = np.stack([rng.choice(3000, 400, replace=False) for _ in range(5)])
    fast = f.grad(X, idx)
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    slow = f.grad(X, idx)
    U = A * y[:, None]
    want = np.stack([(-scipy.special.expit(-(U[i] @ x)) @ U[i]) / 400 + 0.02 * x
                     for x, i in zip(X, idx)])
    for got in (fast, slow):
        assert np.max(np.abs(got - want)) <= 1e-13 * np.max(np.abs(want))
    # control: the full-data gradient is not the mini-batch one
    assert np.max(np.abs(f.grad(X) - want)) > 1e-6
    # trial k alone: the same bits
    Zr = np.ascontiguousarray(U)
    allg = kernel.minibatch_gradient(Zr, X, idx)
    for k in range(5):
        assert np.array_equal(kernel.minibatch_gradient(Zr, X[k:k + 1], idx[k:k + 1])[0], allg[k])
    with pytest.raises(ValueError, match="idx"):
        kernel.minibatch_gradient(Zr, X, idx + 3000)
    with pytest.raises(ValueError, match="shape"):
        kernel.minibatch_gradient(Zr, X[:, :3], idx)


def test_non_finite_states_propagate_as_in_the_numpy_pass(monkeypatch):
    """A diverged iterate must show as nan/inf, not as a clamped finite loss."""
    A, y = _problem(300, 3, seed=11)
    f = LogisticRegression(A, y)
    X = np.array([[np.nan, 0, 0], [np.inf, 0, 0], [-np.inf, 1, 0], [1e308, 1e308, 0], [1, 2, 3]])
    idx = np.tile(np.arange(50), (5, 1))
    with np.errstate(all="ignore"):
        fast = [*f._full_pass(X, loss=True, grad="plain"), f._data_grad(X, idx)]
        monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
        slow = [*f._full_pass(X, loss=True, grad="plain"), f._data_grad(X, idx)]
    for a, b in zip(fast, slow):
        assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(np.isinf(a), np.isinf(b))
        ok = np.isfinite(b)
        assert np.allclose(a[ok], b[ok], rtol=1e-13, atol=0)
    assert np.isnan(fast[0][0]) and np.isinf(fast[0][1])  # control: not clamped to finite


def test_recorded_states_evaluated_later_in_stacked_passes():
    """``TraceRecorder.record_later``: pending states stacked into one full-data pass give each
    step the value an immediate ``record`` gives, bit for bit, in step order, across flushes
    (a small ``later_elements``) and interleaved with immediate records; oracle: the
    definition of the loss in extended precision."""
    A, y = _problem(1500, 4, seed=12)
    f = LogisticRegression.kuru(A, y, lam=0.01)
    rng = np.random.default_rng(13)
    states = [rng.standard_normal((3, 4)) * s for s in (0.1, 1.0, 3.0, 10.0, 0.5, 2.0, 7.0)]
    now, later = TraceRecorder(f, "suboptimality"), TraceRecorder(f, "suboptimality")
    later.later_elements = 4 * 3 * 4  # a flush at every fourth pending state
    calls = []
    real = kernel.logistic_pass
    counted = lambda *a, **kw: calls.append(a[1].shape[0]) or real(*a, **kw)  # noqa: E731
    for x in states:
        now.record(x)
    with unittest.mock.patch.object(kernel, "logistic_pass", counted):
        for k, x in enumerate(states):
            if k == 1:
                later.record(x)  # an immediate one between pending ones
            else:
                later.record_later(x)
        got = later.result(3)
    want = now.result(3)
    assert np.array_equal(got, want)
    # state 1 at once, then states 0, 2, 3, 4 in one call (rows 4 x 3), 5 and 6 at the end
    assert calls == [3, 12, 6]
    lam = f.l2 / 2.0
    for k, x in enumerate(states):
        oracle = _oracle(A, y, x, x)[0] / A.shape[0] + lam * np.sum(x * x, axis=1)
        assert np.allclose(got[:, k], oracle - f.optimum.value, rtol=1e-12, atol=1e-14)
    # control: the comparison sees a state recorded in the wrong slot
    assert not np.allclose(got[:, 1:], want[:, :-1], rtol=1e-6)


def test_minibatch_runs_record_every_iterate_in_few_passes(monkeypatch):
    """A mini-batch run's F(x_t) (never used by its updates) comes from a few stacked passes:
    the same trace, bit for bit, as one pass per step (``rowwise_states`` off), and as the
    NumPy pass to round-off; a row-by-row-unknown objective is evaluated at once."""
    A, y = _problem(3000, 5, seed=14)
    f = LogisticRegression.kuru(A, y, lam=0.01)
    kw = dict(epsilon=1.0, steps=40, trials=3, seed=15, x0=3.0, c=0.5, batch_size=100,
              trace="suboptimality")
    calls = []
    real = kernel.logistic_pass
    monkeypatch.setattr(kernel, "logistic_pass",
                        lambda *a, **k: calls.append(a[1].shape[0]) or real(*a, **k))
    for alg in (dp_nag, dp_heavy_ball, dp_masg):
        calls.clear()
        batched = alg(f, **kw).trace
        assert calls == [3 * 41]  # every iterate, one stacked pass
        monkeypatch.setattr(f, "rowwise_states", False, raising=False)
        stepwise = alg(f, **kw).trace
        monkeypatch.delattr(f, "rowwise_states")
        assert np.array_equal(batched, stepwise)
        monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
        numpy_pass = alg(f, **kw).trace
        monkeypatch.delenv("DPBOUNDS_KERNELS")
        assert np.max(np.abs(batched - numpy_pass) / np.abs(numpy_pass)) < 1e-9
        # control: another seed's trace is far from it
        other = alg(f, **{**kw, "seed": 16}).trace
        assert np.max(np.abs(other - batched) / np.abs(batched)) > 1e-3
    q = QuadraticObjective([1.0, 2.0], offsets=rng_offsets())
    assert not q.rowwise_states
    seen = []
    monkeypatch.setattr(type(q), "loss", lambda self, x: seen.append(x.shape[0]) or
                        np.zeros(x.shape[0]))
    rec = TraceRecorder(q, "loss")
    rec.record_later(np.zeros((2, 2)))
    assert seen == [2]  # evaluated at once


def rng_offsets():
    return np.random.default_rng(17).standard_normal((20, 2))


def _margins_by_exact_arithmetic(Zt, X, a, n):
    """The documented order, in exact rationals: round(x_0 u_0), then one correctly rounded
    fused multiply-add per feature row j = 1..d-1 (Fraction -> float rounds to nearest)."""
    from fractions import Fraction

    d = Zt.shape[0]
    out = np.empty((X.shape[0], n))
    for k in range(X.shape[0]):
        for i in range(n):
            s = float(Fraction(X[k, 0]) * Fraction(Zt[0, a + i]))
            for j in range(1, d):
                s = float(Fraction(X[k, j]) * Fraction(Zt[j, a + i]) + Fraction(s))
            out[k, i] = s
    return out


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6, 7, 8, 9, 20])
def test_margins_have_the_bits_of_the_documented_order(d):
    # The first sweep forms rows 0..r-1 in one expression (r = d mod 4, or 4); there the
    # compiler may fuse either of the first two products (LLVM 14 fused row 0's: 1 ulp off on
    # about half the margins, which moved the gradients' last bits). Exact rationals are the
    # oracle; control: the other contraction, fma(x_0, u_0, round(x_1 u_1)), differs.
    import numba

    rng = np.random.default_rng(d)
    N, n, a = 300, 130, 128  # a block that starts inside the data and runs past 128
    Zt = rng.standard_normal((d, N))
    X = rng.standard_normal((kernel.GROUP, d))
    z = np.empty((kernel.GROUP, kernel.BLOCK + 8))

    @numba.njit
    def run(Zf, X, z):
        kernel._margins(Zf, N, d, X, 0, a, n, z)

    got = np.empty((kernel.GROUP, n))
    z = np.empty((kernel.GROUP, n + 8))
    run(Zt.reshape(-1), X, z)
    got[:] = z[:, :n]
    want = _margins_by_exact_arithmetic(Zt, X, a, n)
    assert np.array_equal(got, want)
    if d >= 2:
        from fractions import Fraction

        other = np.array([[float(Fraction(X[k, 0]) * Fraction(Zt[0, a + i])
                                 + Fraction(float(Fraction(X[k, 1]) * Fraction(Zt[1, a + i]))))
                           for i in range(n)] for k in range(kernel.GROUP)])
        for j in range(2, d):
            other = np.array([[float(Fraction(X[k, j]) * Fraction(Zt[j, a + i])
                                     + Fraction(other[k, i])) for i in range(n)]
                              for k in range(kernel.GROUP)])
        assert not np.array_equal(other, want)
