"""Test-suite settings shared by every folder.

Hypothesis runs derandomized by default, so CI and a fresh clone test the same examples (a
property failure is then reproducible, never a one-off red build); set
``HYPOTHESIS_PROFILE=explore`` to draw new random examples, as when hunting for defects (the
examples it finds go into ``tests/test_fuzz_regressions.py``).
"""

from __future__ import annotations

import os
import sys

# Under pytest-xdist (the README's `-n auto`) every core already runs a worker: a BLAS thread
# pool per worker would oversubscribe them. Set before NumPy is first imported (this file is
# imported before any test module); an explicit setting in the environment wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# `dpbounds verify` keeps its planner's cost model in the user's cache folder by default: the
# suite's verify commands (here and in the subprocesses they start) keep none, so one test's
# probe fit never decides another test's plan and a test run writes nothing under $HOME
# (tests of the cache name their own file with --cost-cache)
os.environ["DPBOUNDS_COST_CACHE"] = "off"


def _checkcache_without_gc() -> None:
    """``linecache.checkcache`` with the cyclic garbage collector paused while it scans.

    sympy's ``lambdify`` registers each compiled function's source in ``linecache`` and
    removes the entry in a ``weakref.finalize`` when the function is collected. ``doctest``
    (through ``pdb``) calls ``checkcache``, which lists the cache's keys and then reads each;
    a collection inside that loop (its ``os.stat`` calls allocate) removed an entry already
    listed: ``KeyError: '<lambdifygenerated-1021>'`` in a doctest of ``dpbounds.bounds.theorem``
    (1 run in the CI replica of stop 72, a CPython/sympy race, not dpbounds')."""
    import gc
    import linecache

    original = linecache.checkcache
    if getattr(original, "_without_gc", False):
        return

    def checkcache(filename=None):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return original(filename)
        finally:
            if enabled:
                gc.enable()

    checkcache._without_gc = True  # type: ignore[attr-defined]
    linecache.checkcache = checkcache


_checkcache_without_gc()


def pytest_configure(config) -> None:
    """Let the suite cache bytecode even where the environment says not to.

    Some hosts (CI images among them) set ``PYTHONDONTWRITEBYTECODE=1``: then every xdist worker
    re-runs pytest's assertion rewriting of all ~200 test modules, and each of the suite's
    ~150 fresh processes (CLI, plugin, notebook and figure tests) recompiles the editable
    package from source, 0.7 CPU-s each. Unset here, in the controller before xdist starts its
    workers, so they and every subprocess inherit it (they write ``__pycache__`` as a default
    Python does; git ignores it).
    """
    if not hasattr(config, "workerinput"):
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the dev extra is not installed: the property tests skip themselves
    pass
else:
    # no per-example deadline and no too-slow health check: both are timing assertions, and on
    # a loaded 2-core host (CI runs one xdist worker per core) a slow example fails them (a
    # property of test_cli_lazy failed under load and passed alone); speed is measured in
    # bench/, not asserted in tests
    _untimed = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("reproducible", derandomize=True, **_untimed)
    settings.register_profile("explore", derandomize=False, **_untimed)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "reproducible"))
