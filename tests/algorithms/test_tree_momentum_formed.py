"""Algorithm 1 charges K_formed: re-account a run from its own noised-node log.

The aggregator's ``step`` and the objective's batch gradient are wrapped to log, per step, the
node that received noise and the records in the batch; the realised GDP
mu = sqrt(max over records of #{noised nodes holding it}) * Delta / sigma
(DERIVED in ``max_formed_node_load``) must not exceed the ledger's. Negative control: a
one-epoch count (an under-count) is exceeded by the log.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import tree_aggregation
from dpbounds.algorithms.tree_momentum import (
    algorithm_1_node_count,
    tree_momentum_nsgd,
    tree_momentum_privacy,
)
from dpbounds.backend import to_numpy
from dpbounds.objectives import QuadraticObjective
from dpbounds.privacy.tree import max_formed_node_load, max_nodes_per_sample


def _logged_run(monkeypatch, n, epochs, batch, trials=4, seed=0):
    obj = QuadraticObjective(np.zeros(2), offsets=np.arange(2.0 * n).reshape(n, 2))
    noised, batches = [], []
    step = tree_aggregation.ComposeAndSumAggregator.step

    def logged_step(self, value, node_noise=None):
        noised.append((self.next_node(), node_noise is not None))
        return step(self, value, node_noise)

    grad = obj.clipped_mean_grad

    def logged_grad(x, idx, clip):
        batches.append(np.asarray(to_numpy(idx)))
        return grad(x, idx, clip)

    monkeypatch.setattr(tree_aggregation.ComposeAndSumAggregator, "step", logged_step)
    monkeypatch.setattr(obj, "clipped_mean_grad", logged_grad)
    res = tree_momentum_nsgd(obj, epsilon=3.0, delta=0.05, epochs=epochs, step_size=0.1,
                             batch_size=batch, momentum_weight=0.5, clip_threshold=1.0,
                             trials=trials, seed=seed, release="compose", trace=None)
    return res, noised, batches


def _realised_load(noised, batches, n):
    """Max over trials and records of the noised nodes holding the record."""
    best = 0
    for trial in range(batches[0].shape[0]):
        for rec in range(n):
            steps = {t + 1 for t, b in enumerate(batches) if rec in b[trial]}
            c = sum(any(a <= y <= e for y in steps) for (a, e), has in noised if has)
            best = max(best, c)
    return best


@pytest.mark.parametrize("n, epochs, batch", [(1, 8, 1), (1, 3, 1), (3, 3, 1), (4, 4, 2)])
def test_run_reaccounted_from_noised_node_log(monkeypatch, n, epochs, batch):
    res, noised, batches = _logged_run(monkeypatch, n, epochs, batch)
    T = (n // batch) * epochs
    # only the formed nodes are noised, each once, one per step
    assert [node for node, _ in noised] == [tree_aggregation.node_formed_at(t)
                                            for t in range(1, T + 1)]
    assert all(has for _, has in noised)
    p = res.params
    k_claim = p["node_count"]
    assert k_claim == max_formed_node_load(n // batch, epochs)
    assert p["node_count_method"] == "auto" and "K_formed" in res.privacy.description
    load = _realised_load(noised, batches, n)
    mu_run = math.sqrt(load) * p["node_sensitivity"] / p["sigma"]
    mu_claim = math.sqrt(k_claim) * p["node_sensitivity"] / p["sigma"]
    assert mu_run <= mu_claim * (1 + 1e-12)
    # the ledger records the charged count in its tree mechanism
    (entry,) = res.privacy.ledger.to_dict()["entries"]
    assert entry[0]["node_count"] == k_claim and entry[1] == 1
    # negative control: a one-epoch count under-counts and the log detects it
    under = max_formed_node_load(n // batch, 1)
    if n // batch == 1:  # one record every step: the claim is attained exactly (two-sided)
        assert load == k_claim == T
    assert load > under  # a one-epoch claim would be overshot by this very run


def test_old_count_selectable_and_never_tighter():
    for n, e in [(1, 8), (3, 3), (16, 5)]:
        assert algorithm_1_node_count(n, e) <= algorithm_1_node_count(n, e, "all_nodes")
        assert algorithm_1_node_count(n, e, "all_nodes") == max_nodes_per_sample(n, e)
    a = tree_momentum_privacy(3.0, 0.05, n=1, epochs=8, alpha=0.5, clip_norm=1.0)
    b = tree_momentum_privacy(3.0, 0.05, n=1, epochs=8, alpha=0.5, clip_norm=1.0,
                              node_count_method="all_nodes")
    assert (a.node_count, b.node_count) == ((8,), (15,))
    # same epsilon spent, noise scales with sqrt(K)
    assert a.sigma / b.sigma == pytest.approx(math.sqrt(8 / 15), rel=1e-9)
    with pytest.raises(ValueError, match="node_count_method"):
        tree_momentum_privacy(3.0, 0.05, n=1, epochs=8, alpha=0.5, clip_norm=1.0,
                              node_count_method="nodes")


@pytest.mark.parametrize("method", ["formed", "all_nodes", "bogus"])
def test_algorithm_2_names_its_node_count_option(method):
    """Algorithm 2 keeps K: the Algorithm-1-only counts are refused by the option's own name
    (control: its valid 'exact' runs)."""
    from dpbounds.algorithms.tree_momentum import sensitivity_reduced_privacy

    kw = dict(n=8, epochs=2, alpha=0.125, gamma=0.5, clip_norm=1.0, diff_clip=1.0)
    with pytest.raises(ValueError, match="node_count_method"):
        sensitivity_reduced_privacy(1.0, 1e-5, node_count_method=method, **kw)
    assert sensitivity_reduced_privacy(1.0, 1e-5, node_count_method="exact", **kw) is not None
