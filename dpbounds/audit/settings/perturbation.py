"""Audit settings of output perturbation and objective perturbation (KST 2012)."""

from __future__ import annotations

import numpy as np

from dpbounds import algorithms as alg
from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    GAUSS_DELTA,
    GAUSS_EPS,
    HUBER_H,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _output,
    _pair,
    register_audit,
)
from dpbounds.privacy import Neighbouring


def _output_perturbation(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    pair = _pair(relation, dim=1, radius=1.0, l2=1.0)
    return Setting(pair, dict(epsilon=epsilon, delta=delta, trace=None), _output,
                   "the released minimiser", _PAIR_TEXT[relation] + ", r = 1, l2 = 1, d = 1")



def _objective_perturbation(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    from dpbounds.objectives import HuberSVM

    a = np.ones((1, 1))
    pair = (HuberSVM(a, np.array([1.0]), l2=0.0, h=HUBER_H),
            HuberSVM(a, np.array([-1.0]), l2=0.0, h=HUBER_H))
    return Setting(pair, dict(epsilon=epsilon, delta=delta, trace=None), _output,
                   "the released minimiser",
                   f"Huber SVM (h = {HUBER_H:g}), one record a = 1, label +1 vs -1: gradients "
                   "-1 vs +1 wherever |theta| < 1 - h (where the output lies)")


register_audit(AuditSpec("output_perturbation", alg.output_perturbation, (REPLACE_ONE,),
                    _output_perturbation, GAUSS_EPS, GAUSS_DELTA,
                    "output perturbation, analytic Gaussian", trials=40_000), rank=120)
# KST's calibration is the loosest: with a halved sigma the best threshold test on an exact
# Gaussian certifies only ~0.4 above eps = 4 at 10^4 runs per set, ~0.6 at 1.6 x 10^4
register_audit(AuditSpec("objective_perturbation", alg.objective_perturbation, (REPLACE_ONE,),
                    _objective_perturbation, 4.0, GAUSS_DELTA,
                    "objective perturbation (KST 2012)", trials=16_000), rank=130)
