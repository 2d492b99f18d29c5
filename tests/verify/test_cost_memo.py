"""The planner's cost memo (``dpbounds.verify.costs``, ``dpbounds verify --cost-cache``).

Oracles. A plan made with a memo is compared with the plan made without one
(``costs=None``), exactly, with the timing functions replaced by deterministic stand-ins that
depend on every argument (so a key that misses an argument reads another call's answer and
the plans differ); and a plan made from a filled memo runs no probe, no trace timing and no
cost-over-d probe. Negative controls: a memo whose fit is altered moves the estimate (the plan
reads it); a memo of another host or other code, or of a study whose code nothing names, is
not read. The file's edge: what is not a cost cache is never overwritten, paths that are not
regular files are not opened, concurrent saves keep both processes' entries.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dpbounds.cli import _cost_cache
from dpbounds.cli import main as cli_main
from dpbounds.verify import costs as costs_mod
from dpbounds.verify import regimes
from dpbounds.verify import study as study_mod
from dpbounds.verify.costs import FILE_VERSION, MEMO_FORMAT, CostMemo

ROOT = Path(__file__).resolve().parents[2]
_STUDY = "strongly_convex.heavy_ball"


class _Planned(Exception):
    """Raised by ``on_plan``: the plan is made, the runs are not wanted."""


def _plan(theorem: str, var: str, memo: CostMemo | None, quick: bool = False) -> dict:
    def stop(reg: dict) -> None:
        raise _Planned(reg)
    with pytest.raises(_Planned) as info:
        study_mod.scaling_study(theorem, vary={var: None}, quick=quick, estimate=True,
                                on_plan=stop, costs=memo)
    return info.value.args[0]


@pytest.fixture
def timing(monkeypatch) -> list[str]:
    """The planner's timing functions replaced by deterministic functions of all their
    arguments; the list records each call."""
    calls: list[str] = []

    def probe_fit(study, spec, point, trials, largest=None, stopped=None, sizes=None,
                 target=None):
        calls.append("fit")
        big = dict(largest or {})
        if stopped is not None:
            stopped.append("largest" if largest else "time")
        a = 1e-6 * (1 + trials / 7 + float(point["d"]) / 13 + float(point["N"]) / 1e4
                    + big.get("N", 0.0) / 1e5 + big.get("T", 0.0) / 1e7 + len(spec.kind)
                    + len(study.theorem) / 3 + float(point["eps"]) / 5
                    + float(point.get("T", 0.0)) / 1e5)
        return a, 1e-9 * (1 + trials), 0.01 * (1 + float(point["d"]) / 10)

    def over_d(study, spec, fixed, values, trials, largest=None, fit=None, warm=()):
        calls.append("d")
        ds = sorted(float(v) for v in values)
        power = min(1.0, 0.2 + 0.05 * math.log2(ds[-1] / ds[0]) + trials / 100)
        cap = None if largest is None else float(largest.get("T", largest["N"]))
        return regimes._power_factor(int(fixed["d"]), power, cap)

    def trace(spec, d, trials):
        calls.append("trace")
        return 1e-8 * (1 + d / 10 + trials / 100 + spec.G / 7)

    monkeypatch.setattr(regimes, "_probe_fit", probe_fit)
    monkeypatch.setattr(regimes, "cost_over_d", over_d)
    monkeypatch.setattr(regimes, "_trace_seconds", trace)
    return calls


_KEYS = ("name", "why", "values", "estimated_seconds", "estimated_total_seconds",
         "seconds_per_step", "seconds_per_evaluation", "fixed_seconds_per_point",
         "cost_power_of_d", "trace_seconds_per_sample", "trials", "estimated_memory_bytes")


def _same(a: dict, b: dict) -> None:
    for key in _KEYS:
        assert a.get(key) == b.get(key), (key, a.get(key), b.get(key))


@pytest.mark.parametrize("theorem,var,quick", [
    (_STUDY, "d", False), (_STUDY, "N", False), ("strongly_convex.nag", "eps", False),
    ("nonconvex.normalized_sgd", "d", False),  # the memory fallback: the estimate's probe
    ("nonconvex.clipped_sgd", "eps", False),  # settings of T, the trace
    ("nonconvex.clipped_sgd", "N", True)])  # a quick study: the estimate only
def test_a_plan_from_the_memo_is_the_plan_without_one(timing, theorem, var, quick) -> None:
    alone = _plan(theorem, var, None, quick)
    timing.clear()
    memo = CostMemo()
    first = _plan(theorem, var, memo, quick)
    _same(alone, first)
    assert timing and first["cost_fits"] == {"remembered": 0, "probed": len(memo.entries)}
    again = CostMemo.from_json(json.loads(json.dumps(memo.to_json())))  # as a file holds it
    timing.clear()
    second = _plan(theorem, var, again, quick)
    assert timing == []  # no probe, no trace timing, no probe over d
    assert second["cost_fits"] == {"remembered": len(memo.entries), "probed": 0}
    assert not again.changed
    _same(alone, second)


def test_one_memo_for_several_studies_gives_each_its_own_plan(timing) -> None:
    """normalized_sgd's and clipped_sgd's probes share the point, problem and trials: only
    the study tells them apart."""
    alone = _plan("nonconvex.clipped_sgd", "N", None, True)
    memo = CostMemo()
    _plan("nonconvex.normalized_sgd", "N", memo, True)
    _same(alone, _plan("nonconvex.clipped_sgd", "N", memo, True))


def test_the_real_probes_are_not_run_from_a_filled_memo(monkeypatch) -> None:
    """Without stand-ins: every run of the study (a probe) counted."""
    runs: list[dict] = []
    cls = type(study_mod.get_study(_STUDY))
    orig = cls.run_point

    def run_point(self, point, inst, trials, seed, mutation=None):
        runs.append(dict(point))
        return orig(self, point, inst, trials, seed, mutation)
    monkeypatch.setattr(cls, "run_point", run_point)
    memo = CostMemo()
    first = _plan(_STUDY, "d", memo)
    assert runs
    runs.clear()
    second = _plan(_STUDY, "d", CostMemo.from_json(memo.to_json()))
    assert runs == []
    _same(first, second)


def test_an_altered_memo_is_read_and_another_hosts_or_codes_is_not(timing,
                                                                    monkeypatch) -> None:
    memo = CostMemo()
    first = _plan(_STUDY, "d", memo)
    altered = CostMemo.from_json(memo.to_json())
    for entry in altered.entries.values():
        if isinstance(entry["value"], dict) and "fit" in entry["value"]:
            a, b, c = entry["value"]["fit"]
            entry["value"]["fit"] = [100 * a, 100 * b, c]
    timing.clear()
    second = _plan(_STUDY, "d", altered)
    assert timing == []
    assert second["seconds_per_step"] == pytest.approx(100 * first["seconds_per_step"])
    # another host: nothing is read
    sig = dict(costs_mod.host_signature(), simd="another")
    real = costs_mod.host_signature
    monkeypatch.setattr(costs_mod, "host_signature", lambda: sig)
    other = CostMemo.from_json(memo.to_json())
    _plan(_STUDY, "d", other)
    assert other.hits == 0 and other.misses > 0
    monkeypatch.setattr(costs_mod, "host_signature", real)
    # edited code (the package's stamp): nothing is read
    monkeypatch.setattr(costs_mod, "code_stamp", lambda: -1)
    other = CostMemo.from_json(memo.to_json())
    _plan(_STUDY, "d", other)
    assert other.hits == 0
    # a DPBOUNDS_* switch (the normal generator, say) is part of the host; a secret (the
    # store's key) and the cache's own file are not
    monkeypatch.undo()
    costs_mod.host_signature.cache_clear()
    monkeypatch.setenv("DPBOUNDS_STORE_KEY", "hunter2")
    monkeypatch.setenv("DPBOUNDS_COST_CACHE", "/some/file.json")
    same = CostMemo.from_json(memo.to_json())
    regimes._trace_seconds.cache_clear()
    _plan(_STUDY, "d", same)
    assert same.misses == 0 and "hunter2" not in json.dumps(costs_mod.host_signature())
    costs_mod.host_signature.cache_clear()
    try:
        for var in ("DPBOUNDS_NORMALS", "DPBOUNDS_KERNELS"):
            monkeypatch.setenv(var, "numpy")
            costs_mod.host_signature.cache_clear()
            other = CostMemo.from_json(memo.to_json())
            regimes._trace_seconds.cache_clear()
            _plan(_STUDY, "d", other)
            assert other.hits == 0, var
            monkeypatch.delenv(var)
    finally:
        costs_mod.host_signature.cache_clear()


def test_a_malformed_entry_is_probed_again_and_counted_so(timing) -> None:
    memo = CostMemo()
    _plan(_STUDY, "d", memo)
    n = len(memo.entries)
    for entry in memo.entries.values():
        if isinstance(entry["value"], dict) and "fit" in entry["value"]:
            entry["value"]["fit"][0] = -1.0
    timing.clear()
    reg = _plan(_STUDY, "d", memo)
    assert "fit" in timing
    fits = sum(1 for e in memo.entries.values() if isinstance(e["value"], dict)
               and "fit" in e["value"])
    assert reg["cost_fits"] == {"remembered": n - fits, "probed": fits}
    # the same memo for another plan: that plan's own counts
    again = _plan(_STUDY, "d", memo)
    assert again["cost_fits"] == {"remembered": n, "probed": 0}


def test_a_study_whose_code_nothing_names_is_probed_every_time(timing) -> None:
    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    mine = dataclasses.replace(s, run=lambda *a, **k: s.run(*a, **k))  # a notebook's
    assert regimes.memo_parts(mine, spec) is None
    memo = CostMemo()
    for _ in range(2):
        regimes.measured_fit(mine, spec, dict(s.fixed), 4, memo=memo)
    assert timing == ["fit", "fit"] and memo.entries == {}
    # the package's (a partial of its function is the package's too)
    parts = regimes.memo_parts(s, spec)
    assert parts is not None and parts["plugins"] is None
    wrapped = dataclasses.replace(s, run=functools.partial(s.run))
    assert regimes.memo_parts(wrapped, spec) == parts


def test_a_plugins_sensitivity_or_problem_from_a_notebook_is_not_cached(monkeypatch) -> None:
    import types

    from dpbounds.verify import problems

    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    pkg = study_mod.problem.__module__  # a function of the package
    method = types.SimpleNamespace(step=study_mod.problem, sensitivity=study_mod.problem)
    runner = types.SimpleNamespace(method=method)
    plug = dataclasses.replace(s, run=runner)
    assert regimes.memo_parts(plug, spec) is not None and pkg.startswith("dpbounds.")
    method.sensitivity = lambda f, p: 1.0  # defined here: nothing names it
    assert regimes.memo_parts(plug, spec) is None
    kind = types.SimpleNamespace(build=lambda *a: None)  # a problem declared here
    monkeypatch.setitem(problems.KIND_REGISTRY.entries, spec.kind, kind)
    assert regimes.memo_parts(s, spec) is None
    assert regimes.memo_parts(None, spec) is None  # the trace's key too


def test_keys_name_every_argument(timing) -> None:
    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    memo = CostMemo()
    base = dict(point=dict(s.fixed), trials=4, largest=None)
    for change in ({}, dict(point=dict(s.fixed, N=float(s.fixed["N"]) + 1)), dict(trials=8),
                   dict(largest={"N": 1e4}), dict(point=dict(s.fixed, eps=3.0))):
        args = dict(base, **change)
        regimes.measured_fit(s, spec, args["point"], args["trials"], args["largest"], memo)
        regimes.measured_fit(s, spec, args["point"], args["trials"], args["largest"], memo)
    assert timing.count("fit") == 5  # each new argument probed once
    other = dataclasses.replace(spec, G=2.0 * spec.G)  # another problem
    regimes.measured_fit(s, other, base["point"], 4, None, memo)
    assert timing.count("fit") == 6
    # the power of d: the grid's two ends are its key (the values between are not)
    regimes.remembered_cost_over_d(memo, s, spec, dict(s.fixed), (2, 32), 4)
    regimes.remembered_cost_over_d(memo, s, spec, dict(s.fixed), (2, 8, 32), 4)
    regimes.remembered_cost_over_d(memo, s, spec, dict(s.fixed), (2, 64), 4)
    assert timing.count("d") == 2
    # the trace's timing: by d, trials and problem
    with regimes.remembering(memo):
        for d, t, sp in ((4, 16, spec), (4, 16, spec), (8, 16, spec), (4, 4, spec),
                         (4, 16, other)):
            regimes.trace_seconds(sp, d, t)
    assert timing.count("trace") == 4
    # 32 and 32.0 are one key
    assert memo.key("x", point={"N": 32}) == memo.key("x", point={"N": 32.0})


def test_the_stop_reason_is_remembered(monkeypatch) -> None:
    """A fit whose probes stopped at the largest point priced holds only up to it: read from
    the memo it keeps that limit, so a larger grid in the same plan is not priced with it."""
    calls: list[float] = []

    def probe_fit(study, spec, point, trials, largest=None, stopped=None, sizes=None,
                 target=None):
        calls.append(largest["N"])
        stopped.append("largest")
        return (1e-6 * largest["N"], 1e-9, 0.0)
    monkeypatch.setattr(regimes, "_probe_fit", probe_fit)
    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    memo = CostMemo()
    costs = regimes.ProbeCosts(s, spec, dict(s.fixed), memo=memo)
    costs(4, largest={"N": 100.0})
    costs(4, largest={"N": 1000.0})
    assert calls == [100.0, 1000.0]
    fresh = regimes.ProbeCosts(s, spec, dict(s.fixed), memo=CostMemo.from_json(memo.to_json()))
    assert fresh(4, largest={"N": 100.0})[0] == pytest.approx(1e-4)
    assert fresh(4, largest={"N": 1000.0})[0] == pytest.approx(1e-3)  # not the 100's fit
    assert calls == [100.0, 1000.0]


@pytest.mark.parametrize("value", [None, {"fit": [1.0, 2.0]}, {"fit": [1.0, 1.0, -1.0]},
                                   {"fit": [0.0, 1.0, 1.0]}, {"fit": [1.0, True, 1.0]},
                                   {"fit": [float("inf"), 1.0, 1.0]}, {"fit": "abc"},
                                   {"fit": [1.0, 1.0, 1.0], "stopped": "soon"}])
def test_a_malformed_remembered_fit_is_refused(value) -> None:
    assert regimes._remembered_fit(value) is None


@pytest.mark.parametrize("value", [{"power": 2.0}, {"power": -0.1}, {"power": True},
                                   {"power": "x"}, {"power": 0.5, "capped": -1.0},
                                   {"power": 0.5, "capped": float("nan")},
                                   {"power": 0.5, "capped": "big"}, 3.0])
def test_a_malformed_remembered_power_is_refused(value) -> None:
    assert regimes._remembered_power(value) is None
    assert regimes._remembered_power({"power": 0.5, "capped": None}) == (0.5, None)


def test_from_json_refuses_what_is_not_a_memo_and_keeps_the_newest(monkeypatch) -> None:
    with pytest.raises(ValueError, match="format"):
        CostMemo.from_json({"entries": {}})
    with pytest.raises(ValueError, match="entries"):
        CostMemo.from_json(dict(format=MEMO_FORMAT, version=FILE_VERSION, entries=[]))
    with pytest.raises(ValueError, match="malformed"):
        CostMemo.from_json(dict(format=MEMO_FORMAT, version=FILE_VERSION,
                                entries={"x" * 64: {"value": 1, "saved": float("nan")}}))
    with pytest.raises(ValueError, match="layout"):
        CostMemo.from_json(dict(format=MEMO_FORMAT, version=FILE_VERSION + 1, entries={}))
    monkeypatch.setattr(costs_mod, "MAX_ENTRIES", 2)
    m = CostMemo()
    for i in range(3):
        m.put(f"{i:064d}", i)
        m.entries[f"{i:064d}"]["saved"] = float(i)
    assert sorted(m.to_json()["entries"]) == [f"{1:064d}", f"{2:064d}"]


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
    for bad in (-1.0, 0.0, True, "x", float("inf")):  # refused: timed again
        entry["value"] = bad
        with regimes.remembering(memo):
            assert regimes.trace_seconds(spec, 4, 16) == secs
    assert regimes.trace_seconds(spec, 4, 16) == secs  # outside the block: timed (cached)


# --------------------------------------------------------------------- the file (CLI edge)
def _cli(*extra: str) -> list[str]:
    return ["verify", _STUDY, "--vary", "d", "--quiet", *extra]


def test_the_command_keeps_its_fits_and_reads_them_back(tmp_path, capsys,
                                                        monkeypatch) -> None:
    f = tmp_path / "sub" / "costs.json"
    assert cli_main([*_cli("--cost-cache", str(f))]) == 0
    kept = json.loads(f.read_text())
    assert kept["format"] == MEMO_FORMAT and len(kept["entries"]) >= 2
    capsys.readouterr()
    saves: list[int] = []
    real = _cost_cache.save
    monkeypatch.setattr(_cost_cache, "save", lambda m, p: saves.append(1) or real(m, p))
    assert cli_main([*_cli("--cost-cache", str(f), "--json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["regime"]["cost_fits"] == {"remembered": len(kept["entries"]), "probed": 0}
    assert saves == []  # nothing new: the file is not rewritten


def test_a_study_refused_after_its_probes_keeps_its_fits(tmp_path, capsys,
                                                         monkeypatch) -> None:
    """Refused for memory after planning (before ``on_plan``): the rerun, with
    ``--allow-large`` say, need not probe again."""
    def refuse(*a, **k):
        raise ValueError("the study needs an estimated 9 GiB: refused here")
    monkeypatch.setattr(study_mod, "_check_memory", refuse)
    f = tmp_path / "c.json"
    assert cli_main([*_cli("--cost-cache", str(f))]) == 2
    assert "refused here" in capsys.readouterr().err
    assert json.loads(f.read_text())["entries"]  # the probes it ran are kept


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
    for off in ("OFF", " ", "0", "false", "no", "None"):
        assert _cost_cache.resolve(off) is None


def test_what_is_not_a_cost_cache_is_left_as_it_is(tmp_path, capsys) -> None:
    precious = tmp_path / "results.json"
    precious.write_text('{"my": "precious results"}')
    assert cli_main([*_cli("--cost-cache", str(precious))]) == 0
    assert "left as it is" in capsys.readouterr().err
    assert precious.read_text() == '{"my": "precious results"}'
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(dict(format=MEMO_FORMAT, version=FILE_VERSION + 1,
                                     entries={}, more="a later layout")))
    before = newer.read_text()
    assert cli_main([*_cli("--cost-cache", str(newer))]) == 0
    assert "left as it is" in capsys.readouterr().err and newer.read_text() == before


def test_a_damaged_cache_is_rewritten_and_an_unwritable_one_is_a_note(tmp_path,
                                                                       capsys) -> None:
    for text in ('{"format": "dpbounds-verify-costs", "version": 1, "entries": {',  # cut
                 '{"format": "dpbounds-verify-costs", "version": 1, "entries": {}, '
                 '"x": NaN}'):
        bad = tmp_path / "costs.json"
        bad.write_text(text)
        assert cli_main([*_cli("--cost-cache", str(bad))]) == 0
        assert "could not be read" in capsys.readouterr().err
        assert json.loads(bad.read_text())["format"] == MEMO_FORMAT  # rewritten whole
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert cli_main([*_cli("--cost-cache", str(blocker / "costs.json"))]) == 0
    assert "cannot be used" in capsys.readouterr().err
    # a write that fails half-way (a value JSON cannot hold) leaves no temporary file
    m = CostMemo()
    m.put("1" * 64, float("nan"))
    assert "could not be written" in str(_cost_cache.save(m, tmp_path / "costs.json"))
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".verify-costs-")]
    assert json.loads((tmp_path / "costs.json").read_text())["format"] == MEMO_FORMAT


def test_deep_nesting_and_numpy_numbers_are_no_error(tmp_path) -> None:
    import numpy as np

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200000 + "]" * 200000)
    memo, note = _cost_cache.load(deep)
    assert memo is None and "not a cost cache" in str(note)
    m = CostMemo()
    m.put("1" * 64, 1.0, what={"N": np.int64(500), "eps": np.float64(0.5), "x": math.inf})
    assert _cost_cache.save(m, tmp_path / "np.json") is None
    back, note = _cost_cache.load(tmp_path / "np.json")
    assert note is None and back is not None and back.get("1" * 64) == 1.0


def test_paths_that_are_not_regular_files_are_not_opened(tmp_path) -> None:
    memo, note = _cost_cache.load(Path(os.devnull))
    assert memo is None and "not a regular file" in str(note)
    assert _cost_cache.save(CostMemo(), Path(os.devnull)) is not None
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # still the device
    folder = tmp_path / "folder"
    folder.mkdir()
    assert _cost_cache.load(folder)[0] is None
    if hasattr(os, "mkfifo"):  # a FIFO would block a reader: in a child with a timeout
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        code = ("import sys; from pathlib import Path; from dpbounds.cli import _cost_cache;"
                f"m, n = _cost_cache.load(Path({str(fifo)!r})); print(m is None, n)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert out.stdout.startswith("True") and "not a regular file" in out.stdout


def test_a_link_is_followed_and_the_permissions_kept(tmp_path) -> None:
    target = tmp_path / "real.json"
    one = CostMemo()
    one.put("1" * 64, 1.0)
    assert _cost_cache.save(one, target) is None
    os.chmod(target, 0o644)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    two = CostMemo()
    two.put("2" * 64, 2.0)
    assert _cost_cache.save(two, link) is None
    assert link.is_symlink()
    back, _ = _cost_cache.load(target)
    assert back is not None and back.get("1" * 64) == 1.0 and back.get("2" * 64) == 2.0
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644


def test_a_new_file_has_the_umasks_permissions_and_a_read_only_one_is_kept(tmp_path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    m = CostMemo()
    m.put("1" * 64, 1.0)
    assert _cost_cache.save(m, tmp_path / "new.json") is None
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o666 & ~mask
    if os.geteuid() != 0:  # root writes a read-only file anyway
        ro = tmp_path / "ro.json"
        assert _cost_cache.save(m, ro) is None
        os.chmod(ro, 0o444)
        m.put("2" * 64, 2.0)
        assert "read-only" in str(_cost_cache.save(m, ro))


def test_what_a_cache_file_may_hold(tmp_path) -> None:
    """A file that merely mentions the format is no cache (left); an empty or zeroed one
    (what a crash leaves) and a truncated one of this layout are rewritten; a truncated one
    of a later layout is left; a number JSON reads as inf is refused (a save could never
    write it back); no lock file is made beside what is not a regular file."""
    notes = tmp_path / "notes.md"
    notes.write_text("The cache has format dpbounds-verify-costs, see the docs.\n")
    m = CostMemo()
    m.put("a" * 64, 1.0)
    assert "left as it is" in str(_cost_cache.save(m, notes))
    assert notes.read_text().startswith("The cache has format")
    for text in ("", "\x00" * 100, '{"format": "dpbounds-verify-costs", "version": 1, "ent'):
        f = tmp_path / "c.json"
        f.write_text(text)
        memo, note = _cost_cache.load(f)
        assert memo is not None, text
        assert _cost_cache.save(m, f) is None
        assert json.loads(f.read_text())["version"] == FILE_VERSION
    later = tmp_path / "later.json"
    later.write_text('{"format": "dpbounds-verify-costs", "version": 2, "ent')
    assert "left as it is" in str(_cost_cache.save(m, later))
    assert later.read_text().endswith('"ent')
    big = tmp_path / "big.json"
    big.write_text(json.dumps(dict(format=MEMO_FORMAT, version=FILE_VERSION, entries={
        "b" * 64: {"value": {"fit": [1.0, 1.0, 0.0]}, "saved": 1.0}})).replace("1.0, 1.0",
                                                                                "1e400, 1.0"))
    memo, note = _cost_cache.load(big)
    assert memo is not None and memo.entries == {} and "rewritten" in str(note)
    assert _cost_cache.save(m, big) is None and "1e400" not in big.read_text()
    folder = tmp_path / "folder"
    folder.mkdir()
    _cost_cache.save(m, folder)
    assert not (tmp_path / "folder.lock").exists()


@pytest.mark.parametrize("code", ["ENOLCK", "EOPNOTSUPP", "EINVAL", "EBADF"])
def test_a_file_system_without_locks_still_saves(tmp_path, monkeypatch, code) -> None:
    import errno
    import fcntl

    def flock(fd, op):
        raise OSError(getattr(errno, code), code)
    monkeypatch.setattr(fcntl, "flock", flock)
    m = CostMemo()
    m.put("1" * 64, 1.0)
    assert _cost_cache.save(m, tmp_path / "c.json") is None


def test_a_huge_integer_in_the_file_is_a_damaged_cache(tmp_path) -> None:
    f = tmp_path / "c.json"
    f.write_text('{"format": "dpbounds-verify-costs", "version": 1, "entries": {"' + "a" * 64
                 + '": {"value": 1.0, "saved": 1' + "0" * 400 + "}}}")
    memo, note = _cost_cache.load(f)
    assert memo is not None and memo.entries == {} and "rewritten" in str(note)
    assert regimes._remembered_fit({"fit": [10**400, 1.0, 0.0]}) is None
    m = CostMemo()
    m.put("b" * 64, 1.0)
    assert _cost_cache.save(m, f) is None


def test_a_failed_save_is_one_note(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(_cost_cache, "save", lambda m, p: "the cost cache could not be "
                        "written to here (no space)")
    assert cli_main([*_cli("--cost-cache", str(tmp_path / "c.json"))]) == 0
    assert capsys.readouterr().err.count("could not be written") == 1


@pytest.mark.parametrize("extra", [("--store", "STORE"), ("--workers", "2")])
def test_far_off_fits_are_not_judged_by_resumed_or_worker_runs(tmp_path, capsys,
                                                              extra) -> None:
    f = tmp_path / "costs.json"
    assert cli_main([*_cli("--cost-cache", str(f))]) == 0
    kept = json.loads(f.read_text())
    for entry in kept["entries"].values():
        if isinstance(entry["value"], dict) and "fit" in entry["value"]:
            entry["value"]["fit"] = [50 * x for x in entry["value"]["fit"]]
    f.write_text(json.dumps(kept))
    capsys.readouterr()
    flag, value = extra
    cli_main([*_cli("--cost-cache", str(f), flag,
                    str(tmp_path / "store") if value == "STORE" else value)])
    assert "are dropped" not in capsys.readouterr().err
    assert json.loads(f.read_text())["entries"] == kept["entries"]


def test_counts_and_drops_are_per_plan() -> None:
    m = CostMemo({k * 64: {"value": 1.0, "saved": 0.0} for k in "12"})
    assert m.get("1" * 64) == 1.0
    m.reset_counts()  # a new plan
    assert m.get("2" * 64) == 1.0
    assert m.forget_remembered() == 1 and sorted(m.entries) == ["1" * 64]


def test_a_single_module_entry_point_is_named_by_its_digests(monkeypatch) -> None:
    import types

    from dpbounds import _discovery

    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    run = types.SimpleNamespace(method=types.SimpleNamespace(step=None, sensitivity=None))
    step = types.FunctionType((lambda: None).__code__, {}, "step")
    step.__module__ = "myplugin"  # an entry point that is one top-level module
    run.method.step = step
    plug = dataclasses.replace(s, run=run)
    monkeypatch.setattr(_discovery, "_PLUGIN_CODE",
                        [lambda: (("dpbounds_plugin_", "myplugin."), {"ep": "d1"})])
    parts = regimes.memo_parts(plug, spec)
    assert parts is not None and parts["plugins"] == {"ep": "d1"}
    step.__module__ = "myplugin2"  # another package: nothing names it
    assert regimes.memo_parts(plug, spec) is None


def test_save_merges_and_keeps_its_own_entry_where_both_have_one(tmp_path) -> None:
    path = tmp_path / "c.json"
    one, two = CostMemo(), CostMemo()
    one.put("1" * 64, 1.0)
    one.put("3" * 64, 30.0)
    two.put("2" * 64, 2.0)
    two.put("3" * 64, 3.0)  # newer: this process's own
    assert _cost_cache.save(one, path) is None
    assert _cost_cache.save(two, path) is None
    back, note = _cost_cache.load(path)
    assert note is None and back is not None
    assert [back.get(k * 64) for k in "123"] == [1.0, 2.0, 3.0]


def test_concurrent_saves_keep_every_processes_entries(tmp_path) -> None:
    path = tmp_path / "shared.json"
    code = ("import sys; from pathlib import Path; from dpbounds.cli import _cost_cache;"
            "from dpbounds.verify.costs import CostMemo\n"
            "for i in range(25):\n"
            "    m = CostMemo(); m.put(f'{sys.argv[1]}{i:063d}', float(i))\n"
            "    assert _cost_cache.save(m, Path(sys.argv[2])) is None\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", code, tag, str(path)], env=env)
             for tag in "ab"]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    back, _ = _cost_cache.load(path)
    assert back is not None and len(back.entries) == 50


def test_a_save_waits_for_another_in_progress(tmp_path, monkeypatch) -> None:
    """Deterministic interleaving: save A has read the file and stalls; save B runs meanwhile.
    With the lock B waits for A and merges A's entry; without it B's entry is lost."""
    import threading

    path = tmp_path / "race.json"
    in_a, b_done = threading.Event(), threading.Event()
    real = _cost_cache._read

    reads: list[str] = []

    def read(p):
        out = real(p)
        name = threading.current_thread().name
        reads.append(name)
        if name == "A" and reads.count("A") == 2:  # the read under the lock (the first
            in_a.set()  # only checks what the path is)
            b_done.wait(timeout=1.0)  # B is blocked by the lock: time out, go on
        return out
    monkeypatch.setattr(_cost_cache, "_read", read)
    notes: dict[str, str | None] = {}

    def save(tag: str) -> None:
        m = CostMemo()
        m.put(tag * 64, 1.0)
        notes[tag] = _cost_cache.save(m, path)
        if tag == "b":
            b_done.set()
    ta = threading.Thread(target=save, args=("a",), name="A")
    ta.start()
    assert in_a.wait(timeout=30)
    tb = threading.Thread(target=save, args=("b",), name="B")
    tb.start()
    ta.join(timeout=60)
    tb.join(timeout=60)
    assert notes == {"a": None, "b": None}
    back, _ = _cost_cache.load(path)
    assert back is not None and sorted(back.entries) == ["a" * 64, "b" * 64]


def test_a_plugin_study_is_keyed_by_its_code(tmp_path) -> None:
    """Two plug-in files that define the same study with different code: the second is
    probed, not read from the first's fits (the digests of the loaded plug-ins are keys)."""
    a, b = tmp_path / "plug_a.py", tmp_path / "plug_b.py"
    shutil.copy(ROOT / "examples" / "dp_gd_smooth.py", a)
    b.write_text(a.read_text() + "\n# another version of the plug-in\n")
    cache = tmp_path / "c.json"

    def fits(plug: Path) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", "dpbounds", "--plugin", str(plug), "verify",
             "nonconvex.dp_gd_smooth", "--vary", "N", "--quick", "--json", "--cost-cache",
             str(cache)], capture_output=True, text=True, timeout=300,
            env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
        return json.loads(out.stdout)["regime"]["cost_fits"]
    first = fits(a)
    assert first["remembered"] == 0 and first["probed"] > 0
    assert fits(a) == {"remembered": first["probed"], "probed": 0}
    assert fits(b)["remembered"] == 0


def test_scaling_study_refuses_a_memo_of_another_type() -> None:
    from dpbounds.verify import scaling_study

    with pytest.raises(ValueError, match="costs must be a CostMemo"):
        scaling_study(_STUDY, vary={"d": None}, quick=True, costs={})  # type: ignore[arg-type]


def test_fits_far_off_their_runs_are_dropped(tmp_path) -> None:
    path = tmp_path / "c.json"
    memo = CostMemo()
    memo.put("1" * 64, {"fit": [1.0, 1.0, 0.0]})
    memo.put("2" * 64, 2.0)
    assert _cost_cache.save(memo, path) is None
    memo, _ = _cost_cache.load(path)
    assert memo is not None
    memo.reset_counts()
    assert memo.get("1" * 64) is not None and memo.get("3" * 64) is None  # one remembered
    for est, spent in ((10.0, 25.0), (10.0, 4.0), (None, 5.0), (0.0, 5.0), (0.1, 4.9),
                       (4.9, 0.1)):  # within 3x, nothing to compare, or both small
        assert _cost_cache.settle(memo, est, spent) is None
    assert "1" * 64 in memo.entries
    note = _cost_cache.settle(memo, 10.0, 31.0)
    assert note is not None and "1 fit(s)" in note and "1" * 64 not in memo.entries
    assert _cost_cache.save(memo, path) is None  # the file still held it: not merged back
    back, _ = _cost_cache.load(path)
    assert back is not None and sorted(back.entries) == ["2" * 64]
    fresh = CostMemo({"1" * 64: {"value": 1.0, "saved": 0.0}})  # nothing remembered yet
    assert _cost_cache.settle(fresh, 1.0, 100.0) is None and "1" * 64 in fresh.entries


def test_the_command_drops_fits_far_off_its_runs(tmp_path, capsys) -> None:
    f = tmp_path / "costs.json"
    assert cli_main([*_cli("--cost-cache", str(f))]) == 0
    kept = json.loads(f.read_text())
    for entry in kept["entries"].values():  # a fit timed on a host 50x loaded
        if isinstance(entry["value"], dict) and "fit" in entry["value"]:
            entry["value"]["fit"] = [50 * x for x in entry["value"]["fit"]]
    f.write_text(json.dumps(kept))
    capsys.readouterr()
    cli_main([*_cli("--cost-cache", str(f))])
    assert "are dropped" in capsys.readouterr().err
    left = json.loads(f.read_text())["entries"]
    assert not any(isinstance(e["value"], dict) and "fit" in e["value"] for e in left.values())
    assert cli_main([*_cli("--cost-cache", str(f), "--json")]) == 0
    assert json.loads(capsys.readouterr().out)["regime"]["cost_fits"]["probed"] > 0


def test_bad_memo_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="entries must be a mapping"):
        CostMemo([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="entries must be a mapping"):
        CostMemo({"k": 1.0})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="memo must be a CostMemo"):
        with regimes.remembering({}):
            pass
    m = CostMemo()  # an integer too large for a float in a key: a key, not an error
    assert m.key("x", point={"N": 10**400}) != m.key("x", point={"N": 10**401})


def test_the_power_of_d_probed_through_the_memo_gets_the_warm_sizes(monkeypatch):
    """``remembered_cost_over_d`` hands ``fit`` and the probes' ``warm`` sizes to the probe
    whether or not a memo holds the study (a probe of the memo's path that dropped them
    would grow its own, cold probes)."""
    seen: list[tuple] = []

    def over_d(study, spec, fixed, values, trials, largest=None, fit=None, warm=()):
        seen.append((fit, tuple(warm)))

        def factor(point):
            return (1.0, 1.0)
        factor.powers = (0.5, 0.5)
        factor.capped_at = None
        return factor

    monkeypatch.setattr(regimes, "cost_over_d", over_d)
    s = study_mod.get_study(_STUDY)
    spec = study_mod.problem(s.problems[0])
    for memo in (CostMemo(), None):
        regimes.remembered_cost_over_d(memo, s, spec, dict(s.fixed), (2.0, 8.0), 16,
                                       fit=(1e-6, 1e-9), warm=[32, 96])
    assert seen == [((1e-6, 1e-9), (32, 96))] * 2, seen
