r"""The tuner's objective: DP heavy ball's worst-case error at every horizon, for many
:math:`(\alpha,\beta)` at once **[DERIVED]**.

The worst case over quadratics is
:func:`~dpbounds.bounds.strongly_convex.quadratic_worst_case.quadratic_worst_case`'s (its
docstring has the derivation). For constant :math:`(\alpha,\beta)` and noise that is constant
over a run (each step :math:`\epsilon/T`-DP: Laplace variance :math:`\ell(T)=2b_T^2` per
coordinate, sampling variance :math:`\sigma` in total), with
:math:`U_T(\lambda)=\frac\lambda2\alpha^2\sum_{j<T}h_j(\lambda)^2` (unit noise) and
:math:`A_T(\lambda)=E_0p_T(\lambda)^2` (or :math:`D\frac\lambda2p_T^2`) it reads

.. math::

    W(T)=\max\Big(\max_\lambda[A_T+(\ell+\sigma)U_T]+(d-1)\ell\max_\lambda U_T,\;
    \max_\lambda[A_T+\ell U_T]+(\ell+\sigma+(d-2)\ell)\max_\lambda U_T\Big)

(the second term for :math:`d\ge2` only). Here the maxima are taken on a fixed grid of
:math:`\lambda` (Chebyshev-Lobatto, ``n_lambda`` points): each value is the exact error of an
admissible instance, so a lower end of the worst case; the tuner certifies its final choices
with the fine grid of ``quadratic_worst_case``.

All horizons come out of one pass: :math:`(p_T,p_{T-1})` and the noise's second moments
:math:`S_T=\sum_{j<T}M^je_1e_1^\top M^{j\top}` are carried forward, one step at a time up to
``DENSE`` and then by strides that double every octave (``S_{T+s}=S_s+M^sS_TM^{s\top}``), so
horizons above ``DENSE`` are visited with a relative spacing of at most ``1/STRIDE_PER_OCTAVE``.
The pass stops for a point once the noise alone, :math:`(d\ell(T)+\sigma)\max_\lambda U_T`
(nondecreasing in :math:`T`), reaches the best :math:`W` seen: no later horizon can do better.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__: list[str] = []

DENSE = 2048             # every horizon up to here
STRIDE_PER_OCTAVE = 1024  # horizons visited per octave beyond DENSE


def bracket_percent(brackets: list[float]) -> str:
    """The largest of ``brackets`` (``upper / attained - 1`` of the rows a table shows) as a
    percentage rounded **up** to two significant digits, so that "within x%" never claims
    more than the rows do (``"0%"`` when every row is exact, ``"inf%"`` when one is not
    finite)."""
    worst = max(brackets, default=0.0)
    if not worst > 0.0:
        return "0%"
    pct = 100.0 * worst
    if not math.isfinite(pct):
        return "inf%"
    unit = 10.0 ** (math.floor(math.log10(pct)) - 1)
    up = math.ceil(pct / unit) * unit
    text = f"{up:.{max(0, 1 - math.floor(math.log10(up)))}f}"
    while float(text) < pct:  # float rounding of the two digits: one unit more
        up += unit
        text = f"{up:.{max(0, 1 - math.floor(math.log10(up)))}f}"
    return text + "%"


def worst_case_lambda_grid(mu: float, L: float, n: int) -> np.ndarray:
    """``n`` Chebyshev-Lobatto points of ``[mu, L]`` (both ends included)."""
    k = np.arange(n)
    lam = 0.5 * (L + mu) + 0.5 * (L - mu) * np.cos(k * math.pi / max(n - 1, 1))
    lam[0], lam[-1] = L, mu
    return lam


def _plus_congruence(Q: tuple, M: tuple, S: tuple) -> tuple:
    """``Q + M S M^T`` for symmetric 2x2 ``Q = (q00, q01, q11)``, ``S`` likewise and
    ``M = (m00, m01, m10, m11)``, entrywise over arrays."""
    q00, q01, q11 = Q
    m00, m01, m10, m11 = M
    s00, s01, s11 = S
    t00, t01 = m00 * s00 + m01 * s01, m00 * s01 + m01 * s11
    t10, t11 = m10 * s00 + m11 * s01, m10 * s01 + m11 * s11
    return (q00 + t00 * m00 + t01 * m01, q01 + t00 * m10 + t01 * m11,
            q11 + t10 * m10 + t11 * m11)


@functools.lru_cache(maxsize=8)
def visited_horizons(Tmax: int) -> np.ndarray:
    """The horizons the pass visits: every one up to :data:`DENSE`, then strides that double
    every octave (the same rule as the loop of :func:`heavy_ball_worst_by_horizon`).
    Read-only and kept for the last few ``Tmax``: a tuner's search calls the pass hundreds of
    times with one ``Tmax`` (at 10^6, 11,000 horizons: 7 ms a call, a quarter of a ``tune
    hb``'s CPU before it was kept)."""
    out, T, stride = [], 0, 1
    while T + stride <= Tmax:
        T += stride
        out.append(T)
        if T >= DENSE * stride and T + 2 * stride <= Tmax:
            stride *= 2
    horizons = np.array(out, dtype=np.int64)
    horizons.flags.writeable = False
    return horizons


def heavy_ball_worst_by_horizon(
    alpha: np.ndarray, beta: np.ndarray, lam: np.ndarray, *, d: int, Tmax: int,
    laplace_var: Callable[[np.ndarray], np.ndarray], sampling_var: float,
    initial_gap: float | None, dist_sq: float | None, gamma: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Best horizon and worst-case error there, per ``(alpha[k], beta[k])`` (``inf``: unstable
    on the grid).

    ``laplace_var(T)`` gives the per-coordinate privacy variance of a run of horizon ``T``
    (arrays of horizons in, arrays out; nondecreasing in ``T``). ``gamma`` (per point, default
    0: heavy ball) is the look-ahead of the family ``y_t = x_t + gamma (x_t - x_{t-1})``
    (:func:`~dpbounds.bounds.strongly_convex.quadratic_worst_case.quadratic_worst_case`): it
    only changes the recursion's coefficients, ``a = 1 + beta - alpha lambda (1 + gamma)``,
    ``b = beta - alpha lambda gamma``; the start, the noise injection and the worst case over
    the spectrum are the same.
    """
    alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
    beta = np.broadcast_to(np.asarray(beta, dtype=float), alpha.shape).copy()
    K = alpha.size
    best_T = np.ones(K, dtype=np.int64)
    best = np.full(K, np.inf)
    lam = np.asarray(lam, dtype=float)[None, :]
    if gamma is None:  # heavy ball: the tuners' own path, unchanged
        a_ = (1.0 + beta)[:, None] - alpha[:, None] * lam  # M = [[a, -b], [1, 0]]
        b_ = np.broadcast_to(beta[:, None], a_.shape)
    else:
        g = np.broadcast_to(np.asarray(gamma, dtype=float), alpha.shape)[:, None]
        a_ = (1.0 + beta)[:, None] - alpha[:, None] * lam * (1.0 + g)
        b_ = beta[:, None] - alpha[:, None] * lam * g
    # stable on every grid eigenvalue: both roots of z^2 - a z + b inside the unit disc (Jury:
    # |a| < 1 + b and b < 1, which also gives b > -1 when b is negative, gamma > 0)
    ok = np.all((np.abs(a_) < 1.0 + b_) & (b_ < 1.0), axis=1) & (alpha > 0) & (beta >= 0)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return best_T, best
    a, b = a_[idx], b_[idx].copy()
    wgt = 0.5 * lam * (alpha[idx, None] ** 2)  # U = lambda / 2 alpha^2 S_00
    if initial_gap is not None:
        startw = np.full_like(a, float(initial_gap))
    elif dist_sq is not None:
        startw = float(dist_sq) * 0.5 * np.broadcast_to(lam, a.shape)
    else:
        raise ValueError("give initial_gap or dist_sq")
    # state: z = (p_T, p_{T-1}); S_T (unit-injection second moments, symmetric 2x2)
    z0, z1 = np.ones_like(a), np.ones_like(a)
    s00, s01, s11 = np.zeros_like(a), np.zeros_like(a), np.zeros_like(a)
    h0, h1 = np.ones_like(a), np.zeros_like(a)  # impulse response (h_T, h_{T-1}), stride 1
    # the stride's transition M^s = [[m00, m01], [m10, m11]] and its sum S_s
    m00, m01, m10, m11 = a.copy(), -b, np.ones_like(a), np.zeros_like(a)
    q00, q01, q11 = np.ones_like(a), np.zeros_like(a), np.zeros_like(a)
    stride, T = 1, 0
    live = np.arange(idx.size)
    bT, bW = best_T[idx], best[idx]
    smp = float(sampling_var)
    horizons = visited_horizons(Tmax)
    ells = np.asarray(laplace_var(horizons), dtype=float)  # one call: the same for every point
    if _use_compiled():
        _compiled_rows()(np.ascontiguousarray(a), np.ascontiguousarray(b),
                       np.ascontiguousarray(np.broadcast_to(wgt, a.shape)),
                       np.ascontiguousarray(np.broadcast_to(startw, a.shape)),
                       np.ascontiguousarray(ells), int(Tmax), int(d), smp, DENSE, bT, bW)
        best_T[idx], best[idx] = bT, bW
        return best_T, best
    step = 0
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        while live.size and T + stride <= Tmax:
            T += stride
            ell = float(ells[step])
            step += 1
            if stride == 1:
                # S_T = sum_{j<T} (h_j, h_{j-1})(h_j, h_{j-1})^T with the impulse response
                # h_{j+1} = a h_j - b h_{j-1} (h_0 = 1, h_{-1} = 0): the same sum as the
                # congruence S <- e1 e1^T + M S M^T, in 6 operations instead of 20
                z0, z1 = m00 * z0 + m01 * z1, z0
                s00, s01, s11 = s00 + h0 * h0, s01 + h0 * h1, s11 + h1 * h1
                h0, h1 = m00 * h0 + m01 * h1, h0
            else:
                z0, z1 = m00 * z0 + m01 * z1, m10 * z0 + m11 * z1
                s00, s01, s11 = _plus_congruence((q00, q01, q11), (m00, m01, m10, m11),
                                                 (s00, s01, s11))  # S <- S_s + M S M^T
            U = wgt[live] * s00
            A = startw[live] * z0 * z0
            maxU = np.max(U, axis=1)
            W = np.max(A + (ell + smp) * U, axis=1) + (d - 1) * ell * maxU
            if d >= 2:
                W = np.maximum(W, np.max(A + ell * U, axis=1) + (smp + (d - 1) * ell) * maxU)
            W = np.where(np.isfinite(W), W, np.inf)
            better = W < bW[live]
            bW[live[better]] = W[better]
            bT[live[better]] = T
            done = (d * ell + smp) * maxU >= bW[live]
            if np.any(done):  # wgt and startw stay indexed by the original rows (``live``)
                keep = ~done
                live = live[keep]
                (z0, z1, s00, s01, s11, m00, m01, m10, m11, q00, q01, q11, h0, h1) = (
                    v[keep] for v in (z0, z1, s00, s01, s11, m00, m01, m10, m11, q00, q01,
                                      q11, h0, h1))
            if T >= DENSE * stride and T + 2 * stride <= Tmax:
                # double the stride: (M^{2s}, S_{2s}) = (M^s M^s, S_s + M^s S_s M^{sT})
                n00 = m00 * m00 + m01 * m10
                n01 = m00 * m01 + m01 * m11
                n10 = m10 * m00 + m11 * m10
                n11 = m10 * m01 + m11 * m11
                q00, q01, q11 = _plus_congruence((q00, q01, q11), (m00, m01, m10, m11),
                                                 (q00, q01, q11))
                m00, m01, m10, m11 = n00, n01, n10, n11
                stride *= 2
    best_T[idx], best[idx] = bT, bW
    return best_T, best


def _use_compiled() -> bool:
    """Whether the compiled row loop runs: numba installed (the ``fast`` extra) and
    ``DPBOUNDS_KERNELS`` not ``numpy``. Imports numba on the first call only, not with this
    module (the CLI's help and error paths import the tuners' modules' names)."""
    from dpbounds.objectives._logistic_kernel import enabled

    return enabled()


_COMPILED: list[Any] = []


def _compiled_rows() -> Any:
    """:func:`_rows`, compiled on first use (numba caches it on disk). No fastmath: the
    compiled pass is bit-identical to the NumPy one."""
    if not _COMPILED:
        import numba

        _COMPILED.append(numba.njit(cache=True, nogil=True)(_rows))
    return _COMPILED[0]


def _rows(a, b, wgt, startw, ells, Tmax, d, smp, dense, bT, bW):  # pragma: no cover
    """The loop of :func:`heavy_ball_worst_by_horizon`, one point (row) at a time (the
    ``fast`` extra): the same arithmetic in the same order, so the same bits (checked in
    ``tests/tuning/test_worst_case_kernel.py``), with the row's state in cache instead of
    fifteen (points x eigenvalues) temporaries per horizon. NaN propagates through the maxima
    as in ``np.max``."""
    K, n = a.shape
    z0, z1 = np.empty(n), np.empty(n)
    s00, s01, s11 = np.empty(n), np.empty(n), np.empty(n)
    h0, h1 = np.empty(n), np.empty(n)
    m00, m01, m10, m11 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    q00, q01, q11 = np.empty(n), np.empty(n), np.empty(n)
    for k in range(K):
        for i in range(n):
            z0[i] = 1.0
            z1[i] = 1.0
            s00[i] = 0.0
            s01[i] = 0.0
            s11[i] = 0.0
            h0[i] = 1.0
            h1[i] = 0.0
            m00[i] = a[k, i]
            m01[i] = -b[k, i]
            m10[i] = 1.0
            m11[i] = 0.0
            q00[i] = 1.0
            q01[i] = 0.0
            q11[i] = 0.0
        best, bestT = bW[k], bT[k]
        stride, T, step = 1, 0, 0
        while T + stride <= Tmax:
            T += stride
            ell = ells[step]
            step += 1
            c1, c2, c3 = ell + smp, (d - 1) * ell, smp + (d - 1) * ell
            maxU, max1, max2 = -np.inf, -np.inf, -np.inf
            nan_u, nan_v = False, False
            for i in range(n):
                if stride == 1:
                    nz = m00[i] * z0[i] + m01[i] * z1[i]
                    z1[i] = z0[i]
                    z0[i] = nz
                    s00[i] = s00[i] + h0[i] * h0[i]
                    s01[i] = s01[i] + h0[i] * h1[i]
                    s11[i] = s11[i] + h1[i] * h1[i]
                    nh = m00[i] * h0[i] + m01[i] * h1[i]
                    h1[i] = h0[i]
                    h0[i] = nh
                else:
                    nz0 = m00[i] * z0[i] + m01[i] * z1[i]
                    nz1 = m10[i] * z0[i] + m11[i] * z1[i]
                    z0[i] = nz0
                    z1[i] = nz1
                    t00 = m00[i] * s00[i] + m01[i] * s01[i]
                    t01 = m00[i] * s01[i] + m01[i] * s11[i]
                    t10 = m10[i] * s00[i] + m11[i] * s01[i]
                    t11 = m10[i] * s01[i] + m11[i] * s11[i]
                    s00[i] = q00[i] + t00 * m00[i] + t01 * m01[i]
                    s01[i] = q01[i] + t00 * m10[i] + t01 * m11[i]
                    s11[i] = q11[i] + t10 * m10[i] + t11 * m11[i]
                U = wgt[k, i] * s00[i]
                A = startw[k, i] * z0[i] * z0[i]
                v1 = A + c1 * U
                v2 = A + ell * U
                if U != U:
                    nan_u = True
                if v1 != v1 or v2 != v2:
                    nan_v = True
                if U > maxU:
                    maxU = U
                if v1 > max1:
                    max1 = v1
                if v2 > max2:
                    max2 = v2
            if nan_u or nan_v:  # np.max's NaN: W is NaN, then inf
                W = np.inf
            else:
                W = max1 + c2 * maxU
                if d >= 2:
                    W2 = max2 + c3 * maxU
                    if W2 != W2 or W != W:
                        W = np.nan
                    elif W2 > W:
                        W = W2
                if not math.isfinite(W):
                    W = np.inf
            if W < best:
                best = W
                bestT = T
            if not nan_u and (d * ell + smp) * maxU >= best:  # NaN compares False
                break
            if T >= dense * stride and T + 2 * stride <= Tmax:
                for i in range(n):
                    n00 = m00[i] * m00[i] + m01[i] * m10[i]
                    n01 = m00[i] * m01[i] + m01[i] * m11[i]
                    n10 = m10[i] * m00[i] + m11[i] * m10[i]
                    n11 = m10[i] * m01[i] + m11[i] * m11[i]
                    t00 = m00[i] * q00[i] + m01[i] * q01[i]
                    t01 = m00[i] * q01[i] + m01[i] * q11[i]
                    t10 = m10[i] * q00[i] + m11[i] * q01[i]
                    t11 = m10[i] * q01[i] + m11[i] * q11[i]
                    nq00 = q00[i] + t00 * m00[i] + t01 * m01[i]
                    nq01 = q01[i] + t00 * m10[i] + t01 * m11[i]
                    nq11 = q11[i] + t10 * m10[i] + t11 * m11[i]
                    q00[i], q01[i], q11[i] = nq00, nq01, nq11
                    m00[i], m01[i], m10[i], m11[i] = n00, n01, n10, n11
                stride *= 2
        bW[k], bT[k] = best, bestT
