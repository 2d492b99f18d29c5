"""``kill -9`` in the middle of a sweep loses only the cells in flight.

A sweep of slow cells runs in a subprocess (2 worker processes, a store); once a few cells are
stored the whole process group gets SIGKILL; the same command runs again to the end. Every cell
appends its index to a log when it starts, so the log says exactly what each run computed.
Oracle: an uninterrupted in-process run of the same cells, compared byte for byte.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpbounds.sweep import Cell, InProcess, run_sweep
from tests.sweep_cells import logged_walk

ROOT = Path(__file__).resolve().parents[1]
N, DELAY = 10, 0.5

JOB = """
import sys
from dpbounds.sweep import Cell, LocalProcesses, run_sweep
from tests.sweep_cells import logged_walk


def main():
    store, log, n, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    cells = [Cell(logged_walk, {"index": i, "delay": delay, "log": log}, trials=3, seed=(5, i))
             for i in range(n)]
    run_sweep(cells, store=store, executor=LocalProcesses(2), progress="lines")


if __name__ == "__main__":
    main()
"""


def cells(log: Path) -> list[Cell]:
    return [Cell(logged_walk, {"index": i, "delay": DELAY, "log": str(log)}, trials=3,
                 seed=(5, i)) for i in range(N)]


def finished(store: Path) -> dict[int, bytes]:
    """index -> bytes of its JSON file, for every finished cell."""
    out = {}
    for p in store.glob("cells/*/*.json"):
        raw = p.read_bytes()
        out[json.loads(raw)["params"]["index"]] = raw
    return out


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def _group_empty(proc: subprocess.Popen, within: float) -> bool:
    """Whether every process of ``proc``'s group is gone within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = subprocess.run(["ps", "-o", "pid=", "-g", str(proc.pid)], capture_output=True,
                              text=True).stdout.split()
        if not left:
            return True
        time.sleep(0.1)
    return False


def started(log: Path) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX process groups")
def test_sigkill_midway_then_resume(tmp_path: Path) -> None:
    store, log, job = tmp_path / "store", tmp_path / "log", tmp_path / "job.py"
    job.write_text(JOB)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, str(job), str(store), str(log), str(N), repr(DELAY)]

    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while len(finished(store)) < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sweep did not progress"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # kill -9 of the sweep's process, not its workers
        proc.wait(timeout=30)
        # its worker processes must not outlive it (they used to wait on their queue forever)
        assert _group_empty(proc, within=10.0), "worker processes outlived the killed sweep"
    finally:
        _kill_group(proc)
    assert proc.returncode == -signal.SIGKILL
    before = finished(store)
    started_before = started(log)
    in_flight = set(started_before) - set(before)
    assert 3 <= len(before) < N, "the kill did not land midway"

    rerun = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    after = finished(store)
    recomputed = started(log)[len(started_before):]

    assert sorted(after) == list(range(N))                # nothing lost
    assert all(after[i] == before[i] for i in before)     # finished cells untouched ...
    assert not set(recomputed) & set(before)              # ... and not recomputed
    assert sorted(recomputed) == sorted(set(range(N)) - set(before))  # the rest, once each
    assert in_flight <= set(recomputed)                   # the cells in flight were redone
    assert not list(store.glob("cells/*/.*.tmp")) or all(
        time.time() - p.stat().st_mtime < 60 for p in store.glob("cells/*/.*.tmp"))

    # the resumed store equals an uninterrupted run, byte for byte, and reading it computes nothing
    stored = run_sweep(cells(log), store=store, executor=InProcess(), progress=False)
    assert stored.reused == N and started(log)[len(started_before) + len(recomputed):] == []
    uninterrupted = run_sweep(
        [Cell(logged_walk, {**c.params, "delay": 0.0, "log": str(tmp_path / "log2")},
              trials=c.trials, seed=c.seed) for c in cells(log)], progress=False)
    for a, b in zip(stored, uninterrupted):
        assert a.keys() == b.keys()
        for k in a:
            if isinstance(a[k], np.ndarray):
                assert a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes(), k
            else:
                assert np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes(), k


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX signals")
def test_ctrl_c_stops_at_once_and_leaves_no_worker(tmp_path: Path) -> None:
    # cells of 60 s: waiting for the ones in flight would take a minute
    job = tmp_path / "job.py"
    job.write_text(JOB)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(job), str(tmp_path / "store"),
                             str(tmp_path / "log"), "4", "60"], cwd=ROOT, env=env,
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(started(tmp_path / "log")) < 2:  # both workers are inside a cell
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)  # the driver only, as `kill -INT`; workers go on
        proc.communicate(timeout=20)  # raises if the driver waits for its cells
        assert time.monotonic() - t0 < 20
        assert _group_empty(proc, within=10.0)  # workers, resource tracker: all gone
    finally:
        _kill_group(proc)
    assert not list((tmp_path / "store").glob("cells/*/*.json"))
