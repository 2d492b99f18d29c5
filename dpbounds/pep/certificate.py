r"""The dual certificate of the noise-aware PEP, checked in exact rational arithmetic.

A certificate is a set of multipliers of the SDP's constraints (:mod:`dpbounds.pep.stochastic`):
:math:`\rho_{ij}\ge0` for the interpolation inequalities (unscaled form), :math:`\lambda_0\ge0`
for the start, :math:`\lambda_t\ge0` for the noise variances, and the entries of the dual matrix
at the orthogonality positions (their multipliers are free). It proves

.. math:: \text{worst case}\le\lambda_0E_0+\sum_t\lambda_ts_t^2\qquad\text{for every }E_0,s\ge0

when (**[DERIVED]**, weak duality; none of these conditions involves :math:`E_0` or :math:`s`)

* the function values cancel: :math:`\sum_{ij}\rho_{ij}(e_j-e_i)+\lambda_0e_0[\text{gap}]=
  e_{x_T}[\text{function value}]` (:math:`e_\ast` dropped, :math:`F^\ast=0`);
* :math:`S=\sum_{ij}\rho_{ij}Q_{ij}/c+\lambda_0E_{00}[\text{distance}]+\sum_t\lambda_tE_{\xi_t\xi_t}
  +N-C\succeq0`, :math:`N` supported on the orthogonality positions, :math:`C` the objective's
  Gram part. For any feasible :math:`(G,f)` the objective equals
  :math:`\sum\rho_{ij}(\text{ineq}_{ij})+\lambda_0f_0+\sum_t\lambda_tG_{\xi_t\xi_t}-\langle S,G
  \rangle\le\lambda_0E_0+\sum_t\lambda_ts_t^2`.

:func:`verify_pep_certificate` rebuilds every matrix from the method's floats as exact
:class:`~fractions.Fraction` (a float is a dyadic rational; the inequalities are scaled by
:math:`c=2(L-\mu)` so no division enters), checks the equalities exactly and :math:`cS\succeq0` by
an exact :math:`LDL^\top` factorisation. :func:`certificate_from_duals` turns a float dual into a
candidate: multipliers clipped at 0 and read as the rationals they are, then the function-value
equalities repaired exactly by adding to the pairs with the minimiser (each touches one point's
value); the solver's margin (:math:`S\succeq\varepsilon I`) absorbs that repair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpbounds._validation import check_nonnegative, check_positive
from dpbounds.pep.formulation import (
    SOURCE_STOCHASTIC_PEP,
    FixedStepMethod,
    Layout,
    layout,
)
from dpbounds.provenance import Source

__all__ = ["PEPCertificate", "verify_pep_certificate"]


def _up(x: Fraction) -> float:
    """The smallest float >= x."""
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


@dataclass(frozen=True)
class PEPCertificate:
    r"""Dual multipliers proving :math:`\text{worst}\le\lambda_0E_0+\sum_t\lambda_ts_t^2`.

    Exact rationals; ``rho`` follows ``layout(...).pairs()`` and ``orth_values`` follows
    ``layout(...).orthogonal()`` (empty without the orthogonality constraints).

    Attributes
    ----------
    lambda_initial:
        :math:`\lambda_0`, the weight of the start (:math:`E_0` or :math:`R^2`).
    lambda_noise:
        :math:`\lambda_t`, the weight of :math:`s_t^2`, :math:`t=0..T-1`.
    margin:
        The relative margin of the SDP whose dual was rounded (``MARGINS``).
    repair:
        Total mass added to the minimiser pairs to make the function-value equalities exact.
    window:
        ``None``: the full PEP in the noise basis (``rho`` over ``layout(...).pairs()``);
        an integer :math:`w`: the banded relaxation of :mod:`dpbounds.pep.banded` in the
        iterate basis (``rho`` over ``banded_layout(...).pairs()``, ``orth_values`` the
        multipliers of ``banded_layout(...).orthogonal()``).
    """

    method: FixedStepMethod
    mu: float
    L: float
    T: int
    objective: str
    initial: str
    noise_orthogonal: bool
    rho: tuple[Fraction, ...]
    lambda_initial: Fraction
    lambda_noise: tuple[Fraction, ...]
    orth_values: tuple[Fraction, ...]
    margin: float
    repair: float
    source: Source = SOURCE_STOCHASTIC_PEP
    window: int | None = None

    @property
    def lambdas(self) -> np.ndarray:
        """:math:`(\\lambda_0,\\lambda_0..\\lambda_{T-1})` as floats rounded up."""
        return np.array([_up(self.lambda_initial), *(_up(v) for v in self.lambda_noise)])

    def bound(self, initial_value: float, noise_variances: Any) -> float:
        r""":math:`\lambda_0\cdot\text{initial\_value}+\sum_t\lambda_ts_t^2`, exact, rounded up.

        Parameters
        ----------
        initial_value:
            :math:`E_0` (or :math:`R^2` for a distance start), >= 0.
        noise_variances:
            :math:`s_t^2\ge0` (a number: every step).
        """
        e0 = Fraction(float(check_nonnegative("initial_value", initial_value)))
        s = np.broadcast_to(np.asarray(check_nonnegative("noise_variances", noise_variances),
                                       dtype=float), (self.T,))
        total = self.lambda_initial * e0 + sum(
            (lam * Fraction(float(v)) for lam, v in zip(self.lambda_noise, s, strict=True)),
            Fraction(0))
        return _up(total)


def _exact_psd(S: list[list[Fraction]]) -> bool:
    """Exact positive semidefiniteness of a symmetric rational matrix by LDL^T (no pivoting:
    a zero pivot needs a zero column below it)."""
    A = [row[:] for row in S]  # only the lower triangle (j <= i) is read and updated
    n = len(A)
    for k in range(n):
        p = A[k][k]
        if p < 0:
            return False
        if p == 0:
            if any(A[i][k] != 0 for i in range(k + 1, n)):
                return False
            continue
        for i in range(k + 1, n):
            if not A[i][k]:
                continue
            m = A[i][k] / p
            rowi = A[i]
            for j in range(k + 1, i + 1):
                if A[j][k]:
                    rowi[j] -= m * A[j][k]
    return True


def _psd_by_rounding(S: list[list[Fraction]], bits: int = 96) -> bool:
    r"""A sufficient exact test of S >= 0 that keeps the LDL^T numbers short.

    Each entry is rounded to the nearest integer multiple :math:`R_{ij}u` of
    :math:`u=2^{-k}`, :math:`k` chosen so the largest entry has about ``bits`` bits: then
    :math:`S=uR+E` with :math:`|E_{ij}|\le u/2`, :math:`\lVert E\rVert_2\le nu/2`, and
    :math:`R-nI\succeq0` (checked exactly, on integers; a factor 2 to spare) gives
    :math:`\lambda_{\min}(S)\ge nu-nu/2>0`. The exact LDL^T of S itself carries the method's
    powers :math:`\beta^t` (53 t bits) through every pivot: 4.4 s at n = 32 (T = 15), against
    0.05 s here. A certificate has a margin (:math:`S\succeq\varepsilon I`), so the rounding
    costs nothing there.
    """
    n = len(S)
    top = max((abs(v) for row in S for v in row), default=Fraction(0))
    if top == 0:
        return True
    k = bits - (top.numerator.bit_length() - top.denominator.bit_length())
    num, den = (1 << k, 1) if k >= 0 else (1, 1 << -k)
    # nearest integer to v 2^k: floor((2 p num + q den) / (2 q den)) for v = p / q
    R = [[(2 * v.numerator * num + v.denominator * den) // (2 * v.denominator * den)
          for v in row] for row in S]
    for i in range(n):
        R[i][i] -= n
    return _positive_definite_int(R)


def _positive_definite_int(R: list[list[int]]) -> bool:
    """Sylvester's criterion on an integer symmetric matrix: every leading principal minor > 0,
    computed by fraction-free (Bareiss) elimination, whose k-th pivot is the k-th minor."""
    A = [row[:] for row in R]  # lower triangle used
    n, prev = len(A), 1
    for k in range(n):
        p = A[k][k]
        if p <= 0:
            return False
        for i in range(k + 1, n):
            rowi, aik = A[i], A[i][k]
            for j in range(k + 1, i + 1):
                rowi[j] = (rowi[j] * p - aik * A[j][k]) // prev
        prev = p
    return True


def _function_residual(lay: Layout, pairs: list[tuple[int, int]], rho: list[Fraction],
                       objective: str, initial: str, lam0: Fraction) -> list[Fraction]:
    """target_k - (sum_ij rho_ij (e_j - e_i) + lam0 e_0[gap])_k for every point k."""
    N = lay.num_points
    res = [Fraction(0)] * N
    if objective == "function_value":
        res[N - 1] += 1
    if initial == "gap":
        res[0] -= lam0
    for (i, j), r in zip(pairs, rho, strict=True):
        if r:
            if j >= 0:
                res[j] -= r
            if i >= 0:
                res[i] += r
    return res


def _dyadic_ints(A: np.ndarray) -> tuple[np.ndarray, int]:
    """Integers R and a shift s with A = R / 2^s (A: Fractions with power-of-two denominators)."""
    dens = [v.denominator for v in A.flat]
    if any(d & (d - 1) for d in dens):
        raise ValueError("a non-dyadic number entered the exact check")  # cannot happen: floats
    s = max((d.bit_length() - 1 for d in dens), default=0)
    R = [v.numerator << (s - d.bit_length() + 1) for v, d in zip(A.flat, dens, strict=True)]
    return np.array(R, dtype=object).reshape(A.shape), s


def _scaled_dual_matrix(cert: PEPCertificate, lay: Layout) -> list[list[Fraction]]:
    """c S, exactly (c = 2 (L - mu)); the interpolation part through the point/gradient atoms."""
    mu, L = Fraction(cert.mu), Fraction(cert.L)
    c = 2 * (L - mu)
    n, N = lay.n, lay.num_points
    # atoms: x_0..x_{N-1}, g_0..g_{N-1}; sum_ij rho_ij Q_ij = W^T M W (pair_form's Q, in atoms)
    M = np.array([[Fraction(0)] * (2 * N) for _ in range(2 * N)], dtype=object)
    for (i, j), r in zip(lay.pairs(), cert.rho, strict=True):
        if not r:
            continue
        d = {k: s for k, s in ((i, 1), (j, -1)) if k >= 0}
        a = {N + k: s for k, s in ((i, 1), (j, -1)) if k >= 0}
        gj = {N + j: 1} if j >= 0 else {}
        terms: tuple[tuple[dict[int, int], dict[int, int], Fraction], ...] = (
            (gj, d, c / 2), (d, gj, c / 2), (a, a, Fraction(1)), (d, d, mu * L),
            (a, d, -mu), (d, a, -mu))
        for u, v, w in terms:
            for p, sp in u.items():
                for q, sq in v.items():
                    M[p, q] += r * w * sp * sq
    # W^T M W with W = [points; unit gradient rows], on integers (every number here is dyadic:
    # Fraction arithmetic spent its time in gcds, 1.2 s of 1.6 s at T = 15)
    X, sx = _dyadic_ints(lay.points)
    Mi, sm = _dyadic_ints(M)
    g = slice(1, 1 + N)
    Si = X.T.dot(Mi[:N, :N]).dot(X)
    Si[:, g] += X.T.dot(Mi[:N, N:]) * (1 << sx)
    Si[g, :] += Mi[N:, :N].dot(X) * (1 << sx)
    Si[g, g] += Mi[N:, N:] * (1 << (2 * sx))
    den = 1 << (2 * sx + sm)
    S = np.array([[Fraction(int(v), den) for v in row] for row in Si], dtype=object)
    if cert.initial == "distance":
        S[0, 0] += c * cert.lambda_initial
    for t, lam in enumerate(cert.lambda_noise):
        S[lay.noise(t), lay.noise(t)] += c * lam
    if cert.objective == "distance":
        S -= c * np.outer(lay.x_final, lay.x_final)
    if cert.noise_orthogonal:
        for (p, q), val in zip(lay.orthogonal(), cert.orth_values, strict=True):
            S[p, q] = S[q, p] = c * val  # a free multiplier: it sets the entry to any value
    return [[S[i, j] for j in range(n)] for i in range(n)]


def _linear_conditions(cert: PEPCertificate, lay: Layout, n_orth: int) -> bool:
    """Lengths, signs and the exact function-value equalities of ``cert`` on ``lay``."""
    pairs = lay.pairs()
    if (len(cert.rho) != len(pairs) or len(cert.lambda_noise) != cert.T
            or len(cert.orth_values) != n_orth):
        return False
    if min(cert.rho) < 0 or cert.lambda_initial < 0 or min(cert.lambda_noise, default=0) < 0:
        return False
    return not any(_function_residual(lay, pairs, list(cert.rho), cert.objective, cert.initial,
                                      cert.lambda_initial))


def verify_pep_certificate(cert: PEPCertificate) -> bool:
    """Whether ``cert`` proves its bound, in exact rational arithmetic (see the module docstring).

    Rebuilds the layout and every inequality from the certificate's method and class (floats
    read exactly), then checks signs, the function-value equalities and :math:`cS\\succeq0`.
    """
    if not isinstance(cert, PEPCertificate):
        raise ValueError(f"cert must be a PEPCertificate, got {type(cert).__name__}")
    if cert.window is not None:
        return _verify_banded(cert)
    lay = layout(cert.method, cert.T, cert.objective, exact=True)
    if not _linear_conditions(cert, lay, len(lay.orthogonal()) if cert.noise_orthogonal else 0):
        return False
    S = _scaled_dual_matrix(cert, lay)
    return _psd_by_rounding(S) or (len(S) <= 16 and _exact_psd(S))


def certificate_from_duals(
    method: FixedStepMethod, mu: float, L: float, T: int, objective: str, initial: str,
    orthogonal: bool, pairs: list[tuple[int, int]], orth: list[tuple[int, int]], *,
    rho: np.ndarray, lambda_initial: float, lambda_noise: np.ndarray, psd_dual: np.ndarray,
    margin: float,
) -> PEPCertificate | None:
    """A verified certificate from a float dual (clip, read exactly, repair), or None."""
    check_positive("margin", margin)
    lay = layout(method, T, objective)
    full = lay.pairs()  # the certificate lists every pair; those not in the SDP get 0
    given = dict(zip(pairs, rho, strict=True))
    rho_q = [Fraction(float(max(given.get(p, 0.0), 0.0))) for p in full]
    pairs = full
    lam0 = Fraction(float(max(lambda_initial, 0.0)))
    repair = _repair(lay, pairs, rho_q, objective, initial, lam0)
    Z = (psd_dual + psd_dual.T) / 2
    cert = PEPCertificate(
        method, float(mu), float(L), T, objective, initial, orthogonal, tuple(rho_q), lam0,
        tuple(Fraction(float(max(v, 0.0))) for v in lambda_noise),
        tuple(Fraction(float(Z[p, q])) for p, q in orth), margin, repair)
    return cert if verify_pep_certificate(cert) else None


def _repair(lay: Layout, pairs: list[tuple[int, int]], rho_q: list[Fraction], objective: str,
            initial: str, lam0: Fraction) -> float:
    """Make the function-value equalities exact in place (mass added to the minimiser
    pairs, each of which touches one point's value); returns the total mass added."""
    res = _function_residual(lay, pairs, rho_q, objective, initial, lam0)
    index = {p: k for k, p in enumerate(pairs)}
    for k, r in enumerate(res):
        if r > 0:  # the pair (x*, k) adds +1 to point k's coefficient
            rho_q[index[(-1, k)]] += r
        elif r < 0:  # the pair (k, x*) adds -1
            rho_q[index[(k, -1)]] -= r
    return float(sum(abs(r) for r in res))


def _banded_psd(S: dict[tuple[int, int], Fraction], n: int, b: int, bits: int = 100) -> bool:
    r"""A sufficient exact test of :math:`S\succ0` for a symmetric matrix with bandwidth ``b``
    (``S`` holds the entries ``(i, j)``, ``i <= j <= i + b``; absent ones are 0).

    **[DERIVED]** Work in integer units :math:`u=2^{-K}` (the largest entry about ``bits``
    bits). Rounding an entry moves it by at most :math:`u/2`; a symmetric error supported on a
    band of width :math:`b` (or on a window of :math:`m` rows) has spectral norm at most
    :math:`(2b+1)u/2` (or :math:`mu/2`, Gershgorin), so subtracting that many units from the
    diagonal keeps the rounded matrix :math:`\preceq` the exact one. Each elimination step
    replaces the trailing window by its rounded Schur complement minus :math:`m` units on its
    diagonal, again :math:`\preceq` the exact complement. A positive pivot at every step then
    proves each Schur complement, hence :math:`S`, positive definite; the numbers keep about
    ``bits`` bits (the plain :math:`LDL^\top` carries minors whose size grows with :math:`n`).
    """
    top = max((abs(v) for v in S.values()), default=Fraction(0))
    if top == 0:
        return False
    K = bits - (top.numerator.bit_length() - top.denominator.bit_length())
    num, den = (1 << K, 1) if K >= 0 else (1, 1 << -K)
    A: list[dict[int, int]] = [{} for _ in range(n)]  # A[i][j], i <= j <= i + b (upper band)
    for (i, j), v in S.items():
        if not 0 <= j - i <= b:
            raise ValueError(f"entry ({i}, {j}) outside the band b = {b}")
        A[i][j] = (2 * v.numerator * num + v.denominator * den) // (2 * v.denominator * den)
    for i in range(n):
        A[i][i] = A[i].get(i, 0) - (2 * b + 1)
    for k in range(n):
        p = A[k].get(k, 0)
        if p <= 0:
            return False
        row = A[k]
        idx = [j for j in range(k + 1, min(n, k + b + 1)) if row.get(j, 0)]
        for ii, i in enumerate(idx):
            aik = row[i]
            Ai = A[i]
            for j in idx[ii:]:
                # nearest integer to A_ij - a_ik a_jk / p
                num_ij = 2 * (Ai.get(j, 0) * p - aik * row[j]) + p
                Ai[j] = num_ij // (2 * p)
        for i in idx:
            A[i][i] -= len(idx)
    return True


def _sparse(v: np.ndarray) -> dict[int, Fraction]:
    return {int(k): v[k] for k in np.flatnonzero(v != 0)}


def _add_sym(S: dict[tuple[int, int], Fraction], u: dict[int, Fraction],
             v: dict[int, Fraction], w: Fraction) -> None:
    """S += w (u v^T + v u^T) / 2 on the upper triangle (both orders summed there)."""
    for p, up in u.items():
        for q, vq in v.items():
            key = (p, q) if p <= q else (q, p)
            # the upper entry stands for both (p, q) and (q, p): each gets w u_p v_q / 2
            S[key] = S.get(key, Fraction(0)) + (w * up * vq if p == q else w * up * vq / 2)


def banded_dual_matrix(cert: PEPCertificate) -> tuple[dict[tuple[int, int], Fraction], int, int]:
    r""":math:`c\alpha^2S` of a banded certificate, exactly, as its upper band, with ``n`` and the
    bandwidth (see :mod:`dpbounds.pep.banded`; every number is dyadic, no division)."""
    from dpbounds.pep.banded import banded_layout

    assert cert.window is not None
    lay = banded_layout(cert.method, cert.T, cert.objective, cert.window, exact=True)
    mu, L = Fraction(cert.mu), Fraction(cert.L)
    c, a2 = 2 * (L - mu), Fraction(cert.method.alpha) ** 2
    S: dict[tuple[int, int], Fraction] = {}

    def pt(k: int) -> dict[int, Fraction]:
        return {} if k < 0 else _sparse(lay.points[k])

    def gr(k: int) -> dict[int, Fraction]:
        return {} if k < 0 else {lay.grad(k): Fraction(1)}

    def minus(u: dict[int, Fraction], v: dict[int, Fraction]) -> dict[int, Fraction]:
        out = dict(u)
        for k, x in v.items():
            out[k] = out.get(k, Fraction(0)) - x
        return {k: x for k, x in out.items() if x}

    for (i, j), r in zip(lay.pairs(), cert.rho, strict=True):
        if not r:
            continue
        d, g_a, gj = minus(pt(i), pt(j)), minus(gr(i), gr(j)), gr(j)
        w = r * a2  # pair_form's Q (the inequality times c), times rho alpha^2
        _add_sym(S, gj, d, w * c)
        _add_sym(S, g_a, g_a, w)
        _add_sym(S, d, d, w * mu * L)
        _add_sym(S, g_a, d, -2 * w * mu)
    if cert.initial == "distance":
        _add_sym(S, {0: Fraction(1)}, {0: Fraction(1)}, c * a2 * cert.lambda_initial)
    for t, lam in enumerate(cert.lambda_noise):
        z = _sparse(lay.noise_rows[t])
        _add_sym(S, z, z, c * lam)  # lambda_t s_t^2 = (lambda_t / alpha^2) alpha^2 s_t^2
    for (t, v), nu in zip(lay.orthogonal(), cert.orth_values, strict=True):
        if nu:
            _add_sym(S, _sparse(lay.noise_rows[t]), {v: Fraction(1)}, c * a2 * nu)
    if cert.objective == "distance":
        xT = _sparse(lay.x_final)
        _add_sym(S, xT, xT, -c * a2)
    return S, lay.n, lay.bandwidth


def _verify_banded(cert: PEPCertificate) -> bool:
    from dpbounds.pep.banded import banded_layout

    assert cert.window is not None
    lay = banded_layout(cert.method, cert.T, cert.objective, cert.window, exact=True)
    if not _linear_conditions(cert, lay, len(lay.orthogonal())):
        return False
    S, n, b = banded_dual_matrix(cert)
    return _banded_psd(S, n, min(b, n - 1))


def banded_certificate_from_duals(
    method: FixedStepMethod, mu: float, L: float, T: int, objective: str, initial: str,
    window: int, *, rho: np.ndarray, lambda_initial: float, lambda_noise_zeta: np.ndarray,
    nu: np.ndarray, margin: float,
) -> PEPCertificate | None:
    """A verified banded certificate from the float dual of :func:`~dpbounds.pep.banded.
    solve_banded` (multiplier of ||zeta_t||^2 <= alpha^2 s_t^2 read as lambda_t / alpha^2)."""
    from dpbounds.pep.banded import banded_layout

    check_positive("margin", margin)
    lay = banded_layout(method, T, objective, window)
    pairs = lay.pairs()
    rho_q = [Fraction(float(max(v, 0.0))) for v in rho]
    lam0 = Fraction(float(max(lambda_initial, 0.0)))
    repair = _repair(lay, pairs, rho_q, objective, initial, lam0)
    a2 = Fraction(method.alpha) ** 2
    cert = PEPCertificate(
        method, float(mu), float(L), T, objective, initial, True, tuple(rho_q), lam0,
        tuple(Fraction(float(max(v, 0.0))) * a2 for v in lambda_noise_zeta),
        tuple(Fraction(float(v)) for v in nu), margin, repair, window=window)
    return cert if verify_pep_certificate(cert) else None
