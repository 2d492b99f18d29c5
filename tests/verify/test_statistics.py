"""Slope fitting and intervals against oracles: exact power laws, and Monte Carlo coverage of
the bootstrap slope interval and of the mean interval on synthetic data with a known exponent."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.verify.statistics import bootstrap_slope, local_slopes, loglog_slope, mean_ci


@given(p=st.floats(-3, 3), c=st.floats(1e-3, 1e3))
@settings(max_examples=50, deadline=None)
def test_slope_of_an_exact_power_law(p: float, c: float) -> None:
    x = np.array([3.0, 10.0, 30.0, 100.0])
    assert loglog_slope(x, c * x**p) == pytest.approx(p, abs=1e-9)
    assert local_slopes(x, c * x**p) == pytest.approx([p] * 3, abs=1e-9)


def _power_law_samples(rng: np.random.Generator, x: np.ndarray, p: float, n: int) -> list:
    # multiplicative noise with mean 1, so E Y = 2 x^p exactly
    return [2.0 * xi**p * rng.gamma(4.0, 0.25, size=n) for xi in x]


def test_bootstrap_slope_interval_covers_the_true_exponent() -> None:
    """Monte Carlo coverage of the 90 % percentile interval: in [0.80, 0.97] over 150 data
    sets (a binomial(150, 0.9) lies there with probability > 0.99)."""
    rng = np.random.default_rng(1)
    x = np.array([4.0, 16.0, 64.0])
    hits = 0
    for rep in range(150):
        s = bootstrap_slope(x, _power_law_samples(rng, x, 0.25, 12), replicates=400,
                            level=0.9, seed=rep)
        hits += s.ci_low <= 0.25 <= s.ci_high
    assert 0.80 <= hits / 150 <= 0.97


def test_bootstrap_slope_interval_excludes_a_wrong_exponent() -> None:
    # negative control: with enough trials the interval of a d^0.75 law excludes 0.25
    rng = np.random.default_rng(2)
    x = np.array([4.0, 16.0, 64.0])
    s = bootstrap_slope(x, _power_law_samples(rng, x, 0.75, 30), replicates=500, seed=0)
    assert s.ci_low > 0.25
    assert s.ci_low <= s.slope <= s.ci_high


def test_mean_interval_coverage() -> None:
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(400):
        m = mean_ci(rng.normal(1.0, 3.0, size=10), 0.95)
        hits += m.ci_low <= 1.0 <= m.ci_high
    assert 0.91 <= hits / 400 <= 0.985


def test_bootstrap_is_reproducible_from_its_seed() -> None:
    x = [1.0, 2.0, 4.0]
    s = [np.array([1.0, 1.2, 0.9]), np.array([1.5, 1.4, 1.7]), np.array([2.1, 1.9, 2.3])]
    assert bootstrap_slope(x, s, seed=5) == bootstrap_slope(x, s, seed=5)


@pytest.mark.parametrize("bad", [[], [np.nan], [np.inf]])
def test_mean_ci_refuses_bad_samples(bad: list) -> None:
    with pytest.raises(ValueError, match="values"):
        mean_ci(bad)


def test_slope_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="two distinct"):
        loglog_slope([1.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        bootstrap_slope([1.0, 2.0], [np.array([1.0]), np.array([-1.0])])
    with pytest.raises(ValueError, match="one array per grid value"):
        bootstrap_slope([1.0, 2.0, 3.0], [np.array([1.0]), np.array([1.0])])


def test_noise_persistence_against_white_and_constant_oracles() -> None:
    """alpha = 1: only the node formed at t survives, the noise is white and the window mean
    has norm 1/sqrt(W) of a step's (exactly, up to Monte Carlo); gamma -> 0 in Algorithm 2
    makes the re-injected noise persist, far above the white level."""
    from dpbounds.verify.persistence import tree_noise_persistence

    white = tree_noise_persistence(n=64, epochs=4, d=3, alpha=1.0, sigma=2.0, trials=64, seed=1)
    assert abs(white["persistence"] - 1 / 8) < 0.02
    alg2 = tree_noise_persistence(n=32, epochs=6, d=3, alpha=1 / 32, sigma_1=1.0, sigma_2=1.0,
                                  gamma=1e-3, trials=16, seed=2)
    alg1 = tree_noise_persistence(n=32, epochs=6, d=3, alpha=1 / 32, sigma=1.0, trials=16,
                                  seed=2)
    assert alg2["persistence"] > alg1["persistence"] > 2 * alg1["white"]
    with pytest.raises(ValueError, match="sigma"):
        tree_noise_persistence(n=4, epochs=1, d=1, alpha=0.5)
