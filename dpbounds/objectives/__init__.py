r"""Finite-sum objectives for the DP simulations, batched over independent trials.

Every objective is :math:`F(x)=\frac1n\sum_{i=1}^n\ell_i(x)+R(x)` with the data (``n``
samples) stored once in an array namespace ``xp`` (see :mod:`dpbounds.backend`) and shared
by all trials. **A state is an ``xp`` array of shape ``(trials, d)``**; an index set is an
integer ``xp`` array of shape ``(trials, m)`` (one mini-batch per trial); ``idx=None`` means
all ``n`` samples.

API used by the algorithms (see :class:`~dpbounds.objectives.Objective`)
------------------------------------------------------------------------
=====================================  ==========================================================
``f.loss(x)``                          ``(trials,)`` full ``F(x)``
``f.grad(x, idx=None)``                ``(trials, d)``: ``mean_{i∈idx} ∇ℓ_i(x) + ∇R(x)``
``f.loss_and_grad(x, idx=None)``       both (one data pass for GLMs when ``idx is None``)
``f.sample_losses(x, idx=None)``       ``(trials, m)`` data losses (no ``R``)
``f.sample_grads(x, idx=None)``        ``(trials, m, d)`` data gradients (materialised)
``f.clipped_mean_grad(x, idx, C)``     ``(trials, d)``: ``mean ∇ℓ_i·min(1, C/||∇ℓ_i||)``, data only
``f.normalized_mean_grad(x, idx, r)``  ``(trials, d)``: ``mean ∇ℓ_i/(||∇ℓ_i||+r)``, data only
``f.regularizer(x)`` / ``_grad(x)``    the public, data-independent part (no privacy cost)
``f.suboptimality(x)``                 ``F(x) - F*``
``f.grad_norm(x)``                     ``||∇F(x)||`` on the full data
``f.initial_state(trials, x0)``        ``(trials, d)`` start (zeros by default)
``f.to_backend("array_api_strict")``   same objective, data in another namespace
=====================================  ==========================================================

A clipped DP-SGD step is therefore
``x - lr * (f.clipped_mean_grad(x, idx, C) + noise + f.regularizer_grad(x))`` with
replace-one L2 sensitivity ``2C/m`` of the clipped mean (``C/m`` add/remove); a DP-NSGD
step uses ``normalized_mean_grad`` (per-sample norm ``< 1``, so sensitivity ``< 2/m``).
For GLMs these fused paths only rescale the scalar margin derivatives, never building
the ``(trials, m, d)`` per-sample gradients.

Constants
---------
``f.smoothness`` (L), ``f.strong_convexity`` (μ; negative = weakly convex),
``f.gradient_bound`` (G = sup ``||∇ℓ_i||``, on the declared data domain),
``f.lipschitz(radius)`` (for F on a ball), ``f.l1_sensitivity`` (Kuru et al.'s
:math:`S_1`, eq. (10)/(36)), ``f.l2_sensitivity`` (replace-one: a bound on the
**difference** ``||∇ℓ(x;y) - ∇ℓ(x;y')||``, not on ``||∇ℓ||``; add/remove needs
``f.gradient_bound`` or clipping — a quadratic has finite ``l2_sensitivity`` but infinite G),
``f.condition_number``, ``f.optimum`` (:class:`Optimum`: ``x``, ``value``, ``grad_norm``,
``method``, ``is_global``; computed once by a deterministic solver and cached).

Objectives
----------
* :class:`QuadraticObjective`: any spectrum, closed-form optimum, optional zero-mean
  per-sample offsets (bounded, state-independent sensitivity).
* :class:`LogisticRegression`: L2-regularised; ``LogisticRegression.kuru`` is Kuru et al.
  (35) with the sign typo corrected; ``l2 = λ`` gives Lee & Kifer's model.
* :class:`HuberSVM`: Lee & Kifer's linear SVM with the hinge replaced by the Huber hinge
  (Chaudhuri et al. 2011), bandwidth ``h``.
* :class:`NonconvexLogisticRegression`: logistic loss + ``λ Σ x_j²/(1+x_j²)`` (smooth,
  non-convex, bounded below by 0).
* :class:`HuberWell`: Huber functions of the distance to zero-mean centres, exactly
  G-Lipschitz and L-smooth per sample, closed-form optimum (the verification problems).
* :class:`CoshCosineObjective`: ``Σ cosh(x_j) + a cos(b x_j)`` plus zero-mean offsets, Yang
  et al.'s (L0, L1)-smooth non-convex rig with a known global minimum.
"""

from typing import TYPE_CHECKING

from dpbounds._lazy import lazy_package

if TYPE_CHECKING:
    from dpbounds.objectives._base import Objective, ObjectiveProtocol, Optimum
    from dpbounds.objectives.glm import (
        HuberSVM,
        LogisticRegression,
        MarginLossObjective,
        NonconvexLogisticRegression,
    )
    from dpbounds.objectives.huber_well import HuberWell
    from dpbounds.objectives.nonconvex import CoshCosineObjective
    from dpbounds.objectives.quadratic import QuadraticObjective

# imported on first use (PEP 562): a module that needs only the base classes (the audit's
# neighbours, a plug-in's audit_setting) does not compile-load numba's logistic kernel
# (0.27 CPU-s of every ``--plugin`` command line)
_LAZY = {
    "Objective": "dpbounds.objectives._base", "ObjectiveProtocol": "dpbounds.objectives._base",
    "Optimum": "dpbounds.objectives._base", "HuberSVM": "dpbounds.objectives.glm",
    "LogisticRegression": "dpbounds.objectives.glm",
    "MarginLossObjective": "dpbounds.objectives.glm",
    "NonconvexLogisticRegression": "dpbounds.objectives.glm",
    "HuberWell": "dpbounds.objectives.huber_well",
    "CoshCosineObjective": "dpbounds.objectives.nonconvex",
    "QuadraticObjective": "dpbounds.objectives.quadratic",
}
lazy_package(__name__, {k: (v, k) for k, v in _LAZY.items()})

__all__ = [
    "CoshCosineObjective",
    "HuberSVM",
    "HuberWell",
    "LogisticRegression",
    "MarginLossObjective",
    "NonconvexLogisticRegression",
    "Objective",
    "ObjectiveProtocol",
    "Optimum",
    "QuadraticObjective",
]
