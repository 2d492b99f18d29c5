"""Audit setting of noisy projected SGD (BST14, Kamath Algorithm 3)."""

from __future__ import annotations

from dpbounds import algorithms as alg
from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    GAUSS_DELTA,
    GAUSS_EPS,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _pair,
    _projected_features,
    register_audit,
)
from dpbounds.privacy import Neighbouring

PROJ_DIM = 32
PROJ_STEPS = 1


def _projected(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    pair = _pair(relation, dim=PROJ_DIM, radius=1.0)
    kwargs = dict(epsilon=epsilon, delta=delta, radius=1.0, steps=PROJ_STEPS,
                  calibration="rdp", trace=None)
    return Setting(pair, kwargs, _projected_features,
                   "directions of the projected iterates",
                   _PAIR_TEXT[relation] + f", r = 1, d = {PROJ_DIM}, n = 1 (q = 1)",
                   ("linear", "gaussian-lr"))


register_audit(AuditSpec("noisy_projected_sgd", alg.noisy_projected_sgd, (REPLACE_ONE,),
                    _projected, GAUSS_EPS, GAUSS_DELTA,
                    "noisy projected SGD (BST14), RDP calibration", trials=40_000), rank=110)
