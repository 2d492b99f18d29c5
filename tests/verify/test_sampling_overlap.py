"""The overlap of consecutive batches (``sampling_verdicts``' cyclic-order test), counted for
blocks of steps at once, equals the sizes of Python's set intersections of the batches.

The counts were one ``np.intersect1d`` call per pair of steps (3.2 us each: 64 of the
141 CPU-s of a full ``verify nonconvex.clipped_sgd --vary N``); they are now the duplicates of
each merged, sorted pair, a block of steps at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.verify import sampling


def _batches(seed: int, trials: int, T: int, n: int, B: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([np.stack([rng.choice(n, B, replace=False) for _ in range(T)])
                     for _ in range(trials)])


def _by_sets(idx: np.ndarray) -> np.ndarray:
    trials, T, _ = idx.shape
    return np.array([[len(set(idx[k, t].tolist()) & set(idx[k, t + 1].tolist()))
                      for t in range(T - 1)] for k in range(trials)], dtype=float)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), trials=st.integers(1, 4), T=st.integers(1, 40),
       n=st.integers(2, 30), frac=st.floats(0.05, 1.0), block=st.sampled_from([1, 7, 64, 1 << 22]))
def test_overlaps_equal_set_intersections(seed, trials, T, n, frac, block):
    B = max(1, min(n, int(round(frac * n))))  # 1-2: pairwise comparison; 3 and up: sorting
    idx = _batches(seed, trials, T, n, B)
    with pytest.MonkeyPatch.context() as mp:
        # blocks of one step, a remainder, and the whole run at once
        mp.setattr(sampling, "_OVERLAP_BLOCK", block)
        got = sampling._consecutive_overlaps(idx)
    assert got.shape == (trials, max(T - 1, 0))
    np.testing.assert_array_equal(got, _by_sets(idx))


def test_cyclic_batches_overlap_nothing_and_a_repeated_batch_overlaps_fully():
    """Controls with known answers: a cyclic order (n = 12, B = 4) never repeats an index in
    consecutive steps; one batch reused every step overlaps in all B."""
    cyclic = np.arange(12 * 3).reshape(1, 9, 4) % 12
    assert not sampling._consecutive_overlaps(cyclic).any()
    same = np.tile(np.array([5, 1, 9, 3]), (2, 6, 1))
    np.testing.assert_array_equal(sampling._consecutive_overlaps(same), np.full((2, 5), 4.0))


def test_large_indices_in_int32_count_as_in_python():
    """Indices up to 2^31 - 2 (int32, as the transcript stores them) and n = 1e6: no cast
    narrows them (sets of distinct large numbers, half of each batch shared with the next)."""
    rng = np.random.default_rng(7)
    big = np.int64(2**31 - 2)
    base = rng.choice(10**6, size=(2, 30, 8), replace=False).astype(np.int64)
    idx = (big - base).astype(np.int32)
    idx[:, 1:, :4] = idx[:, :-1, 4:]  # the next batch reuses the second half of this one
    np.testing.assert_array_equal(sampling._consecutive_overlaps(idx), _by_sets(idx))
    assert sampling._consecutive_overlaps(idx).min() >= 4


@pytest.mark.parametrize("B", [1, 2, 3])
def test_both_counting_paths_on_the_same_batches(B):
    """Batches of 1-2 indices are counted by comparing every pair, larger ones by sorting:
    each against Python's sets on the same kind of data (a batch repeated, then fresh)."""
    idx = _batches(11, 3, 50, 6, B)
    idx[:, 10] = idx[:, 9]  # a repeated batch: overlap B
    got = sampling._consecutive_overlaps(idx)
    np.testing.assert_array_equal(got, _by_sets(idx))
    assert got[:, 9].tolist() == [B] * 3
