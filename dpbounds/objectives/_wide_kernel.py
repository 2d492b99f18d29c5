r"""Compiled products of the trials' states with the data at large ``d`` (optional; numba).

The full-data pass of a margin loss (:meth:`MarginLossObjective._full_pass`) needs two products
with the ``(n, d)`` data ``A`` per call: the margins :math:`Z = X A_{a:b}^\top` (``(r, b-a)``,
``r`` trials) and the gradient sums :math:`G \mathrel{+}= W A_{a:b}` (``(r, d)``). Above
:data:`WIDE_MIN_D` features (where the fused logistic pass of :mod:`._logistic_kernel` is not
taken) they came from BLAS (and still do without numba): skinny GEMMs of 8 padded rows
(:func:`dpbounds.backend.rowwise_matmul`), which pack the data into panels and, at d = 1e6,
n = 256, 4 trials, take 3-4x the time of two reads of the data (issue 36, item 3;
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
BLAS's do, with the CPU's vector width: which path runs depends on ``d`` and on the CPU
(:func:`chosen`: not on an AVX-512 Intel Xeon, whose OpenBLAS kernels were faster from 4 trials
on), never on the number of trials.
"""

from __future__ import annotations

import numpy as np

from dpbounds.objectives import _logistic_kernel

__all__: list[str] = []

#: Features per column block: 4 rows of the data (64 KiB) and the trials' slices of the state
#: (16 KiB a trial) stay in the L2 cache while every trial uses them. Measured at n = 256,
#: d = 1e6 (margins + gradient sums, CPU-s; AMD EPYC family 25 model 17, 1 MiB L2, 2026-12-06):
#: 512 / 2048 / 8192 read 0.218 / 0.177 / 0.154 at 1 trial, 0.316 / 0.276 / 0.264 at 4 and
#: 0.700 / 0.749 / 0.851 at 16 (the state's slices outgrow the L2); a row's run of 16 KiB
#: instead of 4 is what the larger blocks gain (fewer pages a sweep). On a family 23 (Zen 1,
#: 512 KiB L2) 256 to 8192 read within 15% of each other at 4 trials. The block sets the
#: summation order, so it is one number for every trial count (not tuned per call).
COLUMN_BLOCK = 2048
#: Smallest ``d`` at which :func:`chosen` takes these kernels under ``DPBOUNDS_KERNELS=auto``
#: (``bench/bench_compiled_vs_blas.py --wide``; results in ``bench/bench_compiled_vs_blas.md``).
WIDE_MIN_D = _logistic_kernel.COMPILED_MAX_D + 1

_jit = _logistic_kernel._jit
_EXACT = _logistic_kernel._EXACT
_SUMS = _logistic_kernel._SUMS


def _avx512() -> bool:
    """Whether NumPy's runtime dispatch found AVX-512 on this CPU and may use it.

    ``AVX512F`` alone reads the CPU; ``NPY_DISABLE_CPU_FEATURES`` switches NumPy's use of it
    off through the dispatch targets (``X86_V4`` from NumPy 2.4, ``AVX512_SKX`` before), which
    ``bench/_no_avx512.py`` does to stand in for a CPU without AVX-512."""
    import importlib

    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # 2.x, 1.x
        try:
            features = importlib.import_module(name).__cpu_features__
        except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout
            continue
        used = features.get("X86_V4", features.get("AVX512_SKX", True))
        return bool(features.get("AVX512F", False)) and bool(used)
    return False  # pragma: no cover


def _host_cpu() -> str:
    """LLVM's name for this CPU (``znver4``, ``skylake-avx512``, ...), what numba compiles for."""
    try:
        import llvmlite.binding as llvm  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - numba absent: the kernels are not used
        return ""
    return str(llvm.get_host_cpu_name())


#: CPUs with AVX-512 on which these kernels were measured faster than OpenBLAS's AVX-512
#: products at 1, 4 and 16 trials (``bench/bench_compiled_vs_blas.md``, 2026-12-06: AMD EPYC
#: family 25 model 17, 1.03-3.47x at d >= 4096)
FASTER_WITH_AVX512 = ("znver4",)


def auto_rule(avx512: bool, cpu: str) -> bool:
    """Whether ``DPBOUNDS_KERNELS=auto`` takes these kernels on a CPU with (``avx512``) or
    without AVX-512 in use, of LLVM name ``cpu``: without it, or on a CPU of
    :data:`FASTER_WITH_AVX512`."""
    return not avx512 or cpu in FASTER_WITH_AVX512

#: Whether ``DPBOUNDS_KERNELS=auto`` takes these kernels on this CPU: where it has no AVX-512,
#: or is one of :data:`FASTER_WITH_AVX512`. Measured (``bench/bench_compiled_vs_blas.py
#: --wide``): on AMD EPYC family 23 (AVX2) 1.25-4.3x faster than OpenBLAS's 8-row products at
#: 1, 4 and 16 trials; on a Zen 4 1.03-3.47x faster than its AVX-512 OpenBLAS; on an AVX-512
#: Intel Xeon 1.4-2.0x faster at 1 trial but 0.56-0.93x at 4 and 0.43-0.56x at 16 (measured
#: before :func:`_margins` took slices: compiled with AVX-512 it had run 4.5x slower than now on
#: the Zen 4, so the Xeon's figures are likely low; not re-measured, so the Xeon keeps BLAS). The
#: rule may depend on the CPU (the bits already do, through the vector width) and on ``d``,
#: never on the number of trials.
AUTO_HERE = auto_rule(_avx512(), _host_cpu())


def chosen(d: int) -> bool:
    """Whether the full-data products of ``d`` features use these kernels: numba installed,
    ``d >= WIDE_MIN_D``, and ``DPBOUNDS_KERNELS`` is ``numba``, or ``auto`` (the default) on a
    CPU without AVX-512 (:data:`AUTO_HERE`)."""
    if not _logistic_kernel.enabled() or d < WIDE_MIN_D:
        return False
    return AUTO_HERE or _logistic_kernel._choice() == "numba"


@_jit(fastmath=_SUMS, boundscheck=False, cache=True, nogil=True, inline="always")
def _four_dots(x, a0, a1, a2, a3):  # pragma: no cover - compiled
    """The dot products of ``x`` with four rows, each a vectorised reduction."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for j in range(x.shape[0]):
        v = x[j]
        s0 += v * a0[j]
        s1 += v * a1[j]
        s2 += v * a2[j]
        s3 += v * a3[j]
    return s0, s1, s2, s3


@_jit(fastmath=_SUMS, boundscheck=False, cache=True, nogil=True, inline="always")
def _one_dot(x, a0):  # pragma: no cover - compiled
    s0 = 0.0
    for j in range(x.shape[0]):
        s0 += x[j] * a0[j]
    return s0


@_jit(fastmath=_SUMS, boundscheck=False, cache=True, nogil=True)
def _margins(X, A, a, b, out):  # pragma: no cover - compiled
    """``out[k, i-a] = X[k] . A[i]`` for the rows ``a <= i < b``, column block by block.

    The dot products run over slices (:func:`_four_dots`), not over ``X[k, j], A[i, j]`` for
    ``j in range(j0, j1)``: compiled with AVX-512 the indexed form ran 4.5-5x slower on a Zen 4
    (0.133 against 0.026-0.030 CPU-s at n = 32, d = 2^20, 4 trials; the same with AVX2 either
    way), as the gradient sums' indexed loops had (below)."""
    r, d = X.shape
    for k in range(r):
        for i in range(b - a):
            out[k, i] = 0.0
    for j0 in range(0, d, COLUMN_BLOCK):
        j1 = min(d, j0 + COLUMN_BLOCK)
        i = a
        while i + 3 < b:  # four rows of the data per sweep: each state load feeds four sums
            a0 = A[i, j0:j1]
            a1 = A[i + 1, j0:j1]
            a2 = A[i + 2, j0:j1]
            a3 = A[i + 3, j0:j1]
            for k in range(r):
                s0, s1, s2, s3 = _four_dots(X[k, j0:j1], a0, a1, a2, a3)
                out[k, i - a] += s0
                out[k, i + 1 - a] += s1
                out[k, i + 2 - a] += s2
                out[k, i + 3 - a] += s3
            i += 4
        while i < b:
            a0 = A[i, j0:j1]
            for k in range(r):
                out[k, i - a] += _one_dot(X[k, j0:j1], a0)
            i += 1


# The loops below run over ``range(m)`` on slices, not over ``range(j0, j1)`` on the arrays:
# an index that may be negative carries numba's wraparound select, which kept LLVM from
# vectorising the stores (the kernel ran scalar: 2.5-6x slower than OpenBLAS on an AVX-512
# Xeon at 4-16 trials, measured; on slices it vectorises, with the same operations in the same
# order, so the same bits).
@_jit(fastmath=_EXACT, boundscheck=False, cache=True, nogil=True, inline="always")
def _one_row(W, A, a, i, k, j0, j1, G):  # pragma: no cover - compiled
    """``G[k, j0:j1] += W[k, i-a] A[i, j0:j1]``."""
    w0 = W[k, i - a]
    g = G[k, j0:j1]
    a0 = A[i, j0:j1]
    for j in range(g.shape[0]):
        g[j] = g[j] + w0 * a0[j]


@_jit(fastmath=_EXACT, boundscheck=False, cache=True, nogil=True, inline="always")
def _four_rows(W, A, a, i, k, j0, j1, G):  # pragma: no cover - compiled
    """``G[k, j0:j1] += Σ_{s<4} W[k, i+s-a] A[i+s, j0:j1]``, the samples in order."""
    w0 = W[k, i - a]
    w1 = W[k, i + 1 - a]
    w2 = W[k, i + 2 - a]
    w3 = W[k, i + 3 - a]
    g = G[k, j0:j1]
    a0 = A[i, j0:j1]
    a1 = A[i + 1, j0:j1]
    a2 = A[i + 2, j0:j1]
    a3 = A[i + 3, j0:j1]
    for j in range(g.shape[0]):
        g[j] = (((g[j] + w0 * a0[j]) + w1 * a1[j]) + w2 * a2[j]) + w3 * a3[j]


@_jit(fastmath=_EXACT, boundscheck=False, cache=True, nogil=True, inline="always")
def _four_rows_four_trials(W, A, a, i, k0, j0, j1, G):  # pragma: no cover - compiled
    """:func:`_four_rows` for trials ``k0..k0+3`` at once: each data load feeds four trials."""
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
    g0 = G[k0, j0:j1]
    g1 = G[k0 + 1, j0:j1]
    g2 = G[k0 + 2, j0:j1]
    g3 = G[k0 + 3, j0:j1]
    a0 = A[i, j0:j1]
    a1 = A[i + 1, j0:j1]
    a2 = A[i + 2, j0:j1]
    a3 = A[i + 3, j0:j1]
    for j in range(g0.shape[0]):
        x0 = a0[j]
        x1 = a1[j]
        x2 = a2[j]
        x3 = a3[j]
        g0[j] = (((g0[j] + w00 * x0) + w01 * x1) + w02 * x2) + w03 * x3
        g1[j] = (((g1[j] + w10 * x0) + w11 * x1) + w12 * x2) + w13 * x3
        g2[j] = (((g2[j] + w20 * x0) + w21 * x1) + w22 * x2) + w23 * x3
        g3[j] = (((g3[j] + w30 * x0) + w31 * x1) + w32 * x2) + w33 * x3


@_jit(fastmath=_EXACT, boundscheck=False, cache=True, nogil=True)
def _add_weighted_rows(W, A, a, b, G):  # pragma: no cover - compiled
    r, d = G.shape
    for j0 in range(0, d, COLUMN_BLOCK):
        j1 = min(d, j0 + COLUMN_BLOCK)
        k0 = 0
        while k0 + 3 < r:  # four trials per sweep: each data load feeds four trials
            i = a
            while i + 3 < b:
                _four_rows_four_trials(W, A, a, i, k0, j0, j1, G)
                i += 4
            while i < b:
                for k in range(k0, k0 + 4):
                    _one_row(W, A, a, i, k, j0, j1, G)
                i += 1
            k0 += 4
        for k in range(k0, r):  # the leftover trials: the same operations, one trial at a time
            i = a
            while i + 3 < b:
                _four_rows(W, A, a, i, k, j0, j1, G)
                i += 4
            while i < b:
                _one_row(W, A, a, i, k, j0, j1, G)
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
