"""Every private algorithm refuses an objective whose per-example losses use other records.

``Objective.centred_records`` declares losses built around a centre recomputed from the whole
data set (a third-party objective may do this; the bundled ones fix their centre as a public
parameter). Then one added, removed or replaced record moves every term of a gradient sum, and
no sensitivity the algorithms calibrate to holds (tests/algorithms/test_public_centre.py
measures 19 C for a clipped sum). The four clipping algorithms are checked there; here the
rest: the momentum methods, the tree-momentum NSGDs and the ERM releases. Control: the same
objective with the flag off is not refused for that reason (it runs, or fails for another).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.algorithms import (
    dp_heavy_ball,
    dp_masg,
    dp_nag,
    noisy_projected_sgd,
    objective_perturbation,
    output_perturbation,
    sensitivity_reduced_nsgd,
    tree_momentum_nsgd,
)
from dpbounds.objectives import LogisticRegression, QuadraticObjective

REFUSED = r"does not accept .*centred_records"


class _RecentringQuadratic(QuadraticObjective):
    centred_records = True


class _RecentringLogistic(LogisticRegression):
    centred_records = True


def _quadratic(cls):
    return cls([1.0, 2.0], offsets=np.random.default_rng(0).standard_normal((8, 2)))


def _logistic(cls):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((16, 3))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    y = np.where(rng.random(16) < 0.5, -1.0, 1.0)
    return cls(A, y, l2=0.1)


RUNS = {
    "dp_heavy_ball": (_quadratic, lambda f: dp_heavy_ball(f, epsilon=1.0, steps=2, seed=0)),
    "dp_nag": (_quadratic, lambda f: dp_nag(f, epsilon=1.0, steps=2, seed=0)),
    "dp_masg": (_quadratic, lambda f: dp_masg(f, epsilon=1.0, steps=4, seed=0)),
    "tree_momentum_nsgd": (_quadratic, lambda f: tree_momentum_nsgd(
        f, epsilon=1.0, delta=1e-6, epochs=1, batch_size=4, step_size=0.1,
        clip_threshold=1.0, seed=0)),
    "sensitivity_reduced_nsgd": (_quadratic, lambda f: sensitivity_reduced_nsgd(
        f, epsilon=1.0, delta=1e-6, epochs=1, batch_size=4, step_size=0.1,
        clip_threshold=1.0, seed=0)),
    "noisy_projected_sgd": (_logistic, lambda f: noisy_projected_sgd(
        f, epsilon=1.0, delta=1e-6, radius=1.0, seed=0)),
    "output_perturbation": (_logistic, lambda f: output_perturbation(
        f, epsilon=1.0, delta=1e-6, seed=0)),
    "objective_perturbation": (_logistic, lambda f: objective_perturbation(
        f, epsilon=1.0, delta=1e-6, seed=0)),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_a_declared_recentring_objective_is_refused(name):
    make, run = RUNS[name]
    f = make(_RecentringQuadratic if make is _quadratic else _RecentringLogistic)
    with pytest.raises(ValueError, match=REFUSED) as info:
        run(f)
    assert name in str(info.value)
    f.centred_records = False  # control: not refused for this reason
    try:
        run(f)
    except ValueError as exc:
        assert "centred_records" not in str(exc), exc


@pytest.mark.parametrize("name", ["dp_heavy_ball", "tree_momentum_nsgd"])
def test_the_non_private_run_is_not_refused(name):
    make, _ = RUNS[name]
    f = make(_RecentringQuadratic)
    if name == "dp_heavy_ball":
        res = dp_heavy_ball(f, epsilon=float("inf"), steps=2, seed=0)
    else:
        res = tree_momentum_nsgd(f, epsilon=float("inf"), delta=1e-6, epochs=1, batch_size=4,
                                 step_size=0.1, clip_threshold=1.0, seed=0)
    assert np.all(np.isfinite(np.asarray(res.trace)))
