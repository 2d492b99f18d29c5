"""Where the cells of a sweep run: this process, local worker processes, or a Dask cluster.

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
is ``persistent`` (started by the first sweep that needs it, closed by its owner).
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

__all__ = ["DaskDistributed", "Executor", "InProcess", "LocalProcesses", "SweepError"]


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


class Executor:
    """Base class: ``submit`` tasks, ``wait`` for some to finish, ``start``/``close``."""

    #: Tasks kept in flight (more than the workers, so none idles between two tasks).
    slots: int = 1

    def __init__(self) -> None:
        self.started = False
        #: When true, a sweep that starts this executor leaves it running (close it yourself).
        self.persistent = False

    def start(self) -> Executor:
        self.started = True
        return self

    def close(self) -> None:
        self.started = False

    def abort(self) -> None:
        """Stop at once, dropping the tasks in flight (after Ctrl-C or an error)."""
        self.close()

    def __enter__(self) -> Executor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """Start ``fn(arg)``; return a handle with ``.result()``."""
        raise NotImplementedError

    def wait(self, handles: Iterable[Any]) -> set[Any]:
        """Block until at least one handle is done; return the done ones."""
        raise NotImplementedError

    @property
    def remote(self) -> bool:
        """Whether tasks run in other processes (then workers re-check the code version)."""
        return True


class InProcess(Executor):
    """Run each task at once in this process."""

    slots = 1

    def __repr__(self) -> str:
        return "InProcess()"

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> cf.Future:
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(arg))
        except BaseException as exc:  # the task function catches cell errors itself
            fut.set_exception(exc)
        return fut

    def wait(self, handles: Iterable[Any]) -> set[Any]:
        return set(handles)

    @property
    def remote(self) -> bool:
        return False


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

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        super().close()

    def abort(self) -> None:
        # shutdown() would wait for the cells in flight, possibly for minutes
        if self._pool is not None:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                proc.terminate()
        self.close()

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> cf.Future:
        assert self._pool is not None, "start() the executor first"
        return self._pool.submit(fn, arg)

    def wait(self, handles: Iterable[Any]) -> set[Any]:
        done, _ = cf.wait(list(handles), return_when=cf.FIRST_COMPLETED)
        return set(done)


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
        threads = sum(self._client.nthreads().values())
        self.slots = max(2, 2 * threads)
        # a lost scheduler is logged by the client as a 40-line traceback; the sweep reports it
        # in one line (SweepError with the cells kept), so the client's log is quiet meanwhile
        client_log = logging.getLogger("distributed.client")
        self._client_log_level = client_log.level
        client_log.setLevel(logging.CRITICAL)
        super().start()
        return self

    def close(self) -> None:
        # closing the client releases its tasks (the scheduler drops work nobody wants);
        # closing the LocalCluster stops its workers: this is also the abort
        try:
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
            super().close()

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        assert self._client is not None, "start() the executor first"
        return self._client.submit(fn, arg, pure=False)

    def wait(self, handles: Iterable[Any]) -> set[Any]:
        import distributed

        done, _ = distributed.wait(list(handles), return_when="FIRST_COMPLETED")
        return set(done)
