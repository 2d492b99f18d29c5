r"""The LMI certificate of Kuru et al., Prop. 3.4, for DP heavy ball on :math:`\mathcal S_{\mu,L}`.

For a step :math:`\alpha` and momentum :math:`\beta`, a rate :math:`\rho\in(0,1)` is certified when
there are a symmetric :math:`P\succeq0` (2x2) and :math:`c_0,c\ge0` with

.. math:: c_0X_0+c\,[X_1+(1-\rho^2)X_2]\succeq\Phi(A,B,P,\rho)
          =\begin{bmatrix}A^\top PA-\rho^2P&A^\top PB\\B^\top PA&B^\top PB\end{bmatrix}
          \qquad(22)

(:math:`3\times3`; :math:`A=[[1+\beta,-\beta],[1,0]]`, :math:`B=[-\alpha;0]`, :math:`C=[1,0]`).
Then (23) bounds :math:`\mathbb E[F(x_t)-F^\ast]` for every :math:`F\in\mathcal S_{\mu,L}`.

Conventions and facts settled here (**[DERIVED]**, ``kuru_et_al.md`` §3, §11):

* **Sign of** :math:`B`. (18) prints :math:`B=[\alpha;0]`, which turns (17) into gradient *ascent*;
  (16) and (42) need :math:`B=[-\alpha;0]` (the IQC reference code's ``G_hbm``). Only the
  :math:`-\alpha` version is certifiable; :func:`lmi_blocks` accepts ``b_sign=+1`` to show it.
* **Bisection is valid**: feasibility is monotone in :math:`\rho`. If :math:`(P,c_0,c)` is feasible
  at :math:`\rho`, then :math:`(P,c_0+c(\rho'^2-\rho^2)/(2(\mu+L)),c)` is feasible at
  :math:`\rho'>\rho`, because
  :math:`\mathrm{blkdiag}(P,0)-X_2+X_0/(2(\mu+L))=
  \mathrm{blkdiag}(P+\mathrm{diag}(\tfrac{\mu L}{\mu+L}-\tfrac\mu2,0),\tfrac1{\mu+L})\succeq0`
  (since :math:`L\ge\mu`).
* **Lower bound**: quadratics belong to :math:`\mathcal S_{\mu,L}`, so the LMI rate is never below
  :func:`dpbounds.bounds.heavy_ball.heavy_ball_rate`; the bisection starts there.
* **Solving**: (22) is homogeneous in :math:`(P,c_0,c)`. We maximise the margin :math:`t` with
  :math:`G\succeq tI`, :math:`P\succeq0`, :math:`c_0,c\ge0`, :math:`P_{11}+P_{22}+c_0+c=1`; the
  smallest :math:`\rho` with margin :math:`\ge\tau` (default :math:`10^{-7}`) is found by a
  safeguarded secant (Illinois) search. The returned certificate is rescaled to :math:`c=1`.
* **Scaling**: the LMI is invariant under :math:`(\mu,L,\alpha)\to(\mu/L,1,\alpha L)` with
  :math:`(P,c_0,c)\to(P,c_0L^2,cL)` (substitute :math:`g=Lg'`); the solver always works in
  these normalised units, so rates depend on :math:`(\kappa,\alpha L,\beta)` only.
* **Verification** never trusts the solver: :func:`verify_certificate` re-assembles (22) from the
  paper's matrices in float64 with the returned :math:`(\rho,P,c_0,c)` and checks the eigenvalues
  of the LMI and of :math:`P` against an explicit tolerance.

Examples
--------
>>> from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_rate
>>> cert = heavy_ball_lmi_rate(mu=0.5, L=1.0, alpha=0.5, beta=0.3)
>>> cert.certified, cert.verified, 0.6 < cert.rho < 0.75
(True, True, True)
>>> heavy_ball_lmi_rate(mu=0.1, L=1.0, alpha=1.9, beta=0.9).certified
False
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np

from dpbounds._validation import check_nonnegative, check_positive
from dpbounds.bounds.heavy_ball import heavy_ball_rate
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
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

SOURCE_PROP34 = Source(
    KURU, "Proposition 3.4, eqs. (22)-(23)", Provenance.VERBATIM,
    "with B = [-alpha; 0] (eq. (18) prints +alpha, sheet §11.1)",
)
SOURCE_BOUND_DERIVED = Source(
    KURU, "Proposition 3.4 / Lemma B.1, noise term re-derived", Provenance.DERIVED,
    "E V(xi_{t+1}) <= rho^2 E V(xi_t) + (alpha^2 P11 + c L alpha^2/2) E||w||^2",
)

#: The LMI is declared feasible at rho when the normalised margin is at least this.
DEFAULT_MARGIN = 1e-7


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
    return mu, L, alpha, beta


def lmi_blocks(mu: float, L: float, alpha: float, beta: float, *, b_sign: int = -1) -> dict:
    r"""The matrices of Proposition 3.4 in their :math:`3\times3` form (``d = 1``).

    Returns ``A, B, C, X0, X1, X2`` exactly as printed, except :math:`B=[b\_sign\cdot\alpha;0]`
    (default :math:`-\alpha`, see the module docstring; ``b_sign=+1`` is (18) as printed).
    """
    if b_sign not in (-1, 1):
        raise ValueError(f"b_sign must be -1 or +1, got {b_sign!r}")
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


def assemble_lmi(
    mu: float, L: float, alpha: float, beta: float, rho: float, P: Any, c0: float, c: float,
    *, b_sign: int = -1,
) -> np.ndarray:
    r"""The matrix :math:`c_0X_0+c[X_1+(1-\rho^2)X_2]-\Phi(A,B,P,\rho)` of (22), in float64.

    Built directly from the printed blocks (no solver data), for independent verification.
    """
    m = lmi_blocks(mu, L, alpha, beta, b_sign=b_sign)
    A, B = m["A"], m["B"]
    P = np.asarray(P, dtype=float)
    Phi = np.block([[A.T @ P @ A - rho**2 * P, A.T @ P @ B], [B.T @ P @ A, B.T @ P @ B]])
    G = c0 * m["X0"] + c * (m["X1"] + (1.0 - rho**2) * m["X2"]) - Phi
    return 0.5 * (G + G.T)


@dataclass(frozen=True)
class Verification:
    """Result of :func:`verify_certificate` (eigenvalue check, explicit tolerance)."""

    ok: bool
    min_eig_lmi: float
    min_eig_P: float
    tolerance: float

    def __str__(self) -> str:
        return (f"{'verified' if self.ok else 'NOT verified'}: min eig(LMI) = "
                f"{self.min_eig_lmi:.3e}, min eig(P) = {self.min_eig_P:.3e}, tol = "
                f"{self.tolerance:.1e}")


def verify_certificate(
    mu: float, L: float, alpha: float, beta: float, rho: float, P: Any, c0: float, c: float,
    *, rtol: float = 1e-12,
) -> Verification:
    r"""Check a certificate of (22) independently of any solver.

    Assembles the LMI with :func:`assemble_lmi` in float64 and accepts when
    ``min eig(LMI) >= -tol``, ``min eig(P) >= -tol``, :math:`c_0,c\ge0` and :math:`0<\rho<1`,
    with ``tol = rtol * (1 + ||LMI||_F + ||P||_F)`` (float64 round-off of a 3x3 assembly).
    """
    G = assemble_lmi(mu, L, alpha, beta, rho, P, c0, c)
    P = np.asarray(P, dtype=float)
    tol = rtol * (1.0 + np.linalg.norm(G) + np.linalg.norm(P))
    eg = float(np.linalg.eigvalsh(G)[0])
    ep = float(np.linalg.eigvalsh(0.5 * (P + P.T))[0])
    ok = bool(eg >= -tol and ep >= -tol and c0 >= 0 and c >= 0 and 0 < rho < 1)
    return Verification(ok=ok, min_eig_lmi=eg, min_eig_P=ep, tolerance=tol)


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class LMICertificate:
    r"""A verified rate certificate of Proposition 3.4 (normalised to :math:`c=1`).

    Attributes
    ----------
    rho:
        The certified rate (the smallest found, up to ``tol``; feasible side of the search).
    P, c0, c:
        The certificate of (22).
    rho_lower:
        The largest :math:`\rho` found infeasible (or the quadratic rate); the true minimal
        rate lies in ``[rho_lower, rho]``.
    verification:
        Independent float64 eigenvalue check (:func:`verify_certificate`).
    quadratic_rate:
        The closed-form heavy-ball rate on quadratics (a lower bound).
    solves:
        Number of SDP solves used.
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
    certified: bool = field(default=True, init=False)

    @property
    def verified(self) -> bool:
        return self.verification.ok

    def bound(self, t: Any, **kwargs: Any) -> Any:
        """The derived noise bound (see :func:`heavy_ball_lmi_bound`) at iteration(s) ``t``."""
        return heavy_ball_lmi_bound(self, t, **kwargs)

    def __str__(self) -> str:
        return (f"Prop. 3.4 certificate: rho = {self.rho:.6f} (in [{self.rho_lower:.6f}, "
                f"{self.rho:.6f}]; quadratic rate {self.quadratic_rate:.6f}); "
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


_E = (
    np.array([[1.0, 0.0], [0.0, 0.0]]),
    np.array([[0.0, 1.0], [1.0, 0.0]]),
    np.array([[0.0, 0.0], [0.0, 1.0]]),
)


_SQRT2 = math.sqrt(2.0)


def _svec3(M: np.ndarray) -> np.ndarray:
    """Clarabel's PSD-triangle vectorisation (upper triangle by columns, off-diagonals x sqrt 2)."""
    return np.array([M[0, 0], _SQRT2 * M[0, 1], M[1, 1], _SQRT2 * M[0, 2], _SQRT2 * M[1, 2],
                     M[2, 2]])


class _DirectClarabel:
    """The same margin SDP written straight into Clarabel's conic form (no cvxpy per solve).

    Variables ``x = (P11, P12, P22, c0, c, t)``; maximise ``t`` subject to
    ``P11 + P22 + c0 + c = 1``, ``c0, c >= 0``, ``G(x) - t I`` PSD (3x3) and ``P`` PSD (2x2).
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
        self._fixed = (A_eq, A_nn, A_p)
        self._b = np.zeros(12)
        self._b[0] = 1.0
        self._q = np.zeros(6)
        self._q[5] = -1.0
        self._P = sps.csc_matrix((6, 6))
        self._cones = [clarabel.ZeroConeT(1), clarabel.NonnegativeConeT(2),
                       clarabel.PSDTriangleConeT(3), clarabel.PSDTriangleConeT(2)]
        self._settings = clarabel.DefaultSettings()
        self._settings.verbose = False
        self._blocks: dict | None = None

    def set_point(self, blocks: dict) -> None:
        AB = np.hstack([blocks["A"], blocks["B"]])
        self._K = [AB.T @ _E[k] @ AB for k in range(3)]
        self._blocks = blocks

    def margin(self, rho: float) -> tuple[float, dict | None]:
        m, r2 = self._blocks, rho * rho
        cols = []
        for k in range(3):
            E3 = np.zeros((3, 3))
            E3[:2, :2] = _E[k]
            cols.append(-(self._K[k] - r2 * E3))
        cols += [m["X0"], m["X1"] + (1.0 - r2) * m["X2"], -np.eye(3)]
        A_psd = -np.column_stack([_svec3(M) for M in cols])
        A_eq, A_nn, A_p = self._fixed
        A = self._sps.csc_matrix(np.vstack([A_eq, A_nn, A_psd, A_p]))
        solver = self._clarabel.DefaultSolver(self._P, self._q, A, self._b, self._cones,
                                              self._settings)
        sol = solver.solve()
        if str(sol.status) not in ("Solved", "AlmostSolved"):
            return -math.inf, None
        x = np.asarray(sol.x)
        return float(x[5]), {"P": np.array([[x[0], x[1]], [x[1], x[2]]]), "c0": float(x[3]),
                             "c": float(x[4])}


class HeavyBallLMI:
    r"""The margin problem of (22), compiled once with ``cp.Parameter`` (DPP) and re-solved.

    Parameters (cvxpy): the three :math:`3\times3` matrices :math:`[A\,B]^\top E_k[A\,B]`,
    :math:`X_0`, :math:`X_1+(1-\rho^2)X_2` and :math:`\rho^2`. Changing
    :math:`(\mu,L,\alpha,\beta,\rho)` only updates parameter values, so cvxpy compiles the
    problem once per process.

    ``backend="clarabel"`` solves the same SDP written directly in Clarabel's conic form (about
    ten times less overhead per solve than going through cvxpy; used by the rate maps) and
    falls back to the cvxpy problem whenever Clarabel does not report success.
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
        E3 = [np.zeros((3, 3)) for _ in range(3)]
        for k in range(3):
            E3[k][:2, :2] = _E[k]
        Phi = sum(self.p[k] * self.K[k] for k in range(3)) - self.rho2 * sum(
            self.p[k] * E3[k] for k in range(3))
        G = self.c0 * self.X0 + self.c * self.Xc - Phi
        P = cp.bmat([[self.p[0], self.p[1]], [self.p[1], self.p[2]]])
        norm = self.p[0] + self.p[2] + self.c0 + self.c == 1
        self.problem = cp.Problem(cp.Maximize(self.t), [G >> self.t * np.eye(3), P >> 0, norm])
        # polishing: among certificates with margin >= need, the largest c (smallest P/c, c0/c)
        self.polish_problem = cp.Problem(
            cp.Maximize(self.c), [G >> self.need * np.eye(3), P >> 0, norm])
        self.solves = 0
        self._key: tuple | None = None

    def set_point(self, mu: float, L: float, alpha: float, beta: float) -> None:
        key = (mu, L, alpha, beta)
        if key == self._key:
            return
        m = lmi_blocks(mu, L, alpha, beta)
        AB = np.hstack([m["A"], m["B"]])
        for k in range(3):
            self.K[k].value = AB.T @ _E[k] @ AB
        self.X0.value = m["X0"]
        self._blocks = m
        if self._direct is not None:
            self._direct.set_point(m)
        self._key = key

    def _set_rho(self, rho: float) -> None:
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
                with warnings.catch_warnings():  # inaccurate solutions are rejected below
                    warnings.simplefilter("ignore", UserWarning)
                    self.polish_problem.solve(solver=name)
            except cp.error.SolverError:
                continue
            if self.polish_problem.status == "optimal" and self.c.value is not None:
                return self._read()
        return None

    def margin(self, rho: float) -> tuple[float, dict | None, str]:
        """Maximal normalised margin at ``rho`` and the maximiser (``-inf`` if no solver worked)."""
        if self._direct is not None:
            self.solves += 1
            t, sol = self._direct.margin(rho)
            if sol is not None:
                return t, sol, "CLARABEL(direct)"
        self._set_rho(rho)
        for name in self._solvers:
            self.solves += 1
            try:
                self.problem.solve(solver=name, warm_start=True)
            except cp.error.SolverError:
                continue
            ok = self.problem.status in ("optimal", "optimal_inaccurate")
            if ok and self.t.value is not None:
                return float(self.t.value), self._read(), name
        return -math.inf, None, ""


def _finalize(mu, L, alpha, beta, rho, sol, margin):
    r"""Clean a solver certificate and verify it in the original units.

    The solver works in normalised units (:math:`\mu/L`, :math:`1`, :math:`\alpha L`); there
    the certificate is symmetrised, :math:`P` clipped to PSD, :math:`c_0\ge0`, and :math:`c`
    raised to a floor that keeps half the margin. It is then mapped back with
    :math:`c_0=c_0'/L^2`, :math:`c=c'/L` (same :math:`P`), rescaled to :math:`c=1` and verified.
    """
    P = 0.5 * (sol["P"] + sol["P"].T)
    w, V = np.linalg.eigh(P)
    P = (V * np.maximum(w, 0.0)) @ V.T
    c0n = max(sol["c0"], 0.0)
    m = lmi_blocks(mu / L, 1.0, alpha * L, beta)
    # raising c by delta moves the LMI by delta*(X1 + (1-rho^2) X2): keep half the margin
    scale = np.linalg.norm(m["X1"] + (1.0 - rho**2) * m["X2"], 2)
    cn = max(sol["c"], 0.5 * margin / max(scale, 1e-300))
    c0, c = c0n / L**2, cn / L
    ver = verify_certificate(mu, L, alpha, beta, rho, P / c, c0 / c, 1.0)
    return P / c, c0 / c, ver


def heavy_ball_lmi_rate(
    mu: float, L: float, alpha: float, beta: float, *, tol: float = 1e-6,
    solver: str | None = None, margin: float = DEFAULT_MARGIN, bracket: tuple | None = None,
    lmi: HeavyBallLMI | None = None, polish: bool = True,
) -> LMICertificate | NoCertificate:
    r"""Smallest :math:`\rho` certified by Prop. 3.4 for heavy ball on :math:`\mathcal S_{\mu,L}`.

    Parameters
    ----------
    mu, L, alpha, beta :
        Problem class and heavy-ball parameters (``0 < mu <= L``, ``alpha > 0``,
        ``0 <= beta < 1``).
    tol :
        Width of the final bracket ``[rho_lower, rho]``.
    solver :
        cvxpy solver name; default MOSEK if installed, then Clarabel, then SCS.
    margin :
        Required normalised LMI margin for "feasible" (keeps certificates strictly feasible, so
        the float64 verification is not at the mercy of the solver tolerance).
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
        A verified certificate, or a :class:`NoCertificate` (never a number) when no
        :math:`\rho<1` is certified.
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    tol = float(check_positive("tol", tol))
    rho_q = float(heavy_ball_rate(alpha, beta, mu, L))
    if rho_q >= 1.0:
        return NoCertificate(mu, L, alpha, beta, f"heavy ball diverges on a quadratic "
                             f"(quadratic rate {rho_q:.6g} >= 1)", rho_q, 0)
    lmi = lmi or HeavyBallLMI(solver)
    lmi.set_point(mu / L, 1.0, alpha * L, beta)  # solve in normalised units (exact scaling)
    start = lmi.solves
    top = 1.0 - 1e-9
    cache: dict[float, tuple[float, dict | None, str]] = {}

    def g(r: float) -> float:
        if r not in cache:
            cache[r] = lmi.margin(r)
        return cache[r][0] - margin

    # --- bracket [lo, hi] with g(lo) < 0 <= g(hi)
    lo, hi = rho_q, top
    if bracket is not None:
        blo, bhi = max(bracket[0], rho_q), min(bracket[1], top)
        if blo < bhi:
            if g(bhi) >= 0:
                hi = bhi
                if blo > rho_q and g(blo) < 0:
                    lo = blo
            else:
                lo = bhi
    if hi == top and g(top) < 0:
        return NoCertificate(mu, L, alpha, beta, "LMI (22) infeasible at rho = 1 - 1e-9",
                             rho_q, lmi.solves - start)
    g_lo = g(lo)
    if g_lo >= 0:  # certified at the quadratic rate itself: the bound is tight
        hi = lo
    else:
        g_hi = g(hi)
        last, width_before, it = 0, hi - lo, 0
        while hi - lo > tol:
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
    t_hi, sol, name = cache[hi] if hi in cache else lmi.margin(hi)
    if polish:
        better = lmi.polish(hi, 0.5 * t_hi)
        if better is not None:
            sol, t_hi = better, 0.5 * t_hi
    P, c0, ver = _finalize(mu, L, alpha, beta, hi, sol, t_hi)
    if not ver.ok and polish:  # the polished point failed: fall back to the margin maximiser
        t_hi, sol, name = cache[hi] if hi in cache else lmi.margin(hi)
        P, c0, ver = _finalize(mu, L, alpha, beta, hi, sol, t_hi)
    return LMICertificate(mu, L, alpha, beta, hi, P, c0, 1.0, lo, ver, rho_q, name,
                          lmi.solves - start)


def heavy_ball_lmi_certificate_at(
    mu: float, L: float, alpha: float, beta: float, rho: float, *,
    lmi: HeavyBallLMI | None = None, solver: str | None = None,
) -> LMICertificate | NoCertificate:
    r"""A verified certificate of (22) at a *given* :math:`\rho` (not the smallest one).

    Among the certificates with half the maximal margin it takes the one with the largest
    :math:`c` (smallest :math:`P/c`, :math:`c_0/c`), which keeps the bound (23) small. Above the
    minimal rate this trades a slower :math:`\rho` for a better-conditioned :math:`P`.
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    if not 0 < rho < 1:
        raise ValueError(f"rho must lie in (0, 1), got {rho}")
    rho_q = float(heavy_ball_rate(alpha, beta, mu, L))
    lmi = lmi or HeavyBallLMI(solver)
    lmi.set_point(mu / L, 1.0, alpha * L, beta)  # solve in normalised units (exact scaling)
    start = lmi.solves
    t, sol, name = lmi.margin(rho)
    if sol is None or t < DEFAULT_MARGIN:
        return NoCertificate(mu, L, alpha, beta, f"LMI (22) infeasible at rho = {rho:.6g}",
                             rho_q, lmi.solves - start)
    better = lmi.polish(rho, 0.5 * t)
    if better is not None:
        P, c0, ver = _finalize(mu, L, alpha, beta, rho, better, 0.5 * t)
    if better is None or not ver.ok:
        P, c0, ver = _finalize(mu, L, alpha, beta, rho, sol, t)
    return LMICertificate(mu, L, alpha, beta, rho, P, c0, 1.0, rho_q, ver, rho_q, name,
                          lmi.solves - start)


def naive_heavy_ball_lmi_rate(
    mu: float, L: float, alpha: float, beta: float, *, tol: float = 1e-6,
    solver: str = "CLARABEL",
) -> float | None:
    r"""Baseline for benchmarks: rebuild the cvxpy problem and solve it at every bisection step.

    Plain bisection on :math:`\rho\in(0,1)` of the feasibility problem (22) with :math:`c=1`
    (constants, no parameters, no warm start). Returns the certified rate or ``None``.
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    m = lmi_blocks(mu, L, alpha, beta)
    A, B = m["A"], m["B"]

    def feasible(rho: float) -> bool:
        P = cp.Variable((2, 2), symmetric=True)
        c0 = cp.Variable(nonneg=True)
        Phi = cp.bmat([[A.T @ P @ A - rho**2 * P, A.T @ P @ B], [B.T @ P @ A, B.T @ P @ B]])
        G = c0 * m["X0"] + m["X1"] + (1 - rho**2) * m["X2"] - Phi
        prob = cp.Problem(cp.Minimize(0), [0.5 * (G + G.T) >> DEFAULT_MARGIN * np.eye(3), P >> 0])
        try:
            prob.solve(solver=solver)
        except cp.error.SolverError:
            return False
        return prob.status == "optimal"

    lo, hi = 0.0, 1.0 - 1e-9
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
    if not cert.certified:
        raise ValueError("no certificate: bound (23) needs rho < 1")
    rho, P, c = cert.rho, cert.P, cert.c
    det = float(np.linalg.det(P))
    den = P[1, 1] * c * cert.L + 2.0 * det
    extra = 0.0 if den == 0 else 2.0 * P[0, 1] ** 2 / den
    t = np.asarray(t, dtype=float)
    v0 = _lyapunov0(cert, initial_distance_sq, initial_gap)
    out = rho ** (2 * t) * v0 / c + (1 - rho ** (2 * t)) / (1 - rho**2) * (
        cert.L * d * cert.alpha**2 / 2 * noise_level * (1 + extra))
    return float(out) if out.ndim == 0 else out


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
    if not cert.certified:
        raise ValueError("no certificate: the bound needs rho < 1")
    rho, c = cert.rho, cert.c
    t = np.asarray(t, dtype=float)
    v0 = _lyapunov0(cert, initial_distance_sq, initial_gap)
    coef = cert.alpha**2 * cert.P[0, 0] / c + cert.L * cert.alpha**2 / 2
    out = rho ** (2 * t) * v0 / c + (1 - rho ** (2 * t)) / (1 - rho**2) * coef * noise_second_moment
    return float(out) if out.ndim == 0 else out
