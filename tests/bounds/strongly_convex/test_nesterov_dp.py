"""The registered DP-NAG / DP-MASG bounds (Kuru et al. Thm 4.1, 4.3, Prop 4.2, Remark 4.1) against
independent computations: the closed-form geometric sum of (32), the O(T^2) recomputation of the
weights, and the exact error of the run they bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.bounds.registry import get
from dpbounds.bounds.strongly_convex.nesterov import (
    error_weights,
    masg_schedule,
    nesterov_final_error_quadratic,
    nesterov_schedule,
)
from dpbounds.bounds.strongly_convex.noise_allocation import (
    naive_select_horizon,
    optimal_noise_closed_form,
    remark_4_1_theorem,
    select_horizon_subsampled,
)

P = dict(mu=0.1, L=1.0, d=4, N=1e3, eps=1.0, S1=1.0, R=2.0, max_horizon=200)


def test_nag_is_the_minimum_of_the_closed_form_32_over_every_horizon():
    e = get("strongly_convex.nag")
    thm = remark_4_1_theorem().tuned()  # alpha = 1/L, geometric sum in closed form (sympy)
    T = np.arange(1, P["max_horizon"] + 1)
    curve = thm.evaluate(T=T, E0=P["R"], d=P["d"], S1=P["S1"], n=P["N"], eps=P["eps"],
                         mu=P["mu"], L=P["L"])
    h = e.hyperparameters(P)
    assert e.value(P) == pytest.approx(curve.min(), rel=1e-9)
    assert h["T"] == int(np.argmin(curve)) + 1
    assert h["alpha"] == 1.0 / P["L"] and h["beta"] == pytest.approx(
        (1 - math.sqrt(P["mu"])) / (1 + math.sqrt(P["mu"])), rel=1e-12)
    # negative control: a horizon not chosen (T = 1 or T = max_horizon) gives a larger bound
    assert min(curve[0], curve[-1]) > 1.05 * e.value(P)


def test_masg_is_the_minimum_of_the_recomputed_weights():
    e = get("strongly_convex.masg")
    best_T, curve = naive_select_horizon(P["mu"], P["L"], initial_error=P["R"], d=P["d"],
                                         sensitivity=P["S1"], n=int(P["N"]), epsilon=P["eps"],
                                         max_horizon=P["max_horizon"], method="masg")
    assert e.value(P) == pytest.approx(curve.min(), rel=1e-9)
    assert e.hyperparameters(P)["T"] == best_T


def _exact_nag_error(p, T, noise_factor=1.0):
    """E F(x_T) - F* of DP-NAG (alpha = 1/L, Prop. 4.2 noise) on diag(mu, L) with d/2 copies of
    each eigenvalue and F(x_0) - F* = E0: propagated exactly (no sampling)."""
    mu, L, d = p["mu"], p["L"], p["d"]
    sched = nesterov_schedule(1.0 / L, T)
    al = optimal_noise_closed_form(error_weights(sched, mu, L), p["S1"], int(p["N"]), p["eps"])
    lams, mult = np.array([mu, L]), np.array([d / 2, d / 2])
    e0 = math.sqrt(2 * p["R"] / np.sum(mult * lams))
    return nesterov_final_error_quadratic(sched, mu, lams, noise_factor * 2 * al.scales**2, e0,
                                          multiplicities=mult)


def test_nag_bound_holds_for_the_run_it_bounds_and_the_check_can_fail():
    e = get("strongly_convex.nag")
    T = int(e.hyperparameters(P)["T"])
    bound = e.value(P)
    assert _exact_nag_error(P, T) <= bound
    # negative control: with ten times the noise the same check fails (it is not vacuous)
    assert _exact_nag_error(P, T, noise_factor=10.0) > bound


def test_subsampled_horizon_and_tuning():
    e = get("strongly_convex.nag")
    p = {**P, "m": 100}
    h = select_horizon_subsampled(P["mu"], P["L"], initial_error=P["R"], d=P["d"],
                                  sensitivity=P["S1"], n=int(P["N"]), m=100, epsilon=P["eps"],
                                  max_horizon=P["max_horizon"])
    assert e.value(p) == pytest.approx(h.bound, rel=1e-12)
    tuned = e.optimize(P)
    assert tuned.value <= e.value(P) * (1 + 1e-12)
    assert 0 < tuned.hyperparameters["c"] <= 1


def test_masg_schedule_matches_the_paper_on_figure_2():
    # (33) with floor rounding reproduces the reference code's horizons (settings of Fig. 2)
    from dpbounds.settings import accelerated_noise_allocation

    s = accelerated_noise_allocation()
    T = [masg_schedule(s["mu"], s["L"], stages=K, first_stage_rounding=s["first_stage_rounding"])
         .horizon for K in s["stages"]]
    assert T == [53, 133, 293, 613]


def test_strongly_convex_inputs_are_checked():
    e = get("strongly_convex.nag")
    with pytest.raises(ValueError, match="N must be an integer"):
        e.value({**P, "N": 1000.5})
    with pytest.raises(ValueError, match="needs strong convexity mu"):
        e.value({k: v for k, v in P.items() if k != "mu"})
