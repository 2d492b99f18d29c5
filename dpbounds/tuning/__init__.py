r"""Tuning DP heavy ball and DP-NAG / DP-MASG from Kuru et al.'s bounds.

* :mod:`~dpbounds.tuning.heavy_ball` — :func:`tune_heavy_ball`: the :math:`(\alpha,\beta,T)`
  minimising the DP heavy-ball bound (quadratics: rigorous (25); all of
  :math:`\mathcal S_{\mu,L}`: Prop. 3.4 certificates) against Polyak's and the paper's choices;
* :mod:`~dpbounds.tuning.nesterov` — :func:`tune_nesterov`: Remark 4.1's horizon and the optimal
  noise schedule against the uniform budget;
* :mod:`~dpbounds.tuning.by_runs` — :func:`tune_by_runs`: a grid of the real algorithm's runs
  on one objective, the pick re-measured on fresh seeds, the privacy the tuning spends;
* :mod:`~dpbounds.tuning.private_selection` — :func:`select_privately`: tuning on the private
  data itself, Liu & Talwar's random stopping (3 eps per trial, not the grid's composition);
* :mod:`~dpbounds.tuning.selection_budget` — :func:`plan_selection`: the per-run epsilon whose
  private selection costs a given total, planned on public inputs only;
* :mod:`~dpbounds.tuning.horizon_search` — the branch and bound over horizons both use;
* :mod:`~dpbounds.tuning.summary` — :func:`figure3_summary`, the tables of the demo.

The bounds themselves live in :mod:`dpbounds.bounds.strongly_convex` (one definition of each
formula); this package only searches over their hyper-parameters. Both tuners return data
(dataclasses with ``rows()`` / ``table()``) in the PEPit spirit: each row gives the bound beside
an exactly computed value (the expected error on a worst-case quadratic, no sampling).

Example
-------
>>> from dpbounds.settings import logistic_regression
>>> from dpbounds.tuning import tune_nesterov
>>> res = tune_nesterov(**logistic_regression(), max_horizon=200, methods=("nag",),
...                     reference_horizons=(100,))
>>> [c.label for c in res.choices][:2]
['DP-NAG tuned by worst case', 'DP-NAG-opt (Remark 4.1 T)']
"""

from dpbounds.bounds.strongly_convex.heavy_ball_dp import heavy_ball_dp_bound
from dpbounds.tuning.by_runs import ObjectiveRecipe, RunScore, RunTuning, tune_by_runs
from dpbounds.tuning.heavy_ball import HeavyBallChoice, HeavyBallTuning, tune_heavy_ball
from dpbounds.tuning.nesterov import NesterovChoice, NesterovTuning, tune_nesterov
from dpbounds.tuning.private_selection import (
    PrivateSelection,
    costlier_points,
    select_privately,
)
from dpbounds.tuning.selection_budget import SelectionBudget, plan_selection
from dpbounds.tuning.summary import figure3_summary

__all__ = [
    "HeavyBallChoice",
    "HeavyBallTuning",
    "NesterovChoice",
    "NesterovTuning",
    "ObjectiveRecipe",
    "PrivateSelection",
    "RunScore",
    "RunTuning",
    "SelectionBudget",
    "figure3_summary",
    "heavy_ball_dp_bound",
    "plan_selection",
    "costlier_points",
    "select_privately",
    "tune_by_runs",
    "tune_heavy_ball",
    "tune_nesterov",
]
