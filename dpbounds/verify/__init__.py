"""Verification that can fail: scaling studies of registered theorems against their algorithms.

* :func:`scaling_study` — tune a theorem's algorithm (documented rounding of integer
  quantities), run it over a grid of ``d``, ``N`` or ``eps``, evaluate the bound at each run's
  own parameters, measure the components the lemma chain bounds, fit log–log slopes with
  bootstrap intervals, and give verdicts that can fail (:class:`ScalingResult`);
* :mod:`~dpbounds.verify.problems` — Huber-well problems with exact ``(G, L)`` and the run's
  ``R = F(x0) - F*`` (a far start, a start at the minimiser, a lower-bound instance);
* :mod:`~dpbounds.verify.verdicts` — the verdict type shared with ``sims`` (a vacuous bound is
  a flag, never a pass);
* :mod:`~dpbounds.verify.statistics` — means with CIs, slopes with bootstrap CIs;
* :mod:`~dpbounds.verify.persistence` — the low-frequency part of the tree momentum noise;
* :mod:`~dpbounds.verify.vacuity` — the first ``N`` at which a tuned bound is below ``G``;
* :mod:`~dpbounds.verify.replay` — replay on neighbouring data: the same seed on ``D`` and
  ``D'``, each noiseless release's difference against the declared sensitivity (DP-SGD).

No plotting and no I/O here: ``dpbounds verify --plot`` and the notebook draw the results.
"""

from dpbounds.verify.problems import PROBLEMS, Instance, VerifyProblem, problem
from dpbounds.verify.statistics import MeanCI, SlopeCI, bootstrap_slope, loglog_slope, mean_ci
from dpbounds.verify.study import VARIABLES, ScalingResult, scaling_study
from dpbounds.verify.theorems import MUTATIONS, STUDIES, TheoremStudy, get_study
from dpbounds.verify.vacuity import first_nonvacuous_n
from dpbounds.verify.verdicts import Verdict, is_vacuous, ratio_at_most, slope_at_most

__all__ = [
    "MUTATIONS",
    "PROBLEMS",
    "STUDIES",
    "VARIABLES",
    "Instance",
    "MeanCI",
    "ScalingResult",
    "SlopeCI",
    "TheoremStudy",
    "Verdict",
    "VerifyProblem",
    "bootstrap_slope",
    "first_nonvacuous_n",
    "get_study",
    "is_vacuous",
    "loglog_slope",
    "mean_ci",
    "problem",
    "ratio_at_most",
    "scaling_study",
    "slope_at_most",
]
