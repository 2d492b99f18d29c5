"""``tune_by_runs`` as a sweep: resumed from a store, run on worker processes, keyed safely.

Oracles: a tuning without a store (the numbers a stored or distributed one must equal bit for
bit), a count of the algorithm's calls (what a resumed tuning recomputes), and objectives
whose data differ by one entry (what a store must not serve).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.objectives import QuadraticObjective
from dpbounds.sweep import LocalProcesses
from dpbounds.tuning import ObjectiveRecipe, tune_by_runs
from dpbounds.tuning.by_runs import _LIVE, _algorithm_ref, objective_fingerprint

CALLS: list[dict] = []
GRID = {"step_size": [0.5, 1.0], "momentum": [0.0, 0.5], "steps": [3, 6]}


def counted_heavy_ball(objective, **kw):
    """dp_heavy_ball, each call logged (module-level: a store keys it by name)."""
    CALLS.append({k: kw[k] for k in ("step_size", "momentum", "steps", "trials")})
    return dp_heavy_ball(objective, **kw)


def _f():
    return QuadraticObjective.random(d=3, mu=0.1, L=1.0, n=100, offset_scale=1.0, seed=4)


def _summary(res):
    return (res.best, [dataclasses.astuple(s) for s in res.selection],
            {k: dataclasses.astuple(v) for k, v in res.evaluation.items()},
            res.spent_epsilon, res.runs, res.notes)


def test_a_stored_tuning_equals_one_without_store_and_a_rerun_recomputes_nothing(tmp_path):
    plain = tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, seed=2)
    CALLS.clear()
    first = tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, seed=2,
                         store=tmp_path)
    assert len(CALLS) == 8 + 1  # every point, then the pick on fresh seeds
    assert _summary(first) == _summary(plain)
    CALLS.clear()
    again = tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, seed=2,
                         store=tmp_path)
    assert CALLS == []  # a new objective object with the same data: its points are reused
    assert _summary(again) == _summary(plain)
    CALLS.clear()
    tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, seed=2,
                 store=tmp_path, fresh=True)
    assert len(CALLS) == 9


def test_a_killed_tuning_resumes_with_only_the_missing_points(tmp_path):
    # the kill: the first half of the grid finished and was stored
    half = {**GRID, "step_size": [0.5]}
    tune_by_runs(counted_heavy_ball, _f(), half, epsilon=1.0, trials=3, seed=2, store=tmp_path)
    CALLS.clear()
    resumed = tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, seed=2,
                           store=tmp_path)
    computed = [c for c in CALLS if c["trials"] == 3]
    assert sorted(c["step_size"] for c in computed) == [1.0] * 4  # the missing half only
    plain = tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, seed=2)
    assert _summary(resumed) == _summary(plain)


def test_a_store_never_serves_another_objectives_or_settings_points(tmp_path):
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(0)
    A, y = rng.uniform(-1, 1, (60, 3)) / 2, rng.choice([-1.0, 1.0], 60)
    B = A.copy()
    B[7, 1] += 1e-9  # one datum moved: a neighbouring data set

    def logistic(X):
        return LogisticRegression(X, y, l2=0.05)

    tune_by_runs(counted_heavy_ball, logistic(A), GRID, epsilon=1.0, trials=3, seed=2,
                 store=tmp_path)
    assert objective_fingerprint(logistic(B)) != objective_fingerprint(logistic(A))
    assert objective_fingerprint(logistic(A.copy())) == objective_fingerprint(logistic(A))
    for f, kw in [(logistic(B), {}), (logistic(A), {"epsilon": 2.0}),
                  (logistic(A), {"statistic": "best"}),
                  (logistic(A), {"x0": np.full(3, 0.5)})]:
        CALLS.clear()
        tune_by_runs(counted_heavy_ball, f, GRID, trials=3, seed=2, store=tmp_path,
                     **{"epsilon": 1.0, **kw})
        assert len(CALLS) == 9, kw
    CALLS.clear()
    tune_by_runs(counted_heavy_ball, logistic(A.copy()), GRID, epsilon=1.0, trials=3, seed=2,
                 store=tmp_path)
    assert CALLS == []


def test_the_fingerprint_ignores_what_an_objective_caches_and_reads_its_data():
    f = _f()
    before = objective_fingerprint(f)
    _ = f.optimum, f.smoothness  # cached on first use
    assert objective_fingerprint(f) == before
    h = _f()
    h.__dict__["_hidden"] = np.zeros(2)  # a private attribute is not hashed itself ...
    assert objective_fingerprint(h) == before
    other = QuadraticObjective.random(d=3, mu=0.1, L=1.0, n=100, offset_scale=1.0, seed=5)
    assert objective_fingerprint(other) != before  # ... the losses at the probes are


def test_the_algorithms_source_is_part_of_its_key():
    ref = _algorithm_ref(counted_heavy_ball, True, {})
    assert ref["name"] == f"{__name__}:counted_heavy_ball" and len(ref["source"]) == 16
    assert _algorithm_ref(dp_heavy_ball, True, {})["source"] != ref["source"]


def test_worker_processes_give_the_same_numbers_from_a_recipe(tmp_path):
    recipe = ObjectiveRecipe(QuadraticObjective.random,
                             {"d": 3, "mu": 0.1, "L": 1.0, "n": 100, "offset_scale": 1.0,
                              "seed": 4})
    here = tune_by_runs(dp_heavy_ball, recipe, GRID, epsilon=1.0, trials=3, seed=2,
                        compare={"plain GD": {"step_size": 1.0, "momentum": 0.0, "steps": 6}})
    there = tune_by_runs(dp_heavy_ball, recipe, GRID, epsilon=1.0, trials=3, seed=2,
                         compare={"plain GD": {"step_size": 1.0, "momentum": 0.0, "steps": 6}},
                         executor=LocalProcesses(2), store=tmp_path)
    assert _summary(there) == _summary(here)
    # and the recipe's objective is the objective's: the same numbers as the object itself
    direct = tune_by_runs(dp_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, seed=2,
                          compare={"plain GD": {"step_size": 1.0, "momentum": 0.0, "steps": 6}})
    assert _summary(direct) == _summary(here)


def test_what_cannot_travel_is_refused_before_any_run(tmp_path):
    CALLS.clear()
    with pytest.raises(ValueError, match="store=.*module-level"):
        tune_by_runs(lambda f, **kw: dp_heavy_ball(f, **kw), _f(), GRID, epsilon=1.0,
                     trials=3, store=tmp_path)
    with pytest.raises(ValueError, match="executor=.*ObjectiveRecipe"):
        tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3,
                     executor=LocalProcesses(2))
    with pytest.raises(ValueError, match="store=.*fixed argument 'schedule'"):
        tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, trials=3, store=tmp_path,
                     schedule=object())
    assert CALLS == [] and list(tmp_path.iterdir()) == []
    # in this process, without a store, a closure still runs, and leaves nothing behind
    before = set(_LIVE)
    res = tune_by_runs(lambda f, **kw: dp_heavy_ball(f, **kw), _f(), GRID, epsilon=1.0,
                       trials=3, seed=2)
    assert res.best and set(_LIVE) == before


def test_a_recipe_refuses_what_has_no_key():
    with pytest.raises(ValueError, match="module-level"):
        ObjectiveRecipe(lambda: _f())
    with pytest.raises(ValueError, match="params"):
        ObjectiveRecipe(QuadraticObjective.random, {"d": object()})


def _cli(argv, capsys):
    from dpbounds.cli import main

    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_tune_runs_store_resumes_with_the_same_table(tmp_path, capsys):
    argv = ["tune", "runs", "hb", "--problem", "quadratic", "--N", "200", "--d", "3",
            "--search", "alpha=0.5,1", "--search", "beta=0,0.5", "--search", "T=3,6",
            "--trials", "3", "--json", "--quiet", "--store", str(tmp_path / "st")]
    rc, first, _ = _cli(argv, capsys)
    assert rc == 0
    cells = sorted(p.name for p in (tmp_path / "st").rglob("*.json"))
    assert len([c for c in cells if c != "FORMAT.json"]) >= 9
    rc, again, _ = _cli(argv, capsys)
    assert rc == 0 and json.loads(again) == json.loads(first)
    assert sorted(p.name for p in (tmp_path / "st").rglob("*.json")) == cells
    rc, plain, _ = _cli(argv[:-2], capsys)
    assert json.loads(plain) == json.loads(first)


@pytest.mark.parametrize("extra, words", [
    (["--fresh"], "--fresh overwrites a store's points: give --store"),
    (["--workers", "0"], "--workers must be an integer in [1, 1024], got 0"),
    (["--scheduler", "localhost"], "--scheduler must be an address like tcp://HOST:PORT"),
])
def test_tune_runs_refuses_bad_resume_options_in_one_line(extra, words, capsys):
    from dpbounds.cli import EXIT_USAGE

    rc, out, err = _cli(["tune", "runs", "hb", *extra], capsys)
    assert rc == EXIT_USAGE and out == ""
    assert words in err and len(err.strip().splitlines()) == 1


def test_tune_runs_resume_option_errors_import_nothing_heavy(tmp_path):
    from dpbounds.cli import EXIT_USAGE
    from tests.early_checks import heavy_imports

    argvs = [["tune", "runs", "hb", "--fresh"], ["tune", "runs", "hb", "--workers", "0"],
             ["tune", "runs", "hb", "--store", str(tmp_path / "f"), "--seed", "-1"]]
    heavy = ("scipy", "sympy", "cvxpy", "numba", "dp_accounting", "dpbounds.algorithms")
    for argv, (rc, mods) in zip(argvs, heavy_imports(argvs, heavy), strict=True):
        assert rc == EXIT_USAGE and mods == [], (argv, mods)
    assert not (tmp_path / "f").exists()  # refused before the folder was made


def test_tune_runs_store_in_a_file_is_refused_before_any_run(tmp_path, capsys):
    from dpbounds.cli import EXIT_USAGE

    (tmp_path / "file").write_text("x")
    rc, out, err = _cli(["tune", "runs", "hb", "--store", str(tmp_path / "file")], capsys)
    assert rc == EXIT_USAGE and "--store" in err and "not a folder" in err


# ------------------------------------------------------------- fuzz round 11, walkthrough
def test_a_failed_point_is_counted_at_its_own_delta():
    # oracle: basic composition written out; the failing choice names its own delta (0.5),
    # which the completed runs' 1e-6 under-counted 8 runs by a factor 5e5
    from dpbounds.algorithms import dp_gd

    def picky(objective, *, epsilon, trials, seed, step_size, steps, delta):
        if delta > 0.1:
            raise ValueError("delta too large for this run")
        return dp_gd(objective, epsilon=epsilon, trials=trials, seed=seed, step_size=step_size,
                     steps=steps, mechanism="gaussian", delta=delta)

    res = tune_by_runs(picky, _f(), {"step_size": [0.5, 1.0], "delta": [1e-6]}, epsilon=1.0,
                       trials=3, eval_trials=8, seed=0, steps=3,
                       compare={"loose": {"step_size": 1.0, "delta": 0.5},
                                "looser": {"step_size": 0.5, "delta": 0.3}})
    assert res.evaluation["loose"].failure == "delta too large for this run"
    # every failed group at its own delta (mutant hunt 12: only the first was counted)
    assert res.delta == pytest.approx(1e-5 + 8 * 0.5 + 8 * 0.3, rel=1e-12)
    assert any("delta = 0.3, 0.5" in n for n in res.notes)


def test_the_table_shows_strings_arrays_and_failure_reasons():
    from dpbounds.algorithms import dp_nag

    f = _f()
    res = tune_by_runs(dp_nag, f, {"allocation": ["uniform", "optimal"], "steps": [3],
                                   "step_size": [1.0, -1.0]},
                       epsilon=1.0, trials=2, seed=0,
                       compare={"budgets": {"steps": 3, "step_size": 1.0,
                                            "budgets": np.array([0.2, 0.3, 0.5])}})
    table = res.table()
    assert "uniform" in table or "optimal" in table
    assert "[0.2, 0.3, 0.5]" in table
    assert "4 grid points x 2 runs" in table
    # the validator's own words for the refused points (was: only "1 point(s) failed")
    assert "failed point(s): " in table and "step_size" in table.split("failed point(s): ")[1]


def test_grid_values_listed_twice_and_huge_grids_are_refused_before_any_run():
    CALLS.clear()
    with pytest.raises(ValueError, match=r"grid\['step_size'\] lists 1.0 more than once"):
        tune_by_runs(counted_heavy_ball, _f(), {"step_size": [1, 1.0]}, epsilon=1.0)
    big = {k: list(range(1, 1001)) for k in ("a", "b", "c")}  # 10^9 points: never built
    with pytest.raises(ValueError, match="more than 10,000 points"):
        tune_by_runs(counted_heavy_ball, _f(), big, epsilon=1.0)
    assert CALLS == []


@pytest.mark.parametrize("kwargs, words", [
    ({"spent_delta": None}, "spent_delta must be a number in (0, 1), got None"),
    ({"spent_delta": "x"}, "spent_delta must be a number in (0, 1)"),
    ({"compare": [("a", {})]}, "compare must map labels to hyper-parameter dicts, got list"),
    ({"compare": {"a": None}}, "compare['a'] must be a dict of hyper-parameters, got None"),
    ({"compare": {"a": "steps"}}, "compare['a'] must be a dict of hyper-parameters"),
])
def test_bad_api_input_is_a_value_error_naming_it(kwargs, words):
    with pytest.raises(ValueError) as info:
        tune_by_runs(counted_heavy_ball, _f(), GRID, epsilon=1.0, **kwargs)
    assert words in str(info.value)
    with pytest.raises(ValueError, match="objective must be an objective"):
        tune_by_runs(counted_heavy_ball, None, GRID, epsilon=1.0)


def test_laplace_and_gaussian_points_are_composed_by_rdp():
    # the first point's pure accountant failed on the Gaussian runs after every run (fuzz 11);
    # oracle: the same ledger read by the RDP accountant directly
    from dpbounds.algorithms import dp_gd

    res = tune_by_runs(dp_gd, _f(), {"mechanism": ["laplace", "gaussian"]}, epsilon=1.0,
                       trials=2, eval_trials=2, seed=0, steps=3, delta=1e-6)
    assert res.accountant == "rdp"
    assert res.spent_epsilon == pytest.approx(res.spent.epsilon(1e-5, accountant="rdp"),
                                              rel=1e-12)
    assert any("read by rdp" in n for n in res.notes)


def test_a_steps_own_type_error_is_not_blamed_on_the_grid():
    def buggy(objective, **kw):
        return None + 1  # the algorithm's own bug

    with pytest.raises(ValueError) as info:
        tune_by_runs(buggy, _f(), {"steps": [1, 2]}, epsilon=1.0, trials=2)
    assert "the run raised TypeError" in str(info.value)
    assert "check the grid" not in str(info.value)
    with pytest.raises(ValueError, match="check the grid's and the fixed names"):
        # an open signature: the name is found wrong by the run itself
        tune_by_runs(open_heavy_ball, _f(), {"stepz": [1, 2]}, epsilon=1.0, trials=2)


def open_heavy_ball(objective, **kw):
    return dp_heavy_ball(objective, **kw)


def closed_heavy_ball(objective, *, epsilon, trials, seed, step_size=1.0, momentum=0.0,
                      steps=3):
    CALLS.append({"step_size": step_size})
    return dp_heavy_ball(objective, epsilon=epsilon, trials=trials, seed=seed,
                         step_size=step_size, momentum=momentum, steps=steps)


def test_names_the_algorithm_does_not_take_or_must_not_search_are_refused_before_any_run():
    # fuzz round 11: a misspelt compare choice failed after the whole grid had run
    CALLS.clear()
    with pytest.raises(ValueError, match=r"compare\['paper'\]: closed_heavy_ball takes no "
                                         r"'stepsize'; did you mean 'step_size'\?"):
        tune_by_runs(closed_heavy_ball, _f(), GRID, epsilon=1.0, trials=2,
                     compare={"paper": {"stepsize": 1.0}})
    for name in ("sensitivity", "seed", "noise"):
        with pytest.raises(ValueError, match=f"grid\\['{name}'\\]: '{name}' is not a "
                                             "hyper-parameter to search"):
            tune_by_runs(counted_heavy_ball, _f(), {name: [1.0, 2.0]}, epsilon=1.0)
    assert CALLS == []


def test_ties_are_named_and_one_step_is_not_an_edge_to_widen():
    res = tune_by_runs(dp_heavy_ball, _f(), {"step_size": [0.99, 1.0, 1.01], "steps": [1, 2, 3],
                                             "momentum": [0.0, 0.1, 0.2]},
                       epsilon=1.0, trials=3, seed=1)
    ties = [n for n in res.notes if "statistical ties" in n]
    # oracle: the count of selection means at or below the pick's upper 95% end, by hand
    pick = min(res.selection, key=lambda s: s.mean)
    expected = sum(s.mean <= pick.high for s in res.selection) - 1
    assert (expected > 0) == bool(ties)
    if ties:
        assert ties[0].startswith(f"{expected} other point(s)")
    for n in res.notes:
        assert "steps = 1 is at the grid's edge" not in n
        assert "momentum = 0.0 is at the grid's edge" not in n


@pytest.mark.parametrize("argv, words", [
    (["--search", "alpha=1_0"], "the values must be numbers"),
    (["--search", "alpha=1,1"], "1 is listed more than once"),
    (["--search", "alpha=0.1:6:1000", "--search", "c=0.1:6:1000"],
     "--search: 1,000,000 grid points; at most 10,000"),
    (["--trials", "1000000"], "--trials must be at most 250000"),
    (["--eval-trials", "1000000000"], "--eval-trials must be at most 1000000"),
    (["--problem", "quadratic", "--mu", "0"], "--mu must lie in (0, L=1]"),
    (["--mu", "-1"], "--mu must be >= 0"),
    (["--start", "nan"], "--start must be a finite number >= 0"),
    (["--start", "-1"], "--start must be a finite number >= 0"),
    (["--search", "clip_threshold=1,2"], "--search clip_threshold: hb takes none"),
])
def test_tune_runs_refuses_fuzz_11_inputs_before_any_import(argv, words, capsys):
    from dpbounds.cli import EXIT_USAGE

    rc, out, err = _cli(["tune", "runs", "hb", *argv], capsys)
    assert rc == EXIT_USAGE and out == "" and words in err, err


def test_tune_runs_gd_searches_no_keyword_it_ignores(capsys):
    from dpbounds.cli import EXIT_USAGE

    for alg, name in [("gd", "clip_threshold"), ("nag", "initial_error")]:
        rc, _, err = _cli(["tune", "runs", alg, "--search", f"{name}=1,2"], capsys)
        assert rc == EXIT_USAGE and f"--search {name}: {alg} takes none" in err


MY_PROBLEM = '''
import numpy as np
from dpbounds import extend as ex
from dpbounds.objectives import LogisticRegression


def build(N, d, seed, spec):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (N, d)) / np.sqrt(d)
    y = np.where(A @ np.ones(d) + 0.3 * rng.standard_normal(N) > 0, 1.0, -1.0)
    return LogisticRegression(A, y, l2=spec.mu / 2, l1_radius=np.sqrt(d),
                              l2_radius=1.0), np.full(d, 0.25)


ex.verify_problem("my_ridge", build, problem_class="smooth_strongly_convex",
                  defaults={"L": 1.0, "mu": 0.05})
'''


def test_tune_runs_on_a_plugins_own_problem_is_the_librarys_tuning_of_it(tmp_path, capsys):
    # walkthrough of stop 77: "the shell can't tune by runs on your own data"; oracle: the
    # plug-in's own builder called here, the library tuning it from the problem's start
    from tests.plugin_state import plugins_loaded

    plug = tmp_path / "my_ridge.py"
    plug.write_text(MY_PROBLEM)
    with plugins_loaded([]):
        rc, out, _ = _cli(["--plugin", str(plug), "tune", "runs", "hb", "--problem", "my_ridge",
                           "--N", "300", "--d", "4", "--search", "alpha=1,4",
                           "--search", "beta=0,0.5", "--search", "T=2,4", "--trials", "3",
                           "--seed", "1", "--json", "--quiet"], capsys)
        assert rc == 0, out
        got = json.loads(out)
        from dpbounds.extend import problem_kind
        from dpbounds.verify.problems import problem

        f, x0 = problem_kind("my_ridge").build(300, 4, 1, problem("my_ridge"))
        lib = tune_by_runs(dp_heavy_ball, f, {"step_size": [1.0, 4.0], "momentum": [0.0, 0.5],
                                              "steps": [2, 4]}, epsilon=1.0, trials=3, seed=1,
                           x0=x0)
        assert got["best"] == lib.best
        assert got["rows"][0]["mean"] == lib.evaluation["tuned by runs"].mean
        rc, _, err = _cli(["--plugin", str(plug), "tune", "runs", "hb", "--problem", "my_ridg",
                           "--quiet"], capsys)
        assert rc == 2 and "did you mean 'my_ridge'?" in err and "quadratic, or" in err
