r"""Compiled products of the trials' states with the data at large ``d`` (optional; numba).

The full-data pass of a margin loss (:meth:`MarginLossObjective._full_pass`) needs two products
with the ``(n, d)`` data ``A`` per call: the margins :math:`Z = X A_{a:b}^\top` (``(r, b-a)``,
``r`` trials) and the gradient sums :math:`G \mathrel{+}= W A_{a:b}` (``(r, d)``). Above
:data:`WIDE_MIN_D` features (where the fused logistic pass of :mod:`._logistic_kernel` is not
taken) they came from BLAS (and still do without numba): skinny GEMMs of 8 padded rows
(:func:`dpbounds.backend.rowwise_matmul`), which pack the data into panels and, at d = 1e6,
n = 256, 4 trials, take about 3x the time of two reads of the data (issue 36, item 3;
``bench/bench_large_d_memory.md``). The two kernels here read each row of the data once per
product, straight from the caller's array (a C-contiguous float64 array, which the objective
keeps, is not copied; nothing is packed), in column blocks of :data:`COLUMN_BLOCK` features
that stay in the L1/L2 caches while every trial uses them.

Same bits for trial k, whatever the number of trials
----------------------------------------------------
* :func:`margins`: for each trial separately, the sum over a column block is a vectorised
  reduction whose order depends only on the block's length; blocks are added in order. The
  trials never share an accumulator, so row ``k`` of the result depends only on ``X[k]`` and
  the data (tested across trial counts).
* :func:`add_weighted_rows`: for each trial and feature the terms are added in the order of
  the samples, four samples per statement, ``(((g + w_0a_0) + w_1a_1) + w_2a_2) + w_3a_3``
  (the remainder one at a time); the trials are taken four at a time for speed and the
  leftover ones by a loop that performs the same operations in the same order, so the result
  is bit-identical either way (tested across trial counts).

The bits differ from the BLAS path's in the last places (another summation order) and, as
BLAS's do, with the CPU's vector width: which path runs depends on ``d`` only
(:func:`chosen`), never on the number of trials.
"""

from __future__ import annotations

import numpy as np

from dpbounds.objectives import _logistic_kernel

__all__: list[str] = []

#: Features per column block: 4 rows of the data (16 KiB) and the trials' slices of the state
#: stay in the L1/L2 caches while every trial uses them (blocks of 256 to 8192 measured within
#: 15% of each other at d = 1e6, 4 trials, AMD EPYC family 23, 32 KiB L1d; 512 among the
#: fastest).
COLUMN_BLOCK = 512
#: Smallest ``d`` at which :func:`chosen` takes these kernels under ``DPBOUNDS_KERNELS=auto``
#: (``bench/bench_compiled_vs_blas.py --wide``; results in ``bench/bench_compiled_vs_blas.md``).
WIDE_MIN_D = _logistic_kernel.COMPILED_MAX_D + 1

_jit = _logistic_kernel._jit
_EXACT = _logistic_kernel._EXACT
_SUMS = _logistic_kernel._SUMS


def chosen(d: int) -> bool:
    """Whether the full-data products of ``d`` features use these kernels: numba installed,
    ``DPBOUNDS_KERNELS`` not ``numpy``, and ``d >= WIDE_MIN_D``."""
    return _logistic_kernel.enabled() and d >= WIDE_MIN_D


@_jit(fastmath=_SUMS, boundscheck=False, cache=True, nogil=True)
def _margins(X, A, a, b, out):  # pragma: no cover - compiled
    r, d = X.shape
    for k in range(r):
        for i in range(b - a):
            out[k, i] = 0.0
    for j0 in range(0, d, COLUMN_BLOCK):
        j1 = min(d, j0 + COLUMN_BLOCK)
        i = a
        while i + 3 < b:  # four rows of the data per sweep: each state load feeds four sums
            for k in range(r):
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                for j in range(j0, j1):
                    v = X[k, j]
                    s0 += v * A[i, j]
                    s1 += v * A[i + 1, j]
                    s2 += v * A[i + 2, j]
                    s3 += v * A[i + 3, j]
                out[k, i - a] += s0
                out[k, i + 1 - a] += s1
                out[k, i + 2 - a] += s2
                out[k, i + 3 - a] += s3
            i += 4
        while i < b:
            for k in range(r):
                s0 = 0.0
                for j in range(j0, j1):
                    s0 += X[k, j] * A[i, j]
                out[k, i - a] += s0
            i += 1


@_jit(fastmath=_EXACT, boundscheck=False, cache=True, nogil=True)
def _four_rows(W, A, a, i, k, j0, j1, G):  # pragma: no cover - compiled
    """``G[k, j0:j1] += Σ_{s<4} W[k, i+s-a] A[i+s, j0:j1]``, the samples in order."""
    w0 = W[k, i - a]
    w1 = W[k, i + 1 - a]
    w2 = W[k, i + 2 - a]
    w3 = W[k, i + 3 - a]
    for j in range(j0, j1):
        G[k, j] = (((G[k, j] + w0 * A[i, j]) + w1 * A[i + 1, j]) + w2 * A[i + 2, j]) \
            + w3 * A[i + 3, j]


@_jit(fastmath=_EXACT, boundscheck=False, cache=True, nogil=True)
def _add_weighted_rows(W, A, a, b, G):  # pragma: no cover - compiled
    r, d = G.shape
    for j0 in range(0, d, COLUMN_BLOCK):
        j1 = min(d, j0 + COLUMN_BLOCK)
        k0 = 0
        while k0 + 3 < r:  # four trials per sweep: each data load feeds four trials
            i = a
            while i + 3 < b:
                w00 = W[k0, i - a]
                w01 = W[k0, i + 1 - a]
                w02 = W[k0, i + 2 - a]
                w03 = W[k0, i + 3 - a]
                w10 = W[k0 + 1, i - a]
                w11 = W[k0 + 1, i + 1 - a]
                w12 = W[k0 + 1, i + 2 - a]
                w13 = W[k0 + 1, i + 3 - a]
                w20 = W[k0 + 2, i - a]
                w21 = W[k0 + 2, i + 1 - a]
                w22 = W[k0 + 2, i + 2 - a]
                w23 = W[k0 + 2, i + 3 - a]
                w30 = W[k0 + 3, i - a]
                w31 = W[k0 + 3, i + 1 - a]
                w32 = W[k0 + 3, i + 2 - a]
                w33 = W[k0 + 3, i + 3 - a]
                for j in range(j0, j1):
                    a0 = A[i, j]
                    a1 = A[i + 1, j]
                    a2 = A[i + 2, j]
                    a3 = A[i + 3, j]
                    G[k0, j] = (((G[k0, j] + w00 * a0) + w01 * a1) + w02 * a2) + w03 * a3
                    G[k0 + 1, j] = (((G[k0 + 1, j] + w10 * a0) + w11 * a1) + w12 * a2) + w13 * a3
                    G[k0 + 2, j] = (((G[k0 + 2, j] + w20 * a0) + w21 * a1) + w22 * a2) + w23 * a3
                    G[k0 + 3, j] = (((G[k0 + 3, j] + w30 * a0) + w31 * a1) + w32 * a2) + w33 * a3
                i += 4
            while i < b:
                for k in range(k0, k0 + 4):
                    w0 = W[k, i - a]
                    for j in range(j0, j1):
                        G[k, j] = G[k, j] + w0 * A[i, j]
                i += 1
            k0 += 4
        for k in range(k0, r):  # the leftover trials: the same operations, one trial at a time
            i = a
            while i + 3 < b:
                _four_rows(W, A, a, i, k, j0, j1, G)
                i += 4
            while i < b:
                w0 = W[k, i - a]
                for j in range(j0, j1):
                    G[k, j] = G[k, j] + w0 * A[i, j]
                i += 1


def _checked(name: str, v: np.ndarray) -> np.ndarray:
    if v.dtype != np.float64 or v.ndim != 2:
        raise ValueError(f"{name} must be a 2-d float64 array, got {v.dtype} {v.shape}")
    return np.ascontiguousarray(v)  # no copy of a C-contiguous array (the objective's data)


def _check_span(A: np.ndarray, a: int, b: int, width: int, name: str, columns: int) -> None:
    # the kernels run without bounds checks: every index they use is checked here
    if not 0 <= a <= b <= A.shape[0]:
        raise ValueError(f"rows a..b must satisfy 0 <= a <= b <= n = {A.shape[0]}, got {a}, {b}")
    if width != columns:
        raise ValueError(f"{name} has {width} columns, expected {columns}")


def margins(X: np.ndarray, A: np.ndarray, a: int, b: int) -> np.ndarray:
    """``X @ A[a:b].T`` (``(r, b-a)``), row ``k`` a function of ``X[k]`` and ``A`` alone.

    >>> import numpy as np
    >>> A, X = np.arange(12.0).reshape(3, 4), np.ones((2, 4))
    >>> margins(X, A, 1, 3).tolist()
    [[22.0, 38.0], [22.0, 38.0]]
    """
    X, A = _checked("X", X), _checked("A", A)
    _check_span(A, a, b, X.shape[1], "X", A.shape[1])
    out = np.empty((X.shape[0], b - a))
    _margins(X, A, a, b, out)
    return out


def add_weighted_rows(W: np.ndarray, A: np.ndarray, a: int, b: int, G: np.ndarray) -> None:
    """``G += W @ A[a:b]`` in place (``W`` is ``(r, b-a)``, ``G`` ``(r, d)`` C-contiguous),
    row ``k`` a function of ``W[k]``, ``G[k]`` and ``A`` alone.

    >>> import numpy as np
    >>> A, G = np.arange(12.0).reshape(3, 4), np.zeros((1, 4))
    >>> add_weighted_rows(np.ones((1, 2)), A, 1, 3, G)
    >>> G.tolist()
    [[12.0, 14.0, 16.0, 18.0]]
    """
    W, A = _checked("W", W), _checked("A", A)
    if not (G.flags.c_contiguous and G.dtype == np.float64):
        raise ValueError("G must be a C-contiguous float64 array")
    _check_span(A, a, b, W.shape[1], "W", b - a)
    if G.ndim != 2 or G.shape != (W.shape[0], A.shape[1]):
        raise ValueError(f"G must have shape {(W.shape[0], A.shape[1])}, got {G.shape}")
    _add_weighted_rows(W, A, a, b, G)
