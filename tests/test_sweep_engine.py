"""The sweep engine: reuse, executors (bit-identical), failures, groups, progress, nesting.

Oracles: an uninterrupted in-process run (records compared byte for byte), a log file each
cell appends to when it starts (what was computed, and how often), and the engine's own
refusal of a worker running other code.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpbounds._progress import Progress, resolve_mode
from dpbounds.sweep import (
    Cell,
    DaskDistributed,
    InProcess,
    LocalProcesses,
    ResultStore,
    SweepError,
    SweepOptions,
    run_sweep,
)
from dpbounds.sweep.executors import Executor
from tests.sweep_cells import fail_at, logged_walk, nested, noisy_walk, noisy_walk_batch


def walk_cells(n: int = 6, **kw: Any) -> list[Cell]:
    return [Cell(noisy_walk, {"scale": 0.5 + i, "steps": 40 + i}, trials=3, seed=(11, i), **kw)
            for i in range(n)]


def assert_identical(a: Any, b: Any) -> None:
    """Records equal bit for bit (arrays by dtype, shape and bytes; floats by bytes)."""
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        assert ra.keys() == rb.keys()
        for k in ra:
            x, y = ra[k], rb[k]
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
            elif isinstance(x, float):
                assert np.float64(x).tobytes() == np.float64(y).tobytes()
            else:
                assert x == y


def started(log: Path) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


def test_records_in_cell_order_and_reused_from_the_store(tmp_path: Path) -> None:
    cells = walk_cells()
    reference = run_sweep(cells, progress=False)
    assert [r["tag"] for r in reference] == [f"walk{40 + i}" for i in range(6)]
    half = run_sweep(cells[::2], store=tmp_path, progress=False)
    assert (half.computed, half.reused) == (3, 0)
    full = run_sweep(cells, store=tmp_path, progress=False)
    assert (full.computed, full.reused) == (3, 3)
    assert [i.reused for i in full.info] == [True, False] * 3
    assert_identical(full, reference)
    again = run_sweep(cells, store=tmp_path, progress=False)
    assert (again.computed, again.reused) == (0, 6)
    assert_identical(again, reference)
    fresh = run_sweep(cells, store=tmp_path, progress=False, fresh=True)
    assert (fresh.computed, fresh.reused) == (6, 0)


def test_computed_and_stored_records_look_the_same(tmp_path: Path) -> None:
    from tests.sweep_cells import mixed_types

    cells = [Cell(mixed_types, {"x": 0.1})]
    computed = run_sweep(cells, store=tmp_path, progress=False)[0]
    stored = run_sweep(cells, store=tmp_path, progress=False)[0]
    assert list(computed) == list(stored) == ["a", "f32", "f64", "t", "z"]
    assert {k: type(v) for k, v in computed.items()} == {k: type(v) for k, v in stored.items()}
    assert computed["t"] == stored["t"] == [1, 0.1] and type(stored["f64"]) is float
    assert stored["f32"].dtype == np.float32 and stored["f32"].shape == ()


def test_nothing_is_reused_across_versions_or_code(tmp_path: Path) -> None:
    cells = walk_cells(2)
    run_sweep(cells, store=tmp_path, progress=False)
    assert run_sweep(cells, store=tmp_path, progress=False, version="9.9").computed == 2
    assert run_sweep(cells, store=tmp_path, progress=False, code_version="other").computed == 2
    versions = {row["version"] for row in ResultStore(tmp_path).table()}
    assert versions == {"0.1.0", "9.9"}


def test_identical_cells_are_computed_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    cell = Cell(logged_walk, {"index": 3, "delay": 0.0, "log": str(log)}, trials=2, seed=5)
    twin = Cell(logged_walk, {"index": 3, "delay": 0.0, "log": str(log)}, trials=2, seed=5)
    res = run_sweep([cell, twin, cell], progress=False)
    assert started(log) == [3] and res.computed == 1
    assert_identical([res[0]], [res[1]])


@pytest.fixture(scope="module")
def reference() -> list[dict]:
    return list(run_sweep(walk_cells(8), progress=False))


def test_the_identity_check_sees_one_ulp(reference: list[dict]) -> None:
    changed = [dict(r) for r in reference]
    changed[3]["trace"] = changed[3]["trace"].copy()
    changed[3]["trace"][1, 7] = np.nextafter(changed[3]["trace"][1, 7], np.inf)
    with pytest.raises(AssertionError):
        assert_identical(changed, reference)
    changed = [dict(r) for r in reference]
    changed[0]["mean_log1p"] = float(np.nextafter(changed[0]["mean_log1p"], 0.0))
    with pytest.raises(AssertionError):
        assert_identical(changed, reference)


def test_local_processes_are_bit_identical(reference: list[dict]) -> None:
    res = run_sweep(walk_cells(8), executor=LocalProcesses(2), progress=False)
    assert_identical(res, reference)
    assert all(not i.worker.endswith(f":{os.getpid()}") for i in res.info)


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_dask_local_cluster_is_bit_identical(reference: list[dict], processes: bool,
                                             tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    ex = DaskDistributed(workers=2, processes=processes)
    res = run_sweep(walk_cells(8), executor=ex, store=tmp_path, progress=False)
    assert_identical(res, reference)
    assert not ex.started  # the cluster it started is closed again
    if processes:
        # the cluster it starts runs quietly: its workers' processes got QUIET_CLUSTER
        # (an idle cluster's CPU 0.13 -> 0.018 s per second, bench/bench_dask_overhead.md)
        import dask

        from dpbounds.sweep.executors import QUIET_CLUSTER

        ex.start()
        try:
            seen = ex._client.run(lambda: {k: dask.config.get(k) for k in QUIET_CLUSTER})
        finally:
            ex.shutdown()
        assert len(seen) == 2 and all(v == QUIET_CLUSTER for v in seen.values())
        assert dask.config.get("distributed.worker.profile.enabled")  # this process's: unchanged
    # and what the cluster stored reads back identically in-process
    assert_identical(run_sweep(walk_cells(8), store=tmp_path, progress=False), reference)


def test_groups_and_batched_functions_give_the_same_records(tmp_path: Path,
                                                            reference: list[dict]) -> None:
    grouped = run_sweep(walk_cells(8, group="all"), executor=LocalProcesses(2), progress=False)
    assert_identical(grouped, reference)
    assert len({i.worker for i in grouped.info}) == 1  # one task, one worker
    batch = [Cell(noisy_walk_batch, c.params, trials=c.trials, seed=c.seed, group=i % 3)
             for i, c in enumerate(walk_cells(8))]
    # resume in the middle of a group: the stored cells are not handed to the batch again
    run_sweep(batch[:3], store=tmp_path, progress=False)
    res = run_sweep(batch, store=tmp_path, executor=LocalProcesses(2), progress=False)
    assert (res.computed, res.reused) == (5, 3)
    assert_identical(res, reference)


def test_a_failing_cell_stops_new_work_and_keeps_the_finished(tmp_path: Path) -> None:
    cells = [Cell(fail_at, {"index": i, "bad": 2}) for i in range(5)]
    with pytest.raises(SweepError, match=r"fail_at\(index=2, bad=2\)") as info:
        run_sweep(cells, store=tmp_path, progress=False)
    msg = str(info.value)
    assert "fails on purpose" in msg and "1 of 5 cells failed, 2 finished" in msg
    assert "2 did not start" in msg  # in-process: nothing after the failure ran
    assert len(info.value.failures) == 1
    assert len(list(ResultStore(tmp_path).entries())) == 2


def test_an_invalid_record_is_a_failure_not_a_corrupt_store(tmp_path: Path) -> None:
    from tests.sweep_cells import bad_record

    with pytest.raises(SweepError, match="invalid record.*object arrays"):
        run_sweep([Cell(bad_record, {"kind": "object"})], store=tmp_path, progress=False)
    assert list(ResultStore(tmp_path).entries()) == []


class _RemoteInProcess(InProcess):
    """In-process, but treated like a remote worker (which re-checks the code it runs)."""

    @property
    def remote(self) -> bool:
        return True


def test_a_worker_running_other_code_is_refused() -> None:
    with pytest.raises(SweepError, match="runs dpbounds 0.1.0, the sweep expects 9.9"):
        run_sweep(walk_cells(1), executor=_RemoteInProcess(), version="9.9", progress=False)
    # same version and code: accepted
    assert run_sweep(walk_cells(1), executor=_RemoteInProcess(), progress=False).computed == 1


@pytest.mark.parametrize("which, match", [(0, "other dpbounds sources"),
                                          (1, "other sources of tests.sweep_cells")])
def test_a_worker_with_other_sources_is_refused(monkeypatch: pytest.MonkeyPatch, which: int,
                                                match: str) -> None:
    from dpbounds.sweep import engine

    real, calls = engine.code_digests, []

    def edited_on_the_worker(fn: Any) -> tuple[str, str | None]:
        calls.append(fn)  # first call: the driver; second: the "worker" (same process here)
        digests = list(real(fn))
        if len(calls) > 1:
            digests[which] = "edited"
        return digests[0], digests[1]

    monkeypatch.setattr(engine, "code_digests", edited_on_the_worker)
    with pytest.raises(SweepError, match=match):
        run_sweep(walk_cells(1), executor=_RemoteInProcess(), progress=False)


def test_a_sweep_inside_a_cell_runs_in_process() -> None:
    res = run_sweep([Cell(nested, {"n": 3})], executor=LocalProcesses(1), progress=False)
    assert res[0]["indices"] == [0, 1, 2]
    outer_pid = res[0]["pid"]
    assert outer_pid != os.getpid()  # the outer cell ran in a worker process ...
    # ... and the inner cells in that same process
    assert all(w.endswith(f":{outer_pid}") for w in res[0]["inner_workers"])


def test_executor_kept_open_across_sweeps() -> None:
    opts = SweepOptions(executor=LocalProcesses(2), progress=False)
    with opts:
        a = opts.run(walk_cells(2))
        assert opts.executor.started
        b = opts.run(walk_cells(3))
    assert not opts.executor.started
    assert_identical(b[:2], a)
    ex = LocalProcesses(2)
    assert run_sweep([], executor=ex).records == [] and not ex.started  # nothing to do


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, 10**6, 10**300])
def test_bad_workers_are_refused(workers: Any) -> None:
    with pytest.raises(ValueError, match="workers"):
        LocalProcesses(workers)


def test_bad_scheduler_address_is_refused() -> None:
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        DaskDistributed(scheduler="localhost")


def test_progress_modes() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert resolve_mode("auto", io.StringIO()) == "lines"  # a log file, CI
    assert resolve_mode("auto", Tty()) == "bar"
    assert resolve_mode(False) == "off" and resolve_mode("quiet") == "off"
    with pytest.raises(ValueError, match="progress"):
        resolve_mode("loud")
    lines = io.StringIO()
    p = Progress(total=4, done=1, desc="demo", mode="lines", stream=lines, interval=0.0)
    p.update()
    p.update()
    p.close()
    p.close()  # idempotent
    text = lines.getvalue().splitlines()
    assert len(text) == 3
    assert text[0].startswith("demo: 2/4 cells (1 reused)") and "ETA" in text[0]
    assert text[-1].startswith("demo: 3/4 cells")
    quiet = io.StringIO()
    p = Progress(total=4, done=0, desc="demo", mode="off", stream=quiet, interval=0.0)
    p.update()
    p.close()
    assert quiet.getvalue() == ""
    # the ETA weighs cells by cost: most expensive first must not inflate it
    p = Progress(total=3, done=0, desc="demo", mode="off", cost=10.0)
    p.start = 0.0
    p.update(1, cost=8.0)  # the big cell is done; 2 of 10 cost units are left
    assert p.eta(now=4.0) == pytest.approx(1.0)  # a count-based ETA would say 8 s
    # lines mode, default interval: a short sweep prints nothing
    short = io.StringIO()
    p = Progress(total=2, done=0, desc="demo", mode="lines", stream=short)
    p.update(2)
    p.close()
    assert short.getvalue() == ""


def test_quiet_sweep_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    run_sweep(walk_cells(3), progress=False)
    assert capfd.readouterr() == ("", "")


def test_in_process_executor_is_an_executor() -> None:
    assert isinstance(InProcess(), Executor) and not InProcess().remote


def test_workers_option_is_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from dpbounds.sweep import add_sweep_arguments

    parser = argparse.ArgumentParser(prog="x")
    add_sweep_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--workers", "1" + "0" * 300])
    err = capsys.readouterr().err
    assert "must be an integer in [1, 1024]" in err and "(301 characters)" in err
    assert parser.parse_args(["--workers", "3"]).workers == 3
