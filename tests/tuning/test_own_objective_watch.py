"""A private selection on an objective class of one's own (walkthrough of stop 80).

Before: a class whose ``l1_sensitivity`` property read its records ran silently (the runs'
Laplace noise calibrated to the private data), and ``sensitivity=`` -- the public bound the
watch's own refusal advised -- was refused as "not a hyper-parameter to search". Now:

* a calibration constant a class of one's own computes in a property is refused at the read,
  unless the class lists it in ``PUBLIC_CONSTANTS`` or the runs are given a public
  ``sensitivity=`` (a class attribute is a declaration, read freely);
* a fixed ``sensitivity=`` is accepted, and the runs it makes are calibrated to it alone.

Oracle: the runs' ledgers on two neighbouring data sets (one record replaced by a far one),
compared field by field: a data-derived sensitivity moves the noise (the leak the refusal
stops), a public one does not (two-sided).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.objectives import LogisticRegression
from dpbounds.tuning import select_privately


class RecordSensitivity(LogisticRegression):
    """S_1 from the data's own largest row (what a newcomer writes)."""

    @property
    def l1_sensitivity(self) -> float:
        return 2.0 * float(np.max(np.abs(self.features_np).sum(axis=1)))


class DeclaredSensitivity(RecordSensitivity):
    PUBLIC_CONSTANTS = ("l1_sensitivity",)  # the user's word that it is a public bound


class ConstantSensitivity(LogisticRegression):
    l1_sensitivity = 3.0  # a class attribute: public by construction


def _data(far: bool = False):
    rng = np.random.default_rng(0)
    a = rng.uniform(-0.5, 0.5, (200, 2))
    if far:
        a[0] = [4.0, -4.0]  # a neighbour: one record replaced
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    return a, y


def _objective(cls, far: bool = False):
    a, y = _data(far)
    return cls(a, y, l2=0.02, l1_radius=8.0, l2_radius=6.0)


KW = dict(epsilon=1.0, score_epsilon=0.1, loss_bound=5.0, stop_probability=0.3,
          momentum=0.0, seed=3)
GRID = {"step_size": [0.25, 0.5], "steps": [3]}


def _scales(obj, **kw):
    res = dp_heavy_ball(obj, epsilon=1.0, steps=3, step_size=0.5, momentum=0.0, seed=0, **kw)
    return [(m.scale, m.sensitivity) for m, _ in res.privacy.ledger.entries]


def test_a_record_derived_sensitivity_moves_the_noise_and_is_refused():
    # the leak itself: the neighbour's runs draw other noise
    assert _scales(_objective(RecordSensitivity)) != _scales(_objective(RecordSensitivity, True))
    with pytest.raises(ValueError, match=r"reads the objective's l1_sensitivity, a property "
                                         r"RecordSensitivity computes.*PUBLIC_CONSTANTS"):
        select_privately(dp_heavy_ball, _objective(RecordSensitivity), GRID, **KW)


def test_a_declared_or_constant_sensitivity_runs():
    for cls in (DeclaredSensitivity, ConstantSensitivity):
        sel = select_privately(dp_heavy_ball, _objective(cls), GRID, **KW)
        assert np.all(np.isfinite(sel.x)) and sel.epsilon > 0


def test_a_fixed_public_sensitivity_is_accepted_and_alone_sets_the_noise():
    fixed = dict(sensitivity=16.0)  # the neighbours' bound: 2 x the declared l1_radius
    a = _scales(_objective(RecordSensitivity), **fixed)
    b = _scales(_objective(RecordSensitivity, True), **fixed)
    assert a == b  # two-sided: the neighbour's noise is the same
    sel = select_privately(dp_heavy_ball, _objective(RecordSensitivity), GRID, **fixed, **KW)
    assert np.all(np.isfinite(sel.x))
    with pytest.raises(ValueError, match="not a hyper-parameter to search"):  # searched: no
        select_privately(dp_heavy_ball, _objective(RecordSensitivity),
                         {**GRID, "sensitivity": [1.0, 16.0]}, **KW)


def test_the_override_warning_reads_the_objective_as_advice_only():
    obj = _objective(RecordSensitivity, True)  # its own S_1 is 16
    with pytest.warns(UserWarning, match="below the objective's own l1_sensitivity"):
        dp_heavy_ball(obj, epsilon=1.0, steps=2, step_size=0.5, momentum=0.0, seed=0,
                      sensitivity=1.0)
    # inside a selection the comparison is not a read of the data's constant: no refusal and
    # no warning (a warning there would depend on the data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        select_privately(dp_heavy_ball, obj, GRID, sensitivity=1.0, **KW)
