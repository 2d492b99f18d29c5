"""Simulated DP optimisation algorithms, batched over trials and backend-agnostic.

Every algorithm takes an :class:`~dpbounds.objectives.Objective` (its data live in the
chosen array namespace: NumPy, CuPy or array-api-strict), a privacy target, ``trials`` and
a ``seed``, and returns a :class:`~dpbounds.algorithms._common.SimulationResult` with the
final states, a per-step trace (``F(x_t) - F*``, ``F(x_t)`` or ``||∇F(x_t)||``) and a
:class:`~dpbounds.algorithms._common.PrivacyLedger` of the budget actually spent.

=======================  ============================================  =======================
function                 paper                                         privacy
=======================  ============================================  =======================
``dp_gd``                Kuru et al. Sec. 5 / Lee & Kifer Table 1      pure DP or zCDP
``dp_heavy_ball``        Kuru et al. eq. (9) (DP-SHB)                  pure DP (Laplace)
``dp_nag``/``_opt``      Kuru et al. eq. (27), Prop. 4.2               pure DP (Laplace)
``dp_masg``/``_opt``     Kuru et al. eq. (33), Thm 4.3                 pure DP (Laplace)
``dp_agd``               Lee & Kifer Algorithm 2 (DP-AGD)              zCDP
``noisy_projected_sgd``  Kamath Lecture 13, Alg. 3 (BST14)             (ε, δ)
``output_perturbation``  Kamath Lecture 13, Lemma 1                    (ε, δ)
``objective_perturbation`` Kamath Lecture 13 / Kifer-Smith-Thakurta    (ε, δ)
=======================  ============================================  =======================

DP-SGD, DP-NSGD, Tran & Cutkosky's tree-aggregated methods and the tree aggregator live in
:mod:`dpbounds.algorithms.dp_sgd`, :mod:`~dpbounds.algorithms.nsgd`,
:mod:`~dpbounds.algorithms.tran_cutkosky` and :mod:`~dpbounds.algorithms.tree_aggregation`.
"""

from dpbounds.algorithms._common import PrivacyLedger, SimulationResult, make_streams
from dpbounds.algorithms.dp_agd import dp_agd
from dpbounds.algorithms.dp_erm import (
    noisy_projected_sgd,
    objective_perturbation,
    output_perturbation,
)
from dpbounds.algorithms.gradient_descent import dp_gd
from dpbounds.algorithms.kuru import (
    dp_heavy_ball,
    dp_masg,
    dp_masg_opt,
    dp_nag,
    dp_nag_opt,
)

__all__ = [
    "PrivacyLedger",
    "SimulationResult",
    "dp_agd",
    "dp_gd",
    "dp_heavy_ball",
    "dp_masg",
    "dp_masg_opt",
    "dp_nag",
    "dp_nag_opt",
    "make_streams",
    "noisy_projected_sgd",
    "objective_perturbation",
    "output_perturbation",
]
