"""Simulated DP optimisation algorithms, batched over trials and backend-agnostic.

Every algorithm takes an :class:`~dpbounds.objectives.Objective` (its data live in the
chosen array namespace: NumPy, CuPy or array-api-strict), a privacy target, ``trials`` and
a ``seed``, and returns a :class:`~dpbounds.algorithms._common.SimulationResult` with the
final states, a per-step trace (``F(x_t) - F*``, ``F(x_t)`` or ``||∇F(x_t)||``) and its
privacy record ``result.privacy`` (:class:`~dpbounds.privacy.run.RunPrivacy`): every
algorithm declares the mechanisms it runs (:mod:`dpbounds.privacy.mechanisms`), calibrates
their noise with :func:`~dpbounds.privacy.calibrate.calibrate` and records them in a
:class:`~dpbounds.privacy.ledger.PrivacyLedger`; ``result.privacy.report(delta)`` gives every
accountant's ε side by side. ``result.ledger`` (a
:class:`~dpbounds.algorithms._common.SpentBudget`) is a summary view derived from it.

============================  ============================================  =======================
function                      paper                                         privacy
============================  ============================================  =======================
``dp_gd``                     Kuru et al. Sec. 5 / Lee & Kifer Table 1      pure DP or zCDP
``dp_heavy_ball``             Kuru et al. eq. (9) (DP-SHB)                  pure DP (Laplace)
``dp_nag``/``_opt``           Kuru et al. eq. (27), Prop. 4.2               pure DP (Laplace)
``dp_masg``/``_opt``          Kuru et al. eq. (33), Thm 4.3                 pure DP (Laplace)
``dp_agd``                    Lee & Kifer Algorithm 2 (DP-AGD)              zCDP
``noisy_projected_sgd``       Kamath Lecture 13, Alg. 3 (BST14)             (ε, δ)
``output_perturbation``       Kamath Lecture 13, Lemma 1                    (ε, δ)
``objective_perturbation``    Kamath Lecture 13 / Kifer-Smith-Thakurta      (ε, δ)
``dp_sgd``                    Abadi et al. / Yang et al. eq. (2), clipping  (ε, δ) via RDP / PLD
``dp_nsgd``                   Yang et al. eq. (3), g/(||g||+r)              (ε, δ) via RDP / PLD
``tree_momentum_nsgd``        Tran & Cutkosky Algorithm 1                   (ε, δ) via tree RDP
``sensitivity_reduced_nsgd``  Tran & Cutkosky Algorithm 2 (reconstructed)   (ε, δ) via zCDP
============================  ============================================  =======================

Recorded mechanisms → accountant (the one that calibrated the noise):

* Kuru et al. (``dp_gd`` Laplace, ``dp_heavy_ball``, ``dp_nag*``, ``dp_masg*``): one
  ``SubsampledLaplaceMechanism`` per step → ``'pure'`` (Theorems A.2/A.3);
* Gaussian ``dp_gd``: ``GaussianMechanism`` × T → ``'zcdp'`` (standard conversion);
* ``dp_agd``: ``GaussianMechanism`` per measurement + ``ZcdpMechanism`` per NoisyMax, per
  trial up to its last release → ``'zcdp'``;
* ``dp_sgd``/``dp_nsgd``: ``SubsampledGaussianMechanism`` × T → ``'rdp'`` or ``'pld'``;
* ``noisy_projected_sgd``: ``SubsampledGaussianMechanism`` (1 of n, without replacement) × T
  → ``'rdp'``, or, with the lecture's calibration, one ``ApproxDpMechanism`` → ``'basic'``;
* ``output_perturbation``: one ``GaussianMechanism`` → ``'pld'`` (exact Gaussian);
* ``objective_perturbation``: one ``ApproxDpMechanism`` (KST Thm 2) → ``'basic'``;
* ``tree_momentum_nsgd``/``sensitivity_reduced_nsgd``: one / two
  ``TreeAggregationMechanism`` → ``'zcdp'`` (Thm 10's RDP, standard conversion).

Neighbouring relation: under add/remove the dataset size is private, so the algorithms
that offer it (Gaussian ``dp_gd``, ``dp_sgd``/``dp_nsgd`` with Poisson sampling) take a
declared public size ``public_n`` (the released sum is divided by it and the noise depends
on it only); DP-AGD releases sums with public constants; the others are replace-one.

Reproducibility: trial ``k`` of a batch depends only on ``(seed, k)``, bit for bit on NumPy
and array-api-strict (per-trial streams, draws restricted to the trials that use them, and
contractions computed row by row, :func:`dpbounds.backend.rowwise_matmul`).

The online tree aggregator (binary counter, O(d log T) memory) is
:class:`~dpbounds.algorithms.tree_aggregation.TreeAggregator`.
"""

from typing import TYPE_CHECKING

from dpbounds._lazy import lazy_package

if TYPE_CHECKING:
    from dpbounds.algorithms._common import SimulationResult, SpentBudget, make_streams
    from dpbounds.algorithms.dp_agd import dp_agd
    from dpbounds.algorithms.dp_erm import (
        noisy_projected_sgd,
        objective_perturbation,
        output_perturbation,
    )
    from dpbounds.algorithms.dp_sgd import dp_sgd
    from dpbounds.algorithms.gradient_descent import dp_gd
    from dpbounds.algorithms.momentum import (
        dp_heavy_ball,
        dp_masg,
        dp_masg_opt,
        dp_nag,
        dp_nag_opt,
        reselected_horizon,
    )
    from dpbounds.algorithms.nsgd import dp_nsgd
    from dpbounds.algorithms.tree_aggregation import TreeAggregator
    from dpbounds.algorithms.tree_momentum import sensitivity_reduced_nsgd, tree_momentum_nsgd

# imported on first use (PEP 562): ``dpbounds.algorithms._common``'s constants (a plug-in's
# audit_setting reads MAX_STEPS) do not import all fourteen algorithms
_LAZY = {
    **dict.fromkeys(("SimulationResult", "SpentBudget", "make_streams"),
                    "dpbounds.algorithms._common"),
    "dp_agd": "dpbounds.algorithms.dp_agd",
    **dict.fromkeys(("noisy_projected_sgd", "objective_perturbation", "output_perturbation"),
                    "dpbounds.algorithms.dp_erm"),
    "dp_sgd": "dpbounds.algorithms.dp_sgd", "dp_gd": "dpbounds.algorithms.gradient_descent",
    **dict.fromkeys(("dp_heavy_ball", "dp_masg", "dp_masg_opt", "dp_nag", "dp_nag_opt",
                     "reselected_horizon"), "dpbounds.algorithms.momentum"),
    "dp_nsgd": "dpbounds.algorithms.nsgd",
    "TreeAggregator": "dpbounds.algorithms.tree_aggregation",
    **dict.fromkeys(("sensitivity_reduced_nsgd", "tree_momentum_nsgd"),
                    "dpbounds.algorithms.tree_momentum"),
}
# dp_agd and dp_sgd name a function and its module: the function stays the package's name
lazy_package(__name__, {k: (v, k) for k, v in _LAZY.items()}, functions=("dp_agd", "dp_sgd"))

__all__ = [
    "SimulationResult",
    "SpentBudget",
    "TreeAggregator",
    "dp_agd",
    "dp_gd",
    "dp_heavy_ball",
    "dp_masg",
    "dp_masg_opt",
    "dp_nag",
    "dp_nag_opt",
    "dp_nsgd",
    "dp_sgd",
    "make_streams",
    "noisy_projected_sgd",
    "objective_perturbation",
    "output_perturbation",
    "reselected_horizon",
    "sensitivity_reduced_nsgd",
    "tree_momentum_nsgd",
]
