"""One test per paper inconsistency / reference-code defect not covered elsewhere.

Covered in the other files: sign of B (tests/lmi/test_heavy_ball_lmi.py), roots of (26)
(test_heavy_ball.py), m vs n in the Laplace scale, factor in a_{T,t}, stage-1 length
(test_nesterov.py).
"""

import numpy as np
import pytest

from dpbounds.bounds.strongly_convex.gradient_noise import (
    dp_noise_level,
    laplace_covariance_eq38_as_printed,
)
from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_quadratic_bound, heavy_ball_rate
from dpbounds.privacy.laplace import per_step_epsilon
from dpbounds.settings import heavy_ball_quadratic as figure1_setup


def test_laplace_covariance_factor_two():
    # Laplace(scale b) has variance 2 b^2: (20) is right, (38) halves the trace
    rng = np.random.default_rng(2)
    S, d, n, m, eps, T = 40.0, 5, 10**5, 10**3, 1.0, 50
    eps0 = per_step_epsilon(eps, T, n, m)
    b = S / (m * eps0)
    eta = rng.laplace(0.0, b, size=(200000, d))
    trace = np.mean(np.sum(eta**2, axis=1))
    se = np.std(np.sum(eta**2, axis=1), ddof=1) / np.sqrt(eta.shape[0])
    true_trace = 2 * d * b * b
    assert abs(trace - true_trace) < 5 * se
    e20 = dp_noise_level(S, d, n, m, eps, T)
    sigma_s2 = S**2 / 4 / m * (n - m) / (n - 1)
    assert e20 == pytest.approx(sigma_s2 + true_trace, rel=1e-12)
    printed = laplace_covariance_eq38_as_printed(S, d, m, eps0)
    assert printed == pytest.approx(true_trace / 2, rel=1e-12)
    assert trace - 5 * se > printed  # (38) underestimates the simulated noise


def test_figure1_mu_decision():
    # text mu = 0.5, script mu = 0.1; dpbounds follows the text, the script's value on request
    paper, code = figure1_setup("paper"), figure1_setup("reference_code")
    assert (paper["mu"], code["mu"]) == (0.5, 0.1)
    assert paper["L"] == code["L"] == 1.0
    # the script's "beta_opt" is Nesterov's formula, not the rate-minimising beta
    for setup in (paper, code):
        mu, L = setup["mu"], setup["L"]
        for alpha in setup["alphas"]:
            beta_script = (1 - np.sqrt(alpha * mu)) / (1 + np.sqrt(alpha * mu))
            grid = np.linspace(0, 0.99, 991)
            rates = heavy_ball_rate(alpha, grid, mu, L)
            assert heavy_ball_rate(alpha, beta_script, mu, L) > rates.min() + 1e-3
    with pytest.raises(ValueError, match="source"):
        figure1_setup("matlab")


def test_figure1_bound_matches_reference_code_formula():
    # error_HB_quad.m: E = V (C T)^2 rho^(2T) + L m with V = E0 + c_w alpha^2 / (1 - rho^2),
    # c_w = (C_n T)^2 and rho from (26) as printed
    setup = figure1_setup("reference_code")
    mu, L, alpha, beta, Cn, T = setup["mu"], setup["L"], 0.5, 0.3, 1e-2, 40
    sigma2 = (Cn * T) ** 2
    from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate_eq26_as_printed

    rho = heavy_ball_rate_eq26_as_printed(alpha, beta, mu, L)
    eig = np.array([mu, L])
    m = (sigma2 / 2) * 2 * alpha * (1 + beta) / (1 - beta) * np.sum(
        1 / (eig * (2 + 2 * beta - alpha * eig)))
    code = (10 + sigma2 * alpha**2 / (1 - rho**2)) * T**2 * rho ** (2 * T) + L * m
    ours = heavy_ball_quadratic_bound(T, alpha, beta, mu, L, sigma2, 10.0, rate="eq26_as_printed")
    assert ours == pytest.approx(code, rel=1e-12)


def test_figure1_choice_Ct_equals_t_fails_at_t0():
    # Fig. 1 uses C_t = t "for simplicity"; at t = 0 that makes (25) read E[F(x_0)] - F* <= L m,
    # false for any start away from x*. The exact C_t (>= 1) repairs it.
    from dpbounds.bounds.strongly_convex.heavy_ball import (
        heavy_ball_bound_valid,
        heavy_ball_expected_error,
    )

    e0 = np.sqrt(10 / 4)  # ||xi_0 - xi*||^2 = 10 with x_{-1} = x_0
    exact0 = heavy_ball_expected_error(0, 0.5, 0.3, [0.5, 1.0], 0.0, e0)[1]
    assert exact0 > heavy_ball_quadratic_bound(0, 0.5, 0.3, 0.5, 1.0, 0.0, 10.0)
    assert exact0 <= heavy_ball_quadratic_bound(0, 0.5, 0.3, 0.5, 1.0, 0.0, 10.0, C="exact")
    for t in (0, 1, 5, 50):
        exact = heavy_ball_expected_error(t, 0.5, 0.3, [0.5, 1.0], 0.0, e0)[1]
        assert exact <= heavy_ball_bound_valid(t, 0.5, 0.3, [0.5, 1.0], 0.0, 10.0)
