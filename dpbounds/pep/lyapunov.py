r"""A noise-aware Lyapunov bound for heavy ball at any horizon, tuned to (T, E0, s^2).

**The potential** (**[DERIVED]**, after Taylor & Bach 2019's potential functions and Kuru et
al.'s Prop. 3.4): :math:`V_t=z_t^\top Pz_t+F(x_t)-F^\ast`, :math:`z_t=(x_t-x^\ast,
x_{t-1}-x^\ast)` (:math:`P\succeq0`, so :math:`F(x_t)-F^\ast\le V_t`). One step is certified by
multipliers :math:`\lambda_{ij}\ge0` of the interpolation inequalities between
:math:`x^\ast,x_t,x_{t+1}` and free :math:`\nu` of the orthogonality of :math:`\xi_t` to
:math:`x_t,x_{t-1},\nabla F(x_t)`:

.. math:: V_{t+1}-\rho^2V_t-\kappa\lVert\xi_t\rVert^2=\sum\lambda_{ij}I_{ij}
          -\langle S,\mathrm{Gram}\rangle+\sum\nu\langle\xi_t,v\rangle,\qquad S\succeq0,

an identity in the realised vectors of one step (basis :math:`x_t,\nabla F(x_t),\nabla
F(x_{t+1}),x_{t-1},\xi_t`). Every :math:`I_{ij}\le0` and :math:`\langle S,\mathrm{Gram}\rangle
\ge0` pointwise and the last sum has zero expectation, so
:math:`\mathbb EV_{t+1}\le\rho^2\mathbb EV_t+\kappa s_t^2` and

.. math:: \mathbb E[F(x_T)]-F^\ast\le\rho^{2T}V_0+\kappa s^2\sum_{k<T}\rho^{2k},\qquad
          V_0\le\mathbf 1^\top P\mathbf 1\,\frac{2E_0}\mu+E_0

(:math:`x_{-1}=x_0`; :math:`\lVert x_0-x^\ast\rVert^2\le2E_0/\mu`). For each :math:`\rho` of a
grid the SDP minimises this right-hand side over :math:`(P,\kappa,\lambda,\nu)` (a 5x5 LMI,
cost independent of :math:`T`); the smallest verified value is returned. Unlike
:func:`~dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound` (the rate-minimising :math:`P` of
Prop. 3.4, normalised :math:`c=1`), :math:`P` is chosen for the bound. It is a valid upper bound
on the worst case at every :math:`T` and at least the PEP's value where both run (the PEP
optimises over every certificate, this one over the stationary ones).

**Check.** Each candidate is verified in exact rational arithmetic: the multipliers read as the
rationals they are, the function-value equalities repaired exactly (as for the PEP
certificate), :math:`cS\succeq0` by the rounded exact test of :mod:`dpbounds.pep.certificate`
and :math:`P\succeq0` by its exact minors. The final number
:math:`\rho^{2T}V_0+\kappa s^2\sum\rho^{2k}` is evaluated in floating point and rounded up by a
relative :math:`10^{-9}` (its float error is below :math:`10^{-12}T`).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.pep.formulation import (
    FixedStepMethod,
    Layout,
    check_class,
    check_scales,
    pair_form,
)

__all__ = ["LyapunovBound", "lyapunov_bound"]

#: Basis of one step: x_t, g_t, g_{t+1}, x_{t-1}, xi_t (points x_t, x_{t+1}: Layout's grad(k)).
_X, _G0, _G1, _XP, _XI = range(5)


@dataclass(frozen=True)
class LyapunovBound:
    """A verified noise-aware Lyapunov bound (see the module docstring).

    Attributes
    ----------
    value:
        The bound on :math:`\\mathbb E[F(x_T)]-F^\\ast` (rounded up), ``inf`` if no grid point
        verified.
    rho:
        The contraction of the potential used.
    P:
        The potential's matrix (floats of the exact rationals checked).
    kappa:
        The noise weight :math:`\\kappa`.
    cpu_seconds:
        ``time.process_time`` of the whole search.
    """

    value: float
    rho: float
    P: np.ndarray
    kappa: float
    cpu_seconds: float


def _step_layout(method: FixedStepMethod, exact: bool) -> Layout:
    a, b = ((Fraction(method.alpha), Fraction(method.beta)) if exact
            else (method.alpha, method.beta))
    zero: Any = np.array([Fraction(0)] * 5, dtype=object) if exact else np.zeros(5)
    x_t = zero.copy()
    x_t[_X] = 1
    x_next = zero.copy()
    x_next[_X], x_next[_XP], x_next[_G0], x_next[_XI] = 1 + b, -b, -a, -a
    pts = np.array([x_t, x_next], dtype=object if exact else float)
    return Layout(1, "function_value", 5, pts, x_next)


def _state_maps(lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Rows mapping the basis to z_t = (x_t, x_{t-1}) and z_{t+1} = (x_{t+1}, x_t)."""
    e_xp = np.zeros(5, dtype=lay.points.dtype)
    e_xp[_XP] = 1
    if lay.points.dtype == object:
        e_xp = np.array([Fraction(int(v)) for v in e_xp], dtype=object)
    return np.array([lay.points[0], e_xp]), np.array([lay.points[1], lay.points[0]])


_ORTH = (_X, _XP, _G0)


def _sym(i: int, j: int, n: int = 5) -> np.ndarray:
    E = np.zeros((n, n))
    E[i, j] += 0.5
    E[j, i] += 0.5
    return E


def _geometric(rho2: float, T: int) -> float:
    """sum_{k<T} rho2^k (closed form; T when rho2 = 1)."""
    return float(T) if rho2 == 1.0 else (1.0 - rho2**T) / (1.0 - rho2)


def _solve(method: FixedStepMethod, mu: float, L: float, T: int, E0: float, s2: float,
           rho2: float) -> tuple[np.ndarray, float, np.ndarray, np.ndarray] | None:
    import cvxpy as cp

    lay = _step_layout(method, False)
    pairs = lay.pairs()
    c = 2.0 * (L - mu)
    A0, A1 = _state_maps(lay)
    P = cp.Variable((2, 2), symmetric=True)
    kappa = cp.Variable(nonneg=True)
    lam = cp.Variable(len(pairs), nonneg=True)
    nu = cp.Variable(len(_ORTH))
    S = -(A1.T @ P @ A1 - rho2 * (A0.T @ P @ A0)) + kappa * _sym(_XI, _XI)
    fcoef = [0, 0]
    forms = []
    for r, (i, j) in enumerate(pairs):
        Q, fc = pair_form(lay, i, j, mu, L)
        forms.append(Q / c)
        for k, sgn in fc.items():
            fcoef[k] = fcoef[k] + sgn * lam[r]
    S = S + sum(lam[r] * forms[r] for r in range(len(pairs)))
    S = S - sum(nu[k] * _sym(_XI, v) for k, v in enumerate(_ORTH))
    geo = _geometric(rho2, T)
    decay = rho2**T
    ones = np.ones(2)
    obj = decay * (2 * E0 / mu * (ones @ P @ ones) + E0) + kappa * s2 * geo
    Ssym = (S + S.T) / 2
    # margins: the exact check reads the float solution as rationals and repairs the
    # function-value equalities; P at the PSD boundary (rank one) would fail its exact minor
    cons = [Ssym >> 1e-8 * np.eye(5), P >> 1e-7 * np.eye(2), fcoef[1] == 1,
            fcoef[0] == -rho2]
    prob = cp.Problem(cp.Minimize(obj), cons)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver="CLARABEL")
    except cp.error.SolverError:
        return None
    except BaseException as err:  # Clarabel's Rust panics (PanicException) on extreme scales
        if type(err).__name__ != "PanicException":
            raise
        return None
    if prob.status not in ("optimal", "optimal_inaccurate"):
        return None
    return (np.asarray(P.value), float(np.asarray(kappa.value)), np.asarray(lam.value).ravel(),
            np.asarray(nu.value).ravel())


def _verify(method: FixedStepMethod, mu: float, L: float, rho2: Fraction, P: np.ndarray,
            kappa: Fraction, lam: list[Fraction], nu: list[Fraction]) -> bool:
    """Exact check of one step's certificate (see the module docstring)."""
    from dpbounds.pep.certificate import _psd_by_rounding, _repair

    lay = _step_layout(method, True)
    pairs = lay.pairs()
    if min(lam) < 0 or kappa < 0:
        return False
    _repair(lay, pairs, lam, "function_value", "gap", rho2)
    Pq = [[Fraction(float(P[i, j])) for j in range(2)] for i in range(2)]
    if Pq[0][1] != Pq[1][0]:
        return False
    if Pq[0][0] < 0 or Pq[1][1] < 0 or Pq[0][0] * Pq[1][1] < Pq[0][1] ** 2:
        return False
    muq, Lq = Fraction(mu), Fraction(L)
    c = 2 * (Lq - muq)
    A0, A1 = _state_maps(lay)
    Pm = np.array(Pq, dtype=object)
    cS = -c * (A1.T.dot(Pm).dot(A1) - rho2 * A0.T.dot(Pm).dot(A0))
    cS[_XI, _XI] += c * kappa
    for r, (i, j) in enumerate(pairs):
        if lam[r]:
            Q, _ = pair_form(lay, i, j, muq, Lq)
            cS = cS + lam[r] * Q
    for k, v in enumerate(_ORTH):
        half = c * nu[k] / 2
        cS[_XI, v] -= half
        cS[v, _XI] -= half
    return _psd_by_rounding([[cS[i, j] for j in range(5)] for i in range(5)])


def lyapunov_bound(method: FixedStepMethod, mu: float, L: float, T: int, *,
                   initial_gap: float, noise_variance: float = 0.0,
                   grid: int = 25) -> LyapunovBound:
    r"""The noise-aware Lyapunov bound on :math:`\mathbb E[F(x_T)]-F^\ast` for heavy ball
    **[DERIVED]** (module docstring); valid for every :math:`T`, cost independent of it.

    Parameters
    ----------
    method:
        A heavy-ball :class:`~dpbounds.pep.FixedStepMethod` (``gamma = 0``).
    mu:
        Strong convexity, ``0 < mu < L``.
    L:
        Smoothness.
    T:
        Horizon, 1..10^9.
    initial_gap:
        :math:`E_0>0`: :math:`F(x_0)-F^\ast\le E_0`.
    noise_variance:
        :math:`s^2\ge0`: :math:`\mathbb E\lVert\xi_t\rVert^2\le s^2` every step.
    grid:
        Number of contraction factors :math:`\rho^2` tried (2..200).

    Returns
    -------
    LyapunovBound
        The smallest verified bound over the grid (``inf`` when none verifies, e.g. a
        divergent method).

    Examples
    --------
    >>> from dpbounds.pep import FixedStepMethod
    >>> b = lyapunov_bound(FixedStepMethod.heavy_ball(0.5, 0.3), 0.1, 1.0, 1000,
    ...                    initial_gap=1.0, noise_variance=0.01)
    >>> 0.005 < b.value < 0.1
    True
    """
    if not isinstance(method, FixedStepMethod) or method.gamma != 0.0:
        raise ValueError("method must be a heavy-ball FixedStepMethod (gamma = 0)")
    mu, L = check_class(mu, L)
    T = check_int("T", T, minimum=1, maximum=10**9)
    E0 = float(check_positive("initial_gap", initial_gap))
    s2 = float(check_nonnegative("noise_variance", noise_variance))
    grid = check_int("grid", grid, minimum=2, maximum=200)
    check_scales(mu, L, method.alpha, E0, s2)
    t0 = time.process_time()
    from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate

    rq = min(float(heavy_ball_rate(method.alpha, method.beta, mu, L)), 1.0)
    # rho^2 from the quadratic rate (no potential contracts faster) up to 1
    lo = rq**2
    best = LyapunovBound(math.inf, math.nan, np.full((2, 2), np.nan), math.nan, 0.0)
    for theta in np.linspace(0.0, 1.0, grid):
        rho2 = float(lo + (1.0 - lo) * theta**2)
        sol = _solve(method, mu, L, T, E0, s2, rho2)
        if sol is None:
            continue
        P, kappa, lam, nu = sol
        lam_q = [Fraction(float(max(v, 0.0))) for v in lam]
        kq = Fraction(float(max(kappa, 0.0)))
        if not _verify(method, mu, L, Fraction(rho2), P, kq, lam_q, [Fraction(float(v))
                                                                     for v in nu]):
            continue
        geo = _geometric(rho2, T)
        p1 = float(np.sum(P))
        value = (rho2**T * (2 * E0 / mu * max(p1, 0.0) + E0) + float(kq) * s2 * geo) \
            * (1 + 1e-9)
        if value < best.value:
            best = LyapunovBound(value, math.sqrt(rho2), P, float(kq), 0.0)
    return LyapunovBound(best.value, best.rho, best.P, best.kappa, time.process_time() - t0)
