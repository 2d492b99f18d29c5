"""Sweeps: grids of cells computed on any executor, stored as they finish, resumed after a kill.

One engine for paper figures, simulation studies, benchmarks, scaling studies and audits:

* a **cell** (:class:`Cell`) is a module-level function, its parameters, a number of trials and
  a seed; its key (:func:`cell_key`) hashes those with the package version and a fingerprint of
  the code;
* :func:`run_sweep` computes the cells missing from a :class:`ResultStore`, writes each one
  atomically the moment it finishes (so ``kill -9`` loses only the cells in flight), shows a
  progress bar (:mod:`dpbounds._progress`) and returns the records in cell order;
* executors (:mod:`dpbounds.sweep.executors`), each a ``concurrent.futures.Executor``:
  :class:`InProcess`, :class:`LocalProcesses`, :class:`DaskDistributed` (a ``LocalCluster`` or
  ``tcp://HOST:PORT``, through ``Client.get_executor()``), or any plain one — bit-identical
  records for the same seeds whichever runs them;
* :mod:`dpbounds.sweep.options` gives runners the shared ``--workers/--dask/--scheduler/--store/
  --fresh/--quiet`` options.

The store format (one JSON + one NPZ file per cell) and how to open it with pandas are in
:mod:`dpbounds.sweep.store` and ``docs/sweeps.md``.

Examples
--------
>>> import numpy as np, tempfile
>>> from dpbounds.sweep import Cell, run_sweep
>>> def grid(num):
...     return {"x": np.linspace(0.0, 1.0, num)}
>>> store = tempfile.mkdtemp()
>>> first = run_sweep([Cell(grid, {"num": n}) for n in (2, 3)], store=store, progress=False)
>>> again = run_sweep([Cell(grid, {"num": n}) for n in (2, 3)], store=store, progress=False)
>>> first.computed, again.reused, again[1]["x"].tolist()
(2, 2, [0.0, 0.5, 1.0])
"""

from dpbounds.sweep.cells import Cell, CellCall, batched, canonical, cell_key, code_fingerprint
from dpbounds.sweep.engine import CellInfo, SweepError, SweepResult, run_sweep
from dpbounds.sweep.executors import DaskDistributed, Executor, InProcess, LocalProcesses
from dpbounds.sweep.options import SweepOptions, add_sweep_arguments
from dpbounds.sweep.store import ResultStore

__all__ = [
    "Cell",
    "CellCall",
    "CellInfo",
    "DaskDistributed",
    "Executor",
    "InProcess",
    "LocalProcesses",
    "ResultStore",
    "SweepError",
    "SweepOptions",
    "SweepResult",
    "add_sweep_arguments",
    "batched",
    "canonical",
    "cell_key",
    "code_fingerprint",
    "run_sweep",
]
