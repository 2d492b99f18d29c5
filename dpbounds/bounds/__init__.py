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
* :mod:`~dpbounds.bounds.registry`, :mod:`~dpbounds.bounds.compare` — names and comparison.
"""

from dpbounds.bounds import dp_erm, sensitivity_reduced, tran_cutkosky, yang
from dpbounds.bounds.compare import Comparison, compare, compare_table, crossover
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
    "sensitivity_reduced",
    "sym",
    "tran_cutkosky",
    "yang",
]
