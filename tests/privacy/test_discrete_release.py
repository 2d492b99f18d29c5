"""Grid releases at fine grids: they run, and what they release has the stated law.

Regression: ``GridGaussian(1.0, 1.0).release(...)`` raised ``ValueError: high is out of bounds
for int64`` at ``grid_bits >= 16`` (the discrete Gaussian's Bernoulli coins have denominators
above 2^63, which ``rng.integers`` refuses); no test called ``release`` at a fine grid.

Oracles (computed here, sharing nothing with :mod:`dpbounds.privacy.discrete`):

* the discrete Gaussian pmf :math:`\\propto e^{-z^2/(2\\sigma^2)}` with
  :math:`\\sigma^2 = (2^j\\Delta + \\sqrt d)^2/(2\\rho)` from the accounting statement, summed
  exactly over the integers at ``grid_bits = 16`` and by the midpoint rule (a normal cdf at
  half-integers; checked against the exact sum at 16) at 20 and 32;
* the discrete Laplace cdf in closed form, :math:`P[Z > c] = q^{c+1}/(1+q)`,
  :math:`q = e^{-1/b}`, with :math:`b = (\\lfloor 2^j\\Delta\\rfloor + d)/\\varepsilon`;
* uniformity of the big-integer sampler by a decile chi-square.

Negative controls: the same chi-square rejects a 10% wrong sigma (scale), and a naive
``bits mod n`` big-integer sampler.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbounds.privacy.discrete import GridGaussian, GridLaplace, _uniform_below

VALUE = 0.3
N_DRAWS = 10000
N_BINS = 40


def _offsets(out: np.ndarray, grid_bits: int) -> np.ndarray:
    """The integer noise ``Z`` of a release ``2^-j (round(v 2^j) + Z)`` (exact in float64)."""
    k = np.ldexp(out, grid_bits)
    assert np.array_equal(k, np.round(k))  # on the grid, exactly
    return (k - round(VALUE * 2**grid_bits)).astype(np.int64)


def _chi2(z: np.ndarray, cdf, edges: np.ndarray) -> float:
    """Chi-square p-value of ``z`` in the integer bins (-inf, e1], (e1, e2], ..., (e_last, inf)
    against ``cdf(c) = P[Z <= c]``."""
    f = np.array([cdf(int(e)) for e in edges])
    expected = np.diff(np.concatenate(([0.0], f, [1.0]))) * z.size
    observed = np.bincount(np.searchsorted(edges, z, side="left"), minlength=edges.size + 1)
    return float(stats.chisquare(observed, expected).pvalue)


def _gauss_cdf_midpoint(sigma: float):
    # sum_{z <= c} e^{-z^2/2s^2} / sum_z e^{-z^2/2s^2} = Phi((c + 1/2)/s) up to a relative
    # error far below 1e-9 for s > 1e4 (midpoint rule, Euler-Maclaurin; checked below)
    return lambda c: float(stats.norm.cdf((c + 0.5) / sigma))


def _gauss_cdf_exact(sigma2: float):
    half = math.ceil(12 * math.sqrt(sigma2))  # tail beyond 12 sd: < 1e-32
    z = np.arange(-half, half + 1, dtype=np.float64)
    w = np.exp(-z * z / (2.0 * sigma2))
    cum = np.cumsum(w) / w.sum()
    return lambda c: float(cum[min(max(c + half, 0), cum.size - 1)]) if c >= -half else 0.0


def _sigma2_stated(sens: float, rho: float, grid_bits: int, dim: int = 1) -> float:
    return (sens * 2**grid_bits + math.sqrt(dim)) ** 2 / (2.0 * rho)


@pytest.mark.parametrize("grid_bits", [16, 20, 32])
def test_grid_gaussian_release_runs_on_20_seeds(grid_bits):
    m = GridGaussian(1.0, 1.0, grid_bits=grid_bits)
    for seed in range(20):
        out = m.release(np.array([VALUE]), np.random.default_rng(seed))
        assert out.shape == (1,) and np.isfinite(out[0])
        _offsets(out, grid_bits)


@pytest.mark.parametrize("grid_bits", [16, 20, 32])
def test_grid_gaussian_release_has_the_discrete_gaussian_law(grid_bits):
    m = GridGaussian(1.0, 1.0, grid_bits=grid_bits)
    sigma2 = _sigma2_stated(1.0, 1.0, grid_bits)
    # the mechanism's variance agrees with the accounting statement to 1e-5 relative
    # (sqrt(d) bounded above by 1e-6, sigma^2 rounded up by 1/64)
    assert abs(float(m.sigma2) / sigma2 - 1) < 1e-5
    z = _offsets(m.release(np.full(N_DRAWS, VALUE), np.random.default_rng(100 + grid_bits)),
                 grid_bits)
    sigma = math.sqrt(sigma2)
    edges = np.round(stats.norm.ppf(np.arange(1, N_BINS) / N_BINS) * sigma).astype(np.int64)
    if grid_bits == 16:
        exact = _gauss_cdf_exact(sigma2)
        mid = _gauss_cdf_midpoint(sigma)
        assert max(abs(exact(int(e)) - mid(int(e))) for e in edges) < 1e-9
        cdf = exact
    else:
        cdf = _gauss_cdf_midpoint(sigma)
    assert _chi2(z, cdf, edges) > 1e-4
    # negative control: the same test rejects sigma 10% too large (and too small)
    assert _chi2(z, _gauss_cdf_midpoint(1.1 * sigma), edges) < 1e-6
    assert _chi2(z, _gauss_cdf_midpoint(sigma / 1.1), edges) < 1e-6


def _laplace_cdf(b: float):
    def cdf(c: int) -> float:
        # P[Z > c] = q^{c+1}/(1+q) for c >= 0; P[Z <= c] = q^{|c|}/(1+q) for c < 0
        q = math.exp(-1.0 / b)
        if c >= 0:
            return 1.0 - math.exp(-(c + 1) / b) / (1.0 + q)
        return math.exp(-abs(c) / b) / (1.0 + q)
    return cdf


def test_grid_laplace_beyond_the_grid_is_refused_by_name():
    """Noise of ~1e21 grid units cannot be released (indices stay below 2^53): a ValueError
    (before: numpy's OverflowError from the int64 array)."""
    with pytest.raises(ValueError, match="2\\^53|2\\^63"):
        GridLaplace(1.0, 1e-9, grid_bits=40).release(np.array([VALUE]),
                                                     np.random.default_rng(0))


@pytest.mark.parametrize(("grid_bits", "eps"), [(16, 1.0), (20, 1.0), (32, 1.0),
                                                (40, 1e-2)])
def test_grid_laplace_release_runs_and_has_the_discrete_laplace_law(grid_bits, eps):
    m = GridLaplace(1.0, eps, grid_bits=grid_bits)
    for seed in range(20):
        _offsets(m.release(np.array([VALUE]), np.random.default_rng(seed)), grid_bits)
    b = (math.floor(2**grid_bits) + 1) / eps
    assert abs(float(m.scale) / b - 1) < 1e-9
    z = _offsets(m.release(np.full(2 * N_DRAWS, VALUE), np.random.default_rng(7 + grid_bits)),
                 grid_bits)
    edges = np.round(stats.laplace.ppf(np.arange(1, N_BINS) / N_BINS) * b).astype(np.int64)
    assert _chi2(z, _laplace_cdf(b), edges) > 1e-4
    assert _chi2(z, _laplace_cdf(1.1 * b), edges) < 1e-6  # negative control: wrong scale
    assert _chi2(z, _laplace_cdf(b / 1.1), edges) < 1e-6


def _naive_below(n: int, rng: np.random.Generator) -> int:
    """A biased sampler (``bits mod n``): the negative control."""
    nbytes = (n.bit_length() + 7) // 8
    return int.from_bytes(rng.bytes(nbytes), "little") % n


@pytest.mark.parametrize("n", [3 * 2**70 + 1, 2**62 + 3, 10**30 + 7])
def test_uniform_below_is_uniform_for_big_bounds(n):
    rng = np.random.default_rng(5)
    draws = [_uniform_below(n, rng) for _ in range(20000)]
    assert all(0 <= u < n for u in draws)
    deciles = np.bincount([10 * u // n for u in draws], minlength=10)
    assert stats.chisquare(deciles).pvalue > 1e-4
    if n == 3 * 2**70 + 1:  # 2^72 mod n doubles the mass of the bottom third
        naive = [_naive_below(n, rng) for _ in range(20000)]
        assert stats.chisquare(np.bincount([10 * u // n for u in naive],
                                           minlength=10)).pvalue < 1e-6


def test_uniform_below_keeps_the_small_bound_stream():
    """Below 2^62 the draws are ``rng.integers``' own (seeded audits reproduce)."""
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    assert [_uniform_below(1000, r1) for _ in range(5)] == r2.integers(0, 1000, 5).tolist()
