"""The contract with dp_accounting's internals (issue 21, item 4).

``privacy/_pld.py`` and ``privacy/accountants/pld_accountant.py`` read seven private attributes of
dp_accounting (it has no public accessor for a PMF's arrays):

* ``PrivacyLossDistribution._pmf_remove``, ``._pmf_add``, ``._symmetric``;
* ``DensePLDPmf._discretization``, ``._lower_loss``, ``._probs``, ``._infinity_mass``
  (loss ``(lower_loss + i) * discretization`` has mass ``probs[i]``; ``infinity_mass`` sits
  at ``+inf``).

The dependency is pinned (pyproject.toml) to the releases whose source has them; these tests
check, on the installed version, that each attribute exists with that type **and** that
reading it that way reproduces an independent answer: the Gaussian mechanism's exact
hockey-stick divergence (closed form, Balle & Wang 2018, Thm. 8) and dp_accounting's own public
``get_delta_for_epsilon``. Controls: a misread grid (lower end off by one) fails the same
comparison, and an object without the attributes makes dpbounds raise, not mis-account.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from dpbounds.privacy import _pld
from dpbounds.privacy.accountants import pld_accountant as A

pldlib = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

INTERVAL = 1e-4
SIGMA = 2.0
EPSILONS = (0.1, 0.5, 1.0, 2.0)


def _delta(d: _pld.DensePld, eps: float) -> float:
    """Hockey-stick divergence of a DensePld: infinity mass + sum p_l (1 - e^(eps - l))."""
    losses = d.losses
    keep = losses > eps
    return d.infinity_mass + float(np.sum(d.probs[keep] * -np.expm1(eps - losses[keep])))


def _gaussian_delta(sigma: float, eps: float) -> float:
    """Exact delta(eps) of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018, Thm. 8;
    VERBATIM): Phi(1/(2 sigma) - eps sigma) - e^eps Phi(-1/(2 sigma) - eps sigma)."""
    a, b = 0.5 / sigma, eps * sigma
    return float(norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b))


def _window(exact: float, got: float) -> bool:
    return exact * (1 - 1e-9) <= got <= exact * (1 + 1e-6)


def _gaussian_pld(sampling_prob: float = 1.0):
    return pldlib.from_gaussian_mechanism(SIGMA, sensitivity=1.0, sampling_prob=sampling_prob,
                                          pessimistic_estimate=True,
                                          value_discretization_interval=INTERVAL)


def test_installed_version_inside_the_pin():
    """The installed dp_accounting satisfies the pyproject pin these tests justify."""
    from packaging.specifiers import SpecifierSet

    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    pins = re.findall(r'"dp-accounting([^"]*)"', text)
    assert pins and all(p == pins[0] for p in pins), pins  # core and xcheck agree
    spec = SpecifierSet(pins[0])
    assert "<" in pins[0], "the pin needs an upper end: the private attributes may change"
    assert importlib.metadata.version("dp-accounting") in spec
    assert "0.3.0" not in spec and "0.7.0" not in spec  # two-sided


def test_pld_attributes_exist_with_their_types():
    sym, asym = _gaussian_pld(1.0), _gaussian_pld(0.01)
    for pld, symmetric in ((sym, True), (asym, False)):
        assert isinstance(pld._symmetric, bool) and pld._symmetric is symmetric
        assert hasattr(pld._pmf_remove, "to_dense_pmf") and hasattr(pld._pmf_add, "to_dense_pmf")
    assert asym._pmf_add is not asym._pmf_remove
    dense = asym._pmf_remove.to_dense_pmf()
    assert isinstance(dense._discretization, float) and dense._discretization == INTERVAL
    assert isinstance(dense._lower_loss, int | np.integer)
    assert isinstance(dense._probs, np.ndarray) and dense._probs.ndim == 1
    assert np.all(dense._probs >= 0)
    assert isinstance(dense._infinity_mass, float) and 0.0 <= dense._infinity_mass < 1e-6


@pytest.mark.parametrize("eps", EPSILONS)
def test_read_arrays_match_the_gaussian_closed_form(eps):
    """Our reading of the arrays gives the exact Gaussian delta, from above (pessimistic
    discretisation) and within 1e-6 relative (measured: ~1e-13 with connect-the-dots at
    interval 1e-4; a one-step shift of the grid is 2e-4 to 8e-4 off): two-sided."""
    d = _pld.from_dp_accounting_pmf(_gaussian_pld(1.0)._pmf_remove)
    exact = _gaussian_delta(SIGMA, eps)
    got = _delta(d, eps)
    assert _window(exact, got), (eps, got, exact)
    # connect-the-dots moves a little mass outward (measured 1 + 8e-9)
    assert abs(float(np.sum(d.probs)) + d.infinity_mass - 1.0) < 1e-7


@pytest.mark.parametrize("eps", EPSILONS)
def test_pmf_pair_matches_the_public_delta_of_an_asymmetric_pld(eps):
    """(remove, add) as dpbounds reads them: max of their deltas is dp_accounting's public
    get_delta_for_epsilon of the subsampled (asymmetric) PLD."""
    pld = _gaussian_pld(0.01)
    remove, add = A._pmf_pair(pld)
    ours = max(_delta(remove, eps), _delta(add, eps))
    public = float(pld.get_delta_for_epsilon(eps))
    assert math.isclose(ours, public, rel_tol=1e-9, abs_tol=1e-15), (ours, public)
    assert _delta(remove, eps) != _delta(add, eps)  # both directions really are read


def test_symmetric_pld_reads_one_pmf():
    remove, add = A._pmf_pair(_gaussian_pld(1.0))
    assert add is remove


def test_control_misread_grid_fails_the_oracle():
    """Negative control: the lower end read off by one (a renamed or re-based field) moves
    delta far outside the closed-form window the test above accepts."""
    d = _pld.from_dp_accounting_pmf(_gaussian_pld(1.0)._pmf_remove)
    shifted = _pld.DensePld(d.interval, d.lower + 1, d.probs, d.infinity_mass)
    eps = 1.0
    exact = _gaussian_delta(SIGMA, eps)
    assert _window(exact, _delta(d, eps))
    assert not _window(exact, _delta(shifted, eps))
    shrunk = _pld.DensePld(d.interval / 2, d.lower, d.probs, d.infinity_mass)  # wrong unit
    assert not _window(exact, _delta(shrunk, eps))
    flipped = _pld.DensePld(d.interval, d.lower, d.probs[::-1], d.infinity_mass)
    assert not _window(exact, _delta(flipped, eps))


def test_control_missing_attributes_raise():
    """An object without the private fields is refused loudly, never accounted."""

    class _FakeDense:  # an imagined release that renamed _probs
        _discretization, _lower_loss, _infinity_mass = INTERVAL, 0, 0.0
        probs = np.ones(1)

    class _FakePmf:
        def to_dense_pmf(self):
            return _FakeDense()

    with pytest.raises(RuntimeError, match="unsupported dp_accounting version"):
        _pld.from_dp_accounting_pmf(_FakePmf())

    class _FakePld:  # no _pmf_remove / _symmetric
        pmf_remove = _FakePmf()

    with pytest.raises(AttributeError, match="_pmf_remove"):
        A._pmf_pair(_FakePld())
