"""Audit settings of DP-SGD (clipping) and DP-NSGD (normalisation), RDP accounted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpbounds import algorithms as alg
from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    ADD_REMOVE,
    CLIP,
    GAUSS_DELTA,
    GAUSS_EPS,
    GAUSS_STEPS,
    PUBLIC_N,
    RECORD_NORM,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _gd_features,
    _pair,
    register_audit,
)
from dpbounds.privacy import Neighbouring


def _sgd_setting(**extra: Any) -> Callable[[Neighbouring, float, float], Setting]:
    def build(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=1, radius=RECORD_NORM)
        sampling = "without_replacement" if relation is REPLACE_ONE else "poisson"
        kwargs = dict(epsilon=epsilon, delta=delta, steps=GAUSS_STEPS, step_size=1.0,
                      batch_size=1, sampling=sampling, trace=None, **extra)
        if relation is ADD_REMOVE:
            kwargs["public_n"] = PUBLIC_N
        return Setting(pair, kwargs, _gd_features,
                       "released noisy gradients (one per step)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g}, batch 1, d = 1 "
                       f"({sampling.replace('_', ' ')} sampling)", ("linear", "gaussian-lr"))
    return build


register_audit(AuditSpec("dp_sgd", alg.dp_sgd, (REPLACE_ONE, ADD_REMOVE),
                    _sgd_setting(clip_threshold=CLIP), GAUSS_EPS, GAUSS_DELTA,
                    "DP-SGD with clipping, RDP", trials=20_000), rank=80)
register_audit(AuditSpec("dp_nsgd", alg.dp_nsgd, (REPLACE_ONE, ADD_REMOVE),
                    _sgd_setting(regulariser=1e-3), GAUSS_EPS, GAUSS_DELTA,
                    "DP-NSGD g/(||g|| + r), RDP",
                    trials=20_000), rank=90)
