"""Heavy ball on quadratics: rate, noise term, exact stationary error (Kuru et al. Thm 3.5).

Oracles: numpy eigenvalues of the iteration matrix, sympy, Monte Carlo of the noisy recursion.
"""

import time

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.bounds.strongly_convex.heavy_ball import (
    classical_heavy_ball_parameters,
    heavy_ball_bound_valid,
    heavy_ball_expected_error,
    heavy_ball_iteration_matrix,
    heavy_ball_noise_term,
    heavy_ball_quadratic_bound,
    heavy_ball_rate,
    heavy_ball_rate_eq26_as_printed,
    heavy_ball_stationary_error,
    heavy_ball_transient_constant,
    nesterov_quadratic_rate,
    stationary_variance_symbolic,
)


@settings(max_examples=60, deadline=None)
@given(
    alpha=st.floats(0.01, 2.5),
    beta=st.floats(0.0, 0.99),
    mu=st.floats(0.01, 1.0),
    ratio=st.floats(1.0, 50.0),
)
def test_rate_is_spectral_radius_of_iteration_matrix(alpha, beta, mu, ratio):
    L = mu * ratio
    M = heavy_ball_iteration_matrix(alpha, beta, [mu, L])
    oracle = np.max(np.abs(np.linalg.eigvals(M)))
    assert heavy_ball_rate(alpha, beta, mu, L) == pytest.approx(oracle, rel=1e-6, abs=1e-7)


@settings(max_examples=40, deadline=None)
@given(alpha=st.floats(0.01, 1.0), beta=st.floats(0.0, 0.99), mu=st.floats(0.05, 1.0))
def test_eq26_as_printed_is_nesterov_spectral_radius(alpha, beta, mu):
    # decision (sheet §11.2): printed (26) = roots of NAG's iteration matrix on a quadratic
    L = 1.0
    radii = []
    for lam in (mu, L):
        q = 1 - alpha * lam
        N = np.array([[(1 + beta) * q, -beta * q], [1.0, 0.0]])
        radii.append(np.max(np.abs(np.linalg.eigvals(N))))
    assert heavy_ball_rate_eq26_as_printed(alpha, beta, mu, L) == pytest.approx(
        max(radii), rel=1e-6, abs=1e-7)
    assert nesterov_quadratic_rate(alpha, beta, mu, L) == heavy_ball_rate_eq26_as_printed(
        alpha, beta, mu, L)


def test_paper_example_and_simulation_confirm_hb_roots():
    # sheet §11.2: mu=0.5, L=1, alpha=1, beta=0.3: 0.3873 printed vs 0.5477 for HB
    assert heavy_ball_rate_eq26_as_printed(1.0, 0.3, 0.5, 1.0) == pytest.approx(0.3873, abs=1e-4)
    assert heavy_ball_rate(1.0, 0.3, 0.5, 1.0) == pytest.approx(0.5477, abs=1e-4)
    # simulate noiseless HB on diag(0.5, 1): the observed decay matches the HB roots
    x_prev = x = np.array([1.0, 1.0])
    lam = np.array([0.5, 1.0])
    norms = []
    for _ in range(400):
        x, x_prev = x - 1.0 * lam * x + 0.3 * (x - x_prev), x
        norms.append(np.linalg.norm(x))
    observed = (norms[-1] / norms[-201]) ** (1 / 200)
    assert observed == pytest.approx(0.5477, rel=1e-2)
    assert abs(observed - 0.3873) > 0.1


def test_polyak_rate_is_sqrt_beta():
    a, b = classical_heavy_ball_parameters(0.1, 1.0)
    assert heavy_ball_rate(a, b, 0.1, 1.0) == pytest.approx(np.sqrt(b), rel=1e-6)


def test_symbolic_lyapunov_solution_equals_m_term():
    sol = stationary_variance_symbolic()
    assert sol["gap"] == 0
    a, b, lam, s2 = sp.symbols("alpha beta lam sigma2", positive=True)
    # independent check: plug into the Lyapunov equation with sympy matrices
    T = sp.Matrix([[1 + b - a * lam, -b], [1, 0]])
    S = sp.Matrix([[sol["variance"], sol["covariance"]], [sol["covariance"], sol["variance"]]])
    res = sp.simplify(T * S * T.T + sp.diag(a**2 * s2, 0) - S)
    assert res == sp.zeros(2, 2)


def test_stationary_error_vs_monte_carlo():
    rng = np.random.default_rng(20240501)
    alpha, beta, lam, sigma2 = 0.5, 0.6, np.array([0.2, 1.0]), 0.04
    chains = 20000
    x = np.zeros((chains, 2))
    x_prev = x.copy()
    for _ in range(400):  # rho ~ 0.8: 400 steps is far past the transient
        w = rng.normal(0.0, np.sqrt(sigma2), size=x.shape)
        x, x_prev = x - alpha * (lam * x + w) + beta * (x - x_prev), x
    dist = np.sum(x**2, axis=1)
    gap = 0.5 * np.sum(lam * x**2, axis=1)
    exact = heavy_ball_stationary_error(alpha, beta, lam, sigma2)
    for sample, value in ((dist, exact.distance_sq), (gap, exact.suboptimality)):
        se = sample.std(ddof=1) / np.sqrt(chains)
        assert abs(sample.mean() - value) < 5 * se
    # m(alpha, beta) is exactly the stationary distance; L*m overstates E[F-F*] by >= 2
    assert exact.m == pytest.approx(exact.distance_sq, rel=1e-14)
    assert 2.0 <= exact.looseness <= 2.0 * lam.max() / lam.min()
    se = dist.std(ddof=1) / np.sqrt(chains)
    assert abs(dist.mean() - heavy_ball_noise_term(alpha, beta, lam, sigma2)) < 5 * se


def test_trace_of_stacked_state_tends_to_2m():
    # App. B.3 claims Tr(E_t) <= m + transient; the stacked state (x_t, x_{t-1}) has trace 2m
    alpha, beta, lam, s2 = 0.5, 0.3, np.array([0.5, 1.0]), 1e-2
    M = heavy_ball_iteration_matrix(alpha, beta, lam)
    N = np.zeros((4, 4))
    N[:2, :2] = alpha**2 * s2 * np.eye(2)
    import scipy.linalg as sla

    E = sla.solve_discrete_lyapunov(M, N)
    m = heavy_ball_noise_term(alpha, beta, lam, s2)
    assert np.trace(E) == pytest.approx(2 * m, rel=1e-10)
    assert np.trace(E[:2, :2]) == pytest.approx(m, rel=1e-10)


def test_finite_time_exact_error_vs_monte_carlo_and_bounds():
    rng = np.random.default_rng(7)
    alpha, beta, lam, s2, e0 = 0.8, 0.4, np.array([0.3, 1.0]), 0.01, 1.0
    chains, t = 20000, 25
    x = np.full((chains, 2), e0)
    x_prev = x.copy()
    for _ in range(t):
        w = rng.normal(0.0, np.sqrt(s2), size=x.shape)
        x, x_prev = x - alpha * (lam * x + w) + beta * (x - x_prev), x
    dist, gap = heavy_ball_expected_error(t, alpha, beta, lam, s2, e0)
    sample = 0.5 * np.sum(lam * x**2, axis=1)
    assert abs(sample.mean() - gap) < 5 * sample.std(ddof=1) / np.sqrt(chains)
    xi0 = 2 * 2 * e0**2  # ||xi_0 - xi*||^2 with x_{-1} = x_0
    valid = heavy_ball_bound_valid(t, alpha, beta, lam, s2, xi0)
    assert gap <= valid
    # (25) as printed with the exact C_t also holds here (L = 1 <= 2)
    assert gap <= heavy_ball_quadratic_bound(t, alpha, beta, 0.3, 1.0, s2, xi0, C="exact")


def test_transient_constant_bounds_matrix_powers():
    alpha, beta, lam = 0.5, 0.7, np.array([0.1, 1.0])
    M = heavy_ball_iteration_matrix(alpha, beta, lam)
    rho = heavy_ball_rate(alpha, beta, 0.1, 1.0)
    for t in (1, 5, 30):
        Ct = heavy_ball_transient_constant(alpha, beta, lam, t)
        assert np.linalg.norm(np.linalg.matrix_power(M, t), 2) == pytest.approx(
            Ct * rho**t, rel=1e-9)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="beta"):
        heavy_ball_rate(0.5, 1.0, 0.1, 1.0)
    with pytest.raises(ValueError, match="mu"):
        heavy_ball_rate(0.5, 0.5, 2.0, 1.0)
    with pytest.raises(ValueError, match="unstable"):
        heavy_ball_stationary_error(3.0, 0.1, [1.0], 1.0)


def test_theorem_objects_match_numeric_functions():
    from dpbounds.bounds.strongly_convex.heavy_ball import stationary_error_theorem, theorem_3_5
    from dpbounds.provenance import Provenance

    alphas = np.array([0.2, 0.5, 1.0, 1.5])
    kw = dict(beta=0.3, mu=0.5, L=1.0, sigma2=1e-3, t=30, C=1.0, E0=10.0)
    for rate in ("heavy_ball", "eq26_as_printed"):
        thm = theorem_3_5(rate)
        got = thm.evaluate(alpha=alphas, **kw)
        want = [heavy_ball_quadratic_bound(30, a, 0.3, 0.5, 1.0, 1e-3, 10.0, rate=rate)
                for a in alphas]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert thm.provenance is Provenance.VERBATIM
    st_thm = stationary_error_theorem()
    assert st_thm.provenance is Provenance.DERIVED
    assert st_thm.evaluate(alpha=0.5, beta=0.3, mu=0.5, L=1.0, sigma2=1e-4) == pytest.approx(
        heavy_ball_stationary_error(0.5, 0.3, [0.5, 1.0], 1e-4).suboptimality, rel=1e-12)
    with pytest.raises(ValueError, match="rho < 1"):
        theorem_3_5().evaluate(alpha=3.9, **kw)


def test_symbolic_rate_matches_numpy():
    from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_symbolic
    from dpbounds.bounds.theorem import sym

    for rate, fn in (("heavy_ball", heavy_ball_rate),
                     ("eq26_as_printed", heavy_ball_rate_eq26_as_printed)):
        ex = heavy_ball_symbolic(rate)
        f = sp.lambdify([sym("alpha"), sym("beta"), sym("mu"), sym("L")], ex["rho"], "numpy")
        a = np.linspace(0.05, 2.0, 7)[:, None]
        b = np.linspace(0.0, 0.95, 5)[None, :]
        with np.errstate(invalid="ignore"):
            got = np.asarray(f(a, b, 0.2, 1.0), dtype=float)
        np.testing.assert_allclose(got, fn(a, b, 0.2, 1.0), rtol=1e-12)


# ----------------------------------------------------------------------------- beta = 0
# At beta = 0 heavy ball is gradient descent: each eigen-direction is the scalar AR(1)
# e_{t+1} = (1 - alpha lam) e_t - alpha w_t, with rate |1 - alpha lam| and stationary variance
# alpha^2 sigma^2 / (1 - (1 - alpha lam)^2) (closed forms written here, not taken from the module).
def _gd_oracle(alpha, mu, L, sigma2):
    lams = np.array([mu, L])
    rho = np.max(np.abs(1 - alpha * lams))
    var = alpha**2 * sigma2 / (1 - (1 - alpha * lams) ** 2)
    return rho, lams, var


@pytest.mark.parametrize("alpha", [0.1, 0.5, 1.0, 1.9])
def test_theorem_3_5_at_beta_zero_is_gradient_descent(alpha):
    # regression (issue 8.6): evaluate(beta=0) raised "beta must be > 0"; Fig. 1 has a beta = 0
    # curve and the theorem states 0 <= beta < 1
    from dpbounds.bounds.strongly_convex.heavy_ball import stationary_error_theorem, theorem_3_5

    mu, L, s2, t, C, E0 = 0.5, 1.0, 1e-3, 20, 1.0, 10.0
    rho, lams, var = _gd_oracle(alpha, mu, L, s2)
    m = np.sum(var)  # m(alpha, 0) is the stationary E||x - x*||^2
    want = (E0 + s2 * alpha**2 / (1 - rho**2)) * (C * t) ** 2 * rho ** (2 * t) + L * m
    for rate in ("heavy_ball", "eq26_as_printed"):  # the two roots agree at beta = 0
        got = theorem_3_5(rate).evaluate(alpha=alpha, beta=0.0, mu=mu, L=L, sigma2=s2, t=t,
                                          C=C, E0=E0)
        assert got == pytest.approx(want, rel=1e-12)
    got = stationary_error_theorem().evaluate(alpha=alpha, beta=0, mu=mu, L=L, sigma2=s2)
    assert got == pytest.approx(0.5 * np.sum(lams * var), rel=1e-12)
    assert heavy_ball_rate(alpha, 0.0, mu, L) == pytest.approx(rho, rel=1e-15)
    err = heavy_ball_stationary_error(alpha, 0.0, lams, s2)
    assert err.distance_sq == pytest.approx(np.sum(var), rel=1e-12)


def test_beta_zero_stationary_variance_vs_monte_carlo():
    # the AR(1) closed form itself, against simulation of the noisy gradient descent
    rng = np.random.default_rng(11)
    alpha, lams, s2, chains = 0.8, np.array([0.3, 1.0]), 0.05, 40000
    x = np.zeros((chains, 2))
    for _ in range(200):
        x = x - alpha * (lams * x + rng.normal(0.0, np.sqrt(s2), x.shape))
    err = heavy_ball_stationary_error(alpha, 0.0, lams, s2)
    dist = np.sum(x**2, axis=1)
    assert abs(dist.mean() - err.distance_sq) < 5 * dist.std(ddof=1) / np.sqrt(chains)


def test_negative_beta_still_rejected():
    from dpbounds.bounds.strongly_convex.heavy_ball import theorem_3_5

    with pytest.raises(ValueError, match="beta"):
        theorem_3_5().evaluate(alpha=0.5, beta=-0.1, mu=0.5, L=1.0, sigma2=1e-3, t=5, C=1.0,
                               E0=1.0)


# ----------------------------------------------------------------------------- extreme inputs
def test_nan_regressions_from_fuzzing():
    # each of these returned NaN before (issue 8.10); oracle: the closed forms in the comments
    a, b = classical_heavy_ball_parameters(5e-324, 1.0)  # kappa = inf: beta -> 1, not inf/inf
    assert b == 1.0 and a == pytest.approx(4.0)
    # alpha lam = 1e600 overflows: the rate is (correctly rounded) inf, not NaN
    assert heavy_ball_rate_eq26_as_printed(1e300, 0.0, 1e300, 1e300) == np.inf
    assert heavy_ball_rate(1e300, 0.0, 1e300, 1e300) == np.inf
    # unstable and noiseless: m is documented as inf where heavy ball diverges
    assert heavy_ball_noise_term(1e300, 0.0, [1e300], 0.0) == np.inf
    assert heavy_ball_noise_term(3.0, 0.0, [1.0], 0.0) == np.inf
    # large t: C_t = ||(T / rho)^t|| stays finite (was 0/0); t is an integer up to 2**53
    c = heavy_ball_transient_constant(0.5, 0.3, [0.5, 1.0], 10**12)
    assert np.isfinite(c) and c > 0
    assert heavy_ball_transient_constant(0.99999, 1e-30, [0.99999], 245) >= 0
    with pytest.raises(ValueError, match="t must be an integer"):
        heavy_ball_transient_constant(0.5, 0.3, [0.5, 1.0], 1e30)
    # the bound at a huge horizon is the noise term: t^2 rho^(2t) = 0 * inf no longer gives NaN
    big = heavy_ball_quadratic_bound(1e300, 0.5, 0.3, 0.5, 1.0, 1e-3, 10.0)
    assert big == pytest.approx(1.0 * heavy_ball_noise_term(0.5, 0.3, [0.5, 1.0], 1e-3))
    with pytest.raises(ValueError, match="t"):
        heavy_ball_quadratic_bound(np.inf, 0.5, 0.3, 0.5, 1.0, 1e-3, 10.0)
    with pytest.raises(ValueError, match="initial_error"):
        heavy_ball_expected_error(5, 0.5, 0.3, [0.5, 1.0], 1e-3, -np.inf)
    with pytest.raises(ValueError, match="not finite"):
        heavy_ball_expected_error(5, 0.5, 0.3, [1e-300, 1.0], 1e300, 1.0)
    err = heavy_ball_stationary_error(0.5, 0.3, [0.5, 1.0], 0.0)  # looseness was 0/0
    assert err.suboptimality == 0.0
    assert err.looseness == heavy_ball_stationary_error(0.5, 0.3, [0.5, 1.0], 1.0).looseness


_EXTREME = [0.0, -1.0, 1e-300, 5e-324, 1e30, 1e300, np.inf, -np.inf, np.nan]
_num = st.one_of(st.floats(1e-3, 3.0), st.floats(1e-3, 3.0), st.sampled_from(_EXTREME),
                 st.floats(allow_nan=True, allow_infinity=True))
_beta = st.one_of(st.floats(0.0, 0.99), st.sampled_from([0.0, 0.999999, 1.0, -0.0] + _EXTREME))
_int = st.one_of(st.integers(0, 300), st.sampled_from([10**6, 2**53, 10**30, 1e30, 2.5, -1,
                                                       np.nan]))
_eigs = st.one_of(_num, st.lists(_num, min_size=1, max_size=3))


def _no_nan(x):
    if isinstance(x, tuple):
        return all(_no_nan(v) for v in x)
    if hasattr(x, "distance_sq"):
        return _no_nan((x.distance_sq, x.suboptimality, x.m, x.L_times_m, x.looseness))
    return not np.any(np.isnan(np.asarray(x, dtype=float)))


def _fuzz_call(fn, names, **kw):
    t0 = time.perf_counter()
    try:
        out = fn(**kw)
    except ValueError as e:
        assert any(n in str(e) for n in names), f"{fn.__name__}: {e}"
    else:
        assert _no_nan(out), f"{fn.__name__}{kw} -> {out}"
    assert time.perf_counter() - t0 < 30


@settings(max_examples=150, deadline=None)
@given(alpha=_num, beta=_beta, mu=_num, L=_num, eig=_eigs, sigma2=_num, t=_int, e0=_num,
       C=st.one_of(st.none(), _num, st.just("exact")))
def test_fuzz_heavy_ball_functions(alpha, beta, mu, L, eig, sigma2, t, e0, C):
    # valid-looking input gives a number (never NaN); anything else a ValueError naming an input
    hb = dict(alpha=alpha, beta=beta)
    ab = ["alpha", "beta"]
    _fuzz_call(classical_heavy_ball_parameters, ["mu", "L"], mu=mu, L=L)
    for f in (heavy_ball_rate, heavy_ball_rate_eq26_as_printed, nesterov_quadratic_rate):
        _fuzz_call(f, ab + ["mu", "L"], **hb, mu=mu, L=L)
    _fuzz_call(heavy_ball_iteration_matrix, ab + ["eigenvalues"], **hb, eigenvalues=eig)
    _fuzz_call(heavy_ball_transient_constant, ab + ["eigenvalues", "t"], **hb, eigenvalues=eig,
               t=t)
    for f in (heavy_ball_noise_term, heavy_ball_stationary_error):
        _fuzz_call(f, ab + ["eigenvalues", "sigma2", "unstable", "overflow"], **hb,
                   eigenvalues=eig, sigma2=sigma2)
    _fuzz_call(heavy_ball_expected_error, ab + ["eigenvalues", "sigma2", "t", "initial_error",
                                                "unstable"],
               t=t, **hb, eigenvalues=eig, sigma2=sigma2, initial_error=e0)
    _fuzz_call(heavy_ball_quadratic_bound, ab + ["mu", "L", "sigma2", "t", "initial_state_error",
                                                 "C", "rho", "eigenvalues"],
               t=t, **hb, mu=mu, L=L, sigma2=sigma2, initial_state_error=e0, C=C)
    _fuzz_call(heavy_ball_bound_valid, ab + ["eigenvalues", "sigma2", "t", "initial_state_error",
                                            "unstable"],
               t=t, **hb, eigenvalues=eig, sigma2=sigma2, initial_state_error=e0)


@settings(max_examples=100, deadline=None)
@given(alpha=_num, beta=_beta, mu=_num, L=_num, sigma2=_num, t=_num, C=_num, E0=_num,
       S=_num, d=_int, m=_int, n=_int, eps=_num, T=_int)
def test_fuzz_heavy_ball_theorems_and_noise_levels(alpha, beta, mu, L, sigma2, t, C, E0, S, d,
                                                   m, n, eps, T):
    from dpbounds.bounds.strongly_convex.gradient_noise import (
        dp_noise_level,
        laplace_covariance_eq38_as_printed,
    )
    from dpbounds.bounds.strongly_convex.heavy_ball import stationary_error_theorem, theorem_3_5

    kw = dict(alpha=alpha, beta=beta, mu=mu, L=L, sigma2=sigma2)
    names = list(kw) + ["t", "C", "E0", "rho", "assumption", "not finite"]
    for rate in ("heavy_ball", "eq26_as_printed"):
        _fuzz_call(theorem_3_5(rate).evaluate, names, **kw, t=t, C=C, E0=E0)
    _fuzz_call(stationary_error_theorem().evaluate, names, **kw)
    _fuzz_call(laplace_covariance_eq38_as_printed, ["sensitivity", "d", "m", "eps0"],
               sensitivity=S, d=d, m=m, eps0=eps)
    _fuzz_call(dp_noise_level, ["sensitivity", "d", "n", "m", "epsilon", "T", "noise level"],
               sensitivity=S, d=d, n=n, m=m, epsilon=eps, T=T)
