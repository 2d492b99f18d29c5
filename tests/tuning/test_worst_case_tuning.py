"""Issue 32 items 1, 4: ``tune hb`` minimises the worst-case error of the run as calibrated.

Oracles: the certified worst case of every row (``quadratic_worst_case``, itself checked by
brute force and Monte Carlo in ``tests/bounds/strongly_convex/test_quadratic_worst_case.py``),
the rigorous bound (25) (valid on the class: the worst case never exceeds it), the
method-independent lower bound (linear MMSE + Chebyshev), and a dense grid of (alpha, beta)
with a Nelder-Mead refinement of its best points (the search's oracle).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbounds.bounds.strongly_convex.gradient_noise import laplace_scale_at_horizon
from dpbounds.tuning import tune_heavy_ball
from dpbounds.tuning._quadratic import sampling_variance_of_instance
from dpbounds.tuning._worst_case_search import heavy_ball_worst_by_horizon, worst_case_lambda_grid

FIG3 = dict(mu=0.02, L=5.1028, d=20, n=10**5, epsilon=1.0, sensitivity=40.0, initial_gap=10.0)
ISSUE = dict(mu=1e-3, L=1.0, d=100, n=10**5, m=10**4, epsilon=0.1, sensitivity=1.0,
             initial_gap=5.0)


@pytest.fixture(scope="module")
def fig3():
    return tune_heavy_ball(**FIG3, max_horizon=400, grid=12)


def test_every_row_is_certified_and_below_its_bound(fig3):
    assert fig3.objective == "error"
    for c in fig3.choices():
        assert c.computed <= c.worst_case_upper <= c.computed * 1.0201, c
        assert c.computed <= c.bound * (1 + 1e-9), c  # (25) holds on the class
    assert fig3.by_bound is not None and fig3.by_bound.label.startswith("tuned by bound")
    assert fig3.lower_bound <= fig3.tuned.computed


def test_error_tuned_run_beats_the_bound_tuned_and_the_papers(fig3):
    t = fig3.tuned
    # the finding of issue 32: the bound's minimiser is a bad run (here 268x worse)
    assert fig3.by_bound.computed > 50 * t.computed
    assert t.computed <= fig3.paper_section5.computed
    assert t.computed <= fig3.classical.computed
    # the bound ranks the other way: a small bound is not a small error
    assert fig3.by_bound.bound < t.bound


def _objective(p: dict, Tmax: int, n_lambda: int = 129):
    m = p.get("m", p["n"])
    lam = worst_case_lambda_grid(p["mu"], p["L"], n_lambda)
    smp = sampling_variance_of_instance(p["sensitivity"], p["n"], m)

    def lap(T):
        b = np.asarray(laplace_scale_at_horizon(np.asarray(T, float), p["sensitivity"], p["n"],
                                                m, p["epsilon"]))
        return 2.0 * b * b

    def f(a, b):
        return heavy_ball_worst_by_horizon(np.atleast_1d(a), np.atleast_1d(b), lam, d=p["d"],
                                           Tmax=Tmax, laplace_var=lap, sampling_var=smp,
                                           initial_gap=p["initial_gap"], dist_sq=None)[1]
    return f


@pytest.mark.parametrize("problem,Tmax", [
    (FIG3, 400),
    (dict(mu=0.1, L=1.0, d=2, n=1000, epsilon=1.0, sensitivity=1.0, initial_gap=1.0), 200),
    (dict(ISSUE, mu=1e-2), 300),
])
def test_search_matches_a_dense_oracle(problem, Tmax):
    res = tune_heavy_ball(**problem, max_horizon=Tmax)
    f = _objective(problem, Tmax)
    L = problem["L"]
    xs = np.linspace(math.log(1e-3 / L), math.log(4 / L), 48)
    ys = np.linspace(0.0, math.log(1e4), 48)
    X, Y = np.meshgrid(xs, ys)
    F = f(np.exp(X.ravel()), -np.expm1(-Y.ravel()))
    # the grid on 129 eigenvalues only locates the basins: its minimum can sit on a gap of
    # that eigenvalue grid (at Fig. 3, 1.3% below the true worst case there); the refinement
    # and the comparison use 1025 eigenvalues
    f = _objective(problem, Tmax, n_lambda=1025)
    oracle = math.inf
    for i in np.argsort(F)[:4]:
        r = minimize(lambda z: math.log(max(float(f(math.exp(z[0]), -math.expm1(-z[1]))[0]),
                                            1e-300)),
                     [X.ravel()[i], Y.ravel()[i]], method="Nelder-Mead",
                     options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 400})
        oracle = min(oracle, math.exp(r.fun))
    tuned = float(f(res.tuned.alpha, res.tuned.beta)[0])
    assert tuned <= oracle * (1 + 1e-3), (tuned, oracle)


def test_objective_bound_reproduces_the_bound_tuner():
    res = tune_heavy_ball(**FIG3, max_horizon=300, grid=8, objective="bound")
    assert res.objective == "bound" and res.by_bound is None
    assert res.tuned.bound <= min(res.classical.bound, res.paper_section5.bound)
    err = tune_heavy_ball(**FIG3, max_horizon=300, grid=8)
    assert err.by_bound.alpha == res.tuned.alpha and err.by_bound.bound == res.tuned.bound


def test_computed_uses_the_admissible_start():
    # issue 32: the column started at F(x0) - F* = kappa E0 (0.161 > E0 = 0.1 here)
    res = tune_heavy_ball(0.5, 1, d=2, n=50, m=10, epsilon=0.3, sensitivity=4, initial_gap=0.1,
                          max_horizon=200, objective="bound")
    assert res.tuned.computed <= 0.1


def test_error_objective_needs_the_quadratic_class():
    with pytest.raises(ValueError, match="objective='error' needs function_class"):
        tune_heavy_ball(**FIG3, max_horizon=50, function_class="smooth_strongly_convex",
                        objective="error")
    with pytest.raises(ValueError, match="objective must be"):
        tune_heavy_ball(**FIG3, max_horizon=50, objective="run")


def test_cli_prints_both_measures():
    out = subprocess.run([sys.executable, "-m", "dpbounds", "tune", "hb", "--mu", "0.1", "--L",
                          "1", "--d", "2", "--n", "1000", "--eps", "1", "--S1", "1", "--E0", "1",
                          "--max-horizon", "100"], capture_output=True, text=True, check=True)
    assert "worst case" in out.stdout and "tuned by bound (25)" in out.stdout
    assert "rank runs by the worst case" in out.stdout
