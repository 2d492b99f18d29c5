"""Issue 19 item 2: the DP-NAG / DP-MASG tuner (horizon by Remark 4.1, Prop. 4.2's allocation)
finds the optimum of (32) over every horizon and says so (``certified_gap == 0``).

Oracle: ``nag_oracle.py`` (schedules, O(T^2) direct weight products and the Hoelder optimum,
written from the paper) evaluated at every T <= Tmax. Two-sided: the tuner's bound equals the
oracle's minimum within 0.1% (and is not below it beyond rounding: it is a bound of a real
allocation). A negative control (the uniform budget eps/T at the same T) is worse.
"""

from __future__ import annotations

import pytest

from dpbounds.tuning import tune_nesterov as _tune_nesterov
from tests.tuning.nag_oracle import best_horizon, best_horizon_subsampled


def tune_nesterov(*args, **kwargs):  # the bound's rows (the paper's tuner)
    return _tune_nesterov(*args, objective="bound", **kwargs)


TMAX = 150
# (kappa, eps, d, n, S1): kappa 1..1e6, eps 0.01..10
PROBLEMS = [
    (1.0, 1.0, 10, 10**5, 1.0), (1.0, 0.01, 5, 10**4, 1.0), (3.0, 10.0, 50, 10**6, 2.0),
    (10.0, 0.1, 20, 10**5, 4.0), (10.0, 10.0, 2, 10**3, 1.0), (30.0, 1.0, 100, 10**6, 1.0),
    (100.0, 0.01, 10, 10**6, 1.0), (100.0, 1.0, 20, 10**5, 40.0), (255.14, 1.0, 20, 10**5, 40.0),
    (300.0, 0.3, 1, 10**4, 0.5), (1e3, 10.0, 10, 10**5, 1.0), (1e3, 0.1, 30, 10**6, 2.0),
    (3e3, 1.0, 5, 10**5, 1.0), (1e4, 0.01, 10, 10**7, 1.0), (1e4, 3.0, 200, 10**6, 1.0),
    (3e4, 0.3, 10, 10**5, 1.0), (1e5, 1.0, 10, 10**6, 1.0), (1e5, 10.0, 1000, 10**7, 10.0),
    (1e6, 0.03, 10, 10**6, 1.0), (1e6, 5.0, 50, 10**5, 1.0),
]


@pytest.mark.parametrize("kappa,eps,d,n,S", PROBLEMS)
def test_nesterov_tuner_matches_the_brute_force_oracle(kappa, eps, d, n, S):
    mu, L, E0 = 1.0 / kappa, 1.0, 1.0
    res = tune_nesterov(mu, L, d=d, n=n, epsilon=eps, sensitivity=S, initial_gap=E0,
                        max_horizon=TMAX, reference_horizons=())
    for choice in res.choices:
        oracle, T = best_horizon(choice.method, mu, L, d, n, eps, S, E0, TMAX)
        # equal to brute force (so within the 0.1%) at the same horizon
        assert choice.bound == pytest.approx(oracle, rel=1e-9), (choice.method, T)
        assert choice.horizon == T
        assert choice.certified_gap == 0.0  # every horizon evaluated: proven optimal


def test_refining_the_horizon_range_never_makes_it_worse_and_control():
    kw = dict(d=20, n=10**5, epsilon=1.0, sensitivity=40.0, initial_gap=10.0)
    vals = [tune_nesterov(0.02, 5.1, max_horizon=Tm, reference_horizons=(100,), **kw)
            for Tm in (50, 100, 200)]
    for k in range(2):  # nag, masg rows
        bounds = [r.choices[3 * k].bound for r in vals]
        assert bounds[2] <= bounds[1] <= bounds[0]
        # negative control: the uniform budget at T = 100 is worse than the tuned row
        assert vals[2].choices[3 * k + 1].bound > bounds[2]


@pytest.mark.parametrize("kappa,eps,d,n,m,S", [
    (10.0, 1.0, 10, 10**5, 1000, 1.0), (1e3, 0.1, 20, 10**6, 10**4, 2.0),
    (3e4, 0.3, 10, 10**5, 10**3, 1.0),
])
def test_subsampled_allocation_matches_the_kkt_oracle(kappa, eps, d, n, m, S):
    mu, L, E0, Tmax = 1.0 / kappa, 1.0, 1.0, 16
    res = tune_nesterov(mu, L, d=d, n=n, m=m, epsilon=eps, sensitivity=S, initial_gap=E0,
                        max_horizon=Tmax, reference_horizons=())
    for choice in res.choices:
        oracle, T = best_horizon_subsampled(choice.method, mu, L, d, n, m, eps, S, E0, Tmax)
        assert choice.bound <= oracle * (1 + 1e-3)   # within 0.1% of brute force
        assert choice.bound >= oracle * (1 - 1e-6)   # no better than the optimum
        assert 0.0 <= choice.certified_gap <= 1e-3
        # the certified lower bound is below the (independent) KKT-bisection optimum
        assert choice.lower_bound <= oracle * (1 + 1e-12)
        assert choice.bound <= (1 + choice.certified_gap) * oracle * (1 + 1e-12)
