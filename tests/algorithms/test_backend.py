"""dpbounds.backend: namespaces and per-trial random streams.

Oracles: scipy.stats distributions (KS tests), closed-form moments with 5-sigma confidence
intervals, exact combinatorics of sampling without replacement.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs

from dpbounds.backend import (
    TrialRandom,
    backend_name,
    cupy_available,
    get_namespace,
    to_numpy,
    trial_random,
)


@pytest.mark.parametrize("name", ["numpy", "array_api_strict", None, "auto"])
def test_get_namespace_names(name):
    xp = get_namespace(name)
    a = xp.asarray([1.0, 2.0])
    assert float(xp.sum(a)) == 3.0
    if name == "array_api_strict":
        assert backend_name(xp) == "array_api_strict"


def test_get_namespace_modules():
    import array_api_strict

    assert backend_name(get_namespace(np)) == "numpy"
    assert get_namespace(array_api_strict) is array_api_strict


def test_get_namespace_rejects_unknown():
    with pytest.raises(ValueError, match="backend"):
        get_namespace("tensorflow")
    with pytest.raises(ValueError, match="backend"):
        get_namespace(42)


@pytest.mark.skipif(cupy_available(), reason="CuPy with a GPU is present")
def test_cupy_without_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="cupy"):
        get_namespace("cupy")


def test_same_seed_same_numbers_and_trial_streams_independent_of_batch_size():
    a = TrialRandom(123, 3).laplace((5,), 2.0)
    b = TrialRandom(123, 3).laplace((5,), 2.0)
    c = TrialRandom(123, 7).laplace((5,), 2.0)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    # trial k's stream depends only on (seed, k), not on the number of trials
    np.testing.assert_array_equal(to_numpy(a), to_numpy(c)[:3])
    d = TrialRandom(124, 3).laplace((5,), 2.0)
    assert not np.allclose(to_numpy(a), to_numpy(d))


def test_generator_seed_is_reproducible():
    a = TrialRandom(np.random.default_rng(5), 2).normal((3,))
    b = TrialRandom(np.random.default_rng(5), 2).normal((3,))
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_split_is_deterministic_and_streams_differ():
    r = TrialRandom(9, 4)
    s1, n1 = r.split(2)
    r.normal((10,))  # drawing from the parent must not change its children
    s2, n2 = r.split(2)
    np.testing.assert_array_equal(to_numpy(s1.normal((6,))), to_numpy(s2.normal((6,))))
    x, y = to_numpy(n1.normal((1000,))), to_numpy(s1.normal((1000,)))
    # independent streams: sample correlation of 4000 pairs is tiny (5 sigma)
    assert abs(np.corrcoef(x.ravel(), y.ravel())[0, 1]) < 5 / math.sqrt(4000)


def test_numpy_and_array_api_strict_are_bit_identical():
    a = TrialRandom(3, 2, "numpy")
    b = TrialRandom(3, 2, "array_api_strict")
    np.testing.assert_array_equal(to_numpy(a.laplace((4,), 0.5)), to_numpy(b.laplace((4,), 0.5)))
    np.testing.assert_array_equal(to_numpy(a.subsample(50, 7)), to_numpy(b.subsample(50, 7)))
    assert backend_name(b.xp) == "array_api_strict"
    assert "array_api_strict" in type(b.normal((2,))).__module__


@pytest.mark.parametrize("scale", [0.3, 4.0])
def test_laplace_is_laplace_with_variance_2b2(scale):
    draws = to_numpy(TrialRandom(11, 4).laplace((50_000,), scale)).ravel()
    # oracle 1: KS test against scipy's Laplace(scale=b)
    assert st.kstest(draws, st.laplace(scale=scale).cdf).pvalue > 1e-4
    # oracle 2: variance 2 b^2 within 5 standard errors (Var(X^2) = 20 b^4 for Laplace)
    N = draws.size
    se = math.sqrt(20.0 * scale**4 / N)
    assert abs(np.mean(draws**2) - 2 * scale**2) < 5 * se


def test_normal_variance_and_per_trial_scales():
    scales = np.array([0.5, 1.0, 3.0])
    rng = TrialRandom(2, 3)
    draws = to_numpy(rng.normal((40_000,), rng.xp.asarray(scales)))
    for k, s in enumerate(scales):
        se = math.sqrt(2.0 * s**4 / draws.shape[1])
        assert abs(np.mean(draws[k] ** 2) - s**2) < 5 * se
        assert st.kstest(draws[k] / s, "norm").pvalue > 1e-4


def test_exponential_and_uniform():
    rng = TrialRandom(4, 2)
    e = to_numpy(rng.exponential((20_000,), 2.0)).ravel()
    assert st.kstest(e, st.expon(scale=2.0).cdf).pvalue > 1e-4
    u = to_numpy(rng.uniform((20_000,), -1.0, 3.0)).ravel()
    assert st.kstest(u, st.uniform(loc=-1.0, scale=4.0).cdf).pvalue > 1e-4


def test_subsample_without_replacement_is_uniform():
    n, m, trials = 20, 5, 2000
    idx = to_numpy(TrialRandom(8, trials).subsample(n, m))
    assert idx.shape == (trials, m)
    assert all(len(set(row)) == m for row in idx)  # without replacement
    assert idx.min() >= 0 and idx.max() < n
    # inclusion counts: each item with probability m/n per trial (chi-square oracle)
    counts = np.bincount(idx.ravel(), minlength=n)
    expected = trials * m / n
    chi2 = np.sum((counts - expected) ** 2 / expected)
    # dependence within a trial makes the statistic smaller, never larger, than chi2(n-1)
    assert chi2 < st.chi2(n - 1).ppf(1 - 1e-5)


def test_permutation_and_integers():
    rng = TrialRandom(1, 3)
    p = to_numpy(rng.permutation(10))
    assert all(sorted(row) == list(range(10)) for row in p)
    i = to_numpy(rng.integers(7, (1000,)))
    assert i.min() >= 0 and i.max() <= 6 and i.shape == (3, 1000)


def test_bad_arguments():
    with pytest.raises(ValueError, match="trials"):
        TrialRandom(0, 0)
    with pytest.raises(ValueError, match="m"):
        TrialRandom(0, 1).subsample(10, 11)
    with pytest.raises(ValueError, match="seed"):
        TrialRandom(-1, 1)
    with pytest.raises(ValueError, match="scale"):
        TrialRandom(0, 1).laplace((2,), -1.0)
    with pytest.raises(ValueError, match="dtype"):
        TrialRandom(0, 1, dtype="int8")


@settings(max_examples=25, deadline=None)
@given(seed=hs.integers(0, 2**32), trials=hs.integers(1, 5), n=hs.integers(1, 40),
       data=hs.data())
def test_subsample_property(seed, trials, n, data):
    m = data.draw(hs.integers(1, n))
    idx = to_numpy(trial_random(seed, trials).subsample(n, m))
    assert idx.shape == (trials, m)
    for row in idx:
        assert len(np.unique(row)) == m and row.min() >= 0 and row.max() < n


# -- prefetching streams ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["normal", "laplace", "exponential"])
@pytest.mark.parametrize("shape", [(3,), (1 << 17,)])  # the second forces blocks of 2 steps
def test_prefetch_draws_the_same_bits_as_step_by_step_draws(kind, shape):
    # oracle: the same stream drawn one step at a time, without prefetching
    plain, ahead = TrialRandom(7, 3), TrialRandom(7, 3).prefetch(5)
    for step in range(7):  # past the announced 5 steps and across block boundaries
        scale = 0.5 + step
        a, b = getattr(plain, kind)(shape, scale), getattr(ahead, kind)(shape, scale)
        assert np.array_equal(a, b), (kind, shape, step)


def test_prefetch_keeps_trial_k_a_function_of_seed_and_k():
    few = TrialRandom(11, 2).prefetch(4)
    many = TrialRandom(11, 5).prefetch(4)
    for _ in range(6):
        assert np.array_equal(few.laplace((4,)), many.laplace((4,))[:2])


def test_a_prefetching_stream_refuses_a_second_kind_of_draw():
    stream = TrialRandom(0, 2).prefetch(10)
    stream.normal((3,))
    with pytest.raises(RuntimeError, match="one kind"):
        stream.laplace((3,))
    with pytest.raises(RuntimeError, match="one kind"):
        stream.normal((4,))
    with pytest.raises(RuntimeError, match="one kind"):
        TrialRandom(0, 2).prefetch(3).subsample(10, 2)
    with pytest.raises(RuntimeError, match="every trial"):
        TrialRandom(0, 2).prefetch(3).normal((3,), where=np.array([True, False]))
    with pytest.raises(ValueError, match="steps"):
        TrialRandom(0, 2).prefetch(0)


@pytest.mark.parametrize("shape", [(20, 2048), (2048, 20), (7, 3)])
def test_rowwise_matmul_rows_do_not_depend_on_the_row_count(shape):
    # Row t of rowwise_matmul(a[:r], b) is bit-identical for every r > t (across the
    # fixed-size row blocks and the zero-padded last block); value oracle: a @ b.
    from dpbounds.backend import ROW_BLOCK, rowwise_matmul

    rng = np.random.default_rng(5)
    k, m = shape
    a, b = rng.standard_normal((3 * ROW_BLOCK + 5, k)), rng.standard_normal((k, m))
    full = rowwise_matmul(np, a, b)
    np.testing.assert_allclose(full, a @ b, rtol=1e-12, atol=1e-12 * np.abs(a @ b).max())
    counts = (1, 2, ROW_BLOCK - 1, ROW_BLOCK, ROW_BLOCK + 1, 2 * ROW_BLOCK + 3)
    for r in counts:
        assert np.array_equal(rowwise_matmul(np, a[:r], b), full[:r]), r
    if min(shape) >= 20:  # negative control: one plain BLAS call per row count drifts
        assert not all(np.array_equal(a[:r] @ b, (a @ b)[:r]) for r in counts)
    # b as a transposed view (the objectives pass Z.T): invariant too (its bits may differ
    # from those of a contiguous b: BLAS takes another path, the same for every row count)
    bt = np.ascontiguousarray(b.T).T
    full_t = rowwise_matmul(np, a, bt)
    assert all(np.array_equal(rowwise_matmul(np, a[:r], bt), full_t[:r]) for r in (1, 3, 9))


def test_logistic_full_pass_is_trial_count_invariant_beyond_a_row_block():
    # 20 trials (blocks of 8 with a padded remainder) against 9 and 1: the loss and the
    # gradient of trial k are the same bits (the reproducibility tests use at most 4 trials)
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(2)
    A, y = rng.standard_normal((5000, 6)), rng.choice([-1.0, 1.0], 5000)
    f = LogisticRegression(A, y, l2=0.02)
    x = rng.standard_normal((20, 6))
    loss20, grad20 = f.loss(x), f.grad(x)
    for r in (1, 9):
        assert np.array_equal(f.loss(x[:r]), loss20[:r])
        assert np.array_equal(f.grad(x[:r]), grad20[:r])


# -- blocked draws of the compiled loops ---------------------------------------------------
def test_normal_steps_has_the_bits_of_per_step_draws():
    # oracle: the same stream drawn one step at a time with normal()
    plain, block = TrialRandom(5, 3), TrialRandom(5, 3)
    scales = np.array([0.5, 2.0, 0.0, 1.5, 3.0, 1.0, 0.25])
    got = np.concatenate([to_numpy(block.normal_steps(3, (4,), scales[:3])),
                          to_numpy(block.normal_steps(4, (4,), scales[3:]))], axis=1)
    want = np.stack([to_numpy(plain.normal((4,), float(s))) for s in scales], axis=1)
    assert np.array_equal(got, want)
    few = to_numpy(TrialRandom(5, 2).normal_steps(7, (4,), 1.5))
    assert np.array_equal(few, to_numpy(TrialRandom(5, 3).normal_steps(7, (4,), 1.5))[:2])
    with pytest.raises(ValueError, match="scale"):
        TrialRandom(0, 2).normal_steps(3, (2,), np.ones(4))
    with pytest.raises(ValueError, match="scale"):
        TrialRandom(0, 2).normal_steps(2, (2,), np.array([1.0, -1.0]))


def _subset_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each m-subset of range(n) occurs among the rows of ``idx``."""
    from itertools import combinations

    m = idx.shape[-1]
    code = {c: k for k, c in enumerate(combinations(range(n), m))}
    keys = [code[tuple(sorted(row))] for row in idx.reshape(-1, m)]
    return np.bincount(keys, minlength=len(code))


def _linear_probing(rng: np.random.Generator, n: int, m: int) -> list[int]:
    """A biased sampler without replacement (a collision takes the next free index)."""
    out: list[int] = []
    for _ in range(m):
        c = int(rng.integers(n))
        while c in out:
            c = (c + 1) % n
        out.append(c)
    return out


@pytest.mark.parametrize("n, m", [(6, 3), (20, 18)])  # Floyd's algorithm; sorted keys
def test_subsample_steps_is_uniform_over_subsets(n, m):
    idx = to_numpy(TrialRandom(8, 40).subsample_steps(n, m, 500))
    assert idx.shape == (40, 500, m) and idx.min() >= 0 and idx.max() < n
    assert all(len(set(row)) == m for row in idx.reshape(-1, m))
    # exact combinatorics: each of the C(n, m) subsets has probability 1 / C(n, m)
    counts = _subset_counts(idx, n)
    assert st.chisquare(counts).pvalue > 1e-6
    if n == 6:  # negative control: a biased sampler fails the same test
        rng = np.random.default_rng(0)
        biased = np.array([_linear_probing(rng, n, m) for _ in range(20000)])
        assert st.chisquare(_subset_counts(biased, n)).pvalue < 1e-6


@settings(max_examples=25, deadline=None)
@given(seed=hs.integers(0, 2**32 - 1), trials=hs.integers(1, 4), n=hs.integers(1, 40),
       data=hs.data())
def test_subsample_steps_property(seed, trials, n, data):
    m = data.draw(hs.integers(1, n))
    steps = data.draw(hs.integers(1, 5))
    idx = to_numpy(trial_random(seed, trials).subsample_steps(n, m, steps))
    assert idx.shape == (trials, steps, m)
    assert all(len(np.unique(row)) == m for row in idx.reshape(-1, m))
    assert idx.min() >= 0 and idx.max() < n
    more = to_numpy(trial_random(seed, trials + 2).subsample_steps(n, m, steps))
    assert np.array_equal(idx, more[:trials])  # trial k depends on (seed, k) only


@pytest.mark.parametrize("n", [1, 2, 9, 100, 3 * 2**30, 2**40])  # 3 * 2^30: 25% rejections
def test_subsample_steps_single_index_is_the_array_bound_stream(n):
    """``m = 1`` draws with NumPy's scalar bound: the same indices and the same generator
    state afterwards as the array-bound draw (``highs = [n]``) it replaced. Oracle: NumPy's
    array-bound ``integers`` on generators seeded as the trials are. Negative control: a
    bound one larger gives other indices (at a bound with rejections, other states too)."""
    steps, trials = 37, 5
    rng = TrialRandom(3, trials)
    got = to_numpy(rng.subsample_steps(n, 1, steps))
    oracle = [g for g in TrialRandom(3, trials)._gens]
    want = np.stack([g.integers(0, np.array([n], dtype=np.int64), size=(steps, 1))
                     for g in oracle])
    assert np.array_equal(got, want)
    assert [g.random() for g in rng._gens] == [g.random() for g in oracle]
    if n > 2:
        wrong = np.stack([g.integers(0, np.array([n + 1], dtype=np.int64), size=(steps, 1))
                          for g in TrialRandom(3, trials)._gens])
        assert not np.array_equal(got, wrong)
