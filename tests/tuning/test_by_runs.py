"""tune_by_runs: the grid's scores are the algorithm's own runs, the pick is re-measured on
fresh seeds with an interval that covers the truth, and the privacy it spends is reported.

Oracles: direct calls of the algorithm at the documented seeds (the scores), a Monte Carlo
mean over 20x the runs on a third seed family (the interval's coverage, two-sided), basic
composition written out (the spent epsilon of pure-DP runs), and the grid's argmin recomputed
from direct runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import dp_gd, dp_heavy_ball
from dpbounds.objectives import QuadraticObjective
from dpbounds.privacy import PrivacyLedger
from dpbounds.tuning.by_runs import EVAL_STREAM, SELECT_STREAM, tune_by_runs

F = QuadraticObjective.random(d=4, mu=0.1, L=1.0, n=200, offset_scale=1.0, seed=0)
GRID = {"step_size": [0.5, 1.0, 1.5], "momentum": [0.0, 0.5, 0.8], "steps": [5, 10, 20]}


@pytest.fixture(scope="module")
def tuned():
    return tune_by_runs(dp_heavy_ball, F, GRID, epsilon=1.0, trials=12, eval_trials=40, seed=3,
                        compare={"other": {"step_size": 1.0, "momentum": 0.0, "steps": 20}})


def _mean_final(hyper, trials, seed):
    r = dp_heavy_ball(F, epsilon=1.0, trials=trials, seed=seed, **hyper)
    return float(np.mean(r.trace[:, -1]))


def test_every_score_is_the_algorithms_own_runs_at_the_documented_seeds(tuned):
    # the selection: each point's mean equals a direct run at seed (3, 0); the pick is its argmin
    direct = {tuple(s.hyperparameters.items()): _mean_final(s.hyperparameters, 12,
                                                             (3, SELECT_STREAM))
              for s in tuned.selection}
    assert len(direct) == 27
    for s in tuned.selection:
        assert s.mean == pytest.approx(direct[tuple(s.hyperparameters.items())], rel=1e-12)
    best = min(direct, key=direct.get)
    assert tuned.best == dict(best)
    # the evaluation: fresh seeds (3, 1), the same streams for every row
    for label, s in tuned.evaluation.items():
        assert s.n == 40
        assert s.mean == pytest.approx(_mean_final(s.hyperparameters, 40, (3, EVAL_STREAM)),
                                       rel=1e-12), label


def test_the_picks_interval_covers_a_long_independent_run(tuned):
    # two-sided: the 95% interval of 40 runs holds the mean of 800 runs on another family
    s = tuned.evaluation["tuned by runs"]
    truth = _mean_final(s.hyperparameters, 800, (99, 7))
    assert s.low < truth < s.high
    assert s.high - s.low < 0.5 * s.mean  # and it says something (not [0, inf])
    # control: an interval built on the selection draws of the pick alone is biased low
    # somewhere on the grid; the evaluation is not the selection's own number
    own = next(x for x in tuned.selection if x.hyperparameters == tuned.best)
    assert own.mean != s.mean


def test_the_privacy_spent_is_every_run_composed():
    # dp_gd with Laplace noise: pure DP; basic composition of R runs of eps each is R eps
    from dpbounds.objectives import QuadraticObjective as Q

    f = Q.random(d=3, mu=0.2, L=1.0, n=100, offset_scale=1.0, seed=1)
    res = tune_by_runs(dp_gd, f, {"step_size": [0.5, 1.0], "steps": [3, 6]}, epsilon=0.5,
                       trials=4, eval_trials=6, seed=0, mechanism="laplace")
    assert res.accountant == "pure"
    assert res.runs == 4 * 4 + 6
    assert res.spent_epsilon == pytest.approx(0.5 * res.runs, rel=1e-9)
    # Gaussian runs: zCDP accounting of R runs, at least one run's epsilon, at most R times it
    g = tune_by_runs(dp_gd, f, {"step_size": [0.5, 1.0]}, epsilon=0.5, trials=3,
                     eval_trials=3, seed=0, steps=4, mechanism="gaussian", delta=1e-5,
                     spent_delta=1e-5)
    assert g.accountant != "pure"
    assert 0.5 <= g.spent_epsilon <= 0.5 * g.runs
    assert "privacy spent by the tuning" in g.table()


def test_reproducible_and_trial_k_depends_on_seed_and_k_only(tuned):
    again = tune_by_runs(dp_heavy_ball, F, GRID, epsilon=1.0, trials=12, eval_trials=40, seed=3,
                         compare={"other": {"step_size": 1.0, "momentum": 0.0, "steps": 20}})
    assert again.rows() == tuned.rows()
    other = tune_by_runs(dp_heavy_ball, F, GRID, epsilon=1.0, trials=12, eval_trials=40, seed=4)
    assert other.evaluation["tuned by runs"].mean != tuned.evaluation["tuned by runs"].mean


@pytest.mark.parametrize("kwargs, words", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": 1.0, "trials": 1}, "trials"),
    ({"epsilon": 1.0, "eval_trials": 1}, "eval_trials"),
    ({"epsilon": 1.0, "seed": -1}, "seed"),
    ({"epsilon": 1.0, "statistic": "median"}, "statistic"),
    ({"epsilon": 1.0, "spent_delta": 1.0}, "spent_delta"),
    ({"epsilon": 1.0, "steps": 5}, "'steps' is both searched"),
])
def test_bad_input_names_the_parameter(kwargs, words):
    with pytest.raises(ValueError, match=words):
        tune_by_runs(dp_heavy_ball, F, GRID, **kwargs)


def test_bad_grids_and_a_grid_where_nothing_runs_are_refused():
    with pytest.raises(ValueError, match="grid must map"):
        tune_by_runs(dp_heavy_ball, F, {}, epsilon=1.0)
    with pytest.raises(ValueError, match=r"grid\['steps'\] must be a non-empty"):
        tune_by_runs(dp_heavy_ball, F, {"steps": []}, epsilon=1.0)
    with pytest.raises(ValueError, match=r"grid\['steps'\] must be a non-empty"):
        tune_by_runs(dp_heavy_ball, F, {"steps": "10"}, epsilon=1.0)
    with pytest.raises(ValueError, match="at most 10,000"):
        tune_by_runs(dp_heavy_ball, F, {"steps": list(range(1, 101)),
                                        "step_size": list(np.linspace(0.1, 1, 101))},
                     epsilon=1.0)
    with pytest.raises(ValueError, match="no grid point ran: .*steps"):
        tune_by_runs(dp_heavy_ball, F, {"steps": [0, -1]}, epsilon=1.0)


def test_a_point_that_diverges_is_scored_inf_and_not_picked():
    res = tune_by_runs(dp_heavy_ball, F, {"step_size": [0.5, 50.0], "steps": [200]},
                       epsilon=1.0, trials=3, eval_trials=3, seed=0)
    bad = next(s for s in res.selection if s.hyperparameters["step_size"] == 50.0)
    assert math.isinf(bad.mean) and bad.failure
    assert res.best["step_size"] == 0.5


# ---------------------------------------------------------------------- dpbounds tune runs
def _cli(argv, capsys):
    from dpbounds.cli import main

    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_tune_runs_is_the_librarys_tuning_of_the_same_objective(capsys):
    import json

    rc, out, _ = _cli(["tune", "runs", "hb", "--problem", "quadratic", "--N", "200", "--d", "4",
                       "--mu", "0.1", "--L", "1", "--search", "alpha=0.5,1,1.5",
                       "--search", "beta=0,0.5", "--search", "T=5,10", "--trials", "6",
                       "--eval-trials", "10", "--seed", "2", "--json", "--quiet"], capsys)
    assert rc == 0
    got = json.loads(out)
    # oracle: the objective built here by hand, the library called directly
    f = QuadraticObjective.random(d=4, mu=0.1, L=1.0, n=200, offset_scale=1.0, seed=2)
    lib = tune_by_runs(dp_heavy_ball, f, {"step_size": [0.5, 1.0, 1.5], "momentum": [0.0, 0.5],
                                          "steps": [5, 10]}, epsilon=1.0, trials=6,
                       eval_trials=10, seed=2)
    assert got["best"] == lib.best
    assert got["rows"][0]["mean"] == pytest.approx(lib.evaluation["tuned by runs"].mean,
                                                   rel=1e-12)
    assert got["runs"] == 12 * 6 + 10 and got["accountant"] == "pure"
    assert got["delta"] == 0.0  # pure runs compose to pure DP (it said delta = 1e-5)
    assert got["spent_epsilon"] == pytest.approx(got["runs"] * 1.0, rel=1e-9)


def test_tune_runs_logistic_reads_mu_as_the_strong_convexity(capsys):
    rc, out, _ = _cli(["tune", "runs", "gd", "--N", "300", "--d", "5", "--mu", "0.04",
                       "--search", "alpha=0.5,1", "--search", "T=2,4", "--trials", "3",
                       "--quiet"], capsys)
    assert rc == 0
    assert out.startswith("logistic: n = 300, d = 5, mu = 0.04, ")  # Kuru's (35): mu = 2 lam
    assert "privacy spent by the tuning" in out


@pytest.mark.parametrize("argv, words", [
    (["hbb"], "unknown algorithm 'hbb' for tune runs; did you mean 'hb'?"),
    (["hb", "--search", "alpha=0:1:3"], "LOW:HIGH:K needs 0 < LOW < HIGH"),
    (["hb", "--search", "alpha=1,x"], "the values must be numbers"),
    (["hb", "--search", "alpha"], "give NAME=V1,V2,... or NAME=LOW:HIGH:K"),
    (["hb", "--search", "alpha=1", "--search", "eta=2"], "--search eta is given more than once"),
    (["hb", "--delta", "0.1"], "--delta is not read by hb"),
    (["hb", "--search", "T=2", "--steps", "4"], "--steps: both searched"),
    (["hb", "--problem", "quadratic", "--mu", "2", "--L", "1"], "--mu must lie in (0, L=1]"),
    (["hb", "--L", "3"], "--L is not read by --problem logistic"),
    (["hb", "--trials", "1"], "must be at least 2"),
    (["hb", "--seed", "-1"], "--seed must be an integer >= 0, got -1"),
])
def test_tune_runs_refuses_bad_input_in_one_line(argv, words, capsys):
    from dpbounds.cli import EXIT_USAGE

    rc, out, err = _cli(["tune", "runs", *argv], capsys)
    assert rc == EXIT_USAGE and out == ""
    assert words in err and len(err.strip().splitlines()) == 1


def test_tune_runs_input_errors_import_nothing_heavy():
    from dpbounds.cli import EXIT_USAGE
    from tests.early_checks import heavy_imports

    argvs = [["tune", "runs", "hbb"], ["tune", "runs", "hb", "--search", "alpha=0:1:3"],
             ["tune", "runs", "hb", "--delta", "0.1"]]
    heavy = ("scipy", "sympy", "cvxpy", "numba", "dp_accounting", "dpbounds.algorithms")
    for argv, (rc, mods) in zip(argvs, heavy_imports(argvs, heavy), strict=True):
        assert rc == EXIT_USAGE and mods == [], (argv, mods)


# ------------------------------------------------------------------ review of stop 76
def test_the_searchable_keywords_are_the_algorithms_own():
    import inspect

    from dpbounds.algorithms import dp_gd, dp_nag
    from dpbounds.cli.tune_runs_cmd import SEARCHABLE

    for key, fn in (("hb", dp_heavy_ball), ("nag", dp_nag), ("gd", dp_gd)):
        params = inspect.signature(fn).parameters
        assert set(SEARCHABLE[key]) <= set(params), key
        assert "sensitivity" not in SEARCHABLE[key]  # a search must not lower it


def test_a_run_that_fails_after_reading_the_data_is_counted_in_the_privacy_spent():
    # was: runs that raised were left out of the spent epsilon (review of stop 76). Oracle:
    # basic composition written out, each failed run at its target epsilon
    calls = {"n": 0}

    def picky(objective, *, epsilon, trials, seed, step_size, steps):
        calls["n"] += 1
        if step_size > 1.0:
            raise ValueError("refused after reading the data")
        return dp_gd(objective, epsilon=epsilon, trials=trials, seed=seed, step_size=step_size,
                     steps=steps)

    res = tune_by_runs(picky, F, {"step_size": [0.5, 2.0], "steps": [3]}, epsilon=0.5,
                       trials=4, eval_trials=5, seed=0)
    assert res.runs == 4 + 4 + 5  # the failed point's 4 runs too
    assert res.spent_epsilon == pytest.approx(0.5 * res.runs, rel=1e-9)
    assert any("failed (refused or stopped; they may have read the data)" in n
               for n in res.notes)


def test_the_selection_streams_are_not_a_plain_seeds():
    # review of stop 76: SeedSequence((s, 0)) is SeedSequence(s); a run made afterwards with
    # the plain seed s reused the selection's draws
    plain = dp_heavy_ball(F, epsilon=1.0, steps=5, step_size=1.0, trials=4, seed=3)
    for stream in (SELECT_STREAM, EVAL_STREAM):
        other = dp_heavy_ball(F, epsilon=1.0, steps=5, step_size=1.0, trials=4,
                              seed=(3, stream))
        assert not np.array_equal(plain.trace, other.trace)


def test_label_collisions_mixed_relations_and_unknown_names_are_refused():
    with pytest.raises(ValueError, match="'tuned by runs' is the pick's own label"):
        tune_by_runs(dp_heavy_ball, F, GRID, epsilon=1.0, trials=2,
                     compare={"tuned by runs": {"step_size": 0.01, "steps": 5}})
    with pytest.raises(ValueError, match="different neighbouring relations"):
        tune_by_runs(dp_gd, F, {"neighbouring": ["replace_one", "add_remove"],
                                "step_size": [0.5]}, epsilon=1.0, trials=2, steps=3,
                     mechanism="gaussian", delta=1e-5, clip_threshold=1.0, public_n=200)
    with pytest.raises(ValueError, match=r"grid\['momentum'\]: dp_gd takes no 'momentum'"):
        tune_by_runs(dp_gd, F, {"momentum": [0.5]}, epsilon=1.0, trials=2, steps=3)


def test_intervals_are_students_t_and_the_paired_difference_is_reported():
    # two runs: t(0.975, 1) = 12.706, not the normal 1.96 (coverage ~70% at n = 2)
    from scipy import stats

    res = tune_by_runs(dp_heavy_ball, F, {"step_size": [0.5, 1.0], "steps": [5]}, epsilon=1.0,
                       trials=2, eval_trials=2, seed=0,
                       compare={"other": {"step_size": 1.0, "steps": 5}})
    pick = res.evaluation["tuned by runs"]
    r = dp_heavy_ball(F, epsilon=1.0, trials=2, seed=(0, EVAL_STREAM), **pick.hyperparameters)
    v = r.trace[:, -1]
    half = stats.t.ppf(0.975, 1) * np.std(v, ddof=1) / np.sqrt(2)
    assert pick.high - pick.mean == pytest.approx(half, rel=1e-12)
    assert any(n.startswith("other - tuned by runs (paired, same seeds)") for n in res.notes)


PLUG = '''
from dpbounds import extend as ex
m = ex.Method("runs_{tag}", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
              mechanism="{mech}",
              # Laplace noise needs the L1 sensitivity (its L2 one was 0.61 of it: tune runs'
              # sensitivity probe refuses that since stop 79)
              sensitivity=lambda f, p: (f.l1_sensitivity if "{mech}" == "laplace"
                                        else f.l2_sensitivity) / f.n)
ex.audit_setting(m, params={{"eta": 0.5}})
'''


@pytest.mark.parametrize("mech, extra, words", [
    ("gaussian", ["--search", "eta=0.5,1", "--delta", "1e-5"],
     "give its horizon (--search T=... or --steps T)"),
    ("laplace", ["--search", "eta=0.5,1", "--search", "T=3", "--delta", "1e-5"],
     "--delta is not read by runs_laplace"),
    # fuzz round 11 / walkthrough of stop 77:
    ("laplace", ["--search", "eta=0.5,1", "--search", "delta=1e-5,1e-3", "--steps", "3"],
     "--search delta is not read by runs_laplace"),
    ("gaussian", ["--search", "eta=0.5,1", "--steps", "3"],
     "runs_gaussian adds Gaussian noise: give its delta (--delta"),
    ("gaussian", ["--search", "eta=1", "--search", "N=1e6", "--steps", "3", "--delta", "1e-5"],
     "--search N: a constant of the problem, which the runs read from its objective (set it "
     "with --N)"),
    ("laplace", ["--search", "eta=1", "--search", "mu=0.5,1", "--steps", "3"],
     "--search mu: a constant of the problem"),
    ("laplace", ["--search", "eta=1", "--search", "R=1,100", "--steps", "3"],
     "--search R: a constant of the problem"),
])
def test_tune_runs_of_a_plugin_refuses_what_it_cannot_run(mech, extra, words, tmp_path,
                                                          capsys):
    # was: a TypeError (internal error, exit 4) without T; --delta ignored for Laplace
    from dpbounds.cli import EXIT_USAGE
    from tests.plugin_state import plugins_loaded

    plug = tmp_path / f"runs_{mech}.py"
    plug.write_text(PLUG.format(tag=mech, mech=mech))
    with plugins_loaded([]):
        rc, _, err = _cli(["--plugin", str(plug), "tune", "runs", f"runs_{mech}", "--problem",
                           "quadratic", "--N", "50", "--d", "3", "--mu", "0.1", *extra,
                           "--trials", "2", "--quiet"], capsys)
    assert rc == EXIT_USAGE and words in err


def test_tune_runs_of_a_plugin_runs_its_method(tmp_path, capsys):
    # the plug-in path end to end: its step reads eta from the grid; the Gaussian runs'
    # zCDP-composed spend is at least one run's epsilon
    import json

    from tests.plugin_state import plugins_loaded

    plug = tmp_path / "runs_ok.py"
    plug.write_text(PLUG.format(tag="ok", mech="gaussian"))
    with plugins_loaded([]):
        rc, out, _ = _cli(["--plugin", str(plug), "tune", "runs", "runs_ok", "--problem",
                           "quadratic", "--N", "50", "--d", "3", "--mu", "0.1", "--delta",
                           "1e-5", "--search", "eta=0.5,1", "--search", "T=3,6",
                           "--trials", "3", "--start", "2", "--json", "--quiet"], capsys)
    assert rc == 0
    got = json.loads(out)
    assert set(got["best"]) == {"eta", "steps"} and got["runs"] == 4 * 3 + 12
    assert got["spent_epsilon"] >= 1.0


def test_the_best_statistic_is_each_runs_smallest_error():
    # oracle: the minimum over each run's trace, from a direct run at the documented seed
    res = tune_by_runs(dp_heavy_ball, F, {"step_size": [0.5, 1.0], "steps": [5]}, epsilon=1.0,
                       trials=3, eval_trials=4, seed=1, statistic="best")
    s = res.evaluation["tuned by runs"]
    r = dp_heavy_ball(F, epsilon=1.0, trials=4, seed=(1, EVAL_STREAM), **s.hyperparameters)
    assert s.mean == pytest.approx(float(np.mean(np.min(r.trace, axis=1))), rel=1e-12)
    # negative control: the last iterate's mean is another number on these runs
    assert s.mean != pytest.approx(float(np.mean(r.trace[:, -1])), rel=1e-9)


def test_a_failed_gaussian_run_is_counted_with_its_algorithms_own_delta():
    # the delta of a failed run is the target the completed runs report, also where the
    # algorithm sets it itself (not passed in `fixed`). Oracle: basic composition written out
    def gauss(objective, *, epsilon, trials, seed, step_size, steps):
        if step_size > 1.0:
            raise ValueError("refused")
        return dp_gd(objective, epsilon=epsilon, trials=trials, seed=seed, step_size=step_size,
                     steps=steps, mechanism="gaussian", delta=1e-6)

    res = tune_by_runs(gauss, F, {"step_size": [0.5, 2.0], "steps": [3]}, epsilon=0.5,
                       trials=3, eval_trials=3, seed=0, spent_delta=1e-5)
    ok = PrivacyLedger(res.spent.neighbouring)
    for mechanism, count in res.spent.entries:
        ok.record(mechanism, count)
    assert res.delta == pytest.approx(1e-5 + 3 * 1e-6, rel=1e-12)
    assert res.spent_epsilon == pytest.approx(
        ok.epsilon(1e-5, accountant=res.accountant) + 3 * 0.5, rel=1e-12)


@pytest.mark.parametrize("spec, words", [("T=0,5", "T must list whole numbers >= 1"),
                                         ("T=2.5", "T must list whole numbers >= 1"),
                                         ("T=0.1:3:3", "T must be at least 1")])
def test_a_searched_horizon_must_be_whole(spec, words):
    # was: T=0 read as 1, T=2.5 as 2 (final read-through of stop 76)
    from dpbounds.cli.tune_runs_cmd import parse_search

    with pytest.raises(ValueError, match=words):
        parse_search([spec])
    assert parse_search(["T=1:10:4"])["steps"] == [1, 2, 5, 10]  # control: a range is rounded


def test_a_plugins_horizon_under_its_own_name_is_searched_as_the_horizon(tmp_path, capsys):
    # was: --search K=1,50,100 with steps="K" ran every point at --steps (fuzz round 11)
    import json

    from tests.plugin_state import plugins_loaded

    plug = tmp_path / "runs_k.py"
    plug.write_text(PLUG.format(tag="k", mech="laplace").replace(
        'mechanism="laplace",', 'mechanism="laplace", steps="K",'))
    with plugins_loaded([]):
        rc, out, _ = _cli(["--plugin", str(plug), "tune", "runs", "runs_k", "--problem",
                           "quadratic", "--N", "50", "--d", "3", "--mu", "0.1", "--search",
                           "eta=0.5", "--search", "K=1,4", "--trials", "2", "--quiet",
                           "--json"], capsys)
        assert rc == 0
        rows = json.loads(out)["rows"]
        assert rows[0]["steps"] in (1, 4) and "K" not in rows[0]
        # the library refuses the horizon twice, under both names, with different values
        from dpbounds.extend import method_named

        m = method_named("runs_k")
        f = QuadraticObjective.random(d=3, mu=0.1, L=1.0, n=50, offset_scale=1.0, seed=0)
        with pytest.raises(ValueError, match="K is runs_k's horizon: give it as steps="):
            m.run(f, epsilon=1.0, steps=3, K=5, eta=0.5)
        assert m.run(f, epsilon=1.0, steps=3, K=3, eta=0.5).trace.shape[1] >= 3


def test_a_searched_name_the_method_never_reads_is_refused(tmp_path, capsys):
    # walkthrough of stop 77: --search cc=0.25,1,4 where the step reads c ran one point three
    # times and "picked" cc = 0.25; oracle: the step's own source reads eta only
    from tests.plugin_state import plugins_loaded

    plug = tmp_path / "runs_unread.py"
    plug.write_text(PLUG.format(tag="unread", mech="laplace"))
    with plugins_loaded([]):
        base = ["--plugin", str(plug), "tune", "runs", "runs_unread", "--problem", "quadratic",
                "--N", "50", "--d", "3", "--mu", "0.1", "--steps", "3", "--trials", "2",
                "--quiet"]
        rc, _, err = _cli([*base, "--search", "eta=0.5", "--search", "etta=1,2"], capsys)
        assert rc == 2 and "no run read etta (searched)" in err
        rc, out, _ = _cli([*base, "--search", "eta=0.5,1"], capsys)  # positive control
        assert rc == 0 and "tuned by runs" in out
        from dpbounds.extend import method_named

        f = QuadraticObjective.random(d=3, mu=0.1, L=1.0, n=50, offset_scale=1.0, seed=0)
        res = method_named("runs_unread").run(f, epsilon=1.0, steps=2, eta=0.5, etta=3.0)
        assert res.params["unread_hyperparameters"] == ["etta"]
        res = method_named("runs_unread").run(f, epsilon=1.0, steps=2, eta=0.5)
        assert "unread_hyperparameters" not in res.params
