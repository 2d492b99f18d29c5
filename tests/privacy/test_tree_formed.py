"""K_formed (max_formed_node_load) against exhaustive enumeration of sample orders.

The oracle enumerates every occurrence pattern the permutations can produce (one step per
epoch, any of the n) and counts the nodes the aggregator actually forms and noises
(``node_formed_at``, the online counter's definition), independently of the dynamic
programme. Controls: counting occurrences separately (ignoring that one node can hold several)
or counting one epoch only must disagree with the oracle somewhere.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpbounds.algorithms.tree_aggregation import node_formed_at
from dpbounds.privacy.tree import max_formed_node_load, max_nodes_per_sample

CASES = [(n, e) for n in range(1, 17) for e in range(1, 17)
         if n * e <= 16 and n**e <= 5000]


def _formed(T):
    return [node_formed_at(b) for b in range(1, T + 1)]


def _brute(n, epochs, *, separate=False):
    T = n * epochs
    nodes = _formed(T)
    best = 0
    for pos in itertools.product(range(n), repeat=epochs):
        steps = [e * n + p + 1 for e, p in enumerate(pos)]
        if separate:  # control: one node per occurrence, a node holding two counted twice
            c = sum(a <= y <= b for y in steps for a, b in nodes)
        else:
            c = sum(any(a <= y <= b for y in steps) for a, b in nodes)
        best = max(best, c)
    return best


@pytest.mark.parametrize("n, epochs", CASES)
def test_formed_load_equals_exhaustive_maximum(n, epochs):
    expected = _brute(n, epochs)
    assert max_formed_node_load(n, epochs, method="exact") == expected
    assert max_formed_node_load(n, epochs) == expected
    k = max_nodes_per_sample(n, epochs, method="exact")
    assert expected <= k
    if epochs == 1:
        assert expected == k  # one epoch: the leaf at step 1 and its formed ancestors


def test_controls_disagree():
    separate = [(n, e) for n, e in CASES if _brute(n, e, separate=True) != _brute(n, e)]
    one_epoch = [(n, e) for n, e in CASES if max_formed_node_load(n, 1) != _brute(n, e)]
    assert separate and one_epoch
    # one record in every step: every formed node, T of them, against K = 2T - popcount(T)
    assert [max_formed_node_load(1, t) for t in (3, 8, 16)] == [3, 8, 16]
    assert [max_nodes_per_sample(1, t) for t in (3, 8, 16)] == [4, 15, 31]


def test_full_permutations_with_batches():
    # 4 records, batches of 2 (S = 2 steps per epoch), 2 epochs: every pair of permutations
    n_rec, batch, epochs = 4, 2, 2
    S = n_rec // batch
    nodes = _formed(S * epochs)
    best = 0
    perms = list(itertools.permutations(range(n_rec)))
    for pp in itertools.product(perms, repeat=epochs):
        for rec in range(n_rec):
            steps = [e * S + p.index(rec) // batch + 1 for e, p in enumerate(pp)]
            best = max(best, sum(any(a <= y <= b for y in steps) for a, b in nodes))
    assert best == max_formed_node_load(S, epochs)


def test_formed_load_bad_input():
    with pytest.raises(ValueError, match="epochs"):
        max_formed_node_load(2, 0)
    with pytest.raises(ValueError, match="method"):
        max_formed_node_load(2, 2, method="formed")
    assert max_formed_node_load(2**21, 2) == max_nodes_per_sample(2**21, 2)  # auto -> bound
    assert np.all([max_formed_node_load(n, 3) <= max_nodes_per_sample(n, 3)
                   for n in range(1, 40)])
