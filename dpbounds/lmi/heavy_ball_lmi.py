r"""The LMI certificate of Kuru et al., Prop. 3.4, for DP heavy ball on :math:`\mathcal S_{\mu,L}`.

For a step :math:`\alpha` and momentum :math:`\beta`, a rate :math:`\rho\in(0,1)` is certified when
there are a symmetric :math:`P\succeq0` (2x2), :math:`c_0\ge0` and :math:`c>0` with

.. math:: c_0X_0+c\,[X_1+(1-\rho^2)X_2]\succeq\Phi(A,B,P,\rho)
          =\begin{bmatrix}A^\top PA-\rho^2P&A^\top PB\\B^\top PA&B^\top PB\end{bmatrix}
          \qquad(22)

(:math:`3\times3`; :math:`A=[[1+\beta,-\beta],[1,0]]`, :math:`B=[-\alpha;0]`, :math:`C=[1,0]`).
Then (23) bounds :math:`\mathbb E[F(x_t)-F^\ast]` for every :math:`F\in\mathcal S_{\mu,L}`.
The **minimal rate** :math:`\rho^\ast` is the infimum of the certified :math:`\rho`; it need not be
attained (at :math:`\rho^\ast` the LMI is typically singular), so what is returned is a
bracket ``rho_lower <= rho* <= rho`` in which both ends are proven.

Conventions and facts settled here (**[DERIVED]**, ``kuru_et_al.md`` §3, §11):

* **Sign of** :math:`B`. (18) prints :math:`B=[\alpha;0]`, which turns (17) into gradient *ascent*;
  (16) and (42) need :math:`B=[-\alpha;0]` (the IQC reference code's ``G_hbm``). Only the
  :math:`-\alpha` version is certifiable; :func:`lmi_blocks` accepts ``b_sign=+1`` to show it.
* :math:`c>0`. The paper writes :math:`c_0,c\ge0`, but with :math:`c=0` the point
  :math:`P=0,c_0=0` satisfies (22) at every :math:`\rho`, and (23) divides by :math:`c`.
* **Bisection is valid**: feasibility is monotone in :math:`\rho`. If :math:`(P,c_0,c)` is feasible
  at :math:`\rho`, then :math:`(P,c_0+c(\rho'^2-\rho^2)/(2(\mu+L)),c)` is feasible at
  :math:`\rho'>\rho`, because
  :math:`\mathrm{blkdiag}(P,0)-X_2+X_0/(2(\mu+L))=
  \mathrm{blkdiag}(P+\mathrm{diag}(\tfrac{\mu L}{\mu+L}-\tfrac\mu2,0),\tfrac1{\mu+L})\succeq0`
  (since :math:`L\ge\mu`).
* **Lower bounds**: quadratics belong to :math:`\mathcal S_{\mu,L}`, so :math:`\rho^\ast` is never
  below :func:`dpbounds.bounds.strongly_convex.heavy_ball.heavy_ball_rate`; the search starts
  there. A
  :math:`\rho` at which the SDP's dual gives a Farkas certificate (checked exactly, see
  :mod:`dpbounds.lmi.exact`) is also below :math:`\rho^\ast`.
* **Solving**: (22) is homogeneous in :math:`(P,c_0,c)`. We maximise the margin :math:`t` with
  :math:`G\succeq tI`, :math:`P\succeq0`, :math:`c_0,c\ge0`, :math:`P_{11}+P_{22}+c_0+c=1`
  (Clarabel at tolerance :math:`10^{-11}`). A point counts as feasible when :math:`t` is at least
  the requested *relative* margin times the size of the LMI's terms (default 0) and, for
  :math:`t` within :math:`10^{-8}` of the solver's accuracy, the cleaned certificate passes a
  float64 eigenvalue check with a rounding allowance; the smallest such :math:`\rho` is found
  by a safeguarded secant (Illinois) search whose stopping width is
  :math:`\min(\mathrm{tol},\mathrm{rtol}\,(1-\rho))`. The returned certificate is then
  checked exactly (the next feasible point is tried if it fails), and the largest probed
  infeasible :math:`\rho` whose dual matrix passes the exact Farkas check becomes ``rho_lower``.
  At Kuru et al.'s Section-5 point the certified :math:`1-\rho` is within :math:`6\cdot10^{-5}`
  (relative) of the minimal rate's; the former absolute margin :math:`10^{-7}` gave
  :math:`1.2\cdot10^{-2}` (``bench/bench_rate_map.py --accuracy``).
* **Scaling**: the LMI is invariant under :math:`(\mu,L,\alpha)\to(\mu/L,1,\alpha L)` with
  :math:`(P,c_0,c)\to(P,c_0L^2,cL)` (substitute :math:`g=Lg'`); the solver always works in
  these normalised units, so rates depend on :math:`(\kappa,\alpha L,\beta)` only.
* **Verification** never trusts the solver: :func:`verify_certificate` assembles (22) from the
  given floats in exact rational arithmetic and decides :math:`G\succeq0`, :math:`P\succeq0`
  exactly. A result is ``certified`` only if it is ``verified``.

Examples
--------
>>> from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_rate
>>> cert = heavy_ball_lmi_rate(mu=0.5, L=1.0, alpha=0.5, beta=0.3)
>>> cert.certified, cert.verified, 0.6 < cert.rho_lower <= cert.rho < 0.75
(True, True, True)
>>> heavy_ball_lmi_rate(mu=0.1, L=1.0, alpha=1.9, beta=0.9).certified
False
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import cvxpy as cp
import numpy as np

from dpbounds._validation import (
    check_closed_interval,
    check_finite,
    check_nonnegative,
    check_positive,
)
from dpbounds.bounds.strongly_convex.heavy_ball import (
    SOURCE_PROP34,
    heavy_ball_rate,
)
from dpbounds.lmi.exact import certificate_holds, farkas_holds, quadratic_rate_lower_bound
from dpbounds.provenance import Source

__all__ = [
    "DEFAULT_MARGIN",
    "SOURCE_PROP34",
    "HeavyBallLMI",
    "LMICertificate",
    "NoCertificate",
    "Verification",
    "assemble_lmi",
    "heavy_ball_lmi_bound",
    "heavy_ball_lmi_bound_as_printed",
    "heavy_ball_lmi_certificate_at",
    "heavy_ball_lmi_rate",
    "lmi_blocks",
    "naive_heavy_ball_lmi_rate",
    "verify_certificate",
]

#: Default required margin of (22), relative to the size of its terms. 0 accepts every
#: certificate that passes the checks; an absolute margin (the former 1e-7) left the certified
#: rho up to 4.5e-5 above the minimum at Kuru et al.'s Section-5 conditioning.
DEFAULT_MARGIN = 0.0

#: The naive benchmark baseline keeps the old absolute margin (it has no verification step).
_NAIVE_MARGIN = 1e-7

#: Clarabel accuracy of the margin SDP. Near the minimal rate the margin t is ~ slope * distance
#: with slopes ~1e-3 at kappa ~ 250, so the default 1e-8 would leave rho ~1e-5 too high.
_CLARABEL_OPTIONS = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11,
                     "tol_ktratio": 1e-8, "max_iter": 400}

_TOP = 1.0 - 1e-9  # largest rho tried
_EPS = np.finfo(float).eps


# ----------------------------------------------------------------------------- matrices
def _check(mu: float, L: float, alpha: float, beta: float) -> tuple[float, float, float, float]:
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    alpha = float(check_positive("alpha", alpha))
    beta = float(check_nonnegative("beta", beta))
    if beta >= 1:
        raise ValueError(f"beta must lie in [0, 1), got {beta}")
    with np.errstate(over="ignore", invalid="ignore"):
        big = (2.0 * mu * L, L * alpha * alpha, mu + L)
    if not all(math.isfinite(v) for v in big):
        raise ValueError(f"mu, L, alpha too large: the LMI's matrices overflow float64 "
                         f"(2 mu L = {big[0]:g}, L alpha^2 = {big[1]:g})")
    return mu, L, alpha, beta


def _check_margin(margin: Any) -> float:
    margin = float(check_nonnegative("margin", margin))
    if margin >= 1:
        raise ValueError(f"margin must lie in [0, 1) (it is relative to the LMI's size), "
                         f"got {margin}")
    return margin


def lmi_blocks(mu: float, L: float, alpha: float, beta: float, *, b_sign: int = -1) -> dict:
    r"""The matrices of Proposition 3.4 in their :math:`3\times3` form (``d = 1``).

    Returns ``A, B, C, X0, X1, X2`` exactly as printed, except :math:`B=[b\_sign\cdot\alpha;0]`
    (default :math:`-\alpha`, see the module docstring; ``b_sign=+1`` is (18) as printed).
    """
    if b_sign not in (-1, 1):
        raise ValueError(f"b_sign must be -1 or +1, got {b_sign!r}")
    return _blocks(*_check(mu, L, alpha, beta), b_sign)


def _blocks(mu: float, L: float, alpha: float, beta: float, b_sign: int = -1) -> dict:
    A = np.array([[1.0 + beta, -beta], [1.0, 0.0]])
    B = np.array([[b_sign * alpha], [0.0]])
    C = np.array([[1.0, 0.0]])
    CtC = C.T @ C
    X0 = np.zeros((3, 3))
    X0[:2, :2] = 2.0 * mu * L * CtC
    X0[:2, 2:] = -(mu + L) * C.T
    X0[2:, :2] = -(mu + L) * C
    X0[2, 2] = 2.0
    q = (1.0 - L * alpha) * beta
    X1 = 0.5 * np.array([
        [-L * beta**2, L * beta**2, -q],
        [L * beta**2, -L * beta**2, q],
        [-q, q, alpha * (2.0 - L * alpha)],
    ])
    X2 = 0.5 * np.array([[mu, 0.0, -1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    return {"A": A, "B": B, "C": C, "X0": X0, "X1": X1, "X2": X2}


def _check_certificate(rho: Any, P: Any, c0: Any, c: Any) -> tuple[float, np.ndarray, float,
                                                                   float]:
    rho = float(check_finite("rho", rho))
    P = np.asarray(check_finite("P", P), dtype=float)
    if P.shape != (2, 2):
        raise ValueError(f"P must be a 2x2 matrix, got shape {P.shape}")
    return rho, P, float(check_finite("c0", c0)), float(check_finite("c", c))


def assemble_lmi(
    mu: float, L: float, alpha: float, beta: float, rho: float, P: Any, c0: float, c: float,
    *, b_sign: int = -1,
) -> np.ndarray:
    r"""The matrix :math:`c_0X_0+c[X_1+(1-\rho^2)X_2]-\Phi(A,B,P,\rho)` of (22), in float64.

    Built directly from the printed blocks (no solver data). :func:`verify_certificate` decides
    definiteness on the same matrix in exact arithmetic.
    """
    m = lmi_blocks(mu, L, alpha, beta, b_sign=b_sign)
    with np.errstate(over="ignore", invalid="ignore"):
        G = _assemble(m, *_check_certificate(rho, P, c0, c))
    if not np.all(np.isfinite(G)):
        raise ValueError("the LMI overflows float64: rho, P, c0 or c too large")
    return G


def _assemble(m: dict, rho: float, P: np.ndarray, c0: float, c: float) -> np.ndarray:
    AB, r2 = np.hstack([m["A"], m["B"]]), np.float64(rho) ** 2  # numpy: overflow gives inf
    Phi = AB.T @ P @ AB
    Phi[:2, :2] -= r2 * P
    G = c0 * m["X0"] + c * (m["X1"] + (1.0 - r2) * m["X2"]) - Phi
    return 0.5 * (G + G.T)


@dataclass(frozen=True)
class Verification:
    """Result of :func:`verify_certificate`.

    ``ok`` is decided in exact rational arithmetic (:mod:`dpbounds.lmi.exact`); the two smallest
    eigenvalues are float64 values for display.
    """

    ok: bool
    min_eig_lmi: float
    min_eig_P: float
    tolerance: float = 0.0
    method: str = "exact rational arithmetic"

    def __str__(self) -> str:
        return (f"{'verified' if self.ok else 'NOT verified'} ({self.method}): min eig(LMI) = "
                f"{self.min_eig_lmi:.3e}, min eig(P) = {self.min_eig_P:.3e}")


def verify_certificate(
    mu: float, L: float, alpha: float, beta: float, rho: float, P: Any, c0: float, c: float,
) -> Verification:
    r"""Check a certificate of (22) independently of any solver, in exact arithmetic.

    Accepts when :math:`0<\rho<1`, :math:`c_0\ge0`, :math:`c>0`, :math:`P` is symmetric and
    :math:`P\succeq0` and :math:`G\succeq0`, where :math:`G` is (22) assembled from the given
    floats as exact rationals (no rounding; every principal minor :math:`\ge0`).

    Example
    -------
    >>> verify_certificate(0.5, 1.0, 0.5, 0.0, 0.76, [[1.0, 0.0], [0.0, 0.0]], 0.6, 0.01).ok
    True
    """
    G = assemble_lmi(mu, L, alpha, beta, rho, P, c0, c)
    rho, P, c0, c = _check_certificate(rho, P, c0, c)
    return _verification(G, P, certificate_holds(mu, L, alpha, beta, rho, P, c0, c))


def _verification(G: np.ndarray, P: np.ndarray, ok: bool) -> Verification:
    # display values; inf if G does not fit in float64 (the exact check does not need it to)
    eg = float(np.linalg.eigvalsh(G)[0]) if np.all(np.isfinite(G)) else math.inf
    return Verification(ok=bool(ok), min_eig_lmi=eg,
                        min_eig_P=float(np.linalg.eigvalsh(0.5 * (P + P.T))[0]))


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class LMICertificate:
    r"""A verified rate certificate of Proposition 3.4 (normalised to :math:`c=1`).

    Attributes
    ----------
    rho:
        The certified rate: the smallest found (up to the search tolerance) whose certificate
        passed the checks.
    P, c0, c:
        The certificate of (22).
    rho_lower:
        A proven lower bound on the minimal rate :math:`\rho^\ast`: the largest :math:`\rho`
        proven infeasible by an exactly checked Farkas certificate, or the quadratic rate
        rounded down (see ``lower_bound``). So ``rho_lower <= rho* <= rho``.
    verification:
        Exact check of the certificate (:func:`verify_certificate`); always ``ok``.
    quadratic_rate:
        The closed-form heavy-ball rate on quadratics (a lower bound).
    solves:
        Number of SDP solves used.
    lower_bound:
        What proves ``rho_lower``.
    farkas:
        For a Farkas lower bound, the 3 x k matrix :math:`R` with :math:`Z=RR^\top` the
        certificate (:func:`dpbounds.lmi.exact.farkas_holds`), else ``None``.
    """

    mu: float
    L: float
    alpha: float
    beta: float
    rho: float
    P: np.ndarray
    c0: float
    c: float
    rho_lower: float
    verification: Verification
    quadratic_rate: float
    solver: str
    solves: int
    source: Source = SOURCE_PROP34
    lower_bound: str = "quadratic rate (rounded down)"
    farkas: np.ndarray | None = None
    certified: bool = field(default=True, init=False)

    @property
    def verified(self) -> bool:
        return self.verification.ok

    def bound(self, t: Any, **kwargs: Any) -> Any:
        """The derived noise bound (see :func:`heavy_ball_lmi_bound`) at iteration(s) ``t``."""
        return heavy_ball_lmi_bound(self, t, **kwargs)

    def __str__(self) -> str:
        return (f"Prop. 3.4 certificate: rho = {self.rho:.9f} (minimal rate in "
                f"[{self.rho_lower:.9f}, {self.rho:.9f}], lower end: {self.lower_bound}; "
                f"quadratic rate {self.quadratic_rate:.9f}); "
                f"P = {np.array2string(self.P, precision=4)}, c0 = {self.c0:.4g}, c = 1; "
                f"{self.verification}")


@dataclass(frozen=True)
class NoCertificate:
    """Proposition 3.4 gives no certificate with rho < 1 for these (alpha, beta).

    There is deliberately no ``rho`` number here; ``certified`` is False.
    """

    mu: float
    L: float
    alpha: float
    beta: float
    reason: str
    quadratic_rate: float
    solves: int
    source: Source = SOURCE_PROP34
    certified: bool = field(default=False, init=False)
    verified: bool = field(default=False, init=False)

    def __str__(self) -> str:
        return (f"no certificate below rho = 1 for alpha = {self.alpha:.4g}, beta = "
                f"{self.beta:.4g} ({self.reason})")


# ----------------------------------------------------------------------------- solver
def _solver_order(solver: str | None) -> list[str]:
    if solver is not None:
        return [solver]
    installed = cp.installed_solvers()
    order = [s for s in ("MOSEK",) if s in installed]
    return order + [s for s in ("CLARABEL", "SCS") if s in installed]


def _solver_options(name: str) -> dict:
    return dict(_CLARABEL_OPTIONS) if name == "CLARABEL" else {}


_E = (
    np.array([[1.0, 0.0], [0.0, 0.0]]),
    np.array([[0.0, 1.0], [1.0, 0.0]]),
    np.array([[0.0, 0.0], [0.0, 1.0]]),
)
_E3 = tuple(np.pad(e, ((0, 1), (0, 1))) for e in _E)  # the same, as 3x3 blocks


_SQRT2 = math.sqrt(2.0)


def _svec3(M: np.ndarray) -> np.ndarray:
    """Clarabel's PSD-triangle vectorisation (upper triangle by columns, off-diagonals x sqrt 2)."""
    return np.array([M[0, 0], _SQRT2 * M[0, 1], M[1, 1], _SQRT2 * M[0, 2], _SQRT2 * M[1, 2],
                     M[2, 2]])


def _smat3(z: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_svec3`."""
    s = 1.0 / _SQRT2
    return np.array([[z[0], s * z[1], s * z[3]], [s * z[1], z[2], s * z[4]],
                     [s * z[3], s * z[4], z[5]]])


class Probe(NamedTuple):
    """The margin SDP at one rho: maximal margin, maximiser and the LMI's dual matrix."""

    t: float
    sol: dict | None
    Z: np.ndarray | None
    name: str


class _DirectClarabel:
    """The same margin SDP written straight into Clarabel's conic form (no cvxpy per solve).

    Variables ``x = (P11, P12, P22, c0, c, t)``; maximise ``t`` subject to
    ``P11 + P22 + c0 + c = 1``, ``c0, c >= 0``, ``G(x) - t I`` PSD (3x3) and ``P`` PSD (2x2).
    The dual of the 3x3 cone is the Farkas matrix ``Z`` (see :mod:`dpbounds.lmi.exact`).
    """

    def __init__(self) -> None:
        import clarabel
        import scipy.sparse as sps

        self._clarabel, self._sps = clarabel, sps
        A_p = np.zeros((3, 6))
        A_p[0, 0], A_p[1, 1], A_p[2, 2] = -1.0, -_SQRT2, -1.0
        A_eq = np.array([[1.0, 0.0, 1.0, 1.0, 1.0, 0.0]])
        A_nn = np.zeros((2, 6))
        A_nn[0, 3] = A_nn[1, 4] = -1.0
        # the constraint matrix keeps one sparsity pattern (the 6x6 PSD block stored densely,
        # explicit zeros included); each solve only rewrites the values of that block
        ids = np.arange(36, dtype=float).reshape(6, 6) + 10.0
        A = sps.csc_matrix(np.vstack([A_eq, A_nn, ids, A_p]))
        self._slots = np.flatnonzero(A.data >= 10.0)
        self._order = (A.data[self._slots] - 10.0).astype(int)
        self._A = A
        self._b = np.zeros(12)
        self._b[0] = 1.0
        self._q = np.zeros(6)
        self._q[5] = -1.0
        self._P = sps.csc_matrix((6, 6))
        self._cones = [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(2),
                       clarabel.PSDTriangleConeT(3), clarabel.PSDTriangleConeT(2)]
        self._settings = clarabel.DefaultSettings()
        self._settings.verbose = False
        for key, value in _CLARABEL_OPTIONS.items():
            setattr(self._settings, key, value)
        self._blocks: dict | None = None

    def set_point(self, blocks: dict) -> None:
        AB = np.hstack([blocks["A"], blocks["B"]])
        # the PSD block of the constraint matrix is A0 + rho^2 A1 (columns: P11, P12, P22, c0,
        # c, t), with G(x) = sum_k x_k M_k
        const = [-(AB.T @ _E[k] @ AB) for k in range(3)]
        const += [blocks["X0"], blocks["X1"] + blocks["X2"], -np.eye(3)]
        slope = [_E3[k] for k in range(3)] + [np.zeros((3, 3)), -blocks["X2"], np.zeros((3, 3))]
        A0 = -np.column_stack([_svec3(M) for M in const])
        A1 = -np.column_stack([_svec3(M) for M in slope])
        self._A01 = (A0.ravel()[self._order], A1.ravel()[self._order])

    def probe(self, rho: float) -> Probe:
        A0, A1 = self._A01
        A = self._A.copy()
        A.data[self._slots] = A0 + (rho * rho) * A1
        solver = self._clarabel.DefaultSolver(self._P, self._q, A, self._b, self._cones,
                                              self._settings)
        sol = solver.solve()
        if str(sol.status) not in ("Solved", "AlmostSolved"):
            return Probe(-math.inf, None, None, "")
        x = np.asarray(sol.x)
        primal = {"P": np.array([[x[0], x[1]], [x[1], x[2]]]), "c0": float(x[3]),
                  "c": float(x[4])}
        return Probe(float(x[5]), primal, _smat3(np.asarray(sol.z)[3:9]), "CLARABEL(direct)")


def _default_backend(solver: str | None) -> str:
    return "clarabel" if solver is None and "CLARABEL" in cp.installed_solvers() else "cvxpy"


_SHARED = threading.local()


def _shared_lmi(solver: str | None) -> HeavyBallLMI:
    """One :class:`HeavyBallLMI` per solver and thread (the cvxpy problems compile once)."""
    cache = _SHARED.__dict__.setdefault("cache", {})
    if solver not in cache:
        cache[solver] = HeavyBallLMI(solver, backend=_default_backend(solver))
    return cache[solver]


class HeavyBallLMI:
    r"""The margin problem of (22), compiled once with ``cp.Parameter`` (DPP) and re-solved.

    Parameters (cvxpy): the three :math:`3\times3` matrices :math:`[A\,B]^\top E_k[A\,B]`,
    :math:`X_0`, :math:`X_1+(1-\rho^2)X_2` and :math:`\rho^2`. Changing
    :math:`(\mu,L,\alpha,\beta,\rho)` only updates parameter values, so cvxpy compiles the
    problem once per process.

    ``backend="clarabel"`` solves the same SDP written directly in Clarabel's conic form (about
    ten times less overhead per solve than going through cvxpy; the default of
    :func:`heavy_ball_lmi_rate` and the rate maps) and falls back to the cvxpy problem whenever
    Clarabel does not report success.
    """

    def __init__(self, solver: str | None = None, backend: str = "cvxpy") -> None:
        if backend not in ("cvxpy", "clarabel"):
            raise ValueError(f"backend must be 'cvxpy' or 'clarabel', got {backend!r}")
        self._solvers = _solver_order(solver)
        self._direct = _DirectClarabel() if backend == "clarabel" else None
        self.p = cp.Variable(3)  # P11, P12, P22
        self.c0 = cp.Variable(nonneg=True)
        self.c = cp.Variable(nonneg=True)
        self.t = cp.Variable()
        self.K = [cp.Parameter((3, 3), symmetric=True) for _ in range(3)]
        self.X0 = cp.Parameter((3, 3), symmetric=True)
        self.Xc = cp.Parameter((3, 3), symmetric=True)  # X1 + (1 - rho^2) X2
        self.rho2 = cp.Parameter(nonneg=True)
        self.need = cp.Parameter(nonneg=True)  # required margin of the polishing problem
        Phi = sum(self.p[k] * self.K[k] for k in range(3)) - self.rho2 * sum(
            self.p[k] * _E3[k] for k in range(3))
        G = self.c0 * self.X0 + self.c * self.Xc - Phi
        P = cp.bmat([[self.p[0], self.p[1]], [self.p[1], self.p[2]]])
        norm = self.p[0] + self.p[2] + self.c0 + self.c == 1
        self.problem = cp.Problem(cp.Maximize(self.t), [G >> self.t * np.eye(3), P >> 0, norm])
        # polishing: among certificates with margin >= need, the largest c (smallest P/c, c0/c)
        self.polish_problem = cp.Problem(
            cp.Maximize(self.c), [G >> self.need * np.eye(3), P >> 0, norm])
        self.solves = 0
        self._key: tuple | None = None
        self._params_key: tuple | None = None

    def set_point(self, mu: float, L: float, alpha: float, beta: float) -> None:
        """Set the (normalised) problem; the solver works with whatever units it is given."""
        key = (mu, L, alpha, beta)
        if key == self._key:
            return
        m = _blocks(mu, L, alpha, beta)
        self._blocks = m
        self._AB = np.hstack([m["A"], m["B"]])
        if self._direct is not None:
            self._direct.set_point(m)
        self._key = key
        self._params_key = None  # cvxpy parameters are set on first use

    def _set_params(self) -> None:
        if self._params_key == self._key:
            return
        for k in range(3):
            self.K[k].value = self._AB.T @ _E[k] @ self._AB
        self.X0.value = self._blocks["X0"]
        self._params_key = self._key

    def size(self, rho: float) -> float:
        r"""Upper bound on :math:`\lVert G\rVert_2` over the normalised set (relative margins)."""
        m = self._blocks
        Xc = m["X1"] + (1 - rho**2) * m["X2"]
        return float(np.linalg.norm(m["X0"], 2) + np.linalg.norm(Xc, 2)
                     + np.linalg.norm(self._AB, 2) ** 2 + rho**2)

    def _set_rho(self, rho: float) -> None:
        self._set_params()
        self.rho2.value = rho * rho
        self.Xc.value = self._blocks["X1"] + (1.0 - rho * rho) * self._blocks["X2"]

    def _read(self) -> dict:
        p = self.p.value
        return {"P": np.array([[p[0], p[1]], [p[1], p[2]]]), "c0": float(self.c0.value),
                "c": float(self.c.value)}

    def polish(self, rho: float, need: float) -> dict | None:
        """The certificate with the largest c among those with margin >= ``need`` at ``rho``."""
        self._set_rho(rho)
        self.need.value = need
        for name in self._solvers:
            self.solves += 1
            try:
                with warnings.catch_warnings():  # inaccurate solutions are rejected later
                    warnings.simplefilter("ignore", UserWarning)
                    self.polish_problem.solve(solver=name, **_solver_options(name))
            except cp.error.SolverError:
                continue
            if self.polish_problem.status == "optimal" and self.c.value is not None:
                return self._read()
        return None

    def probe(self, rho: float) -> Probe:
        """Maximal normalised margin at ``rho``, the maximiser and the dual matrix ``Z``."""
        if self._direct is not None:
            self.solves += 1
            res = self._direct.probe(rho)
            if res.sol is not None:
                return res
        self._set_rho(rho)
        for name in self._solvers:
            self.solves += 1
            try:
                with warnings.catch_warnings():  # inaccurate solutions are checked later
                    warnings.simplefilter("ignore", UserWarning)
                    self.problem.solve(solver=name, warm_start=True, **_solver_options(name))
            except cp.error.SolverError:
                continue
            ok = self.problem.status in ("optimal", "optimal_inaccurate")
            if ok and self.t.value is not None:
                Z = self.problem.constraints[0].dual_value
                Z = None if Z is None else np.asarray(Z, dtype=float)
                return Probe(float(self.t.value), self._read(), Z, name)
        return Probe(-math.inf, None, None, "")

    def margin(self, rho: float) -> tuple[float, dict | None, str]:
        """Maximal normalised margin at ``rho`` and the maximiser (``-inf`` if no solver worked)."""
        res = self.probe(rho)
        return res.t, res.sol, res.name


# ----------------------------------------------------------------------------- search
class _Search:
    """Probes of one (mu, L, alpha, beta), cached, with the certificates they give.

    ``g(rho) >= 0`` iff the margin reaches the required one **and** the rescaled certificate
    passes the float64 pre-check; the exact checks run only on what is returned.
    """

    def __init__(self, lmi: HeavyBallLMI, mu: float, L: float, alpha: float, beta: float,
                 margin: float) -> None:
        self.lmi, self.point, self.margin = lmi, (mu, L, alpha, beta), margin
        lmi.set_point(mu / L, 1.0, alpha * L, beta)  # solve in normalised units (exact scaling)
        self.start = lmi.solves
        self.probes: dict[float, Probe] = {}
        self.ok: dict[float, bool] = {}
        self.m = _blocks(mu, L, alpha, beta)  # original units: what is verified
        self.mn = n = _blocks(mu / L, 1.0, alpha * L, beta)  # normalised: what is solved
        AB = np.hstack([n["A"], n["B"]])
        self._norms = (np.linalg.norm(n["X0"]), np.linalg.norm(n["X1"]) + np.linalg.norm(n["X2"]),
                       np.linalg.norm(AB) ** 2 + 1.0)
        self._scale = sum(self._norms)

    @property
    def solves(self) -> int:
        return self.lmi.solves - self.start

    def need(self, rho: float) -> float:
        return self.margin * self.lmi.size(rho) if self.margin > 0 else 0.0

    def probe(self, rho: float) -> Probe:
        if rho not in self.probes:
            self.probes[rho] = self.lmi.probe(rho)
        return self.probes[rho]

    def g(self, rho: float) -> float:
        p = self.probe(rho)
        gap = p.t - self.need(rho)
        if rho not in self.ok:
            # a margin far above the solver's accuracy needs no pre-check (the exact check of
            # the returned certificate still decides); small ones are pre-checked here
            self.ok[rho] = bool(gap >= 0 and p.t > 0 and (
                p.t > 1e-8 * self._scale or self._candidate(rho, p.sol, p.t) is not None))
        # a margin the certificate does not deliver counts as (barely) infeasible
        return gap if self.ok[rho] else min(gap, -1e-300)

    def _candidate(self, rho: float, sol: dict | None, t: float) -> tuple | None:
        r"""Clean a solver certificate, pre-check it, and map it to the original units (c = 1).

        In normalised units (where it was solved) the certificate is symmetrised, :math:`P`
        made positive definite (eigenvalues clipped, plus a few ulps), :math:`c_0\\ge0`, and
        :math:`c` raised to a floor that keeps half the margin; the LMI's smallest eigenvalue
        must then beat a generous allowance for float64 assembly and ``eigvalsh`` errors. It
        maps back with :math:`c_0=c_0'/L^2`, :math:`c=c'/L` (same :math:`P`: the original LMI
        is congruent to the normalised one by :math:`\\mathrm{diag}(1,1,1/L)`), rescaled to
        :math:`c=1`. The exact check in the original units is made by the caller.
        """
        if sol is None:
            return None
        L, n = self.point[1], self.mn
        P = 0.5 * (sol["P"] + sol["P"].T)
        if not np.all(np.isfinite(P)):
            return None
        w, V = np.linalg.eigh(P)
        w = np.maximum(w, 0.0)
        P = (V * w) @ V.T + 8 * _EPS * max(float(w.max()), 1e-300) * np.eye(2)
        # raising c by delta moves the LMI by delta*(X1 + (1-rho^2) X2): keep half the margin
        scale = np.linalg.norm(n["X1"] + (1.0 - rho**2) * n["X2"], 2)
        cn = max(sol["c"], 0.5 * max(t, 0.0) / max(scale, 1e-300))
        c0n = max(sol["c0"], 0.0)
        n0, n1, n2 = self._norms
        G = _assemble(n, rho, P, c0n, cn)
        if not (cn > 0 and np.linalg.eigvalsh(G)[0]
                > 256 * _EPS * (c0n * n0 + cn * n1 + np.linalg.norm(P) * n2)):
            return None
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            c0 = c0n / (L * cn)
            P = P * (L / cn)
        P[1, 0] = P[0, 1]  # exactly symmetric
        if not (math.isfinite(c0) and np.all(np.isfinite(P)) and np.linalg.eigvalsh(P)[0] > 0):
            return None
        return P, c0

    def certificate(self, rho: float, polish: bool) -> tuple | None:
        """``(P, c0, solver, verification)`` at a feasible ``rho``, exactly verified, or None."""
        p = self.probe(rho)
        tries = []
        if polish:
            need = max(0.5 * p.t, self.need(rho))
            better = self.lmi.polish(rho, need)
            if better is not None:
                tries.append((better, need))
        tries.append((p.sol, p.t))
        for sol, t in tries:
            cand = self._candidate(rho, sol, t)
            if cand is not None and certificate_holds(*self.point, rho, cand[0], cand[1], 1.0):
                with np.errstate(over="ignore", invalid="ignore"):
                    G = _assemble(self.m, rho, cand[0], cand[1], 1.0)
                return cand[0], cand[1], p.name, _verification(G, cand[0], True)
        return None

    def farkas_lower(self, below: float) -> tuple[float, np.ndarray] | None:
        r"""The largest probed rho < ``below`` proven infeasible by an exact Farkas check.

        Returns ``(rho, R)`` with :math:`Z=RR^\top` the certificate in the original units.
        """
        L, m = self.point[1], self.m
        cands = sorted((r for r, p in self.probes.items()
                        if r < below and p.t < 0 and p.Z is not None), reverse=True)
        for r in cands[:3]:
            Z = self.probes[r].Z
            w, V = np.linalg.eigh(0.5 * (Z + Z.T))
            R = np.diag([1.0, 1.0, L]) @ (V * np.sqrt(np.maximum(w, 0.0)))  # original units
            if not np.all(np.isfinite(R)):
                continue
            Zo = R @ R.T  # float pre-filter: <Z, X1 + (1 - rho^2) X2> < 0
            if np.sum(Zo * (m["X1"] + (1 - r * r) * m["X2"])) < 0 and farkas_holds(
                    *self.point, r, R):
                return r, R
        return None




def _check_bracket(bracket: Any) -> tuple[float, float] | None:
    if bracket is None:
        return None
    try:
        lo, hi = bracket
    except (TypeError, ValueError):
        raise ValueError(f"bracket must be a pair (lo, hi), got {bracket!r}") from None
    return float(check_finite("bracket", lo)), float(check_finite("bracket", hi))


def heavy_ball_lmi_rate(
    mu: float, L: float, alpha: float, beta: float, *, tol: float = 1e-6, rtol: float = 1e-3,
    solver: str | None = None, margin: float = DEFAULT_MARGIN, bracket: tuple | None = None,
    lmi: HeavyBallLMI | None = None, polish: bool = True,
) -> LMICertificate | NoCertificate:
    r"""Smallest :math:`\rho` certified by Prop. 3.4 for heavy ball on :math:`\mathcal S_{\mu,L}`.

    Parameters
    ----------
    mu, L, alpha, beta :
        Problem class and heavy-ball parameters (``0 < mu <= L``, ``alpha > 0``,
        ``0 <= beta < 1``).
    tol, rtol :
        The search stops when its bracket is narrower than ``min(tol, rtol * (1 - rho))``, so
        both :math:`\rho` and the contraction :math:`1-\rho` are accurate (``rtol`` matters
        when :math:`1-\rho` is small, i.e. for ill-conditioned problems).
    solver :
        cvxpy solver name; default: Clarabel directly (then MOSEK if installed, Clarabel
        through cvxpy, SCS).
    margin :
        Required smallest eigenvalue of (22) relative to the size of its terms (in ``[0, 1)``;
        normalised units, :math:`P_{11}+P_{22}+c_0+c=1`). 0 (default) accepts any certificate
        that passes the checks; a positive margin buys robustness and costs a larger
        :math:`\rho` (``rho_lower`` stays a bound on the margin-free minimum). Whatever the
        margin, the returned certificate is verified exactly, or there is none.
    bracket :
        Optional ``(lo, hi)`` guess (e.g. from a neighbouring grid point); it is checked, and
        widened when it does not bracket.
    lmi :
        A :class:`HeavyBallLMI` to reuse (compiled once); created when omitted.
    polish :
        Re-solve once at the final :math:`\rho` for the certificate with the largest :math:`c`
        (half the margin), which keeps :math:`P/c` and the bound (23) small. Off in rate maps.

    Returns
    -------
    LMICertificate or NoCertificate
        A certificate verified in exact arithmetic with a proven bracket
        ``rho_lower <= rho* <= rho`` of the minimal rate, or a :class:`NoCertificate` (never a
        number) when no :math:`\rho<1` is certified.

    Example
    -------
    >>> c = heavy_ball_lmi_rate(0.02, 5.1028, 0.1 / 5.1028, 0.9)  # Kuru et al., Section 5
    >>> c.verified, round(1 - c.rho, 6), c.rho - c.rho_lower < 1e-6
    (True, 0.003902, True)
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    tol = float(check_positive("tol", tol))
    rtol = float(check_positive("rtol", rtol))
    margin = _check_margin(margin)
    bracket = _check_bracket(bracket)
    rho_q = float(heavy_ball_rate(alpha, beta, mu, L))
    if rho_q >= 1.0:
        return NoCertificate(mu, L, alpha, beta, f"heavy ball does not contract on a quadratic "
                             f"(quadratic rate {rho_q:.6g} >= 1)", rho_q, 0)
    lmi = lmi or _shared_lmi(solver)
    s = _Search(lmi, mu, L, alpha, beta, margin)
    g = s.g

    # --- bracket [lo, hi] with g(lo) < 0 <= g(hi)
    lo, hi = rho_q, _TOP
    if bracket is not None:
        blo, bhi = max(bracket[0], rho_q), min(bracket[1], _TOP)
        if blo < bhi:
            if g(bhi) >= 0:
                hi = bhi
                if blo > rho_q and g(blo) < 0:
                    lo = blo
            else:
                lo = bhi
    if hi == _TOP and g(_TOP) < 0:
        why = ("proven infeasible (exact Farkas certificate)"
               if s.farkas_lower(math.inf) is not None else "not certified")
        if margin > 0:
            why += f" with relative margin {margin:g}"
        return NoCertificate(mu, L, alpha, beta, f"LMI (22) {why} at rho = 1 - 1e-9", rho_q,
                             s.solves)
    g_lo = g(lo)
    if g_lo >= 0:  # certified at the quadratic rate itself: the bound is tight
        hi = lo
    else:
        g_hi = g(hi)
        last, width_before, it = 0, hi - lo, 0
        while hi - lo > min(tol, rtol * (1.0 - hi)) and it < 200:
            # Illinois (regula falsi, halving the stale end); bisection if the bracket stalls
            it += 1
            w = hi - lo
            if it % 3 == 0 and w > 0.5 * width_before:
                x = 0.5 * (lo + hi)
            else:
                x = hi - g_hi * w / (g_hi - g_lo)
                x = min(max(x, lo + 0.02 * w), hi - 0.02 * w)
            if it % 3 == 0:
                width_before = w
            gx = g(x)
            if gx >= 0:
                hi, g_hi = x, gx
                if last == 1:
                    g_lo *= 0.5
                last = 1
            else:
                lo, g_lo = x, gx
                if last == -1:
                    g_hi *= 0.5
                last = -1
    # the smallest feasible point whose certificate passes the exact check (nearly always hi)
    for r in sorted(r for r, ok in s.ok.items() if ok and r >= hi)[:3]:
        cert = s.certificate(r, polish)
        if cert is not None:
            break
    else:
        return NoCertificate(mu, L, alpha, beta, "no certificate passed the exact check", rho_q,
                             s.solves)
    P, c0, name, ver = cert
    farkas = s.farkas_lower(r)
    # the exact quadratic bound costs a millisecond: only when it may be the larger one
    q_low = quadratic_rate_lower_bound(mu, L, alpha, beta) if (
        farkas is None or farkas[0] < rho_q * (1 + 1e-6)) else -math.inf
    if farkas is not None and farkas[0] > q_low:
        return LMICertificate(mu, L, alpha, beta, r, P, c0, 1.0, farkas[0], ver, rho_q, name,
                              s.solves, lower_bound="exact Farkas certificate",
                              farkas=farkas[1])
    return LMICertificate(mu, L, alpha, beta, r, P, c0, 1.0, q_low, ver, rho_q, name, s.solves)


def heavy_ball_lmi_certificate_at(
    mu: float, L: float, alpha: float, beta: float, rho: float, *,
    lmi: HeavyBallLMI | None = None, solver: str | None = None, margin: float = DEFAULT_MARGIN,
) -> LMICertificate | NoCertificate:
    r"""A verified certificate of (22) at a *given* :math:`\rho` (not the smallest one).

    Among the certificates with half the maximal margin it takes the one with the largest
    :math:`c` (smallest :math:`P/c`, :math:`c_0/c`), which keeps the bound (23) small. Above the
    minimal rate this trades a slower :math:`\rho` for a better-conditioned :math:`P`.
    ``rho_lower`` is the quadratic rate rounded down (no search is made); ``margin`` is the
    relative margin of :func:`heavy_ball_lmi_rate`. The certificate is verified exactly, or a
    :class:`NoCertificate` is returned.
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    rho = float(check_finite("rho", rho))
    if not 0 < rho < 1:
        raise ValueError(f"rho must lie in (0, 1), got {rho}")
    margin = _check_margin(margin)
    rho_q, q_low = float(heavy_ball_rate(alpha, beta, mu, L)), quadratic_rate_lower_bound(
        mu, L, alpha, beta)
    if rho < q_low:  # quadratics alone rule it out: no solve needed
        return NoCertificate(mu, L, alpha, beta, f"rho = {rho:.6g} is below the quadratic rate "
                             f"{rho_q:.6g}", rho_q, 0)
    lmi = lmi or _shared_lmi(solver)
    s = _Search(lmi, mu, L, alpha, beta, margin)
    cert = s.certificate(rho, polish=True) if s.g(rho) >= 0 else None
    if cert is None:
        return NoCertificate(mu, L, alpha, beta, f"LMI (22) not certified at rho = {rho:.6g}",
                             rho_q, s.solves)
    P, c0, name, ver = cert
    return LMICertificate(mu, L, alpha, beta, rho, P, c0, 1.0, min(q_low, rho), ver, rho_q,
                          name, s.solves)


def naive_heavy_ball_lmi_rate(
    mu: float, L: float, alpha: float, beta: float, *, tol: float = 1e-6,
    solver: str = "CLARABEL",
) -> float | None:
    r"""Baseline for benchmarks: rebuild the cvxpy problem and solve it at every bisection step.

    Plain bisection on :math:`\rho\in(0,1)` of the feasibility problem (22) with :math:`c=1`
    (constants, no parameters, no warm start, absolute margin :math:`10^{-7}`, solver
    defaults, no verification). Returns the rate or ``None``.
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    # below about 1e-15 the bisection cannot split its bracket any further (it never ended)
    tol = float(check_closed_interval("tol", tol, 1e-15, 1.0))
    m = lmi_blocks(mu, L, alpha, beta)
    A, B = m["A"], m["B"]

    def feasible(rho: float) -> bool:
        P = cp.Variable((2, 2), symmetric=True)
        c0 = cp.Variable(nonneg=True)
        Phi = cp.bmat([[A.T @ P @ A - rho**2 * P, A.T @ P @ B], [B.T @ P @ A, B.T @ P @ B]])
        G = c0 * m["X0"] + m["X1"] + (1 - rho**2) * m["X2"] - Phi
        prob = cp.Problem(cp.Minimize(0), [0.5 * (G + G.T) >> _NAIVE_MARGIN * np.eye(3),
                                           P >> 0])
        try:
            prob.solve(solver=solver)
        except cp.error.SolverError:
            return False
        return prob.status == "optimal"

    lo, hi = 0.0, _TOP
    if not feasible(hi):
        return None
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ----------------------------------------------------------------------------- bounds (23)
def _bound_inputs(cert: Any, t: Any, **values: Any) -> tuple[np.ndarray, dict[str, float]]:
    if not isinstance(cert, LMICertificate | NoCertificate):
        raise ValueError(f"cert must be an LMICertificate, got {type(cert).__name__}")
    if not cert.certified:
        raise ValueError("no certificate: bound (23) needs rho < 1")
    t = np.asarray(check_nonnegative("t", t), dtype=float)
    return t, {k: float(check_nonnegative(k, v)) for k, v in values.items()}


def _geometric_terms(rho: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rho^(2t) and (1 - rho^(2t)) / (1 - rho^2), without cancellation for rho near 1."""
    log_r2 = 2.0 * math.log(rho)
    decay = np.exp(t * log_r2)
    return decay, -np.expm1(t * log_r2) / -math.expm1(log_r2)


def _finite(out: np.ndarray, what: str) -> Any:
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{what} overflows float64 at these inputs (initial error or noise "
                         "level too large)")
    return float(out) if out.ndim == 0 else out


def _lyapunov0(cert: LMICertificate, distance_sq: float, f_gap: float) -> float:
    # x_{-1} = x_0: V_P = (P11 + 2 P12 + P22) ||x0 - x*||^2
    return float(np.sum(cert.P)) * distance_sq + cert.c * f_gap


def heavy_ball_lmi_bound_as_printed(
    cert: LMICertificate, t: Any, *, initial_distance_sq: float, initial_gap: float,
    d: int, noise_level: float,
) -> Any:
    r"""(23) as printed (VERBATIM), with :math:`x_{-1}=x_0`.

    .. math:: \rho^{2t}\frac1cV_{P,c}(\xi_0)+\frac{1-\rho^{2t}}{1-\rho^2}\frac{Ld\alpha^2}{2}
              \mathcal E_T\Big(1+\frac{2P_{12}^2}{P_{22}cL+2|P|}\Big)

    ``noise_level`` is :math:`\mathcal E_T` of (20) (already a trace over the ``d`` coordinates, so
    the printed :math:`d` makes the term ``d`` times larger than Lemma B.1 needs).
    """
    from dpbounds._validation import check_int

    t, v = _bound_inputs(cert, t, initial_distance_sq=initial_distance_sq,
                         initial_gap=initial_gap, noise_level=noise_level)
    d = check_int("d", d, minimum=1)
    rho, P, c = cert.rho, cert.P, cert.c
    det = float(np.linalg.det(P))
    den = P[1, 1] * c * cert.L + 2.0 * det
    extra = 0.0 if den == 0 else 2.0 * P[0, 1] ** 2 / den
    decay, geo = _geometric_terms(rho, t)
    v0 = _lyapunov0(cert, v["initial_distance_sq"], v["initial_gap"])
    with np.errstate(over="ignore", invalid="ignore"):
        out = decay * v0 / c + geo * (
            cert.L * d * cert.alpha**2 / 2 * v["noise_level"] * (1 + extra))
    return _finite(out, "bound (23)")


def heavy_ball_lmi_bound(
    cert: LMICertificate, t: Any, *, initial_distance_sq: float, initial_gap: float,
    noise_second_moment: float,
) -> Any:
    r"""Expected suboptimality of DP-SHB from a Prop. 3.4 certificate **[DERIVED]**.

    From (22) and Lemma B.1 (with :math:`x_{-1}=x_0`):
    :math:`\mathbb E V_{P,c}(\xi_{t+1})\le\rho^2\mathbb EV_{P,c}(\xi_t)
    +(\alpha^2P_{11}+cL\alpha^2/2)\mathbb E\lVert w_t\rVert^2`, and
    :math:`c(F-F^\ast)\le V_{P,c}`, so

    .. math:: \mathbb E[F(x_t)]-F^\ast\le\rho^{2t}\frac{V_{P,c}(\xi_0)}c
              +\frac{1-\rho^{2t}}{1-\rho^2}\Big(\frac{\alpha^2P_{11}}c+\frac{L\alpha^2}2\Big)
              \mathbb E\lVert w\rVert^2 .

    ``noise_second_moment`` is :math:`\mathbb E\lVert w_t\rVert^2` (e.g. :math:`\mathcal E_T` of
    (20): :math:`2db^2+\sigma_s^2`). The noise term's :math:`\alpha^2P_{11}/c` (noise entering
    :math:`V_P`) differs from the printed factor of (23); see
    :func:`heavy_ball_lmi_bound_as_printed`.
    """
    t, v = _bound_inputs(cert, t, initial_distance_sq=initial_distance_sq,
                         initial_gap=initial_gap, noise_second_moment=noise_second_moment)
    rho, c = cert.rho, cert.c
    decay, geo = _geometric_terms(rho, t)
    v0 = _lyapunov0(cert, v["initial_distance_sq"], v["initial_gap"])
    coef = cert.alpha**2 * cert.P[0, 0] / c + cert.L * cert.alpha**2 / 2
    with np.errstate(over="ignore", invalid="ignore"):
        out = decay * v0 / c + geo * coef * v["noise_second_moment"]
    return _finite(out, "bound")
