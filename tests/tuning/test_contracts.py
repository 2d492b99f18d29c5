"""Issue 19 item 1: "computed <= bound" for every tuner and function class, and the computed
error itself checked against a Monte Carlo run of the real algorithm.

The computed error (:mod:`dpbounds.tuning._quadratic`) is the exact error of DP-SHB on a
concrete quadratic data set whose sampling variance is the whole (21) budget, in one
coordinate. The oracles: the algorithm itself (Monte Carlo, a 4.5-sigma interval, two-sided),
and the bounds (the property must hold on every random problem; with the noise term halved
hypothesis must find a violation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.bounds.strongly_convex.gradient_noise import (
    dp_noise_level,
    laplace_scale_at_horizon,
    subsampling_variance,
)
from dpbounds.bounds.strongly_convex.heavy_ball_dp import heavy_ball_dp_bound
from dpbounds.bounds.strongly_convex.nesterov import (
    error_weights,
    masg_schedule,
    nesterov_final_error_quadratic,
    nesterov_schedule,
    unrolled_bound,
)
from dpbounds.bounds.strongly_convex.noise_allocation import optimal_noise, uniform_noise
from dpbounds.lmi.heavy_ball_bound import lmi_bound_curves
from dpbounds.objectives import QuadraticObjective
from dpbounds.tuning import tune_heavy_ball, tune_nesterov
from dpbounds.tuning._quadratic import (
    heavy_ball_error,
    sampling_variance_of_instance,
    worst_case_instance,
    worst_case_spectrum,
)

REL = 1e-9  # float round-off allowed between two exact computations


# ----------------------------------------------------------------------------- Monte Carlo
def _objective(inst, S: float, n: int) -> QuadraticObjective:
    """The instance as a data set: Q diagonal, offsets +-S/2 (half each) in one coordinate."""
    lam = inst.spectrum()
    offsets = np.zeros((n, lam.size))
    offsets[: n // 2, inst.sampling_coordinate] = S / 2
    offsets[n // 2:, inst.sampling_coordinate] = -S / 2
    x_star = np.zeros(lam.size)
    x_star[0] = inst.initial_error  # x0 = 0: the start error is x0 - x* = -x*
    return QuadraticObjective(lam, b=lam * x_star, offsets=offsets, offset_l1_radius=S / 2)


def test_computed_error_is_the_mean_of_the_real_algorithm():
    # sampling noise dominates (large eps, m < n): where the old model (sigma_s^2 in each
    # coordinate) and the algorithm disagree
    mu, L, d, n, m, eps, S, T, a, b = 0.2, 1.0, 3, 10, 4, 50.0, 1.0, 15, 0.8, 0.4
    lap = 2 * float(laplace_scale_at_horizon(T, S, n, m, eps)) ** 2
    samp = sampling_variance_of_instance(S, n, m)
    assert samp == pytest.approx(subsampling_variance(S, n, m), rel=1e-12)  # (21) attained
    inst = worst_case_instance(T, a, b, mu, L, d, laplace_var=lap, sampling_var=samp,
                               dist_sq=0.09)
    f = _objective(inst, S, n)
    assert f.l1_sensitivity == pytest.approx(S) and f.n == n
    run = dp_heavy_ball(f, epsilon=eps, steps=T, step_size=a, momentum=b, batch_size=m,
                        trials=4000, seed=7)
    sub = run.trace[:, -1]
    mean, se = float(np.mean(sub)), float(np.std(sub, ddof=1) / math.sqrt(sub.size))
    assert abs(mean - inst.error) <= 4.5 * se, (mean, se, inst.error)
    # negative control: sigma_s^2 charged to every coordinate (the old model) is far outside
    old = worst_case_instance(T, a, b, mu, L, d, laplace_var=lap + samp, sampling_var=0.0,
                              dist_sq=0.09).error
    assert abs(mean - old) > 10 * se, (mean, se, old)


# ----------------------------------------------------------------------------- problems
@st.composite
def problems(draw, max_T: int = 3000, max_d: int = 10**4):
    kappa = 10 ** draw(st.floats(0, 6))
    L = 10 ** draw(st.floats(-2, 2))
    n = int(10 ** draw(st.floats(0.31, 7)))
    full = draw(st.booleans())
    m = n if full else max(1, int(n * 10 ** draw(st.floats(-4, 0))))
    beta = draw(st.floats(0, 0.999))
    return dict(
        mu=L / kappa, L=L, d=int(10 ** draw(st.floats(0, math.log10(max_d)))), n=n, m=m,
        eps=10 ** draw(st.floats(-2, 1)), S=10 ** draw(st.floats(-2, 2)),
        T=draw(st.integers(1, max_T)), dist_sq=10 ** draw(st.floats(-3, 3)),
        beta=beta, alpha=draw(st.floats(0.01, 0.999)) * 2 * (1 + beta) / L)


def _hb_parts(p: dict) -> tuple[float, float, float]:
    """(transient part, noise part) of the quadratic-class bound at (alpha, beta, T), and the
    exact error on the worst instance."""
    kw = dict(d=p["d"], n=p["n"], m=p["m"], epsilon=p["eps"], sensitivity=p["S"],
              max_horizon=p["T"])
    args = (p["alpha"], p["beta"], p["mu"], p["L"])
    total = float(heavy_ball_dp_bound(*args, initial_distance_sq=p["dist_sq"], **kw)[0, -1])
    noise = float(heavy_ball_dp_bound(*args, initial_distance_sq=0.0, **kw)[0, -1])
    b_T = float(laplace_scale_at_horizon(p["T"], p["S"], p["n"], p["m"], p["eps"]))
    computed = heavy_ball_error(p["T"], p["alpha"], p["beta"], p["mu"], p["L"], p["d"],
                                laplace_var=2 * b_T * b_T,
                                sampling_var=sampling_variance_of_instance(p["S"], p["n"],
                                                                           p["m"]),
                                dist_sq=p["dist_sq"])
    return total - noise, noise, computed


def _finite(p: dict) -> bool:
    b_T = laplace_scale_at_horizon(p["T"], p["S"], p["n"], p["m"], p["eps"])
    return bool(np.isfinite(2 * p["d"] * b_T * b_T * 1e6))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_quadratic_bound_is_never_below_the_exact_error(p):
    if not _finite(p):
        return
    trans, noise, computed = _hb_parts(p)
    assert computed <= (trans + noise) * (1 + REL), (p, trans, noise, computed)


def test_negative_control_a_halved_noise_term_is_caught():
    # the same property with the bound's noise term halved: hypothesis finds a violation
    def violated(p: dict) -> bool:
        if not _finite(p):
            return False
        trans, noise, computed = _hb_parts(p)
        return computed > (trans + 0.5 * noise) * (1 + REL)

    p = find(problems(max_T=3000, max_d=100), violated,
             settings=settings(max_examples=2000, deadline=None, database=None,
                               suppress_health_check=list(HealthCheck)))
    trans, noise, computed = _hb_parts(p)
    assert trans + 0.5 * noise < computed <= trans + noise


@settings(max_examples=40, deadline=None)
@given(problems(max_T=1500), st.sampled_from(["nag", "masg"]), st.booleans())
def test_nesterov_bounds_are_never_below_the_exact_error(p, method, optimal):
    if not _finite(p):
        return
    mu, L, d, n, m, S, eps, T = (p[k] for k in ("mu", "L", "d", "n", "m", "S", "eps", "T"))
    sched = nesterov_schedule(1 / L, T) if method == "nag" else masg_schedule(mu, L, horizon=T)
    w = error_weights(sched, mu, L)
    al = optimal_noise(w, S, n, m, eps) if optimal else uniform_noise(w, S, n, m, eps)
    E0 = p["dist_sq"]
    s2 = subsampling_variance(S, n, m)
    bound = unrolled_bound(w, E0, None, d, subsampling_var=s2, log_scales=al.log_scales)
    lams, mult = worst_case_spectrum(mu, L, d)
    e0 = math.sqrt(2 * E0 / float(np.sum(mult * lams)))
    log_var = np.logaddexp(math.log(2) + 2 * al.log_scales,
                           math.log(s2 / d) if s2 > 0 else -np.inf)
    computed = nesterov_final_error_quadratic(sched, mu, lams, None, e0, multiplicities=mult,
                                              log_noise_variances=log_var,
                                              restart=method == "masg")
    assume_finite = math.isfinite(bound) and math.isfinite(computed)
    if assume_finite:
        assert computed <= bound * (1 + REL), (p, method, optimal, computed, bound)


@settings(max_examples=6, deadline=None)
@given(problems(max_T=400, max_d=200))
def test_lmi_bound_is_never_below_the_exact_error(p):
    if not _finite(p):
        return
    mu, L = p["mu"], p["L"]
    gap0 = 0.5 * mu * p["dist_sq"]
    T = np.arange(1, p["T"] + 1)

    def noise(t):
        return dp_noise_level(p["S"], p["d"], p["n"], p["m"], p["eps"], np.asarray(t))

    curves = lmi_bound_curves(mu, L, p["alpha"], p["beta"], initial_distance_sq=p["dist_sq"],
                              initial_gap=gap0, noise=noise)
    if curves is None:
        return
    b_T = float(laplace_scale_at_horizon(p["T"], p["S"], p["n"], p["m"], p["eps"]))
    computed = heavy_ball_error(p["T"], p["alpha"], p["beta"], mu, L, p["d"],
                                laplace_var=2 * b_T * b_T,
                                sampling_var=sampling_variance_of_instance(p["S"], p["n"],
                                                                           p["m"]),
                                dist_sq=p["dist_sq"], initial_gap=gap0)
    for j in range(curves.rho.size):
        bound = float(curves.values(np.array([j]), T[-1:])[0])
        assert computed <= bound * (1 + 1e-7), (p, j, computed, bound)


@settings(max_examples=5, deadline=None)
@given(problems(max_T=150, max_d=1000))
def test_every_tuner_row_has_computed_at_most_bound(p):
    if not _finite(p) or p["T"] < 2:
        return
    kw = dict(d=p["d"], n=p["n"], m=p["m"], epsilon=p["eps"], sensitivity=p["S"],
              max_horizon=p["T"])
    try:
        hb = tune_heavy_ball(p["mu"], p["L"], objective="bound",
                             initial_gap=p["dist_sq"], grid=8, **kw)
        nag = tune_nesterov(p["mu"], p["L"], initial_gap=p["dist_sq"], reference_horizons=(1,),
                            **kw)
    except ValueError as e:  # only "epsilon too small for this problem" is allowed
        assert "epsilon" in str(e)
        return
    for c in (hb.tuned, hb.classical, hb.paper_section5):
        assert c.computed <= c.bound * (1 + REL), (p, c)
    for c in nag.choices:
        # (29) with Aybat et al.'s Lyapunov start V_0 <= 2 E_0 (as printed, with E_0, it fails:
        # test_theorem_4_1_as_printed_fails_at_one_step)
        assert c.computed <= _lyapunov_bound(c, p) * (1 + REL), (p, c)


def _lyapunov_bound(c, p: dict) -> float:
    """The row's (29)/(34) with one more a_{T,0} E_0 (V_0 = E_0 + mu/2 ||x_0 - x*||^2 <= 2 E_0)."""
    sched = (nesterov_schedule(1.0 / p["L"], c.horizon) if c.method == "nag"
             else masg_schedule(p["mu"], p["L"], horizon=c.horizon))
    w = error_weights(sched, p["mu"], p["L"])
    return c.bound + math.exp(w.log_a0) * p["dist_sq"]


def test_theorem_4_1_as_printed_fails_at_one_step():
    # docs/errata.md, Kuru et al. item 13: the first DP-NAG step is a gradient step; on the
    # quadratic of curvature mu it contracts F - F* by (1 - alpha mu)^2 = 0.81, not by
    # 1 - sqrt(mu alpha) = 0.684 (no noise: eps huge, d = 1); the worst case is that instance
    res = tune_nesterov(0.1, 1.0, d=1, n=10**6, epsilon=1e6, sensitivity=1e-6, initial_gap=1.0,
                        objective="bound",
                        max_horizon=1, reference_horizons=(1,), methods=("nag",))
    row = res.choices[0]
    assert row.horizon == 1
    assert row.computed == pytest.approx(0.81, rel=1e-6)       # (1 - alpha mu)^2 E_0
    assert row.bound == pytest.approx(1 - math.sqrt(0.1), rel=1e-6)  # (29) as printed
    assert row.computed > row.bound                              # the printed bound fails
    assert row.computed <= _lyapunov_bound(row, dict(mu=0.1, L=1.0, dist_sq=1.0))


def test_lmi_tuner_computed_below_bound_at_the_issue_problem():
    # issue 19's reproduction: the bound 2.69e-3 was below the computed 7.27e-3
    res = tune_heavy_ball(0.01, 1.0, objective="bound",
                          d=50, n=10**6, m=1000, epsilon=0.5, sensitivity=2.0,
                          initial_gap=10.0, max_horizon=1000, grid=3,
                          function_class="smooth_strongly_convex")
    for c in (res.tuned, res.classical, res.paper_section5):
        if math.isfinite(c.bound):
            assert c.computed <= c.bound, c
