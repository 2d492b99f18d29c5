"""``PrivacyLedger.delta_curve`` / ``epsilon_curve``: bracketed privacy profiles.

Oracles (closed forms written here): the Gaussian mechanism's profile (Balle & Wang 2018,
Thm 8) and the Laplace mechanism's, :math:`\\delta(\\varepsilon) = 1 - e^{(\\varepsilon -
\\varepsilon_0)/2}` on :math:`[0, \\varepsilon_0]`, :math:`\\varepsilon_0 = \\Delta/b`
(DERIVED: the hockey-stick divergence of two Laplace densities at distance Delta). The exact
value must lie inside [optimistic, pessimistic]; negative control: a 10% wrong scale's exact
profile falls outside the bracket.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import GaussianMechanism, LaplaceMechanism


def _gauss(mu: float, eps: float) -> float:
    return float(norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu))


def _laplace(eps0: float, eps: float) -> float:
    return max(0.0, -math.expm1((eps - eps0) / 2))


def test_gaussian_curve_is_exact():
    ledger = PrivacyLedger(entries=[(GaussianMechanism(4.0), 9)])  # mu = 3/4
    grid = [0.0, 0.5, 1.0, 2.0]
    c = ledger.delta_curve(grid)
    exact = np.array([_gauss(0.75, e) for e in grid])
    np.testing.assert_allclose(c["pessimistic"], exact, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(c["optimistic"], exact, rtol=1e-9, atol=1e-15)
    e = ledger.epsilon_curve([1e-3, 1e-6])
    for d, hi in zip([1e-3, 1e-6], e["pessimistic"], strict=True):
        assert _gauss(0.75, hi) == pytest.approx(d, rel=1e-6)


def test_laplace_curve_brackets_the_exact_profile():
    ledger = PrivacyLedger(entries=[(LaplaceMechanism(2.0, 1.0), 1)])  # eps0 = 0.5
    grid = np.array([0.0, 0.1, 0.25, 0.4])
    c = ledger.delta_curve(grid)
    exact = np.array([_laplace(0.5, e) for e in grid])
    assert np.all(c["optimistic"] <= exact + 1e-12) and np.all(exact <= c["pessimistic"] + 1e-12)
    assert np.all(c["pessimistic"] - c["optimistic"] < 2e-3)
    wrong = np.array([_laplace(0.5 / 1.1, e) for e in grid])  # scale 10% larger
    assert np.any((wrong < c["optimistic"] - 1e-9) | (wrong > c["pessimistic"] + 1e-9))
    e = ledger.epsilon_curve([0.05])
    assert e["optimistic"][0] <= e["pessimistic"][0]
    assert _laplace(0.5, e["pessimistic"][0]) <= 0.05 + 1e-9  # the guarantee holds


def test_curve_grids_are_checked():
    ledger = PrivacyLedger(entries=[(GaussianMechanism(4.0), 1)])
    for bad in ([], [-1.0], [float("nan")]):
        with pytest.raises(ValueError, match="eps_grid"):
            ledger.delta_curve(bad)
    for bad in ([0.0], [1.0], []):
        with pytest.raises(ValueError, match="delta_grid"):
            ledger.epsilon_curve(bad)
