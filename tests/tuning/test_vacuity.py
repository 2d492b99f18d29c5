"""The tuner says when its bound is vacuous: not below F(x_0) - F*, what T = 0 achieves.

Oracle: the trivial bound itself (the initial gap given, or L/2 times the squared initial
distance, by L-smoothness at x*); a control problem whose bound is far below it.
"""

from dpbounds.tuning import tune_heavy_ball

HOPELESS = dict(mu=0.001, L=1.0, d=10, n=100, epsilon=0.01, sensitivity=1.0, max_horizon=20,
                grid=8)  # noise of scale T / (n eps) = 20 per step: nothing can be certified
FIG3 = dict(mu=0.02, L=5.1028, d=20, n=10**5, epsilon=1.0, sensitivity=40.0, max_horizon=300,
            grid=8)


def test_a_hopeless_problem_is_flagged_vacuous():
    res = tune_heavy_ball(objective="bound", **HOPELESS, initial_gap=1.0)
    assert res.trivial_bound == 1.0
    assert res.tuned.bound >= 1.0 and res.vacuous
    assert "VACUOUS" in res.table()


def test_the_trivial_bound_from_the_initial_distance():
    res = tune_heavy_ball(objective="bound", **HOPELESS, initial_distance_sq=3.0)
    assert res.trivial_bound == 0.5 * 1.0 * 3.0
    assert res.vacuous == (res.tuned.bound >= 1.5)


def test_control_an_informative_problem_is_not_flagged():
    res = tune_heavy_ball(objective="bound", **FIG3, initial_gap=10.0)
    assert res.tuned.bound < 0.8 * res.trivial_bound
    assert not res.vacuous and "VACUOUS" not in res.table()
