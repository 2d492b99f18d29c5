"""The floating-point side channel and the noise that closes it.

Oracles: the exact discrete Laplace pmf (a chi-square goodness-of-fit test of the exact
sampler, with a negative control of the wrong scale), the pmf ratio that defines pure DP
(for the grid mechanism's accounting), and exact float arithmetic (a grid release is
``k * 2^-j`` for an integer ``k``). The low-bit statistic must refute float64 Laplace DP-GD
at its claim (Mironov 2012) and must not refute the grid version; its null rate is in
``test_null.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpbounds.audit import audit
from dpbounds.audit.statistics import float_cells
from dpbounds.privacy.discrete import (
    GridGaussian,
    GridLaplace,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
)


def _pmf(b: float, z: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / b)
    return (1 - q) / (1 + q) * q ** np.abs(z)


def _chi2_pvalue(z: np.ndarray, b: float) -> float:
    support = np.arange(-8, 9)
    observed = np.array([np.sum(z == k) for k in support] + [np.sum(np.abs(z) > 8)])
    p = _pmf(b, support)
    expected = z.size * np.append(p, 1 - p.sum())
    return float(stats.chisquare(observed, expected).pvalue)


def test_discrete_laplace_has_the_exact_pmf():
    rng = np.random.default_rng(1)
    z = discrete_laplace(Fraction(5, 2), 20000, rng)
    assert _chi2_pvalue(z, 2.5) > 1e-3
    assert _chi2_pvalue(z, 2.0) < 1e-6  # negative control: the wrong scale is rejected
    # Bernoulli(exp(-gamma)) coins, rational gamma below and above 1
    for gamma in (Fraction(1, 3), Fraction(7, 4)):
        hits = sum(bernoulli_exp(gamma, rng) for _ in range(20000))
        assert abs(hits / 20000 - math.exp(-gamma)) < 4 * math.sqrt(0.25 / 20000)


def test_discrete_gaussian_has_the_exact_pmf():
    rng = np.random.default_rng(2)
    z = discrete_gaussian(Fraction(9, 4), 20000, rng)
    support = np.arange(-12, 13)

    def pvalue(s2: float) -> float:
        w = np.exp(-support**2 / (2 * s2))
        return float(stats.chisquare([np.sum(z == k) for k in support],
                                     z.size * w / w.sum()).pvalue)

    assert np.all(np.abs(z) <= 12)  # 8 sd: P < 1e-14
    assert pvalue(2.25) > 1e-3
    assert pvalue(1.8) < 1e-6  # negative control: the wrong variance is rejected


@settings(max_examples=30, deadline=None)
@given(sens=st.floats(1e-3, 100), rho=st.floats(1e-3, 10), bits=st.integers(0, 30),
       dim=st.integers(1, 9))
def test_grid_gaussian_accounting_never_overshoots(sens, rho, bits, dim):
    m = GridGaussian(sens, rho, bits, dim)
    units = Fraction(sens) * 2**bits + Fraction(math.isqrt(dim * 10**12) + 1, 10**6)
    assert m.units2 == units * units and units - Fraction(sens) * 2**bits >= math.sqrt(dim)
    assert m.units2 / (2 * m.sigma2) <= Fraction(rho)  # Delta_u^2 / (2 sigma_u^2) <= rho
    # sigma_u^2 is rounded up by less than 1/64: the most it can give away
    least = m.units2 / (2 * (m.units2 / (2 * Fraction(rho)) + Fraction(1, 64)))
    assert float(least) * (1 - 1e-12) <= m.rho_spent <= rho


@settings(max_examples=40, deadline=None)
@given(sens=st.floats(1e-3, 100), eps=st.floats(1e-2, 10), bits=st.integers(0, 30),
       dim=st.integers(1, 4))
def test_grid_accounting_never_overshoots(sens, eps, bits, dim):
    m = GridLaplace(sens, eps, bits, dim)
    # rounding moves each coordinate by at most one unit: floor(sens / grid) + dim
    assert m.units == math.floor(Fraction(sens) * 2**bits) + dim
    # pure DP of the discrete Laplace: pmf ratio at distance `units` is exp(units / b)
    assert Fraction(m.units) / m.scale <= Fraction(eps)
    assert m.epsilon_spent <= eps
    assert m.epsilon_spent >= eps * (1 - 1.0 / (64 * float(m.scale)) - 1e-12)


def test_grid_release_is_a_function_of_its_integer():
    m = GridLaplace(2.0, 1.0, grid_bits=10)
    out = m.release(np.array([0.1, -3.7, 1e6]), np.random.default_rng(0))
    k = out * 2.0**10
    np.testing.assert_array_equal(k, np.round(k))  # on the grid, exactly
    np.testing.assert_array_equal(np.ldexp(k, -10), out)
    g = GridGaussian(2.0, 0.5, grid_bits=10).release(np.array([0.1, -3.7]),
                                                     np.random.default_rng(0))
    np.testing.assert_array_equal(g * 2.0**10, np.round(g * 2.0**10))
    with pytest.raises(ValueError, match="grid_bits"):
        GridLaplace(2.0, 1.0, grid_bits=41)
    with pytest.raises(ValueError, match="2\\^53"):
        GridLaplace(2.0, 1.0, grid_bits=40).release(np.array([1e5]), np.random.default_rng(0))


def test_float_cells_read_the_last_mantissa_bits():
    x = np.array([0.25 + 2.0**-54, 0.25 + 2.0**-53, 0.25, -0.25])
    cells = float_cells(x)
    assert cells[0] & 7 == 1 and cells[1] & 7 == 2 and cells[2] & 7 == 0
    assert cells[3] != cells[2]  # the sign is part of the cell


def test_low_bits_refute_float64_laplace_dp_gd_and_not_the_grid_version():
    bad = audit("dp_gd_laplace", trials=4000, seed=0, low_bits=True)
    assert bad.violation and "low-bits" in bad.statistic, bad
    # the same algorithm by value: consistent (the channel is in the bits alone)
    assert not audit("dp_gd_laplace", trials=4000, seed=0).violation
    safe = audit("dp_gd_laplace_grid", trials=4000, seed=0, low_bits=True)
    assert safe.claimed_epsilon <= 2.0 and not safe.violation, safe


def test_discrete_samplers_refuse_bad_parameters_by_name():
    """NaN, inf, negative and zero parameters are refused naming the parameter (a negative
    gamma returned True silently, NaN gave an anonymous conversion error)."""
    import numpy as np
    import pytest

    from dpbounds.privacy.discrete import bernoulli_exp, discrete_gaussian, discrete_laplace

    rng = np.random.default_rng(0)
    for bad in (float("nan"), float("inf"), -1.0, "x"):
        with pytest.raises(ValueError, match="gamma"):
            bernoulli_exp(bad, rng)
    for bad in (float("nan"), float("inf"), 0, -2.0):
        with pytest.raises(ValueError, match="scale"):
            discrete_laplace(bad, 2, rng)
        with pytest.raises(ValueError, match="sigma2"):
            discrete_gaussian(bad, 2, rng)
    assert bernoulli_exp(0, rng) is True  # control: exp(-0) = 1, a valid edge
