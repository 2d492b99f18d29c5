"""Shared table of every algorithm in dpbounds.algorithms, for the property tests.

``CASES[name](objective, **kw)`` runs one small, fast configuration (``kw``: ``trials``,
``seed``, ``x0``); ``OBJECTIVES[name]`` lists the objectives it accepts. Tests take the
table from the ``algorithm_table`` fixture and get one test per case by naming an argument
``case_name`` (see ``pytest_generate_tests``).
"""

from __future__ import annotations

import numpy as np
import pytest

import dpbounds.algorithms as A
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import (
    HuberSVM,
    LogisticRegression,
    NonconvexLogisticRegression,
    QuadraticObjective,
)

_A, _Y = kuru_synthetic(n=120, d=3, seed=0)
LOGISTIC = LogisticRegression(_A, _Y, l2=0.05, l1_radius=20.0)
HUBER = HuberSVM(_A / np.linalg.norm(_A, axis=1, keepdims=True), _Y, l2=0.05)
NONCONVEX = NonconvexLogisticRegression(_A / np.linalg.norm(_A, axis=1, keepdims=True), _Y,
                                        lam=0.1)
# a rotated quadratic: its gradient goes through a dense (trials, d) @ (d, d) product
QUADRATIC = QuadraticObjective.random(3, 0.5, 2.0, n=40, offset_scale=0.3, seed=1)

CASES = {
    "dp_gd[laplace]": lambda f, **kw: A.dp_gd(f, epsilon=1.0, steps=6, batch_size=30, **kw),
    "dp_gd[gaussian]": lambda f, **kw: A.dp_gd(f, epsilon=1.0, delta=1e-5, steps=6,
                                               mechanism="gaussian", clip_threshold=1.0, **kw),
    "dp_gd[gaussian, add/remove]": lambda f, **kw: A.dp_gd(
        f, epsilon=1.0, delta=1e-5, steps=6, mechanism="gaussian", clip_threshold=1.0,
        neighbouring="add/remove", public_n=100, **kw),
    "dp_heavy_ball": lambda f, **kw: A.dp_heavy_ball(f, epsilon=1.0, steps=6, batch_size=30,
                                                     **kw),
    "dp_nag": lambda f, **kw: A.dp_nag(f, epsilon=1.0, steps=6, **kw),
    "dp_nag_opt": lambda f, **kw: A.dp_nag_opt(f, epsilon=1.0, steps=6, **kw),
    "dp_masg": lambda f, **kw: A.dp_masg(f, epsilon=1.0, steps=6, **kw),
    "dp_masg_opt": lambda f, **kw: A.dp_masg_opt(f, epsilon=1.0, steps=6, batch_size=40,
                                                 **kw),
    "dp_agd": lambda f, **kw: A.dp_agd(f, epsilon=0.5, delta=1e-6, splits=8, **kw),
    "dp_sgd[without_replacement]": lambda f, **kw: A.dp_sgd(
        f, epsilon=1.0, delta=1e-5, steps=6, batch_size=20, step_size=0.3, clip_threshold=1.0,
        **kw),
    "dp_sgd[poisson]": lambda f, **kw: A.dp_sgd(
        f, epsilon=1.0, delta=1e-5, steps=6, batch_size=20, step_size=0.3, clip_threshold=1.0,
        sampling="poisson", public_n=120, **kw),
    "dp_nsgd": lambda f, **kw: A.dp_nsgd(f, epsilon=1.0, delta=1e-5, steps=6, batch_size=20,
                                         step_size=0.3, regulariser=0.1, **kw),
    "noisy_projected_sgd": lambda f, **kw: A.noisy_projected_sgd(
        f, epsilon=1.0, delta=1e-5, radius=3.0, steps=8, **kw),
    "output_perturbation": lambda f, **kw: A.output_perturbation(f, epsilon=1.0, delta=1e-5,
                                                                 **kw),
    "objective_perturbation": lambda f, **kw: A.objective_perturbation(
        f, epsilon=1.0, delta=1e-5, **kw),
    "tree_momentum_nsgd": lambda f, **kw: A.tree_momentum_nsgd(
        f, epsilon=2.0, delta=1e-5, epochs=2, step_size=0.05, batch_size=20, **kw),
    "sensitivity_reduced_nsgd": lambda f, **kw: A.sensitivity_reduced_nsgd(
        f, epsilon=2.0, delta=1e-5, epochs=2, step_size=0.05, batch_size=20, **kw),
}
# the objectives each algorithm is run on (those it accepts)
OBJECTIVES = {name: [LOGISTIC, HUBER] for name in CASES}
OBJECTIVES.update({
    "dp_gd[laplace]": [LOGISTIC, QUADRATIC], "dp_heavy_ball": [LOGISTIC, QUADRATIC],
    "dp_nag": [LOGISTIC, QUADRATIC], "dp_masg": [LOGISTIC, QUADRATIC],
    "dp_sgd[without_replacement]": [LOGISTIC, QUADRATIC, HUBER],
    "noisy_projected_sgd": [LOGISTIC], "dp_nag_opt": [LOGISTIC], "dp_masg_opt": [LOGISTIC],
    "tree_momentum_nsgd": [NONCONVEX, LOGISTIC], "sensitivity_reduced_nsgd": [NONCONVEX],
})


def pytest_generate_tests(metafunc):
    if "case_name" in metafunc.fixturenames:
        metafunc.parametrize("case_name", sorted(CASES))


@pytest.fixture(scope="session")
def algorithm_table():
    return CASES, OBJECTIVES
