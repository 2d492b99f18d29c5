"""PLD accounting of the scalar discrete Gaussian (``DiscreteGaussianMechanism``).

Oracles, sharing nothing with the accountant: (1) the exact privacy profile of the discrete
Gaussian computed here by enumerating its PMF on the integers (composition by convolving the
noise sums, since the privacy loss is affine in the noise; the Poisson-subsampled pair by
enumeration over outcome pairs), inverted for epsilon by bisection; (2) the continuous
Gaussian's closed-form profile (Balle & Wang 2018) written out with scipy, a close reference
at sigma >> 1 (stated tolerance). Each check is two-sided: the accountant (pessimistic) is
never below the exact epsilon and at most a discretisation tolerance above it; the control,
half the sensitivity, gives an epsilon below the exact one, which the lower check rejects.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize
import scipy.stats

from dpbounds.privacy.accountants import PldAccountant, RdpAccountant, UnsupportedMechanismError
from dpbounds.privacy.mechanisms import (
    DiscreteGaussianMechanism,
    SubsampledDiscreteGaussianMechanism,
    mechanism_from_dict,
)

# the accountant's default grid interval is 1e-4: pessimistic rounding adds at most about
# count * 1e-4 to the loss, so epsilon by a few 1e-4 (measured below 1e-3 in every case here)
TOL = 2e-3


def _dgauss_pmf(variance: float, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(-half_width, half_width + 1)
    w = np.exp(-(x.astype(float) ** 2) / (2.0 * variance))
    return x, w / w.sum()


def _eps_from_profile(delta_of_eps, delta: float) -> float:
    """Least epsilon with delta_of_eps(epsilon) <= delta (delta_of_eps decreasing)."""
    if delta_of_eps(0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_of_eps(hi) > delta:
        hi *= 2
    return float(scipy.optimize.brentq(lambda e: delta_of_eps(e) - delta, 0.0, hi,
                                       xtol=1e-12))


def _exact_epsilon(variance: float, shift: int, count: int, delta: float) -> float:
    """count-fold discrete Gaussian at integer shift: L = (count s^2 - 2 s S) / (2 v) under
    P = N_Z(0, v)^count, S the sum of the noises (one direction suffices: x -> s - x maps the
    pair onto itself)."""
    x, p = _dgauss_pmf(variance, int(14 * math.sqrt(variance)) + shift)
    dist = p.copy()
    for _ in range(count - 1):
        dist = np.convolve(dist, p)
    S = np.arange(dist.size) + count * x[0]
    loss = (count * shift**2 - 2.0 * shift * S) / (2.0 * variance)

    def delta_of(eps: float) -> float:
        return float(np.sum(dist * np.clip(-np.expm1(eps - loss), 0.0, None)))

    return _eps_from_profile(delta_of, delta)


def _pld_epsilon(mechanism, count: int, delta: float) -> float:
    return PldAccountant().compose(mechanism, count).get_epsilon(delta)


@pytest.mark.parametrize("variance,shift,count,delta", [(9, 2, 1, 1e-5), (9, 2, 4, 1e-5),
                                                        (50, 3, 20, 1e-6)])
def test_scalar_discrete_gaussian_pld_matches_the_exact_profile(variance, shift, count, delta):
    exact = _exact_epsilon(variance, shift, count, delta)
    got = _pld_epsilon(DiscreteGaussianMechanism(variance=variance, sensitivity=shift),
                       count, delta)
    assert exact <= got <= exact + TOL
    # control: half the sensitivity (the error the rounding-up rule guards against) gives
    # an epsilon the lower check rejects
    half = _pld_epsilon(DiscreteGaussianMechanism(variance=variance, sensitivity=shift / 2),
                        count, delta)
    assert half < exact - 10 * TOL


def test_non_integer_sensitivity_is_rounded_up():
    """2.2 grid units -> 3 (never 2): the accountant's epsilon is the shift-3 one."""
    m = DiscreteGaussianMechanism(variance=9, sensitivity=2.2)
    assert m.sensitivity == 3 and m.rho == pytest.approx(9 / 18, rel=1e-15)
    assert m.rho >= 9 / 18
    exact3 = _exact_epsilon(9, 3, 1, 1e-5)
    assert exact3 <= _pld_epsilon(m, 1, 1e-5) <= exact3 + TOL


def _exact_subsampled_epsilon(variance, shift, q, count, delta):
    """Poisson-subsampled (add/remove): D' adds a record, output N_Z(0) on D and the mixture
    (1-q) N_Z(0) + q N_Z(s) on D'; both directions, count in {1, 2} by enumerating outcome
    tuples."""
    x, p = _dgauss_pmf(variance, int(14 * math.sqrt(variance)) + shift)
    mix = (1 - q) * p + q * np.concatenate([np.zeros(shift), p[:-shift]])
    if count == 2:
        p, mix = np.outer(p, p).ravel(), np.outer(mix, mix).ravel()
    worst = 0.0
    for a, b in ((mix, p), (p, mix)):
        def delta_of(eps, a=a, b=b):
            return float(np.sum(np.clip(a - math.exp(eps) * b, 0.0, None)))
        worst = max(worst, _eps_from_profile(delta_of, delta))
    return worst


@pytest.mark.parametrize("count", [1, 2])
def test_poisson_subsampled_discrete_gaussian_pld_matches_the_exact_profile(count):
    variance, shift, q, delta = 4, 3, 0.2, 1e-4
    exact = _exact_subsampled_epsilon(variance, shift, q, count, delta)
    m = SubsampledDiscreteGaussianMechanism(q, variance=variance, sensitivity=shift)
    got = _pld_epsilon(m, count, delta)
    assert exact <= got <= exact + TOL
    half = SubsampledDiscreteGaussianMechanism(q, variance=variance, sensitivity=shift / 2)
    assert _pld_epsilon(half, count, delta) < exact - 10 * TOL


def _continuous_gaussian_epsilon(mu: float, delta: float) -> float:
    """Balle & Wang 2018: delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)."""
    n = scipy.stats.norm

    def delta_of(eps: float) -> float:
        return float(n.cdf(mu / 2 - eps / mu) - math.exp(eps) * n.cdf(-mu / 2 - eps / mu))

    return _eps_from_profile(delta_of, delta)


def test_large_sigma_discrete_gaussian_is_close_to_the_continuous_one():
    """sigma = 40 grid units, 50 releases: the continuous Gaussian's closed form is a close
    reference (measured: exact discrete 22.424493, PLD 22.424512, continuous 22.424516: the
    lattice of the discrete loss makes it a little more private, so the reference is not a
    bound either way); the PLD accountant is within TOL of it. Control: half the sensitivity
    is far below."""
    variance, shift, count, delta = 1600, 20, 50, 1e-6
    ref = _continuous_gaussian_epsilon(math.sqrt(count) * shift / 40.0, delta)
    got = _pld_epsilon(DiscreteGaussianMechanism(variance=variance, sensitivity=shift),
                       count, delta)
    assert abs(got - ref) <= TOL
    assert _pld_epsilon(DiscreteGaussianMechanism(variance=variance, sensitivity=shift // 2),
                        count, delta) < ref - 10 * TOL


def test_rdp_reads_it_as_zcdp_and_is_looser():
    """RDP/zCDP read rho = s^2 / (2 v) (any dimension); at one release that is looser than
    the exact PLD (the zCDP -> (eps, delta) conversion), never tighter than the exact value."""
    m = DiscreteGaussianMechanism(variance=100, sensitivity=10)
    exact = _exact_epsilon(100, 10, 1, 1e-6)
    rdp = RdpAccountant().compose(m).get_epsilon(1e-6)
    assert rdp > _pld_epsilon(m, 1, 1e-6) >= exact


def test_what_the_pld_accountant_refuses():
    acc = PldAccountant()
    with pytest.raises(UnsupportedMechanismError, match="3-dimensional discrete Gaussian"):
        acc.compose(DiscreteGaussianMechanism(variance=100, sensitivity=10, dimension=3))
    assert math.isfinite(RdpAccountant().compose(
        DiscreteGaussianMechanism(variance=100, sensitivity=10, dimension=3)).get_epsilon(1e-6))
    with pytest.raises(UnsupportedMechanismError, match="without replacement"):
        acc.compose(SubsampledDiscreteGaussianMechanism(
            0.1, sampling="without_replacement", variance=100, sensitivity=10))
    with pytest.raises(UnsupportedMechanismError, match="grid units > 65536"):
        acc.compose(DiscreteGaussianMechanism(variance=2**34, sensitivity=10))
    for bad in (0, -4.0, 2.0**53, "x", math.nan):
        with pytest.raises(ValueError, match="variance must be"):
            DiscreteGaussianMechanism(variance=bad, sensitivity=1)
    # a rational variance is stored as the float below it (less noise than drawn)
    assert DiscreteGaussianMechanism(variance=Fraction(1, 3), sensitivity=1).variance <= 1 / 3
    with pytest.raises(ValueError, match="sensitivity"):
        DiscreteGaussianMechanism(variance=4, sensitivity=-1)


def test_round_trip_and_relation():
    m = SubsampledDiscreteGaussianMechanism(0.05, variance=400, sensitivity=7)
    assert mechanism_from_dict(m.to_dict()) == m
    d = DiscreteGaussianMechanism(variance=400, sensitivity=7, neighbouring="add_remove")
    # under replace-one the integer shift doubles (14): the accountant reads that
    got = PldAccountant("replace_one").compose(d).get_epsilon(1e-6)
    doubled = DiscreteGaussianMechanism(variance=400, sensitivity=14, neighbouring="replace_one")
    assert got == pytest.approx(PldAccountant("replace_one").compose(doubled).get_epsilon(1e-6),
                                abs=1e-12)
    assert got > _pld_epsilon(d, 1, 1e-6)  # control: the add/remove reading is smaller


def test_grid_gaussian_mechanism_integer_shift_is_attained_and_bounds_every_pair():
    """GridGaussian(Delta = 1.03125, grid_bits = 4): 2^j Delta = 16.5, so the integer shift
    bound is floor(16.5) + 1 = 17. Oracle: rounding pairs a, b with |a - b| <= Delta, by
    hand (np.rint); 17 is attained (a grid index 0.25 against 16.75) and never exceeded, so
    16 (the floor alone, a rounding-down mutant) would be refuted."""
    from dpbounds.privacy.discrete import GridGaussian

    g = GridGaussian(1.03125, 0.5, grid_bits=4)
    m = g.mechanism()
    assert m.sensitivity == 17 and m.dimension == 1 and m.rho <= g.rho_spent
    rng = np.random.default_rng(0)
    a = rng.uniform(-3, 3, 20_000)
    b = a + rng.uniform(-1, 1, a.size) * 1.03125
    moves = np.abs(np.rint(a * 16) - np.rint(b * 16))
    assert moves.max() <= 17
    assert abs(np.rint(16.75) - np.rint(0.25)) == 17 == m.sensitivity
    # the PLD accountant reads it (sigma = 17 grid units), tighter than RDP's reading
    pld = PldAccountant().compose(m, 10).get_epsilon(1e-6)
    assert pld < RdpAccountant().compose(m, 10).get_epsilon(1e-6)
    exact = _exact_epsilon(m.variance, 17, 10, 1e-6)  # variance 19601/64, a dyadic float
    assert exact <= pld <= exact + TOL
