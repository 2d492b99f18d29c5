"""Issue 32 item 4: the error tuner of DP heavy ball against an independent dense oracle.

On 20 problems (L/mu 1 to 1e6, eps 0.01 to 10, d 1 to 1e4, m/n 0.01 to 1) the tuned run's
worst-case error is within 0.1% of the best an independent search finds
(``tests/tuning/hb_worst_oracle.py``: the formulas re-implemented step by step, a 24 x 24 grid
at every horizon, Nelder-Mead from its 3 best points on a grid of 8 eigenvalues per degree per
spacing), both evaluated on the oracle's verification grid (4x finer), like with like.
Horizons are capped (60-100) to keep the test cheap; where the cap binds (large L/mu) the
problem is still a problem: the best (alpha, beta) at T <= cap. The negative control: the
paper's Section-5 choice, a reasonable run that is not the optimum, fails the same check.
Measured (this file's problems, 2026-12-02): tuner/oracle - 1 in [-1.0%, +0.046%]; before the
polish's eigenvalue grid scaled with the degree, three problems with T capped at L/mu 1e3-1e4
were 0.11-0.13% above.
"""

from __future__ import annotations

import math

import pytest

import dpbounds.tuning.heavy_ball as heavy_ball
from dpbounds.tuning import tune_heavy_ball
from tests.tuning.hb_worst_oracle import dense_minimum, fine_size, lambda_grid, worst_at

# (problem, max_horizon)
PROBLEMS = [
    (dict(mu=1.0, L=1.0, d=5, n=1000, epsilon=1.0, sensitivity=1.0, initial_gap=1.0), 60),
    (dict(mu=0.5, L=1.0, d=2, n=50, m=10, epsilon=0.3, sensitivity=4.0, initial_gap=0.1), 60),
    (dict(mu=0.25, L=1.0, d=1, n=100, m=10, epsilon=0.3, sensitivity=4.0, initial_gap=0.1), 60),
    (dict(mu=0.1, L=1.0, d=10, n=10**4, epsilon=1.0, sensitivity=1.0, initial_gap=1.0), 80),
    (dict(mu=0.05, L=1.0, d=2, n=10**4, m=100, epsilon=0.01, sensitivity=1.0,
          initial_gap=1.0), 80),
    (dict(mu=0.1, L=1.0, d=2, n=1000, epsilon=1.0, sensitivity=1.0, initial_gap=1.0), 80),
    (dict(mu=0.02, L=5.1028, d=20, n=10**5, epsilon=1.0, sensitivity=40.0,
          initial_gap=10.0), 100),                                           # Fig. 3
    (dict(mu=0.03, L=1.0, d=3, n=10**4, epsilon=0.03, sensitivity=1.0, initial_gap=1.0), 80),
    (dict(mu=0.01, L=1.0, d=10, n=10**5, epsilon=1.0, sensitivity=1.0, initial_gap=1.0), 100),
    (dict(mu=0.3, L=30.0, d=3, n=5000, m=500, epsilon=0.5, sensitivity=10.0,
          initial_gap=100.0), 100),
    (dict(mu=0.01, L=1.0, d=10**4, n=10**6, epsilon=10.0, sensitivity=1.0,
          initial_gap=1.0), 100),
    (dict(mu=0.003, L=1.0, d=50, n=10**5, epsilon=3.0, sensitivity=1.0, initial_gap=1.0), 100),
    (dict(mu=1e-3, L=1.0, d=100, n=10**5, m=10**4, epsilon=0.1, sensitivity=1.0,
          initial_gap=5.0), 100),                                            # the issue's
    (dict(mu=1e-3, L=1.0, d=10, n=10**6, epsilon=1.0, sensitivity=1.0, initial_gap=1.0), 100),
    (dict(mu=1e-3, L=0.1, d=50, n=10**5, epsilon=10.0, sensitivity=0.1, initial_gap=1.0), 100),
    (dict(mu=1e-4, L=1.0, d=10, n=10**7, epsilon=1.0, sensitivity=1.0, initial_gap=10.0), 100),
    (dict(mu=1e-4, L=1.0, d=5, n=10**5, m=10**3, epsilon=0.3, sensitivity=1.0,
          initial_gap=1.0), 100),
    (dict(mu=1e-5, L=1.0, d=1, n=10**8, epsilon=10.0, sensitivity=1.0, initial_gap=10.0), 60),
    (dict(mu=1e-6, L=1.0, d=1, n=10**9, epsilon=10.0, sensitivity=1.0, initial_gap=10.0), 60),
    (dict(mu=1e-6, L=1.0, d=20, n=10**6, epsilon=0.01, sensitivity=1.0, initial_gap=1.0), 80),
]


def _ids(item):
    p, T = item
    return f"kappa{p['L'] / p['mu']:.0e}-eps{p['epsilon']:g}-d{p['d']}-T{T}"


class _NoBracket:
    """Stands in for the branch and bound's result: this file checks the search's point, and
    the bracket (a fifth of each tune's CPU) is checked in ``tests/tuning/test_certify_error.py``
    (against dense evaluation) and by the tuner tests in ``test_worst_case_tuning.py``."""

    lower = -math.inf


@pytest.fixture
def _search_only(monkeypatch):
    monkeypatch.setattr(heavy_ball, "certify_error_minimum", lambda *a, **k: _NoBracket())


@pytest.mark.slow
@pytest.mark.parametrize("item", PROBLEMS, ids=[_ids(i) for i in PROBLEMS])
def test_tuned_run_within_0_1_percent_of_a_dense_oracle(item, _search_only):
    p, Tmax = item
    res = tune_heavy_ball(**p, max_horizon=Tmax)
    check = lambda_grid(p["mu"], p["L"], 4 * fine_size(Tmax))
    t = res.tuned
    tuned = worst_at(t.alpha, t.beta, t.horizon, p, check)
    _, a, b, T = dense_minimum(p, Tmax, grid=24, starts=3)
    oracle = worst_at(a, b, T, p, check)
    assert tuned <= oracle * (1 + 1e-3), (tuned, oracle, (t.alpha, t.beta, t.horizon), (a, b, T))
    # the oracle's evaluation agrees with the library's attained value (a second method)
    assert abs(tuned / t.computed - 1) < 0.02, (tuned, t.computed)


def test_negative_control_a_reasonable_non_optimal_run_fails():
    # the paper's Section-5 choice on Fig. 3's problem: 1.24x the tuned worst case here, so
    # the same comparison must reject it (the check can fail)
    p, Tmax = PROBLEMS[6]
    res = tune_heavy_ball(**p, max_horizon=Tmax)
    check = lambda_grid(p["mu"], p["L"], 4 * fine_size(Tmax))
    c = res.paper_section5
    paper = worst_at(c.alpha, c.beta, c.horizon, p, check)
    t = res.tuned
    assert paper > worst_at(t.alpha, t.beta, t.horizon, p, check) * (1 + 1e-3)
