r"""Compiled full-data pass of logistic regression (optional; needs ``numba``: the ``fast`` extra).

One call evaluates, for every trial ``t``, the summed loss :math:`\sum_i\psi(z_i)` at ``X[t]`` and
the summed gradient weights :math:`\sum_i\psi'(z'_i)\,u_i` at ``G[t]`` (``G is X`` for heavy ball
and gradient descent, the look-ahead point for Nesterov), with
:math:`\psi(z)=\log(1+e^{-z})`, :math:`z_i=u_i^\top x`, :math:`u_i=y_ia_i`, in one pass over the
data: each block of :data:`BLOCK` samples is read once for all trials, from the cache.

Why a compiled pass
-------------------
The NumPy pass (:meth:`MarginLossObjective._full_pass`) is bound by temporaries and by small
fixed-shape matrix products: about 12 ns per sample and trial in the Kuru et al. Section-5
workload. Fusing the products and the elementwise work in one loop, with the sigmoid's and the
loss's shared ``exp`` computed in vector registers, is what brings that workload near the
machine's limit (``bench/bench_kuru_workload.py``; the numbers are in CHANGELOG.md).

Same bits for trial k, whatever the number of trials
----------------------------------------------------
Trials are processed in groups of :data:`GROUP` and the last group is padded with zero rows, so
every trial goes through the same machine code in the same position-independent order: the
margins are sums in the order ``j = 0..d-1`` (one fused multiply-add per term), the loss and
gradient sums over a block are vectorised reductions whose order depends only on the block
length, and blocks are added in order. Trial ``k``'s result therefore depends only on its own
state (tested across trial counts). The bits do depend on the CPU's vector width, as BLAS's do.

Accuracy (tested against the NumPy pass, SciPy's ``expit`` / ``logaddexp`` and mpmath)
-------------------------------------------------------------------------------------
* ``exp(-|z|)`` is computed as :math:`2^k\,p(r)`, :math:`r=t-k\ln 2` (Cody-Waite split of
  :math:`\ln 2`; :math:`k` the integer nearest :math:`t\log_2e`, read from the bits of
  :math:`t\log_2e+1.5\cdot2^{52}`, so that :math:`2^k` needs integer vector operations only:
  AVX2 has no vector double-to-int64 conversion), :math:`p` the degree-13 Taylor polynomial
  (remainder below :math:`4\cdot10^{-18}` on :math:`|r|\le\ln2/2`): within 1 ulp of
  ``np.exp``. Margins beyond
  708 in absolute value are clamped there (the sigmoid's tail is then :math:`3\cdot10^{-308}`
  instead of smaller: an absolute error below 4e-308).
* :math:`\sum_{i\in\text{block}}\log(1+e_i)` is :math:`\log\prod_i(1+e_i)`: one ``log`` per block
  of :data:`BLOCK` = 128 factors in :math:`(1,2]` (no overflow). The relative error of the
  product is at most about :math:`2\cdot128\,\epsilon`, so the block's loss is off by at most
  :math:`3\cdot10^{-14}` in absolute terms, for a block sum of order 50: round-off.
* The gradient weight :math:`-\sigma(-z)` is ``-(e if z >= 0 else 1) · r`` with
  :math:`r\approx1/(1+e)` from four Newton steps :math:`r\leftarrow r+r(1-ur)` started at
  :math:`24/17-8u/17` (relative error at most :math:`1/17`, squared by each step, so below
  :math:`10^{-19}` before rounding): within 4 ulp of SciPy's ``expit(-z)`` for :math:`|z|<700`
  and 2 ulp of mpmath on :math:`|z|\le30` (tested), at a quarter of a division's cost.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

try:  # optional: the ``fast`` extra
    import numba
except ImportError:  # pragma: no cover - exercised in the environments without numba
    numba = None  # type: ignore[assignment]  # the module-or-None idiom for an optional import

__all__ = []

#: Whether numba is importable (the ``fast`` extra).
AVAILABLE = numba is not None
#: Samples per block: the ``d · BLOCK`` doubles of features (20 KiB at d = 20) stay in the L1
#: cache for all trials (128 measured about 5% faster than 256 with 512-bit vectors), and a
#: block's product of ``1 + e`` factors (each in (1, 2]) stays far below overflow.
BLOCK = 128
#: Trials per group: each feature value loaded is used by this many fused multiply-adds.
GROUP = 4

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k·_LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10
_C = [1.0 / math.factorial(k) for k in range(14)]
_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13 = _C[2:14]
_CLAMP = -708.0  # exp(-708) is still a normal number
#: 1.5 * 2^52: for |x| < 2^51, ``x + _MAGIC`` rounds x to the nearest integer k (ties to even)
#: and holds it in its low mantissa bits: bits(x + _MAGIC) = bits(_MAGIC) + k.
_MAGIC = 6755399441055744.0
_MAGIC_OFFSET = int(np.float64(_MAGIC).view(np.int64)) - 1023  # bits(_MAGIC) - exponent bias
_R0, _R1 = 24.0 / 17.0, 8.0 / 17.0  # linear start of Newton's 1/u on [1, 2] (error <= 1/17)


#: Largest feature count at which ``DPBOUNDS_KERNELS=auto`` takes the compiled full-data pass
#: (above it, the NumPy pass, whose products with the data come from the column-blocked kernels
#: of :mod:`._wide_kernel` with numba, from BLAS without). Measured by
#: ``bench/bench_compiled_vs_blas.py`` (results in ``bench/bench_compiled_vs_blas.md``, AMD
#: EPYC family 26, AVX-512): up to d = 4096 the compiled pass is 1.5-4.3x faster at every batch
#: of 1, 4 and 16 trials; above it the winner depends on the number of trials (at
#: d = 16384-262144 the compiled pass wins by 1.2-2x at 1-4 trials and loses by 1.2-2.4x at 16,
#: where each group of 4 trials re-reads a block of the data that no longer fits in the cache,
#: while BLAS reads it once per 8 rows). The rule depends on ``d`` only, never on the number of
#: trials (the passes differ in the last bits, and trial ``k`` must not depend on the trials
#: beside it), so it takes the side that never loses; above it the pass also needs no
#: ``(d, n)`` copy of the data (one copy at large d: memory ~1x the data).
COMPILED_MAX_D = 4096


def _choice() -> str:
    choice = os.environ.get("DPBOUNDS_KERNELS", "auto").strip().lower()
    if choice not in ("auto", "numba", "numpy"):
        raise ValueError(f"DPBOUNDS_KERNELS must be 'auto', 'numba' or 'numpy', got {choice!r}")
    if choice == "numba" and not AVAILABLE:
        raise ValueError("DPBOUNDS_KERNELS=numba needs numba: pip install 'dpbounds[fast]'")
    return choice


def enabled() -> bool:
    """Whether the compiled kernels are used: numba is installed and ``DPBOUNDS_KERNELS`` is not
    ``numpy`` (set it to compare with, or fall back to, the NumPy pass)."""
    return AVAILABLE and _choice() != "numpy"


def full_pass_chosen(d: int) -> bool:
    """Whether the compiled *full-data* pass is used for ``d`` features: ``DPBOUNDS_KERNELS`` is
    ``numba``, or ``auto`` (the default) with numba installed and ``d <= COMPILED_MAX_D``."""
    choice = _choice()
    if choice == "numba":
        return True
    return AVAILABLE and choice == "auto" and d <= COMPILED_MAX_D


def _identity_decorator(*args: Any, **kwargs: Any):
    def wrap(fn):
        return fn
    return wrap


_jit = numba.njit if AVAILABLE else _identity_decorator
_EXACT = {"contract"}  # fused multiply-adds, no reordering
_SUMS = {"contract", "reassoc"}  # vectorised reductions (a fixed order per block length)


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _margins(Zf, N, d, X, t, a, n, z):  # pragma: no cover - compiled
    """``z[k, :n] = Σ_j X[t+k, j] Zt[j, a:a+n]`` for the GROUP trials, in order j = 0..d-1.

    The first sweep takes the ``d mod 4`` leading feature rows (4 when d is a multiple of 4)
    and writes the margins; every later sweep takes 4 rows. Each margin is the same chain of
    operations as before this layout (a product for row 0, then one fused multiply-add per row
    in order), so the bits are unchanged; but no sweep takes a single row any more: a sweep
    loads and stores the 4 margin rows whatever its width, and one-row sweeps (3 of 8 at
    d = 20) were bound by those stores, not by their 4 multiply-adds (the pass: 2-6% less CPU
    at d = 20 on a Zen 3). Row 0's term is ``0 + x_0 u_0``, a fused multiply-add onto +0, which
    rounds the product once (as the stored product did): written ``x_0 u_0 + x_1 u_1`` the
    compiler may fuse either product (both are legal contractions; LLVM 14 fused row 0's, one
    ulp off on about half the margins). ``+0`` cannot be folded away without ``nsz``, so the
    order is pinned (tested against exact rational arithmetic); a margin that is exactly zero
    may now be +0 where it was -0, which nothing downstream tells apart.
    """
    z0 = z[0]
    z1 = z[1]
    z2 = z[2]
    z3 = z[3]
    r = d % 4
    if r == 0:
        r = min(d, 4)
    y1 = Zf[a:a + n]
    a0, b0, c0, e0 = X[t, 0], X[t + 1, 0], X[t + 2, 0], X[t + 3, 0]
    if r == 1:
        for i in range(n):
            v1 = y1[i]
            z0[i] = a0 * v1
            z1[i] = b0 * v1
            z2[i] = c0 * v1
            z3[i] = e0 * v1
    elif r == 2:
        y2 = Zf[N + a:N + a + n]
        a1, b1, c1, e1 = X[t, 1], X[t + 1, 1], X[t + 2, 1], X[t + 3, 1]
        for i in range(n):
            v1 = y1[i]
            v2 = y2[i]
            s = 0.0
            s += a0 * v1
            s += a1 * v2
            z0[i] = s
            s = 0.0
            s += b0 * v1
            s += b1 * v2
            z1[i] = s
            s = 0.0
            s += c0 * v1
            s += c1 * v2
            z2[i] = s
            s = 0.0
            s += e0 * v1
            s += e1 * v2
            z3[i] = s
    elif r == 3:
        y2 = Zf[N + a:N + a + n]
        y3 = Zf[2 * N + a:2 * N + a + n]
        a1, b1, c1, e1 = X[t, 1], X[t + 1, 1], X[t + 2, 1], X[t + 3, 1]
        a2, b2, c2, e2 = X[t, 2], X[t + 1, 2], X[t + 2, 2], X[t + 3, 2]
        for i in range(n):
            v1 = y1[i]
            v2 = y2[i]
            v3 = y3[i]
            s = 0.0
            s += a0 * v1
            s += a1 * v2
            s += a2 * v3
            z0[i] = s
            s = 0.0
            s += b0 * v1
            s += b1 * v2
            s += b2 * v3
            z1[i] = s
            s = 0.0
            s += c0 * v1
            s += c1 * v2
            s += c2 * v3
            z2[i] = s
            s = 0.0
            s += e0 * v1
            s += e1 * v2
            s += e2 * v3
            z3[i] = s
    else:
        y2 = Zf[N + a:N + a + n]
        y3 = Zf[2 * N + a:2 * N + a + n]
        y4 = Zf[3 * N + a:3 * N + a + n]
        a1, b1, c1, e1 = X[t, 1], X[t + 1, 1], X[t + 2, 1], X[t + 3, 1]
        a2, b2, c2, e2 = X[t, 2], X[t + 1, 2], X[t + 2, 2], X[t + 3, 2]
        a3, b3, c3, e3 = X[t, 3], X[t + 1, 3], X[t + 2, 3], X[t + 3, 3]
        for i in range(n):
            v1 = y1[i]
            v2 = y2[i]
            v3 = y3[i]
            v4 = y4[i]
            s = 0.0
            s += a0 * v1
            s += a1 * v2
            s += a2 * v3
            s += a3 * v4
            z0[i] = s
            s = 0.0
            s += b0 * v1
            s += b1 * v2
            s += b2 * v3
            s += b3 * v4
            z1[i] = s
            s = 0.0
            s += c0 * v1
            s += c1 * v2
            s += c2 * v3
            s += c3 * v4
            z2[i] = s
            s = 0.0
            s += e0 * v1
            s += e1 * v2
            s += e2 * v3
            s += e3 * v4
            z3[i] = s
    j = r
    while j + 4 <= d:  # four feature rows per sweep: each load feeds 16 multiply-adds
        o = j * N + a
        y1 = Zf[o:o + n]
        y2 = Zf[o + N:o + N + n]
        y3 = Zf[o + 2 * N:o + 2 * N + n]
        y4 = Zf[o + 3 * N:o + 3 * N + n]
        a0, a1, a2, a3 = X[t, j], X[t, j + 1], X[t, j + 2], X[t, j + 3]
        b0, b1, b2, b3 = X[t + 1, j], X[t + 1, j + 1], X[t + 1, j + 2], X[t + 1, j + 3]
        c0, c1, c2, c3 = X[t + 2, j], X[t + 2, j + 1], X[t + 2, j + 2], X[t + 2, j + 3]
        e0, e1, e2, e3 = X[t + 3, j], X[t + 3, j + 1], X[t + 3, j + 2], X[t + 3, j + 3]
        for i in range(n):
            v1 = y1[i]
            v2 = y2[i]
            v3 = y3[i]
            v4 = y4[i]
            s = z0[i]
            s += a0 * v1
            s += a1 * v2
            s += a2 * v3
            s += a3 * v4
            z0[i] = s
            s = z1[i]
            s += b0 * v1
            s += b1 * v2
            s += b2 * v3
            s += b3 * v4
            z1[i] = s
            s = z2[i]
            s += c0 * v1
            s += c1 * v2
            s += c2 * v3
            s += c3 * v4
            z2[i] = s
            s = z3[i]
            s += e0 * v1
            s += e1 * v2
            s += e2 * v3
            s += e3 * v4
            z3[i] = s
        j += 4


@_jit(fastmath=_SUMS, boundscheck=False, cache=True)
def _weighted_sums(Zf, N, d, w, a, n, g):  # pragma: no cover - compiled
    """``g[k, j] += Σ_i w[k, i] Zt[j, a+i]`` for the GROUP trials."""
    w0 = w[0]
    w1 = w[1]
    w2 = w[2]
    w3 = w[3]
    j = 0
    while j + 2 <= d:
        o = j * N + a
        y1 = Zf[o:o + n]
        y2 = Zf[o + N:o + N + n]
        s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = 0.0
        for i in range(n):
            v1 = y1[i]
            v2 = y2[i]
            q = w0[i]
            s00 += q * v1
            s01 += q * v2
            q = w1[i]
            s10 += q * v1
            s11 += q * v2
            q = w2[i]
            s20 += q * v1
            s21 += q * v2
            q = w3[i]
            s30 += q * v1
            s31 += q * v2
        g[0, j] += s00
        g[0, j + 1] += s01
        g[1, j] += s10
        g[1, j + 1] += s11
        g[2, j] += s20
        g[2, j + 1] += s21
        g[3, j] += s30
        g[3, j + 1] += s31
        j += 2
    while j < d:
        o = j * N + a
        y1 = Zf[o:o + n]
        s00 = s10 = s20 = s30 = 0.0
        for i in range(n):
            v1 = y1[i]
            s00 += w0[i] * v1
            s10 += w1[i] * v1
            s20 += w2[i] * v1
            s30 += w3[i] * v1
        g[0, j] += s00
        g[1, j] += s10
        g[2, j] += s20
        g[3, j] += s30
        j += 1


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _exp_parts(z, n, p, scale_bits):  # pragma: no cover - compiled
    """``exp(-|z|) = p · 2^k`` with the bits of ``2^k`` in ``scale_bits`` (read as float64)."""
    kb = scale_bits.view(np.float64)  # holds t log2 e + _MAGIC until the second loop
    for i in range(n):
        t = max(-abs(z[i]), _CLAMP)
        kd = t * _LOG2E + _MAGIC  # k = round(t log2 e) in kd's low mantissa bits
        k = kd - _MAGIC  # exact
        r = t - k * _LN2_HI
        r = r - k * _LN2_LO
        q = _C13
        q = q * r + _C12
        q = q * r + _C11
        q = q * r + _C10
        q = q * r + _C9
        q = q * r + _C8
        q = q * r + _C7
        q = q * r + _C6
        q = q * r + _C5
        q = q * r + _C4
        q = q * r + _C3
        q = q * r + _C2
        q = q * r + 1.0
        q = q * r + 1.0
        p[i] = q
        kb[i] = kd
    # 2^k from kd's bits with integer vector operations: without AVX-512 there is no vector
    # double -> int64 conversion, and np.int64(k) made LLVM convert one element at a time
    # (measured 7-11% of the whole pass on an AVX2 EPYC; results bit-identical)
    for i in range(n):
        scale_bits[i] = (scale_bits[i] - _MAGIC_OFFSET) << 52


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _exp_neg_abs(z, p, scale_bits, out):  # pragma: no cover - compiled
    n = z.shape[0]
    scale = scale_bits.view(np.float64)
    for a in range(0, n, BLOCK):
        m = min(n, a + BLOCK) - a
        _exp_parts(z[a:a + m], m, p, scale_bits)
        for i in range(m):
            out[a + i] = p[i] * scale[i]


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _weights(z, n, p, scale, one_plus, w):  # pragma: no cover - compiled
    """``one_plus = 1 + e`` and ``w = -σ(-z) = -(e if z >= 0 else 1)/(1 + e)``, e = exp(-|z|)."""
    for i in range(n):
        e = p[i] * scale[i]
        u = 1.0 + e
        one_plus[i] = u
        # 1/u for u in (1, 2] by Newton's iteration (a division is 4x the cost of these FMAs):
        # the start 24/17 - 8u/17 is within 1/17; four steps square the error to < 1e-19
        r = _R0 - _R1 * u
        r = r + r * (1.0 - u * r)
        r = r + r * (1.0 - u * r)
        r = r + r * (1.0 - u * r)
        r = r + r * (1.0 - u * r)
        w[i] = -(e if z[i] >= 0.0 else 1.0) * r


@_jit(fastmath=_SUMS, boundscheck=False, cache=True)
def _block_loss(z, n, one_plus):  # pragma: no cover - compiled
    """``Σ_i max(-z_i, 0) + log Π_i (1 + e_i)`` over one block (at most BLOCK factors in (1, 2])."""
    prod = 1.0
    relu = 0.0
    for i in range(n):
        prod *= one_plus[i]
        relu += max(-z[i], 0.0)
    return relu + math.log(prod)


@_jit(fastmath=_SUMS, boundscheck=False, cache=True)
def _block_loss_parts(z, n, p, scale):  # pragma: no cover - compiled
    """:func:`_block_loss` with the factors ``1 + e_i = 1 + p_i 2^k_i`` formed in the product's
    loop (one fused multiply-add each, as :func:`_weights` forms them), not stored: the loss
    without the gradient (measured 8% less CPU than storing them first)."""
    prod = 1.0
    relu = 0.0
    for i in range(n):
        prod *= 1.0 + p[i] * scale[i]
        relu += max(-z[i], 0.0)
    return relu + math.log(prod)


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _logistic_pass(Zf, N, X, G, want_loss, want_grad, same):  # pragma: no cover - compiled
    T, d = X.shape
    Tp = (T + GROUP - 1) // GROUP * GROUP
    Xp = np.zeros((Tp, d))  # padded with zero trials: every trial runs the same code
    Xp[:T] = X
    Gp = np.zeros((Tp, d))
    if not same:
        Gp[:T] = G
    loss = np.zeros(Tp)
    grad = np.zeros((Tp, d))
    # rows BLOCK + 8 long: rows 2 KiB apart would alias in the L1 (4 KiB), stalling the loads
    z = np.empty((GROUP, BLOCK + 8))
    zg = np.empty((GROUP, BLOCK + 8))
    w = np.empty((GROUP, BLOCK + 8))
    p = np.empty(BLOCK)
    bits = np.empty(BLOCK, np.int64)
    scale = bits.view(np.float64)
    one_plus = np.empty(BLOCK)
    for a in range(0, N, BLOCK):
        n = min(N, a + BLOCK) - a
        for t in range(0, Tp, GROUP):
            if want_loss or same:
                _margins(Zf, N, d, Xp, t, a, n, z)
            if want_grad and not same:
                _margins(Zf, N, d, Gp, t, a, n, zg)
            for k in range(GROUP):
                if want_loss:
                    _exp_parts(z[k], n, p, bits)
                    if want_grad and same:
                        _weights(z[k], n, p, scale, one_plus, w[k])
                        loss[t + k] += _block_loss(z[k], n, one_plus)
                    else:
                        loss[t + k] += _block_loss_parts(z[k], n, p, scale)
                if want_grad and not (want_loss and same):
                    zk = z[k] if same else zg[k]
                    _exp_parts(zk, n, p, bits)
                    _weights(zk, n, p, scale, one_plus, w[k])
            if want_grad:
                _weighted_sums(Zf, N, d, w, a, n, grad[t:t + GROUP])
    return loss[:T], grad[:T]


@_jit(fastmath=_SUMS, boundscheck=False, cache=True)
def _row_margins(Z, x, rows, S, z):  # pragma: no cover - compiled
    """``z[k] = S[rows[k]] (Z[rows[k]] · x)`` (a vectorised reduction over the d features; the
    label's sign after it: the bits of the signed row's product), or without ``S`` if empty."""
    d = Z.shape[1]
    signed = S.shape[0] > 0
    for k in range(rows.shape[0]):
        row = Z[rows[k]]
        s = 0.0
        for j in range(d):
            s += row[j] * x[j]
        z[k] = s * S[rows[k]] if signed else s


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _row_accumulate(Z, w, rows, S, g):  # pragma: no cover - compiled
    """``g += Σ_k w[k] S[rows[k]] Z[rows[k]]``, the rows in order (vectorised over the
    features; without ``S`` if empty)."""
    d = Z.shape[1]
    signed = S.shape[0] > 0
    for k in range(rows.shape[0]):
        row = Z[rows[k]]
        wk = w[k] * S[rows[k]] if signed else w[k]
        for j in range(d):
            g[j] += wk * row[j]


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _minibatch_gradient(Z, X, idx, S):  # pragma: no cover - compiled
    T, d = X.shape
    m = idx.shape[1]
    grad = np.zeros((T, d))
    z = np.empty(m)
    w = np.empty(m)
    p = np.empty(BLOCK)
    bits = np.empty(BLOCK, np.int64)
    one_plus = np.empty(BLOCK)
    for t in range(T):  # trial by trial: nothing depends on the other trials
        _row_margins(Z, X[t], idx[t], S, z)
        for a in range(0, m, BLOCK):
            k = min(m, a + BLOCK) - a
            _exp_parts(z[a:a + k], k, p, bits)
            _weights(z[a:a + k], k, p, bits.view(np.float64), one_plus, w[a:a + k])
        _row_accumulate(Z, w, idx[t], S, grad[t])
    return grad


def minibatch_gradient(features: np.ndarray, X: np.ndarray, idx: np.ndarray, *,
                       signs: np.ndarray | None = None, check_signs: bool = True) -> np.ndarray:
    r"""Summed logistic gradients :math:`\sum_{k}\psi'(u_{i_k}^\top x_t)u_{i_k}` over each
    trial's mini-batch ``idx[t]`` (``features``: the ``(n, d)`` rows ``a_i``, ``u_i = y_i a_i``
    with ``y = signs``, or ``u_i = a_i`` when ``signs`` is None), without gathering the
    ``(trials, m, d)`` rows. ``check_signs=False`` skips the O(n) check that ``signs`` is a
    float64 array of ±1 (an objective validated its labels once)."""
    if not AVAILABLE:
        raise ValueError("minibatch_gradient needs numba: pip install 'dpbounds[fast]'")
    n, d = features.shape
    X = np.ascontiguousarray(X, dtype=np.float64)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if X.ndim != 2 or X.shape[1] != d or idx.ndim != 2 or idx.shape[0] != X.shape[0]:
        raise ValueError(f"X must have shape (trials, {d}) and idx (trials, m), got {X.shape} "
                         f"and {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"idx must lie in [0, {n}), got [{idx.min()}, {idx.max()}]")
    return _minibatch_gradient(features, X, idx, _signs(signs, n, check_signs))


def _signs(signs: np.ndarray | None, n: int, check: bool = True) -> np.ndarray:
    """The labels as a float64 array of ``n`` values ±1 (empty when None: no signs);
    ``check=False`` trusts a float64 array of the right length (an O(n) check per call costs as
    much as a small mini-batch step)."""
    if signs is None:
        return np.empty(0)
    if not check and isinstance(signs, np.ndarray) and signs.dtype == np.float64 \
            and signs.shape == (n,) and signs.flags.c_contiguous:
        return signs
    s = np.ascontiguousarray(signs, dtype=np.float64).reshape(-1)
    if s.shape[0] != n or not np.all(np.abs(s) == 1.0):
        raise ValueError(f"signs must be {n} values in {{-1, +1}}")
    return s


def exp_neg_abs(z: np.ndarray) -> np.ndarray:
    """``exp(-|z|)`` by the kernel's vectorised exponential (for tests and diagnostics)."""
    if not AVAILABLE:
        raise ValueError("exp_neg_abs needs numba: pip install 'dpbounds[fast]'")
    z = np.ascontiguousarray(z, dtype=np.float64).reshape(-1)
    out = np.empty_like(z)
    _exp_neg_abs(z, np.empty(BLOCK), np.empty(BLOCK, np.int64), out)
    return out


@_jit(fastmath=_EXACT, boundscheck=False, cache=True)
def _sigmoid_weights(z, out):  # pragma: no cover - compiled
    n = z.shape[0]
    p = np.empty(BLOCK)
    bits = np.empty(BLOCK, np.int64)
    one_plus = np.empty(BLOCK)
    for a in range(0, n, BLOCK):
        m = min(n, a + BLOCK) - a
        _exp_parts(z[a:a + m], m, p, bits)
        _weights(z[a:a + m], m, p, bits.view(np.float64), one_plus, out[a:a + m])


def sigmoid_weights(z: np.ndarray) -> np.ndarray:
    """``ψ'(z) = -1/(1 + e^z)`` by the kernel's exponential and reciprocal (for tests)."""
    if not AVAILABLE:
        raise ValueError("sigmoid_weights needs numba: pip install 'dpbounds[fast]'")
    z = np.ascontiguousarray(z, dtype=np.float64).reshape(-1)
    out = np.empty_like(z)
    _sigmoid_weights(z, out)
    return out


def logistic_pass(features_t: np.ndarray, X: np.ndarray, G: np.ndarray | None, *,
                  loss: bool, grad: bool) -> tuple[np.ndarray, np.ndarray]:
    """Summed logistic losses at ``X`` and summed gradients at ``G`` (``None``: at ``X``).

    Parameters
    ----------
    features_t : ndarray, shape (d, n)
        The rows ``u_i = y_i a_i`` as columns, C-contiguous float64.
    X : ndarray, shape (trials, d)
        Points of the loss.
    G : ndarray, shape (trials, d)
        Points of the gradient.
    loss : bool
        Whether to compute the loss (else that output is zeros).
    grad : bool
        Whether to compute the gradient (else that output is zeros).

    Returns
    -------
    (ndarray (trials,), ndarray (trials, d))
        :math:`\\sum_i\\log(1+e^{-u_i^\\top x_t})` and :math:`\\sum_i\\psi'(u_i^\\top g_t)u_i`.
    """
    if not AVAILABLE:
        raise ValueError("logistic_pass needs numba: pip install 'dpbounds[fast]'")
    d, n = features_t.shape
    X = np.ascontiguousarray(X, dtype=np.float64)
    same = G is None
    Gc = X if same else np.ascontiguousarray(G, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != d or Gc.shape != X.shape:
        raise ValueError(f"X and G must have shape (trials, {d}), got {X.shape} and {Gc.shape}")
    return _logistic_pass(features_t.reshape(-1), n, X, Gc, bool(loss), bool(grad), same)
