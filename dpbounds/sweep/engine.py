"""Run a sweep: compute the cells missing from the store, on any executor, with progress.

:func:`run_sweep` keys every cell (:func:`~dpbounds.sweep.cells.cell_key`), reuses the cells the
store already holds, sends the others to the executor most expensive first (a group of cells as
one task), writes each finished cell to the store the moment it arrives, and returns every
record in the order of the cells. A ``kill -9`` therefore loses only the cells in flight; the
next run computes the rest. Identical cells (same key) are computed once.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextvars
import hashlib
import importlib
import os
import socket
import sys
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dpbounds
from dpbounds._progress import Progress, resolve_mode
from dpbounds.sweep.cells import (
    Cell,
    CellCall,
    canonical,
    cell_key,
    code_digests,
    code_fingerprint,
    function_name,
    is_batched,
)
from dpbounds.sweep.executors import Executor, InProcess, SweepError, as_sweep_executor
from dpbounds.sweep.store import ResultStore, normalise_record

__all__ = ["CellInfo", "SweepError", "SweepResult", "run_sweep"]

# True while a worker (or the in-process executor) runs a cell: a sweep started inside a
# cell runs in-process and quietly instead of starting pools inside pools.
_IN_CELL: contextvars.ContextVar[bool] = contextvars.ContextVar("dpbounds_sweep_in_cell",
                                                                default=False)


@dataclass(frozen=True)
class CellInfo:
    """Bookkeeping of one cell of a finished sweep."""

    key: str
    function: str
    reused: bool
    seconds: float
    worker: str


@dataclass
class SweepResult(Sequence):
    """The records of a sweep in the order of its cells (``result[i]`` is cell ``i``'s record).

    ``info[i]`` says whether cell ``i`` was reused from the store, how long it took to compute
    (then or now) and on which worker; ``computed`` and ``reused`` count distinct cells.
    """

    records: list[dict[str, Any]]
    info: list[CellInfo]
    computed: int = 0
    reused: int = 0
    seconds: float = 0.0

    def __getitem__(self, i: Any) -> Any:
        return self.records[i]

    def __len__(self) -> int:
        return len(self.records)


@dataclass
class _Task:
    fn: Any  # the function, or "module:qualname" to import (a package's __main__)
    calls: list[CellCall]
    batched: bool
    # what a remote worker must run: (package version, dpbounds digest, digest of the
    # function's package, or None when the function travels by value)
    expect: tuple[str, str, str | None] | None
    # the plug-ins loaded where the sweep started (dpbounds.extend.loaded_plugins): files and
    # whether the entry points were; a worker loads them before it resolves anything
    plugins: tuple[tuple[str, ...], bool] = ((), False)
    # (path, SHA-256) of each plug-in file as it was loaded where the sweep started
    # (dpbounds.extend.plugin_digests): a worker whose copy differs refuses the task
    plugin_digests: tuple[tuple[str, str], ...] = ()


def _plugins_here() -> tuple[tuple[str, ...], bool]:
    """The plug-ins this process loaded (none when :mod:`dpbounds.extend` was never imported:
    then nothing was loaded, and it is not imported here)."""
    extend = sys.modules.get("dpbounds.extend")
    return ((), False) if extend is None else extend.loaded_plugins()


def _plugin_digests_here() -> tuple[tuple[str, str], ...]:
    """(path or entry point, SHA-256 of its sources) of each plug-in this process loaded."""
    extend = sys.modules.get("dpbounds.extend")
    return () if extend is None else tuple(sorted(extend.plugin_digests().items()))


def _plugin_mismatch(expected: tuple[tuple[str, str], ...]) -> str | None:
    """Worker side, after loading the sweep's plug-ins: why this worker's copy of a plug-in
    file is not the one the sweep started with (an edit between submit and run would make
    the cells run other code than the parent's, and store it under the parent's key), or
    ``None`` when every file has the parent's bytes."""
    if not expected:
        return None
    here = _load(_PLUGIN_DIGESTS)()
    for name, want in expected:
        got = here.get(name)
        what = name if name.startswith("entry point ") else f"the plug-in file {name}"
        if got is None:
            return f"{what} was not loaded here; its cells were not run"
        if got != want:
            why = ("another version is installed here than where the sweep started; install "
                   "the same everywhere" if name.startswith("entry point ") else
                   "it was edited after the sweep was submitted; its cells were not run, "
                   "rerun the sweep")
            return (f"{what} is not the one the sweep started with (sha256 {got[:12]}... "
                    f"here, {want[:12]}... where the sweep started): {why}")
    return None


def _plugins_fingerprint() -> str:
    """``""`` when no plug-in is loaded, else a digest of the plug-ins' sources as this process
    runs them (each ``--plugin`` file's bytes as loaded, each entry point's package sources:
    :func:`dpbounds.extend.plugin_digests`): part of every cell's code fingerprint, so that a
    stored result is not reused after a plug-in was edited (a verify cell is a dpbounds
    function; the plug-in's study it runs is not in its sources)."""
    digests = _plugin_digests_here()
    if not digests:
        return ""
    h = hashlib.sha256()
    for name, digest in digests:
        h.update(f"{name}\0{digest}\0".encode())
    return "+plugins:" + h.hexdigest()[:16]


def _load_plugins(plugins: tuple[tuple[str, ...], bool]) -> None:
    """Worker side: load the sweep's plug-ins (once per process: loading is idempotent)."""
    files, entry_points = plugins
    if files or entry_points:
        # by name, like a task's function (_load): the sweep sits below the extension API in
        # the layers (dpbounds/_layers.py) and needs it only in a worker whose parent loaded
        # plug-ins
        _load(_PLUGIN_LOADER)(files, entry_points=entry_points)


@dataclass
class _Outcome:
    results: list[tuple[bool, Any, float]] = field(default_factory=list)  # ok, record|error, s
    worker: str = ""
    mismatch: str | None = None


def _portable(fn: Any) -> Any:
    """``fn`` as workers can load it: a function defined in a package's ``__main__.py`` (run by
    ``python -m pkg``) goes by name, since spawned processes do not re-run that module."""
    module = getattr(fn, "__module__", None)
    if module in ("__main__", "__mp_main__"):
        spec = getattr(sys.modules.get(module), "__spec__", None)
        if spec is not None and spec.name:
            return function_name(fn)
    if isinstance(module, str) and module.startswith(_PLUGIN_PREFIX):
        # a plug-in file's module is not importable in a fresh process: the worker loads the
        # plug-in first (_Task.plugins), then finds the function by name
        return function_name(fn)
    return fn


#: :data:`dpbounds.extend.PLUGIN_MODULE_PREFIX` (not imported here: the sweep does not need
#: the extension API unless a plug-in was loaded)
_PLUGIN_PREFIX = "dpbounds_plugin_"
#: what a worker calls to load the sweep's plug-ins (:func:`dpbounds.extend.load_plugins`)
_PLUGIN_LOADER = "dpbounds.extend:load_plugins"
#: what a worker calls for the digests of the plug-in files it loaded
#: (:func:`dpbounds.extend.plugin_digests`)
_PLUGIN_DIGESTS = "dpbounds.extend:plugin_digests"


def _load(fn: Any) -> Any:
    if not isinstance(fn, str):
        return fn
    module, qualname = fn.split(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _run_task(task: _Task) -> _Outcome:
    """Worker side: run the cells of one task; errors come back as text, never raised."""
    out = _Outcome(worker=f"{socket.gethostname()}:{os.getpid()}")
    try:
        _load_plugins(task.plugins)
        stale = _plugin_mismatch(task.plugin_digests)
        if stale is not None:
            out.mismatch = f"worker {out.worker}: {stale}"
            return out
        fn = _load(task.fn)
    except Exception:
        out.results = [(False, traceback.format_exc(), 0.0)] * len(task.calls)
        return out
    if task.expect is not None:
        version, lib, src = task.expect
        here_lib, here_src = code_digests(fn)
        problem = None
        if dpbounds.__version__ != version:
            problem = f"runs dpbounds {dpbounds.__version__}, the sweep expects {version}"
        elif here_lib != lib:
            problem = "runs other dpbounds sources than the sweep's"
        elif src is not None and here_src != src:
            problem = f"runs other sources of {function_name(fn).split(':')[0]} than the sweep's"
        if problem is not None:
            out.mismatch = f"worker {out.worker} {problem}; install the same code everywhere"
            return out
    token = _IN_CELL.set(True)
    try:
        if task.batched:
            t0 = time.perf_counter()
            try:
                records = list(fn(list(task.calls)))
                if len(records) != len(task.calls):
                    raise ValueError(f"a batched cell function returned {len(records)} records "
                                     f"for {len(task.calls)} cells")
                dt = (time.perf_counter() - t0) / len(task.calls)
                out.results = [(True, r, dt) for r in records]
            except Exception:
                msg = traceback.format_exc()
                out.results = [(False, msg, 0.0)] * len(task.calls)
        else:
            for call in task.calls:
                t0 = time.perf_counter()
                try:
                    out.results.append((True, fn(**call.kwargs()),
                                        time.perf_counter() - t0))
                except Exception:
                    out.results.append((False, traceback.format_exc(), 0.0))
    finally:
        _IN_CELL.reset(token)
    return out


def _describe(cell: Cell) -> str:
    extra = "".join(f", {k}={getattr(cell, k)!r}" for k in ("trials", "seed")
                    if getattr(cell, k) is not None)
    params = ", ".join(f"{k}={v!r}" for k, v in cell.params.items())
    return f"{function_name(cell.fn)}({params}{extra})"


def run_sweep(cells: Iterable[Cell], *, store: ResultStore | str | os.PathLike[str] | None = None,
              executor: cf.Executor | None = None, progress: bool | str = "auto",
              desc: str = "sweep", fresh: bool = False, version: str | None = None,
              code_version: str | None = None) -> SweepResult:
    r"""Compute every cell not yet in ``store`` and return all records in cell order.

    Parameters
    ----------
    cells
        The grid, as :class:`~dpbounds.sweep.Cell` objects.
    store
        A :class:`~dpbounds.sweep.ResultStore` or its folder; ``None`` keeps nothing (no resume).
    executor
        :class:`~dpbounds.sweep.InProcess` (default), :class:`~dpbounds.sweep.LocalProcesses` or
        :class:`~dpbounds.sweep.DaskDistributed`: started and closed here unless already
        started. Or any other :class:`concurrent.futures.Executor` (``ThreadPoolExecutor``,
        Dask's ``Client.get_executor()`` ...), used and left open for its owner. Inside a
        running cell every sweep runs in-process and quietly.
    progress
        ``"auto"``, ``"bar"``, ``"lines"``, ``"off"`` or a bool (see
        :mod:`dpbounds._progress`).
    desc
        Label of the progress output.
    fresh
        Recompute every cell and overwrite what the store holds.
    version, code_version
        Override the package version and the code fingerprint in the keys (default:
        ``dpbounds.__version__`` and :func:`~dpbounds.sweep.cells.code_fingerprint`; ``""``
        turns the fingerprint off).

    Returns
    -------
    SweepResult
        ``result[i]`` is the record of ``cells[i]``: the function's mapping, arrays and values
        bit-identical whichever executor computed it and whether or not it came from the store.

    Raises
    ------
    SweepError
        If a cell raised (after the cells in flight have finished and been stored; no new
        cell starts after a failure), or a remote worker runs other code.

    Examples
    --------
    A grid of Monte Carlo means; trial ``k`` of a cell depends only on ``(seed, k)``:

    >>> import numpy as np
    >>> from dpbounds.sweep import Cell, run_sweep
    >>> def noisy_mean(scale, trials, seed):
    ...     draws = np.array([np.random.default_rng([*seed, k]).normal(0.0, scale)
    ...                       for k in range(trials)])
    ...     return {"mean": float(draws.mean()), "draws": draws}
    >>> cells = [Cell(noisy_mean, {"scale": s}, trials=4, seed=(7, i))
    ...          for i, s in enumerate([1.0, 2.0])]
    >>> result = run_sweep(cells, progress=False)
    >>> [r["draws"].shape for r in result], result.computed
    ([(4,), (4,)], 2)
    """
    t_start = time.perf_counter()
    cells = list(cells)
    for i, c in enumerate(cells):
        if not isinstance(c, Cell):
            raise ValueError(f"cells[{i}] must be a dpbounds.sweep.Cell, got {type(c).__name__}")
    if store is not None and not isinstance(store, ResultStore):
        store = ResultStore(Path(store))
    if store is not None:
        store.ensure_folder()  # before any cell: a file or /proc path failed after the first
    nested = _IN_CELL.get()
    if executor is None or nested:
        executor = InProcess()
    executor = as_sweep_executor(executor)
    plan = _Plan(cells, dpbounds.__version__ if version is None else str(version),
                 code_version)
    if store is not None:
        store.remove_stale_temporaries()
        if not fresh:
            plan.reuse(store)
    reused = len(plan.records)
    pending_cost = sum(plan.cell(k).cost for k in plan.first if k not in plan.records)
    bar = Progress(len(plan.first), reused, desc, "off" if nested else resolve_mode(progress),
                   cost=pending_cost)
    owns = not executor.started and not executor.persistent
    try:
        tasks = plan.tasks()
        if tasks and not executor.started:
            executor.start()
        if executor.remote:
            tasks = plan.pack(tasks, executor.slots)
        _execute(plan, tasks, executor, store, bar)
    except _ExecutorLost as lost:  # e.g. the Dask scheduler went away: the sweep's own error
        bar.close()
        if executor.started:
            try:
                executor.abort()
            except Exception:  # noqa: BLE001 - it is gone already; the error below says so
                pass
        finished = len(plan.records) - reused
        raise SweepError(
            f"the executor {executor!r} failed ({_one_line(lost.cause)}); {finished} of "
            f"{len(plan.first)} cells finished"
            f"{' and were kept in the store' if store is not None else ''}, {reused} were "
            f"reused, {len(plan.first) - len(plan.records)} did not finish; rerun to compute "
            f"them", plan.failures) from lost.cause
    except BaseException:  # Ctrl-C, a full disk: drop the cells in flight, do not wait for them
        bar.close()
        if executor.started:
            executor.abort()
        raise
    finally:
        bar.close()
        if owns and executor.started:
            executor.close()
    if plan.failures:
        cell, err = plan.failures[0]
        finished = len(plan.records) - reused
        more = f" (and {len(plan.failures) - 1} more)" if len(plan.failures) > 1 else ""
        raise SweepError(f"{len(plan.failures)} of {len(plan.first)} cells failed, {finished} "
                         f"finished{' and were stored' if store is not None and finished else ''}"
                         f", {reused} were reused, "
                         f"{len(plan.first) - len(plan.records) - len(plan.failures)} did not "
                         f"start. First failure: {_describe(cell)}{more}:\n{err.rstrip()}",
                         plan.failures)
    return SweepResult([plan.records[k] for k in plan.keys], [plan.infos[k] for k in plan.keys],
                       computed=len(plan.first) - reused, reused=reused,
                       seconds=time.perf_counter() - t_start)


#: Most cells packed into one task by :meth:`_Plan.pack` (a task's cells are stored when it
#: returns: a killed sweep recomputes at most this many per task in flight).
PACK_MAX = 16
#: Tasks per slot (tasks in flight) that packing still leaves, for load balance.
PACK_TASKS_PER_SLOT = 4


class _Plan:
    """Keys of the cells, what the store already holds, and the results as they arrive."""

    def __init__(self, cells: list[Cell], version: str, code_version: str | None) -> None:
        self.cells, self.version, self.code_version = cells, version, code_version
        self.codes: dict[Any, str] = {}
        self.keys: list[str] = []
        self.first: dict[str, int] = {}  # key -> index of its first cell (duplicates run once)
        plugins = _plugins_fingerprint() if code_version is None else ""
        for i, c in enumerate(cells):
            if code_version is None and c.fn not in self.codes:
                self.codes[c.fn] = code_fingerprint(c.fn) + plugins
            k = cell_key(c, version, self.code(c))
            self.keys.append(k)
            self.first.setdefault(k, i)
        self.names = {k: function_name(cells[i].fn) for k, i in self.first.items()}
        self.records: dict[str, dict[str, Any]] = {}
        self.infos: dict[str, CellInfo] = {}
        self.failures: list[tuple[Cell, str]] = []

    def code(self, cell: Cell) -> str:
        return self.code_version if self.code_version is not None else self.codes[cell.fn]

    def cell(self, key: str) -> Cell:
        return self.cells[self.first[key]]

    def reuse(self, store: ResultStore) -> None:
        for k in self.first:
            # a damaged or mismatched cell reads as None (the store logs it): recomputed
            found = store.read(self.names[k], k)
            if found is not None:
                meta, self.records[k] = found
                self.infos[k] = CellInfo(k, self.names[k], True, float(meta.get("seconds", 0.0)),
                                         str(meta.get("worker", "")))

    def tasks(self) -> list[list[str]]:
        """Keys of the pending cells, one list per task (a group is one task), most
        expensive first."""
        tasks: dict[Any, list[str]] = {}
        for k in self.first:
            if k not in self.records:
                c = self.cell(k)
                tid = (self.names[k], c.group) if c.group is not None else ("cell", k)
                tasks.setdefault(tid, []).append(k)
        return sorted(tasks.values(), key=lambda ks: -sum(self.cell(k).cost for k in ks))

    def pack(self, tasks: list[list[str]], slots: int) -> list[list[str]]:
        """Ungrouped cells of one (not :func:`batched`) function packed ``k`` to a task for
        another process: each task costs the executor a few ms of CPU (pickling, scheduling;
        about 10 ms on Dask, ``bench/bench_dask_overhead.md``), as much as a small cell.
        ``k = min(PACK_MAX, cells // (PACK_TASKS_PER_SLOT * slots))``, at least 1, so every
        slot still gets several tasks to balance; the packed cells keep their own keys,
        records and errors (a task runs its cells one by one), and neighbours in the
        most-expensive-first order share a task."""
        singles = {id(ks) for ks in tasks if len(ks) == 1 and self.cell(ks[0]).group is None
                   and not is_batched(self.cell(ks[0]).fn)}
        k = min(PACK_MAX, len(singles) // (PACK_TASKS_PER_SLOT * max(1, slots)))
        if k <= 1:
            return tasks
        packed: list[list[str]] = []
        runs: dict[Any, list[str]] = {}  # the open task of each function
        for ks in tasks:
            if id(ks) not in singles:
                packed.append(ks)
                continue
            fn = self.cell(ks[0]).fn
            if fn not in runs:
                runs[fn] = []
                packed.append(runs[fn])
            runs[fn].append(ks[0])
            if len(runs[fn]) == k:
                del runs[fn]
        return packed

    def task(self, ks: list[str], remote: bool) -> _Task:
        c = self.cell(ks[0])
        fn = _portable(c.fn) if remote else c.fn
        expect = None
        if remote and self.code_version is None:
            lib, src = code_digests(c.fn)
            by_value = getattr(fn, "__module__", None) in ("__main__", "__mp_main__")
            expect = (self.version, lib, None if by_value else src)
        return _Task(fn, [self.cell(k).call() for k in ks], is_batched(c.fn), expect,
                     _plugins_here() if remote else ((), False),
                     _plugin_digests_here() if remote else ())

    def finish(self, k: str, value: Any, seconds: float, worker: str,
               store: ResultStore | None) -> bool:
        """Record (and store) one computed cell; False if its record is invalid."""
        cell = self.cell(k)
        try:
            record = normalise_record(value)
        except ValueError as exc:
            self.failures.append((cell, f"invalid record: {exc}"))
            return False
        if store is not None:
            call = cell.call()
            # the params as the key reads them (np.int32 stopped the write with a TypeError
            # after the cell ran, and left its NPZ behind: fuzz round 9)
            store.put({"key": k, "function": self.names[k], "params": canonical(call.params),
                       "trials": call.trials, "seed": canonical(call.seed),
                       "version": self.version,
                       "code": self.code(cell), "seconds": seconds, "worker": worker}, record)
        self.records[k] = record
        self.infos[k] = CellInfo(k, self.names[k], False, seconds, worker)
        return True


class _ExecutorLost(Exception):
    """The executor itself failed (not a cell): e.g. the Dask scheduler went away."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _execute(plan: _Plan, tasks: list[list[str]], executor: Executor,
             store: ResultStore | None, bar: Progress) -> None:
    """Keep ``executor.slots`` tasks in flight; store each cell as it arrives; after a failure
    start nothing new but collect what is in flight. An error of the executor's own ``submit``
    or ``wait`` (not of a cell) ends the loop as :class:`_ExecutorLost`."""
    inflight: dict[Any, list[str]] = {}
    queue = list(reversed(tasks))
    while queue or inflight:
        while queue and not plan.failures and len(inflight) < executor.slots:
            ks = queue.pop()
            task = plan.task(ks, executor.remote)
            try:
                inflight[executor.submit(_run_task, task)] = ks
            except Exception as exc:
                raise _ExecutorLost(exc) from exc
        if not inflight:
            break
        try:
            done = executor.wait(inflight)
        except Exception as exc:  # distributed.wait raises once futures are cancelled
            raise _ExecutorLost(exc) from exc
        for h in done:
            ks = inflight.pop(h)
            try:
                out: _Outcome = h.result()
            except Exception as exc:  # a worker died, the cluster went away, ...
                hint = (" (a worker process died: out of memory, killed, or a script that "
                        "starts a sweep without `if __name__ == '__main__':`)"
                        if "BrokenProcessPool" in type(exc).__name__ else "")
                plan.failures += [(plan.cell(k), f"{type(exc).__name__}: {exc}{hint}")
                                  for k in ks]
                continue
            if out.mismatch is not None:
                plan.failures += [(plan.cell(k), out.mismatch) for k in ks]
                continue
            for k, (ok, value, seconds) in zip(ks, out.results):
                if not ok:
                    plan.failures.append((plan.cell(k), value))
                elif plan.finish(k, value, seconds, out.worker, store):
                    bar.update(1, plan.cell(k).cost)

