r"""Symbolic utility bounds of DP optimization, filed by problem class (as PEPit files its
examples).

* :mod:`~dpbounds.bounds.theorem` — the uniform :class:`Bound` / :class:`Lemma` /
  :class:`Theorem` object (sympy expression, sources, vectorised ``evaluate``, symbolic
  ``exponents``, composition, numeric tuning);
* :mod:`~dpbounds.bounds.nonconvex` — smooth non-convex problems, bounds on
  :math:`\mathbb E\lVert\nabla F\rVert`: tree-aggregated momentum NSGD, sensitivity-reduced
  NSGD, normalized SGD and clipped SGD under :math:`(L_0,L_1)`-smoothness;
* :mod:`~dpbounds.bounds.convex` — convex DP-ERM (excess risk): noisy projected SGD, output
  perturbation, objective perturbation;
* :mod:`~dpbounds.bounds.strongly_convex` — smooth strongly convex problems
  (:math:`\mathbb E F(x_T)-F^\ast`): DP heavy ball (quadratics, LMI), DP-NAG / DP-MASG, the optimal
  per-iteration noise and the horizon choice;
* :mod:`~dpbounds.bounds.registry`, :mod:`~dpbounds.bounds.compare` — names, comparison,
  what a bound must beat (:func:`trivial_bounds`) and regime queries (:func:`regime`).

Which paper each result comes from is in its :class:`~dpbounds.provenance.Source`.
"""

from typing import TYPE_CHECKING

from dpbounds._lazy import lazy_package

if TYPE_CHECKING:
    from dpbounds.bounds.compare import (
        Comparison,
        Regime,
        compare,
        compare_table,
        crossover,
        regime,
        trivial_bounds,
    )
    from dpbounds.bounds.registry import DEFAULT_PROBLEM
    from dpbounds.bounds.registry import get as get_bound
    from dpbounds.bounds.registry import names as bound_names
    from dpbounds.bounds.strongly_convex.heavy_ball import (
        heavy_ball_rate,
        heavy_ball_stationary_error,
        stationary_error_theorem,
        theorem_3_5,
    )
    from dpbounds.bounds.strongly_convex.noise_allocation import (
        optimal_noise,
        optimal_noise_closed_form,
        remark_4_1_theorem,
        select_horizon,
    )
    from dpbounds.bounds.theorem import Assumption, Bound, Lemma, Scaling, Theorem, Tuned, sym

#: Where each public name lives (module, attribute). The names are loaded on first access (PEP
#: 562): importing a light submodule (e.g. ``dpbounds.bounds.strongly_convex.nesterov``, which
#: the algorithms use) runs this file first, and importing the registry here would load sympy
#: and every theorem's machinery (0.35 CPU-s) for it.
_LAZY: dict[str, tuple[str, str]] = {
    **{name: ("dpbounds.bounds.compare", name) for name in (
        "Comparison", "Regime", "compare", "compare_table", "crossover", "regime",
        "trivial_bounds")},
    "DEFAULT_PROBLEM": ("dpbounds.bounds.registry", "DEFAULT_PROBLEM"),
    "get_bound": ("dpbounds.bounds.registry", "get"),
    "bound_names": ("dpbounds.bounds.registry", "names"),
    **{name: ("dpbounds.bounds.strongly_convex.heavy_ball", name) for name in (
        "heavy_ball_rate", "heavy_ball_stationary_error", "stationary_error_theorem",
        "theorem_3_5")},
    **{name: ("dpbounds.bounds.strongly_convex.noise_allocation", name) for name in (
        "optimal_noise", "optimal_noise_closed_form", "remark_4_1_theorem", "select_horizon")},
    **{name: ("dpbounds.bounds.theorem", name) for name in (
        "Assumption", "Bound", "Lemma", "Scaling", "Theorem", "Tuned", "sym")},
}


lazy_package(__name__, _LAZY, functions=("compare",))


__all__ = [
    "DEFAULT_PROBLEM",
    "Assumption",
    "Bound",
    "Comparison",
    "Lemma",
    "Regime",
    "Scaling",
    "Theorem",
    "Tuned",
    "bound_names",
    "compare",
    "compare_table",
    "crossover",
    "get_bound",
    "heavy_ball_rate",
    "heavy_ball_stationary_error",
    "optimal_noise",
    "optimal_noise_closed_form",
    "regime",
    "remark_4_1_theorem",
    "select_horizon",
    "stationary_error_theorem",
    "sym",
    "theorem_3_5",
    "trivial_bounds",
]
