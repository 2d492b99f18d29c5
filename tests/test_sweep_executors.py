"""The sweep executors are ``concurrent.futures`` executors: ``submit(fn, *args, **kwargs)``,
``map``, ``shutdown``, ``with``; and a sweep runs on a plain one (a ``ThreadPoolExecutor``).

Oracles: ``builtins.map`` (what ``Executor.map`` must equal) and an in-process sweep (records
compared bit for bit); negative control: a non-executor is refused by name.
"""

from __future__ import annotations

import concurrent.futures as cf
import operator
from typing import Any

import pytest

from dpbounds.sweep import Cell, InProcess, LocalProcesses, run_sweep
from dpbounds.sweep.executors import Executor, as_sweep_executor
from tests.sweep_cells import noisy_walk
from tests.test_sweep_engine import assert_identical


def _cells(n: int = 4) -> list[Cell]:
    return [Cell(noisy_walk, {"scale": 0.5 + i, "steps": 30 + i}, trials=2, seed=(7, i))
            for i in range(n)]


@pytest.mark.parametrize("make", [InProcess, lambda: LocalProcesses(1)],
                         ids=["in_process", "local_processes"])
def test_the_executors_follow_the_concurrent_futures_protocol(make: Any) -> None:
    xs, ys = [2, 3, 5], [5, 2, 1]
    ex = make()
    assert isinstance(ex, cf.Executor)
    with ex as e:
        assert list(e.map(pow, xs, ys)) == list(map(pow, xs, ys))
        fut = e.submit(operator.sub, 10, 3)
        assert isinstance(fut, cf.Future) and fut.result() == 7
        assert e.submit(int, "ff", base=16).result() == 255  # keyword arguments pass through
    assert not ex.started
    # restartable: one object serves several sweeps
    assert ex.submit(operator.add, 1, 2).result() == 3
    ex.shutdown()


def test_a_sweep_runs_on_a_plain_executor_and_leaves_it_open() -> None:
    reference = run_sweep(_cells(), executor=InProcess(), progress=False).records
    with cf.ThreadPoolExecutor(2) as pool:
        got = run_sweep(_cells(), executor=pool, progress=False).records
        assert pool.submit(operator.mul, 6, 7).result() == 42  # still open: its owner's
    assert_identical(got, reference)


def test_a_plain_executor_is_borrowed_not_owned() -> None:
    with cf.ThreadPoolExecutor(3) as pool:
        view = as_sweep_executor(pool)
        assert view.started and view.persistent and view.slots == 6
    ours = InProcess()
    assert as_sweep_executor(ours) is ours and isinstance(ours, Executor)


@pytest.mark.parametrize("bad", [object(), "processes", 4])
def test_negative_control_a_non_executor_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="executor must be a concurrent.futures.Executor"):
        run_sweep(_cells(1), executor=bad, progress=False)
