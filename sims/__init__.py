"""Simulation studies: dpbounds' algorithms run against the bounds, with verdict tables.

Each study module has ``run(quick=True, seed=0) -> list[Verdict]`` (no I/O; every verdict
compares a Monte Carlo estimate with an independent oracle — a closed form, a bound, a
published number) and ``main()``, which prints the table. ``python -m sims`` runs them all
(``--full`` for the large-sample setting).
"""

from __future__ import annotations

import os

# Many small GEMMs (blocked GLM passes over trials x block) are up to ~50x slower with a
# multi-threaded OpenBLAS on a shared 2-core machine; one thread is also the fair setting for
# wall times. Only effective when set before NumPy is imported (command-line use).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from sims._verdict import Verdict, format_table  # noqa: E402

#: Study modules in the order ``python -m sims`` runs them.
STUDIES: tuple[str, ...] = (
    "heavy_ball_stationary",
    "heavy_ball_lmi",
    "nag_recursion",
    "tree_noise",
    "tran_cutkosky_gradnorm",
    "nsgd_floor",
)

__all__ = ["STUDIES", "Verdict", "format_table"]
