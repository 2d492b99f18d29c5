"""Stop 69: the DP-SGD / DP-NSGD clip probe checks the noise its step released, not only
the noise drawn.

An independent adversary's mutant added each step's noise to the first coordinate only: the
drawn-noise rows (which read the draws), the ledger and the probe's mean (the noise has mean
0) all held, and ``verify yang.sgd`` / ``yang.nsgd`` passed. The probe's ``spread`` row
compares the mean of ``Q = ||step - mean||^2`` over its trials with its expectation: the
batch mean's sampling variance plus ``d`` times the declared noise variance on the mean.

Oracles: that expectation recomputed here by enumeration (every batch of a small data set,
exact), and the mutant compiled from the module's source (the NumPy path; the compiled loop
switched off for it) as the negative control.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import types

import numpy as np
import pytest

from dpbounds.verify.problems import problem
from dpbounds.verify.studies import normalized_and_clipped_sgd as study
from dpbounds.verify.studies._common import huber_sample_grads

sgd_module = importlib.import_module("dpbounds.algorithms.dp_sgd")
LINE = "g = g + noises[:, s, :]"


def _z(check: dict) -> float:
    v = check["values"]
    return abs(float(v.mean()) - check["exact"]) / float(v.std(ddof=1) / np.sqrt(v.size))


def _point(B: int, d: int = 4, N: int = 12) -> dict:
    return {"eps": 2.0, "delta": 1e-5, "d": d, "N": N, "B": B, "T": 1}


@pytest.mark.parametrize("kind", ["sgd", "nsgd"])
@pytest.mark.parametrize("B", [1, 3])
def test_the_spread_of_a_correct_step_is_its_expectation(kind, B):
    inst = problem().build(12, 4, seed=3)
    _, params = study._clip_probe(_point(B), inst, 0.05, 11, None, kind, 0.5)
    assert _z(params["spread"]) <= 3.5


@pytest.mark.parametrize("B", [1, 3, 12])
def test_the_probe_s_sampling_part_is_the_enumerated_variance(B):
    # the study's sampling term (its params), against every batch of B of N = 12 enumerated
    # here: the variance of the batch mean of the clipped gradients (the threshold, median/2
    # of the norms at x0, recomputed here); B = N: no sampling variance at all
    inst = problem().build(12, 4, seed=5)
    _, params = study._clip_probe(_point(B), inst, 0.05, 11, None, "sgd", 0.5)
    x0 = np.asarray(inst.x0, dtype=float).ravel()
    g = huber_sample_grads(inst.objective.offsets_np, inst.G, inst.L, x0)
    n = np.linalg.norm(g, axis=1)
    c = np.median(n) / 2
    g = g * np.minimum(1.0, c / n)[:, None]
    means = np.array([g[list(s)].mean(axis=0) for s in itertools.combinations(range(12), B)])
    enumerated = float(np.mean(np.sum((means - g.mean(axis=0)) ** 2, axis=1)))
    assert params["spread_sampling_variance"] == pytest.approx(enumerated, rel=1e-10, abs=1e-15)
    assert params["spread"]["exact"] == pytest.approx(
        enumerated + params["spread_noise_variance"], rel=1e-12)


def test_the_spread_sees_the_sampling_term_where_it_dominates():
    # d = 1, eps = 20, spread 0.9: the noise is small beside the sampling variance (B = 1);
    # the probe's mean spread matches the sum, and would not without the sampling term
    from dpbounds.verify.problems import VerifyProblem

    inst = VerifyProblem(spread=0.9).build(12, 1, seed=5)
    point = dict(_point(1, d=1), eps=20.0)
    _, params = study._clip_probe(point, inst, 0.05, 11, None, "sgd", 0.5)
    spread = params["spread"]
    assert params["spread_sampling_variance"] > 2 * params["spread_noise_variance"]
    assert _z(spread) <= 3.5
    without = dict(spread, exact=params["spread_noise_variance"])
    assert _z(without) > 20


def _noise_on_first_coordinate(monkeypatch):
    src = inspect.getsource(sgd_module)
    assert src.count(LINE) == 1, "the line the mutant changes moved: update the test"
    mod = types.ModuleType("dpbounds.algorithms._dp_sgd_first_coordinate_mutant")
    exec(compile(src.replace(LINE, "g = g + noises[:, s, :] * (np.arange(d) == 0)"),
                 "<dp_sgd_first_coordinate_mutant>", "exec"), mod.__dict__)
    # the bug lives in the NumPy path: the compiled loop off for the mutant
    mod._kernels = types.SimpleNamespace(**{k: getattr(mod._kernels, k)
                                            for k in dir(mod._kernels) if not k.startswith("__")})
    mod._kernels.active = lambda *a, **k: None
    import dpbounds.algorithms as alg

    monkeypatch.setattr(alg, "dp_sgd", mod.dp_sgd)
    # DP-NSGD runs DP-SGD's loop (dpbounds.algorithms.nsgd imports it)
    monkeypatch.setattr(importlib.import_module("dpbounds.algorithms.nsgd"), "_noisy_sgd",
                        mod._noisy_sgd)


@pytest.mark.parametrize("kind", ["sgd", "nsgd"])
def test_noise_added_to_one_coordinate_fails_the_spread(kind, monkeypatch):
    inst = problem().build(12, 4, seed=3)
    ok_check, ok = study._clip_probe(_point(1), inst, 0.05, 11, None, kind, 0.5)
    _noise_on_first_coordinate(monkeypatch)
    bad_check, bad = study._clip_probe(_point(1), inst, 0.05, 11, None, kind, 0.5)
    assert _z(bad["spread"]) > 20 and bad["spread"]["values"].mean() < 0.5 * bad["spread"][
        "exact"]
    # the probe's mean cannot tell them apart (the noise has mean 0): why the row is needed
    assert _z(bad_check) <= 3.5 and _z(ok_check) <= 3.5
