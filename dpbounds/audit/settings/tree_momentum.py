"""Audit settings of tree-momentum NSGD and sensitivity-reduced NSGD (Tran & Cutkosky),
black-box and white-box (the tree's nodes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpbounds import algorithms as alg
from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    CLIP,
    GAUSS_DELTA,
    GAUSS_EPS,
    RECORD_NORM,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _direction_features,
    _pair,
    register_audit,
)
from dpbounds.backend import to_numpy
from dpbounds.privacy import Neighbouring

TREE_DIM = 32


def _tree_setting(epochs: int, **extra: Any) -> Callable[[Neighbouring, float, float], Setting]:
    def build(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=TREE_DIM, radius=RECORD_NORM)
        kwargs = dict(epsilon=epsilon, delta=delta, epochs=epochs, step_size=1.0,
                      clip_threshold=CLIP, neighbouring=REPLACE_ONE, trace=None, **extra)
        return Setting(pair, kwargs, _direction_features,
                       "step directions (the noisy momentum up to scale, one per step)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g} > C = {CLIP:g}, "
                       f"d = {TREE_DIM}, one record (in every step)",
                       ("linear", "gaussian-lr"))
    return build


def _tree_node_tap() -> Any:
    """Record the signal coordinate of every noisy node Algorithm 1's tree forms (node sum
    plus its Gaussian; the releases are fixed linear combinations of them)."""
    from dpbounds.algorithms.tree_aggregation import TreeAggregator
    from dpbounds.audit.mutation import patched_method

    releases: list[np.ndarray] = []

    def make(original: Any) -> Any:
        def step(self: Any, value: Any, node_noise: Any = None,
                 node_release: Any = None) -> Any:
            out = original(self, value, node_noise, node_release)
            # the node formed at step t sits in slot trailing_zeros(t); its released value
            node = self._slots[(self.t & -self.t).bit_length() - 1][4]
            releases.append(np.array(to_numpy(node)[:, 0], dtype=float, copy=True))
            return out
        return step

    return patched_method(TreeAggregator, "step", make, releases)


def _tree_release_features(res: Any, releases: list) -> np.ndarray:
    return np.stack(releases, axis=1)  # (trials, T): the e1 coordinate of each node


def _tree_white_box(epochs: int) -> Callable[[Neighbouring, float, float], Setting]:
    def build(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=1, radius=RECORD_NORM)
        kwargs = dict(epsilon=epsilon, delta=delta, epochs=epochs, step_size=1.0,
                      clip_threshold=CLIP, neighbouring=REPLACE_ONE, trace=None)
        return Setting(pair, kwargs, _tree_release_features,
                       f"the tree's {epochs} noisy nodes (white-box; the signal coordinate)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g} > C = {CLIP:g}, d = 1, "
                       f"one record, T = {epochs}", ("linear",), tap=_tree_node_tap)
    return build


# a normalised step releases a direction: more runs make up for the noisy norm
register_audit(AuditSpec("tree_momentum_nsgd", alg.tree_momentum_nsgd, (REPLACE_ONE,),
                    _tree_setting(epochs=1), GAUSS_EPS, GAUSS_DELTA,
                    "tree-momentum NSGD (Tran & Cutkosky Alg. 1)", trials=40_000), rank=140)
register_audit(AuditSpec("sensitivity_reduced_nsgd", alg.sensitivity_reduced_nsgd, (REPLACE_ONE,),
                    _tree_setting(epochs=2, mixing=1.0, noise_split=0.99), GAUSS_EPS, GAUSS_DELTA,
                    "sensitivity-reduced NSGD (Tran & Cutkosky Alg. 2, reconstructed)",
                    trials=40_000), rank=150)

# white-box: the auditor sees the tree's noisy nodes (Nasr et al. 2023's threat model)
for _rank, _T in ((160, 3), (170, 8)):
    register_audit(AuditSpec(f"tree_momentum_nsgd_T{_T}", alg.tree_momentum_nsgd, (REPLACE_ONE,),
                        _tree_white_box(_T), GAUSS_EPS, GAUSS_DELTA,
                        f"tree-momentum NSGD, T = {_T}, white-box (the tree's nodes)",
                        trials=50_000), rank=_rank)

