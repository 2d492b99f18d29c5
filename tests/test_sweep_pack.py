"""Small ungrouped cells are packed several to a task for other processes (issue 36: Dask
overhead). Oracle: the in-process run (records byte for byte) and the executor's own count of
the tasks submitted to it; negative control: ``PACK_MAX = 1`` submits one task per cell, and a
sweep too small to pack is left alone."""

from __future__ import annotations

import concurrent.futures as cf
import pickle
from typing import Any

import pytest

from dpbounds.sweep import Cell, SweepError, engine, run_sweep
from tests.sweep_cells import fail_at, noisy_walk, noisy_walk_batch


class CountingPool(cf.ThreadPoolExecutor):
    """One thread (two slots); counts the tasks and the cells in each."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.sizes: list[int] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future:
        self.sizes.append(len(args[0].calls))
        return super().submit(fn, *args, **kwargs)


def cells(n: int, **kw: Any) -> list[Cell]:
    return [Cell(noisy_walk, {"scale": 1.0 + i, "steps": 5}, trials=2, seed=(3, i), **kw)
            for i in range(n)]


def same(a: Any, b: Any) -> bool:
    return pickle.dumps(list(a)) == pickle.dumps(list(b))


def test_cells_are_packed_and_keep_their_records(monkeypatch: pytest.MonkeyPatch) -> None:
    want = run_sweep(cells(48), progress=False)
    with CountingPool() as pool:  # 2 slots: k = min(16, 48 // (4 * 2)) = 6 cells per task
        got = run_sweep(cells(48), executor=pool, progress=False)
    assert pool.sizes == [6] * 8 and same(got, want)
    monkeypatch.setattr(engine, "PACK_MAX", 1)  # control: one cell per task
    with CountingPool() as pool:
        assert same(run_sweep(cells(48), executor=pool, progress=False), want)
    assert pool.sizes == [1] * 48


def test_small_sweeps_groups_and_batched_functions_are_not_packed() -> None:
    with CountingPool() as pool:
        run_sweep(cells(15), executor=pool, progress=False)  # 15 // 8 = 1: nothing to pack
        assert pool.sizes == [1] * 15
        pool.sizes.clear()
        run_sweep(cells(40, group="g"), executor=pool, progress=False)  # one group, one task
        assert pool.sizes == [40]
        pool.sizes.clear()
        batch = [Cell(noisy_walk_batch, {"scale": 1.0, "steps": 3}, trials=1, seed=(i,))
                 for i in range(40)]
        run_sweep(batch, executor=pool, progress=False)
        assert pool.sizes == [1] * 40


def test_a_failing_cell_in_a_packed_task_is_reported_alone() -> None:
    grid = [Cell(fail_at, {"index": i, "bad": 5}) for i in range(48)]
    with CountingPool() as pool, pytest.raises(SweepError) as info:
        run_sweep(grid, executor=pool, progress=False)
    assert len(info.value.failures) == 1 and "cell 5 fails on purpose" in info.value.failures[0][1]
