"""Paper figure and table scripts of dpbounds (one module per figure; see README.md).

``python -m paper_figs`` regenerates everything into ``paper_figs/out/`` (``--quick`` for a
seconds-long smoke run). Each module has ``main(argv=None) -> list[Path]``.
"""

from __future__ import annotations

import os
import pkgutil

# Many small GEMMs (blocked GLM passes over trials x block) are up to ~50x slower with a
# multi-threaded OpenBLAS on a shared 2-core machine; one thread is also the fair setting for
# wall times. Only effective when set before NumPy is imported (command-line use).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

#: Every figure script: each public module of this package, alphabetically (no list to edit: a
#: new ``paper_figs/<name>.py`` with ``main`` is run by ``python -m paper_figs`` and the tests).
SCRIPTS: tuple[str, ...] = tuple(sorted(
    m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))

__all__ = ["SCRIPTS"]
