"""The stored full studies (``dpbounds.verify.stored``) are what the figures and notebook 04
show: each record must be a run in the informative regime whose bound the theorem gives at
the stored parameters (recomputed here by dry plans: the oracle), with its gating verdicts."""

from __future__ import annotations

import pytest

from dpbounds.verify import get_study, problem
from dpbounds.verify.regimes import dry_plan
from dpbounds.verify.stored import compact, stored_runs

RUNS = stored_runs()


def test_records_exist_for_the_tree_methods() -> None:
    assert {"tran_cutkosky.alg1", "tran_cutkosky.alg2"} <= set(RUNS)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_record_is_informative_and_its_bound_is_the_theorems(name: str) -> None:
    rec = RUNS[name]
    st = get_study(name)
    spec = problem("huber_well")
    trials = int(rec["regime"].get("trials") or 4)
    for v, b, info in zip(rec["values"], rec["bound"], rec["informative"]):
        p = dry_plan(st, spec, dict(rec["fixed"], **{rec["vary"]: int(v)}), trials)
        assert b == pytest.approx(p["bound"], rel=1e-9)
        assert info["informative"] and p["bound"] < min(p["trivial"], p["do_nothing"])
    # control: the bound at another N is not the stored one
    v0 = int(rec["values"][0] * 1.3)
    other = dry_plan(st, spec, dict(rec["fixed"], **{rec["vary"]: v0}), trials)["bound"]
    assert other != pytest.approx(rec["bound"][0], rel=1e-3)
    # the exit status is the gating verdicts' conjunction
    assert rec["exit_status"] == (0 if all(v["holds"] for v in rec["verdicts"]) else 1)
    assert rec["holds"] == (rec["exit_status"] == 0)


def test_compact_keeps_only_gating_verdicts() -> None:
    doc = dict(theorem="t", regime=dict(name="informative", trials=4, extra=1),
               params=[dict(E=3, R=0.1)],
               verdicts=[dict(name="a", holds=True, status="yes", measured=1.0, predicted=2.0,
                              gating=True),
                         dict(name="s", holds=False, status="no (shape)", measured=1.0,
                              predicted=0.0, gating=False)])
    out = compact(doc, command="c", exit_status=0, cpu_seconds=1.5)
    assert [v["name"] for v in out["verdicts"]] == ["a"]
    assert out["regime"] == dict(name="informative", trials=4)
    assert out["params"] == [dict(E=3)] and out["cpu_seconds"] == 1.5
