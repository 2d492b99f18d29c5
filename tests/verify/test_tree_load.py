"""Algorithm 1's node count against oracles that share no code with dpbounds.privacy.tree:
a brute force over every placement, an independent dynamic programme, and the realised load
of each sample in a run; a node count one too small is caught by the tree study."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.privacy.tree import max_formed_node_load
from dpbounds.verify import scaling_study
from dpbounds.verify.tree_load import (
    RealisedLoad,
    formed_load_brute_force,
    formed_load_exact,
)

_SMALL = [(n, e) for n in range(1, 7) for e in range(1, 5) if n**e <= 1300]
_A1 = dict(vary={"d": [4, 16]}, fixed={"N": 200}, trials=4, replicates=100)


@pytest.mark.parametrize(("n", "epochs"), _SMALL)
def test_dp_and_package_count_equal_the_brute_force(n: int, epochs: int) -> None:
    k = formed_load_brute_force(n, epochs)
    assert formed_load_exact(n, epochs) == k
    assert max_formed_node_load(n, epochs, method="exact") == k


def test_dp_equals_the_package_at_study_sizes() -> None:
    for n, e in ((500, 3), (200, 20), (1000, 7), (37, 50)):
        assert formed_load_exact(n, e) == max_formed_node_load(n, e, method="exact")


def _brute_loads(perms: list[np.ndarray], n: int, B: int) -> np.ndarray:
    """Per sample, the formed nodes F_b = [b - lowbit(b) + 1, b] holding an occurrence."""
    S = n // B
    T = S * len(perms)
    occ: list[list[int]] = [[] for _ in range(n)]
    for e, p in enumerate(perms):
        for i in range(S * B):
            occ[int(p[i])].append(e * S + i // B + 1)  # 1-based step
    nodes = [(b - (b & -b) + 1, b) for b in range(1, T + 1)]
    return np.array([sum(1 for a, b in nodes if any(a <= s <= b for s in o)) for o in occ])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), epochs=st.integers(1, 5), B=st.integers(1, 3),
       seed=st.integers(0, 2**31))
def test_realised_load_equals_a_brute_force_count(n: int, epochs: int, B: int,
                                                  seed: int) -> None:
    B = min(B, n)
    rng = np.random.default_rng(seed)
    perms = [np.stack([rng.permutation(n) for _ in range(2)]) for _ in range(epochs)]
    load = RealisedLoad(n, n // B, B, (n // B) * epochs)
    for p in perms:
        load.add_epoch(p)
    for k in range(2):
        want = _brute_loads([p[k] for p in perms], n, B)
        assert np.array_equal(load.load[k], want)
    if B == 1:  # realised <= worst case, reached at one epoch (the sample at step 1)
        assert load.max_per_trial().max() <= formed_load_exact(n, epochs)
        if epochs == 1:
            assert load.max_per_trial()[0] == formed_load_exact(n, 1)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="steps_per_epoch"):
        formed_load_brute_force(20, 6)
    with pytest.raises(ValueError, match="perm"):
        RealisedLoad(4, 4, 1, 8).add_epoch(np.zeros((2, 3), dtype=int))


def _gate(res, key: str) -> bool:
    (v,) = [v for v in res.verdicts if v.case.split(" (")[0] == f"{key} over {res.vary}"]
    return v.holds


def test_a_node_count_one_too_small_in_the_helper_is_caught(monkeypatch) -> None:
    ok = scaling_study("tran_cutkosky.alg1", **_A1)
    assert ok.holds
    assert all(_gate(ok, k) for k in ("node_count", "node_count_small", "realised", "ledger"))
    import dpbounds.privacy.tree as tree

    inner = tree.max_formed_node_load
    monkeypatch.setattr(tree, "max_formed_node_load",
                        lambda n, epochs, method="auto": max(1, inner(n, epochs,
                                                                     method=method) - 1))
    bad = scaling_study("tran_cutkosky.alg1", **_A1)
    # the old ledger check recomputed sigma with the same helper and passed
    assert not bad.holds
    for key in ("node_count", "node_count_small", "ledger", "realised"):
        assert not _gate(bad, key), key


def test_node_count_minus_1_mutation_is_caught_and_applies_to_alg1_only() -> None:
    bad = scaling_study("tran_cutkosky.alg1", mutation="node_count_minus_1", **_A1)
    assert not bad.holds and not _gate(bad, "node_count") and not _gate(bad, "ledger")
    with pytest.raises(ValueError, match="does not apply"):
        scaling_study("tran_cutkosky.alg2", mutation="node_count_minus_1", **_A1)


def test_popcount_fallback_equals_python_bit_count() -> None:
    """The SWAR popcount used on NumPy < 2.0 against Python's int.bit_count (the oracle), on
    random non-negative int64s (masks below 2^62 included, as the counters use); control: a
    count off by one bit is told apart."""
    import numpy as np

    from dpbounds.verify import tree_load as tl

    rng = np.random.default_rng(0)
    v = np.concatenate([rng.integers(0, 2**62, 5000, dtype=np.int64), [0, 1, 2**62 - 1]])
    saved = getattr(np, "bitwise_count", None)
    try:
        if saved is not None:
            delattr(np, "bitwise_count")
        got = tl._popcount(v)
    finally:
        if saved is not None:
            np.bitwise_count = saved
    want = np.array([int(x).bit_count() for x in v])
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, want + (v == 1))
