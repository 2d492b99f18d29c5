"""Fixtures shared by the verify tests that run the Laplace methods on one small problem
(``test_drawn_noise.py`` and ``test_reaccount_laplace.py``): the problem, and the four Laplace
runs each of them checks (with the keyword arguments each needs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dpbounds.algorithms import dp_gd, dp_heavy_ball, dp_masg, dp_nag
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression

_LAPLACE_RUNS = [(dp_heavy_ball, dict(batch_size=40)),
                 (dp_nag, dict(batch_size=40, allocation="optimal")),
                 (dp_masg, dict(batch_size=40)),
                 (dp_gd, {})]


@pytest.fixture(scope="module")
def objective() -> LogisticRegression:
    """Kuru's synthetic logistic regression, n = 400, d = 5, in an L1 ball of radius 5."""
    A, y = kuru_synthetic(n=400, d=5, seed=0)
    return LogisticRegression.kuru(A, y, lam=0.01, l1_radius=5.0)


@pytest.fixture(params=_LAPLACE_RUNS, ids=[alg.__name__ for alg, _ in _LAPLACE_RUNS])
def laplace_run(request: pytest.FixtureRequest) -> tuple[Callable[..., Any], dict[str, Any]]:
    """One Laplace method and its keyword arguments: DP heavy ball, DP-NAG (optimal
    allocation) and DP-MASG on batches of 40, and full-batch DP-GD."""
    return request.param
