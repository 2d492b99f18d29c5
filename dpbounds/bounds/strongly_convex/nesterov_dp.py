r"""DP-NAG and DP-MASG with the optimal noise allocation at the best horizon: registry entries.

Kuru et al., Section 4: Theorem 4.1 (DP-NAG, constant step :math:`\alpha=c/L`) and Theorem 4.3
(DP-MASG, the stage schedule (33) scaled by :math:`c`) bound :math:`E_T=\mathbb EF(x_T)-F^\ast`
by :math:`a_{T,0}E_0+\sum_ta_{T,t}(b_t^2d+\sigma_s^2/2)` (29)/(34); Proposition 4.2 gives the
optimal Laplace scales for a total budget :math:`\epsilon` (:math:`m=n`), and Remark 4.1 picks
the horizon minimising the result (32). The bound at the selected horizon is not a closed
expression (it is a minimum over integers of a recursion), so the entries carry a
:class:`~dpbounds.bounds.numeric.NumericBound`:

* ``strongly_convex.nag`` — :func:`~dpbounds.bounds.strongly_convex.noise_allocation.select_horizon`
  with ``method="nag"`` (the closed form of (32) at a fixed horizon is
  :func:`~dpbounds.bounds.strongly_convex.noise_allocation.remark_4_1_theorem`);
* ``strongly_convex.masg`` — the same for the MASG schedule.

With subsampling (:math:`m<n`) the optimal allocation is the numeric solution of (30) and the
horizon is the exact minimiser of that bound
(:func:`~dpbounds.bounds.strongly_convex.noise_allocation.select_horizon_subsampled`, DERIVED).
The tuner moves the step factor :math:`c\in(0,1]` (:math:`\alpha\le1/L` is an assumption of
both theorems).

Example
-------
>>> from dpbounds.bounds.registry import get
>>> p = dict(mu=0.02, L=5.1028, d=20, N=1e5, eps=1.0, S1=40.0, R=10.0)
>>> nag = get("strongly_convex.nag")
>>> h = nag.hyperparameters(p)
>>> h["T"] <= 1000 and abs(h["alpha"] - 1 / 5.1028) < 1e-12
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpbounds.bounds.numeric import NumericBound
from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.strongly_convex.gradient_noise import check_noise_fits
from dpbounds.bounds.strongly_convex.heavy_ball_dp import problem_params
from dpbounds.bounds.strongly_convex.nesterov import (
    SOURCE_EQ33,
    SOURCE_THM41,
    SOURCE_THM43,
    nesterov_momentum,
)
from dpbounds.bounds.strongly_convex.noise_allocation import (
    SOURCE_PROP42,
    SOURCE_REMARK41,
    remark_4_1_theorem,
    select_horizon,
    select_horizon_subsampled,
)
from dpbounds.bounds.theorem import Assumption, sym
from dpbounds.provenance import KURU, Provenance, Source

__all__ = []

_SUBSAMPLED = Source(KURU, "Remark 4.1 with subsampling (m < n)", Provenance.DERIVED,
                     "optimal value of (30) (KKT, Newton) plus the subsampling term, minimised "
                     "over every horizon; for m = n this is (32) verbatim")
_PARAMS = ("mu", "L", "d", "n", "m", "eps", "S1", "E0", "max_horizon")
_ASSUMPTIONS = (
    Assumption("F mu-strongly convex and L-smooth; ||grad f(x; y) - grad f(x; y')||_1 <= S1"),
    Assumption("mu <= L", sym("mu") <= sym("L")),
    Assumption("pure eps-DP: Laplace noise, basic composition, replace-one neighbours, batches "
               "of m without replacement; step alpha = c/L <= 1/L"),
)


def dp_accelerated_bound(p: Mapping[str, Any], method: str, c: float = 1.0
                         ) -> tuple[float, dict[str, float]]:
    """(29)/(34) with the optimal noise at the horizon of Remark 4.1, for step factor ``c``.

    ``p`` holds :func:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.problem_params`'s keys.
    Returns the bound and the choices (``c``, the step ``alpha`` and momentum ``beta`` of the
    first stage, ``T``).
    """
    if not 0.0 < c <= 1.0:
        raise ValueError(f"c must lie in (0, 1] (Theorems 4.1/4.3 need alpha <= 1/L), got {c!r}")
    check_noise_fits(p["S1"], p["n"], p["m"], p["eps"], p["d"])
    common = dict(initial_error=p["E0"], d=p["d"], sensitivity=p["S1"], n=p["n"],
                  epsilon=p["eps"], max_horizon=p["max_horizon"], method=method, c=c)
    if p["m"] == p["n"]:
        choice = select_horizon(p["mu"], p["L"], **common)
    else:
        choice = select_horizon_subsampled(p["mu"], p["L"], m=p["m"], **common)
    alpha = c / p["L"]  # NAG's step; MASG's first stage (later stages c 2^(-2k)/L)
    chosen = {"c": c, "alpha": alpha, "beta": float(nesterov_momentum(alpha, p["mu"])),
              "T": float(choice.horizon)}
    return choice.bound, chosen


def _tuner(method: str):
    def tune(p: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
        """The step factor c in (0, 1] minimising the bound (bounded search in log c)."""
        def f(z: float) -> float:
            try:
                return math.log(dp_accelerated_bound(p, method, math.exp(min(z, 0.0)))[0])
            except ValueError:
                return math.inf

        from scipy.optimize import minimize_scalar  # on first use: ~0.2 CPU-s of imports

        res = minimize_scalar(f, bounds=(math.log(1e-3), 0.0), method="bounded",
                              options={"xatol": 1e-2, "maxiter": 25})
        return dp_accelerated_bound(p, method, math.exp(min(float(res.x), 0.0)))

    return tune


_NAG = NumericBound(
    name="strongly_convex.nag (Theorem 4.1, Prop. 4.2, Remark 4.1)",
    quantity=r"\mathbb E[F(x_T)]-F^\ast",
    parameters=_PARAMS,
    method="optimal noise (Prop. 4.2 / eq. (30)) at the horizon T <= max_horizon minimising "
           "(32)",
    evaluator=lambda p: dp_accelerated_bound(p, "nag", float(p.get("c", 1.0))),
    inputs=("c",),  # the step factor tune bound searches
    sources=(SOURCE_REMARK41, SOURCE_PROP42, SOURCE_THM41, _SUBSAMPLED),
    assumptions=_ASSUMPTIONS,
    tuner=_tuner("nag"),
    closed_form=remark_4_1_theorem(),
    description="alpha = 1/L and beta = (1 - sqrt(mu alpha))/(1 + sqrt(mu alpha)); E0 = R",
)

_MASG = NumericBound(
    name="strongly_convex.masg (Theorem 4.3, Prop. 4.2, Remark 4.1)",
    quantity=r"\mathbb E[F(x_T)]-F^\ast",
    parameters=_PARAMS,
    method="MASG schedule (33), optimal noise (Prop. 4.2 / eq. (30)) at the horizon "
           "T <= max_horizon minimising (34)",
    evaluator=lambda p: dp_accelerated_bound(p, "masg", float(p.get("c", 1.0))),
    inputs=("c",),  # the step factor tune bound searches
    sources=(SOURCE_THM43, SOURCE_EQ33, SOURCE_PROP42, SOURCE_REMARK41, _SUBSAMPLED),
    assumptions=_ASSUMPTIONS,
    tuner=_tuner("masg"),
    description="stage steps c 2^(-2k)/L (c = 1), p = 1, stage-1 length ceil(2 sqrt(kappa) "
                "ln sqrt(kappa)); momentum restarted at stage changes (the run (34) bounds)",
)

for _method, _bound, _title, _algorithm in (
        ("nag", _NAG, "DP-NAG, optimal noise, horizon of Remark 4.1 (Kuru et al. Thm 4.1, "
                      "Prop 4.2)", "dp_nag_opt"),
        ("masg", _MASG, "DP-MASG, optimal noise, horizon of Remark 4.1 (Kuru et al. Thm 4.3, "
                        "Prop 4.2)", "dp_masg_opt")):
    register(Entry(
        name=f"strongly_convex.{_method}",
        title=_title,
        problem_class="strongly_convex",
        theorem=_bound,
        tuned=_bound,
        to_params=problem_params,
        requires=("mu", "S1"),
        tunable={"c": (1e-3, 1.0)},
        crossovers=False,
        notes=f"VERBATIM ({'32' if _method == 'nag' else '34'}) for m = n; with m < n the "
              "optimal (30) is solved numerically (DERIVED); E0 = R",
        algorithm=f"dpbounds.algorithms.{_algorithm}",
        figure="paper_figs/kuru_fig2.py",
        test="tests/bounds/strongly_convex/test_nesterov_dp.py",
    ))
