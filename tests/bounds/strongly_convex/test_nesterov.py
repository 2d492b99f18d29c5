"""DP-NAG / DP-MASG bounds (Thm 4.1, 4.3, schedule (33)) and noise allocation (Prop 4.2, (30)).

Oracles: direct products for a_{T,t}, scipy's SLSQP on (30), the privacy module's eq. (11),
Monte Carlo of DP-NAG with Laplace noise, exact covariance propagation.
"""

import importlib
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbounds.bounds.strongly_convex.nesterov import (
    error_weights,
    masg_schedule,
    nesterov_expected_error_quadratic,
    nesterov_recursion,
    nesterov_schedule,
    unrolled_bound,
)
from dpbounds.bounds.strongly_convex.noise_allocation import (
    check_allocation_privacy,
    laplace_scale_eq27_as_printed,
    optimal_noise,
    optimal_noise_closed_form,
    select_horizon,
    uniform_noise,
)
from dpbounds.privacy.laplace import per_step_epsilon, subsampled_laplace_epsilon


def test_weights_match_direct_products():
    mu, L = 1.0, 20.0
    sched = masg_schedule(mu, L, horizon=60, c=1.0, first_stage_length=5)
    w = error_weights(sched, mu, L)
    T = sched.horizon
    q = 1 - np.sqrt(mu * sched.steps)
    for t in (1, 5, 6, 30, 60):
        a = sched.steps[t - 1]
        direct = 2.0 ** (sched.stages[-1] - sched.stages[t - 1]) * np.prod(q[t:T]) * a * (1 + a * L)
        assert math.exp(w.log_a[t - 1]) == pytest.approx(direct, rel=1e-12)
    assert w.a0 == pytest.approx(2.0 ** (sched.stages[-1] - 1) * np.prod(q), rel=1e-12)


def test_recursion_equals_unrolled_form():
    mu, L, d = 1.0, 20.0, 3
    for sched in (nesterov_schedule(0.04, 80), masg_schedule(mu, L, stages=3)):
        b = np.linspace(0.1, 0.01, sched.horizon)
        rec = nesterov_recursion(sched, mu, L, 5.0, b, d, subsampling_var=0.2)
        unr = unrolled_bound(error_weights(sched, mu, L), 5.0, b, d, subsampling_var=0.2)
        assert rec[-1] == pytest.approx(unr, rel=1e-12)


def test_stage_one_length_decision():
    # Fig. 2 script: floor -> T = 53, 133, 293, 613; DP_NAG_LR.m / default: ceil (n1 = 14)
    floor = [masg_schedule(1.0, 20.0, stages=K, first_stage_rounding="floor") for K in (2, 3, 4, 5)]
    assert [s.horizon for s in floor] == [53, 133, 293, 613]
    ceil = masg_schedule(1.0, 20.0, stages=2)
    assert ceil.stage_lengths == (14, 40)
    # (33) only asks n1 >= 1: the bound (34) holds for both choices (exact DP-NAG error)
    lam = np.array([1.0, 20.0])
    for sched in (floor[1], masg_schedule(1.0, 20.0, stages=3)):
        b = np.full(sched.horizon, 0.05)
        exact = nesterov_expected_error_quadratic(sched, 1.0, lam, 2 * b**2, [1.0, 1.0])
        E0 = exact[0] + 0.5 * 1.0 * 2.0  # V_0 = F gap + mu/2 ||x0 - x*||^2
        bound = nesterov_recursion(sched, 1.0, 20.0, E0, b, 2)
        assert np.all(exact <= bound * (1 + 1e-12))


def test_theorem41_recursion_bounds_simulated_dp_nag():
    rng = np.random.default_rng(11)
    mu, L, d, T, chains = 1.0, 10.0, 2, 60, 20000
    lam = np.array([mu, L])
    alpha = 1.0 / L
    beta = (1 - math.sqrt(alpha * mu)) / (1 + math.sqrt(alpha * mu))
    b = np.full(T, 0.05)
    x = np.full((chains, d), 1.0)
    xp = x.copy()
    gaps = [0.5 * np.sum(lam * x**2, axis=1)]
    for t in range(T):
        z = (1 + beta) * x - beta * xp
        eta = rng.laplace(0.0, b[t], size=x.shape)  # scale b (variance 2 b^2)
        x, xp = z - alpha * (lam * z + eta), x
        gaps.append(0.5 * np.sum(lam * x**2, axis=1))
    gaps = np.array(gaps)
    mean = gaps.mean(axis=1)
    se = gaps.std(axis=1, ddof=1) / math.sqrt(chains)
    exact = nesterov_expected_error_quadratic(nesterov_schedule(alpha, T), mu, lam, 2 * b**2,
                                              [1.0, 1.0])
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-15)
    bound = nesterov_recursion(nesterov_schedule(alpha, T), mu, L, exact[0], b, d)
    assert np.all(mean - 5 * se <= bound)
    assert np.all(exact <= bound)


def test_factor_in_a_Tt_decision():
    # paper alpha(1+alpha L) vs reference code (alpha/2)(1+alpha L): the noise input of Aybat
    # et al.'s term alpha(1+alpha L) sigma^2/2 is E||eta||^2 = 2 b^2 d for Laplace(b)
    rng = np.random.default_rng(5)
    b, d = 0.3, 4
    eta = rng.laplace(0.0, b, size=(400000, d))
    second = np.mean(np.sum(eta**2, axis=1))
    assert second == pytest.approx(2 * b * b * d, rel=1e-2)
    sched = nesterov_schedule(0.05, 50)
    paper = error_weights(sched, 1.0, 20.0)
    code = error_weights(sched, 1.0, 20.0, convention="reference_code")
    np.testing.assert_allclose(paper.a, 2 * code.a, rtol=1e-13)
    assert code.a0 == pytest.approx(2 * paper.a0)  # 2^{s_T} instead of 2^{s_T - s_0}
    # the normalised allocation (31) does not see the factor; the horizon score (32) does
    e_p = optimal_noise_closed_form(paper, 1.0, 100, 1.0).epsilons
    e_c = optimal_noise_closed_form(code, 1.0, 100, 1.0).epsilons
    np.testing.assert_allclose(e_p, e_c, rtol=1e-12)
    kw = dict(initial_error=10.0, d=20, sensitivity=40.0, n=10**5, epsilon=1.0, max_horizon=2000)
    hp = select_horizon(0.02, 5.1, **kw)
    hc = select_horizon(0.02, 5.1, convention="reference_code", **kw)
    assert hc.horizon >= hp.horizon


def test_prop42_vs_scipy_constrained_optimiser():
    rng = np.random.default_rng(0)
    T, S, n, eps = 12, 2.0, 500, 0.7
    a = rng.uniform(0.1, 3.0, size=T)
    cf = optimal_noise_closed_form(a, S, n, eps)

    def obj(b):
        return float(np.sum(a * b * b))

    cons = {"type": "eq", "fun": lambda b: np.sum(S / (n * b)) / eps - 1.0}
    b0 = np.full(T, S * T / (n * eps))
    res = minimize(obj, b0, constraints=[cons], method="SLSQP", bounds=[(1e-6, None)] * T,
                   options={"ftol": 1e-16, "maxiter": 1000})
    assert res.success
    assert cf.value == pytest.approx(res.fun, rel=1e-6)
    np.testing.assert_allclose(cf.scales, res.x, rtol=1e-4)
    assert cf.value <= res.fun * (1 + 1e-9)  # the closed form is the optimum


def test_numeric_solver_agrees_with_closed_form_when_m_equals_n():
    w = error_weights(masg_schedule(1.0, 20.0, stages=3), 1.0, 20.0)
    cf = optimal_noise_closed_form(w, 10.0, 10**5, 1.0)
    num = optimal_noise(w, 10.0, 10**5, 10**5, 1.0)
    assert num.value == pytest.approx(cf.value, rel=1e-10)
    np.testing.assert_allclose(num.epsilons, cf.epsilons, rtol=1e-9)


def test_subsampled_allocation_vs_scipy_and_privacy():
    rng = np.random.default_rng(1)
    T, S, n, m, eps = 10, 40.0, 10**5, 10**3, 1.0
    a = rng.uniform(0.2, 2.0, size=T)
    num = optimal_noise(a, S, n, m, eps)

    def b_of(e):
        return S / (m * np.log1p(n / m * np.expm1(e)))

    res = minimize(lambda e: float(np.sum(a * b_of(e) ** 2)), np.full(T, eps / T),
                   constraints=[{"type": "eq", "fun": lambda e: np.sum(e) / eps - 1.0}],
                   method="SLSQP", bounds=[(1e-9, eps)] * T,
                   options={"ftol": 1e-16, "maxiter": 1000})
    assert num.value == pytest.approx(res.fun, rel=1e-6)
    assert num.value <= res.fun * (1 + 1e-9)
    # privacy never overshot: eq. (11) from the privacy module, summed (basic composition)
    assert check_allocation_privacy(num, S, n, m) <= eps
    assert check_allocation_privacy(num, S, n, m) == pytest.approx(eps, rel=1e-9)
    # and it beats the uniform budget
    assert num.value <= uniform_noise(a, S, n, m, eps).value


def test_long_horizon_log_space():
    w = error_weights(nesterov_schedule(1e-3, 10**7), 1.0, 20.0)
    assert np.all(np.isfinite(w.log_a)) and w.a[0] == 0.0  # underflows in linear space only
    cf = optimal_noise_closed_form(w, 40.0, 10**5, 1.0)
    assert np.isfinite(cf.value) and np.all(np.isfinite(cf.log_scales))
    assert cf.total_epsilon <= 1.0
    h = select_horizon(0.02, 5.1, initial_error=10.0, d=20, sensitivity=40.0, n=10**5,
                       epsilon=1.0, max_horizon=10**7, c=0.1)
    assert np.all(np.isfinite(h.bounds)) and 1 <= h.horizon < 10**7


def test_horizon_selection_matches_brute_force():
    kw = dict(initial_error=10.0, d=20, sensitivity=40.0, n=10**5, epsilon=1.0)
    for method in ("nag", "masg"):
        h = select_horizon(0.02, 5.1, max_horizon=300, method=method, **kw)
        for T in (1, 17, 150, 300):
            sched = (nesterov_schedule(1 / 5.1, T) if method == "nag"
                     else masg_schedule(0.02, 5.1, horizon=T))
            w = error_weights(sched, 0.02, 5.1)
            al = optimal_noise_closed_form(w, 40.0, 10**5, 1.0)
            direct = unrolled_bound(w, 10.0, None, 20, log_scales=al.log_scales)
            assert h.bounds[T - 1] == pytest.approx(direct, rel=1e-9)
        assert h.bound == pytest.approx(h.bounds.min())


def test_m_vs_n_in_laplace_scale_decision():
    # (27) prints b = S/(n eps0); (12) prints b = S/(m eps0). Only (12) is eps/T-DP per step.
    S, eps, T, n, m = 40.0, 1.0, 100, 10**5, 10**3
    b27 = laplace_scale_eq27_as_printed(S, eps, T, n, m)
    b12 = S / (m * per_step_epsilon(eps, T, n, m))
    assert subsampled_laplace_epsilon(S, b12, n, m) == pytest.approx(eps / T, rel=1e-12)
    assert subsampled_laplace_epsilon(S, b27, n, m) > 5 * eps / T  # privacy overshot
    assert b27 == pytest.approx(b12 * m / n)
    # they coincide for m = n
    assert laplace_scale_eq27_as_printed(S, eps, T, n, n) == pytest.approx(
        S / (n * per_step_epsilon(eps, T, n, n)))


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(1, 40),
    n=st.integers(10, 10**6),
    frac=st.floats(0.001, 1.0),
    eps=st.floats(1e-3, 20.0),
    seed=st.integers(0, 2**16),
)
def test_allocation_never_overshoots_privacy(T, n, frac, eps, seed):
    m = max(1, int(frac * n))
    a = np.random.default_rng(seed).uniform(1e-3, 1.0, size=T)
    al = optimal_noise(a, 3.0, n, m, eps)
    spent = check_allocation_privacy(al, 3.0, n, m)
    assert spent <= eps
    assert spent == pytest.approx(eps, rel=1e-8)
    if m == n:
        assert al.value == pytest.approx(optimal_noise_closed_form(a, 3.0, n, eps).value,
                                         rel=1e-9)


def test_numeric_solver_long_horizon_with_subsampling():
    w = error_weights(nesterov_schedule(1e-3, 10**5), 1.0, 20.0)
    al = optimal_noise(w, 40.0, 10**5, 10**3, 1.0)
    assert np.all(np.isfinite(al.log_scales)) and np.isfinite(al.value)
    assert al.total_epsilon <= 1.0
    assert al.value <= uniform_noise(w, 40.0, 10**5, 10**3, 1.0).value
    # more budget to later iterations (a_{T,t} increases in t)
    assert np.all(np.diff(al.epsilons) >= 0)


def test_subsampled_horizon_selection():
    from dpbounds.bounds.strongly_convex.noise_allocation import select_horizon_subsampled

    kw = dict(initial_error=10.0, d=20, sensitivity=40.0, n=10**5, epsilon=1.0, max_horizon=200)
    # with m = n it reproduces Remark 4.1's closed-form curve where evaluated
    h_n = select_horizon_subsampled(0.02, 5.1, m=10**5, **kw)
    h_cf = select_horizon(0.02, 5.1, **kw)
    done = ~np.isnan(h_n.bounds)
    np.testing.assert_allclose(h_n.bounds[done], h_cf.bounds[done], rtol=1e-9)
    assert h_n.horizon == h_cf.horizon
    # with m < n: the chosen horizon's value is the optimum of (30) plus the subsampling term
    h = select_horizon_subsampled(0.02, 5.1, m=10**3, **kw)
    w = error_weights(nesterov_schedule(1 / 5.1, h.horizon), 0.02, 5.1)
    al = optimal_noise(w, 40.0, 10**5, 10**3, 1.0)
    s2 = 40.0**2 / 4 / 10**3 * (10**5 - 10**3) / (10**5 - 1)
    direct = unrolled_bound(w, 10.0, None, 20, subsampling_var=s2, log_scales=al.log_scales)
    assert h.bound == pytest.approx(direct, rel=1e-9)
    assert h.bound <= np.nanmin(h.bounds) * (1 + 1e-12)


def test_remark_4_2_heuristic_is_feasible_and_near_optimal():
    from dpbounds.bounds.strongly_convex.noise_allocation import remark_4_2_allocation

    w = error_weights(nesterov_schedule(1 / 5.1, 300), 0.02, 5.1)
    opt = optimal_noise(w, 40.0, 10**5, 10**3, 1.0)
    heu = remark_4_2_allocation(w, 40.0, 10**5, 10**3, 1.0)
    assert check_allocation_privacy(heu, 40.0, 10**5, 10**3) <= 1.0
    assert opt.value <= heu.value <= 1.05 * opt.value


# ----------------------------------------------------------------------------- fast and exact
def _naive_kuru_eq32(mu, L, *, first_stage, steps, E0, d, S, n, eps, method="masg", c=1.0):
    """The O(T^2) loop dpbounds.algorithms.momentum used before (the oracle of the O(T) search)."""
    sched = (masg_schedule(mu, L, horizon=steps, c=c, first_stage_length=first_stage)
             if method == "masg" else nesterov_schedule(c / L, steps))
    best, best_val = 1, math.inf
    for Tp in range(1, steps + 1):
        wt = error_weights(sched.truncated(Tp), mu, L)
        val = wt.a0 * E0 + d * S**2 / (n * eps) ** 2 * float(np.sum(np.cbrt(wt.a))) ** 3
        if val < best_val:
            best, best_val = Tp, val
    return best, best_val


@pytest.mark.parametrize(("mu", "L", "method", "first_stage", "c", "convention"), [
    (0.02, 5.1, "nag", None, 1.0, "paper"),
    (0.02, 5.1, "masg", None, 1.0, "paper"),
    (0.02, 5.1, "masg", 7, 0.5, "paper"),
    (1.0, 20.0, "masg", 1, 1.0, "reference_code"),
    (1e-3, 1.0, "nag", None, 0.1, "reference_code"),
    (1.0, 1.0, "nag", None, 1.0, "paper"),     # mu alpha = 1: every factor 1 - sqrt(mu a) = 0
    (1.0, 1.0, "masg", 3, 1.0, "paper"),       # zero factors in the first stage only
])
def test_prefix_sum_horizon_search_equals_the_direct_sum_at_every_horizon(
        mu, L, method, first_stage, c, convention):
    from dpbounds.bounds.strongly_convex.noise_allocation import naive_select_horizon

    kw = dict(initial_error=10.0, d=20, sensitivity=40.0, n=10**5, epsilon=1.0,
              max_horizon=400, method=method, c=c, convention=convention,
              first_stage_length=first_stage)
    fast = select_horizon(mu, L, **kw)
    T_naive, naive = naive_select_horizon(mu, L, **kw)
    np.testing.assert_allclose(fast.bounds, naive, rtol=1e-10)
    assert fast.horizon == T_naive or naive[fast.horizon - 1] == pytest.approx(naive.min(),
                                                                                rel=1e-13)


def test_kuru_masg_horizon_reselection_uses_the_shared_search():
    """dp_masg_opt with a first-stage override: the horizon of the old O(T^2) loop, now from
    bounds.noise_allocation.select_horizon (one implementation)."""
    from dpbounds.algorithms.momentum import _horizon
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression

    A, y = kuru_synthetic(n=2000, d=5, seed=0)
    f = LogisticRegression.kuru(A, y, lam=0.01, l1_radius=5.0)
    for first_stage, c in ((None, 1.0), (4, 1.0), (11, 0.5)):
        got = _horizon(f, method="masg", rule="eq32", epsilon=1.0, m=f.n,
                       sensitivity=f.l1_sensitivity, steps=300, initial_error=10.0, c=c,
                       first_stage=first_stage)
        want, _ = _naive_kuru_eq32(f.strong_convexity, f.smoothness, first_stage=first_stage,
                                   steps=300, E0=10.0, d=f.d, S=f.l1_sensitivity, n=f.n,
                                   eps=1.0, c=c)
        assert got == want


def test_final_error_by_stages_equals_the_step_by_step_propagation():
    from dpbounds.bounds.strongly_convex.nesterov import nesterov_final_error_quadratic

    rng = np.random.default_rng(3)
    for mu, L in ((0.02, 5.1), (1.0, 1.0), (1e-3, 1.0)):
        for sched in (nesterov_schedule(1 / L, 300), nesterov_schedule(0.3 / L, 57),
                      masg_schedule(mu, L, horizon=700), masg_schedule(mu, L, horizon=1)):
            lam = np.array([mu, L, (mu + L) / 2])
            var = rng.uniform(0, 2, sched.horizon)
            e0 = rng.uniform(0.1, 2, 3)
            for restart in (False, True):
                loop = nesterov_expected_error_quadratic(sched, mu, lam, var, e0,
                                                         restart=restart)[-1]
                fast = nesterov_final_error_quadratic(sched, mu, lam, var, e0, restart=restart)
                assert fast == pytest.approx(loop, rel=1e-9)


def test_zero_weights_get_no_budget_and_the_bound_stays_finite():
    """mu = L, alpha = 1/L: a_{T,t} = 0 for t < T. The allocation gives those steps no budget
    (infinite scale) and the whole budget to the last step: value = a_T (S/(n eps))^2."""
    L = 2.0
    w = error_weights(nesterov_schedule(1 / L, 10), L, L)
    assert np.all(np.isneginf(w.log_a[:-1])) and w.a0 == 0.0
    al = optimal_noise_closed_form(w, 1.0, 1000, 1.0)
    assert np.all(al.epsilons[:-1] == 0) and np.all(np.isinf(al.log_scales[:-1]))
    assert al.value == pytest.approx((2 / L) * (1.0 / 1000) ** 2, rel=1e-12)
    assert al.total_epsilon <= 1.0
    num = optimal_noise(w, 1.0, 1000, 100, 1.0)
    assert np.isfinite(num.value) and num.total_epsilon <= 1.0
    assert np.isfinite(unrolled_bound(w, 10.0, None, 5, log_scales=al.log_scales))


@pytest.mark.parametrize(("call", "match"), [
    (lambda: masg_schedule(5e-324, 1.0, horizon=10), "L/mu"),
    (lambda: masg_schedule(0.1, 1.0, horizon=1e30), "horizon"),
    (lambda: masg_schedule(0.1, 1.0, horizon=10, p=math.inf), "p must be finite"),
    (lambda: nesterov_schedule(0.1, 1e30), "T must be an integer"),
    (lambda: nesterov_recursion(nesterov_schedule(0.1, 5), math.nan, 1.0, 1.0, 1.0, 2),
     "mu must be finite"),
    (lambda: nesterov_expected_error_quadratic(nesterov_schedule(0.1, 5), 0.1, 1.0, 1.0,
                                               math.inf), "initial_error must be finite"),
    (lambda: nesterov_expected_error_quadratic(nesterov_schedule(0.1, 50), 0.1, 1e30, 1.0,
                                               1.0), "diverges"),
    (lambda: laplace_scale_eq27_as_printed(1.0, 5e-324, 10, 100, 10), "too small"),
    (lambda: laplace_scale_eq27_as_printed(math.nan, 1.0, 10, 100, 10), "sensitivity"),
    (lambda: importlib.import_module("dpbounds.bounds.strongly_convex.gradient_noise")
     .subsampling_variance(1e300, 100, 10), "too large"),
    (lambda: __import__("dpbounds.tuning").tuning.heavy_ball_dp_bound(
        0.3, 0.8, 0.02, 5.1, d=math.nan, n=100, epsilon=1.0, sensitivity=1.0,
        initial_distance_sq=1.0, max_horizon=10), "d must be an integer"),
])
def test_extreme_inputs_raise_a_value_error_not_nan_or_overflow(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_no_subsampling_variance_without_subsampling_even_for_huge_sensitivity():
    from dpbounds.bounds.strongly_convex.gradient_noise import subsampling_variance

    assert subsampling_variance(1e300, 100, 100) == 0.0  # was inf * 0 = nan
    assert subsampling_variance(2.0, 101, 1) == pytest.approx(1.0)  # S^2/(4m) (n-m)/(n-1)


def test_optimal_noise_with_a_huge_population():
    """n = 1e15 (n/m = 1e12, the privacy layer's MAX_COUNT): the log-space solver stays finite
    and never overshoots; beyond the documented limit n is refused by name."""
    w = error_weights(nesterov_schedule(0.5, 20), 0.1, 1.0)
    al = optimal_noise(w, 1.0, 10**15, 1000, 1.0)
    assert np.isfinite(al.value) and al.total_epsilon <= 1.0
    with pytest.raises(ValueError, match="n must be an integer"):
        optimal_noise(w, 1.0, 10**300, 1000, 1.0)
