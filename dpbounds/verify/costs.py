r"""The planner's measured cost model, kept between plans: FFTW's *wisdom* for ``verify``.

A full study prices its candidate grids with a cost model fitted to probe runs of the
study's own algorithm (:func:`dpbounds.verify.regimes.seconds_per_evaluation`; over ``d``
also :func:`~dpbounds.verify.regimes.cost_over_d`). The probes are most of what planning
costs: Yang et al.'s ``clipped_sgd`` spent ~4.3 of its 6-11 CPU-s of planning on them,
against 22-32 CPU-s of estimated runs (issue 36 item 4 asks for planning within 10% of
that). Their answer depends on the host and on the code, not on the run: a
:class:`CostMemo` keeps each fit under a key naming everything it depends on, so the next
plan of the same study on the same host reads it instead of probing again.

The key (a SHA-256 of a canonical JSON text) holds:

* what was fitted (``"probe_fit"``: ``(a, b, c)`` per step, per evaluation and per run;
  ``"power_of_d"``: the per-step cost's power of ``d``; ``"trace_seconds"``: a recorded
  iterate's full-sample gradient per sample) and the arguments of the fit (the study, the
  problem, the probed point, the trials, the largest point priced);
* :data:`COST_MODEL_VERSION` (raised whenever the probes or the model change) and the
  package's version;
* :func:`code_stamp`: the newest modification time of the package's ``.py`` files when it
  was imported (so an edited algorithm is probed again); for a plug-in's study or problem
  also the digests of the loaded plug-ins (:func:`dpbounds.extend.plugin_digests`, taken
  when each was loaded; added by :func:`dpbounds.verify.regimes.memo_parts`). A study or
  problem whose code is neither the package's nor a loaded plug-in's (defined in a
  notebook, say) has no key: it is probed every time;
* :func:`host_signature`: the CPU (model name, family, model, SIMD level, CPU count and the
  CPUs this process may use), the Python, NumPy, SciPy, numba, mpmath and dp-accounting
  versions and the environment variables that change the code paths (NumPy's and numba's
  CPU features, BLAS thread counts, the package's ``DPBOUNDS_NORMALS`` and
  ``DPBOUNDS_KERNELS``; never a secret such as ``DPBOUNDS_STORE_KEY``). Not in it:
  a cgroup's CPU quota and the host's load: ``dpbounds verify`` drops the remembered fits of
  a plan whose runs were more than 3x off its estimate (:meth:`CostMemo.forget_remembered`);
  to probe again by hand, delete the file or plan with ``--cost-cache off``.

A memo changes which probe runs happen, never what a point runs: a plan read from the memo
is the plan that the remembered fit gives (``tests/verify/test_cost_memo.py`` compares a
plan made with probes and one made from their memo, exactly). A remembered fit was timed on
an earlier occasion: it is a measurement of the same code on the same host, as reproducible
as a new one (the probes' own timing noise moves a new fit by more than that).

Nothing is written here (the package has no side effects; it reads ``/proc/cpuinfo`` and
the times of its own files): :meth:`CostMemo.to_json` and :meth:`CostMemo.from_json`
convert, and ``dpbounds verify --cost-cache FILE`` keeps the memo in a file (default
``$XDG_CACHE_HOME/dpbounds/verify-costs.json``; ``off`` keeps none).

Example
-------
>>> from dpbounds.verify.costs import CostMemo
>>> memo = CostMemo()
>>> key = memo.key("probe_fit", theorem="yang.sgd", point={"N": 32, "T": 200}, trials=4)
>>> memo.get(key) is None
True
>>> memo.put(key, {"fit": [1e-6, 1e-9, 0.2]}, what={"theorem": "yang.sgd"})
>>> memo.get(key)["fit"], memo.hits, memo.misses
([1e-06, 1e-09, 0.2], 0, 1)
>>> CostMemo.from_json(memo.to_json()).get(key)["fit"]
[1e-06, 1e-09, 0.2]
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["COST_MODEL_VERSION", "FILE_VERSION", "MEMO_FORMAT", "CostMemo", "code_stamp",
           "finite_number", "host_signature"]

#: raised whenever the probe runs or the cost model change: part of every key, so an entry
#: of another model is never read (it stays in the file for the package that wrote it)
COST_MODEL_VERSION = 1
#: the ``format`` field of :meth:`CostMemo.to_json`
MEMO_FORMAT = "dpbounds-verify-costs"
#: the layout of :meth:`CostMemo.to_json` (a file of another layout is not read or written)
FILE_VERSION = 1
#: entries a memo keeps (the newest; a host keeps ~10 per study and variable)
MAX_ENTRIES = 2000
#: environment variables that change the compiled or BLAS code paths, hence the costs: an
#: explicit list (never every ``DPBOUNDS_*`` variable: ``DPBOUNDS_STORE_KEY`` is a secret,
#: which a key hashed with it would let a reader of the file test guesses against)
_ENV_KEYS = ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "NUMBA_CPU_NAME",
             "NUMBA_CPU_FEATURES", "NUMBA_DISABLE_JIT", "OPENBLAS_NUM_THREADS",
             "OMP_NUM_THREADS", "MKL_NUM_THREADS", "DPBOUNDS_NORMALS", "DPBOUNDS_KERNELS",
             "MPMATH_NOGMPY")


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of ``/proc/cpuinfo`` that name the CPU (empty elsewhere)."""
    out: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the first processor only
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model", "stepping", "flags"):
                    out[key] = value.strip()
    except OSError:
        pass
    flags = set(out.pop("flags", "").split())
    # the SIMD level decides NumPy's and numba's kernels (AVX-512 runs exp/log 2-7x faster)
    out["simd"] = ",".join(f for f in ("avx512f", "avx2", "fma", "sse4_2") if f in flags)
    return out


@functools.lru_cache(maxsize=1)
def host_signature() -> dict[str, str]:
    """What the cost of a run depends on besides its code: the CPU, the interpreter, NumPy
    and numba, and the environment variables that switch their code paths."""
    from importlib import metadata

    import numpy as np

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return ""

    try:
        usable = str(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        usable = ""
    sig = dict(_cpuinfo(), machine=platform.machine(), processor=platform.processor(),
               cpus=str(os.cpu_count()), usable_cpus=usable,
               python=".".join(map(str, sys.version_info[:3])), numpy=np.__version__,
               numba=version("numba"), scipy=version("scipy"), mpmath=version("mpmath"),
               # mpmath's integers (gmpy2 where installed: the accountants' exact tables run
               # ~2x faster); read without importing mpmath
               gmpy2=version("gmpy2"), dp_accounting=version("dp-accounting"))
    sig.update({k: os.environ[k] for k in _ENV_KEYS if k in os.environ})
    return sig


def code_stamp() -> int:
    """The newest modification time (ns) of the package's ``.py`` files when this module was
    imported (with the studies: a file edited after that does not describe the code that
    runs); an edit makes every remembered fit stale."""
    return _PACKAGE_STAMP


def _package_stamp() -> int:
    root = Path(__file__).resolve().parent.parent
    newest = 0
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                try:
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
                except OSError:
                    pass
    return newest


#: ~1 ms (~250 ``stat`` calls), once per process
_PACKAGE_STAMP = _package_stamp()


def _canonical(obj: Any) -> Any:
    """``obj`` with mappings sorted and numbers as floats (``32`` and ``32.0`` one key)."""
    if isinstance(obj, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    try:
        x = float(obj)
    except (TypeError, ValueError, OverflowError):  # an integer too large for a float
        return repr(obj)
    return x if math.isfinite(x) else repr(x)  # the file is strict JSON


class CostMemo:
    """Fits of the planner's cost model by key (module docstring); JSON-able.

    Attributes
    ----------
    entries:
        ``key -> {"value": ..., "what": ..., "saved": unix time}``.
    hits, misses:
        Keys whose remembered value was used, and keys probed (none remembered, or one that
        failed its check), since the memo was made or :meth:`reset_counts` (each key counted
        once: a plan asks for the same fit at every point it prices).
    changed:
        Whether :meth:`put` added an entry since it was made or loaded.
    """

    def __init__(self, entries: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        if entries is not None and not (isinstance(entries, Mapping) and all(
                isinstance(v, Mapping) for v in entries.values())):
            raise ValueError("entries must be a mapping of key -> entry mapping or None, got "
                             f"{type(entries).__name__}")
        self.entries: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (entries or {}).items()}
        self.hits = 0
        self.misses = 0
        self.changed = False
        self._asked: set[str] = set()
        self._remembered: set[str] = set()  # the keys counted in hits
        self._forgotten: set[str] = set()  # dropped: a merge does not bring them back

    def reset_counts(self) -> None:
        """Start counting :attr:`hits` and :attr:`misses` anew (a new plan)."""
        self.hits = self.misses = 0
        self._asked.clear()
        self._remembered.clear()

    def forget_remembered(self) -> int:
        """Drop the entries counted in :attr:`hits` (since :meth:`reset_counts`): a plan made
        from them was far off its runs, so they are probed again next time; also when a
        file that still holds them is merged in. Returns how many were dropped."""
        for key in self._remembered:
            self.entries.pop(key, None)
        self._forgotten |= self._remembered
        n = len(self._remembered)
        self._remembered = set()
        self.changed = self.changed or n > 0
        return n

    def key(self, kind: str, **parts: Any) -> str:
        """The key of a fit of ``kind`` with arguments ``parts`` (module docstring: the
        model's and package's versions, :func:`code_stamp` and :func:`host_signature` are
        added here)."""
        from dpbounds import __version__

        text = json.dumps(_canonical(dict(
            kind=kind, model=COST_MODEL_VERSION, package=__version__, code=code_stamp(),
            host=host_signature(), **parts)), sort_keys=True, allow_nan=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str, check: Callable[[Any], Any] | None = None) -> Any:
        """The value remembered under ``key``, passed through ``check`` (which returns it,
        parsed, or ``None`` for a value it refuses), else ``None``; counted in :attr:`hits`
        or, when ``None``, in :attr:`misses` (the caller then probes)."""
        entry = self.entries.get(key)
        value = None if entry is None else entry["value"]
        if value is not None and check is not None:
            value = check(value)
        if key not in self._asked:
            self._asked.add(key)
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
                self._remembered.add(key)
        return value

    def put(self, key: str, value: Any, what: Mapping[str, Any] | None = None) -> None:
        """Remember ``value`` (JSON-able) under ``key``; ``what`` says what it is (kept for a
        reader of the file, never read back; NumPy numbers become floats)."""
        self.entries[key] = dict(value=value, what=_canonical(dict(what or {})),
                                 saved=time.time())
        self.changed = True

    def merge(self, other: CostMemo) -> None:
        """Add ``other``'s entries that this memo lacks (two processes that planned at once
        each keep the other's fits); where both hold a key, this memo's entry stays."""
        for k, v in other.entries.items():
            if k not in self._forgotten:
                self.entries.setdefault(k, v)

    def to_json(self) -> dict[str, Any]:
        """``{"format", "version", "entries"}``, the newest :data:`MAX_ENTRIES` entries."""
        newest = sorted(self.entries.items(), key=lambda kv: -float(kv[1].get("saved", 0.0)))
        return dict(format=MEMO_FORMAT, version=FILE_VERSION,
                    entries=dict(newest[:MAX_ENTRIES]))

    @classmethod
    def from_json(cls, obj: Any) -> CostMemo:
        """The memo of :meth:`to_json`'s output; ``ValueError`` naming what is wrong with a
        text that is not one, or one of another layout (:data:`FILE_VERSION`). Entries of
        another cost model are kept (their keys differ from this model's)."""
        if not isinstance(obj, Mapping) or obj.get("format") != MEMO_FORMAT:
            raise ValueError(f"a cost memo is a JSON object with format {MEMO_FORMAT!r}")
        if obj.get("version") != FILE_VERSION:
            raise ValueError(f"a cost memo of layout {obj.get('version')!r}, not "
                             f"{FILE_VERSION} (written by another version of dpbounds)")
        entries = obj.get("entries")
        if not isinstance(entries, Mapping):
            raise ValueError("a cost memo's 'entries' must be an object")
        good: dict[str, dict[str, Any]] = {}
        for k, v in entries.items():
            if not (isinstance(k, str) and len(k) == 64 and isinstance(v, Mapping)
                    and "value" in v and finite_number(v.get("saved"))):
                raise ValueError(f"a cost memo's entry {str(k)[:16]!r} is malformed")
            good[k] = dict(v)
        return cls(good)


def finite_number(x: Any) -> bool:
    """Whether ``x`` read from a memo is a finite number (``bool`` is not one; nor is an
    integer too large for a float)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer of hundreds of digits
        return False
