"""Cell functions for the sweep-engine tests (importable by worker processes as
``tests.sweep_cells``; a function defined inside a test module is not, under
``--import-mode=importlib``)."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from dpbounds.sweep import CellCall, batched


def noisy_walk(scale: float, steps: int, trials: int, seed: tuple[int, ...]) -> dict[str, Any]:
    """A Gaussian random walk per trial; trial k depends only on (seed, k)."""
    seed = seed if isinstance(seed, tuple) else (seed,)
    steps_ = np.stack([np.random.default_rng([*seed, k]).normal(0.0, scale, size=steps)
                       for k in range(trials)])
    trace = np.cumsum(steps_, axis=1)
    # a reduction and a transcendental, so that any change in the arithmetic shows
    return {"trace": trace, "final": trace[:, -1].copy(),
            "mean_log1p": float(np.mean(np.log1p(np.abs(trace)))),
            "scale": scale, "tag": f"walk{steps}"}


@batched
def noisy_walk_batch(calls: list[CellCall]) -> list[dict[str, Any]]:
    """The same records as :func:`noisy_walk`, computed for a group of cells in one call."""
    return [noisy_walk(**c.kwargs()) for c in calls]


def logged_walk(index: int, delay: float, log: str, trials: int,
                seed: tuple[int, ...]) -> dict[str, Any]:
    """:func:`noisy_walk` that appends ``index`` to ``log`` when it starts and then sleeps."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{index}\n".encode())
    finally:
        os.close(fd)
    time.sleep(delay)
    return noisy_walk(1.0 + index, 50, trials, seed)


def fail_at(index: int, bad: int) -> dict[str, Any]:
    """Raise for ``index == bad``."""
    if index == bad:
        raise ValueError(f"cell {index} fails on purpose")
    return {"index": index}


def bad_record(kind: str) -> Any:
    """Records the store must refuse."""
    if kind == "object":
        return {"x": np.array([object()])}
    if kind == "not-a-mapping":
        return [1, 2]
    return {"x": {1, 2}}


def nested(n: int) -> dict[str, Any]:
    """A cell that runs a sweep itself (must run in-process, whatever the outer executor)."""
    from dpbounds.sweep import Cell, run_sweep
    from dpbounds.sweep.executors import LocalProcesses

    inner = run_sweep([Cell(fail_at, {"index": i, "bad": -1}) for i in range(n)],
                      executor=LocalProcesses(2), progress="lines")
    return {"indices": [r["index"] for r in inner], "pid": os.getpid(),
            "inner_workers": [i.worker for i in inner.info]}


def mixed_types(x: float) -> dict[str, Any]:
    """A record with tuples and NumPy scalars, which the store normalises."""
    return {"t": (1, x), "f64": np.float64(x), "f32": np.float32(x), "z": np.int64(3),
            "a": np.arange(2)}
