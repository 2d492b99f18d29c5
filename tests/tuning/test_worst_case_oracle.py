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

The oracle's searches (8-10 CPU-s each) are stored in ``hb_worst_oracle_reference.json``
(``python -m tests.tuning.hb_worst_oracle`` writes it): every problem re-evaluates its stored
point with the oracle's recursion on the verification grid, and two problems re-run the whole
search and must find the stored point (``test_the_stored_oracle_is_the_oracles``), so a stale
or edited table fails. A changed problem has no entry and fails until the table is rewritten.
"""

from __future__ import annotations

import math

import pytest

import dpbounds.tuning.heavy_ball as heavy_ball
from dpbounds.tuning import tune_heavy_ball
from tests.tuning.hb_worst_oracle import (
    dense_minimum,
    fine_size,
    lambda_grid,
    problem_key,
    reference,
    worst_at,
)

#: the oracle's search settings (the stored table was written with them)
ORACLE_SEARCH = dict(grid=24, starts=3)

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
    stored = reference().get(problem_key(p, Tmax))
    assert stored is not None, "new problem: python -m tests.tuning.hb_worst_oracle"
    value, a, b, T = stored["value"], stored["alpha"], stored["beta"], stored["T"]
    oracle = worst_at(a, b, T, p, check)
    # the stored point still has the stored value (on the search's own grid)
    fine = lambda_grid(p["mu"], p["L"], fine_size(Tmax))
    assert worst_at(a, b, T, p, fine) == pytest.approx(value, rel=1e-9)
    assert tuned <= oracle * (1 + 1e-3), (tuned, oracle, (t.alpha, t.beta, t.horizon), (a, b, T))
    # the oracle's evaluation agrees with the library's attained value (a second method)
    assert abs(tuned / t.computed - 1) < 0.02, (tuned, t.computed)


def test_negative_control_a_reasonable_non_optimal_run_fails(_search_only):
    # the paper's Section-5 choice on Fig. 3's problem: 1.24x the tuned worst case here, so
    # the same comparison must reject it (the check can fail)
    p, Tmax = PROBLEMS[6]
    res = tune_heavy_ball(**p, max_horizon=Tmax)
    check = lambda_grid(p["mu"], p["L"], 4 * fine_size(Tmax))
    c = res.paper_section5
    paper = worst_at(c.alpha, c.beta, c.horizon, p, check)
    t = res.tuned
    assert paper > worst_at(t.alpha, t.beta, t.horizon, p, check) * (1 + 1e-3)


@pytest.mark.parametrize("index", [0, 2])  # the two cheapest searches (L/mu 1 and 4, T <= 60)
def test_the_stored_oracle_is_the_oracles(index):
    p, Tmax = PROBLEMS[index]
    value, a, b, T = dense_minimum(p, Tmax, **ORACLE_SEARCH)
    stored = reference()[problem_key(p, Tmax)]
    # Nelder-Mead may stop a few ulps elsewhere on another CPU's exp/log: the value agrees to
    # 1e-7, the point to 1e-3, the horizon exactly
    assert (T, value) == (stored["T"], pytest.approx(stored["value"], rel=1e-7))
    assert (a, b) == (pytest.approx(stored["alpha"], rel=1e-3),
                      pytest.approx(stored["beta"], rel=1e-3))


def test_every_problem_has_a_stored_search_and_nothing_else():
    assert sorted(reference()) == sorted(problem_key(p, T) for p, T in PROBLEMS)
