"""Benchmark: the overhead of running a small sweep on Dask or local processes (issue 36, item 3).

Run ``python bench/bench_dask_overhead.py`` (about a minute; ``--cells`` sets the two sweep sizes,
``--group`` the cells per task of the grouped run). The same cells (a 50-step DP-GD of 4 trials
on a 2000 x 10 logistic problem, ~10-30 ms each) run in this process, on
:class:`~dpbounds.sweep.LocalProcesses` (2 workers) and on
:class:`~dpbounds.sweep.DaskDistributed` (a ``LocalCluster`` of 2 single-threaded worker
processes). CPU is this process's plus its children's (``resource.getrusage``: the pool's and
the cluster's processes, reaped at close), wall by ``perf_counter``. Two sweep sizes separate
the fixed cost (starting the pool or cluster, importing the library in each worker) from the
cost per cell: ``extra = (CPU(N2) - CPU(N1) - [in-process CPU(N2) - CPU(N1)]) / (N2 - N1)``,
what the executor adds per cell beyond the cell's own work, and ``overhead`` = that over the
cell's own CPU. Rows: one cell per task (``PACK_MAX = 1``, the engine before packing), the
engine's automatic packing of ungrouped cells (:meth:`dpbounds.sweep.engine._Plan.pack`), and
``--group G`` cells to a task by ``Cell(group=...)``; ``packed, loud`` is automatic packing on a
``LocalCluster`` with Dask's own intervals (its profiler, 20 ms ticks: the cluster before
:data:`dpbounds.sweep.executors.QUIET_CLUSTER`).

Results: ``bench/bench_dask_overhead.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402


@functools.cache
def _objective() -> Any:
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression

    A, y = kuru_synthetic(n=2000, d=10, seed=0)
    # synthetic data: its smoothness is public, declared (DP-GD's default step c / L reads it)
    L = LogisticRegression(A, y, l2=0.02, l1_radius=20.0).smoothness
    return LogisticRegression(A, y, l2=0.02, l1_radius=20.0, smoothness=L)


def gd_cell(epsilon: float, trials: int, seed: tuple[int, ...]) -> dict[str, Any]:
    """One cell: a 50-step Laplace DP-GD, its final states' mean loss."""
    from dpbounds.algorithms import dp_gd

    f = _objective()
    r = dp_gd(f, epsilon=epsilon, steps=50, trials=trials, seed=seed, trace=None)
    return {"loss": np.asarray(f.loss(r.x))}


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(kind: str, cells: int, group: int | None, start_index: int,
        pack: bool, quiet: bool = True) -> tuple[float, float]:
    """(CPU s, wall s) of one fresh sweep of ``cells`` cells on ``kind``."""
    from dpbounds.sweep import (
        Cell,
        DaskDistributed,
        InProcess,
        LocalProcesses,
        engine,
        executors,
        run_sweep,
    )

    grid = [Cell(gd_cell, {"epsilon": 1.0 + 1e-3 * i}, trials=4, seed=(start_index, i),
                 group=None if group is None else i // group) for i in range(cells)]
    executor = {"in-process": InProcess, "processes": lambda: LocalProcesses(2),
                "dask": lambda: DaskDistributed(workers=2)}[kind]()
    saved, saved_quiet = engine.PACK_MAX, executors.QUIET_CLUSTER
    engine.PACK_MAX = saved if pack else 1  # 1: one cell per task, as before packing
    # {}: the LocalCluster with Dask's own intervals, as before QUIET_CLUSTER
    executors.QUIET_CLUSTER = saved_quiet if quiet else {}
    try:
        c0, w0 = _cpu(), time.perf_counter()
        run_sweep(grid, executor=executor, progress=False)
        return _cpu() - c0, time.perf_counter() - w0
    finally:
        engine.PACK_MAX = saved
        executors.QUIET_CLUSTER = saved_quiet


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", type=int, nargs=2, default=[32, 256])
    ap.add_argument("--group", type=int, default=8)
    args = ap.parse_args()
    n1, n2 = args.cells
    gd_cell(1.0, 4, (0,))  # warm this process (imports, compilation) before timing
    print(f"{'executor':>12} {'tasks':>14} {'CPU N1':>7} {'CPU N2':>7} {'wall N2':>7} "
          f"{'fixed CPU s':>11} {'extra ms/cell':>13} {'overhead':>8}")
    base: dict[int, float] = {}
    rows = (("in-process", None, False, True, "1 cell"),
            ("processes", None, False, True, "1 cell"),
            ("processes", None, True, True, "packed (auto)"),
            ("dask", None, False, True, "1 cell"),
            ("dask", None, True, False, "packed, loud"),
            ("dask", None, True, True, "packed (auto)"),
            ("dask", args.group, False, True, f"group={args.group}"))
    for kind, group, pack, quiet, label in rows:
        c1, _ = run(kind, n1, group, 1, pack, quiet)
        c2, w2 = run(kind, n2, group, 2, pack, quiet)
        if kind == "in-process":
            base = {n1: c1, n2: c2}
        cell = (base[n2] - base[n1]) / (n2 - n1)  # a cell's own CPU
        extra = ((c2 - c1) - (base[n2] - base[n1])) / (n2 - n1)
        fixed = c1 - base[n1] - extra * n1
        print(f"{kind:>12} {label:>14} {c1:>7.2f} {c2:>7.2f} {w2:>7.2f} {fixed:>11.2f} "
              f"{extra * 1e3:>13.1f} {extra / cell:>8.0%}", flush=True)


if __name__ == "__main__":
    main()
