r"""NumPy's standard Laplace stream, compiled: the same bits, about 1.6x faster on large draws.

``Generator.laplace(0.0, 1.0, size)`` costs ~22-29 ns a number on an AVX2 Zen 3 core (its
per-element call through the bit generator's function pointer and a branch on a uniform that
mispredicts half the time), a quarter of a DP-GD step at d = 10^6 with 4 trials
(``bench/bench_large_d_memory.md``). :func:`standard_laplace` draws the same uniforms in one
call (``Generator.random``) and maps them in a compiled loop, ~12-15 ns a number, most of it
the C library's ``log``.

The bits are NumPy's (``numpy/random/src/distributions/distributions.c``, ``random_laplace``,
VERBATIM):

* each number takes the next double ``U = (next_uint64 >> 11) 2^-53`` in ``[0, 1)``, the one
  ``Generator.random`` returns; ``U = 0`` is rejected and the next double taken (probability
  ``2^-53`` a number: the draw drops the zeros from its uniforms and tops them up from the same
  stream, in order, which consumes the stream exactly as NumPy does);
* ``U >= 1/2``: ``loc - scale log(2 - U - U)``; else ``loc + scale log(U + U)``, with
  ``loc = 0.0`` and ``scale = 1.0`` evaluated in the same order (no fused or reordered
  operations: the kernel is compiled without ``fastmath``), and ``log`` the C library's, which
  NumPy calls too.

``tests/test_laplace_stream.py`` checks the bits against ``Generator.laplace`` itself (several
seeds, sizes, bit generators) and the zero rejection against a stub stream. The compiled path is
taken when numba is installed (the ``fast`` extra), ``DPBOUNDS_KERNELS`` is not ``numpy``, and
a draw has at least :data:`COMPILED_MIN_SIZE` numbers; otherwise NumPy's call, whose bits these
are.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

__all__ = ["COMPILED_MIN_SIZE", "standard_laplace"]

#: Smallest draw (numbers per generator call) that takes the compiled map: below it NumPy's
#: call (a per-step draw at d = 16 is dominated by the call, not the numbers).
COMPILED_MIN_SIZE = 4096

_KERNEL: list[Any] = []  # the compiled map, built on first use: numba is not imported before


def _map_uniforms(u, out):  # pragma: no cover - compiled
    """``out[i]`` = NumPy's standard Laplace number from the nonzero uniform ``u[i]``."""
    n = u.shape[0]
    # three loops over blocks that stay in the L1 cache, not one with a branch: the side is a
    # coin flip that a branch mispredicts half the time, and a loop of logs alone runs at the
    # C library's throughput (6 against 15 ns a number on a Zen 3, measured). Each operation is
    # NumPy's, in its order.
    for start in range(0, n, 1024):
        stop = min(n, start + 1024)
        for i in range(start, stop):  # both sides, then a select: vectorised
            U = u[i]
            lower, upper = U + U, (2.0 - U) - U
            out[i] = upper if U >= 0.5 else lower
        for i in range(start, stop):
            out[i] = math.log(out[i])
        for i in range(start, stop):
            lg = out[i]
            plus, minus = 0.0 + 1.0 * lg, 0.0 - 1.0 * lg
            out[i] = minus if u[i] >= 0.5 else plus


def _kernel() -> Any:
    """The compiled :func:`_map_uniforms` (no ``fastmath``: NumPy's operations, in its order),
    or ``None`` without numba or with ``DPBOUNDS_KERNELS=numpy``."""
    if os.environ.get("DPBOUNDS_KERNELS", "auto").strip().lower() == "numpy":
        return None
    if not _KERNEL:
        try:
            import numba
        except ImportError:  # pragma: no cover - exercised without the fast extra
            _KERNEL.append(None)
        else:
            _KERNEL.append(numba.njit(boundscheck=False, cache=True, nogil=True)(_map_uniforms))
    return _KERNEL[0]


def _nonzero_uniforms(gen: Any, size: int) -> np.ndarray:
    """``size`` doubles of ``gen.random``'s stream with the zeros dropped and topped up in order
    (what NumPy's rejection of ``U = 0`` consumes)."""
    u = gen.random(size)
    while True:
        zeros = int(np.count_nonzero(u == 0.0))
        if zeros == 0:
            return u
        u = np.concatenate((u[u != 0.0], gen.random(zeros)))


def standard_laplace(gen: Any, shape: tuple[int, ...], out: np.ndarray | None = None
                     ) -> np.ndarray:
    """``gen.laplace(0.0, 1.0, shape)``'s float64 numbers (the same bits, the same stream
    consumed), written into ``out`` when given (float64, C-contiguous, of ``shape``).

    ``gen``: a :class:`numpy.random.Generator`.

    Examples
    --------
    >>> import numpy as np
    >>> a = standard_laplace(np.random.default_rng(3), (5000,))
    >>> bool((a == np.random.default_rng(3).laplace(0.0, 1.0, 5000)).all())
    True
    """
    size = math.prod(shape)
    kernel = _kernel() if size >= COMPILED_MIN_SIZE else None
    if kernel is None:
        draw = gen.laplace(0.0, 1.0, shape)
        if out is None:
            return draw
        out[...] = draw
        return out
    if out is None:
        out = np.empty(shape)
    elif out.dtype != np.float64 or not out.flags.c_contiguous or out.shape != tuple(shape):
        raise ValueError(f"out must be a C-contiguous float64 array of shape {tuple(shape)}")
    kernel(_nonzero_uniforms(gen, size), out.reshape(-1))
    return out
