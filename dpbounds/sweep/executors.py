"""Where the cells of a sweep run: this process, local worker processes, or a Dask cluster.

Each is a :class:`concurrent.futures.Executor` (``submit(fn, *args, **kwargs)`` returning a
``concurrent.futures.Future``, ``map``, ``shutdown``, ``with``): :class:`LocalProcesses` runs a
``ProcessPoolExecutor``, :class:`DaskDistributed` the client's ``Client.get_executor()``.
:func:`~dpbounds.sweep.run_sweep` also accepts any other ``concurrent.futures`` executor (a
``ThreadPoolExecutor``, a ``Client.get_executor()`` of your own), which it uses without ever
shutting it down.

Every executor runs the same task function on the same pickled cells and returns the records
to the process that called :func:`~dpbounds.sweep.run_sweep`, which alone writes the store (so
workers need no shared file system). Results are bit-identical across executors because a
cell's randomness depends only on its seed and trial index, never on the worker.

* :class:`InProcess` — one cell after another in this process (debugging, profiling,
  notebooks with functions defined in ``__main__``);
* :class:`LocalProcesses` — a pool of ``workers`` processes started with the ``spawn`` method
  (the same on Linux, macOS and Windows, and safe with threads in the parent);
* :class:`DaskDistributed` — a Dask ``distributed`` cluster: a ``LocalCluster`` it starts, or an
  existing scheduler at ``tcp://HOST:PORT`` (the workers must have dpbounds and the cell
  functions' modules installed; a worker running other code is detected and refused).

An executor is started by :func:`~dpbounds.sweep.run_sweep` when it has cells to compute and
closed after it, unless it was already started (``with LocalProcesses(2) as ex:
run_sweep(a, executor=ex); run_sweep(b, executor=ex)`` keeps one pool for several sweeps) or
is ``persistent`` (started by the first sweep that needs it, closed by its owner); a closed
executor starts again on its next ``start()`` or ``submit``.

>>> import operator
>>> with InProcess() as ex:
...     list(ex.map(operator.mul, [1, 2, 3], [4, 5, 6])), ex.submit(divmod, 7, 2).result()
([4, 10, 18], (3, 1))
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import multiprocessing.connection
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["DaskDistributed", "Executor", "InProcess", "LocalProcesses", "SweepError",
           "as_sweep_executor", "default_workers"]


class SweepError(RuntimeError):
    """A sweep could not finish: cells failed (``failures`` says which; the others are stored),
    or the executor could not start."""

    def __init__(self, message: str, failures: list[tuple[Any, str]] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or []


def default_workers() -> int:
    """The CPUs this process may use (``os.sched_getaffinity``, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


#: Most worker processes an executor starts: each is a Python process of ~100 MB, so 1024
#: already needs ~100 GB; a larger count is a typo, not a machine.
MAX_WORKERS = 1024

#: Dask settings of the ``LocalCluster`` that :class:`DaskDistributed` starts itself (a cluster
#: at a given ``scheduler`` address keeps its owner's): its event loops' periodic work, which
#: an idle cluster of 2 workers spends 0.13 CPU-s per wall second on (0.018 with these;
#: ``bench/bench_dask_overhead.md``), as much as a tenth of a small sweep's CPU. The profiler
#: samples every thread each 10 ms for a dashboard this cluster does not start; the other
#: intervals go from 20-100 ms to 1 s (the blocked-loop warning, the memory monitor, which
#: still stops a worker near its limit, and work stealing: the sweep keeps only two tasks per
#: worker in flight).
QUIET_CLUSTER: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "1s",
    "distributed.scheduler.work-stealing-interval": "1s",
}


def _check_workers(workers: int | None) -> int:
    if workers is None:
        return default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or not (
            1 <= workers <= MAX_WORKERS):
        shown = f"{workers:.2e}" if isinstance(workers, int) and workers > 10**15 else \
            repr(workers)
        raise ValueError(f"workers must be an int in [1, {MAX_WORKERS}] (each is a process of "
                         f"~100 MB), got {shown}")
    return workers


class Executor(cf.Executor):
    """A :class:`concurrent.futures.Executor` that a sweep can start, stop and abort.

    The standard protocol — ``submit(fn, *args, **kwargs)`` returning a
    :class:`concurrent.futures.Future`, ``map``, ``shutdown`` and ``with`` — plus what the sweep
    engine needs on top: ``start()`` (an executor is restartable after ``shutdown``, so one object
    serves several sweeps), ``abort()`` (stop at once, dropping the tasks in flight), ``slots``
    (tasks to keep in flight), ``remote`` (whether workers re-check the code they run),
    ``persistent`` and ``wait``. :func:`~dpbounds.sweep.run_sweep` also takes a plain
    ``concurrent.futures`` executor (a ``ThreadPoolExecutor``, Dask's ``Client.get_executor()``):
    the caller owns that one.
    """

    #: Tasks kept in flight (more than the workers, so none idles between two tasks).
    slots: int = 1

    def __init__(self) -> None:
        self.started = False
        #: When true, a sweep that starts this executor leaves it running (close it yourself).
        self.persistent = False

    def start(self) -> Executor:
        self.started = True
        return self

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Release the workers (``concurrent.futures`` protocol); :meth:`start` makes the
        executor usable again."""
        self.started = False

    def close(self) -> None:
        """``shutdown(wait=True, cancel_futures=True)``: what a finished sweep calls."""
        self.shutdown(wait=True, cancel_futures=True)

    def abort(self) -> None:
        """Stop at once, dropping the tasks in flight (after Ctrl-C or an error)."""
        self.close()

    def __enter__(self) -> Executor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown(wait=True)  # as every concurrent.futures executor: finish what was submitted

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        """Start ``fn(*args, **kwargs)`` (the executor starts if it was not); return its
        :class:`concurrent.futures.Future`."""
        raise NotImplementedError

    def wait(self, handles: Iterable[cf.Future]) -> set[cf.Future]:
        """Block until at least one future is done; return the done ones."""
        done, _ = cf.wait(list(handles), return_when=cf.FIRST_COMPLETED)
        return set(done)

    @property
    def remote(self) -> bool:
        """Whether tasks run in other processes (then workers re-check the code version)."""
        return True


class InProcess(Executor):
    """Run each task at once in this process."""

    slots = 1

    def __repr__(self) -> str:
        return "InProcess()"

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the task function catches cell errors itself
            fut.set_exception(exc)
        return fut

    @property
    def remote(self) -> bool:
        return False


class _Borrowed(Executor):
    """A caller's plain :class:`concurrent.futures.Executor` seen as a started, persistent
    sweep executor: the sweep submits to it and never shuts it down (its owner does)."""

    def __init__(self, inner: cf.Executor) -> None:
        super().__init__()
        self.inner = inner
        self.started = self.persistent = True
        workers = getattr(inner, "_max_workers", None)  # ThreadPool/ProcessPool; else the CPUs
        self.slots = 2 * (workers if isinstance(workers, int) and workers > 0 else
                          default_workers())

    def __repr__(self) -> str:
        return repr(self.inner)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        return self.inner.submit(fn, *args, **kwargs)

    def abort(self) -> None:
        """Nothing to stop: the executor is its owner's (the futures in flight are dropped)."""


def as_sweep_executor(executor: cf.Executor) -> Executor:
    """``executor`` itself if it is a sweep :class:`Executor`, else a view of the plain
    ``concurrent.futures`` executor that the sweep uses without ever shutting it down.

    Raises
    ------
    ValueError
        If ``executor`` is not a :class:`concurrent.futures.Executor`.
    """
    if isinstance(executor, Executor):
        return executor
    if not isinstance(executor, cf.Executor):
        raise ValueError(f"executor must be a concurrent.futures.Executor (InProcess, "
                         f"LocalProcesses, DaskDistributed, a ThreadPoolExecutor, "
                         f"Client.get_executor() ...), got {type(executor).__name__}")
    return _Borrowed(executor)


def _exit_with_parent() -> None:
    """Worker initializer: exit as soon as the process that started the pool is gone.

    After ``kill -9`` of the sweep's process nobody would store what a worker computes, and a
    worker blocked on its task queue would otherwise wait forever.
    """
    parent = multiprocessing.parent_process()
    if parent is None:  # pragma: no cover - not a multiprocessing child
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="dpbounds-sweep-parent-watch", daemon=True).start()


class LocalProcesses(Executor):
    """A pool of ``workers`` local processes (default: every CPU this process may use).

    Parameters
    ----------
    workers
        Number of worker processes, ``>= 1``.
    mp_context
        The :mod:`multiprocessing` start method; ``"spawn"`` by default.
    """

    def __init__(self, workers: int | None = None, mp_context: str = "spawn") -> None:
        super().__init__()
        self.workers = _check_workers(workers)
        self.mp_context = mp_context
        self.slots = 2 * self.workers
        self._pool: cf.ProcessPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"LocalProcesses(workers={self.workers})"

    def start(self) -> LocalProcesses:
        if not self.started:
            self._pool = cf.ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context(self.mp_context),
                initializer=_exit_with_parent)
        super().start()
        return self

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
            self._pool = None
        super().shutdown(wait, cancel_futures=cancel_futures)

    def abort(self) -> None:
        # shutdown() would wait for the cells in flight, possibly for minutes
        if self._pool is not None:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                proc.terminate()
        self.close()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        if self._pool is None:
            self.start()
        assert self._pool is not None
        return self._pool.submit(fn, *args, **kwargs)


class DaskDistributed(Executor):
    """Run the tasks on a Dask ``distributed`` cluster.

    Parameters
    ----------
    scheduler
        Address of a running scheduler (``"tcp://HOST:PORT"``); ``None`` starts a
        ``LocalCluster`` of ``workers`` single-threaded worker processes and stops it on
        :meth:`close`.
    workers
        Workers of the ``LocalCluster`` (ignored with ``scheduler``).
    processes
        ``LocalCluster`` workers as processes (default) or threads of this process.
    timeout
        Seconds to wait for the scheduler.
    """

    def __init__(self, scheduler: str | None = None, workers: int | None = None,
                 processes: bool = True, timeout: float = 30.0) -> None:
        super().__init__()
        if scheduler is not None and (not isinstance(scheduler, str) or "://" not in scheduler):
            raise ValueError(f"scheduler must be an address like 'tcp://HOST:PORT', got "
                             f"{scheduler!r}")
        self.scheduler = scheduler
        self.workers = _check_workers(workers)
        self.processes = processes
        self.timeout = timeout
        self._client: Any = None
        self._cluster: Any = None
        self._pool: cf.Executor | None = None  # the client's own concurrent.futures executor
        self._client_log_level: int | None = None

    def __repr__(self) -> str:
        where = self.scheduler or f"LocalCluster(workers={self.workers})"
        return f"DaskDistributed({where})"

    def start(self) -> DaskDistributed:
        if self.started:
            return self
        try:
            import distributed
        except ImportError as exc:
            raise SweepError("the Dask executor needs dask.distributed: "
                             "pip install 'dpbounds[dist]'") from exc
        if self.scheduler is None:
            import dask

            # the workers' processes receive this configuration from their nannies
            with dask.config.set(QUIET_CLUSTER):
                self._cluster = distributed.LocalCluster(
                    n_workers=self.workers, threads_per_worker=1, processes=self.processes,
                    dashboard_address=None, silence_logs=logging.ERROR)
                self._client = distributed.Client(self._cluster)
        else:
            try:
                self._client = distributed.Client(self.scheduler, timeout=self.timeout)
            except (OSError, TimeoutError) as exc:
                raise SweepError(f"could not connect to the Dask scheduler at "
                                 f"{self.scheduler}: {exc}") from exc
        # impure: a cell's trials may be resubmitted on purpose (e.g. after a damaged store)
        self._pool = self._client.get_executor(pure=False)
        threads = sum(self._client.nthreads().values())
        self.slots = max(2, 2 * threads)
        # a lost scheduler is logged by the client as a 40-line traceback; the sweep reports it
        # in one line (SweepError with the cells kept), so the client's log is quiet meanwhile
        client_log = logging.getLogger("distributed.client")
        self._client_log_level = client_log.level
        client_log.setLevel(logging.CRITICAL)
        super().start()
        return self

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        # closing the client releases its tasks (the scheduler drops work nobody wants);
        # closing the LocalCluster stops its workers: this is also the abort
        try:
            if self._pool is not None:
                pool, self._pool = self._pool, None
                if wait and not cancel_futures:  # else the client's close drops the tasks
                    pool.shutdown(wait=True)
            if self._client is not None:
                client, self._client = self._client, None
                client.close()
            if self._cluster is not None:
                cluster, self._cluster = self._cluster, None
                cluster.close()
        finally:
            if self._client_log_level is not None:
                logging.getLogger("distributed.client").setLevel(self._client_log_level)
                self._client_log_level = None
            super().shutdown(wait, cancel_futures=cancel_futures)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        if self._pool is None:
            self.start()
        assert self._pool is not None
        return self._pool.submit(fn, *args, **kwargs)

    def wait(self, handles: Iterable[cf.Future]) -> set[cf.Future]:
        done = super().wait(handles)
        lost = [f for f in done if f.cancelled()]
        if lost:  # the scheduler cancelled them (it went away): the executor failed, not a cell
            raise SweepError(f"{len(lost)} task(s) were cancelled by the Dask cluster")
        return done
