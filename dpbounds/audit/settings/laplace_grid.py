"""Release audit of DP-GD with discrete Laplace on a grid (:mod:`dpbounds.privacy.discrete`):
the release recipe of ``docs/audit.md`` for a run that may be published.

Not an algorithm of :mod:`dpbounds.algorithms`, so it registers as a *release* audit
(:func:`~dpbounds.audit.settings._common.register_release_audit`): not part of ``audit all`` or
``audit --list``; :func:`dpbounds.audit.audit` accepts its name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    GRID_BITS,
    LAPLACE_EPS,
    LAPLACE_L2,
    LAPLACE_STEPS,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _pair,
    register_release_audit,
)
from dpbounds.audit.transcript import noisy_gradients
from dpbounds.privacy import Neighbouring

__all__ = ["grid_dp_gd"]


def grid_dp_gd(objective: Any, *, epsilon: float, steps: int, step_size: float, trials: int,
               seed: Any, grid_bits: int = GRID_BITS, trace: Any = None) -> Any:
    """Full-batch DP-GD whose noisy gradient is released by
    :class:`~dpbounds.privacy.discrete.GridLaplace` (ε/T per step, basic composition): the
    release recipe of ``docs/audit.md`` for a run that may be published. Trial ``k`` draws
    from the ``k``-th child of ``seed``. For the audit's linear pair (constant gradients)."""
    from dpbounds.algorithms._common import SimulationResult
    from dpbounds.privacy import PrivacyLedger, PureDpMechanism, RunPrivacy
    from dpbounds.privacy.discrete import GridLaplace

    mech = GridLaplace(objective.l1_sensitivity / objective.n, epsilon / steps, grid_bits,
                       objective.d)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rngs = [np.random.default_rng(c) for c in seq.spawn(trials)]
    grad = np.asarray(objective.gradients, dtype=float).mean(axis=0)
    x = np.zeros((trials, objective.d))
    for _ in range(steps):
        reg = np.asarray(objective.regularizer_grad(x))  # also records the released iterate
        noisy = np.stack([mech.release(grad, rng) for rng in rngs])
        x = x - step_size * (noisy + reg)
    ledger = PrivacyLedger(Neighbouring.REPLACE_ONE)
    ledger.record(PureDpMechanism(mech.epsilon_spent, Neighbouring.REPLACE_ONE), steps)
    privacy = RunPrivacy(ledger.freeze(), epsilon, 0.0, "pure", mech.sensitivity,
                         description="discrete Laplace on a grid, basic composition")
    return SimulationResult("dp_gd_laplace_grid", x, np.zeros((trials, 1)), "none", privacy,
                            dict(steps=steps, grid_bits=grid_bits))


def _grid_features(res: Any, queries: list) -> np.ndarray:
    return noisy_gradients(queries, res.x_numpy(), step_sizes=np.ones(LAPLACE_STEPS),
                           l2=LAPLACE_L2)


def _grid_setting(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    pair = _pair(relation, dim=1, radius=1.0, l2=LAPLACE_L2, smoothness=1.0)
    return Setting(pair, dict(epsilon=epsilon, steps=LAPLACE_STEPS, step_size=1.0),
                   _grid_features, "released noisy gradients (one per step)",
                   _PAIR_TEXT[relation] + f", r = 1, d = 1, full batch, grid 2^-{GRID_BITS}",
                   ("laplace-lr", "linear"))


register_release_audit(AuditSpec(
    "dp_gd_laplace_grid", grid_dp_gd, (REPLACE_ONE,), _grid_setting, LAPLACE_EPS, 0.0,
    "DP-GD with discrete Laplace on a 2^-10 grid (floating-point safe; "
    "dpbounds.privacy.discrete)", trials=4000), rank=10)
