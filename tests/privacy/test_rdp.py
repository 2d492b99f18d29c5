"""RDP: Gaussian, Poisson-subsampled Gaussian, conversions, DP-SGD noise calibration.

Oracles: dp_accounting's RDP functions and RdpAccountant / PLDAccountant, prv_accountant's
certified (lower, upper) epsilon bracket, mpmath quadrature of the Rényi divergence of the
sampled Gaussian, and Abadi et al. 2016's published eps ~ 1.26 (q = 0.01, sigma = 4,
T = 10,000, delta = 1e-5).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.privacy import rdp
from dpbounds.privacy.calibrate import epsilon_for_noise_multiplier, noise_multiplier_for_epsilon

INT_ORDERS = rdp.DEFAULT_ORDERS[rdp.DEFAULT_ORDERS == np.round(rdp.DEFAULT_ORDERS)]


@pytest.mark.parametrize("q,z", [(0.01, 4.0), (0.001, 0.8), (0.1, 1.0), (0.5, 10.0),
                                 (0.02, 0.5), (1e-5, 3.0)])
def test_poisson_rdp_integer_orders_match_dp_accounting(q, z):
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    ours = rdp.poisson_subsampled_gaussian_rdp(q, z, INT_ORDERS)
    theirs = ref._compute_rdp_poisson_subsampled_gaussian(q, z, INT_ORDERS)
    finite = np.isfinite(theirs)
    # dp_accounting loses ~1e-16 absolute to cancellation at tiny RDP (ours is exact, see mpmath)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-9, atol=1e-16)


@pytest.mark.parametrize("q,z,alpha", [(1e-5, 3.0, 2), (1e-5, 3.0, 100), (0.3, 0.7, 40),
                                       (0.01, 20.0, 4096)])
def test_poisson_rdp_integer_orders_match_mpmath(q, z, alpha):
    mp.mp.dps = 60
    qm = mp.mpf(q)
    A = mp.fsum(mp.binomial(alpha, k) * qm**k * (1 - qm) ** (alpha - k)
                * mp.e ** (mp.mpf(k * k - k) / (2 * mp.mpf(z) ** 2)) for k in range(alpha + 1))
    ref = float(mp.log(A) / (alpha - 1))
    assert rdp.poisson_subsampled_gaussian_rdp(q, z, [float(alpha)])[0] == pytest.approx(
        ref, rel=1e-12)


@pytest.mark.parametrize("q,z,alpha", [(0.01, 4.0, 1.1), (0.01, 4.0, 1.5), (0.05, 1.0, 2.5),
                                       (0.2, 2.0, 7.5)])
def test_poisson_rdp_fractional_orders_match_mpmath(q, z, alpha):
    mp.mp.dps = 30
    qm, zm, am = mp.mpf(q), mp.mpf(z), mp.mpf(alpha)

    def f(x):
        return mp.npdf(x, 0, zm) * ((1 - qm) + qm * mp.e ** ((2 * x - 1) / (2 * zm**2))) ** am

    ref = float(mp.log(mp.quad(f, [-mp.inf, 0, 1, alpha, mp.inf])) / (am - 1))
    ours = rdp.poisson_subsampled_gaussian_rdp(q, z, [alpha])[0]
    # quadrature rounded up by its error estimate: never below the truth, within 1e-5
    assert ref * (1 - 1e-12) <= ours <= ref * (1 + 1e-5)
    # dp_accounting's fractional-order series is an upper bound (up to ~10% loose here)
    from dp_accounting.rdp import rdp_privacy_accountant as ref_lib

    theirs = ref_lib._compute_rdp_poisson_subsampled_gaussian(q, z, [alpha])[0]
    if np.isfinite(theirs):
        assert ours <= theirs * (1 + 1e-9)


def test_gaussian_rdp_and_full_batch():
    o = np.array([1.5, 2.0, 32.0])
    np.testing.assert_allclose(rdp.gaussian_rdp(2.0, o, 3.0), o * 9 / 8)
    np.testing.assert_allclose(rdp.poisson_subsampled_gaussian_rdp(1.0, 2.0, o), o / 8)


def test_abadi_published_number():
    # Abadi et al. 2016, Sec 3.1: eps ~ 1.26 with the moments accountant
    eps = epsilon_for_noise_multiplier(4.0, 1e-5, 0.01, 10_000, method="mironov",
                                           orders=np.arange(2, 65.0))
    assert eps == pytest.approx(1.26, abs=0.005)
    assert epsilon_for_noise_multiplier(4.0, 1e-5, 0.01, 10_000) < eps


@pytest.mark.parametrize("z,q,steps,delta", [(1.1, 0.01, 1000, 1e-5), (4.0, 0.01, 10_000, 1e-5),
                                             (0.8, 0.004, 5000, 1e-6), (2.0, 0.1, 100, 1e-8)])
def test_epsilon_matches_dp_accounting_rdp(z, q, steps, delta):
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    acc = ref.RdpAccountant(list(INT_ORDERS))
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
    theirs = acc.get_epsilon(delta)
    ours = epsilon_for_noise_multiplier(z, delta, q, steps, orders=INT_ORDERS)
    assert ours == pytest.approx(theirs, rel=1e-8)


def test_pld_and_prv_bracket():
    prv = pytest.importorskip("prv_accountant")
    z, q, steps, delta = 1.0, 0.01, 2000, 1e-5
    acc = prv.PRVAccountant(
        prvs=[prv.PoissonSubsampledGaussianMechanism(noise_multiplier=z, sampling_probability=q)],
        max_self_compositions=[steps], eps_error=0.01, delta_error=1e-9,
    )
    lo, est, hi = acc.compute_epsilon(delta=delta, num_self_compositions=[steps])
    pld = epsilon_for_noise_multiplier(z, delta, q, steps, accountant="pld")
    ours_rdp = epsilon_for_noise_multiplier(z, delta, q, steps)
    assert lo <= pld <= hi * 1.01  # dp_accounting's PLD inside prv's certified bracket
    assert ours_rdp >= lo  # RDP is a valid upper bound: never below the certified lower end
    assert ours_rdp <= 1.5 * hi


WOR_CASES = [(0.01, 1.5), (0.1, 0.8), (0.001, 5.0), (0.5, 2.0), (0.01, 0.5)]


@pytest.mark.parametrize("q,z", WOR_CASES)
def test_without_replacement_theorem27_matches_dp_accounting_function(q, z, theorem27_only):
    # the Theorem-27 part alone (the integer-moment terms switched off) is dp_accounting's
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    orders = rdp.WOR_DEFAULT_ORDERS
    ours = rdp.without_replacement_gaussian_rdp(q, z, orders)
    theirs = np.minimum(ref._compute_rdp_sample_wor_gaussian(q, z, orders), orders / (2 * z * z))
    # ours is an upper bound to round-off (a 1e-9 margin on the float table's logs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8)
    assert np.all(ours >= theirs * (1 - 1e-12))


@pytest.mark.parametrize("q,z", WOR_CASES)
def test_without_replacement_rdp_is_at_most_theorem27(q, z):
    # with the integer-moment terms (issue 35): never above dp_accounting's Theorem 27, and
    # strictly below it at order 2 (its q^2 term is a quarter of the theorem's there)
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    orders = rdp.WOR_DEFAULT_ORDERS
    ours = rdp.without_replacement_gaussian_rdp(q, z, orders)
    theirs = np.minimum(ref._compute_rdp_sample_wor_gaussian(q, z, orders), orders / (2 * z * z))
    assert np.all(ours <= theirs * (1 + 1e-8))
    two = float(rdp.without_replacement_gaussian_rdp(q, z, [2.0])[0])
    assert two < 0.95 * float(ref._compute_rdp_sample_wor_gaussian(q, z, [2.0])[0])


def test_without_replacement_matches_dp_accounting(theorem27_only):
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    n, m, z, steps, delta = 10_000, 100, 1.5, 500, 1e-5
    orders = rdp.WOR_DEFAULT_ORDERS
    acc = ref.RdpAccountant(list(orders), dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SampledWithoutReplacementDpEvent(n, m, dpa.GaussianDpEvent(z)), steps)
    ours = epsilon_for_noise_multiplier(z, delta, m / n, steps, "without_replacement",
                                            orders=orders)
    assert ours == pytest.approx(acc.get_epsilon(delta), rel=1e-9)
    # the PLD accountant reads it too (the symmetric pair, tests/privacy/
    # test_without_replacement_pld.py), and tighter than RDP here
    assert epsilon_for_noise_multiplier(z, delta, m / n, steps, "without_replacement",
                                        "pld") < ours
    with pytest.raises(ValueError, match="accountant"):
        epsilon_for_noise_multiplier(z, delta, m / n, steps, "without_replacement", "prv")


@settings(max_examples=25, deadline=None)
@given(
    eps=st.floats(1e-3, 50.0),
    log10_delta=st.floats(-12.0, -2.0),
    log10_q=st.floats(-4.0, 0.0),
    log10_steps=st.floats(0.0, 6.0),
)
def test_noise_multiplier_never_overshoots(eps, log10_delta, log10_q, log10_steps):
    delta, q, steps = 10.0**log10_delta, 10.0**log10_q, int(10.0**log10_steps)
    z = noise_multiplier_for_epsilon(eps, delta, q, steps)
    got = epsilon_for_noise_multiplier(z, delta, q, steps)
    assert np.isfinite(z) and got <= eps
    # and it is tight: 0.1% less noise overshoots (unless eps is flat there)
    assert epsilon_for_noise_multiplier(z * 0.999, delta, q, steps) > eps or z < 1e-5


def test_noise_multiplier_against_dp_accounting_calibration():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    for eps, q, steps in [(1.0, 0.01, 1000), (8.0, 0.004, 20_000), (0.1, 0.02, 100)]:
        z = noise_multiplier_for_epsilon(eps, 1e-5, q, steps, orders=INT_ORDERS)

        def make(sigma, q=q, steps=steps):
            return dpa.SelfComposedDpEvent(
                dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)

        ref_z = dpa.calibrate_dp_mechanism(
            lambda: ref.RdpAccountant(list(INT_ORDERS)), make, eps, 1e-5,
            tol=1e-9)
        acc = ref.RdpAccountant(list(INT_ORDERS))
        acc.compose(make(z))
        assert acc.get_epsilon(1e-5) <= eps  # independent accountant confirms no overshoot
        assert z == pytest.approx(ref_z, rel=1e-5)


def test_rdp_to_dp_methods():
    orders = np.array([2.0, 4.0, 8.0, 16.0])
    r = orders * 0.01
    e_m, o_m = rdp.rdp_to_dp(r, orders, 1e-5, "mironov")
    assert e_m == pytest.approx(min(r - math.log(1e-5) / (orders - 1)))
    assert rdp.rdp_to_dp_epsilon(r, orders, 1e-5, "improved") < e_m


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: noise_multiplier_for_epsilon(0.0, 1e-5, 0.01, 10), "epsilon"),
        (lambda: noise_multiplier_for_epsilon(1.0, 0.0, 0.01, 10), "delta"),
        (lambda: noise_multiplier_for_epsilon(1.0, 1e-5, 1.5, 10), "sampling_rate"),
        (lambda: noise_multiplier_for_epsilon(1.0, 1e-5, 0.01, 10.5), "steps"),
        (lambda: noise_multiplier_for_epsilon(1.0, 1e-5, 0.01, 10, "x"), "sampling"),
        (lambda: epsilon_for_noise_multiplier(-1.0, 1e-5, 0.01, 10), "noise_multiplier"),
        (lambda: epsilon_for_noise_multiplier(1.0, 1e-5, 0.01, 10, accountant="x"),
         "accountant"),
        (lambda: rdp.gaussian_rdp(1.0, [0.5]), "orders"),
        (lambda: rdp.rdp_to_dp([1.0], [2.0], 1e-5, "x"), "method"),
        (lambda: rdp.rdp_to_dp([1.0, 2.0], [2.0], 1e-5), "rdp"),
    ],
)
def test_invalid_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- issue 19: the without-replacement bound's forward-difference table --------------------
def _forward_differences_mpmath(z: float, n: int) -> list[float]:
    """log Delta^l g(0), l = 1..n+1, g(j) = exp((j-1) j / (2 z^2)), by the binomial sum
    sum_k (-1)^(l-k) C(l, k) g(k) in 1500-bit arithmetic (an independent formula; level 49
    at z = 1e3 cancels ~560 bits)."""
    with mp.workprec(1500):
        c = 1 / (2 * mp.mpf(z) ** 2)
        g = [mp.exp(c * (j - 1) * j) for j in range(n + 2)]
        out = []
        for level in range(1, n + 2):
            s = mp.fsum((-1) ** (level - k) * mp.binomial(level, k) * g[k]
                        for k in range(level + 1))
            out.append(float(mp.log(s)) if s > 0 else -math.inf)
    return out


@pytest.mark.parametrize("z, atol", [(3.0, 2e-9), (6.0, 2e-11), (22.7, 2e-11), (1e3, 2e-11)])
def test_wor_forward_differences_match_binomial_sum(z, atol):
    n = 48
    oracle = np.array(_forward_differences_mpmath(z, n))
    ours = rdp._log_forward_differences(z, n)
    assert ours[0] == oracle[0] == -math.inf
    # every level an upper bound: the exact table (z > 4) with its 1e-11 margin over the
    # round-off of a log (~1e-16 of the ~1e3 it subtracts: up to 2.6e-13 below without it),
    # the float table (z <= 4) with its 1e-9
    assert np.all(ours[1:] >= oracle[1:])
    np.testing.assert_allclose(ours[1:], oracle[1:], rtol=0, atol=atol)


def test_float_forward_differences_cancel_negative_control():
    # the table the accountant used before: at z = 22.7 levels >= 11 are noise, some too small
    # (an under-estimate of the bound's terms), which the exact table must not be
    oracle = np.array(_forward_differences_mpmath(22.7, 24))
    old = rdp._log_forward_differences_float(22.7, 24)
    assert np.max(np.abs(old[1:] - oracle[1:])) > 1.0
    assert np.min(old[1:] - oracle[1:]) < -0.01


def _renyi_lower_bound(q: float, z: float, alpha: float) -> float:
    """D_alpha(P || Q) for one replace-one pair under sampling without replacement (the
    changed element in the batch with probability q, the others 0): P = (1-q) N(0, z^2) +
    q N(1/2, z^2), Q the same with -1/2, in units of the replace-one sensitivity; quadrature."""
    from scipy import integrate

    def log_mix(x: float, mu: float) -> float:
        return float(np.logaddexp(math.log1p(-q) - x * x / (2 * z * z),
                                  math.log(q) - (x - mu) ** 2 / (2 * z * z)))

    def f(x: float) -> float:
        return math.exp(alpha * log_mix(x, 0.5) + (1 - alpha) * log_mix(x, -0.5)
                        - math.log(z * math.sqrt(2 * math.pi)))

    lim = 40 * z + 10 * alpha / z
    value, _ = integrate.quad(f, -lim, lim, points=[0.0], limit=500, epsabs=0, epsrel=1e-12)
    return math.log(value) / (alpha - 1)


@pytest.mark.parametrize("q,z", [(0.08, 22.7), (0.001, 1e3)])
def test_wor_rdp_two_sided_against_a_neighbouring_pair(q, z):
    # a valid bound is >= the divergence of any one pair; since issue 35 its q^2 term
    # C(a,2) q^2 (2 e^{2 rho} - 2 e^rho) has the pair's leading term (C(a,2) q^2 2 sinh(rho),
    # rho = 1/(2 z^2)), so for small q z the ratio is 1 to O(q + 1/z^2): tight; a bound
    # 0.5% below ours (negative control) is caught there
    orders = np.array([2.0, 8.0, 32.0])
    ours = rdp.without_replacement_gaussian_rdp(q, z, orders)
    lower = np.array([_renyi_lower_bound(q, z, a) for a in orders])
    assert np.all(ours >= lower)
    assert np.all(ours / 5 < lower)
    if q * z <= 1.0:
        assert np.all(ours / lower <= 1.0 + 1e-3)
        assert np.all(ours * 0.995 < lower)


@pytest.mark.parametrize("q,z", [(0.001, 1e3)])
def test_wor_theorem27_is_four_times_the_pair(q, z, theorem27_only):
    # the accountant before issue 35 (Theorem 27 alone): its q^2 term carries a factor 4
    # over the pair's, so for small q z the ratio is 4 to O(q + 1/z)
    orders = np.array([2.0, 8.0, 32.0])
    ours = rdp.without_replacement_gaussian_rdp(q, z, orders)
    lower = np.array([_renyi_lower_bound(q, z, a) for a in orders])
    np.testing.assert_allclose(ours / lower, 4.0, rtol=2e-3)


def test_wor_epsilon_monotone_in_noise_at_the_issue_case(monkeypatch):
    # issue 19's calibration: q = 24/300, 6 steps, delta = 5.48e-9, z near 20.8; epsilon must
    # fall as z grows; the float table (negative control) jumped by +-5% between neighbours
    zs = np.linspace(20.0, 22.5, 16)

    def curve() -> np.ndarray:
        return np.array([epsilon_for_noise_multiplier(z, 5.476232835707646e-09, 0.08, 6,
                                                          "without_replacement") for z in zs])

    exact = curve()
    assert np.all(np.diff(exact) < 0)
    monkeypatch.setattr(rdp, "_log_forward_differences", rdp._log_forward_differences_float)
    # the table alone, as it was (the log-normal moment bound of issue 36 caps the float
    # table's overshoots at high levels and would hide them)
    monkeypatch.setattr(rdp, "_lognormal_abs_moment_log_bound",
                        lambda s2, j: np.full(np.shape(j), np.inf))
    assert np.any(np.diff(curve()) > 0)


def _equilateral_divergence(q: float, z: float, alpha: int) -> float:
    """max of D_alpha(M1 || M2), D_alpha(M2 || M1) for M_k = (1 - q) N(0, z^2 I) +
    q N(mu_k, z^2 I) in the plane, mu_1 = (1, 0), mu_2 = (1/2, sqrt(3)/2): the equilateral
    triangle of replace-one shifts (|mu_1| = |mu_2| = |mu_1 - mu_2| = 1), where the
    integer-moment bound's order-2 term is attained. Trapezoid rule on a 0.1 z grid over
    +-11 z (the integrand is smooth and Gaussian-tailed: its error is far below 1e-9)."""
    from scipy.special import logsumexp

    x = np.arange(-11.0 * z, 11.0 * z + 1e-9, 0.1 * z)
    xx, yy = np.meshgrid(x, x, indexing="ij")
    base = -(xx**2 + yy**2) / (2 * z * z) - math.log(2 * math.pi * z * z)

    def log_mix(m: tuple[float, float]) -> np.ndarray:
        shifted = -((xx - m[0]) ** 2 + (yy - m[1]) ** 2) / (2 * z * z) - math.log(
            2 * math.pi * z * z)
        return np.logaddexp(math.log1p(-q) + base, math.log(q) + shifted)

    m1, m2 = log_mix((1.0, 0.0)), log_mix((0.5, math.sqrt(3.0) / 2))
    h2 = (0.1 * z) ** 2
    out = []
    for a, b in ((m1, m2), (m2, m1)):
        log_int = logsumexp(alpha * a + (1 - alpha) * b) + math.log(h2)
        out.append(log_int / (alpha - 1))
    return max(out)


@pytest.mark.parametrize("q,z", [(0.01, 5.0), (0.001, 20.0)])
def test_wor_rdp_tight_at_the_equilateral_triangle(q, z):
    # the two-dimensional configuration where the order-2 term's supremum 2e^{2 rho} - 2e^rho
    # is attained (an independent review measured true / bound 0.99938 and 0.9999962 there):
    # the bound is never below the exact divergence and within 1% of it at order 2; the bound
    # at half its rho (z sqrt 2: a control) is below it
    for alpha in (2, 3):
        exact = _equilateral_divergence(q, z, alpha)
        ours = float(rdp.without_replacement_gaussian_rdp(q, z, [float(alpha)])[0])
        assert exact <= ours
        if alpha == 2:
            assert ours <= 1.01 * exact
        assert float(rdp.without_replacement_gaussian_rdp(q, z * math.sqrt(2.0),
                                                          [float(alpha)])[0]) < exact
