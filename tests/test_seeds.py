"""``dpbounds._seeds.TrialSeeds`` against NumPy's ``SeedSequence`` (the oracle): the states of
every trial, for random entropies (small, 128-bit, sequences) and spawn keys, are NumPy's bit
for bit, and so are the generators' streams. Negative control: a family one trial index apart
gives other states (the comparison can fail)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds._seeds import TrialSeeds

_ints = st.integers(min_value=0, max_value=2**70)
_entropy = st.one_of(_ints, st.lists(_ints, min_size=1, max_size=6))
_key = st.lists(st.integers(min_value=0, max_value=2**40), max_size=3)


@settings(max_examples=60, deadline=None)
@given(entropy=_entropy, prefix=_key, suffix=_key, trials=st.integers(1, 9),
       n_words=st.integers(1, 9), wide=st.booleans())
def test_states_are_numpys(entropy, prefix, suffix, trials, n_words, wide):
    fam = TrialSeeds(entropy, tuple(prefix), tuple(suffix), trials)
    dtype = np.uint64 if wide else np.uint32
    got = fam.states(n_words, dtype)
    for k in range(trials):
        ref = np.random.SeedSequence(entropy, spawn_key=(*prefix, k, *suffix))
        assert np.array_equal(got[k], ref.generate_state(n_words, dtype)), k
        assert fam[k].spawn_key == ref.spawn_key and fam[k].entropy == ref.entropy


def test_generators_draw_numpys_streams():
    root = np.random.SeedSequence()  # 128-bit OS entropy
    fam = TrialSeeds(root.entropy, root.spawn_key, (1_000_003, 1), 300)
    for k, g in enumerate(fam.generators()):
        ref = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            root.entropy, spawn_key=(k, 1_000_003, 1))))
        assert np.array_equal(g.standard_normal(3), ref.standard_normal(3))
        assert g.integers(0, 10**12) == ref.integers(0, 10**12)


def test_negative_control_another_index_differs():
    fam = TrialSeeds(7, (), (), 5)
    other = np.random.SeedSequence(7, spawn_key=(2,)).generate_state(4, np.uint64)
    assert not np.array_equal(fam.states(4, np.uint64)[1], other)


def test_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        TrialSeeds(-1, (), (), 2).states(4)
    with pytest.raises(ValueError, match="dtype"):
        TrialSeeds(1, (), (), 2).states(4, np.int64)
