"""Audit setting of Gaussian DP-GD with clipping (Lee & Kifer Table 1)."""

from __future__ import annotations

from dpbounds import algorithms as alg
from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    ADD_REMOVE,
    CLIP,
    GAUSS_DELTA,
    GAUSS_EPS,
    GAUSS_STEPS,
    OFFSET_TEXT,
    PUBLIC_N,
    RECORD_NORM,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _gauss_pair,
    _gd_features,
    register_audit,
)
from dpbounds.privacy import Neighbouring


def _gd_gaussian(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    pair = _gauss_pair(relation, dim=1, radius=RECORD_NORM)
    kwargs = dict(epsilon=epsilon, delta=delta, steps=GAUSS_STEPS, step_size=1.0,
                  mechanism="gaussian", clip_threshold=CLIP, neighbouring=relation, trace=None)
    if relation is ADD_REMOVE:
        kwargs["public_n"] = PUBLIC_N  # the same public normaliser for both data sets
    text = OFFSET_TEXT if relation is REPLACE_ONE else _PAIR_TEXT[relation]
    return Setting(pair, kwargs, _gd_features, "released noisy gradients (one per step)",
                   text + f", r = {RECORD_NORM:g} > C = {CLIP:g}, d = 1",
                   ("linear", "gaussian-lr"))


register_audit(AuditSpec("dp_gd_gaussian", alg.dp_gd, (REPLACE_ONE, ADD_REMOVE), _gd_gaussian,
                    GAUSS_EPS, GAUSS_DELTA,
                    "Gaussian DP-GD with clipping (Lee & Kifer Table 1), zCDP", trials=40_000),
               rank=70)
