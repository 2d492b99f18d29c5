"""Paper figure and table scripts of dpbounds (one module per figure; see README.md).

``python -m paper_figs`` regenerates everything into ``paper_figs/out/`` (``--quick`` for a
seconds-long smoke run). Each module has ``main(argv=None) -> list[Path]``.
"""

from __future__ import annotations

import os

# Many small GEMMs (blocked GLM passes over trials x block) are up to ~50x slower with a
# multi-threaded OpenBLAS on a shared 2-core machine; one thread is also the fair setting for
# wall times. Only effective when set before NumPy is imported (command-line use).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

#: Module names in the order ``python -m paper_figs`` runs them.
SCRIPTS: tuple[str, ...] = (
    "kuru_fig1",
    "kuru_fig2",
    "kuru_fig3",
    "lee_kifer_table1",
    "lee_kifer_dpagd",
    "tran_cutkosky_bounds",
    "tran_cutkosky_sim",
    "yang_nsgd",
    "kamath_erm",
)

__all__ = ["SCRIPTS"]
