r"""A noise-aware Lyapunov bound for fixed-step momentum methods at any horizon, tuned to
(T, E0, s^2): heavy ball, Nesterov and the two-parameter family of
:mod:`~dpbounds.pep.formulation`,

.. math:: y_t=x_t+\gamma(x_t-x_{t-1}),\qquad x_{t+1}=x_t+\beta(x_t-x_{t-1})-\alpha(\nabla
          F(y_t)+\xi_t)

(heavy ball :math:`\gamma=0`; Nesterov :math:`\gamma=\beta`).

**The potential** (**[DERIVED]**, after Taylor & Bach 2019's potential functions, Kuru et
al.'s Prop. 3.4 for heavy ball, and for Nesterov the Lyapunov function of Lessard, Recht &
Packard 2016 (IQC / dissipativity, Sec. 4) and Nesterov's own estimate-sequence potential
:math:`F(x_t)-F^\ast+\frac\mu2\lVert v_t-x^\ast\rVert^2`, :math:`v_t` a combination of
:math:`x_t,x_{t-1}`, which is one point of the family below):
:math:`V_t=z_t^\top Pz_t+F(x_t)-F^\ast`, :math:`z_t=(x_t-x^\ast,x_{t-1}-x^\ast)`
(:math:`P\succeq0`, so :math:`F(x_t)-F^\ast\le V_t`). One step is certified by multipliers
:math:`\lambda_{ij}\ge0` of the interpolation inequalities :math:`I_{ij}\le0` between the points
of the step and free :math:`\nu` of the orthogonality of :math:`\xi_t` to the vectors fixed
before it is drawn:

.. math:: V_{t+1}-\rho^2V_t-\kappa\lVert\xi_t\rVert^2=\sum\lambda_{ij}I_{ij}
          -\langle S,\mathrm{Gram}\rangle+\sum\nu\langle\xi_t,v\rangle,\qquad S\succeq0,

an identity in the realised vectors of one step:

* heavy ball (:math:`\gamma=0`): points :math:`x^\ast,x_t,x_{t+1}`, basis
  :math:`x_t,\nabla F(x_t),\nabla F(x_{t+1}),x_{t-1},\xi_t` (a 5x5 LMI), :math:`\xi_t\perp
  x_t,x_{t-1},\nabla F(x_t)`;
* :math:`\gamma\ne0`: the gradient is taken at :math:`y_t\ne x_t` while the potential holds
  :math:`F(x_t)`, so the step has points :math:`x^\ast,x_t,y_t,x_{t+1}` (all 12 ordered pairs),
  basis :math:`x_t,\nabla F(x_t),\nabla F(y_t),\nabla F(x_{t+1}),x_{t-1},\xi_t` (a 6x6 LMI),
  :math:`\xi_t\perp x_t,x_{t-1},\nabla F(x_t),\nabla F(y_t)` (:math:`y_t` and both gradients are
  fixed before :math:`\xi_t` is drawn), and the function values match with
  :math:`F(x_{t+1})` weight 1, :math:`F(x_t)` weight :math:`-\rho^2` and :math:`F(y_t)` weight
  0. Nesterov's textbook one-step argument compares the same four points (descent from
  :math:`y_t` to :math:`x_{t+1}`, strong convexity at :math:`y_t` towards :math:`x_t` and
  :math:`x^\ast`); at :math:`\sigma=0` the certified :math:`\rho^2` is measured below his
  :math:`1-\sqrt q`, :math:`q=\mu/L`, for :math:`\alpha=1/L,\beta=(1-\sqrt q)/(1+\sqrt q)`
  (below).

Every :math:`I_{ij}\le0` and :math:`\langle S,\mathrm{Gram}\rangle\ge0` pointwise and the last sum
has zero expectation, so :math:`\mathbb EV_{t+1}\le\rho^2\mathbb EV_t+\kappa s_t^2` and

.. math:: \mathbb E[F(x_T)]-F^\ast\le\rho^{2T}V_0+\kappa s^2\sum_{k<T}\rho^{2k},\qquad
          V_0\le\mathbf 1^\top P\mathbf 1\,\frac{2E_0}\mu+E_0

(:math:`x_{-1}=x_0`; :math:`\lVert x_0-x^\ast\rVert^2\le2E_0/\mu`). For each :math:`\rho` of a
grid the SDP minimises this right-hand side over :math:`(P,\kappa,\lambda,\nu)` (cost
independent of :math:`T`); the smallest verified value is returned. Unlike
:func:`~dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound` (the rate-minimising :math:`P` of
Prop. 3.4, normalised :math:`c=1`), :math:`P` is chosen for the bound. It is a valid upper bound
on the worst case at every :math:`T`. For heavy ball it is at least the PEP's value where both
run (the PEP optimises over every certificate, this one over the stationary ones). For
:math:`\gamma\ne0` the certificate also uses the iterates :math:`x_t`, which are not points of
the PEP (its points are :math:`y_t` and :math:`x_T`): it bounds a PEP with those extra points,
whose value is at most the PEP's. So "at least the PEP" is implied only at :math:`\sigma=0`,
where the PEP is the exact worst case; with noise it is measured (tests/pep), not implied.

Measured (``bench/lyapunov_nesterov.py``; ``time.process_time`` on the shared 2-core machine,
about 0.7 CPU-s per bound at ``grid=25`` whatever T; PEP: the full SDP for T <= 10, the banded
relaxation with window 2 above, certified): Nesterov :math:`(\alpha,\beta)=(0.5,0.3)`,
:math:`\mu=0.1,L=1,E_0=1,s^2=0.01`: bound / PEP = 1.03, 1.05, 1.08, 1.35, 2.14 at
T = 3, 6, 10, 30, 100; the standard parameters (:math:`\alpha=1/L`, :math:`\kappa=10`): 1.12,
1.40, 2.03, 1.84, 1.84. At :math:`\sigma=0` the smallest certified :math:`\rho^2` (bisection)
is 0.6223, 0.8925, 0.9676 at :math:`\kappa=10,100,1000`, between the quadratic rate
:math:`(1-\sqrt q)^2` (0.4675, 0.81, 0.9378) and Nesterov's :math:`1-\sqrt q` (0.6838, 0.9,
0.9684).

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

#: Basis of one step of the two-parameter family (gamma != 0): x_t, g(x_t), g(y_t), g(x_{t+1}),
#: x_{t-1}, xi_t (points x_t, y_t, x_{t+1}: Layout's grad(0), grad(1), grad(2)).
_NX, _NGX, _NGY, _NG1, _NXP, _NXI = range(6)
_NORTH = (_NX, _NXP, _NGX, _NGY)


@dataclass(frozen=True)
class _Step:
    """One step's Gram layout: the state maps z_t = A0 b, z_{t+1} = A1 b of the basis b, the
    basis vectors xi_t is orthogonal to (in expectation), and the index of xi_t."""

    lay: Layout
    A0: np.ndarray
    A1: np.ndarray
    orth: tuple[int, ...]
    xi: int


def _general_step(method: FixedStepMethod, exact: bool) -> _Step:
    """x_t, y_t = x_t + gamma (x_t - x_{t-1}), x_{t+1} = x_t + beta (x_t - x_{t-1}) - alpha
    (g(y_t) + xi_t) in the basis (_NX, _NGX, _NGY, _NG1, _NXP, _NXI)."""
    num: Any = Fraction if exact else float
    a, b, g = (num(v) for v in (method.alpha, method.beta, method.gamma))
    zero: Any = np.array([Fraction(0)] * 6, dtype=object) if exact else np.zeros(6)
    x_t, x_prev = zero.copy(), zero.copy()
    x_t[_NX] = 1
    x_prev[_NXP] = 1
    y_t = x_t + g * (x_t - x_prev)
    x_next = x_t + b * (x_t - x_prev)
    x_next[_NGY] -= a
    x_next[_NXI] -= a
    pts = np.array([x_t, y_t, x_next], dtype=object if exact else float)
    lay = Layout(1, "function_value", 6, pts, x_next)
    return _Step(lay, np.array([x_t, x_prev]), np.array([x_next, x_t]), _NORTH, _NXI)


def _step(method: FixedStepMethod, exact: bool) -> _Step:
    """Heavy ball (gamma = 0): the 5-vector basis; otherwise the 6-vector one with y_t."""
    if method.gamma == 0.0:
        lay = _step_layout(method, exact)
        A0, A1 = _state_maps(lay)
        return _Step(lay, A0, A1, _ORTH, _XI)
    return _general_step(method, exact)


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

    st = _step(method, False)
    lay, A0, A1, n = st.lay, st.A0, st.A1, st.lay.n
    pairs = lay.pairs()
    c = 2.0 * (L - mu)
    P = cp.Variable((2, 2), symmetric=True)
    kappa = cp.Variable(nonneg=True)
    lam = cp.Variable(len(pairs), nonneg=True)
    nu = cp.Variable(len(st.orth))
    S = -(A1.T @ P @ A1 - rho2 * (A0.T @ P @ A0)) + kappa * _sym(st.xi, st.xi, n)
    fcoef: list[Any] = [0] * lay.num_points
    forms = []
    for r, (i, j) in enumerate(pairs):
        Q, fc = pair_form(lay, i, j, mu, L)
        forms.append(Q / c)
        for k, sgn in fc.items():
            fcoef[k] = fcoef[k] + sgn * lam[r]
    S = S + sum(lam[r] * forms[r] for r in range(len(pairs)))
    S = S - sum(nu[k] * _sym(st.xi, v, n) for k, v in enumerate(st.orth))
    geo = _geometric(rho2, T)
    decay = rho2**T
    ones = np.ones(2)
    obj = decay * (2 * E0 / mu * (ones @ P @ ones) + E0) + kappa * s2 * geo
    Ssym = (S + S.T) / 2
    # margins: the exact check reads the float solution as rationals and repairs the
    # function-value equalities; P at the PSD boundary (rank one) would fail its exact minor
    cons = [Ssym >> 1e-8 * np.eye(n), P >> 1e-7 * np.eye(2), fcoef[-1] == 1,
            fcoef[0] == -rho2]
    # Nesterov-type steps: F(y_t) enters the one-step inequality with weight zero
    cons += [fcoef[k] == 0 for k in range(1, lay.num_points - 1)]
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

    st = _step(method, True)
    lay, A0, A1, n = st.lay, st.A0, st.A1, st.lay.n
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
    Pm = np.array(Pq, dtype=object)
    cS = -c * (A1.T.dot(Pm).dot(A1) - rho2 * A0.T.dot(Pm).dot(A0))
    cS[st.xi, st.xi] += c * kappa
    for r, (i, j) in enumerate(pairs):
        if lam[r]:
            Q, _ = pair_form(lay, i, j, muq, Lq)
            cS = cS + lam[r] * Q
    for k, v in enumerate(st.orth):
        half = c * nu[k] / 2
        cS[st.xi, v] -= half
        cS[v, st.xi] -= half
    return _psd_by_rounding([[cS[i, j] for j in range(n)] for i in range(n)])


def _quadratic_rate_floor(method: FixedStepMethod, mu: float, L: float,
                          points: int = 1025) -> float:
    r"""Largest root modulus of :math:`r^2-(1+\beta-\alpha\lambda(1+\gamma))r+\beta-
    \alpha\lambda\gamma` over a grid of :math:`\lambda\in[\mu,L]`: the rate of the method on
    one-dimensional quadratics, from below (a grid maximum). Only the start of the search."""
    lam = np.linspace(mu, L, points)
    b1 = 1.0 + method.beta - method.alpha * lam * (1.0 + method.gamma)
    b0 = method.beta - method.alpha * lam * method.gamma
    disc = np.sqrt((b1 * b1 - 4.0 * b0).astype(complex))
    return float(np.max(np.maximum(np.abs(b1 + disc), np.abs(b1 - disc))) / 2.0)


def lyapunov_bound(method: FixedStepMethod, mu: float, L: float, T: int, *,
                   initial_gap: float, noise_variance: float = 0.0,
                   grid: int = 25) -> LyapunovBound:
    r"""The noise-aware Lyapunov bound on :math:`\mathbb E[F(x_T)]-F^\ast` for heavy ball,
    Nesterov or any fixed :math:`(\alpha,\beta,\gamma)` **[DERIVED]** (module docstring); valid
    for every :math:`T`, cost independent of it.

    Parameters
    ----------
    method:
        A :class:`~dpbounds.pep.FixedStepMethod`: heavy ball (``gamma = 0``), Nesterov
        (``gamma = beta``) or any :math:`(\alpha,\beta,\gamma)` of the family.
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
    >>> n = lyapunov_bound(FixedStepMethod.nesterov(0.5, 0.3), 0.1, 1.0, 1000,
    ...                    initial_gap=1.0, noise_variance=0.01, grid=12)
    >>> 0.005 < n.value < 0.1
    True
    """
    if not isinstance(method, FixedStepMethod):
        raise ValueError("method must be a FixedStepMethod (e.g. FixedStepMethod.nesterov("
                         f"alpha, beta)), got {type(method).__name__}")
    mu, L = check_class(mu, L)
    T = check_int("T", T, minimum=1, maximum=10**9)
    E0 = float(check_positive("initial_gap", initial_gap))
    s2 = float(check_nonnegative("noise_variance", noise_variance))
    grid = check_int("grid", grid, minimum=2, maximum=200)
    check_scales(mu, L, method.alpha, E0, s2)
    t0 = time.process_time()
    if method.gamma == 0.0:
        from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate

        rq = min(float(heavy_ball_rate(method.alpha, method.beta, mu, L)), 1.0)
    else:
        rq = min(_quadratic_rate_floor(method, mu, L), 1.0)
    # rho^2 from the quadratic rate (no potential contracts faster) up to 1
    lo = rq**2
    best = LyapunovBound(math.inf, math.nan, np.full((2, 2), np.nan), math.nan, 0.0)
    for theta in np.linspace(0.0, 1.0, grid):
        rho2 = float(lo + (1.0 - lo) * theta**2)
        # the objective is linear in (E0, s2): the SDP is solved at E0 = 1 (its certificate is
        # the same up to that scale), so E0 = 1e300 does not break the solver (no grid point
        # verified there, and the bound read inf, rho nan)
        sol = _solve(method, mu, L, T, 1.0, s2 / E0, rho2)
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
