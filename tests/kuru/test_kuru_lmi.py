"""Prop. 3.4 LMI for heavy ball: certificates, verification, bracketing, PEPit cross-check.

Oracles: closed-form quadratic rate (lower bound), an independent float64 assembly of (22),
a second formulation of the same SDP (cvxpy vs direct Clarabel), PEPit's exact worst case.
Kept to a handful of points so the suite stays fast.
"""

import numpy as np
import pytest

from dpbounds.bounds.heavy_ball import heavy_ball_rate
from dpbounds.lmi.heavy_ball_lmi import (
    HeavyBallLMI,
    LMICertificate,
    NoCertificate,
    assemble_lmi,
    heavy_ball_lmi_bound,
    heavy_ball_lmi_rate,
    lmi_blocks,
    verify_certificate,
)
from dpbounds.lmi.rate_map import closed_form_rate_map, lmi_rate_map

MU, L = 0.5, 1.0


@pytest.fixture(scope="module")
def cert() -> LMICertificate:
    c = heavy_ball_lmi_rate(MU, L, 0.5, 0.3)
    assert isinstance(c, LMICertificate)
    return c


def test_certificate_is_verified_independently(cert):
    assert cert.verified
    G = assemble_lmi(MU, L, 0.5, 0.3, cert.rho, cert.P, cert.c0, cert.c)
    assert np.linalg.eigvalsh(G)[0] >= -1e-9 * np.linalg.norm(G)
    assert np.linalg.eigvalsh(cert.P)[0] >= 0
    assert cert.rho_lower <= cert.rho <= cert.rho_lower + 1e-6


def test_certificate_fails_below_its_rate(cert):
    # the same (P, c0, c) does not certify a clearly smaller rate
    assert not verify_certificate(MU, L, 0.5, 0.3, cert.rho - 0.05, cert.P, cert.c0, 1.0).ok
    # and nothing certifies below the bracket: the margin problem is infeasible there
    lmi = HeavyBallLMI()
    lmi.set_point(MU, L, 0.5, 0.3)
    assert lmi.margin(cert.rho_lower - 1e-3)[0] < 0


def test_monotonicity_shift_from_the_docstring(cert):
    # feasible at rho -> feasible at rho' with c0' = c0 + c (rho'^2 - rho^2) / (2 (mu + L))
    for rho2 in (cert.rho + 0.01, 0.9, 0.99):
        c0 = cert.c0 + (rho2**2 - cert.rho**2) / (2 * (MU + L))
        assert verify_certificate(MU, L, 0.5, 0.3, rho2, cert.P, c0, 1.0).ok


def test_lmi_rate_at_least_quadratic_rate_on_small_grid():
    alphas, betas = np.array([0.3, 0.8, 1.4]), np.array([0.0, 0.3, 0.6])
    rm = lmi_rate_map(0.1, 1.0, alphas, betas, processes=1)
    cf = closed_form_rate_map(0.1, 1.0, alphas, betas).rho_closed_form
    assert np.all(rm.verified == rm.certified)
    assert np.all(rm.rho_lmi[rm.certified] >= cf[rm.certified] - 1e-9)
    assert np.all(np.isnan(rm.rho_lmi[~rm.certified]))
    # beta = 0 (gradient descent), alpha <= 1/L: the rate max(|1-a mu|, |1-a L|) is certified
    j = 0
    assert rm.rho_lmi[0, j] == pytest.approx(cf[0, j], abs=1e-5)


def test_direct_clarabel_and_cvxpy_solve_the_same_sdp():
    a = HeavyBallLMI(backend="cvxpy")
    b = HeavyBallLMI(backend="clarabel")
    for point in ((0.5, 0.3), (1.2, 0.1)):
        a.set_point(MU, L, *point)
        b.set_point(MU, L, *point)
        for rho in (0.5, 0.7, 0.9):
            assert a.margin(rho)[0] == pytest.approx(b.margin(rho)[0], abs=1e-6)


def test_no_certificate_is_a_result_not_a_number():
    res = heavy_ball_lmi_rate(0.1, 1.0, 1.9, 0.9)
    assert isinstance(res, NoCertificate)
    assert not res.certified and not hasattr(res, "rho")
    assert "no certificate below rho = 1" in str(res)
    res = heavy_ball_lmi_rate(0.1, 1.0, 2.5, 0.0)  # diverges on a quadratic: no solve needed
    assert isinstance(res, NoCertificate) and res.solves == 0


def test_sign_of_B_decision():
    # (18) prints B = [alpha; 0]: with it (17) is gradient ascent and diverges on a quadratic,
    # while B = [-alpha; 0] reproduces (16); the certificate only verifies with -alpha
    alpha, beta, lam = 0.5, 0.3, 0.7
    m_minus = lmi_blocks(MU, L, alpha, beta)
    m_plus = lmi_blocks(MU, L, alpha, beta, b_sign=+1)
    traj = {}
    for name, m in (("minus", m_minus), ("plus", m_plus)):
        xi = np.array([1.0, 1.0])
        for _ in range(60):
            xi = m["A"] @ xi + (m["B"] * lam * xi[0]).ravel()  # u = grad F(x) = lam x
        traj[name] = abs(xi[0])
    # (16): x+ = x - alpha lam x + beta (x - x_prev): converges
    x = xp = 1.0
    for _ in range(60):
        x, xp = x - alpha * lam * x + beta * (x - xp), x
    assert traj["minus"] == pytest.approx(abs(x), rel=1e-9, abs=1e-300)
    assert traj["plus"] > 1e3
    c = heavy_ball_lmi_rate(MU, L, alpha, beta)
    G_plus = assemble_lmi(MU, L, alpha, beta, c.rho, c.P, c.c0, 1.0, b_sign=+1)
    assert np.linalg.eigvalsh(G_plus)[0] < -1e-3


def test_derived_bound_holds_on_a_noisy_quadratic(cert):
    # E[F(x_t)] - F* of DP-SHB with Gaussian noise on F = 0.5 (0.5 x1^2 + x2^2), Monte Carlo
    rng = np.random.default_rng(3)
    lam, s2, chains, t = np.array([0.5, 1.0]), 1e-3, 20000, 20
    x = np.full((chains, 2), 1.0)
    xp = x.copy()
    for _ in range(t):
        x, xp = x - 0.5 * (lam * x + rng.normal(0, np.sqrt(s2), x.shape)) + 0.3 * (x - xp), x
    sample = 0.5 * np.sum(lam * x**2, axis=1)
    bound = heavy_ball_lmi_bound(cert, t, initial_distance_sq=2.0, initial_gap=0.75,
                                 noise_second_moment=2 * s2)
    assert sample.mean() + 5 * sample.std(ddof=1) / np.sqrt(chains) <= bound


@pytest.mark.xcheck
@pytest.mark.parametrize("alpha,beta", [(0.5, 0.3), (1.0, 0.2), (0.3, 0.6)])
def test_lmi_rate_vs_pepit_worst_case(alpha, beta):
    pytest.importorskip("PEPit")
    from PEPit import PEP
    from PEPit.functions import SmoothStronglyConvexFunction

    c = heavy_ball_lmi_rate(MU, L, alpha, beta)
    s = np.trace(c.P) + c.c  # V is homogeneous: normalise for the SDP solver
    P, cc = c.P / s, c.c / s
    pep = PEP()
    f = pep.declare_function(SmoothStronglyConvexFunction, mu=MU, L=L)
    xs = f.stationary_point()
    fs = f(xs)
    x0, xm1 = pep.set_initial_point(), pep.set_initial_point()
    g0, f0 = f.oracle(x0)
    x1 = x0 - alpha * g0 + beta * (x0 - xm1)
    f1 = f(x1)

    def V(a, b, fa):
        return P[0, 0] * (a - xs) ** 2 + 2 * P[0, 1] * (a - xs) * (b - xs) \
            + P[1, 1] * (b - xs) ** 2 + cc * (fa - fs)

    pep.set_initial_condition(V(x0, xm1, f0) <= 1)
    pep.set_performance_metric(V(x1, x0, f1))
    tau = pep.solve(verbose=0)
    # exact one-step worst case of the certified Lyapunov function: <= rho^2 (LMI is sufficient)
    assert tau <= c.rho**2 * (1 + 1e-4) + 1e-7
    assert tau >= heavy_ball_rate(alpha, beta, MU, L) ** 2 * (1 - 1e-4) - 1e-7


def test_scale_invariance_of_the_lmi_rate():
    # (mu, L, alpha) -> (mu/L, 1, alpha L) with (P, c0, c) -> (P, c0 L^2, c L): same rate
    base = heavy_ball_lmi_rate(0.05, 1.0, 0.7, 0.4)
    for L_ in (100.0, 0.01):
        c = heavy_ball_lmi_rate(0.05 * L_, L_, 0.7 / L_, 0.4)
        assert c.verified and c.rho == pytest.approx(base.rho, abs=1e-9)
        np.testing.assert_allclose(c.P / L_, base.P, rtol=1e-9)  # c = 1: P scales with L
