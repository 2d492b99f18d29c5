"""One frozen calibration type: the three noise helpers return a NoiseCalibration whose
ledger entries re-account to at most the target (an independent ledger, not the helper's own
``epsilon_spent``), and whose fields cannot be changed. Controls: a ledger of the same
mechanisms with half the noise exceeds the target, and malformed records are refused."""

from __future__ import annotations

import dataclasses
import math

import pytest

from dpbounds.algorithms.dp_sgd import noisy_sgd_noise
from dpbounds.algorithms.tree_momentum import sensitivity_reduced_privacy, tree_momentum_privacy
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import Neighbouring
from dpbounds.privacy.noise_calibration import NoiseCalibration

EPS, DELTA = 2.0, 1e-6
CASES = {
    "noisy_sgd_noise": lambda eps: noisy_sgd_noise(eps, DELTA, n=200, batch_size=10, steps=50,
                                                   contribution_bound=1.0, sampling="poisson"),
    "tree_momentum_privacy": lambda eps: tree_momentum_privacy(eps, DELTA, n=50, epochs=3,
                                                               alpha=0.02, clip_norm=1.0),
    "sensitivity_reduced_privacy": lambda eps: sensitivity_reduced_privacy(
        eps, DELTA, n=50, epochs=3, alpha=0.02, gamma=0.5, clip_norm=1.0, diff_clip=0.5),
}
ACCOUNTANT = {"noisy_sgd_noise": "rdp", "tree_momentum_privacy": "zcdp",
              "sensitivity_reduced_privacy": "zcdp"}


def _halved(mechanism):
    field = "sigma" if hasattr(mechanism, "sigma") else "noise_multiplier"
    return dataclasses.replace(mechanism, **{field: getattr(mechanism, field) / 2})


@pytest.mark.parametrize("name", sorted(CASES))
def test_helpers_return_one_frozen_type_that_reaccounts_under_the_target(name):
    cal = CASES[name](EPS)
    assert isinstance(cal, NoiseCalibration)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.epsilon_spent = 0.0
    assert cal.private and cal.groups == len(cal.sensitivity) >= 1
    assert cal.epsilon_spent <= EPS
    ledger = PrivacyLedger(cal.neighbouring, cal.mechanisms)
    spent = ledger.epsilon(DELTA, ACCOUNTANT[name])
    assert spent <= EPS * (1 + 1e-9)
    assert spent == pytest.approx(cal.epsilon_spent, rel=1e-6)
    try:
        halved = PrivacyLedger(cal.neighbouring, [(_halved(m), c) for m, c in cal.mechanisms])
    except (TypeError, ValueError):
        pytest.skip("mechanism has no sigma field to halve")
    assert halved.epsilon(DELTA, ACCOUNTANT[name]) > EPS  # control


@pytest.mark.parametrize("name", sorted(CASES))
def test_non_private_run_is_an_empty_calibration(name):
    cal = CASES[name](math.inf)
    assert not cal.private and all(s == 0.0 for s in cal.noise_std)
    assert cal.epsilon_spent == math.inf


def test_malformed_records_are_refused():
    ok = dict(noise_std=(1.0,), sensitivity=(1.0,), mechanisms=(), epsilon_spent=1.0,
              delta=1e-5, neighbouring=Neighbouring.ADD_REMOVE, accountant="rdp")
    NoiseCalibration(**ok)
    with pytest.raises(ValueError, match="one entry per noise group"):
        NoiseCalibration(**{**ok, "sensitivity": (1.0, 2.0)})
    with pytest.raises(TypeError, match="Neighbouring"):
        NoiseCalibration(**{**ok, "neighbouring": "add/remove"})
    with pytest.raises(ValueError, match="noise_std"):
        NoiseCalibration(**{**ok, "noise_std": (float("nan"),)})
    with pytest.raises(ValueError, match="2 noise groups"):
        _ = NoiseCalibration(**{**ok, "noise_std": (1.0, 1.0), "sensitivity": (1.0, 1.0)}).sigma
