"""Edges found in stop 78 (fuzz round 12, the researcher walkthrough), each with the check
that failed before."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpbounds.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _cli(argv, capsys):
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_compare_never_crowns_a_vacuous_bound(capsys):
    # was: "best (closed-form choices): convex.noisy_projected_sgd" beside "vacuous here: ...
    # 16.48 >= 1", and the same name as the tuned best
    from dpbounds.bounds.compare import compare, vacuous_reason

    c = compare({"problem_class": "convex", "N": 1000, "d": 10, "eps": 0.5, "delta": 1e-5,
                 "G": 1.0, "diameter": 1.0})
    assert c.vacuous and c.best not in c.vacuous and c.best_tuned not in c.vacuous
    for r in c.rows:  # the oracle: the documented vacuity test, row by row
        if r.applicable and r.name == c.best:
            assert vacuous_reason(r.name, c.problem, r.value) is None
    rc, out, _ = _cli(["compare", "--problem-class", "convex", "--N", "1000", "--d", "10",
                       "--eps", "0.5", "--delta", "1e-5", "--G", "1", "--diameter", "1",
                       "--quiet"], capsys)
    assert rc == 0
    assert "best (closed-form choices): none (every bound that applies is vacuous" in out


def test_select_privately_takes_numpy_floats():
    # was: "cap_delta must be a number in (0, 1), got np.float32(1e-09)"
    from dpbounds.objectives import QuadraticObjective
    from dpbounds.tuning.private_selection import _check_law

    assert _check_law(np.float32(0.5), np.float64(0.1)) == (0.5, pytest.approx(0.1))
    F = QuadraticObjective.random(d=2, mu=0.5, L=1.0, n=50, offset_scale=1.0, seed=3,
                                  offset_l1_radius=20.0, offset_l2_radius=20.0)
    from dpbounds.algorithms import dp_heavy_ball
    from dpbounds.tuning import select_privately

    sel = select_privately(dp_heavy_ball, F, {"steps": [2]}, step_size=0.5, momentum=0.1,
                           epsilon=1.0, score_epsilon=0.1, loss_bound=5.0,
                           stop_probability=np.float32(0.5), cap_delta=np.float32(1e-9))
    assert sel.best == {"steps": 2}


@pytest.mark.parametrize("argv, words", [
    # was: "the values must be numbers" for a K of 1e9
    (["--search", "alpha=0.1:1:1e9"], "K in [2, 1000]"),
    # was: run, refused inside, and charged as spent (eps 6 for 4 runs that released)
    (["--search", "alpha=-1,1", "--steps", "3"], "step_size must be > 0, got -1"),
    (["--search", "beta=0,1.5", "--search", "alpha=0.5", "--steps", "3"],
     "momentum must be in [0, 1), got 1.5"),
    (["--momentum", "1", "--search", "alpha=0.5", "--steps", "3"],
     "--momentum: momentum must be in [0, 1), got 1"),
])
def test_public_values_out_of_range_are_refused_before_any_run(argv, words, capsys):
    rc, out, err = _cli(["tune", "runs", "hb", "--n", "200", "--d", "3", *argv], capsys)
    assert rc == 2 and out == "" and words in err, err


def test_a_verification_problem_without_sensitivity_is_refused_for_builtins(capsys):
    # was: every grid point tried, then "no grid point ran: ... pass sensitivity="
    rc, out, err = _cli(["tune", "runs", "gd", "--problem", "huber_well", "--n", "200", "--d",
                         "3", "--search", "alpha=0.1,1", "--steps", "4", "--trials", "2",
                         "--eval-trials", "2"], capsys)
    assert rc == 2 and "no finite L1 sensitivity" in err and "--plugin" in err, err


def test_a_poisson_plugin_is_tuned_with_the_shells_public_size(capsys):
    # was: "no grid point ran: public_n must be given ... pass public_n=" with no flag for it
    from tests.plugin_state import plugins_loaded

    with plugins_loaded([]):
        rc, out, err = _cli(["--plugin", str(EXAMPLES / "dp_sgd_poisson.py"), "tune", "runs",
                             "dp_sgd_poisson", "--n", "1000", "--d", "3", "--search",
                             "eta=0.5,1", "--search", "B=50", "--steps", "20", "--delta",
                             "1e-5", "--trials", "2", "--quiet"], capsys)
    assert rc == 0, err
    assert "tuned by runs" in out and "(rdp)" in out


def test_opacus_files_are_named_in_their_errors(tmp_path, capsys):
    ok, bad, empty = tmp_path / "ok.json", tmp_path / "bad.json", tmp_path / "empty.json"
    ok.write_text("[[1.1, 0.01, 100]]")
    bad.write_text("[[1.1, 0.01, 0]]")
    empty.write_text('{"history": []}')
    rc, _, err = _cli(["privacy", "compose", "--from-opacus", str(ok), "--from-opacus",
                       str(bad), "--quiet"], capsys)
    assert rc == 2 and f"--from-opacus {bad}: history[0] num_steps" in err, err
    rc, _, err = _cli(["privacy", "compose", "--from-opacus", str(empty), "--quiet"], capsys)
    assert rc == 2 and "its history is empty" in err and "no event to compose" not in err


def test_the_interval_of_a_non_negative_mean_stays_non_negative():
    # was: tune runs printed [-0.0561, 0.1296] for a mean F - F*
    from dpbounds.tuning.by_runs import _score

    v = np.array([0.0, 0.0, 0.0, 0.4])
    s = _score(v, {})
    half = stats.t.ppf(0.975, 3) * v.std(ddof=1) / math.sqrt(4)  # oracle: Student's t
    assert s.mean == pytest.approx(0.1) and s.high == pytest.approx(0.1 + half)
    assert 0.1 - half < 0 and s.low == 0.0
    # a statistic that can be negative keeps its interval
    w = np.array([-0.1, 0.0, 0.2])
    assert _score(w, {}).low == pytest.approx(w.mean() - stats.t.ppf(0.975, 2) * w.std(ddof=1)
                                              / math.sqrt(3))


def test_the_spend_summary_points_to_the_exportable_ledger():
    # was: r.ledger.report(1e-5) -> "'SpentBudget' object has no attribute 'report'"
    import copy
    import pickle

    from dpbounds.algorithms import dp_gd
    from dpbounds.objectives import QuadraticObjective

    F = QuadraticObjective.random(d=2, mu=0.5, L=1.0, n=50, offset_scale=1.0, seed=3,
                                  offset_l1_radius=20.0, offset_l2_radius=20.0)
    r = dp_gd(F, epsilon=1.0, steps=3, step_size=0.5)
    with pytest.raises(AttributeError, match=r"result\.privacy\.ledger"):
        r.ledger.report(1e-5)
    with pytest.raises(AttributeError, match="no attribute 'nothing_at_all'$"):
        r.ledger.nothing_at_all  # noqa: B018
    # the summary still copies and pickles (its own attributes unchanged)
    assert pickle.loads(pickle.dumps(r.ledger)).epsilon == r.ledger.epsilon
    assert copy.deepcopy(r.ledger).epsilon == r.ledger.epsilon
    assert r.privacy.ledger.report(1e-5)["pure"] == pytest.approx(1.0)


def test_a_without_replacement_batch_must_be_whole_at_the_given_size(capsys):
    # was (fuzz round 10, left over until stop 78): q n = 0.5 examples accepted
    base = ["privacy", "compose", "--neighbouring", "replace_one", "--dataset-size", "1000",
            "--quiet", "--event"]
    rc, _, err = _cli([*base, "gaussian:z=1,q=0.0005,sampling=wor"], capsys)
    assert rc == 2 and "q n = 0.0005 x 1000 = 0.5 examples must be a whole number" in err
    rc, out, _ = _cli([*base, "gaussian:z=1,q=0.002,sampling=wor"], capsys)
    assert rc == 0 and "pld" in out


PLUG_SCALED = '''
from dpbounds import extend as ex

def step(x, grad, noise, p):
    return x - p["eta"] * (grad(x) + {scale} * noise)

method = ex.Method("scaled_{tag}", step=step, mechanism="laplace", neighbouring="replace_one",
                   sensitivity=lambda f, p: 2.0 * f.l1_gradient_bound / f.n
                   if hasattr(f, "l1_gradient_bound") else f.l1_sensitivity)
ex.audit_setting(method, steps=5, params={{"eta": 0.5}})
'''


@pytest.mark.parametrize("scale, refused", [("0.25", True), ("1.0", False)])
def test_tune_runs_probes_a_plugin_step_before_the_grid(tmp_path, capsys, scale, refused):
    # was: a step scaling its noise by 0.25 was tuned and its ledger's eps printed as spent
    from tests.plugin_state import plugins_loaded

    tag = "under" if refused else "ok"
    path = tmp_path / f"scaled_{tag}.py"
    path.write_text(PLUG_SCALED.format(scale=scale, tag=tag))
    with plugins_loaded([]):
        rc, out, err = _cli(["--plugin", str(path), "tune", "runs", f"scaled_{tag}", "--n",
                             "300", "--d", "2", "--search", "eta=0.5,1", "--steps", "6",
                             "--trials", "2", "--quiet"], capsys)
    if refused:
        assert rc == 2 and "not a function of its release" in err and "0.75" in err, err
        assert out == ""
    else:
        assert rc == 0 and "privacy spent by the tuning" in out, err
