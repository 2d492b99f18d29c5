"""Stop 68: DP-AGD draws the noise it records, retries included.

An independent adversary's mutant drew the GradAvg retry's second measurement with the sigma
of the whole new budget rho_ng instead of its increment (about 3.3x too little noise at
gamma = 0.1) while the charge, the recorded sigma and the ledger kept the increment's: no
study or audit ran the retry branch, and the run's own records all agreed. Oracle: the
standard deviations the random stream was asked for, recorded here by wrapping
:meth:`TrialRandom.normal`, against the run's recorded ``gradient_sigmas`` (which build its
ledger), and each recorded sigma against ``grad_clip / sqrt(2 rho)`` for the charges written
out here (Lemma 3.6: zCDP cost C^2 / (2 sigma^2)).
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from dpbounds.algorithms.dp_agd import dp_agd
from dpbounds.backend import TrialRandom
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression

D = 4
#: the module (the package's ``dp_agd`` attribute is the function)
agd_module = importlib.import_module("dpbounds.algorithms.dp_agd")


def _objective():
    ds = kuru_synthetic(n=200, d=D, seed=2)
    return LogisticRegression(*ds, l2=1e-3, **ds.domain())


def _run_recording(monkeypatch, function=dp_agd, **kw):
    asked: list[tuple[np.ndarray, np.ndarray]] = []
    original = TrialRandom.normal

    def normal(self, shape=(), scale=1.0, *, where=None):  # noqa: ANN001, ANN202
        if tuple(np.atleast_1d(shape)) == (D,):
            s = np.broadcast_to(np.asarray(scale, dtype=float), (self.trials,)).copy()
            m = (np.ones(self.trials, dtype=bool) if where is None
                 else np.asarray(where, dtype=bool).copy())
            asked.append((s, m))
        return original(self, shape, scale, where=where)

    monkeypatch.setattr(TrialRandom, "normal", normal)
    res = function(_objective(), epsilon=0.5, delta=1e-5, trials=4, seed=3, **kw)
    drawn = [[float(s[k]) for s, m in asked if m[k]] for k in range(4)]
    return res, drawn


def test_every_gradient_draw_has_the_recorded_sigma(monkeypatch):
    res, drawn = _run_recording(monkeypatch, gamma=0.1, splits=20)
    recorded = res.params["gradient_sigmas"]
    retries = sum(len(s) for s in recorded) - int(np.sum(res.params["iterations"]))
    assert retries > 0, "no GradAvg retry ran: the check would show nothing"
    for k in range(4):
        assert drawn[k] == pytest.approx(recorded[k], rel=1e-12)


def test_recorded_sigmas_build_the_ledger():
    # the ledger composes exactly the recorded Gaussians up to the last release, each at
    # sensitivity grad_clip (so drawn == recorded above makes the ledger the draws')
    res = dp_agd(_objective(), epsilon=0.5, delta=1e-5, trials=2, seed=4, gamma=0.1, splits=20)
    clip = res.params["grad_clip"]
    for k in range(2):
        led = res.privacy.trial_ledgers[k]
        gauss = [m for m, c in led.entries if type(m).__name__ == "GaussianMechanism"
                 for _ in range(c)]  # the ledger keeps repeated mechanisms as counts
        assert sorted(m.sigma for m in gauss) == sorted(res.params["released_gradient_sigmas"][k])
        assert all(math.isclose(m.sensitivity, clip) for m in gauss)


def _mutant_dp_agd():
    """A copy of the module with the adversary's edit: the retry drawn at sigma(rho_ng)."""
    import importlib.util
    import inspect
    import sys

    source = inspect.getsource(agd_module)
    good = "second = g_raw + stream.normal((d,), xp.asarray(sig2), where=fail)"
    assert source.count(good) == 1
    bad = ("second = g_raw + stream.normal((d,), xp.asarray(_sigma_for_charge(grad_clip, "
           "r_ng)), where=fail)")
    name = "dpbounds.algorithms._dp_agd_retry_mutant"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # while it runs (its dataclasses look it up), then removed
    try:
        exec(compile(source.replace(good, bad), agd_module.__file__, "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module.dp_agd


def test_a_retry_drawn_at_the_whole_budget_fails(monkeypatch):
    # negative control: the adversary's mutant
    mutant = _mutant_dp_agd()
    res, drawn = _run_recording(monkeypatch, gamma=0.1, splits=20, function=mutant)
    recorded = res.params["gradient_sigmas"]
    assert any(d != pytest.approx(r, rel=1e-12) for d, r in zip(drawn, recorded))
