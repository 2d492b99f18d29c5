"""Noisy projected SGD's RDP calibration read by dp_accounting (mutant hunt 14: its step
sensitivity 2nL -> nL halved the noise and survived every test).

Oracle: dp_accounting's RDP accountant on the run's steps as what they are, a sample of one
of n without replacement under replace-one with Gaussian noise sigma on a sum of sensitivity
2nL. dp_accounting reads that event more loosely than dpbounds (up to ~1.7x here), never
more tightly, so the run's eps there lies in [0.95, 2] x the target: two-sided, and the
halved noise (6.6-9.1x) and a doubled one (< 0.6x) both leave it.
"""

from __future__ import annotations

import pytest

from dpbounds.algorithms import noisy_projected_sgd
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.rdp import rdp_privacy_accountant as rpa  # noqa: E402

N = 200


def _dp_accounting_eps(z: float, steps: int, delta: float) -> float:
    acc = rpa.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_accounting.SampledWithoutReplacementDpEvent(
        N, 1, dp_accounting.GaussianDpEvent(z)), steps)
    return float(acc.get_epsilon(delta))


@pytest.mark.parametrize("steps", [200, 2000])
def test_rdp_calibration_is_the_runs_noise_read_by_dp_accounting(steps):
    ds = kuru_synthetic(n=N, d=3, seed=0)
    f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
    r = noisy_projected_sgd(f, epsilon=1.0, delta=1e-5, radius=2.0, steps=steps,
                            calibration="rdp", seed=0, trace=None)
    z = r.params["sigma"] / (2 * N * r.params["lipschitz"])
    assert 0.95 <= _dp_accounting_eps(z, steps, 1e-5) <= 2.0
    # negative controls: the same oracle moves out of the band at half and twice the noise
    assert _dp_accounting_eps(z / 2, steps, 1e-5) > 2.0
    assert _dp_accounting_eps(2 * z, steps, 1e-5) < 0.95
