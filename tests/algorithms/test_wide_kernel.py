"""The compiled column-blocked products with the data at large d (``_wide_kernel``, issue 36
item 3): each entry against the exact dot product (rational arithmetic) within the
recursive-summation bound, with a control that drops one term; trial k's bits independent of
the number of trials; the objective's full-data pass through them against the BLAS path
(``DPBOUNDS_KERNELS=numpy``), and the choice made by ``d`` and the CPU alone."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.objectives import _logistic_kernel, _wide_kernel

pytestmark = pytest.mark.skipif(not _logistic_kernel.AVAILABLE, reason="needs numba")

U = 2.0**-53


def _exact_dot(u: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    """(correctly rounded sum of u_j v_j, sum of |u_j v_j|), in exact rational arithmetic."""
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(u.tolist(), v.tolist(), strict=True)),
                Fraction(0))
    return float(exact), float(np.sum(np.abs(u * v)))


def _check_against_exact(got: np.ndarray, left: np.ndarray, right: np.ndarray) -> float:
    """Largest |got - exact| / bound over the entries (<= 1 passes), bound = (k + 2) u sum|.|
    for k terms (recursive summation with fused multiply-adds, Higham (3.5), plus the products'
    rounding)."""
    worst = 0.0
    k = left.shape[1]
    for t in range(left.shape[0]):
        for i in range(right.shape[0]):
            exact, mag = _exact_dot(left[t], right[i])
            bound = (k + 2) * U * mag + 1e-300
            worst = max(worst, abs(got[t, i] - exact) / bound)
    return worst


def test_margins_match_exact_dot_products_and_a_dropped_term_does_not() -> None:
    rng = np.random.default_rng(1)
    d, n = 2 * _wide_kernel.COLUMN_BLOCK + 37, 11  # three column blocks, a row remainder
    A = rng.standard_normal((n, d))
    X = rng.standard_normal((5, d))
    got = _wide_kernel.margins(X, A, 2, 9)
    assert _check_against_exact(got, X, A[2:9]) <= 1.0
    # control: the same products without the last feature are far outside the bound
    short = _wide_kernel.margins(np.ascontiguousarray(X[:, :-1]), np.ascontiguousarray(A[:, :-1]),
                                 2, 9)
    assert _check_against_exact(short, X, A[2:9]) > 1e3


def test_weighted_rows_match_exact_sums_and_a_dropped_sample_does_not() -> None:
    rng = np.random.default_rng(2)
    d, n = _wide_kernel.COLUMN_BLOCK + 5, 14
    A = rng.standard_normal((n, d))
    W = rng.standard_normal((6, 11))  # rows 3..13: two groups of four and a remainder of 3
    G = np.zeros((6, d))
    _wide_kernel.add_weighted_rows(W, A, 3, 14, G)
    assert _check_against_exact(G, W, np.ascontiguousarray(A[3:14].T)) <= 1.0
    G0 = np.zeros((6, d))
    _wide_kernel.add_weighted_rows(np.ascontiguousarray(W[:, :-1]), A, 3, 13, G0)
    assert _check_against_exact(G0, W, np.ascontiguousarray(A[3:14].T)) > 1e3


@pytest.mark.parametrize("trials", [2, 5, 9])  # the leftover path, a group of four, both
def test_accumulates_into_g(trials: int) -> None:
    rng = np.random.default_rng(3)
    A = rng.standard_normal((11, _wide_kernel.COLUMN_BLOCK + 40))
    W = rng.standard_normal((trials, 9))
    G0 = rng.standard_normal((trials, A.shape[1]))
    G = G0.copy()
    _wide_kernel.add_weighted_rows(W, A, 1, 10, G)
    np.testing.assert_allclose(G, G0 + W @ A[1:10], rtol=1e-13, atol=1e-13)


def test_rejects_spans_and_shapes_outside_the_arrays() -> None:
    A = np.ones((4, 8))
    with pytest.raises(ValueError, match="0 <= a <= b <= n = 4"):
        _wide_kernel.margins(np.ones((1, 8)), A, 0, 5)
    with pytest.raises(ValueError, match="X has 9 columns, expected 8"):
        _wide_kernel.margins(np.ones((1, 9)), A, 0, 4)
    with pytest.raises(ValueError, match="W has 3 columns, expected 4"):
        _wide_kernel.add_weighted_rows(np.ones((1, 3)), A, 0, 4, np.zeros((1, 8)))
    with pytest.raises(ValueError, match="G must have shape"):
        _wide_kernel.add_weighted_rows(np.ones((1, 4)), A, 0, 4, np.zeros((2, 8)))


@settings(max_examples=25, deadline=None)
@given(trials=st.integers(1, 9), d=st.integers(1, 1300), n=st.integers(1, 13),
       seed=st.integers(0, 2**32 - 1))
def test_trial_k_has_the_same_bits_whatever_the_trials_beside_it(trials: int, d: int, n: int,
                                                                 seed: int) -> None:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    X = rng.standard_normal((trials, d))
    W = rng.standard_normal((trials, n))
    Z = _wide_kernel.margins(X, A, 0, n)
    G = np.zeros((trials, d))
    _wide_kernel.add_weighted_rows(W, A, 0, n, G)
    for k in range(trials):
        z1 = _wide_kernel.margins(X[k:k + 1], A, 0, n)
        g1 = np.zeros((1, d))
        _wide_kernel.add_weighted_rows(W[k:k + 1], A, 0, n, g1)
        assert np.array_equal(z1[0], Z[k]) and np.array_equal(g1[0], G[k])


def test_bit_equality_would_see_another_summation_order() -> None:
    """Control for the trial-bits test: on such data the same terms summed in another order
    (the samples reversed, through the same kernel) give other last bits, so a kernel whose
    order changed with the trials beside a trial could not pass by bit equality."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((13, 700))
    W = rng.standard_normal((5, 13))
    G = np.zeros((5, 700))
    _wide_kernel.add_weighted_rows(W, A, 0, 13, G)
    R = np.zeros((5, 700))
    _wide_kernel.add_weighted_rows(np.ascontiguousarray(W[:, ::-1]),
                                   np.ascontiguousarray(A[::-1]), 0, 13, R)
    np.testing.assert_allclose(R, G, rtol=1e-12, atol=1e-12)
    assert not np.array_equal(R, G)
    X = rng.standard_normal((3, 700))
    Z, Zr = _wide_kernel.margins(X, A, 0, 13), _wide_kernel.margins(
        np.ascontiguousarray(X[:, ::-1]), np.ascontiguousarray(A[:, ::-1]), 0, 13)
    np.testing.assert_allclose(Zr, Z, rtol=1e-12, atol=1e-12)
    assert not np.array_equal(Zr, Z)


def test_rejects_what_it_cannot_read() -> None:
    A = np.ones((4, 8))
    with pytest.raises(ValueError, match="X must be a 2-d float64"):
        _wide_kernel.margins(np.ones((2, 8), dtype=np.float32), A, 0, 4)
    with pytest.raises(ValueError, match="G must be a C-contiguous float64"):
        _wide_kernel.add_weighted_rows(np.ones((2, 4)), A, 0, 4, np.ones((8, 2)).T)


def test_the_choice_depends_on_d_and_the_cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPBOUNDS_KERNELS", "auto")
    for here in (True, False):
        monkeypatch.setattr(_wide_kernel, "AUTO_HERE", here)
        assert not _wide_kernel.chosen(_wide_kernel.WIDE_MIN_D - 1)
        assert _wide_kernel.chosen(_wide_kernel.WIDE_MIN_D) is here
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numba")  # forced, on any CPU
    assert _wide_kernel.chosen(_wide_kernel.WIDE_MIN_D)
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    monkeypatch.setattr(_wide_kernel, "AUTO_HERE", True)
    assert not _wide_kernel.chosen(10**6)


@pytest.mark.parametrize("avx512, cpu, takes", [
    (False, "znver1", True), (False, "znver3", True),  # measured 1.25-4.3x BLAS (AVX2)
    (True, "znver4", True),  # measured 1.03-3.47x its AVX-512 OpenBLAS (stop 70)
    (True, "skylake-avx512", False), (True, "sapphirerapids", False),  # Xeon: BLAS
    (True, "znver5", False),  # not measured: BLAS, as any AVX-512 CPU not listed
])
def test_the_cpu_rule_is_the_measured_table(avx512: bool, cpu: str, takes: bool) -> None:
    assert _wide_kernel.auto_rule(avx512, cpu) is takes


def test_this_cpu_reads_its_rule() -> None:
    # the rule is applied to this CPU's own answers, once at import
    assert _wide_kernel.AUTO_HERE is _wide_kernel.auto_rule(_wide_kernel._avx512(),
                                                            _wide_kernel._host_cpu())


def test_the_cpu_rule_follows_numpys_switch() -> None:
    """With NumPy's AVX-512 dispatch switched off (``NPY_DISABLE_CPU_FEATURES``, what
    ``bench/_no_avx512.py`` sets), AVX-512 reads as absent and the rule takes the kernels, in a
    fresh process."""
    import os
    import subprocess
    import sys

    np_features = pytest.importorskip("numpy._core._multiarray_umath").__cpu_features__
    if not np_features.get("AVX512F", False):
        pytest.skip("this CPU has no AVX-512 to switch off")
    names = ("X86_V4 AVX512_ICL AVX512_SPR" if "X86_V4" in np_features else
             "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR")
    code = "from dpbounds.objectives import _wide_kernel as w; print(w._avx512(), w.AUTO_HERE)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "NPY_DISABLE_CPU_FEATURES": names},
                         check=True).stdout.split()
    assert out[-2:] == ["False", "True"]


def _blas_margins(monkeypatch: pytest.MonkeyPatch, f, x: np.ndarray) -> np.ndarray:
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    z = f._margins(x, None)[0]
    monkeypatch.setenv("DPBOUNDS_KERNELS", "auto")
    return z


@pytest.mark.parametrize(("loss", "n"), [("logistic", 37), ("huber_svm", 37),
                                         ("logistic", 2102)])  # 2102: two blocks of samples
def test_full_data_pass_agrees_with_blas_and_keeps_trial_bits(monkeypatch: pytest.MonkeyPatch,
                                                              loss: str, n: int) -> None:
    from dpbounds.algorithms import dp_gd
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import HuberSVM, LogisticRegression

    d = _wide_kernel.WIDE_MIN_D + 3
    A, y = kuru_synthetic(n=n, d=d, seed=0)
    f = (LogisticRegression if loss == "logistic" else HuberSVM)(A, y, l2=0.02)
    x = np.random.default_rng(0).standard_normal((5, d)) * 0.01  # a group of four and one
    monkeypatch.setattr(_wide_kernel, "AUTO_HERE", True)  # as on a CPU without AVX-512
    monkeypatch.setenv("DPBOUNDS_KERNELS", "auto")
    assert f._wide(x)
    loss_w, grad_w = f.loss(x), f.grad(x)
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    assert not f._wide(x)
    loss_b, grad_b = f.loss(x), f.grad(x)
    np.testing.assert_allclose(loss_w, loss_b, rtol=1e-12)
    np.testing.assert_allclose(grad_w, grad_b, rtol=1e-10, atol=1e-15)
    monkeypatch.setenv("DPBOUNDS_KERNELS", "auto")
    # the margins sum d terms in another order (the gradient's sum over 37 samples in order
    # may well match BLAS's bits): the path did change
    assert not np.array_equal(f._margins(x, None)[0], _blas_margins(monkeypatch, f, x))
    kw = dict(epsilon=1.0, steps=3, seed=4, step_size=0.5, trace=None)
    many = dp_gd(f, trials=5, **kw).x_numpy()
    few = dp_gd(f, trials=2, **kw).x_numpy()
    assert np.isfinite(many).all()
    assert np.array_equal(many[:2], few)
