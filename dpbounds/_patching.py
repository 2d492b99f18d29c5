"""Patches seen only by the thread that made them.

The mutants of :mod:`dpbounds.verify.mutants` and :mod:`dpbounds.audit.mutation`, and the
noise and permutation taps of the checks, replace a function of a module or a method of a
class for the duration of a ``with`` block. Set with ``setattr``, such a patch is seen by
every thread of the process: a mutant audited on one thread of a ``ThreadPoolExecutor`` (a
sweep's, or Dask's threaded scheduler) under-noised the correct run on the next thread, and
two taps read each other's draws (an independent review found this; ``verify``'s grid points
were serialised by a lock in stop 64, the replay verdicts and audits were not).

:func:`thread_patch` installs, once per attribute and for as long as any thread patches it, a
*dispatcher* in the attribute's place. The dispatcher looks up the calling thread's own stack
of patches and falls back to the original, so a thread that patches nothing runs the original
code, whatever other threads do, and patches nest within a thread (the inner one is built
from the outer one). The last thread to leave restores the original object itself.

Code that holds a reference taken before the patch (``from module import function``) is not
reached by it, as with ``setattr``; the package's patch sites name module attributes looked up
at call time for that reason. Compiled (numba) functions never see patches, and neither do
threads started inside the block (each thread has its own view). Data descriptors
(``property``) are refused. Patches nest: leave them in the reverse order of entering (a
``with`` block does). A ``monkeypatch`` of the same attribute made while a patch is live is
left in place when the patch ends; undone later, it puts back the stand-in, which then
gives every thread the original.

Example
-------
>>> import math, threading
>>> from dpbounds._patching import thread_patch
>>> seen = []
>>> with thread_patch(math, "sqrt", lambda inner: lambda x: -inner(x)):
...     here = math.sqrt(4.0)
...     t = threading.Thread(target=lambda: seen.append(math.sqrt(4.0)))
...     t.start(); t.join()
>>> here, seen, math.sqrt(4.0)
(-2.0, [2.0], 2.0)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["thread_patch"]

_LOCK = threading.Lock()
_LOCAL = threading.local()
#: (id(owner), name) -> [owner, the original raw attribute or _MISSING, dispatcher, users]
_INSTALLED: dict[tuple[int, str], list[Any]] = {}
_MISSING = object()


def _stacks() -> dict[tuple[int, str], list[Any]]:
    """This thread's patches: attribute key -> the raw replacements, innermost last."""
    stacks = getattr(_LOCAL, "stacks", None)
    if stacks is None:
        stacks = _LOCAL.stacks = {}
    return stacks


def _raw(owner: Any, name: str) -> Any:
    """``owner``'s own attribute as stored (a classmethod object, not the bound method);
    :data:`_MISSING` where ``owner`` inherits it (then restored by deleting it)."""
    return vars(owner).get(name, _MISSING)


def _presented(raw: Any, owner: Any) -> Any:
    """What ``getattr(owner, name)`` gives for the stored ``raw`` (a class's descriptors
    are bound to the class; a module's attributes are returned as they are)."""
    if isinstance(owner, type):
        get = getattr(type(raw), "__get__", None)
        if get is not None:
            return get(raw, None, owner)
    return raw


class _Dispatch:
    """Stands in for a patched attribute: the calling thread's innermost patch, else the
    original. A descriptor on a class (bound like the function it replaces), callable on a
    module (whose attributes are never bound). Attribute reads (``__name__``,
    ``cache_info``), ``inspect.signature`` (through ``__wrapped__``) and pickling (by the
    owner's and attribute's names) reach what the calling thread sees."""

    __slots__ = ("_key", "_original", "_owner", "_name", "_inherited")

    def __init__(self, key: tuple[int, str], original: Any, owner: Any, inherited: bool
                 ) -> None:
        self._key, self._original, self._owner = key, original, owner
        self._name, self._inherited = key[1], inherited

    def _current(self) -> Any:
        stack = _stacks().get(self._key)
        if stack:
            return stack[-1]
        if self._inherited:
            # looked up now, along the MRO above the owner: a base class's attribute may be
            # patched by this thread meanwhile (its own dispatcher)
            raw = _original_of(self._owner, self._name, skip_owner=True)
            return raw._current() if isinstance(raw, _Dispatch) else raw
        return self._original

    def __get__(self, instance: Any, objtype: Any = None) -> Any:
        raw = self._current()
        get = getattr(type(raw), "__get__", None)
        return raw if get is None else get(raw, instance, objtype)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _presented(self._current(), self._owner)(*args, **kwargs)

    @property
    def __wrapped__(self) -> Any:  # inspect.signature / inspect.unwrap
        return _presented(self._current(), self._owner)

    def __getattr__(self, attr: str) -> Any:  # __name__, __doc__ of a function, cache_info
        if attr.startswith("_") and attr in _Dispatch.__slots__:
            raise AttributeError(attr)  # not set yet (copy, unpickling)
        return getattr(_presented(self._current(), self._owner), attr)

    def __reduce__(self) -> tuple[Any, tuple[str, str, str]]:
        # by name, as pickle saves a module function: the receiving process reads its own
        owner = self._owner
        qualname = "" if not isinstance(owner, type) else owner.__qualname__
        module = owner.__name__ if not isinstance(owner, type) else owner.__module__
        return _attribute, (module, qualname, self._name)


def _attribute(module: str, qualname: str, name: str) -> Any:
    """``module[.qualname].name`` (what a pickled :class:`_Dispatch` unpickles to)."""
    import importlib

    owner: Any = importlib.import_module(module)
    for part in filter(None, qualname.split(".")):
        owner = getattr(owner, part)
    return getattr(owner, name)


def _original_of(owner: Any, name: str, skip_owner: bool = False) -> Any:
    """The attribute as the class or module has it, inherited ones included (what the
    dispatcher falls back to); ``skip_owner``: the classes above ``owner`` only."""
    if isinstance(owner, type):
        for klass in owner.__mro__[1 if skip_owner else 0:]:
            if name in vars(klass):
                return vars(klass)[name]
    elif name in vars(owner):
        return vars(owner)[name]
    raise AttributeError(f"{owner!r} has no attribute {name!r} to patch")


@contextmanager
def thread_patch(owner: Any, name: str, make: Callable[[Any], Any]) -> Iterator[None]:
    """Within the block, and for the calling thread only, ``owner.name`` is
    ``make(current)``: ``current`` is what ``getattr(owner, name)`` gave this thread before
    (the original, or the replacement of an enclosing patch), and ``make``'s result is stored
    as ``setattr`` would store it (a plain function becomes a method of a class; return a
    ``classmethod`` to replace one). Other threads keep their own view. Restored on exit,
    also on an exception.

    Parameters
    ----------
    owner
        A module or a class.
    name
        The attribute (it must exist on ``owner``, possibly inherited).
    make
        Builds the replacement from the current attribute.
    """
    key = (id(owner), name)
    with _LOCK:
        entry = _INSTALLED.get(key)
        if entry is None:
            original = _original_of(owner, name)
            if hasattr(type(original), "__set__") or hasattr(type(original), "__delete__"):
                raise ValueError(f"thread_patch patches functions and methods; {name!r} of "
                                 f"{owner!r} is a data descriptor "
                                 f"({type(original).__name__}), whose setter a stand-in "
                                 "would bypass in every thread")
            stored = _raw(owner, name)
            dispatcher = _Dispatch(key, original, owner, inherited=stored is _MISSING)
            entry = [owner, stored, dispatcher, 0]
            setattr(owner, name, dispatcher)
            _INSTALLED[key] = entry
        entry[3] += 1
        dispatcher = entry[2]
    stacks = _stacks()
    stack = stacks.setdefault(key, [])
    try:
        stack.append(make(_presented(dispatcher._current(), owner)))
    except BaseException:
        if not stack:
            del stacks[key]
        _release(key, entry)
        raise
    try:
        yield
    finally:
        stack.pop()
        if not stack:
            del stacks[key]
        _release(key, entry)


def _release(key: tuple[int, str], entry: list[Any]) -> None:
    with _LOCK:
        entry[3] -= 1
        if entry[3]:
            return
        del _INSTALLED[key]
        owner, stored, dispatcher = entry[0], entry[1], entry[2]
        # something else may have replaced the attribute meanwhile (a test's monkeypatch):
        # only the dispatcher is taken away
        if vars(owner).get(key[1]) is dispatcher:
            if stored is _MISSING:
                delattr(owner, key[1])
            else:
                setattr(owner, key[1], stored)
