"""The inclusion-count dispersion sum of :mod:`dpbounds.verify.sampling`, counted in blocks of
trials, against a per-trial count in plain Python (``collections.Counter``): the same sum for
every block size, padding (``-1``, Poisson batches) included."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.verify import sampling


def _oracle(idx: np.ndarray, n: int, mean: float) -> float:
    total = 0.0
    for k in range(idx.shape[0]):
        c = Counter(int(i) for i in idx[k].ravel() if i >= 0)
        total += sum((c.get(i, 0) - mean) ** 2 for i in range(n))
    return total


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), trials=st.integers(1, 9), steps=st.integers(1, 12),
       m=st.integers(1, 4), n=st.integers(1, 40), pad=st.floats(0.0, 0.6),
       cells=st.sampled_from([1, 7, 40, 2**20]), mean=st.floats(0.0, 3.0))
def test_blocked_counts_equal_a_per_trial_count(seed, trials, steps, m, n, pad, cells, mean):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(trials, steps, m))
    idx[rng.random(idx.shape) < pad] = -1
    saved = sampling._COUNT_CELLS
    sampling._COUNT_CELLS = cells  # blocks of 1 trial up to all
    try:
        got = sampling._squared_deviations(idx, n, mean)
    finally:
        sampling._COUNT_CELLS = saved
    assert got == pytest.approx(_oracle(idx, n, mean), rel=1e-12, abs=1e-9)


def test_int32_indices_and_a_sample_never_drawn():
    idx = np.array([[[0], [0], [2]], [[1], [-1], [1]]], dtype=np.int32)
    # trial 0 counts (2, 0, 1, 0), trial 1 (0, 2, 0, 0); mean 0.75
    want = sum((c - 0.75) ** 2 for c in (2, 0, 1, 0, 0, 2, 0, 0))
    assert sampling._squared_deviations(idx, 4, 0.75) == pytest.approx(want, rel=1e-15)


def _per_trial(idx: np.ndarray, n: int, mean: float) -> float:
    """The sum as it was computed before the blocks: one trial at a time (the floats the
    blocked count must reproduce, bit for bit)."""
    total = 0.0
    for k in range(idx.shape[0]):
        v = idx[k].reshape(-1)
        total += float(np.sum((np.bincount(v[v >= 0], minlength=n) - mean) ** 2))
    return total


@pytest.mark.parametrize(("trials", "steps", "m", "n"), [
    (4000, 1, 256, 1000),  # a clip probe: blocks of trials
    (4000, 1, 1, 32),
    (16, 2000, 10, 1000),  # a long transcript: a trial at a time
    (3, 100, 4, 126_492),
])
def test_the_same_floats_as_one_trial_at_a_time(trials, steps, m, n):
    rng = np.random.default_rng(trials + steps)
    idx = rng.integers(0, n, size=(trials, steps, m)).astype(np.int32)
    idx[rng.random(idx.shape) < 0.05] = -1
    mean = steps * m / n
    assert sampling._squared_deviations(idx, n, mean) == _per_trial(idx, n, mean)


def _peak(idx: np.ndarray, n: int) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        sampling._squared_deviations(idx, n, 1.0)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_transcript_is_counted_without_copies_of_its_indices():
    """16 trials of 20,000 steps of 10 (12 MiB of indices) are counted a trial at a time: at
    most a few MiB beside them (a block sized by its counts alone copied the indices twice
    over, 2.3x their size: an independent review)."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 1000, size=(16, 20_000, 10)).astype(np.int32)
    assert _peak(idx, 1000) < 4 * 2**20


def test_a_block_holds_at_most_count_cells_counts_and_indices():
    """A clip probe (4000 trials of one step of 256, n = 1000) in blocks of at most
    ``_COUNT_CELLS`` counts and indices: under 8 MiB. Control: one block of every trial
    (the cap lifted) holds over 20 MiB."""
    rng = np.random.default_rng(1)
    idx = rng.integers(0, 1000, size=(4000, 1, 256)).astype(np.int32)
    assert _peak(idx, 1000) < 8 * 2**20
    saved = sampling._COUNT_CELLS
    sampling._COUNT_CELLS = 2**30
    try:
        assert _peak(idx, 1000) > 20 * 2**20
    finally:
        sampling._COUNT_CELLS = saved
