"""A Nesterov plug-in (``LinearMomentum(alpha, beta, gamma=beta)``) tuned by the worst-case
error reports the Nesterov branch and bound's bracket (issues #32/#33,
:mod:`dpbounds.tuning._certify_nesterov`), not only the method-independent one.

Oracle: a dense minimum over (alpha, beta, T) of the worst case computed by
``tests/tuning/nesterov_worst_oracle.py`` (the method's own (x, y) iteration, written there).
The proven lower bound must be at most it (a lower bound of the family's least worst case) and
informative: within 5% of it (negative control: the bound x1.05 exceeds it), and far above the
method-independent bound that was the only one before (more than 2x here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dpbounds import extend as ex

sys.path.insert(0, str(Path(__file__).resolve().parent / "tuning"))
import nesterov_worst_oracle as oracle  # noqa: E402

PROBLEM = dict(mu=0.1, L=1.0, d=4, N=1000.0, eps=1.0, S1=1.0, R=1.0)
TMAX = 30


def _nag(x, grad, noise, p, memory):
    prev = memory.get("prev", x)  # x_{-1} = x_0
    memory["prev"] = x
    y = x + p["beta"] * (x - prev)
    return y - p["alpha"] * (grad(y) + noise)


def test_nesterov_plugin_reports_its_own_bracket():
    from dpbounds.tuning._linear_error import proven_lower_bound

    m = ex.Method("plugin_nag", step=_nag, mechanism="laplace",
                  sensitivity=lambda f, p: f.l1_sensitivity / f.n,
                  linear=ex.LinearMomentum(alpha="alpha", beta="beta", gamma="beta"))
    r = ex.tune(m, PROBLEM, objective="error", max_horizon=TMAX, grid=3)
    t = r.tuned
    assert r.lower_bound_by.startswith("Nesterov (gamma = beta; alpha > 0, 0 <= beta < 1")
    assert 0 < r.lower_bound <= t.worst_case <= t.worst_case_upper
    # the plug-in's noise: Laplace b_T = S1 T / (N eps), variance 2 b_T^2 (to its bisection)
    ell = 2.0 * (np.arange(1, TMAX + 1) / 1000.0) ** 2
    assert t.noise_variance == pytest_approx(ell[t.horizon - 1])
    lam = oracle.lambda_grid(0.1, 1.0, 150)
    dense = min(float(np.min(oracle.worst(a, b, lam, TMAX, 4, 1.0, ell)))
                for a in np.linspace(0.9, 1.2, 13) for b in np.linspace(0.45, 0.65, 11))
    assert r.lower_bound <= dense < 1.05 * r.lower_bound
    # before: the method-independent bound alone, less than half of it
    mmse, _ = proven_lower_bound(0.1, 1.0, 4, noise_var=lambda T: 2.0 * (
        np.asarray(T, dtype=float) / 1000.0) ** 2, initial_gap=1.0, max_horizon=TMAX,
        heavy=False, best=t.worst_case_upper)
    assert 2 * mmse < r.lower_bound
    assert f"within {100 * r.certified_gap:.3g}% of the best" in r.table()


def pytest_approx(v):
    import pytest

    return pytest.approx(v, rel=1e-5)
