"""Audit settings of the pure-DP Laplace methods of Kuru et al.: DP-GD, heavy ball, NAG, MASG."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpbounds import algorithms as alg
from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    LAPLACE_EPS,
    LAPLACE_L2,
    LAPLACE_MUTANT,
    LAPLACE_STEPS,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _momentum_features,
    _pair,
    register_audit,
)
from dpbounds.privacy import Neighbouring


def _laplace_setting(kind: str, extra: dict[str, Any]
                     ) -> Callable[[Neighbouring, float, float], Setting]:
    def build(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=1, radius=1.0, l2=LAPLACE_L2, smoothness=1.0)
        kwargs = dict(epsilon=epsilon, steps=LAPLACE_STEPS, trace=None, **extra)
        return Setting(pair, kwargs, _momentum_features(kind, LAPLACE_L2),
                       "released noisy gradients (one per step)",
                       _PAIR_TEXT[relation] + ", r = 1, d = 1, full batch",
                       ("laplace-lr", "linear"))
    return build


register_audit(AuditSpec("dp_gd_laplace", alg.dp_gd, (REPLACE_ONE,),
                    _laplace_setting("hb", dict(mechanism="laplace", step_size=1.0)),
                    LAPLACE_EPS, 0.0, "Laplace DP-GD (Kuru et al.), pure DP",
                    mutant_factor=LAPLACE_MUTANT), rank=10)
register_audit(AuditSpec("dp_heavy_ball", alg.dp_heavy_ball, (REPLACE_ONE,),
                    _laplace_setting("hb", {}), LAPLACE_EPS, 0.0,
                    "DP heavy ball (Kuru et al. (9))", mutant_factor=LAPLACE_MUTANT), rank=20)
register_audit(AuditSpec("dp_nag", alg.dp_nag, (REPLACE_ONE,), _laplace_setting("nag", {}),
                    LAPLACE_EPS, 0.0, "DP-NAG (Kuru et al. (27)), uniform budgets",
                    mutant_factor=LAPLACE_MUTANT), rank=30)
register_audit(AuditSpec("dp_nag_opt", alg.dp_nag_opt, (REPLACE_ONE,), _laplace_setting("nag", {}),
                    LAPLACE_EPS, 0.0, "DP-NAG-opt: optimal budgets, horizon re-selection",
                    mutant_factor=LAPLACE_MUTANT), rank=40)
register_audit(AuditSpec("dp_masg", alg.dp_masg, (REPLACE_ONE,), _laplace_setting("nag", {}),
                    LAPLACE_EPS, 0.0, "DP-MASG (Kuru et al. (33))",
                    mutant_factor=LAPLACE_MUTANT), rank=50)
register_audit(AuditSpec("dp_masg_opt", alg.dp_masg_opt, (REPLACE_ONE,),
                    _laplace_setting("nag", {}), LAPLACE_EPS, 0.0,
                    "DP-MASG-opt: optimal budgets, horizon re-selection",
                    mutant_factor=LAPLACE_MUTANT), rank=60)
