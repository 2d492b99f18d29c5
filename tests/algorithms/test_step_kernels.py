"""The compiled per-step loops (``dpbounds.algorithms._step_kernels``, the ``fast`` extra).

Oracles: the NumPy path of each algorithm (a second implementation, reading the same blocked
random streams; ``DPBOUNDS_KERNELS=numpy``), the ledger's calibrated noise levels (chi-square
confidence intervals on the injected noise, two-sided, with over- and under-noised controls),
and the algorithms' own runs at other trial counts (hypothesis).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs

from dpbounds.algorithms import _step_kernels as kernels
from dpbounds.algorithms import (
    dp_nsgd,
    dp_sgd,
    noisy_projected_sgd,
    sensitivity_reduced_nsgd,
    tree_momentum_nsgd,
)
from dpbounds.audit import scaled_noise
from dpbounds.objectives import HuberWell, QuadraticObjective
from dpbounds.objectives._logistic_kernel import AVAILABLE

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba (the fast extra) is not installed")

ALGORITHMS = ("alg1", "alg2", "dp_sgd", "dp_nsgd", "projected")


def _problem(kind: str, d: int, n: int = 24):
    if kind == "huber":
        return HuberWell.random(n, d, G=1.0, L=2.0, spread=0.3, seed=d), np.full(d, 0.8)
    rng = np.random.default_rng(d)
    f = QuadraticObjective(np.geomspace(0.2, 1.0, d), basis="random", b=rng.standard_normal(d),
                           offsets=0.1 * rng.standard_normal((n, d)), seed=1)
    return f, np.full(d, 1.5)


def _run(alg: str, f, x0, *, batch: int = 1, trials: int = 3, seed: int = 0,
         step: float = 0.02, trace_every: int = 13, epsilon: float = 4.0):
    common = dict(trials=trials, seed=seed, x0=x0, trace_every=trace_every)
    if alg in ("alg1", "alg2"):
        kw = dict(epsilon=epsilon, delta=1e-5, epochs=3, step_size=step, batch_size=batch,
                  clip_threshold=2.0, trace="grad_norm", **common)
        if alg == "alg1":
            return tree_momentum_nsgd(f, **kw)
        return sensitivity_reduced_nsgd(f, smoothness=2.0, **kw)
    if alg in ("dp_sgd", "dp_nsgd"):
        kw = dict(epsilon=epsilon, delta=1e-5, steps=60, batch_size=batch, step_size=step,
                  trace="loss", **common)
        if alg == "dp_sgd":
            return dp_sgd(f, clip_threshold=1.0, **kw)
        return dp_nsgd(f, regulariser=0.1, **kw)
    # its step is D / (G sqrt t): `step` moves it through G
    return noisy_projected_sgd(f, epsilon=epsilon, delta=1e-5, radius=3.0, steps=60,
                               lipschitz=3.0 * 0.02 / step, trace="loss", **common)


def _outputs(res) -> dict[str, np.ndarray]:
    out = {"x": np.asarray(res.x), "trace": res.trace}
    if getattr(res, "x_output", None) is not None:
        out["x_output"] = np.asarray(res.x_output)
    out.update({k: v for k, v in getattr(res, "diagnostics", {}).items() if k != "step"})
    return out


@pytest.mark.parametrize("alg", ALGORITHMS)
@pytest.mark.parametrize("kind, d, batch", [("huber", 1, 1), ("huber", 5, 3), ("huber", 16, 1),
                                            ("quadratic", 3, 2), ("quadratic", 16, 1)])
def test_compiled_loop_equals_the_numpy_path(monkeypatch, alg, kind, d, batch):
    if alg == "projected" and batch > 1:
        pytest.skip("noisy projected SGD draws one example per step")
    f, x0 = _problem(kind, d)
    assert kernels.active(f, f.initial_state(1, x0)) is not None  # the compiled path is taken
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    ref = _outputs(_run(alg, f, x0, batch=batch))
    monkeypatch.setenv("DPBOUNDS_KERNELS", "auto")
    got = _outputs(_run(alg, f, x0, batch=batch))
    assert got.keys() == ref.keys()
    for key in ref:
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-10, atol=1e-12, err_msg=key)
    # negative control: a step size off by 1e-6 is seen at this tolerance
    off = _outputs(_run(alg, f, x0, batch=batch, step=0.02 * (1 + 1e-6)))
    assert not np.allclose(off["x"], ref["x"], rtol=1e-10, atol=1e-12)


def test_numpy_switch_and_other_objectives_take_the_numpy_path(monkeypatch):
    f, x0 = _problem("huber", 3)
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    assert kernels.active(f, f.initial_state(1, x0)) is None
    monkeypatch.setenv("DPBOUNDS_KERNELS", "auto")
    assert kernels.active(f, f.initial_state(1, x0)) is not None
    assert kernels.active(f.to_backend("array_api_strict"), None) is None

    class Sub(HuberWell):  # a subclass may change the gradient: not compiled
        pass

    assert kernels.active(Sub(f.offsets_np), f.initial_state(1, x0)) is None


@settings(max_examples=8, deadline=None)
@given(alg=hs.sampled_from(ALGORITHMS), few=hs.integers(1, 3), more=hs.integers(4, 6),
       seed=hs.integers(0, 2**16))
def test_trial_k_has_the_same_bits_whatever_the_trial_count(alg, few, more, seed):
    f, x0 = _problem("huber", 4)
    a = _outputs(_run(alg, f, x0, trials=few, seed=seed))
    b = _outputs(_run(alg, f, x0, trials=more, seed=seed))
    for key in a:
        np.testing.assert_array_equal(a[key], b[key][:few], err_msg=key)


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_one_trial_with_a_start_point(monkeypatch, alg):
    # one trial: the start x0 reaches the loop as a read-only broadcast view
    f, x0 = _problem("huber", 3)
    got = _run(alg, f, x0, trials=1)
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    ref = _run(alg, f, x0, trials=1)
    np.testing.assert_allclose(np.asarray(got.x), np.asarray(ref.x), rtol=1e-10, atol=1e-12)


def test_same_seed_same_bits_other_seed_other_bits():
    f, x0 = _problem("huber", 4)
    for alg in ALGORITHMS:
        a, b = _run(alg, f, x0, seed=3), _run(alg, f, x0, seed=3)
        np.testing.assert_array_equal(np.asarray(a.x), np.asarray(b.x))
        assert not np.array_equal(np.asarray(a.x), np.asarray(_run(alg, f, x0, seed=4).x))


def _flat(d: int, n: int = 32) -> QuadraticObjective:
    """Zero gradients everywhere: every move of the iterate is the injected noise."""
    return QuadraticObjective(np.zeros(d), offsets=np.zeros((n, d)))


def _variance_ci(samples: np.ndarray, sigma: float, dof_each: int = 1,
                 level: float = 1e-6) -> bool:
    """Whether the two-sided chi-square CI (level 1e-6) of the variance of zero-mean Gaussian
    ``samples`` holds ``sigma^2``; a sample that is the norm of ``dof_each`` coordinates
    counts as that many."""
    k = samples.size * dof_each
    stat = float(np.sum(samples**2)) / sigma**2
    return st.chi2.ppf(level / 2, k) <= stat <= st.chi2.ppf(1 - level / 2, k)


@pytest.mark.parametrize("alg", ["dp_sgd", "dp_nsgd"])
def test_injected_noise_has_the_ledgers_sigma(alg):
    # compiled path, zero gradients: x_{t+1} - x_t = -eta * xi_t, xi_t ~ N(0, (sigma/B)^2 I)
    d, B, eta, steps = 16, 4, 0.5, 100
    f = _flat(d)
    run = dp_sgd if alg == "dp_sgd" else dp_nsgd
    extra = dict(clip_threshold=1.0) if alg == "dp_sgd" else dict(regulariser=0.5)

    def moves(factor: float) -> tuple[np.ndarray, float]:
        with scaled_noise(factor):
            res = run(f, epsilon=2.0, delta=1e-5, steps=steps, batch_size=B, step_size=eta,
                      trials=200, seed=1, x0=np.zeros(d), trace=None, **extra)
        (mech, count), = res.privacy.ledger.entries
        assert count == steps and mech.sigma == res.params["noise_std_sum"]
        return np.asarray(res.x) / -eta, mech.sigma / B  # sum of the steps' noise

    total, sd = moves(1.0)
    # the sum of `steps` independent N(0, sd^2) draws per coordinate (3200 of them)
    assert _variance_ci(total, sd * math.sqrt(steps))
    for factor in (0.85, 1.15):  # under- and over-noised runs claiming the same ledger
        mutated, _ = moves(factor)
        assert not _variance_ci(mutated, sd * math.sqrt(steps))


def test_tree_node_noise_has_the_ledgers_sigmas_and_scaled_noise_reaches_it():
    # alpha = 1 (and gamma = 1 for Algorithm 2): the release is the node noise of the step,
    # so the diagnostics' noise_error is ||zeta_t||, zeta_t ~ N(0, sigma_t^2 I_d)
    d, n = 5, 40
    f = _flat(d, n)
    kw = dict(epsilon=4.0, delta=1e-5, epochs=25, step_size=0.01, momentum_weight=1.0,
              clip_threshold=1.0, trials=2, seed=2, x0=np.zeros(d), trace="loss", trace_every=1)
    res1 = tree_momentum_nsgd(f, **kw)
    (mech,) = [m for m, _ in res1.privacy.ledger.entries]
    z1 = res1.diagnostics["noise_error"]
    # ||zeta||^2 / sigma^2 ~ chi2(d): the sum over every step and trial
    assert _variance_ci(z1, mech.sigma, d)
    for factor in (0.5, 0.95, 1.05):  # under- and over-noised, same ledger
        with scaled_noise(factor):
            z = tree_momentum_nsgd(f, **kw).diagnostics["noise_error"]
        np.testing.assert_allclose(z, factor * z1, rtol=1e-12)  # the hook reaches the kernel
        assert not _variance_ci(z, mech.sigma, d)

    res2 = sensitivity_reduced_nsgd(f, mixing=1.0, smoothness=1.0, **kw)
    s1, s2 = res2.params["sigma_1"], res2.params["sigma_2"]
    assert {m.sigma for m, _ in res2.privacy.ledger.entries} == {s1, s2}
    t = res2.diagnostics["step"] + 1  # the record at k holds the release of step t = k + 1
    t = t[t <= res2.steps]
    first = (t - (t & -t) + 1) <= res2.params["steps_per_epoch"]  # node starts in epoch 1
    z2 = res2.diagnostics["noise_error"][:, : t.size]
    assert _variance_ci(z2[:, first], s1, d) and _variance_ci(z2[:, ~first], s2, d)
    assert not _variance_ci(z2[:, ~first], s1, d)  # the two levels differ, and are told apart


def test_projected_sgd_noise_has_the_calibrated_sigma():
    from dpbounds.algorithms.dp_erm import bst14_sigma

    d, n = 16, 30
    f = _flat(d, n)

    def run(factor: float):
        with scaled_noise(factor):
            # epsilon = 1e4: sqrt(d) sigma << n L, so the iterates stay well inside the ball
            return noisy_projected_sgd(f, epsilon=1e4, delta=1e-5, radius=1.0, steps=300,
                                       lipschitz=1.0, trials=200, seed=4, x0=np.zeros(d),
                                       trace=None)

    res = run(1.0)
    sigma = res.params["sigma"]
    assert sigma == bst14_sigma(1.0, n, 1e4, 1e-5)
    # no projection: x_T = -sum_t c_t b_t with c_t = D / (G sqrt t)
    assert float(np.max(np.linalg.norm(np.asarray(res.x), axis=1))) < 0.5
    c = 2.0 / (res.params["G"] * np.sqrt(np.arange(1, 301)))
    sd = sigma * math.sqrt(float(np.sum(c**2)))
    assert _variance_ci(np.asarray(res.x), sd)
    for factor in (0.85, 1.15):
        assert not _variance_ci(np.asarray(run(factor).x), sd)


def test_compiled_runs_accept_more_steps(monkeypatch):
    from dpbounds.algorithms._common import MAX_COMPILED_STEPS, MAX_STEPS

    f, x0 = _problem("huber", 2, n=10)
    assert kernels.step_limit(f) == MAX_COMPILED_STEPS > MAX_STEPS
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    assert kernels.step_limit(f) == MAX_STEPS
    with pytest.raises(ValueError, match="steps"):  # refused before anything runs
        dp_sgd(f, epsilon=1.0, delta=1e-5, steps=MAX_STEPS + 1, batch_size=1, step_size=0.1,
               clip_threshold=1.0, x0=x0)
    with pytest.raises(ValueError, match="epochs"):
        tree_momentum_nsgd(f, epsilon=1.0, delta=1e-5, epochs=MAX_STEPS // 10 + 1,
                           step_size=1e-9, x0=x0)


# ------------------------------------------------------- the recorders' compiled full gradient
@settings(max_examples=40, deadline=None)
@given(n=hs.integers(2, 400), d=hs.integers(1, 12), trials=hs.integers(1, 4),
       scale=hs.sampled_from([1e-4, 0.05, 1.0, 30.0]), seed=hs.integers(0, 10**6))
def test_huber_mean_grad_equals_numpy_pass(n, d, trials, scale, seed):
    """The compiled Huber full gradient against the NumPy pass (another implementation):
    equal to round-off, two-sided; a control with one sample left out must differ."""
    from dpbounds.objectives._step_kernel import full_grad, huber_mean_grad

    f = HuberWell.random(n, d, G=1.5, L=2.0, spread=0.3, seed=seed)
    X = np.random.default_rng(seed).standard_normal((trials, d)) * scale
    ref = np.asarray(f.grad(X))
    got = full_grad(f, X)
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-13)
    short = huber_mean_grad(X, f.offsets_np[1:], f.G, f.delta)  # control: n - 1 samples
    assert not np.allclose(short * (n - 1) / n, ref, rtol=1e-11, atol=1e-13) or np.allclose(
        f.sample_grads(X)[:, 0, :], 0.0)


def test_tree_trace_grid_resolves_the_momentum_start_up():
    """The tree studies' trace spacing is at most 1/(4 alpha) steps (and >= 50 points), so the
    start's point weighs <= alpha/4 of the time average; the old 50-point grid (control)
    weighs it 1/50 whatever alpha, the floor ||grad F(x_0)||/50 of the measured bias."""
    from dpbounds.verify.studies._common import _momentum_trace_every, _trace_every

    for N, E in [(5000, 31), (50000, 251), (251189, 1115), (100, 1)]:
        T, alpha = N * E, 1.0 / N
        every = _momentum_trace_every(T, alpha)
        assert every <= max(1, math.floor(1.0 / (4 * alpha)))
        assert T // every >= min(50, T)
        if E > 50:
            assert _trace_every(T) > 1.0 / (4 * alpha)  # the old grid did not resolve it
