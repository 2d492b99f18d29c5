r"""Cells of a sweep and their keys.

A **cell** is one unit of work of a sweep: a module-level function, its parameters, a number
of trials and a seed. Its **key** names its result in a :class:`~dpbounds.sweep.store.ResultStore`:

.. math::

    \mathrm{key} = \mathrm{sha256}\bigl(\mathrm{canonical\ JSON}(\text{function}, \text{params},
    \text{trials}, \text{seed}, \text{package version}, \text{code fingerprint})\bigr)[:32].

Canonical JSON sorts mapping keys, writes floats with Python's shortest round-trip ``repr``
(so ``0.1``, ``np.float64(0.1)`` and ``float("0.1")`` give one key, while the next float up
gives another), turns tuples into lists and NumPy scalars into Python numbers; ``1`` and ``1.0``
stay different (the function may treat them differently). Nothing else enters the key: not the
executor, the worker, the order of the cells, nor ``group`` and ``cost``.

The **code fingerprint** is a SHA-256 over the ``*.py`` files of ``dpbounds`` and of the package
that defines the cell function (or its single file when it is not in a package), so a result
computed by other code is never reused silently. Pass ``code_version=""`` to
:func:`~dpbounds.sweep.run_sweep` to key on the package version alone.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import dpbounds

__all__ = ["Cell", "CellCall", "batched", "canonical", "cell_key", "code_fingerprint"]

#: Version of the key recipe; bumping it invalidates every stored key.
KEY_FORMAT = 1


@dataclass(frozen=True, eq=False)
class Cell:
    """One unit of work: ``fn(**params, trials=trials, seed=seed)`` returns a record.

    Parameters
    ----------
    fn
        A module-level function (importable by its module and qualified name, so that worker
        processes and Dask workers can run it). It returns a mapping from names to NumPy arrays
        or JSON values (numbers, strings, booleans, ``None``, lists and dicts of them). Build
        heavy objects (data sets, objectives) inside it from ``params``, cached per process.
    params
        Keyword arguments: ``None``, ``bool``, ``int``, ``float``, ``str``, NumPy scalars, and
        lists, tuples and ``str``-keyed dicts of those. They are part of the key.
    trials
        Number of independent trials the function batches (passed as ``trials=``); ``None``
        passes nothing. Part of the key.
    seed
        A non-negative int or a tuple of them (passed as ``seed=``); ``None`` passes nothing.
        Part of the key. Trial ``k`` must depend only on ``(seed, k)`` — the library's
        algorithms guarantee this — so a cell's result never depends on where or when it runs.
    group
        Cells with the same function and the same non-``None`` group run as one task on one
        worker (sharing a per-process cache); a :func:`batched` function gets them in one call.
        Not part of the key.
    cost
        Relative cost: pending cells start most expensive first. Not part of the key.

    Examples
    --------
    >>> from dpbounds.sweep import Cell
    >>> cell = Cell(np.linspace, {"start": 0.0, "stop": 1.0, "num": 3})
    >>> len(cell_key(cell, version="0.1.0", code=""))
    32
    """

    fn: Callable[..., Mapping[str, Any]]
    params: Mapping[str, Any] = field(default_factory=dict)
    trials: int | None = None
    seed: int | tuple[int, ...] | None = None
    group: Hashable | None = None
    cost: float = 1.0

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise ValueError(f"fn must be a callable, got {self.fn!r}")
        if not isinstance(self.params, Mapping):
            raise ValueError(f"params must be a mapping of keyword arguments, got "
                             f"{type(self.params).__name__}")
        if self.trials is not None and (isinstance(self.trials, bool)
                                        or not isinstance(self.trials, int | np.integer)
                                        or self.trials < 1):
            raise ValueError(f"trials must be None or an int >= 1, got {self.trials!r}")
        if self.seed is not None:
            seq = self.seed if isinstance(self.seed, tuple | list) else (self.seed,)
            if not seq or not all(isinstance(s, int | np.integer) and not isinstance(s, bool)
                                  and s >= 0 for s in seq):
                raise ValueError(f"seed must be None, a non-negative int or a non-empty tuple "
                                 f"of them, got {self.seed!r}")
        if not (isinstance(self.cost, int | float) and math.isfinite(self.cost)):
            raise ValueError(f"cost must be a finite number, got {self.cost!r}")
        for name in ("trials", "seed"):
            if name in self.params:
                raise ValueError(f"params must not contain {name!r}: pass it as Cell({name}=...)")
        canonical(dict(self.params), "params")  # fail early on values that have no key
        function_name(self.fn)  # a lambda or nested function: refused here, not at the run

    def call(self) -> CellCall:
        """The arguments a worker needs (the function is sent beside them)."""
        seed = tuple(int(s) for s in self.seed) if isinstance(self.seed, tuple | list) \
            else (None if self.seed is None else int(self.seed))
        return CellCall(dict(self.params), None if self.trials is None else int(self.trials), seed)


@dataclass(frozen=True)
class CellCall:
    """Parameters, trials and seed of one cell, as a :func:`batched` function receives them."""

    params: dict[str, Any]
    trials: int | None
    seed: int | tuple[int, ...] | None

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of a plain cell function."""
        kw = dict(self.params)
        if self.trials is not None:
            kw["trials"] = self.trials
        if self.seed is not None:
            kw["seed"] = self.seed
        return kw


def batched(fn: Callable[[list[CellCall]], list[Mapping[str, Any]]]) -> Callable:
    """Mark ``fn`` as taking a list of :class:`CellCall` and returning one record per call.

    A batched function receives all pending cells of one group at once (e.g. to run the trials
    of several configurations in one matrix product). Each record must not depend on which
    other cells share the call, or resumed sweeps would differ from uninterrupted ones.
    """
    fn.__sweep_batched__ = True  # type: ignore[attr-defined]
    return fn


def is_batched(fn: Callable[..., Any]) -> bool:
    return bool(getattr(fn, "__sweep_batched__", False))


def canonical(value: Any, where: str = "value") -> Any:
    """``value`` as plain JSON types, or ``ValueError`` naming ``where`` if it has no key.

    >>> canonical({"b": (1, np.float64(0.5)), "a": None})
    {'b': [1, 0.5], 'a': None}
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if isinstance(value, np.longdouble) and np.finfo(np.longdouble).eps < 2.0**-52:
            raise ValueError(f"{where}: long double {value!r} would be rounded; pass a float")
        return float(value)  # exact for float16/32/64
    if isinstance(value, list | tuple):
        return [canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: mapping keys must be str, got {k!r}")
            out[k] = canonical(v, f"{where}[{k!r}]")
        return out
    raise ValueError(f"{where}: {type(value).__name__} {value!r} cannot be part of a sweep key; "
                     f"use None, bool, int, float, str or lists/dicts of them")


def canonical_json(value: Any) -> str:
    """Canonical JSON text of ``value`` (sorted keys, no spaces, ``repr`` floats)."""
    return json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=True)


def function_name(fn: Callable[..., Any]) -> str:
    """``"module:qualname"`` of a module-level function (``__main__`` resolved to its module).

    >>> function_name(np.linspace)
    'numpy:linspace'
    """
    qualname = getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    if not qualname or not module or "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(f"fn must be a module-level function (workers import it by name), "
                         f"got {fn!r}; pass varying values through params")
    if module in ("__main__", "__mp_main__"):
        main = sys.modules.get(module) or sys.modules["__main__"]
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name:
            module = spec.name
        elif getattr(main, "__file__", None):
            module = Path(str(main.__file__)).stem
    return f"{module}:{qualname}"


def cell_key(cell: Cell, version: str, code: str) -> str:
    """The 32-hex-digit key of ``cell`` under package ``version`` and code fingerprint ``code``.

    >>> k1 = cell_key(Cell(np.linspace, {"num": 3}), "0.1.0", "")
    >>> k1 == cell_key(Cell(np.linspace, {"num": np.int64(3)}), "0.1.0", "")
    True
    >>> k1 == cell_key(Cell(np.linspace, {"num": 3}), "0.1.1", "")
    False
    """
    call = cell.call()
    payload = {"format": KEY_FORMAT, "function": function_name(cell.fn), "params": call.params,
               "trials": call.trials, "seed": call.seed, "version": version, "code": code}
    # the normal stream the runs draw from (DPBOUNDS_NORMALS): a store written with NumPy's
    # stream served its cells to a run asking for the fast one, whose noise checks came from
    # the other stream (fuzz round 10); the default adds nothing (existing keys stay valid)
    normals = os.environ.get("DPBOUNDS_NORMALS", "numpy")
    if normals != "numpy":
        payload["normals"] = normals
    return hashlib.sha256(canonical_json(payload).encode("ascii")).hexdigest()[:32]


@functools.cache
def _digest_py_files(root: str) -> str:
    """SHA-256 over the relative paths and bytes of the ``*.py`` files of the package at
    ``root`` (its sub-packages included: folders with an ``__init__.py``; output folders such as
    ``paper_figs/out``, however large, are not even listed), or of the single file ``root``."""
    base = Path(root)
    if base.is_file():
        files = [(base.name, base)]
    else:
        files = []
        for folder, dirs, names in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__"))
                             and (Path(folder) / d / "__init__.py").is_file())
            files += [(str((Path(folder) / n).relative_to(base)), Path(folder) / n)
                      for n in names if n.endswith(".py")]
        files.sort()
    h = hashlib.sha256()
    for rel, p in files:
        h.update(rel.encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _source_root(fn: Callable[..., Any]) -> str | None:
    """The package directory (or the single file) that defines ``fn``."""
    return _module_root(getattr(fn, "__module__", ""))


def module_digest(module: str) -> str | None:
    """SHA-256 over the ``*.py`` files of the top-level package of the imported ``module`` (or
    its single file), as this process first read them (cached, as dpbounds' own digest);
    ``None`` when it has no source file (not imported, a namespace or built-in module)."""
    root = _module_root(module)
    return None if root is None else _digest_py_files(root)


def _module_root(name: str) -> str | None:
    """The package directory (or the single file) of the imported module ``name``."""
    module = sys.modules.get(name, None)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    spec = getattr(module, "__spec__", None)
    name = spec.name if spec is not None and spec.name else getattr(module, "__name__", "")
    if name not in ("__main__", "__mp_main__"):
        top = sys.modules.get(name.split(".")[0])
        top_file = getattr(top, "__file__", None)
        if top_file and Path(top_file).name == "__init__.py":
            return str(Path(top_file).resolve().parent)
    return str(Path(file).resolve())


def code_digests(fn: Callable[..., Any]) -> tuple[str, str | None]:
    """SHA-256 of the ``*.py`` files of ``dpbounds`` and of the package (or file) defining
    ``fn`` (``None`` if ``fn`` has no source file)."""
    root = _source_root(fn)
    return (_digest_py_files(str(Path(dpbounds.__file__).resolve().parent)),
            None if root is None else _digest_py_files(root))


def code_fingerprint(fn: Callable[..., Any]) -> str:
    """16 hex digits of SHA-256 over the sources of ``dpbounds`` and of ``fn``'s package.

    Only ``*.py`` files count (output folders inside a package, such as ``paper_figs/out``,
    do not); edit any of them and every key changes.
    """
    parts = [d for d in code_digests(fn) if d is not None]
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:16]
