"""Tuning results and the CLI (tune hb / tune nag / rate hb)."""

import functools
import json
import re
from collections.abc import Mapping

import numpy as np
import pytest

from dpbounds.cli import main
from dpbounds.settings import LOGISTIC_REGRESSION_SMOOTHNESS, logistic_regression
from dpbounds.tuning import heavy_ball_dp_bound, tune_heavy_ball, tune_nesterov


class _Fig3(Mapping):
    """Kuru et al.'s Section-5 problem (dpbounds.settings), the initial gap given per test;
    computed at first use, not at collection (its L needs the 1e5 x 20 data set: 0.8 CPU-s of
    every ``pytest --collect-only``)."""

    @functools.cached_property
    def _problem(self) -> dict:
        return {k: v for k, v in logistic_regression().items() if k != "initial_gap"}

    def __getitem__(self, key):
        return self._problem[key]

    def __iter__(self):
        return iter(self._problem)

    def __len__(self):
        return len(self._problem)


FIG3 = _Fig3()


def test_tuned_heavy_ball_beats_classical_choices():
    res = tune_heavy_ball(objective="bound", **FIG3, initial_gap=10.0, max_horizon=300, grid=12)
    assert res.tuned.bound <= res.classical.bound * (1 + 1e-12)
    assert res.tuned.bound <= res.paper_section5.bound * (1 + 1e-12)
    assert res.improvement >= 1.0
    # PEPit-style: the exactly computed error on a quadratic never exceeds the bound
    for c in (res.tuned, res.classical, res.paper_section5):
        assert c.computed <= c.bound
    # the bound at the tuned point is the grid minimum over T (recomputed independently)
    B = heavy_ball_dp_bound(res.tuned.alpha, res.tuned.beta, FIG3["mu"], FIG3["L"], d=20,
                            n=10**5, epsilon=1.0, sensitivity=40.0,
                            initial_distance_sq=2 * 10.0 / FIG3["mu"], max_horizon=300)[0]
    assert res.tuned.horizon == int(np.argmin(B)) + 1
    assert "Polyak" in res.table()


def test_tuned_nesterov_beats_uniform_budget():
    res = tune_nesterov(**FIG3, initial_gap=10.0, max_horizon=500, reference_horizons=(100,))
    rows = {r["label"]: r for r in res.rows()}
    assert rows["DP-NAG-opt at T=100"]["bound"] <= rows["DP-NAG uniform eps/T"]["bound"]
    assert rows["DP-NAG-opt (Remark 4.1 T)"]["bound"] <= rows["DP-NAG-opt at T=100"]["bound"]
    for r in res.rows():
        assert r["computed"] <= r["bound"]


def test_cli_rate_hb(capsys):
    assert main(["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rho_quadratic"] == pytest.approx(0.547722557, rel=1e-8)
    assert out["verified"] and out["rho_lmi"] >= out["rho_quadratic"]
    assert out["rho_lmi_lower"] <= out["rho_lmi"] and out["rho_lmi_lower_proof"]
    # the text shows the bracket to enough digits that its two ends differ (it is ~3e-7 wide)
    assert main(["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1"]) == 0
    text = capsys.readouterr().out
    lo, hi = (float(v) for v in re.search(r"bracket \[([\d.]+), ([\d.]+)\]", text).groups())
    assert lo < hi and hi == pytest.approx(out["rho_lmi"], abs=1e-9)
    assert "lower end proven by" in text
    assert main(["rate", "hb", "--alpha", "1.9", "--beta", "0.9", "--mu", "0.1", "--L", "1"]) == 0
    assert "no certificate below rho = 1" in capsys.readouterr().out


def test_cli_tune_and_errors(capsys):
    args = ["--mu", "0.02", "--L", f"{LOGISTIC_REGRESSION_SMOOTHNESS}", "--d", "20", "--n",
            "100000", "--eps", "1", "--sensitivity", "40", "--max-horizon", "200"]
    assert main(["tune", "nag", *args]) == 0
    assert "DP-NAG-opt" in capsys.readouterr().out
    assert main(["tune", "hb", *args[:-2], "--max-horizon", "100", "--eps", "-1"]) == 2
    assert "epsilon" in capsys.readouterr().err


def test_lmi_class_tuning_is_certified():
    from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate

    res = tune_heavy_ball(objective="bound",
                          mu=0.5, L=1.0, d=2, n=10**4, epsilon=1.0, sensitivity=1.0,
                          initial_gap=1.0, max_horizon=150, grid=5,
                          function_class="smooth_strongly_convex")
    t = res.tuned
    assert np.isfinite(t.bound) and t.computed <= t.bound
    assert t.rate >= heavy_ball_rate(t.alpha, t.beta, 0.5, 1.0)
    assert res.setting["function_class"] == "smooth_strongly_convex"


# ----------------------------------------------------------------------------- item 7: horizons
# Oracle of the fast heavy-ball search: the bound at every horizon, written out independently
# (tests/tuning/hb_oracle.py: recurrences, not the library's closed forms), and np.argmin.
def _naive_objective(alpha, beta, mu, L, *, d, n, eps, S, dist_sq, Tmax):
    from tests.tuning.hb_oracle import bound_table

    return bound_table(np.atleast_1d(alpha), np.atleast_1d(beta), mu, L, d, n, n, eps, S,
                       dist_sq, Tmax)


def test_closed_form_matrix_powers_match_products_and_mpmath():
    import mpmath as mp

    from dpbounds.bounds.strongly_convex._lucas import companion_power_norm_sq
    from dpbounds.bounds.strongly_convex.heavy_ball import classical_heavy_ball_parameters
    from dpbounds.tuning.heavy_ball import naive_transient_sq

    mu, L = 0.02, 5.1
    a_c, b_c = classical_heavy_ball_parameters(mu, L)  # double root at both ends: the hard case
    alpha = np.array([a_c, 1 / L, 0.3 / L, 1.9 / L, 1.0 / L, 0.05 / L])
    beta = np.array([b_c, 0.9, 0.0, 0.3, (1 - (mu / L) ** 0.5) / (1 + (mu / L) ** 0.5), 0.99])
    lams = np.linspace(mu, L, 24)
    T = 1500
    ref = naive_transient_sq(alpha, beta, lams, T)
    a = 1.0 + beta[:, None, None] - alpha[:, None, None] * lams[None, None, :]
    got = np.max(companion_power_norm_sq(a, beta[:, None, None], np.arange(1, T + 1)[None, :,
                                                                                      None]),
                 axis=2)
    ok = ref > 1e-250
    np.testing.assert_allclose(got[ok], ref[ok], rtol=2e-9)
    # at the double root the closed form is at least as accurate as the products (mpmath oracle)
    mp.mp.dps = 40
    a0, b0 = 1 + b_c - a_c * mu, b_c
    exact = mp.svd_r(mp.matrix([[a0, -b0], [1, 0]]) ** 700)[1][0] ** 2
    assert abs(float(companion_power_norm_sq(a0, b0, 700) / exact) - 1) < 1e-11


@pytest.mark.parametrize("setting", [
    dict(mu=0.02, L=LOGISTIC_REGRESSION_SMOOTHNESS, d=20, n=10**5, eps=1.0, S=40.0,
         dist_sq=1000.0),
    dict(mu=0.1, L=1.0, d=5, n=10**4, eps=0.3, S=1.0, dist_sq=50.0),
    dict(mu=0.5, L=1.0, d=2, n=10**6, eps=5.0, S=1.0, dist_sq=1.0),   # optimum at large T
    dict(mu=1.0, L=1.0, d=3, n=10**3, eps=1.0, S=1.0, dist_sq=10.0),  # mu = L
])
def test_branch_and_bound_horizon_equals_exhaustive_argmin(setting):
    from dpbounds.tuning.heavy_ball import _hb_search

    s = setting
    rng = np.random.default_rng(7)
    alpha = np.concatenate([rng.uniform(0.01, 1.99, 12) / s["L"], [1 / s["L"]]])
    beta = np.concatenate([rng.uniform(0.0, 0.99, 12), [0.0]])
    Tmax = 1200
    B = _naive_objective(alpha, beta, s["mu"], s["L"], d=s["d"], n=s["n"], eps=s["eps"],
                         S=s["S"], dist_sq=s["dist_sq"], Tmax=Tmax)
    Ts, vals, gaps = _hb_search(alpha, beta, s["mu"], s["L"], s["d"], s["n"], s["n"], s["eps"],
                                s["S"], s["dist_sq"], Tmax, joint=False, budget=10**7)
    for i in range(alpha.size):
        if not np.isfinite(B[i]).any():
            assert not np.isfinite(vals[i])
            continue
        k = int(np.argmin(B[i]))
        assert vals[i] == pytest.approx(B[i, k], rel=1e-9)
        # the same horizon, unless two horizons tie to round-off
        assert Ts[i] == k + 1 or B[i, Ts[i] - 1] == pytest.approx(B[i, k], rel=1e-12)
        assert gaps[i] == 0.0
    # joint mode (the grid search): the global minimum over points and horizons
    Tj, vj, _ = _hb_search(alpha, beta, s["mu"], s["L"], s["d"], s["n"], s["n"], s["eps"],
                           s["S"], s["dist_sq"], Tmax, joint=True, budget=10**7)
    assert np.min(vj) == pytest.approx(np.nanmin(np.where(np.isfinite(B), B, np.nan)), rel=1e-9)


def test_branch_and_bound_with_a_wrong_lower_bound_misses_the_minimum():
    """Negative control: the exactness rests on the lower bound; inflate it and it fails."""
    from dpbounds.bounds.strongly_convex.heavy_ball_dp import HeavyBallDPObjective
    from dpbounds.tuning.horizon_search import minimise_over_horizon

    mu, L = 0.02, LOGISTIC_REGRESSION_SMOOTHNESS
    obj = HeavyBallDPObjective(np.array([0.3775]), np.array([0.853]), mu, L,
                               np.linspace(mu, L, 24), d=20, n=10**5, m=10**5, epsilon=1.0,
                               sensitivity=40.0, dist_sq=1000.0)
    right = minimise_over_horizon(obj, 1, 2000, joint=False)

    class Inflated:
        values = obj.values

        def lower(self, p, lo, hi):
            return 10.0 * obj.values(p, lo)  # not a lower bound

    wrong = minimise_over_horizon(Inflated(), 1, 2000, joint=False)
    B = _naive_objective(0.3775, 0.853, mu, L, d=20, n=10**5, eps=1.0, S=40.0,
                         dist_sq=1000.0, Tmax=2000)[0]
    assert right.best_T[0] == int(np.argmin(B)) + 1
    assert wrong.best_T[0] != int(np.argmin(B)) + 1 and wrong.best[0] > B.min()


def test_grid_search_equals_exhaustive_grid_minimum():
    """The joint branch and bound over the whole 30x30 grid finds the old exhaustive minimum."""
    from dpbounds.tuning.heavy_ball import _hb_search

    mu, L, Tmax = 0.02, LOGISTIC_REGRESSION_SMOOTHNESS, 250
    A, Bt = np.meshgrid(np.geomspace(1e-3 / L, 1.99 / L, 30), np.linspace(0.0, 0.995, 30))
    full = heavy_ball_dp_bound(A.ravel(), Bt.ravel(), mu, L, d=20, n=10**5, epsilon=1.0,
                               sensitivity=40.0, initial_distance_sq=1000.0, max_horizon=Tmax)
    naive = _naive_objective(A.ravel(), Bt.ravel(), mu, L, d=20, n=10**5, eps=1.0, S=40.0,
                             dist_sq=1000.0, Tmax=Tmax)
    fin = np.isfinite(naive)
    np.testing.assert_allclose(full[fin], naive[fin], rtol=1e-9)
    assert np.all(~np.isfinite(full[~fin]))
    _, best, _ = _hb_search(A.ravel(), Bt.ravel(), mu, L, 20, 10**5, 10**5, 1.0, 40.0, 1000.0,
                            Tmax, joint=True, budget=10**7)
    assert np.argmin(best) == np.argmin(np.min(naive, axis=1))
    assert np.min(best) == pytest.approx(np.min(naive), rel=1e-12)


def test_huge_max_horizon_is_fast_in_memory_and_gives_the_same_answer():
    """max_horizon = 10^7 used to need k * T floats (900 x 10^7: 72 GB); now O(1) in T."""
    import tracemalloc

    ref = tune_heavy_ball(objective="bound", **FIG3, initial_gap=10.0, max_horizon=1000)
    tracemalloc.start()
    big = tune_heavy_ball(objective="bound", **FIG3, initial_gap=10.0, max_horizon=10**7)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100e6, f"peak {peak / 1e6:.0f} MB"
    assert big.rows() == ref.rows()  # the optimum (T = 72) lies far below either limit


@pytest.mark.parametrize("method", ["hb", "nag"])
def test_cli_max_horizon_beyond_the_range_is_one_clear_error(method, capsys):
    args = ["tune", method, "--mu", "0.02", "--L", "5.1", "--d", "20", "--n", "1e5", "--eps", "1",
            "--sensitivity", "40", "--max-horizon", "1e9"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        "dpbounds: error: max_horizon must be an integer in [1, 10000000], got 1000000000")


def test_subsampled_horizon_is_the_exact_minimum_over_every_horizon():
    """The old rule (40 geometric candidates, then the bracket of the best) picked T = 50 with
    bound 0.1995 here; every horizon evaluated (the oracle) gives T = 35, bound 0.1753."""
    from scipy.special import logsumexp

    from dpbounds.bounds.strongly_convex.gradient_noise import subsampling_variance
    from dpbounds.bounds.strongly_convex.nesterov import error_weights, masg_schedule
    from dpbounds.bounds.strongly_convex.noise_allocation import (
        optimal_noise,
        select_horizon_subsampled,
    )

    mu, L, E0, d, S, n, m, eps, Tmax = 0.11, 1.0, 15.5, 10, 1.0, 10_000, 518, 0.117, 50
    h = select_horizon_subsampled(mu, L, initial_error=E0, d=d, sensitivity=S, n=n, m=m,
                                  epsilon=eps, max_horizon=Tmax, method="masg")
    full = masg_schedule(mu, L, horizon=Tmax)
    s2 = subsampling_variance(S, n, m)
    brute = []
    for T in range(1, Tmax + 1):
        w = error_weights(full.truncated(T), mu, L)
        brute.append(w.a0 * E0 + d * optimal_noise(w, S, n, m, eps).value
                     + s2 / 2 * float(np.exp(logsumexp(w.log_a))))
    assert h.horizon == int(np.argmin(brute)) + 1 == 35
    # gap: the allocation's weak-duality certificate, exact up to its rounding allowance
    assert h.bound == pytest.approx(min(brute), rel=1e-12) and 0.0 <= h.gap <= 1e-10
    # with a work limit the answer carries a proven gap to the true minimum
    few = select_horizon_subsampled(mu, L, initial_error=E0, d=d, sensitivity=S, n=n, m=m,
                                    epsilon=eps, max_horizon=Tmax, method="masg",
                                    max_evaluations=2)
    assert few.bound <= (1 + few.gap) * min(brute) * (1 + 1e-12)


# ----------------------------------------------------------------------------- item 11: mu = L
def test_tune_nag_with_mu_equal_L_is_exact_contraction():
    """mu = L, alpha = 1/L: mu alpha = 1, every step contracts the error to 0 (q = 0). Then
    a_{T,t} = 0 for t < T, a_{T,T} = alpha(1 + alpha L) = 2/L, and (32) is 2 d S^2/(L n^2 eps^2)
    at every T >= 1 (so T = 1); the exact error of the last step's noise is half of it."""
    L, d, n, eps, S = 2.0, 10, 10**5, 1.0, 3.0
    res = tune_nesterov(L, L, d=d, n=n, epsilon=eps, sensitivity=S, initial_gap=10.0,
                        max_horizon=500, reference_horizons=(100,))
    closed = 2.0 * d * S**2 / (L * n**2 * eps**2)
    for r in res.rows():
        assert np.isfinite(r["bound"]) and r["computed"] <= r["bound"] * (1 + 1e-12)
        if r["method"] == "nag" and "opt" in r["label"]:
            assert r["bound"] == pytest.approx(closed, rel=1e-9)
            assert r["computed"] == pytest.approx(closed / 2, rel=1e-9)
    assert res.rows()[0]["horizon"] == 1


class _NoBracket:
    """Stands in for heavy ball's branch and bound (run last by the error tuner; it feeds only
    the lower end of the bracket, in no JSON row: the rows are the same without it, measured;
    55% of that tune's CPU). The bracket is checked in ``test_certify_error.py`` and
    ``test_worst_case_tuning.py``."""

    lower = -float("inf")


def test_cli_tune_nag_and_hb_with_mu_equal_L(capsys, monkeypatch):
    import dpbounds.tuning.heavy_ball as hb

    args = ["--mu", "1", "--L", "1", "--d", "10", "--n", "1e5", "--eps", "1", "--sensitivity", "1"]
    assert main(["tune", "nag", *args]) == 0
    assert "DP-NAG-opt" in capsys.readouterr().out
    assert main(["tune", "hb", *args, "--json", "--objective", "bound"]) == 0
    rows = {r["label"]: r for r in json.loads(capsys.readouterr().out)}
    # alpha = 1/L, beta = 0 is exact in one step; "tuned" is never worse than Polyak's choice
    assert rows["tuned (alpha,beta,T)"]["bound"] <= rows["Polyak (best T)"]["bound"]
    monkeypatch.setattr(hb, "certify_error_minimum", lambda *a, **k: _NoBracket())
    assert main(["tune", "hb", *args, "--json"]) == 0  # by the worst case: the same holds
    rows = {r["label"]: r for r in json.loads(capsys.readouterr().out)}
    tuned = rows["tuned by worst-case error"]
    assert tuned["computed"] <= rows["Polyak (best T)"]["computed"]
    # mu = L: one step of 1/L removes the start; only that step's noise is left (worst case:
    # d - 1 coordinates of Laplace noise at curvature L plus one with the sampling noise)
    assert tuned["horizon"] == 1 and tuned["alpha"] == pytest.approx(1.0)


def test_masg_computed_error_is_for_the_restarted_run_and_below_the_bound():
    """Theorem 4.3's bound (34) is for MASG with momentum restarts (what dp_masg runs). Without
    the restart the exact error exceeds it near mu = L (negative control below)."""
    from dpbounds.bounds.strongly_convex.nesterov import (
        error_weights,
        masg_schedule,
        nesterov_expected_error_quadratic,
        nesterov_final_error_quadratic,
        unrolled_bound,
    )
    from dpbounds.bounds.strongly_convex.noise_allocation import uniform_noise

    for mu in (0.99, 0.9, 0.5):
        res = tune_nesterov(mu, 1.0, d=10, n=10**5, epsilon=1.0, sensitivity=1.0,
                            initial_gap=10.0, max_horizon=300, reference_horizons=(37, 100))
        for r in res.rows():
            assert r["computed"] <= r["bound"], (mu, r)
    sched = masg_schedule(0.99, 1.0, horizon=37)
    w = error_weights(sched, 0.99, 1.0)
    al = uniform_noise(w, 1.0, 10**5, 10**5, 1.0)
    bound = unrolled_bound(w, 10.0, al.scales, 10)
    lam, e0 = np.array([0.99, 1.0]), (2 * 10.0 / (5 * 0.99 + 5 * 1.0)) ** 0.5
    var = 2 * al.scales**2
    loop = [5 * nesterov_expected_error_quadratic(sched, 0.99, lam, var, e0, restart=r)[-1]
            for r in (True, False)]
    fast = [nesterov_final_error_quadratic(sched, 0.99, lam, var, e0, restart=r,
                                           multiplicities=[5, 5]) for r in (True, False)]
    np.testing.assert_allclose(fast, loop, rtol=1e-10)
    assert loop[0] <= bound < loop[1]


def test_progress_bars_only_on_a_terminal_and_never_under_quiet(monkeypatch):
    import io
    import sys

    from dpbounds._progress import progress_bar
    from dpbounds.cli import build_parser, progress_enabled

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for tty, enabled, shown in ((True, True, True), (True, False, False), (False, True, False)):
        stream = Terminal() if tty else io.StringIO()
        monkeypatch.setattr(sys, "stderr", stream)
        with progress_bar(enabled, total=3, delay=0, desc="work") as bar:
            bar.update(3)
        assert ("work:" in stream.getvalue()) == shown
    parser = build_parser()
    assert progress_enabled(parser.parse_args(["tune", "nag", "--mu", "1", "--L", "1", "--d",
                                               "1", "--n", "1", "--eps", "1",
                                               "--sensitivity", "1"]))
    assert not progress_enabled(parser.parse_args(["tune", "nag", "--mu", "1", "--L", "1", "--d",
                                                   "1", "--n", "1", "--eps", "1",
                                                   "--sensitivity", "1", "--quiet"]))
