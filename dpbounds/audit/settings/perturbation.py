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



def _output_perturbation_d4(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    # every coordinate released, and two records: a noise scale that depends on d (sigma /
    # sqrt(d), an adversary's mutant: 2x the claim's mu at d = 4) or a sensitivity that
    # counts n twice (lambda = n mu: 2x at n = 2) is the correct one at d = n = 1
    from dpbounds.audit.neighbours import offset_pair

    pair = offset_pair(dim=4, radius=1.0, offset=1.0, copies=1, l2=1.0)
    return Setting(pair, dict(epsilon=epsilon, delta=delta, trace=None), _output,
                   "the released minimiser (4 coordinates)",
                   "D = {+e1, e1}, D' = {-e1, e1} (one record flipped beside an offset record), "
                   "l2 = 1, d = 4, n = 2")


def _objective_perturbation(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    from dpbounds.objectives import HuberSVM

    a = np.ones((1, 1))
    # the records' domain declared (the unit ball): the noise is the run's, not the data's
    pair = (HuberSVM(a, np.array([1.0]), l2=0.0, h=HUBER_H, l1_radius=1.0, l2_radius=1.0),
            HuberSVM(a, np.array([-1.0]), l2=0.0, h=HUBER_H, l1_radius=1.0, l2_radius=1.0))
    return Setting(pair, dict(epsilon=epsilon, delta=delta, trace=None), _output,
                   "the released minimiser",
                   f"Huber SVM (h = {HUBER_H:g}), one record a = 1, label +1 vs -1: gradients "
                   "-1 vs +1 wherever |theta| < 1 - h (where the output lies)")


def _objective_perturbation_n8(relation: Neighbouring, epsilon: float, delta: float
                               ) -> Setting:
    # eight records in d = 4: a noise scale read off the average objective (zeta / n, an
    # adversary's mutant: n times the claim's mu) or off d (sigma / sqrt(d): 2x at d = 4) is
    # the correct one at n = d = 1. Labels balanced but for the last record, so that the
    # minimiser stays where every record's gradient is constant
    from dpbounds.objectives import HuberSVM

    a = np.full((8, 4), 0.5)  # norm 1 in d = 4: a noise scale read off d shows too
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
    y_prime = y.copy()
    y_prime[-1] = -1.0
    domain = dict(l1_radius=2.0, l2_radius=1.0)  # declared: every record has norm 1
    pair = (HuberSVM(a, y, l2=0.0, h=HUBER_H, **domain),
            HuberSVM(a, y_prime, l2=0.0, h=HUBER_H, **domain))
    return Setting(pair, dict(epsilon=epsilon, delta=delta, trace=None), _output,
                   "the released minimiser",
                   f"Huber SVM (h = {HUBER_H:g}), eight records a = (1, 1, 1, 1) / 2, labels "
                   "+-1 balanced but the last, +1 vs -1")


register_audit(AuditSpec("output_perturbation", alg.output_perturbation, (REPLACE_ONE,),
                    _output_perturbation, GAUSS_EPS, GAUSS_DELTA,
                    "output perturbation, analytic Gaussian", trials=40_000), rank=120)
register_audit(AuditSpec("output_perturbation_d4", alg.output_perturbation, (REPLACE_ONE,),
                         _output_perturbation_d4, GAUSS_EPS, GAUSS_DELTA,
                         "output perturbation, analytic Gaussian, d = 4, n = 2",
                         trials=40_000),
               rank=121)
# KST's calibration is the loosest: with a halved sigma the best threshold test on an exact
# Gaussian certifies only ~0.4 above eps = 4 at 10^4 runs per set, ~0.6 at 1.6 x 10^4
register_audit(AuditSpec("objective_perturbation", alg.objective_perturbation, (REPLACE_ONE,),
                    _objective_perturbation, 4.0, GAUSS_DELTA,
                    "objective perturbation (KST 2012)", trials=16_000), rank=130)
register_audit(AuditSpec("objective_perturbation_n8", alg.objective_perturbation,
                         (REPLACE_ONE,), _objective_perturbation_n8, 4.0, GAUSS_DELTA,
                         "objective perturbation (KST 2012), eight records", trials=16_000),
               rank=131)
