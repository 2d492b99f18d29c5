"""Issue 34 item 5 (round-2 adversary): the white-box tree audit on a record whose gradient
changes sign between steps (``tree_momentum_nsgd_T3_signs``).

Oracles: the clock's closed form (query point of step t at x_2 = t - 1, the record's clipped
gradient s(t) C e1 with s = +, +, -), read from the run's own query points; the claim (the
ledger's exact GDP mu) for the correct run. Negative control: noise shared by the nodes of a
tree level (bench/adversary_mutants_2.py's ``tree_level_reuse``, re-written here) must FAIL on
this pair, while the constant pair of ``tree_momentum_nsgd_T3`` does not see it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from dpbounds import algorithms as alg
from dpbounds.algorithms.tree_aggregation import TreeAggregator
from dpbounds.audit import audit
from dpbounds.audit.settings.tree_momentum import sign_clock_pair

_KW = dict(seed=0, trials=2000, null=False)


@contextmanager
def _level_reuse() -> Iterator[None]:
    """Every node of a tree level gets the noise of the first node formed at that level."""
    step = TreeAggregator.step
    first: dict[int, tuple[Any, dict[int, Any]]] = {}

    def reuse(self: Any, value: Any, node_noise: Any = None, node_release: Any = None) -> Any:
        if node_noise is not None:
            level = ((self.t + 1) & -(self.t + 1)).bit_length() - 1
            cache = first.setdefault(id(self), (self, {}))[1]
            node_noise = cache.setdefault(level, node_noise)
        return step(self, value, node_noise, node_release)

    TreeAggregator.step = reuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        TreeAggregator.step = step  # type: ignore[method-assign]


def test_clock_counts_the_steps_and_flips_the_sign() -> None:
    d, _ = sign_clock_pair(1.0)
    obj = d.tapped()
    alg.tree_momentum_nsgd(obj, epsilon=3.0, delta=0.05, epochs=3, step_size=1.0,
                           clip_threshold=1.0, trials=500, seed=3, trace=None)
    q = np.stack(obj.queries, axis=1)  # (trials, T, 2): the query point of every step
    assert q.shape == (500, 3, 2)
    assert np.max(np.abs(q[:, :, 1] - np.arange(3.0))) < 1e-8  # x_2 = t - 1, whatever the noise
    signs = [np.sign(obj.sample_grads(q[:, t, :])[:, 0, 0]) for t in range(3)]
    assert [set(s.tolist()) for s in signs] == [{1.0}, {1.0}, {-1.0}]
    g = obj.sample_grads(q[:, 2, :])[:, 0, :]
    assert np.array_equal(g, np.tile([-2.0, 0.0], (500, 1)))  # norm r, only the sign moves


def test_correct_run_passes_and_reads_the_claimed_mu() -> None:
    r = audit("tree_momentum_nsgd_T3_signs", "replace_one", **_KW)
    # measured (seed 0, 2000 runs): eps_lower 1.881 against 3, mu_hat 1.512 [1.413, 1.611]
    assert r.status == "PASS" and 1.5 < r.epsilon_lower <= r.claimed_epsilon
    assert r.mu_low <= r.mu_claim <= r.mu_high, r


def test_level_reuse_is_caught_on_the_signs_pair_not_on_the_constant_one() -> None:
    """Measured (seed 0, 2000 runs): 5.549 against 3 on the signs pair; the constant pair
    reads 1.214, less than its correct run's 2.254 (fewer independent noises, no signal in
    the node differences)."""
    with _level_reuse():
        bad = audit("tree_momentum_nsgd_T3_signs", "replace_one", **_KW)
        const = audit("tree_momentum_nsgd_T3", "replace_one", **_KW)
    assert bad.status == "FAIL" and bad.epsilon_lower > bad.claimed_epsilon, bad
    assert const.status == "PASS" and const.epsilon_lower < const.claimed_epsilon, const
