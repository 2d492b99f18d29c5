r"""The named sympy symbols of dpbounds' bounds and their sign conventions.

Every bound is an expression over symbols made by :func:`sym`: real and ``positive``, or
``nonnegative`` for the names in :data:`NONNEGATIVE_SYMBOLS`. The names in
:data:`COUNT_SYMBOLS` (dimension, dataset size, iteration and epoch counts, batch size) are
counts, at least 1: the composition check (:mod:`.monotonicity`) assumes it.

Example
-------
>>> from dpbounds.bounds.theorem import sym
>>> sym("eps").is_positive, sym("L1").is_nonnegative, sym("L1").is_positive
(True, True, None)
>>> sym("eps") is sym("eps")
True
"""

from __future__ import annotations

from collections.abc import Iterable

import sympy as sp

from dpbounds.notation import SYMBOL_LATEX  # the one notation table (docs/notation.md)

__all__ = ["COUNT_SYMBOLS", "NONNEGATIVE_SYMBOLS", "SYMBOL_LATEX", "sym"]

#: Symbols that may be 0 (declared ``nonnegative``); every other symbol is ``positive``.
NONNEGATIVE_SYMBOLS: frozenset[str] = frozenset({"L1", "tau1", "beta"})

#: Counts (>= 1): dimension ``d``, dataset sizes ``N``/``n``, iterations ``T``, index ``t``,
#: epochs ``E``, batch size ``B``. Used by the monotonicity check of :meth:`Bound.compose`.
COUNT_SYMBOLS: frozenset[str] = frozenset({"d", "N", "n", "T", "t", "E", "B"})

_SYMBOL_CACHE: dict[str, sp.Symbol] = {}


def sym(name: str) -> sp.Symbol:
    """The positive real sympy symbol used throughout dpbounds for ``name``.

    All bound symbols are declared ``positive=True`` (``nonnegative`` for the names in
    :data:`NONNEGATIVE_SYMBOLS`, e.g. ``L1``) so that sympy may split powers of products;
    ``evaluate`` checks the sign of every value it is given.
    """
    s = _SYMBOL_CACHE.get(name)
    if s is None:
        if name in NONNEGATIVE_SYMBOLS:
            s = sp.Symbol(name, nonnegative=True)
        else:
            s = sp.Symbol(name, positive=True)
        _SYMBOL_CACHE[name] = s
    return s


def names(symbols: Iterable[sp.Symbol]) -> tuple[str, ...]:
    """Sorted names of ``symbols``."""
    return tuple(sorted(s.name for s in symbols))
