"""The planner's cost memo (``dpbounds.verify.costs``, ``dpbounds verify --cost-cache``).

The oracle of a plan made from the memo is the plan made with probe runs: the same values,
reasons and estimated seconds, exactly, with no probe run. Negative controls: a memo whose
fit is altered changes the estimate (the plan reads it), and a memo of another host, another
code or other arguments is not read (the probes run again).
"""

from __future__ import annotations

import json
import os

import pytest

from dpbounds.cli import _cost_cache
from dpbounds.cli import main as cli_main
from dpbounds.verify import costs as costs_mod
from dpbounds.verify import regimes
from dpbounds.verify import study as study_mod
from dpbounds.verify.costs import MEMO_FORMAT, CostMemo

_STUDY = "strongly_convex.heavy_ball"


def _plan(memo: CostMemo | None, var: str = "d") -> dict:
    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    var_, values, given = study_mod._grid(s, {var: None}, False)
    with regimes.remembering(memo):
        reg, vals, fixed = study_mod._choose_grid(s, spec, var_, values, given, dict(s.fixed),
                                                  s.trials[0], False, "auto", 900.0, False, [],
                                                  reduce_trials=True, costs=memo)
    return dict(reg, values=list(vals))


@pytest.fixture
def runs(monkeypatch) -> list[dict]:
    """Every run of the study (probe or point) while the fixture is active."""
    seen: list[dict] = []
    cls = type(study_mod.get_study(_STUDY))
    orig = cls.run_point

    def run_point(self, point, inst, trials, seed, mutation=None):
        seen.append(dict(point))
        return orig(self, point, inst, trials, seed, mutation)
    monkeypatch.setattr(cls, "run_point", run_point)
    return seen


def _same_plan(a: dict, b: dict) -> None:
    for key in ("name", "why", "values", "estimated_seconds", "estimated_total_seconds",
                "seconds_per_step", "seconds_per_evaluation", "fixed_seconds_per_point",
                "cost_power_of_d", "trials"):
        assert a.get(key) == b.get(key), key


def test_a_plan_from_the_memo_is_the_probed_plan_without_a_probe_run(runs) -> None:
    memo = CostMemo()
    first = _plan(memo)
    probes = len(runs)
    assert probes > 0 and memo.misses >= 2 and memo.hits == 0  # the fit and the power of d
    assert first["name"] == "informative"
    again = CostMemo.from_json(json.loads(json.dumps(memo.to_json())))  # as a file holds it
    runs.clear()
    second = _plan(again)
    assert runs == []  # no probe run
    assert again.hits == memo.misses and again.misses == 0 and not again.changed
    _same_plan(first, second)


def test_an_altered_memo_is_read_and_another_hosts_or_codes_is_not(runs, monkeypatch) -> None:
    memo = CostMemo()
    first = _plan(memo)
    # negative control: the plan reads the memo (a 100x per-step cost is priced 100x higher)
    altered = CostMemo.from_json(memo.to_json())
    for entry in altered.entries.values():
        if isinstance(entry["value"], dict) and "fit" in entry["value"]:
            a, b, c = entry["value"]["fit"]
            entry["value"]["fit"] = [100 * a, 100 * b, c]
    runs.clear()
    second = _plan(altered)
    assert runs == []
    assert second["seconds_per_step"] == pytest.approx(100 * first["seconds_per_step"])
    # another host: nothing is read, the probes run again
    sig = dict(costs_mod.host_signature(), simd="another")
    monkeypatch.setattr(costs_mod, "host_signature", lambda: sig)
    other = CostMemo.from_json(memo.to_json())
    runs.clear()
    _plan(other)
    assert runs and other.hits == 0
    # edited code: nothing is read
    monkeypatch.undo()
    monkeypatch.setattr(costs_mod, "_package_stamp", lambda: 1)
    other = CostMemo.from_json(memo.to_json())
    _plan(other)
    assert other.hits == 0


def test_keys_name_every_argument() -> None:
    m = CostMemo()
    base = dict(theorem="t", problem={"kind": "q"}, point={"N": 32, "d": 4}, trials=4,
                largest=None)
    k = m.key("probe_fit", **base)
    assert k == m.key("probe_fit", **dict(base, point={"d": 4.0, "N": 32.0}))  # 32 is 32.0
    for change in (dict(theorem="u"), dict(problem={"kind": "r"}), dict(point={"N": 33, "d": 4}),
                   dict(trials=8), dict(largest={"N": 100})):
        assert m.key("probe_fit", **dict(base, **change)) != k, change
    assert m.key("power_of_d", **base) != k


def test_from_json_refuses_what_is_not_a_memo_and_keeps_the_newest(monkeypatch) -> None:
    with pytest.raises(ValueError, match="format"):
        CostMemo.from_json({"entries": {}})
    with pytest.raises(ValueError, match="entries"):
        CostMemo.from_json(dict(format=MEMO_FORMAT, version=costs_mod.COST_MODEL_VERSION,
                                entries=[]))
    with pytest.raises(ValueError, match="malformed"):
        CostMemo.from_json(dict(format=MEMO_FORMAT, version=costs_mod.COST_MODEL_VERSION,
                                entries={"x" * 64: {"value": 1, "saved": float("nan")}}))
    # another model version: read as empty (its fits are not this model's)
    assert CostMemo.from_json(dict(format=MEMO_FORMAT, version=-1, entries={})).entries == {}
    monkeypatch.setattr(costs_mod, "MAX_ENTRIES", 2)
    m = CostMemo()
    for i in range(3):
        m.put(f"{i:064d}", i)
        m.entries[f"{i:064d}"]["saved"] = float(i)
    assert sorted(m.to_json()["entries"]) == [f"{1:064d}", f"{2:064d}"]


@pytest.mark.parametrize("value", [None, {"fit": [1.0, 2.0]}, {"fit": [1.0, 1.0, -1.0]},
                                   {"fit": [0.0, 1.0, 1.0]}, {"fit": [1.0, True, 1.0]},
                                   {"fit": [float("inf"), 1.0, 1.0]}, {"fit": "abc"}])
def test_a_malformed_remembered_fit_is_probed_again(value) -> None:
    assert regimes._remembered_fit(value) is None


def test_a_malformed_remembered_power_is_probed_again(monkeypatch) -> None:
    calls: list[int] = []

    def cost_over_d(study, spec, fixed, values, trials, largest=None):
        calls.append(1)
        return regimes._power_factor(int(fixed["d"]), 0.5, None)
    monkeypatch.setattr(regimes, "cost_over_d", cost_over_d)
    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    memo = CostMemo()
    f = regimes.remembered_cost_over_d(memo, s, spec, dict(s.fixed), (2, 32), 4)
    g = regimes.remembered_cost_over_d(memo, s, spec, dict(s.fixed), (2, 8, 32), 4)  # ends only
    assert calls == [1] and f.powers == g.powers == (0.5, 0.5)  # type: ignore[attr-defined]
    for bad in (2.0, -0.1, True, "x"):
        for entry in memo.entries.values():
            entry["value"]["power"] = bad
        regimes.remembered_cost_over_d(memo, s, spec, dict(s.fixed), (2, 32), 4)
    assert len(calls) == 5


def _cli(*extra: str) -> list[str]:
    return ["verify", _STUDY, "--vary", "d", "--quiet", *extra]


def test_the_command_keeps_its_fits_and_reads_them_back(tmp_path, capsys) -> None:
    f = tmp_path / "sub" / "costs.json"
    assert cli_main([*_cli("--cost-cache", str(f))]) == 0
    kept = json.loads(f.read_text())
    assert kept["format"] == MEMO_FORMAT and len(kept["entries"]) >= 2
    capsys.readouterr()
    assert cli_main([*_cli("--cost-cache", str(f), "--json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["regime"]["cost_fits"] == {"remembered": len(kept["entries"]), "probed": 0}


def test_off_keeps_nothing_and_the_environment_names_the_file(tmp_path, monkeypatch,
                                                              capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cli_main([*_cli("--cost-cache", "off", "--json")]) == 0
    assert "cost_fits" not in json.loads(capsys.readouterr().out)["regime"]
    assert not any(tmp_path.rglob("*.json"))
    env_file = tmp_path / "env.json"
    monkeypatch.setenv(_cost_cache.ENV, str(env_file))
    assert cli_main(_cli()) == 0
    assert env_file.exists()
    monkeypatch.delenv(_cost_cache.ENV)
    assert _cost_cache.resolve(None) == tmp_path / "xdg" / "dpbounds" / "verify-costs.json"
    assert _cost_cache.resolve("OFF") is None and _cost_cache.resolve(" ") is None


def test_a_damaged_or_unwritable_cache_is_a_note_never_an_error(tmp_path, capsys) -> None:
    bad = tmp_path / "costs.json"
    bad.write_text("{not json")
    assert cli_main([*_cli("--cost-cache", str(bad))]) == 0
    err = capsys.readouterr().err
    assert "could not be read" in err and "probed again" in err
    assert json.loads(bad.read_text())["format"] == MEMO_FORMAT  # rewritten whole
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert cli_main([*_cli("--cost-cache", str(blocker / "costs.json"))]) == 0
    assert "could not be written" in capsys.readouterr().err
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".verify-costs-")]


def test_save_merges_what_another_process_wrote(tmp_path) -> None:
    path = tmp_path / "c.json"
    one, two = CostMemo(), CostMemo()
    one.put("1" * 64, 1.0)
    two.put("2" * 64, 2.0)
    assert _cost_cache.save(one, path) is None
    assert _cost_cache.save(two, path) is None
    back, note = _cost_cache.load(path)
    assert note is None and back.get("1" * 64) == 1.0 and back.get("2" * 64) == 2.0


def test_scaling_study_refuses_a_memo_of_another_type() -> None:
    from dpbounds.verify import scaling_study

    with pytest.raises(ValueError, match="costs must be a CostMemo"):
        scaling_study(_STUDY, vary={"d": None}, quick=True, costs={})  # type: ignore[arg-type]


def test_the_trace_timing_is_kept_in_the_memo_of_the_plan() -> None:
    spec = study_mod.problem("huber_well")
    memo = CostMemo()
    with regimes.remembering(memo):
        secs = regimes.trace_seconds(spec, 4, 32)  # timed (16 trials at most)
    assert memo.misses == 1 and len(memo.entries) == 1
    (entry,) = memo.entries.values()
    assert entry["value"] == secs > 0
    entry["value"] = 123.0  # negative control: the plan reads the memo's value
    with regimes.remembering(memo):
        assert regimes.trace_seconds(spec, 4, 16) == 123.0
    assert regimes.trace_seconds(spec, 4, 16) == secs  # outside the block: timed (cached)
