"""A plug-in with a constant gamma (neither heavy ball nor Nesterov) tuned by the worst-case
error reports the fixed-gamma branch and bound's bracket (issue #33,
:mod:`dpbounds.tuning._certify_momentum`), not only the method-independent one; heavy ball
(gamma = 0) and Nesterov (gamma = beta) never reach it.

Oracle: a dense minimum over (alpha, beta, T) of the worst case computed by
``tests/tuning/momentum_worst_oracle.py`` (the method's own (x, y) iteration, written there).
The proven lower bound must be at most it and informative: within 2% of it (negative control:
the bound x1.02 exceeds it), and far above the method-independent bound that was the only one
before (more than 2x here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import dpbounds.tuning._linear_error as le
from dpbounds import extend as ex

sys.path.insert(0, str(Path(__file__).resolve().parent / "tuning"))
import momentum_worst_oracle as oracle  # noqa: E402

PROBLEM = dict(mu=0.1, L=1.0, d=4, N=1000.0, eps=1.0, S1=1.0, R=1.0)
TMAX = 30


def _method(gamma, beta="beta"):
    def step(x, grad, noise, p, memory):
        prev = memory.get("prev", x)  # x_{-1} = x_0
        memory["prev"] = x
        g = p["beta"] if gamma == "beta" else gamma
        y = x + g * (x - prev)
        b = p["beta"] if beta == "beta" else beta
        return x + b * (x - prev) - p["alpha"] * (grad(y) + noise)

    return ex.Method(f"plugin_momentum_{gamma}_{beta}", step=step, mechanism="laplace",
                     sensitivity=lambda f, p: f.l1_sensitivity / f.n,
                     linear=ex.LinearMomentum(alpha="alpha", beta=beta, gamma=gamma))


def test_fixed_gamma_plugin_reports_its_own_bracket():
    r = ex.tune(_method(0.5), PROBLEM, objective="error", max_horizon=TMAX, grid=3)
    t = r.tuned
    assert r.lower_bound_by.startswith("linear momentum with gamma = 0.5 (0 < alpha <= 4/L, "
                                       "0 <= beta < 1, T <= 30)")
    assert 0 < r.lower_bound <= t.worst_case <= t.worst_case_upper
    ell = 2.0 * (np.arange(1, TMAX + 1) / 1000.0) ** 2
    lam = oracle.lambda_grid(0.1, 1.0, 150)
    dense = min(float(np.min(oracle.worst(a, b, 0.5, lam, TMAX, 4, 1.0, ell)))
                for a in np.linspace(0.9, 1.2, 13) for b in np.linspace(0.45, 0.65, 11))
    assert r.lower_bound <= dense < 1.02 * r.lower_bound
    # before: the method-independent bound alone, less than half of it
    mmse, _ = le.proven_lower_bound(0.1, 1.0, 4, noise_var=lambda T: 2.0 * (
        np.asarray(T, dtype=float) / 1000.0) ** 2, initial_gap=1.0, max_horizon=TMAX,
        heavy=False, best=t.worst_case_upper)
    assert 2 * mmse < r.lower_bound
    assert f"within {100 * r.certified_gap:.3g}% of the best" in r.table()


class _Stop(Exception):
    pass


@pytest.mark.parametrize("gamma, beta, want", [(0.0, "beta", None), ("beta", "beta", None),
                                               (0.4, 0.4, None), (0.5, "beta", 0.5)])
def test_only_another_constant_gamma_reaches_the_fixed_gamma_branch_and_bound(
        gamma, beta, want, monkeypatch):
    seen = {}

    def capture(*args, **kwargs):
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(le, "proven_lower_bound", capture)
    with pytest.raises(_Stop):
        ex.tune(_method(gamma, beta), PROBLEM, objective="error", max_horizon=5, grid=3)
    assert seen["gamma"] == want
    assert seen["heavy"] == (gamma == 0.0)
    assert seen["nesterov"] == (gamma == "beta" or gamma == beta)
