"""Audit setting of DP-AGD (Lee & Kifer Algorithm 2)."""

from __future__ import annotations

import numpy as np

from dpbounds import algorithms as alg
from dpbounds.audit.settings._common import (
    ADD_REMOVE,
    GAUSS_DELTA,
    GAUSS_EPS,
    HUBER_H,
    AuditSpec,
    Setting,
    _displacement,
    register_audit,
)
from dpbounds.privacy import Neighbouring

AGD_DIM = 64
AGD_RECORD_NORM = 4.0  # above DP-AGD's default grad_clip = 3


def _dp_agd(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    from dpbounds.objectives import HuberSVM
    from dpbounds.privacy.zcdp import dp_to_zcdp_rho

    a = np.zeros((1, AGD_DIM))
    a[0, 0] = AGD_RECORD_NORM
    pair = (HuberSVM(a, np.array([1.0]), l2=0.0, h=HUBER_H),
            HuberSVM(np.vstack([a, a]), np.array([1.0, -1.0]), l2=0.0, h=HUBER_H))
    rho = float(dp_to_zcdp_rho(epsilon, delta))
    # one gradient measurement and one NoisyMax fit the budget: a single release
    # NoisyMax recorded as the pure eps-DP mechanism it is: the PLD accountant then reads the
    # run exactly (a zCDP charge left only RDP, 0.79 of the claim for the noise's own GDP)
    kwargs = dict(epsilon=epsilon, delta=delta, rho_ng=0.98 * rho, rho_nmax=0.01 * rho,
                  noisy_max_ledger="pure", trace=None)
    return Setting(pair, kwargs, _displacement,
                   "direction of the released step (noisy gradient up to scale)",
                   f"Huber SVM (h = {HUBER_H:g}), D = {{(a, +1)}}, D' = D + {{(a, -1)}}, "
                   f"||a|| = {AGD_RECORD_NORM:g} > grad_clip = 3, d = {AGD_DIM}; "
                   "rho_ng = 0.98 rho, rho_nmax = 0.01 rho (one release); NoisyMax recorded as "
                   "pure DP")


register_audit(AuditSpec("dp_agd", alg.dp_agd, (ADD_REMOVE,), _dp_agd, GAUSS_EPS, GAUSS_DELTA,
                    "DP-AGD (Lee & Kifer Alg. 2), zCDP, adaptive", trials=40_000), rank=100)
