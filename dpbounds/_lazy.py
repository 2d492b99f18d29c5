"""A package whose public names are imported on first use (PEP 562), written once.

``dpbounds.bounds`` and ``dpbounds.privacy`` list their public names in a table, name ->
(submodule, attribute), and call :func:`lazy_package` at the end of their ``__init__``:
importing a light submodule (``dpbounds.privacy.limits``, ``dpbounds.bounds.problem``) then
no longer runs every submodule's imports (sympy, scipy, dp-accounting: 0.2-0.35 CPU-s of a
command line's refusal). Standard library only.

>>> import types, sys
>>> pkg = types.ModuleType("demo_pkg"); sys.modules["demo_pkg"] = pkg
>>> lazy_package("demo_pkg", {"sqrt": ("math", "sqrt")})
>>> pkg.sqrt(4.0), "sqrt" in dir(pkg)
(2.0, True)
>>> del sys.modules["demo_pkg"]
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["lazy_package"]


def lazy_package(name: str, table: Mapping[str, tuple[str, str]],
                 functions: Iterable[str] = ()) -> None:
    """Give the imported package ``name`` a module ``__getattr__`` and ``__dir__`` that load
    ``table``'s names on first use (each is then kept in the package, later look-ups skip the
    hook). ``functions``: public names that are also submodules' names (``compare``,
    ``calibrate``): they keep naming the function after the submodule is imported (the import
    system would set the package's attribute to the submodule)."""
    module = sys.modules[name]
    names = vars(module)
    shadowed = frozenset(functions)

    def __getattr__(attr: str) -> Any:
        try:
            where, real = table[attr]
        except KeyError:
            # a submodule not imported yet: `dpbounds.audit.runner.tight_claim` after `import
            # dpbounds.audit` worked while the package imported its submodules (review of
            # stop 74); importing it binds the package's attribute
            if not attr.startswith("__") and importlib.util.find_spec(f"{name}.{attr}"):
                return importlib.import_module(f"{name}.{attr}")
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None
        value = getattr(importlib.import_module(where), real)
        names[attr] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        # the public names and the submodules imported so far, not the file's own imports
        loaded = {k for k, v in names.items() if isinstance(v, types.ModuleType)
                  and getattr(v, "__name__", "").startswith(name + ".")}
        return sorted(set(table) | loaded | {k for k in names if k in table})

    names["__getattr__"] = __getattr__
    names["__dir__"] = __dir__
    if shadowed:
        class _Package(types.ModuleType):
            def __setattr__(self, key: str, value: Any) -> None:
                if key in shadowed and isinstance(value, types.ModuleType):
                    value = getattr(value, key)
                super().__setattr__(key, value)

        module.__class__ = _Package
