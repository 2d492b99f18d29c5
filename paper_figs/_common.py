"""Shared plumbing of the paper-figure scripts: arguments, output folder, PNG + CSV writers.

Every script is a module with ``main(argv=None) -> list[Path]`` (the files it wrote). It
accepts ``--quick`` (tiny trials / horizons, seconds; used by the tests), ``--out DIR``
(default ``paper_figs/out``) and ``--seed``. Plots use the Agg backend (no display needed).
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["DEFAULT_OUT", "FigureRun", "mean_ci", "parse_args", "plt"]

DEFAULT_OUT = Path(__file__).resolve().parent / "out"


def parse_args(argv: Sequence[str] | None, description: str) -> argparse.Namespace:
    """``--quick``, ``--out``, ``--seed`` for one figure script."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true",
                   help="tiny trials/horizons (seconds); the default is the full setting")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    p.add_argument("--seed", type=int, default=20221, help="master seed")
    return p.parse_args(list(argv) if argv is not None else None)


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
    written: list[Path] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_args(cls, name: str, args: argparse.Namespace) -> FigureRun:
        return cls(name, args.out, args.quick)

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
