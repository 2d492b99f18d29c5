"""Issue 32: ``tune_heavy_ball(function_class="smooth_strongly_convex", objective="error")``.

The tuner minimises the noise-aware Lyapunov bound (a certified upper bound on the worst case
of DP heavy ball as run over all L-smooth mu-strongly convex F) and shows each row's bracket,
the exact quadratic worst case below it. The oracles here share no code with the tuner's
search or its fast SDP path:

* the real algorithm (``dp_heavy_ball``, Monte Carlo with a 4.5-sigma interval) on the worst
  quadratic instance, and the exact quadratic worst case (``quadratic_worst_case``);
* the public, cvxpy-based ``lyapunov_bound`` on a brute-force grid of (alpha, beta), with the
  DP noise's second moment computed here from first principles (Laplace scale b = S_1 T /
  (n eps), variance 2 b^2 in each of the d coordinates);
* negative controls: the per-coordinate noise mapping (d times too small) must break the
  bracket, and a poor choice (the paper's) must fail the oracle comparison.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case
from dpbounds.objectives import QuadraticObjective
from dpbounds.pep import FixedStepMethod, lyapunov_bound
from dpbounds.tuning import tune_heavy_ball

#: a small problem: kappa 5, d 20, the full batch (no sampling noise), E0 = 1
P = dict(mu=0.2, L=1.0, d=20, n=1000, epsilon=1.0, sensitivity=1.0, initial_gap=1.0)
TMAX = 40
#: the tuner against the oracle's best (the tuner uses 16 rates refined by bisection, the
#: oracle lyapunov_bound's own grid of rates; both are valid bounds)
ORACLE_TOL = 0.02


@pytest.fixture(scope="module")
def tuned():
    return tune_heavy_ball(**P, max_horizon=TMAX, function_class="smooth_strongly_convex",
                           objective="error", grid=3)


def _noise_second_moment(T: int, per_coordinate: bool = False) -> float:
    """E||xi_t||^2 of the run of horizon T, from first principles: Laplace scale
    b = S_1 / (n eps / T) (m = n: no sampling noise, no amplification), variance 2 b^2 in each
    of the d coordinates. ``per_coordinate``: the mistake (one coordinate's variance only)."""
    b = P["sensitivity"] * T / (P["n"] * P["epsilon"])
    return 2 * b * b * (1 if per_coordinate else P["d"])


def _bracket_ok(upper: float, lower: float) -> bool:
    """The bracket check: the class's worst case lies between them, so lower <= upper."""
    return lower <= upper * (1 + 1e-12)


def _mc_error(alpha: float, beta: float, T: int, trials: int = 4000) -> tuple[float, float, float]:
    """(exact worst quadratic error, Monte Carlo mean, its standard error) of dp_heavy_ball on
    the worst quadratic instance: start in coordinate 0 with F(x0) - F* = E0."""
    b = P["sensitivity"] * T / (P["n"] * P["epsilon"])
    wc = quadratic_worst_case(P["mu"], P["L"], P["d"], alpha=alpha, beta=beta, steps=T,
                              laplace_var=2 * b * b, initial_gap=P["initial_gap"])
    lam = wc.instance(P["d"])
    x_star = np.zeros(P["d"])
    x_star[0] = math.sqrt(2 * P["initial_gap"] / lam[0])  # x0 = 0: F(x0) - F* = E0
    offsets = np.zeros((P["n"], P["d"]))  # +-S/2 in one coordinate: sensitivity S_1
    offsets[: P["n"] // 2, 1] = P["sensitivity"] / 2
    offsets[P["n"] // 2:, 1] = -P["sensitivity"] / 2
    f = QuadraticObjective(lam, b=lam * x_star, offsets=offsets,
                           offset_l1_radius=P["sensitivity"] / 2)
    run = dp_heavy_ball(f, epsilon=P["epsilon"], steps=T, step_size=alpha, momentum=beta,
                        trials=trials, seed=11)
    sub = run.trace[:, -1]
    return wc.value, float(np.mean(sub)), float(np.std(sub, ddof=1) / math.sqrt(sub.size))


def test_bracket_and_monte_carlo(tuned):
    t = tuned.tuned
    assert tuned.objective == "error" and tuned.setting["function_class"] == \
        "smooth_strongly_convex"
    assert 1 <= t.horizon <= TMAX and math.isfinite(t.bound)
    # the per-row bracket: quadratic lower end <= Lyapunov upper end, on every certified row
    for c in tuned.choices():
        if math.isfinite(c.bound):
            assert _bracket_ok(c.bound, c.computed), c
    exact, mean, se = _mc_error(t.alpha, t.beta, t.horizon)
    assert exact == pytest.approx(t.computed, rel=1e-9)  # the row's lower end is this instance's
    assert abs(mean - exact) <= 4.5 * se, (mean, se, exact)  # the algorithm attains it
    assert t.bound >= mean - 4.5 * se, (t.bound, mean, se)  # and the upper end is above it
    # the proven bracket of the optimum: below every Lyapunov bound, so below the tuned one
    assert 0 < tuned.lower_bound <= t.bound
    assert tuned.certified_gap == pytest.approx(t.bound / tuned.lower_bound - 1)
    # the table names both ends
    table = tuned.table()
    assert "upper end" in table and "lower end" in table and "not a proven optimum" in table


def test_wrong_noise_mapping_breaks_the_bracket(tuned):
    # negative control: charging the Laplace variance of ONE coordinate (2 b^2 instead of
    # 2 d b^2) gives a "bound" below the exact quadratic worst case the bracket check rejects
    t = tuned.tuned
    method = FixedStepMethod.heavy_ball(t.alpha, t.beta)
    wrong = lyapunov_bound(method, P["mu"], P["L"], t.horizon, initial_gap=P["initial_gap"],
                           noise_variance=_noise_second_moment(t.horizon, per_coordinate=True),
                           grid=6)
    assert not _bracket_ok(wrong.value, t.computed), (wrong.value, t.computed)


def test_against_a_brute_force_oracle(tuned):
    t = tuned.tuned
    # the tuned value, recomputed by the public (cvxpy) lyapunov_bound at its (alpha, beta, T)
    # with the noise derived here: the two agree, two-sided (both are the least bound over
    # their rates; measured: 0.5% apart at lyapunov_bound's default 25 rates, 0.2% at 40)
    here = lyapunov_bound(FixedStepMethod.heavy_ball(t.alpha, t.beta), P["mu"], P["L"],
                          t.horizon, initial_gap=P["initial_gap"],
                          noise_variance=_noise_second_moment(t.horizon))
    assert here.value == pytest.approx(t.bound, rel=ORACLE_TOL)
    # brute force: a grid of (alpha, beta) at the tuned horizon; the tuner minimises over
    # every T <= TMAX as well, so it must not be worse than the grid's best
    best = math.inf
    for aL in (0.4, 0.8, 1.2, 1.6, 1.9):
        for beta in (0.0, 0.3):
            v = lyapunov_bound(FixedStepMethod.heavy_ball(aL / P["L"], beta), P["mu"], P["L"],
                               t.horizon, initial_gap=P["initial_gap"],
                               noise_variance=_noise_second_moment(t.horizon), grid=6).value
            best = min(best, v)
    assert math.isfinite(best)
    assert t.bound <= best * (1 + ORACLE_TOL), (t.bound, best)
    # negative control: the paper's choice is far from the oracle's best, and the check says so
    assert not tuned.paper_section5.bound <= best * (1 + ORACLE_TOL)


@pytest.mark.parametrize("kw, name", [
    (dict(mu=1.0, L=1.0), "mu"),            # the Lyapunov SDP needs mu < L
    (dict(mu=1e-12, L=1.0), "mu"),          # beyond the SDP's resolution
    (dict(mu=0.2, L=1.0, objective="errors"), "objective"),
])
def test_bad_input_names_the_parameter(kw, name):
    base = {k: v for k, v in P.items() if k not in ("mu", "L")}
    args = dict(objective="error")
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        tune_heavy_ball(**args, **base, max_horizon=10, function_class="smooth_strongly_convex",
                        grid=3)
