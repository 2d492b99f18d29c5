r"""The smooth-class tuner's objective: the noise-aware Lyapunov bound of DP heavy ball as run,
at every horizon, fast enough for a search over :math:`(\alpha,\beta)` **[DERIVED]**.

**What is bounded.** DP heavy ball (:func:`dpbounds.algorithms.dp_heavy_ball`) runs
:math:`x_{t+1}=x_t+\beta(x_t-x_{t-1})-\alpha(\nabla F(x_t)+\xi_t)`, :math:`x_{-1}=x_0`, with
:math:`\xi_t=v_t+\eta_t`: :math:`v_t` the batch-mean sampling error (a batch of :math:`m` of the
:math:`n` samples drawn without replacement, afresh each step) and :math:`\eta_t` the Laplace
noise, :math:`\eta_{t,k}\sim\mathrm{Laplace}(b_T)` i.i.d. over the :math:`d` coordinates, each
step :math:`\epsilon/T`-DP (:math:`b_T` of (12)-(13),
:func:`~dpbounds.bounds.strongly_convex.gradient_noise.laplace_scale_at_horizon`). The bound
of :func:`dpbounds.pep.lyapunov.lyapunov_bound` holds for every :math:`F\in\mathcal S_{\mu,L}`
and every noise with

* :math:`\mathbb E\langle\xi_t,v\rangle=0` for :math:`v\in\{x_t,x_{t-1},\nabla F(x_t)\}`, and
* :math:`\mathbb E\lVert\xi_t\rVert^2\le s^2`.

**How the DP noise enters** :math:`s^2` (**[DERIVED]** from Kuru et al. (8), (12), (20)-(21),
(39)-(41); the same model as :mod:`dpbounds.tuning._quadratic`). Given the past
:math:`\mathcal F_t` (which fixes :math:`x_t,x_{t-1},\nabla F(x_t)`), the batch is drawn
afresh, so :math:`\mathbb E[v_t\mid\mathcal F_t]=0`, and :math:`\eta_t` is independent of
everything with mean 0: the orthogonality holds. The two parts are conditionally
independent, so

.. math:: \mathbb E\lVert\xi_t\rVert^2=\mathbb E\lVert\eta_t\rVert^2+\mathbb E\lVert v_t
          \rVert^2=\sum_{k=1}^d2b_T^2+\frac1m\frac{n-m}{n-1}\sum_k\sigma_{y,k}^2
          \le2d\,b_T^2+\sigma_s^2(m,n)=\mathcal E_T,

the **total** over the :math:`d` coordinates (Laplace variance :math:`2b_T^2` per coordinate;
(41) bounds the **sum** of the per-coordinate population variances by :math:`S_1^2/4`). So
:math:`s^2=\mathcal E_T` of (20),
:func:`~dpbounds.bounds.strongly_convex.gradient_noise.dp_noise_level`, the same at every step
of a run of horizon :math:`T` (it depends on :math:`T` through :math:`b_T`). A per-coordinate
:math:`2b_T^2` (a factor :math:`d` too small) is the error to avoid; the tests' negative
control checks it is caught.

**The bound at every horizon.** A certificate :math:`(\rho^2,P,\kappa)` of one step
(:mod:`dpbounds.pep.lyapunov`: :math:`\mathbb EV_{t+1}\le\rho^2\mathbb EV_t+\kappa s^2`)
does not depend on :math:`T`, :math:`E_0` or :math:`s^2`, so each gives, at every :math:`T`,

.. math:: \mathbb E[F(x_T)]-F^\ast\le\rho^{2T}\big(\mathbf 1^\top P\mathbf 1\,D+E_0\big)
          +\kappa\,\mathcal E_T\,\frac{1-\rho^{2T}}{1-\rho^2},

with :math:`\lVert x_0-x^\ast\rVert^2\le D` and :math:`F(x_0)-F^\ast\le E_0` (``initial_gap``
given: :math:`D=2E_0/\mu`; the distance given: :math:`E_0=LD/2`), the
:class:`~dpbounds.lmi.heavy_ball_bound.LMIBoundCurves` shape, minimised over
:math:`T\le T_{\max}` by :func:`~dpbounds.tuning.horizon_search.minimise_over_horizon`. Which
certificate is best does depend on :math:`T` (the SDP of a rate :math:`\rho^2` trades
:math:`\mathbf 1^\top P\mathbf 1` against :math:`\kappa` with the weights
:math:`\rho^{2T}D` and :math:`\mathcal E_T\sum_{k<T}\rho^{2k}`), so :func:`lyapunov_point`
solves the SDPs of :data:`RATES` rates (:math:`\rho^2=\rho_q^2+(1-\rho_q^2)\theta^2`,
:math:`\rho_q` the quadratic rate, :math:`\theta` on a uniform grid of :math:`[0,1)`, as
``lyapunov_bound`` does) at a first horizon :math:`\sqrt{T_{\max}}`, moves to the best horizon
of every certificate found, and there solves the best rate and the rates half as far as before
on either side (a bisection of :math:`\theta` at the moving horizon), :data:`ROUNDS` rounds in
all; every certificate of every round enters the minimum. Measured on 27 certified points of
three problems (L/mu = 10, 255, 1e3; ``max_horizon`` 1000), against the least of this, one
round and 96 rates with 10 rounds: within 1.4% (median 0.0%); one round at the first horizon
only: up to 2.4x above it (median 10%): the best certificate moves with :math:`T`.

**Speed.** The SDP is :func:`dpbounds.pep.lyapunov._solve`'s (same matrices, from
:func:`dpbounds.pep.lyapunov._step` and :func:`~dpbounds.pep.formulation.pair_form`, same
margins :math:`S\succeq10^{-8}I`, :math:`P\succeq10^{-7}I`), handed to Clarabel directly
instead of through cvxpy: 2-4 ms a solve instead of 30-120 ms (cvxpy's compilation), the
same optimum (measured to :math:`10^{-9}` relative; ``tests/tuning/test_smooth_error.py``
compares the two). The search uses these float certificates unchecked; every value a tuner
**reports** comes from certificates checked exactly by :func:`dpbounds.pep.lyapunov._verify`
(:func:`verified_value`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate
from dpbounds.lmi.heavy_ball_bound import LMIBoundCurves
from dpbounds.pep.formulation import FixedStepMethod, pair_form
from dpbounds.pep.lyapunov import _step, _sym, _verify
from dpbounds.tuning.horizon_search import minimise_over_horizon

__all__: list[str] = []

#: rates tried per (alpha, beta): rho^2 = lo + (1 - lo) theta^2, theta in [0, 1) (lo: the
#: quadratic rate squared; rho^2 = 1 is left out: its bound never falls below E_0)
RATES = 16
#: rounds of "solve at a horizon, move to the certificates' best horizon and refine the rate"
ROUNDS = 5
#: theta = 1 - 2^-k tried when no rate of the grid has a certificate
_NEAR_ONE = (5, 7, 9, 11, 13)
_S_MARGIN = 1e-8   # lyapunov._solve's margins (the exact check needs them)
_P_MARGIN = 1e-7
_ROUND_UP = 1.0 + 1e-9  # lyapunov_bound's rounding of its float evaluation
_WEIGHT_FLOOR = 1e-12   # relative: a weight that underflows still prices its variable
_HORIZON_BUDGET = 100_000
_SQRT2 = math.sqrt(2.0)


def _svec(M: np.ndarray) -> np.ndarray:
    """Clarabel's PSD-triangle vector: the upper triangle by columns, off-diagonals x sqrt 2."""
    # column-major order of the upper triangle = row-major order of the lower triangle
    r, c = np.tril_indices(M.shape[0])
    return M[r, c] * np.where(r == c, 1.0, _SQRT2)


@dataclass(frozen=True)
class _Terms:
    """The one-step SDP of heavy ball (alpha, beta) in Clarabel's form ``A z + s = b``, ``s`` in
    (zero: the two function-value equalities) x (nonneg: kappa, lambda) x PSD(S - margin I) x
    PSD(P - margin I), with z = (P00, P01, P11, kappa, lambda..., nu...) and
    S(z) = sum z_i C_i; only the P columns of the PSD(S) block depend on rho^2 (``p_next``,
    ``p_now``: the svec'd A1^T E A1 and A0^T E A0)."""

    method: FixedStepMethod
    n: int
    pairs: int
    A: np.ndarray        # with the P columns of the PSD(S) block zero
    b: np.ndarray
    s_rows: slice        # rows of the PSD(S) block
    p_next: np.ndarray   # (rows, 3)
    p_now: np.ndarray


def _terms(alpha: float, beta: float, mu: float, L: float) -> _Terms:
    method = FixedStepMethod.heavy_ball(alpha, beta)
    st = _step(method, False)
    lay, A0, A1, n = st.lay, st.A0, st.A1, st.lay.n
    pairs = lay.pairs()
    npairs = len(pairs)
    c = 2.0 * (L - mu)
    basis = [np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]),
             np.array([[0.0, 0.0], [0.0, 1.0]])]
    forms, fc = [], np.zeros((lay.num_points, npairs))
    for r, (i, j) in enumerate(pairs):
        Q, f = pair_form(lay, i, j, mu, L)
        forms.append(np.asarray(Q, dtype=float) / c)
        for k, sg in f.items():
            fc[k, r] += sg
    rest = [_sym(st.xi, st.xi, n), *forms, *(-_sym(st.xi, v, n) for v in st.orth)]
    nv = 3 + len(rest)
    lam0 = 4
    Az = np.zeros((2, nv))
    Az[:, lam0:lam0 + npairs] = fc[[-1, 0]]  # F(x_{t+1}) weight 1, F(x_t) weight -rho^2
    An = np.zeros((1 + npairs, nv))
    An[:, 3:lam0 + npairs] = -np.eye(1 + npairs)
    As = np.zeros((n * (n + 1) // 2, nv))
    As[:, 3:] = -np.array([_svec(C) for C in rest]).T
    Ap = np.zeros((3, nv))
    Ap[:, :3] = -np.array([_svec(E) for E in basis]).T
    b = np.concatenate([[1.0, 0.0], np.zeros(1 + npairs), _svec(-_S_MARGIN * np.eye(n)),
                        _svec(-_P_MARGIN * np.eye(2))])
    start = 3 + npairs
    return _Terms(method, n, npairs, np.vstack([Az, An, As, Ap]), b,
                  slice(start, start + As.shape[0]),
                  np.array([_svec(A1.T @ E @ A1) for E in basis]).T,
                  np.array([_svec(A0.T @ E @ A0) for E in basis]).T)


@dataclass(frozen=True)
class Certificate:
    """One step's float certificate (``lam``, ``nu``: the multipliers the exact check needs)."""

    rho2: float
    P: np.ndarray
    kappa: float
    lam: np.ndarray
    nu: np.ndarray

    def start(self, dist_sq: float, gap0: float) -> float:
        """:math:`V_0\\le\\mathbf 1^\\top P\\mathbf 1\\,D+E_0`, rounded up."""
        return (max(float(np.sum(self.P)), 0.0) * dist_sq + gap0) * _ROUND_UP


def _solve(t: _Terms, rho2: float, w_start: float, w_noise: float) -> Certificate | None:
    """Minimise ``w_start * 1'P1 + w_noise * kappa`` over the certificates of rate ``rho2``."""
    import clarabel
    import scipy.sparse as sp

    top = max(w_start, w_noise)
    if not (math.isfinite(top) and top > 0):
        return None
    q_start, q_noise = (max(w / top, _WEIGHT_FLOOR) for w in (w_start, w_noise))
    A = t.A.copy()
    # S = -(A1^T P A1 - rho^2 A0^T P A0) + ...: the P columns, negated as every PSD column
    A[t.s_rows, :3] = t.p_next - rho2 * t.p_now
    b = t.b.copy()
    b[1] = -rho2
    nv, npairs = A.shape[1], t.pairs
    q = np.zeros(nv)
    q[:3] = (q_start, 2.0 * q_start, q_start)
    q[3] = q_noise
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    cones = [clarabel.ZeroConeT(2), clarabel.NonnegativeConeT(1 + npairs),
             clarabel.PSDTriangleConeT(t.n), clarabel.PSDTriangleConeT(2)]
    try:
        sol = clarabel.DefaultSolver(sp.csc_matrix((nv, nv)), q, sp.csc_matrix(A), b, cones,
                                     settings).solve()
    except BaseException as err:  # Clarabel's Rust panics (PanicException) on extreme scales
        if type(err).__name__ != "PanicException":
            raise
        return None
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        return None
    z = np.asarray(sol.x, dtype=float)
    if not np.all(np.isfinite(z)):
        return None
    lam0 = 4
    P = np.array([[z[0], z[1]], [z[1], z[2]]])
    return Certificate(float(rho2), P, max(float(z[3]), 0.0),
                       np.maximum(z[lam0:lam0 + npairs], 0.0), z[lam0 + npairs:].copy())


def verify(cert: Certificate, alpha: float, beta: float, mu: float, L: float) -> bool:
    """The exact check of :func:`dpbounds.pep.lyapunov._verify` (rationals of the floats)."""
    return bool(_verify(FixedStepMethod.heavy_ball(alpha, beta), mu, L, Fraction(cert.rho2),
                        cert.P, Fraction(cert.kappa), [Fraction(float(v)) for v in cert.lam],
                        [Fraction(float(v)) for v in cert.nu]))


@dataclass
class LyapunovPoint:
    """The Lyapunov bound of one heavy ball (alpha, beta): its certificates and best horizon."""

    alpha: float
    beta: float
    value: float = math.inf
    horizon: int = 0
    rho: float = math.nan
    certificates: list[Certificate] = field(default_factory=list)


def _curves(certs: list[Certificate], dist_sq: float, gap0: float,
            noise: Callable[[Any], Any]) -> LMIBoundCurves:
    return LMIBoundCurves([c.start(dist_sq, gap0) for c in certs],
                          [c.kappa * _ROUND_UP / (1.0 - c.rho2) for c in certs],
                          [math.sqrt(c.rho2) for c in certs], noise)


def _best(certs: list[Certificate], dist_sq: float, gap0: float, noise: Callable[[Any], Any],
          Tmax: int) -> tuple[np.ndarray, np.ndarray]:
    """Best horizon and value of each certificate (every T <= Tmax, branch and bound)."""
    res = minimise_over_horizon(_curves(certs, dist_sq, gap0, noise), len(certs), Tmax,
                                joint=False, max_evaluations=_HORIZON_BUDGET)
    return res.best_T, res.best


def lyapunov_point(alpha: float, beta: float, mu: float, L: float, *, noise: Callable[[Any], Any],
                   dist_sq: float, gap0: float, Tmax: int, rates: int = RATES,
                   rounds: int = ROUNDS) -> LyapunovPoint:
    r"""The least Lyapunov bound of heavy ball :math:`(\alpha,\beta)` over :math:`T\le T_{\max}`
    and the float certificates of ``rates`` contraction factors (module docstring; unchecked:
    :func:`verified_value` checks them). ``noise(T)`` is :math:`\mathcal E_T`; the value is
    ``inf`` where no certificate is found (e.g. an unstable :math:`(\alpha,\beta)`)."""
    out = LyapunovPoint(float(alpha), float(beta))
    if not (alpha > 0 and 0 <= beta < 1):
        return out
    rq = float(heavy_ball_rate(alpha, beta, mu, L))
    if not rq < 1.0:  # no potential contracts faster than the quadratic rate
        return out
    t = _terms(alpha, beta, mu, L)
    lo = rq * rq
    T = max(1, round(math.sqrt(Tmax)))  # a first horizon; the rounds move it
    tried = list(np.linspace(0.0, 1.0, rates + 1)[:-1])  # the first round: every rate
    h = 1.0 / rates
    solved: set[tuple[float, int]] = set()
    theta: list[float] = []  # of each certificate
    done, near_one = 0, False
    while done < rounds:
        s2 = float(noise(np.array([T]))[0])
        for th in tried:
            if (th, T) in solved or not 0.0 <= th < 1.0:
                continue
            solved.add((th, T))
            rho2 = lo + (1.0 - lo) * th * th
            c = _solve(t, rho2, rho2**T * dist_sq, s2 * (1.0 - rho2**T) / (1.0 - rho2))
            if c is not None:
                out.certificates.append(c)
                theta.append(th)
        if not out.certificates and not near_one:
            # none on the grid: the certified rates may all lie within its last cell of 1
            # (the paper's Section-5 choice at L/mu = 10: rho^2 > 0.99), where the refinement
            # steps are then taken
            tried, h, near_one = [1.0 - 0.5**k for k in _NEAR_ONE], 0.5**_NEAR_ONE[0], True
            continue
        if not out.certificates:
            return out
        done += 1
        Ts, vals = _best(out.certificates, dist_sq, gap0, noise, Tmax)
        j = int(np.argmin(vals))
        out.value, out.horizon, out.rho = (float(vals[j]), int(Ts[j]),
                                           math.sqrt(out.certificates[j].rho2))
        # next round: the best certificate's best horizon, its rate and the rates half as
        # far as before on either side (a bisection of the rate at the moving horizon)
        T, h = out.horizon, h / 2
        tried = [theta[j] - h, theta[j], theta[j] + h]
    return out


def verified_value(point: LyapunovPoint, mu: float, L: float, *, noise: Callable[[Any], Any],
                   dist_sq: float, gap0: float, Tmax: int) -> tuple[float, int, float]:
    r"""(value, horizon, rho) of the best certificate of ``point`` that passes the exact check
    (``(inf, 0, nan)`` if none does): certificates are checked in the order of their best
    values, so the first that passes is the least verified bound."""
    certs = point.certificates
    if not certs:
        return math.inf, 0, math.nan
    Ts, vals = _best(certs, dist_sq, gap0, noise, Tmax)
    for j in np.argsort(vals, kind="stable"):
        if not math.isfinite(vals[j]):
            break
        if verify(certs[j], point.alpha, point.beta, mu, L):
            return float(vals[j]), int(Ts[j]), math.sqrt(certs[j].rho2)
    return math.inf, 0, math.nan


#: nested grids of the search in (log alpha, -log(1 - beta)): 2^k + 1 points per axis, so each
#: holds the points of the smaller ones
GRIDS = (3, 5, 9, 17)
_STARTS = 2          # compass searches from the best local minima of each grid
_COMPASS_TOL = 1e-3  # last step of a compass search, in log alpha and -log(1 - beta)
_COMPASS_BUDGET = 60  # evaluations (cached or not) one compass search may ask for


def grid_members(grid: int) -> list[int]:
    """The members of :data:`GRIDS` up to ``grid`` (at least the first)."""
    return [g for g in GRIDS if g <= max(grid, GRIDS[0])]


def nested_search(f: Callable[[float, float], float], x_range: tuple[float, float],
                  y_range: tuple[float, float], grid: int,
                  on_grid: Callable[[int], None] | None = None) -> tuple[float, float, float]:
    r"""Minimise ``f(x, y)`` on the box: the nested grids of :func:`grid_members`, each followed
    by compass searches (8 neighbours, the step halved when none improves, down to
    :data:`_COMPASS_TOL`) from its :data:`_STARTS` best local minima.

    ``f`` is called through a cache, so a larger ``grid`` repeats a smaller one's whole run
    (the same evaluations in the same order) and its result is never worse. Returns
    ``(value, x, y)`` of the least value seen (a search, not a proof).
    """
    cache: dict[tuple[float, float], float] = {}

    def F(x: float, y: float) -> float:
        x = min(max(x, x_range[0]), x_range[1])
        y = min(max(y, y_range[0]), y_range[1])
        key = (round(x, 12), round(y, 12))
        if key not in cache:
            cache[key] = f(*key)
        return cache[key]

    dirs = [(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0)]

    def compass(x: float, y: float, hx: float, hy: float) -> None:
        v, polls = F(x, y), 0
        while max(hx, hy) > _COMPASS_TOL and polls < _COMPASS_BUDGET:
            polls += len(dirs)
            vn, xn, yn = min((F(x + i * hx, y + j * hy), x + i * hx, y + j * hy)
                             for i, j in dirs)
            if vn < v:
                v = vn
                x = min(max(xn, x_range[0]), x_range[1])
                y = min(max(yn, y_range[0]), y_range[1])
            else:
                hx, hy = hx / 2, hy / 2

    for g in grid_members(grid):
        xs, ys = np.linspace(*x_range, g), np.linspace(*y_range, g)
        G = np.array([[F(x, y) for y in ys] for x in xs])
        pad = np.pad(G, 1, constant_values=np.inf)
        local = sorted((G[i, j], i, j) for i in range(g) for j in range(g)
                       if np.isfinite(G[i, j]) and G[i, j] <= np.min(pad[i:i + 3, j:j + 3]))
        # the first step: half the grid's spacing (a coarse grid only says where to start)
        hx, hy = (xs[1] - xs[0]) / 2, (ys[1] - ys[0]) / 2
        for _, i, j in local[:_STARTS]:
            compass(float(xs[i]), float(ys[j]), hx, hy)
        if on_grid is not None:
            on_grid(g)
    v, (x, y) = min((v, k) for k, v in cache.items())
    return v, x, y
