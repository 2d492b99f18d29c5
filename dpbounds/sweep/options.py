"""Command-line options of every sweep runner (``paper_figs``, ``sims``, ``bench``, the CLI).

:func:`add_sweep_arguments` adds ``--workers N``, ``--inline``, ``--dask``,
``--scheduler tcp://HOST:PORT``, ``--store DIR``, ``--no-store``, ``--fresh`` and ``--quiet`` to
an :mod:`argparse` parser; :meth:`SweepOptions.from_args` turns them into an executor, a store
and a progress mode, and :meth:`SweepOptions.run` runs a sweep with them. A
:class:`SweepOptions` used as a context manager keeps its executor (a process pool, a Dask
cluster) open across several sweeps.

Executor choice: ``--scheduler`` (an existing Dask cluster) > ``--dask`` (a ``LocalCluster`` of
``--workers`` workers) > ``--inline`` or ``--workers 1`` (this process) > local processes
(``--workers``, default: every CPU this process may use).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpbounds.sweep.cells import Cell
from dpbounds.sweep.engine import SweepResult, run_sweep
from dpbounds.sweep.executors import (
    MAX_WORKERS,
    DaskDistributed,
    Executor,
    InProcess,
    LocalProcesses,
    default_workers,
)
from dpbounds.sweep.store import ResultStore

__all__ = ["SweepOptions", "add_sweep_arguments"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WORKERS:
        shown = text if len(text) <= 20 else f"{text[:8]}... ({len(text)} characters)"
        raise argparse.ArgumentTypeError(f"must be an integer in [1, {MAX_WORKERS}], got "
                                         f"{shown!r}")
    return value


def _scheduler(text: str) -> str:
    if "://" not in text:
        raise argparse.ArgumentTypeError(f"must be an address like tcp://HOST:PORT, got {text!r}")
    return text


def add_sweep_arguments(parser: argparse.ArgumentParser,
                        store: str | os.PathLike[str] | None = None,
                        store_note: str | None = None) -> None:
    """Add the sweep options to ``parser``.

    ``store`` is the default store folder; ``store_note`` describes it in ``--help`` when the
    runner fills it in after parsing (``None`` and no note: nothing is stored by default).
    """
    g = parser.add_argument_group("sweep execution (results are stored and reused)")
    g.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                   help=f"worker processes (default: the CPUs available, here "
                        f"{default_workers()}); 1 runs in this process")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--inline", action="store_true", help="run every cell in this process")
    where.add_argument("--dask", action="store_true",
                       help="run on a Dask LocalCluster of --workers workers (needs the dist "
                            "extra)")
    where.add_argument("--scheduler", type=_scheduler, default=None, metavar="tcp://HOST:PORT",
                       help="run on an existing Dask cluster")
    g.add_argument("--store", type=Path, default=None if store is None else Path(store),
                   metavar="DIR",
                   help=f"results store (default: {store_note or store or 'none'})")
    g.add_argument("--no-store", action="store_true",
                   help="keep nothing on disk (no resume)")
    g.add_argument("--fresh", action="store_true",
                   help="recompute every cell, overwriting the stored ones")
    g.add_argument("--quiet", "-q", action="store_true", help="no progress output")


def sweep_argv(args: argparse.Namespace) -> list[str]:
    """The command-line words that reproduce the sweep options in ``args`` (to pass them on to
    a sub-command parsed by :func:`add_sweep_arguments`)."""
    argv: list[str] = []
    if getattr(args, "workers", None) is not None:
        argv += ["--workers", str(args.workers)]
    if getattr(args, "scheduler", None):
        argv += ["--scheduler", args.scheduler]
    if getattr(args, "store", None) is not None:
        argv += ["--store", str(args.store)]
    argv += [f"--{name.replace('_', '-')}" for name in ("inline", "dask", "no_store", "fresh",
                                                         "quiet") if getattr(args, name, False)]
    return argv


@dataclass
class SweepOptions:
    """Executor, store and progress settings of a runner (see the module docstring)."""

    executor: Executor = field(default_factory=InProcess)
    store: ResultStore | None = None
    progress: bool | str = "auto"
    fresh: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SweepOptions:
        """Settings from options added by :func:`add_sweep_arguments`."""
        workers = getattr(args, "workers", None)
        executor: Executor
        if getattr(args, "scheduler", None):
            executor = DaskDistributed(scheduler=args.scheduler)
        elif getattr(args, "dask", False):
            executor = DaskDistributed(workers=workers)
        elif getattr(args, "inline", False) or workers == 1:
            executor = InProcess()
        else:
            executor = LocalProcesses(workers)
        path = getattr(args, "store", None)
        store = None if getattr(args, "no_store", False) or path is None else ResultStore(path)
        return cls(executor, store, "off" if getattr(args, "quiet", False) else "auto",
                   bool(getattr(args, "fresh", False)))

    def run(self, cells: Iterable[Cell], desc: str = "sweep", **kwargs: Any) -> SweepResult:
        """:func:`~dpbounds.sweep.run_sweep` with these settings."""
        return run_sweep(cells, store=self.store, executor=self.executor,
                         progress=self.progress, desc=desc, fresh=self.fresh, **kwargs)

    def __enter__(self) -> SweepOptions:
        # started by the first sweep that has cells to compute; kept open until __exit__
        self.executor.persistent = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.executor.persistent = False
        if self.executor.started:
            self.executor.close()
