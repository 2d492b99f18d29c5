"""``plan_selection``: the per-run epsilon whose private selection costs a given total
(walkthrough of stop 79: no way to plan the selection's budget before touching the data).

Oracles: the selection itself made afterwards (two-sided: at the planned epsilon it reports at
most the total, 1.001 x (1 + rtol) above it more); for Poisson DP-SGD, dp_accounting's RDP of
the planned runs through Theorem 2 written out; the pure path's closed form with the score
grid's spent budget computed here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import dp_heavy_ball, dp_sgd
from dpbounds.cli.tune_runs_cmd import build_problem
from dpbounds.privacy.discrete import GridLaplace
from dpbounds.privacy.rdp import DEFAULT_ORDERS as O
from dpbounds.tuning import plan_selection, select_privately
from dpbounds.tuning.private_selection import selection_rdp
from tests.tuning.test_private_selection_rdp import _improved

N, D = 2000, 5
F = build_problem("logistic", N, D, 0.02, None, 0)
TWIN = build_problem("logistic", N, D, 0.02, None, 1)
GRID = {"step_size": [0.5, 1.0], "clip_threshold": [1.0]}
LAW = dict(score_epsilon=0.1, loss_bound=4.0, stop_probability=0.2, target_delta=1e-5)


@pytest.mark.parametrize("sampling, total, shape", [("without_replacement", 1.0, 0.0),
                                                    ("poisson", 2.0, 1.0)])
def test_the_planned_selection_costs_the_total_and_no_more(sampling, total, shape):
    fixed = dict(delta=1e-6, steps=30, batch_size=50, sampling=sampling,
                 **({"public_n": N} if sampling == "poisson" else {}))
    plan = plan_selection(dp_sgd, TWIN, GRID, total_epsilon=total, shape=shape, rtol=1e-4,
                          reference_composed=False, **LAW, **fixed)
    assert plan.total_epsilon <= total and plan.evaluations >= 2
    sel = select_privately(dp_sgd, F, GRID, epsilon=plan.epsilon, shape=shape, seed=2,
                           reference_objective=TWIN, **LAW, **fixed)
    assert sel.epsilon == pytest.approx(plan.total_epsilon, rel=1e-12)
    assert total * (1 - 2e-3) <= sel.epsilon <= total
    more = select_privately(dp_sgd, F, GRID, epsilon=plan.epsilon * 1.001 * (1 + 1e-4),
                            shape=shape, seed=2, reference_objective=TWIN, **LAW, **fixed)
    assert more.epsilon > total


def test_poisson_plan_against_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rpa

    fixed = dict(delta=1e-6, steps=30, batch_size=50, sampling="poisson", public_n=N)
    plan = plan_selection(dp_sgd, TWIN, GRID, total_epsilon=1.5, shape=0.0,
                          reference_composed=False, **LAW, **fixed)
    r = dp_sgd(TWIN, epsilon=plan.epsilon, step_size=0.5, clip_threshold=1.0, noise="grid",
               seed=1, **fixed)
    (mech, count), = r.privacy.ledger.entries
    acc = rpa.RdpAccountant(list(O))
    acc.compose(dp_accounting.PoissonSampledDpEvent(
        mech.sampling_rate, dp_accounting.GaussianDpEvent(1 / math.sqrt(2 * mech.rho))), count)
    spent = GridLaplace(sensitivity=4.0 / N, epsilon=0.1, grid_bits=30).epsilon_spent
    trial = np.asarray(acc._rdp) + np.minimum(O * spent ** 2 / 2, spent)
    want = _improved(selection_rdp(trial, O, shape=0.0, stop_probability=0.2), O, 1e-5)
    assert want <= plan.total_epsilon <= want * 1.01 and plan.total_epsilon <= 1.5


def test_pure_plan_is_the_closed_form_and_the_selection_meets_it():
    spent = GridLaplace(sensitivity=5.0 / N, epsilon=0.1, grid_bits=30).epsilon_spent
    plan = plan_selection(dp_heavy_ball, TWIN, {"step_size": [0.5, 1.0], "steps": [5]},
                          total_epsilon=2.0, score_epsilon=0.1, loss_bound=5.0,
                          stop_probability=0.2, momentum=0.0)
    assert plan.epsilon == pytest.approx((2.0 / 3 - spent) / (1 + 1e-9), rel=1e-12)
    assert plan.accountant == "pure" and plan.evaluations == 0
    sel = select_privately(dp_heavy_ball, F, {"step_size": [0.5, 1.0], "steps": [5]},
                           epsilon=plan.epsilon, score_epsilon=0.1, loss_bound=5.0,
                           stop_probability=0.2, momentum=0.0, seed=0)
    assert 2.0 * (1 - 1e-9) <= sel.epsilon <= 2.0


@pytest.mark.parametrize("kw, words", [
    ({"total_epsilon": 0.2}, "no run budget is left"),
    ({"total_epsilon": 0.05, "target_delta": 1e-5}, "no per-run epsilon gives a total of"),
    ({"total_epsilon": -1.0}, "total_epsilon must be"),
    ({"total_epsilon": 1.0, "rtol": 0.5}, r"rtol must lie in \(0, 0.1\]"),
    ({"total_epsilon": 1.0, "target_delta": 1e-5, "shape": 5e-324}, "shape must be 0 or"),
    ({"total_epsilon": 1.0, "stop_probability": "x"}, "stop_probability must be a number"),
    ({"total_epsilon": 1.0, "stop_probability": True}, "stop_probability must be a number"),
    ({"total_epsilon": 1.0, "cap_delta": 0.0}, r"cap_delta must be a number in \(0, 1\)"),
    ({"total_epsilon": float("nan")}, "total_epsilon must be"),
    ({"total_epsilon": float("inf")}, "total_epsilon must be"),
])
def test_refusals(kw, words):
    kw = {"stop_probability": 0.2, **kw}
    with pytest.raises(ValueError, match=words):
        plan_selection(dp_heavy_ball, TWIN, {"step_size": [0.5], "steps": [5]},
                       score_epsilon=0.1, loss_bound=5.0, momentum=0.0, **kw)


def test_the_shell_plans_then_selects(capsys):
    import json

    from tests.tuning.test_by_runs import _cli

    rc, out, _ = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--N", "800", "--d", "3",
                       "--private", "--loss-bound", "4", "--selection-delta", "1e-5",
                       "--trials-shape", "0", "--steps", "20", "--search", "alpha=0.5,1",
                       "--search", "C=1", "--total-epsilon", "1", "--seed", "1", "--json",
                       "--quiet"], capsys)
    assert rc == 0
    got = json.loads(out)
    assert 0.998 <= got["epsilon"] <= 1.0 and got["epsilon_per_run"] < 1.0
    assert 0.999e-5 <= got["delta"] <= 1e-5  # the whole selection's (it was 1e-5 + the cap's)
    rc, _, err = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--private", "--loss-bound",
                       "4", "--selection-delta", "1e-5", "--total-epsilon", "1", "--eps", "1"],
                      capsys)
    assert rc == 2 and "leave --eps out" in err
    rc, _, err = _cli(["tune", "runs", "hb", "--total-epsilon", "1"], capsys)
    assert rc == 2 and "read by --private only" in err


def test_a_total_delta_holds_the_cap_share_inside_it():
    """Walkthrough of stop 80: target_delta=1e-6 released delta = 1.003e-6 (the cap's share on
    top). With total_delta the selection's delta is at most the total, and within the share
    of it (two-sided); the share is written out here from the law's tail."""
    from dpbounds.tuning.private_selection import _law_cap, trials_tail

    fixed = dict(delta=1e-6, steps=30, batch_size=50)
    law = {k: v for k, v in LAW.items() if k != "target_delta"}
    plan = plan_selection(dp_sgd, TWIN, GRID, total_epsilon=1.0, shape=0.0, total_delta=1e-6,
                          reference_composed=False, **law, **fixed)
    cap = _law_cap(0.0, 0.2, 1e-9)
    share = (trials_tail(0.0, 0.2, cap) + cap * 2.0**-50) * (1 + math.e)
    assert plan.target_delta == pytest.approx(1e-6 - share, rel=1e-12)
    sel = select_privately(dp_sgd, F, GRID, epsilon=plan.epsilon, shape=0.0, seed=1,
                           target_delta=plan.target_delta, reference_objective=TWIN, **law,
                           **fixed)
    assert 1e-6 - share <= sel.delta <= 1e-6 and sel.epsilon <= 1.0
    # control: the conversion delta alone, as before, releases more than it asked
    old = select_privately(dp_sgd, F, GRID, epsilon=plan.epsilon, shape=0.0, seed=1,
                           target_delta=1e-6, reference_objective=TWIN, **law, **fixed)
    assert old.delta > 1e-6
    # another cap_delta: the share is the cap's at that cap_delta (review of stop 80: S3)
    plan7 = plan_selection(dp_sgd, TWIN, GRID, total_epsilon=1.0, shape=0.0, total_delta=1e-6,
                           cap_delta=1e-7, reference_composed=False, **law, **fixed)
    cap7 = _law_cap(0.0, 0.2, 1e-7)
    share7 = (trials_tail(0.0, 0.2, cap7) + cap7 * 2.0**-50) * (1 + math.e)
    assert share7 > share and plan7.target_delta == pytest.approx(1e-6 - share7, rel=1e-12)
    sel7 = select_privately(dp_sgd, F, GRID, epsilon=plan7.epsilon, shape=0.0, seed=1,
                            target_delta=plan7.target_delta, cap_delta=1e-7,
                            reference_objective=TWIN, **law, **fixed)
    assert sel7.delta <= 1e-6
    with pytest.raises(ValueError, match="not both"):
        plan_selection(dp_sgd, TWIN, GRID, total_epsilon=1.0, total_delta=1e-6, **LAW, **fixed)
    with pytest.raises(ValueError, match="at most the cap's share"):
        plan_selection(dp_sgd, TWIN, GRID, total_epsilon=1.0, total_delta=1e-12, **law,
                       **fixed)


def test_the_default_plan_counts_the_reference_run_the_default_selection_composes():
    """Review of stop 79: planned without the reference run's curve, a selection made without
    a public twin (its default) reported 1.133 at a total of 1. The default plan counts it:
    that selection reports at most the total (two-sided), and one given the twin less."""
    fixed = dict(delta=1e-6, steps=30, batch_size=50)
    plan = plan_selection(dp_sgd, TWIN, GRID, total_epsilon=1.0, shape=0.0, **LAW, **fixed)
    alone = select_privately(dp_sgd, F, GRID, epsilon=plan.epsilon, shape=0.0, seed=1, **LAW,
                             **fixed)
    assert alone.reference_composed and 1.0 * (1 - 2e-3) <= alone.epsilon <= 1.0
    twin = select_privately(dp_sgd, F, GRID, epsilon=plan.epsilon, shape=0.0, seed=1,
                            reference_objective=TWIN, **LAW, **fixed)
    assert twin.epsilon < alone.epsilon


def test_a_plan_whose_delta_is_no_privacy_is_refused():
    """Fuzz round 14: the cap's share P[K > T] (1 + e^eps) grows with the total; a total of 20
    planned a pure selection of delta 0.46, a Renyi one of 50 a delta of 0.9995, without a
    word. Refused above 1/n (1e-3 where n is unknown), naming cap_delta; a smaller cap_delta
    plans the same total (the share written out: cap_delta (1 + e^total))."""
    import re

    for gamma in (0.05, 0.3, 0.5):  # the advice fits (review 2: it was refused again)
        with pytest.raises(ValueError, match="lower cap_delta to") as err:
            plan_selection(None, None, {"step_size": [0.5]}, total_epsilon=20.0,
                           score_epsilon=0.1, loss_bound=5.0, stop_probability=gamma)
        advice = float(re.search(r"cap_delta to ([0-9.e+-]+)", str(err.value)).group(1))
        ok = plan_selection(None, None, {"step_size": [0.5]}, total_epsilon=20.0,
                            score_epsilon=0.1, loss_bound=5.0, stop_probability=gamma,
                            cap_delta=advice)
        assert ok.total_epsilon <= 20.0 and ok.delta <= 1e-3
        # and it is near the largest that fits: 1.2x it does not
        with pytest.raises(ValueError, match="above 1e-3"):
            plan_selection(None, None, {"step_size": [0.5]}, total_epsilon=20.0,
                           score_epsilon=0.1, loss_bound=5.0, stop_probability=gamma,
                           cap_delta=advice * 1.2)
    fixed = dict(delta=1e-6, steps=30, batch_size=50)
    with pytest.raises(ValueError, match=r"above 1/n = 0.0005 \(no privacy\)"):
        plan_selection(dp_sgd, TWIN, GRID, total_epsilon=50.0, shape=0.0,
                       reference_composed=False, **LAW, **fixed)
