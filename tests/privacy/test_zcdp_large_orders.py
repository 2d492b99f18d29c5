"""The subsampled-zCDP RDP bounds above order 256 (issue 35).

Until issue 35, ``without_replacement_zcdp_rdp`` and ``poisson_zcdp_rdp`` (the grid's
discrete Gaussian) gave orders above 256 only the unamplified cap ``alpha rho``. Every order now
gets the theorem. Oracle: Wang, Balle & Kasiviswanathan (2019) Theorem 9 and Zhu & Wang (2019)
Theorem 6 summed term by term in 50-digit mpmath with exact binomials (no code shared with
``dpbounds.privacy.rdp``); one-sided: never below the theorem (the float sums carry a 1e-11
relative margin), and within 1e-10 above it. Negative control: the old cap, far above the
theorem where it amplifies.
"""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest

from dpbounds.privacy.rdp import poisson_zcdp_rdp, without_replacement_zcdp_rdp


def _theorem9(q: float, rho: float, a: int) -> float:
    with mp.workdps(50):
        q_, rho_ = mp.mpf(q), mp.mpf(rho)
        total = 1 + q_**2 * mp.binomial(a, 2) * min(4 * mp.expm1(2 * rho_), 2 * mp.exp(2 * rho_))
        total += mp.fsum(q_**j * mp.binomial(a, j) * 2 * mp.exp((j - 1) * j * rho_)
                         for j in range(3, a + 1))
        return min(float(a * rho_), float(mp.log(total) / (a - 1)))


def _theorem6(q: float, rho: float, a: int) -> float:
    with mp.workdps(50):
        q_, rho_ = mp.mpf(q), mp.mpf(rho)
        total = (1 - q_) ** (a - 1) * (a * q_ - q_ + 1)
        total += mp.binomial(a, 2) * q_**2 * (1 - q_) ** (a - 2) * mp.exp(2 * rho_)
        total += mp.fsum(3 * mp.binomial(a, ell) * (1 - q_) ** (a - ell) * q_**ell
                         * mp.exp((ell - 1) * ell * rho_) for ell in range(3, a + 1))
        return min(float(a * rho_), float(mp.log(total) / (a - 1)))


CASES = [(0.001, 1e-4), (0.01, 1e-5), (0.002, 3e-5)]
ORDERS = np.array([2.0, 64.0, 320.0, 512.0, 1024.0, 2048.0])


@pytest.mark.parametrize("q,rho", CASES)
def test_every_order_gets_the_theorem(q: float, rho: float) -> None:
    got = without_replacement_zcdp_rdp(q, rho, ORDERS)
    want = np.array([_theorem9(q, rho, int(a)) for a in ORDERS])
    assert np.all(got >= want), (got / want - 1)  # an upper bound: never below the theorem
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # Poisson: never looser than Theorem 6 (it takes the smaller of Theorem 6 and the
    # two-sided bound, tested to order 2048 in test_poisson_zcdp_two_sided.py)
    got = poisson_zcdp_rdp(q, rho, ORDERS)
    want = np.array([_theorem6(q, rho, int(a)) for a in ORDERS])
    assert np.all(got <= want * (1 + 1e-10))


def test_the_old_cap_is_a_control_that_fails() -> None:
    """At q = 0.001, rho = 1e-4 the theorems amplify by a factor 300-1000 at orders 320-2048:
    the cap alpha rho that those orders got before is not within any tolerance of them."""
    got = without_replacement_zcdp_rdp(0.001, 1e-4, ORDERS[2:])
    want = np.array([_theorem9(0.001, 1e-4, int(a)) for a in ORDERS[2:]])
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert np.all(ORDERS[2:] * 1e-4 > 200 * want)
    got = poisson_zcdp_rdp(0.001, 1e-4, ORDERS[2:])
    assert np.all(ORDERS[2:] * 1e-4 > 200 * got)


def test_fractional_large_orders_interpolate_between_integers() -> None:
    q, rho = 0.001, 1e-4
    got = without_replacement_zcdp_rdp(q, rho, np.array([600.5]))[0] * 599.5
    lo, hi = 599 * _theorem9(q, rho, 600), 600 * _theorem9(q, rho, 601)
    assert got == pytest.approx(0.5 * (lo + hi), rel=1e-10)
    assert got >= 0.5 * (lo + hi)


def test_orders_above_a_million_and_the_deprecated_keyword() -> None:
    for fn in (without_replacement_zcdp_rdp, poisson_zcdp_rdp):
        with pytest.raises(ValueError, match="orders"):
            fn(0.01, 1e-3, [2e6])
        with pytest.warns(DeprecationWarning, match="max_exact_order"):
            fn(0.01, 1e-3, [4.0], max_exact_order=256.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn(0.01, 1e-3, [4.0])


def _theorem6_recurrence(q: float, rho: float, a: int) -> float:
    """Theorem 6 in 40-digit mpmath by the terms' recurrence t_k / t_{k-1} =
    (a - k + 1) / k * q / (1 - q) * e^{2 (k - 1) rho} (an independent review's oracle)."""
    with mp.workdps(40):
        q_, r = mp.mpf(q), mp.mpf(rho)
        ratio, step = q_ / (1 - q_), mp.exp(2 * r)
        t = (1 - q_) ** a
        total, g = t, mp.mpf(1)
        for k in range(1, a + 1):
            t = t * (a - k + 1) / k * ratio * g
            g *= step
            total += t if k <= 2 else 3 * t
        return float(mp.log(total) / (a - 1))


def test_large_orders_stay_above_the_theorem() -> None:
    """At order 49152 (q = 1e-3, rho = 1e-8: Theorem 6 binds) gammaln's rounding put the
    float sum 3.8e-11 below the theorem, past the old 1e-11 relative margin (found by an
    independent review); the margin now grows with alpha log alpha."""
    got = float(poisson_zcdp_rdp(1e-3, 1e-8, np.array([49152.0]))[0])
    want = _theorem6_recurrence(1e-3, 1e-8, 49152)
    assert want <= got <= want * (1 + 1e-8)
