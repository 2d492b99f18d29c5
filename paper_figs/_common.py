"""Shared plumbing of the paper-figure scripts: arguments, output folder, sweeps, PNG + CSV.

Every script is a module with ``main(argv=None) -> list[Path]`` (the files it wrote). It
accepts ``--quick`` (tiny trials / horizons, seconds; used by the tests), ``--paper`` (the
paper's full setting where the default is reduced), ``--out DIR`` (default ``paper_figs/out``),
``--seed`` and the sweep options of :func:`dpbounds.sweep.add_sweep_arguments` (``--workers``,
``--dask``, ``--scheduler``, ``--store`` — default ``OUT/store`` —, ``--fresh``, ``--quiet``).

The expensive part of a script is a grid of cells run by :meth:`FigureRun.sweep`: each finished
cell is stored, so a killed run resumes where it stopped and a re-run only redraws. Plots use
the Agg backend (no display needed).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from dpbounds.sweep import Cell, SweepOptions, SweepResult, add_sweep_arguments  # noqa: E402

__all__ = ["DEFAULT_OUT", "Cell", "FigureRun", "add_figure_arguments", "mean_ci", "parse_args",
           "plt", "settle_args", "shared_sweep_options"]

DEFAULT_OUT = Path(__file__).resolve().parent / "out"


# Set by ``python -m paper_figs`` so that all scripts share one worker pool / Dask cluster
# (each pool costs ~2 s of imports per worker).
_SHARED: SweepOptions | None = None


@contextlib.contextmanager
def shared_sweep_options(options: SweepOptions) -> Iterator[SweepOptions]:
    """Make every :meth:`FigureRun.from_args` in the block use ``options`` (and its executor,
    started once and closed at the end)."""
    global _SHARED
    previous, _SHARED = _SHARED, options
    try:
        with options:
            yield options
    finally:
        _SHARED = previous


def add_figure_arguments(p: argparse.ArgumentParser) -> None:
    """``--quick``, ``--paper``, ``--out`` and the sweep options (``python -m paper_figs``
    adds the same, so that it can pass them through)."""
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="tiny trials/horizons (seconds; in this process unless --workers, "
                           "--dask or --scheduler is given); the default is the full setting")
    mode.add_argument("--paper", action="store_true",
                      help="the paper's full setting where the default is reduced (slow)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    add_sweep_arguments(p, store=None, store_note="OUT/store")


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    """Defaults that depend on other options: the store is ``OUT/store``; ``--quick`` runs in
    this process unless an executor is named (its cells take milliseconds, while each worker
    process spends seconds importing NumPy, SciPy, SymPy and dpbounds)."""
    if args.store is None:
        args.store = Path(args.out) / "store"
    if args.quick and args.workers is None and not (args.dask or args.scheduler):
        args.inline = True
    return args


def parse_args(argv: Sequence[str] | None, description: str,
               seed: int = 20221) -> argparse.Namespace:
    """The options of one figure script; ``seed`` is its default master seed."""
    p = argparse.ArgumentParser(description=description)
    add_figure_arguments(p)
    p.add_argument("--seed", type=int, default=seed, help="master seed (default: %(default)s)")
    return settle_args(p.parse_args(list(argv) if argv is not None else None))


def mean_ci(values: Any, axis: int = 0, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
    """Mean and ``z`` standard errors along ``axis`` (0 standard error for one sample)."""
    v = np.asarray(values, dtype=float)
    mean = v.mean(axis=axis)
    k = v.shape[axis]
    se = v.std(axis=axis, ddof=1) / math.sqrt(k) if k > 1 else np.zeros_like(mean)
    return mean, z * se


@dataclass
class FigureRun:
    """Output helper of one script run: knows the folder, the file stem and what was written."""

    name: str
    out: Path
    quick: bool = False
    options: SweepOptions = field(default_factory=SweepOptions)
    written: list[Path] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_args(cls, name: str, args: argparse.Namespace) -> FigureRun:
        return cls(name, args.out, args.quick, _SHARED or SweepOptions.from_args(args))

    def sweep(self, cells: Sequence[Cell]) -> SweepResult:
        """Run ``cells`` with the script's sweep options (stored cells are reused)."""
        result = self.options.run(cells, desc=self.name)
        if result.reused and self.options.store is not None:
            print(f"[{self.name}] {result.reused} of {result.reused + result.computed} cells "
                  f"reused from {self.options.store.path}")
        return result

    def path(self, suffix: str, tag: str = "") -> Path:
        stem = self.name + (f"_{tag}" if tag else "")
        return self.out / f"{stem}{suffix}"

    def save_figure(self, fig: Any, caption: str, tag: str = "") -> Path:
        """Save ``fig`` as PNG with the provenance ``caption`` printed under the axes."""
        fig.text(0.01, 0.005, caption, ha="left", va="bottom", fontsize=7, wrap=True,
                 color="0.25")
        path = self.path(".png", tag)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        self.written.append(path)
        return path

    def write_csv(self, rows: Iterable[dict[str, Any]], tag: str = "") -> Path:
        """Write a list of dict rows (the plotted numbers) as CSV."""
        rows = list(rows)
        path = self.path(".csv", tag)
        keys: list[str] = []
        for r in rows:
            keys.extend(k for k in r if k not in keys)
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({k: _fmt(r.get(k, "")) for k in keys})
        self.written.append(path)
        return path

    def done(self) -> list[Path]:
        print(f"[{self.name}] wrote {len(self.written)} files to {self.out} "
              f"in {time.perf_counter() - self.started:.1f} s")
        return self.written


def _fmt(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return f"{float(v):.10g}"
    return v
