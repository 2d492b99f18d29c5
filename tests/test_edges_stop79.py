"""Edges found in stop 79 (walkthrough, fuzz round 13): each test fails before its fix."""

from __future__ import annotations

import pytest

from dpbounds.verify.verdicts import equal, format_table, upper


def test_verdict_table_puts_long_oracles_in_notes_and_says_what_its_ci_is():
    # walkthrough of stop 78/79: the oracle column padded every row to ~450 characters, and
    # a 95% CI that missed the prediction was marked "yes" without a word
    long = "x" * 300
    rows = [upper("s", "c", 0.5, 0.01, 1.0, "short oracle"),
            equal("s", "d", 0.59, 0.05, 0.73, long),
            equal("s", "e", 1.0, 0.05, 1.0, long)]
    text = format_table(rows)
    lines = text.splitlines()
    assert max(len(x) for x in lines) < 200 and all(x == x.rstrip() for x in lines)
    assert "short oracle" in lines[2] and lines[3].endswith("[1]") and lines[4].endswith("[1]")
    assert text.count("[1] " + "x" * 20) == 1  # the text once, in full, as a note
    assert "".join(x.strip() for x in text.split("[1] ")[1].splitlines()) == long
    assert "each verdict tests its claim at 5 standard errors" in text.replace("\n", " ")
    assert format_table([]).count("\n") == 1  # head and rule only


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])


# ------------------------------------------------ fuzz round 13: the Renyi selection's law

@pytest.mark.parametrize("shape", [5e-324, 1e-320, -1e-12])
def test_a_denormal_shape_is_refused_by_name(shape):
    from dpbounds.tuning.private_selection import trials_mean, trials_pmf, trials_tail

    # before: a ZeroDivisionError (5e-324), a pmf of zeros and a tail "bound" of 0 (1e-320)
    for call in (lambda: trials_mean(shape, 0.5), lambda: trials_pmf(shape, 0.5, 4),
                 lambda: trials_tail(shape, 0.5, 4)):
        with pytest.raises(ValueError, match="shape must be 0 or at least 1e-09"):
            call()


def test_the_smallest_allowed_shape_is_the_logarithmic_law_to_1e_8():
    """Oracle: the logarithmic law's pmf, (1-g)^k / (k ln(1/g)), written out."""
    import math

    import numpy as np

    from dpbounds.tuning.private_selection import trials_pmf

    g = 0.3
    want = np.array([(1 - g) ** k / (k * math.log(1 / g)) for k in range(1, 9)])
    np.testing.assert_allclose(trials_pmf(1e-9, g, 8), want, rtol=1e-7)
    np.testing.assert_allclose(trials_pmf(-1e-9, g, 8), want, rtol=1e-7)


@pytest.mark.parametrize("gamma", [5e-324, 1e-300, 1e-13])
def test_a_tiny_stop_probability_is_refused_by_name(gamma):
    from dpbounds.tuning.private_selection import selection_rdp, trials_mean, trials_tail

    # before: nan (trials_mean(0, 5e-324)), an OverflowError (trials_tail)
    for call in (lambda: trials_mean(0.0, gamma), lambda: trials_tail(0.0, gamma, 5),
                 lambda: selection_rdp([0.2, 0.8], [2.0, 8.0], shape=0.0,
                                       stop_probability=gamma)):
        with pytest.raises(ValueError, match=r"stop_probability must lie in \[1e-12, 1\)"):
            call()


def _counting():
    from dpbounds.algorithms import dp_heavy_ball

    calls = []

    def alg(objective, **kw):
        calls.append(kw)
        return dp_heavy_ball(objective, **kw)

    return alg, calls


@pytest.fixture(scope="module")
def small_logistic():
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression

    ds = kuru_synthetic(n=300, d=2, seed=0)
    return LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())


@pytest.mark.parametrize("kw, match", [
    ({"epsilon": 1e300}, "delta = 1 \\(none\\).*cap's delta"),
    ({"epsilon": 1e300, "target_delta": 1e-6}, "delta = 1 \\(none\\).*trials' law"),
    ({"target_delta": 0.99999999}, "target_delta 0.99999999 plus"),
    ({"loss_bound": 1e300}, "noise beyond its grid's range"),
    ({"score_epsilon": 1e-30}, "noise beyond its grid's range"),
])
def test_a_selection_without_a_guarantee_runs_no_trial(kw, match, small_logistic):
    # before: eps = 190 / delta = 1 after 8,000 trials, exit 0; every trial "diverged"
    alg, calls = _counting()
    args = {"epsilon": 1.0, "score_epsilon": 0.1, "loss_bound": 5.0, "stop_probability": 0.2,
            "seed": 0, **kw}
    from dpbounds.tuning import select_privately

    public = {"reference_objective": small_logistic} if "target_delta" in kw else {}
    with pytest.raises(ValueError, match=match):
        select_privately(alg, small_logistic, {"step_size": [0.5], "steps": [3]}, momentum=0.0,
                         **public, **args)
    # the reference run (on the public twin) at most: no trial on the data
    assert len(calls) <= (1 if public else 0)


def test_a_huge_pure_cap_is_printed_in_scientific_notation(small_logistic):
    from dpbounds.tuning import select_privately

    with pytest.raises(ValueError, match=r"needs a cap of 2\.07e\+301 trials") as err:
        select_privately(_counting()[0], small_logistic, {"step_size": [0.5], "steps": [3]},
                         momentum=0.0, epsilon=1.0, score_epsilon=0.1, loss_bound=5.0,
                         stop_probability=1e-300, seed=0)
    assert len(str(err.value)) < 200


def test_require_guarantee_false_runs_and_reports_delta_one(small_logistic):
    from dpbounds.tuning import select_privately

    alg, calls = _counting()
    sel = select_privately(alg, small_logistic, {"step_size": [0.5], "steps": [3]},
                           momentum=0.0, epsilon=1.0, score_epsilon=1e6, loss_bound=5.0,
                           stop_probability=0.2, seed=0, require_guarantee=False)
    assert sel.delta == 1.0 and len(calls) == sel.trials_run >= 1


# ------------------------------------------------------------- fuzz round 13: the shell

def _cli(argv, capsys):
    from dpbounds.cli import main

    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own refusals
        rc = exc.code
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_deeply_nested_opacus_json_is_refused_by_name(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 3000 + "]" * 3000)
    rc, _, err = _cli(["privacy", "compose", "--from-opacus", str(deep)], capsys)
    assert rc == 2 and "nested too deeply to read" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["tune", "runs", "hb", "--search", "alpha=0.5", "--search", "T=\uff13"],
    ["tune", "runs", "hb", "--search", "alpha=\uff10.5", "--search", "T=3"],
    ["bound", "yang.sgd", "--eps", "\uff11"],
    ["bound", "yang.sgd", "--N", "\uff11\uff10\uff10"],
])
def test_fullwidth_digits_are_refused_everywhere(argv, capsys):
    # float('３') is 3.0: --search T=３ ran with steps = 3 where --event pure:eps=５ refused
    rc, out, err = _cli(argv, capsys)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_negative_zero_reads_as_zero(capsys):
    rc, out, _ = _cli(["privacy", "compose", "--event", "gaussian:z=1", "--curve", "-0"], capsys)
    rows = [x.split() for x in out.splitlines() if x.strip().startswith(("0", "-0"))]
    assert rc == 0 and rows and rows[0][0] == "0"
    from dpbounds.cli import _real

    value = _real("-0")
    assert value == 0.0 and str(value) == "0.0"


def test_objective_error_on_a_bound_says_it_is_a_bound(capsys):
    rc, _, err = _cli(["tune", "bound", "yang.sgd", "--objective", "error"], capsys)
    assert rc == 2 and "yang.sgd is a bound" in err and "unknown method" not in err


def test_a_flat_bounds_slope_is_zero_not_rounding():
    """The slope row's predicted value where the bound does not move with the varied
    quantity: exactly 0 (its ratio "-"), not -4e-17 (a ratio of -3.7e16). Oracles: a constant
    bound (slope 0 exactly), sqrt (1/2 to rounding) and a rounding-size tilt kept as 0."""
    import numpy as np

    from dpbounds.verify.study import bound_slope
    from dpbounds.verify.verdicts import Verdict

    values = np.array([2.0, 4.0, 8.0, 16.0, 60.0])
    flat = np.full(5, 0.37) * (1 + np.array([0, 1, -1, 1, 0]) * 2**-52)
    assert bound_slope(values, flat) == 0.0
    assert bound_slope(values, np.sqrt(values)) == pytest.approx(0.5, abs=1e-12)
    assert bound_slope(values, values ** 1e-6) == pytest.approx(1e-6, rel=1e-6)  # kept
    row = Verdict("s", "c", "slope", -0.55, 0.01, bound_slope(values, flat), "o", True)
    assert not np.isfinite(row.ratio)  # printed "-", not -3.7e16


# ---------------------------------------------- review of stop 79: surviving mutants

def test_the_pure_pre_check_counts_the_score(small_logistic):
    # trial eps 6.8 + 0.2: delta = (0.8)^T (1 + e^21) > 1 with T the cap of 1e-9; without
    # the score's 0.2 it would read 0.72 and run
    from dpbounds.tuning import select_privately

    alg, calls = _counting()
    with pytest.raises(ValueError, match="delta = 1 \\(none\\)"):
        select_privately(alg, small_logistic, {"step_size": [0.5], "steps": [3]},
                         momentum=0.0, epsilon=6.8, score_epsilon=0.2, loss_bound=5.0,
                         stop_probability=0.2, cap_delta=1e-9, seed=0)
    assert not calls


def test_a_score_noise_between_2_48_and_2_53_grid_steps_is_refused(small_logistic):
    # scale ~ (B / n) 2^30 / eps_s = 2e7 / 300 x 2^30 / 0.1 ~ 7e14 grid steps, in [2^48, 2^53)
    from dpbounds.tuning import select_privately

    alg, calls = _counting()
    with pytest.raises(ValueError, match="noise beyond its grid's range"):
        select_privately(alg, small_logistic, {"step_size": [0.5], "steps": [3]},
                         momentum=0.0, epsilon=1.0, score_epsilon=0.1, loss_bound=2e7,
                         stop_probability=0.5, seed=0)
    assert not calls


@pytest.mark.parametrize("extra, want", [
    ([], {"steps": 200, "batch_size": 10, "sampling": "without_replacement"}),
    (["--sampling", "poisson"], {"public_n": 400, "sampling": "poisson"}),
    (["--steps", "7", "--batch-size", "3"], {"steps": 7, "batch_size": 3}),
])
def test_tune_runs_sgd_passes_its_defaults(extra, want, capsys, monkeypatch):
    import dpbounds.tuning as tuning

    seen = {}

    def spy(alg, f, grid, **kw):
        seen.update(kw, grid=grid)
        raise ValueError("stop here")

    monkeypatch.setattr(tuning, "select_privately", spy)
    rc, _, err = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--N", "400", "--d", "3",
                       "--private", "--loss-bound", "4", "--selection-delta", "1e-5",
                       *extra], capsys)
    assert rc == 2 and "stop here" in err
    assert {k: seen.get(k) for k in want} == want
    assert seen["grid"]["clip_threshold"] == [0.1, 0.3, 1.0, 3.0]


@pytest.mark.parametrize("problem, twin", [("logistic", True), ("quadratic", True),
                                           ("huber_well", False)])
def test_a_verification_problems_reference_run_is_composed(problem, twin, capsys,
                                                           monkeypatch):
    # review of stop 79: a plug-in's own data may ignore the seed, so its "twin" was the
    # private data itself and the reference run was not composed
    import dpbounds.tuning as tuning

    seen = {}

    def spy(alg, f, grid, **kw):
        seen.update(kw)
        raise ValueError("stop here")

    monkeypatch.setattr(tuning, "select_privately", spy)
    rc, _, err = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--N", "300", "--d", "3",
                       "--private", "--loss-bound", "4", "--selection-delta", "1e-5",
                       "--problem", problem, "--steps", "3"], capsys)
    assert rc == 2 and "stop here" in err
    assert (seen["reference_objective"] is not None) is twin


def test_sgd_private_runs_on_a_quadratic_and_refuses_an_infinite_clip(capsys):
    rc, out, err = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--N", "300", "--d", "3",
                         "--private", "--loss-bound", "4", "--selection-delta", "1e-5",
                         "--problem", "quadratic", "--steps", "5", "--search", "alpha=0.5",
                         "--search", "C=1", "--stop-probability", "0.5", "--quiet"], capsys)
    assert rc == 0, err
    rc, out, err = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--search", "C=inf"], capsys)
    assert rc == 2 and out == "" and "finite" in err
    rc, _, err = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--step-size", "0.5",
                       "--clip-threshold", "1"], capsys)
    assert rc == 2 and "every hyper-parameter is fixed" in err


@pytest.mark.parametrize("flag", ["--curve 1_0", "--curve tradeoff:\uff10.\uff11",
                                  "--risk-target \uff10.\uff15@0.01",
                                  "--risk-target 0.5@1_0e-2"])
def test_compose_number_lists_refuse_separators_and_non_ascii(flag, capsys):
    rc, out, err = _cli(["privacy", "compose", "--event", "gaussian:z=1", *flag.split(" ")],
                        capsys)
    assert rc == 2 and out == ""


def test_a_nested_watch_keeps_the_outer_record_and_an_interrupt_propagates(small_logistic):
    """Review of stop 79: the inner watch cleared the one shared record, so an outer read was
    forgotten; a KeyboardInterrupt after a caught read came out as a ValueError."""
    from dpbounds.tuning.private_selection import _public_constants_only

    with pytest.raises(ValueError, match="reads the objective's smoothness"):
        with _public_constants_only(small_logistic, "outer", {}):
            try:
                small_logistic.smoothness  # noqa: B018 - the read is the point
            except ValueError:
                pass
            with _public_constants_only(small_logistic, "inner", {}):
                pass
    with pytest.raises(KeyboardInterrupt):
        with _public_constants_only(small_logistic, "run", {}):
            try:
                small_logistic.smoothness  # noqa: B018
            except ValueError:
                pass
            raise KeyboardInterrupt
    assert type(small_logistic).__name__ == "LogisticRegression"


def test_a_selection_whose_delta_exceeds_one_over_n_says_no_privacy(small_logistic, capsys):
    """Review of stop 79: eps 6.8 with a score of 0.01 ran with delta = 0.72 and no word.
    Oracle: delta > 1/n with n = 300 public; a modest budget raises no flag."""
    from dpbounds.tuning import select_privately

    kw = dict(momentum=0.0, loss_bound=5.0, stop_probability=0.2, seed=0)
    weak = select_privately(_counting()[0], small_logistic, {"step_size": [0.5], "steps": [3]},
                            epsilon=6.5, score_epsilon=0.01, **kw)
    assert weak.delta > 1 / 300 and weak.size == 300
    assert weak.flags and weak.table().startswith("NO PRIVACY: delta=")
    fine = select_privately(_counting()[0], small_logistic, {"step_size": [0.5], "steps": [3]},
                            epsilon=1.0, score_epsilon=0.1, **kw)
    assert fine.flags == [] and "NO PRIVACY" not in fine.table()
    rc, _, err = _cli(["tune", "runs", "hb", "--N", "300", "--d", "3", "--private",
                       "--loss-bound", "5", "--search", "alpha=0.5", "--steps", "3", "--beta",
                       "0", "--eps", "6.5", "--score-eps", "0.01", "--stop-probability", "0.2",
                       "--quiet"], capsys)
    assert rc == 0 and "warning: delta=" in err and "no privacy" in err


PLUG_SENS = '''
from dpbounds import extend as ex

def step(x, grad, noise, p):
    return x - p["eta"] * (grad(x) + noise)

method = ex.Method("sens_{tag}", step=step, mechanism="laplace", neighbouring="replace_one",
                   sensitivity=lambda f, p: {factor} * f.l1_sensitivity / f.n)
ex.audit_setting(method, steps=5, params={{"eta": 0.5}})
'''


@pytest.mark.parametrize("factor, refused", [("0.5", True), ("1.0", False)])
def test_tune_runs_probes_a_plugin_sensitivity_before_the_grid(tmp_path, capsys, factor,
                                                               refused):
    # stop 78's notes: an under-declared sensitivity was tuned and its ledger's eps printed
    # as spent; verify's sensitivity row (the objective's declared worst case, S1 / n, and
    # the data's own neighbours) now runs on the probe's short run, before the grid
    from tests.plugin_state import plugins_loaded

    tag = "half" if refused else "full"
    path = tmp_path / f"sens_{tag}.py"
    path.write_text(PLUG_SENS.format(factor=factor, tag=tag))
    with plugins_loaded([]):
        rc, out, err = _cli(["--plugin", str(path), "tune", "runs", f"sens_{tag}", "--n",
                             "300", "--d", "2", "--search", "eta=0.5,1", "--steps", "6",
                             "--trials", "2", "--quiet"], capsys)
    if refused:
        assert rc == 2 and out == "" and "its declared sensitivity" in err, err
        assert "is 0.5 of what its release moves" in err
    else:
        assert rc == 0 and "privacy spent by the tuning" in out, err


def test_flags_use_the_public_size_and_fire_between_one_over_n_and_a_tenth(capsys):
    """Review of stop 79: a Poisson selection's flag must name its public_n (not the private
    n), and a delta between 1/n and 0.1 must be flagged (n = 300, eps 5.4: delta 0.0142)."""
    from dpbounds.algorithms import dp_sgd
    from dpbounds.cli.tune_runs_cmd import build_problem
    from dpbounds.tuning import select_privately

    f = build_problem("logistic", 300, 3, 0.02, None, 0)
    mid = select_privately(dp_sgd, f, {"step_size": [0.5], "clip_threshold": [1.0]},
                           epsilon=1.0, score_epsilon=0.1,
                           loss_bound=5.0, stop_probability=0.2, target_delta=1e-6, delta=1e-7,
                           steps=5, batch_size=30, sampling="poisson", public_n=250, seed=0,
                           reference_objective=build_problem("logistic", 300, 3, 0.02, None,
                                                             1))
    assert mid.size == 250  # the public size, never the private 300
    weak = select_privately(_counting()[0], small_logistic_(), {"step_size": [0.5],
                            "steps": [3]}, momentum=0.0, epsilon=5.4, score_epsilon=0.01,
                            loss_bound=5.0, stop_probability=0.2, seed=0)
    assert 1 / 300 < weak.delta < 0.1 and weak.flags and "1/n = 0.00333333" in weak.flags[0]
    import json

    rc, out, _ = _cli(["tune", "runs", "hb", "--N", "300", "--d", "3", "--private",
                       "--loss-bound", "5", "--search", "alpha=0.5", "--steps", "3", "--beta",
                       "0", "--eps", "5.4", "--score-eps", "0.01", "--stop-probability", "0.2",
                       "--json", "--quiet"], capsys)
    assert rc == 0 and json.loads(out)["flags"]


def small_logistic_():
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression

    ds = kuru_synthetic(n=300, d=2, seed=0)
    return LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())


def test_a_cosh_cosine_objectives_data_sensitivity_is_refused():
    """Review of stop 79: CoshCosineObjective's sensitivities are its records' (2 max ||e_i||,
    160x apart on a neighbour with one far record), and a selection calibrated DP-GD to them
    claiming eps 3.3. Refused at the read, on both neighbours."""
    import numpy as np

    from dpbounds.algorithms import dp_gd
    from dpbounds.objectives import CoshCosineObjective
    from dpbounds.tuning import select_privately

    e = 0.1 * np.random.default_rng(0).standard_normal((200, 3))
    far = e.copy()
    far[0] = 30.0
    for offsets in (e, far):
        f = CoshCosineObjective(3, offsets=offsets)
        with pytest.raises(ValueError, match="reads the objective's l1_sensitivity"):
            select_privately(dp_gd, f, {"step_size": [0.1]}, epsilon=1.0, score_epsilon=0.1,
                             loss_bound=10.0, stop_probability=1.0, steps=5, seed=0)
