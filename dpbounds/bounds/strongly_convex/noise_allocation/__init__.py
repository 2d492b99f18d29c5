r"""Optimal per-iteration Laplace noise for DP-NAG / DP-MASG (Kuru et al., Section 4.1).

Given the weights :math:`a_{T,t}` of (29)/(34), the budget-allocation problem (30) is

.. math:: \min_{b_1..b_T}\sum_{t=1}^Ta_{T,t}b_t^2\quad\text{s.t.}\quad
          \sum_{t=1}^T\varepsilon(S_1,b_t,n,m)=\epsilon,\qquad
          \varepsilon(S,b,n,m)=\ln\big[(e^{S/(bm)}-1)\tfrac mn+1\big]\ (11).

Two concepts, one module each:

* :mod:`~dpbounds.bounds.strongly_convex.noise_allocation.allocation` — the scales :math:`b_t`
  for a given horizon: Proposition 4.2's closed form (31) (:math:`m=n`), the numeric optimum with
  subsampling, the uniform baseline, and the m-vs-n question of the Laplace scale (sheet §11.4);
* :mod:`~dpbounds.bounds.strongly_convex.noise_allocation.horizon` — the horizon :math:`T`
  (Remark 4.1, (32)), with and without subsampling, and its theorem object.

Everything is in log-space (``logsumexp``, ``log1p``/``expm1``): :math:`T=10^7` is fine.

Example
-------
>>> from dpbounds.bounds.strongly_convex.nesterov import error_weights, nesterov_schedule
>>> from dpbounds.bounds.strongly_convex.noise_allocation import (
...     optimal_noise, optimal_noise_closed_form)
>>> w = error_weights(nesterov_schedule(0.05, 100), mu=1.0, L=20.0)
>>> cf = optimal_noise_closed_form(w, sensitivity=1.0, n=1000, epsilon=1.0)
>>> num = optimal_noise(w, sensitivity=1.0, n=1000, m=1000, epsilon=1.0)
>>> bool(abs(num.value / cf.value - 1) < 1e-10)
True
"""

from __future__ import annotations

from dpbounds.bounds.strongly_convex.nesterov import MAX_HORIZON
from dpbounds.bounds.strongly_convex.noise_allocation.allocation import (
    SOURCE_EQ30,
    SOURCE_PROP42,
    Allocation,
    check_allocation_privacy,
    laplace_scale_eq27_as_printed,
    noise_allocation_for,
    optimal_noise,
    optimal_noise_closed_form,
    remark_4_2_allocation,
    uniform_noise,
)
from dpbounds.bounds.strongly_convex.noise_allocation.horizon import (
    SOURCE_REMARK41,
    HorizonChoice,
    check_max_horizon,
    naive_select_horizon,
    remark_4_1_theorem,
    select_horizon,
    select_horizon_subsampled,
)

__all__ = [
    "SOURCE_EQ30",
    "SOURCE_PROP42",
    "SOURCE_REMARK41",
    "Allocation",
    "MAX_HORIZON",
    "HorizonChoice",
    "laplace_scale_eq27_as_printed",
    "optimal_noise",
    "optimal_noise_closed_form",
    "remark_4_2_allocation",
    "select_horizon",
    "uniform_noise",
    "check_allocation_privacy",
    "check_max_horizon",
    "naive_select_horizon",
    "noise_allocation_for",
    "select_horizon_subsampled",
    "remark_4_1_theorem",
]
