"""Plug-ins loaded in the test process for one test or module, then unloaded: importable as
``tests.plugin_state`` (shared by the extension tests)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from dpbounds import extend as ex


@contextlib.contextmanager
def plugins_loaded(paths: Sequence[str | Path]) -> Iterator[None]:
    """Load the plug-in files ``paths``; afterwards every registry (bounds, studies, audits,
    declared problems) and the extension module's tables are as they were, so later tests see
    the package's own results only."""
    from dpbounds.audit.settings._common import AUDIT_REGISTRY
    from dpbounds.bounds.registry import BOUND_REGISTRY
    from dpbounds.verify.problems import KIND_REGISTRY
    from dpbounds.verify.studies._common import STUDY_REGISTRY

    regs = (BOUND_REGISTRY, STUDY_REGISTRY, AUDIT_REGISTRY, KIND_REGISTRY)
    # the declared problems' registry has no package to discover: its entries as they are
    before = [set(r.entries if r is KIND_REGISTRY else r.discover()) for r in regs]
    tables = (ex._METHODS, ex._METHOD_THEOREM, ex._ORIGINS, ex._LOADED, ex._MODULE_ORIGINS,
              ex._DIGESTS)
    saved = [dict(t) for t in tables]
    flag = ex._ENTRY_POINTS_LOADED[0]
    ex.load_plugins(list(paths), entry_points=False)
    try:
        yield
    finally:
        for r, names in zip(regs, before):
            for name in set(r.entries) - names:
                r.unregister(name)
        for t, old in zip(tables, saved):
            t.clear()
            t.update(old)
        ex._ENTRY_POINTS_LOADED[0] = flag
