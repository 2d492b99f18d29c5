"""Self-registering results: a registry filled by the modules of one package.

A result's bound (:mod:`dpbounds.bounds`), verify study (:mod:`dpbounds.verify.studies`) and
audit setting (:mod:`dpbounds.audit.settings`) live in a module of their own that calls
:meth:`Registry.register` at import; :meth:`Registry.discover` imports every module of the
package (``pkgutil``, sub-packages included), so no central list names them. The order of
the registry is by each registration's ``rank``, then by name: it does not depend on the file
names or on the order in which the modules happen to be imported.

Example
-------
>>> reg = Registry("example", "dpbounds.nonexistent_package")
>>> _ = reg.register("b", 2, rank=20, module="m2")
>>> _ = reg.register("a", 1, rank=10, module="m1")
>>> list(reg.entries)
['a', 'b']
>>> reg.register("a", 3, rank=10, module="m3")
Traceback (most recent call last):
...
ValueError: example 'a' is registered twice: by module m1 and by module m3
"""

from __future__ import annotations

import difflib
import importlib
import math
import pkgutil
import re
import sys
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

__all__ = ["Registry", "plugin_code", "set_plugin_code", "unknown_name"]

#: () -> (the module-name prefixes of the loaded plug-ins' code, their digests), set by
#: :mod:`dpbounds.extend`, which loads the plug-ins (a lower layer, the verify planner's cost
#: memo, asks here without importing it)
_PLUGIN_CODE: list[Callable[[], tuple[tuple[str, ...], dict[str, str]]]] = []


def set_plugin_code(provider: Callable[[], tuple[tuple[str, ...], dict[str, str]]]) -> None:
    """Register what :func:`plugin_code` answers (the plug-in loader calls it once)."""
    _PLUGIN_CODE[:] = [provider]


def plugin_code() -> tuple[tuple[str, ...], dict[str, str]]:
    """``(prefixes, digests)``: the module-name prefixes of the plug-ins loaded in this process
    and the digests of their code (:func:`dpbounds.extend.plugin_digests`); ``((), {})``
    where the plug-in loader was never imported (then no plug-in is loaded)."""
    return _PLUGIN_CODE[0]() if _PLUGIN_CODE else ((), {})

T = TypeVar("T")


def unknown_name(what: str, name: object, choices: Iterable[str], listing: str, *,
                 label: str = "valid names") -> str:
    """The message for a name that is not registered: the closest names (difflib) and where
    the full list is, instead of the whole list (hundreds of characters).

    >>> print(unknown_name("bound", "clipped_sdg", ["clipped_sgd", "convex.x"], "bound --list"))
    unknown bound 'clipped_sdg'; did you mean 'clipped_sgd'? (valid names: bound --list)
    """
    pool = sorted(set(choices))
    text = str(name)
    close = difflib.get_close_matches(text, pool, n=3, cutoff=0.6)
    if not close:  # a prefix or a fragment ("tran", "nesterov") still finds its family
        low = text.lower()
        close = [c for c in pool if low and (low in c.lower() or c.lower() in low)][:3]
    quoted = [repr(c) for c in close]
    hint = ("; did you mean " + (", ".join(quoted[:-1]) + " or " if len(quoted) > 1 else "")
            + quoted[-1] + "?") if close else ""
    return f"unknown {what} {name!r}{hint} ({label}: {listing})"


class Registry(Generic[T]):
    """Named items registered by the modules of ``package``.

    Parameters
    ----------
    kind:
        What an item is, in words (used in error messages: ``"verify study"``).
    package:
        Dotted name of the package whose modules register the items.
    providers:
        Dotted names of modules outside ``package`` that register items too (a higher layer
        that the package may not import, see :mod:`dpbounds._layers`); :meth:`discover`
        imports them after the walk.

    Attributes
    ----------
    entries:
        The public ``dict`` name -> item, kept in ``(rank, name)`` order; the same object for
        the registry's lifetime, so a module may export it (``STUDIES``, ``AUDITS``).
    """

    def __init__(self, kind: str, package: str, providers: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.package = package
        self.providers = tuple(providers)
        self.entries: dict[str, T] = {}
        self._origin: dict[str, tuple[float, str]] = {}
        self._discovered = False

    def register(self, name: str, item: T, *, rank: float, module: str | None = None,
                 stacklevel: int = 1) -> T:
        """Add ``item`` under ``name`` and return it.

        ``module`` (default: the calling module, ``stacklevel`` frames up) is recorded: a
        second module registering the same name is a ``ValueError`` naming both; the same
        module registering it again (a reload) replaces the item.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if not isinstance(rank, (int, float)) or isinstance(rank, bool) or not math.isfinite(rank):
            raise ValueError(f"rank must be a finite number, got {rank!r}")
        if module is None:
            # the registering module, as warnings.warn finds its caller
            module = sys._getframe(stacklevel).f_globals.get("__name__", "?")
        old = self._origin.get(name)
        if old is not None and old[1] != module:
            raise ValueError(f"{self.kind} {name!r} is registered twice: by module {old[1]} "
                             f"and by module {module}")
        self._origin[name] = (float(rank), module)
        self.entries[name] = item
        self._reorder()
        return item

    def unregister(self, name: str) -> T:
        """Remove ``name`` (``KeyError`` if absent) and return its item."""
        self._origin.pop(name)
        return self.entries.pop(name)

    def module_of(self, name: str) -> str:
        """The module that registered ``name``."""
        return self._origin[name][1]

    def rank_of(self, name: str) -> float:
        """The rank ``name`` was registered with (its place in the listing)."""
        return self._origin[name][0]

    def discover(self) -> dict[str, T]:
        """Import every module of the package once, then the :attr:`providers` (each
        registers its items); return :attr:`entries`."""
        if not self._discovered:
            package = importlib.import_module(self.package)
            for info in pkgutil.walk_packages(package.__path__, prefix=self.package + "."):
                importlib.import_module(info.name)
            for name in self.providers:
                importlib.import_module(name)
            self._discovered = True
        return self.entries

    def find(self, key: Callable[[], str | None], hint: str = "") -> None:
        """Import the package's modules until ``key()``, the registered name a lookup
        resolves to (``None`` while it is not registered), names an item that a module of
        the package registered; then stop. Where that never happens, :meth:`discover` (so
        the caller's error can list every name, or a plug-in's name is checked as below).

        For a lookup by name: a bound's entry costs the import of its own module (0.02
        CPU-s for ``nonconvex.clipped_sgd``), not of all 38 (0.35, most of it sympy work at
        import). The modules sharing most words with ``hint`` (the name looked up, split at
        ``.`` and ``_``) are tried first, the rest in the walk's order. The item is the one
        discovery gives: a module of the package that registered the name is its only
        registrant (a second module is a ``ValueError`` at :meth:`discover`, which the test
        suite runs); a name registered from outside the package (a plug-in, a provider) is
        answered after a full :meth:`discover`, and so is every name once a plug-in has
        registered one (:meth:`foreign`): discovery refuses a plug-in reusing a built-in
        name, at any lookup, as before.
        """
        prefix = self.package + "."

        def settled() -> bool:
            name = key()
            return name is not None and self._origin.get(name, (0.0, ""))[1].startswith(prefix)

        if self._discovered:
            return
        if self.foreign():
            # a plug-in's item: the full discovery refuses a built-in name it reuses, at any
            # lookup, as when every lookup discovered
            self.discover()
            return
        if settled():
            return
        package = importlib.import_module(self.package)
        walk = [info.name for info in pkgutil.walk_packages(package.__path__, prefix=prefix)]
        words = set(re.split(r"[._]", hint.lower())) - {""}
        # a stable sort: ties keep the walk's order
        walk.sort(key=lambda m: -len(words & set(re.split(r"[._]", m[len(prefix):]))))
        for module in walk:
            importlib.import_module(module)
            if settled():
                return
        self.discover()

    def foreign(self) -> bool:
        """Whether an item was registered from outside the package and its
        :attr:`providers` (a plug-in's)."""
        prefix = self.package + "."
        # a snapshot (taken in one C call): another thread may be registering
        return any(not m.startswith(prefix) and m not in self.providers
                   for _, m in tuple(self._origin.values()))

    def _reorder(self) -> None:
        # in place: ``entries`` is exported by reference; a name set directly in ``entries``
        # (a test's monkeypatch) keeps its place after the registered ones
        def key(name: str) -> tuple[float, str]:
            return (self._origin.get(name, (math.inf, ""))[0], name)

        items = sorted(self.entries.items(), key=lambda kv: key(kv[0]))
        self.entries.clear()
        self.entries.update(items)
