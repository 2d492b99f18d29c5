"""Symbolic utility bounds of DP optimization: theorem objects, lemma chains, comparison.

* :mod:`~dpbounds.bounds.theorem` — the uniform :class:`Bound` / :class:`Lemma` /
  :class:`Theorem` object (sympy expression, sources, vectorised ``evaluate``, symbolic
  ``exponents``, composition, numeric tuning);
* :mod:`~dpbounds.bounds.tran_cutkosky` — Tran & Cutkosky Algorithm 1 (Lemmas 5, 11, 12,
  Theorems 4, 6);
* :mod:`~dpbounds.bounds.sensitivity_reduced` — Tran & Cutkosky Algorithm 2 (Lemma 7,
  Theorems 8, 9);
* :mod:`~dpbounds.bounds.yang` — Yang et al. DP-NSGD / DP-SGD;
* :mod:`~dpbounds.bounds.dp_erm` — Kamath's convex DP-ERM baselines;
* :mod:`~dpbounds.bounds.heavy_ball` — Kuru et al. DP heavy ball on quadratics (rate (26),
  m(alpha, beta), Theorem 3.5, the exact stationary error);
* :mod:`~dpbounds.bounds.nesterov` — Kuru et al. DP-NAG / DP-MASG (Theorems 4.1, 4.3, (33));
* :mod:`~dpbounds.bounds.noise_allocation` — optimal per-iteration noise (Prop. 4.2, (30),
  Remark 4.1);
* :mod:`~dpbounds.bounds.registry`, :mod:`~dpbounds.bounds.compare` — names and comparison.
"""

from dpbounds.bounds import (
    dp_erm,
    heavy_ball,
    nesterov,
    noise_allocation,
    sensitivity_reduced,
    tran_cutkosky,
    yang,
)
from dpbounds.bounds.compare import Comparison, compare, compare_table, crossover
from dpbounds.bounds.heavy_ball import (
    heavy_ball_rate,
    heavy_ball_stationary_error,
    stationary_error_theorem,
    theorem_3_5,
)
from dpbounds.bounds.noise_allocation import (
    optimal_noise,
    optimal_noise_closed_form,
    remark_4_1_theorem,
    select_horizon,
)
from dpbounds.bounds.registry import DEFAULT_PROBLEM
from dpbounds.bounds.registry import get as get_bound
from dpbounds.bounds.registry import names as bound_names
from dpbounds.bounds.theorem import Assumption, Bound, Lemma, Scaling, Theorem, Tuned, sym

__all__ = [
    "DEFAULT_PROBLEM",
    "Assumption",
    "Bound",
    "Comparison",
    "Lemma",
    "Scaling",
    "Theorem",
    "Tuned",
    "bound_names",
    "compare",
    "compare_table",
    "crossover",
    "dp_erm",
    "get_bound",
    "heavy_ball",
    "heavy_ball_rate",
    "heavy_ball_stationary_error",
    "nesterov",
    "noise_allocation",
    "optimal_noise",
    "optimal_noise_closed_form",
    "remark_4_1_theorem",
    "select_horizon",
    "stationary_error_theorem",
    "theorem_3_5",
    "sensitivity_reduced",
    "sym",
    "tran_cutkosky",
    "yang",
]
