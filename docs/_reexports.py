"""Sphinx hook: a reference to a name a package re-exports links to the module that defines it.

The API pages document each object once, in its defining module
(``dpbounds.lmi.heavy_ball_lmi.rate_search.heavy_ball_lmi_rate``), while docstrings cite the
import path users write (``dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_rate``, or just
``heavy_ball_lmi_rate`` inside the package). Sphinx leaves such a reference unlinked without a
warning (the build is not nitpicky); this ``missing-reference`` handler imports the name, finds
the object's home and resolves the reference there. It only ever adds links: a name it cannot
import stays unresolved as before.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import sys
from typing import Any


def _import(path: str) -> tuple[Any, bool]:
    """The object at dotted ``path`` (longest importable module prefix, then attributes)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None, False
        return obj, True
    return None, False


@functools.cache
def home(path: str) -> str | None:
    """Where the object at ``path`` is defined (``module.qualname``), or None.

    Cached: the same short names (``float``, a re-exported function) are missing references on
    many pages, and each failed lookup tries to import every dotted prefix of every candidate
    (a search of ``sys.path`` per prefix); within one build the answer cannot change."""
    if not path.startswith("dpbounds."):
        return None
    obj, found = _import(path)
    if not found or inspect.ismodule(obj):
        return None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module.startswith("dpbounds."):
        return f"{module}.{qualname}"
    parent, name = path.rsplit(".", 1)
    owner, _ = _import(parent)
    if inspect.isclass(owner):  # a property or attribute: its class's home
        owner_home = home(parent)
        return f"{owner_home}.{name}" if owner_home else None
    if inspect.ismodule(owner) and hasattr(owner, "__path__"):  # data a package re-exports
        for info in pkgutil.iter_modules(owner.__path__, owner.__name__ + "."):
            sub = sys.modules.get(info.name) or importlib.import_module(info.name)
            if name in getattr(sub, "__all__", ()) and getattr(sub, name, None) is obj:
                return f"{info.name}.{name}"
    return None


def resolve_reexport(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    candidates = [target]
    module = node.get("py:module")
    if module:  # a short name inside a package: the module, then its parents
        parts = module.split(".")
        candidates += [".".join(parts[:i]) + "." + target for i in range(len(parts), 0, -1)]
    domain = env.get_domain("py")
    for name in candidates:
        where = home(name)
        if where and where != target:
            found = domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                        where, node, contnode)
            if found is not None:
                return found
    return None
