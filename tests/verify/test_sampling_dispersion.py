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
