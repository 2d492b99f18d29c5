"""The RDP accountant's delta(eps) never falls below the exact privacy profile (mutant hunt
14: its KL branch without the square root under-stated delta 36x at eps = 0 and survived).

Oracles: dp_accounting's optimistic PLD of the same Poisson-subsampled Gaussian composition,
a lower bound on the exact delta (a valid accountant's delta lies above it at every eps), and
dp_accounting's RDP accountant on the same orders above (two-sided).
"""

from __future__ import annotations

import pytest

from dpbounds.privacy.accountants import make_accountant
from dpbounds.privacy.mechanisms import SubsampledGaussianMechanism

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

from dpbounds.privacy.rdp import DEFAULT_ORDERS  # noqa: E402


def _pld_delta(q: float, sigma: float, steps: int, eps: float, pessimistic: bool) -> float:
    one = pld.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=pessimistic,
                                      value_discretization_interval=1e-4)
    return float(one.self_compose(steps).get_delta_for_epsilon(eps))


@pytest.mark.parametrize("q, sigma, steps", [(0.01, 5.0, 100), (0.05, 2.0, 50),
                                             (0.001, 1.0, 1000)])
@pytest.mark.parametrize("eps", [0.0, 0.01, 0.05, 0.3])
def test_rdp_delta_is_never_below_the_optimistic_pld(q, sigma, steps, eps):
    acc = make_accountant("rdp", "add_remove")
    acc.compose(SubsampledGaussianMechanism(sigma, q), steps)
    ours = acc.get_delta(eps)
    low = _pld_delta(q, sigma, steps, eps, pessimistic=False)
    high = _pld_delta(q, sigma, steps, eps, pessimistic=True)
    assert low <= high * (1 + 1e-9)
    # upper side (a delta of 1 everywhere passed the lower one): dp_accounting's own RDP
    # accountant on the same orders, whose conversion dpbounds' matches or improves on
    theirs = rdp_privacy_accountant.RdpAccountant(list(DEFAULT_ORDERS))
    theirs.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)),
                   steps)
    assert ours <= theirs.get_delta(eps) * (1 + 1e-8)
    if low < 1e-12:  # the PLD's truncated tail mass (~1e-15) is not a lower bound there
        pytest.skip("the optimistic PLD is at its truncation floor")
    assert ours >= low * (1 - 1e-9), (ours, low)


def test_the_kl_branch_is_what_binds_at_eps_zero():
    """Negative control: a mutant of the KL branch without its square root (delta <=
    1 - e^{-KL}) reads below the optimistic PLD by more than 10x at eps = 0, so the test
    above fails it."""
    import numpy as np

    acc = make_accountant("rdp", "add_remove")
    acc.compose(SubsampledGaussianMechanism(5.0, 0.01), 100)
    r = np.asarray(acc.rdp)
    wrong = float(np.min(-np.expm1(-r)))  # the mutant's bound
    low = _pld_delta(0.01, 5.0, 100, 0.0, pessimistic=False)
    assert wrong < low / 10 and acc.get_delta(0.0) >= low
