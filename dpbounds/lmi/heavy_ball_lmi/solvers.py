r"""The margin SDP of (22) (Kuru et al., Prop. 3.4) at one :math:`\rho`, and its two back-ends.

**Solving** (**[DERIVED]**, ``kuru_et_al.md`` §3, §11): (22) is homogeneous in
:math:`(P,c_0,c)`. We maximise the margin :math:`t` with :math:`G\succeq tI`, :math:`P\succeq0`,
:math:`c_0,c\ge0`, :math:`P_{11}+P_{22}+c_0+c=1` (Clarabel at tolerance :math:`10^{-11}`).
:class:`HeavyBallLMI` compiles the problem once, either with cvxpy parameters (any installed
solver) or written straight into Clarabel's conic form (``_DirectClarabel``, no cvxpy per
solve); each probe also returns the dual matrix of the LMI (a Farkas candidate).

**Scaling**: the LMI is invariant under :math:`(\mu,L,\alpha)\to(\mu/L,1,\alpha L)` with
:math:`(P,c_0,c)\to(P,c_0L^2,cL)` (substitute :math:`g=Lg'`); the solver always works in these
normalised units, so rates depend on :math:`(\kappa,\alpha L,\beta)` only.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from typing import NamedTuple

import numpy as np

from dpbounds.lmi.heavy_ball_lmi.formulation import _blocks

# cvxpy (~1 CPU-s to import) is imported where a problem is built or solved, not here: the
# modules that import this one (rate search, certificates, the heavy-ball tuner) are imported
# by callers and by test collection that never solve an SDP.

__all__ = [
    "DEFAULT_MARGIN",
    "HeavyBallLMI",
]


#: Default required margin of (22), relative to the size of its terms. 0 accepts every
#: certificate that passes the checks; an absolute margin (the former 1e-7) left the certified
#: rho up to 4.5e-5 above the minimum at Kuru et al.'s Section-5 conditioning.
DEFAULT_MARGIN = 0.0


#: Clarabel accuracy of the margin SDP. Near the minimal rate the margin t is ~ slope * distance
#: with slopes ~1e-3 at kappa ~ 250, so the default 1e-8 would leave rho ~1e-5 too high.
_CLARABEL_OPTIONS = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11,
                     "tol_ktratio": 1e-8, "max_iter": 400}


# ----------------------------------------------------------------------------- solver
@functools.cache
def _installed_solvers() -> frozenset[str]:
    """cvxpy's installed solvers, asked once per process: ``cp.installed_solvers()`` tries to
    import every solver cvxpy knows each time (~50 ms here), which was half the CPU of an LMI
    tuner that builds a fresh :class:`HeavyBallLMI` per point. Installing a solver into a
    running process is not supported (restart it)."""
    import cvxpy as cp

    return frozenset(cp.installed_solvers())


def _solver_order(solver: str | None) -> list[str]:
    if solver is not None:
        return [solver]
    installed = _installed_solvers()
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


def transform_blocks(m: dict, W: np.ndarray) -> dict:
    r"""The blocks of (22) in the coordinates :math:`(\xi,g)=W(\zeta,g')`.

    :math:`W=\mathrm{diag}(T,s)` (a 2x2 block and a scalar).

    (22) is a congruence-invariant statement: with :math:`\tilde A=T^{-1}AT`,
    :math:`\tilde B=sT^{-1}B`, :math:`\tilde X_i=W^\top X_iW` and :math:`\tilde P=T^\top PT`, the
    matrix of (22) becomes :math:`W^\top GW`, positive semidefinite exactly when :math:`G` is.
    Only what the solver sees changes: its margin :math:`tI` and normalisation.
    """
    T, s = W[:2, :2], W[2, 2]
    Ti = np.linalg.inv(T)
    out = {"A": Ti @ m["A"] @ T, "B": s * (Ti @ m["B"]), "C": m["C"] @ T}
    out.update({k: W.T @ m[k] @ W for k in ("X0", "X1", "X2")})
    return out


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
        # explicit zeros included); each solve only rewrites the values of that block, in
        # place: Clarabel copies the matrix when it is given, so one matrix per form serves
        # every solve (a copy per solve was a fifth of a solve's cost)
        ids = np.arange(36, dtype=float).reshape(6, 6) + 10.0
        rest = np.vstack([A_nn, ids, A_p])
        # the margin problem (normalisation row first) and the polish (its two equality rows:
        # the normalisation and t = need)
        self._eq_polish = np.array([[1.0, 0.0, 1.0, 1.0, 1.0, 0.0],
                                    [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
        self._forms = {}
        for form, head in (("probe", A_eq), ("polish", self._eq_polish)):
            A = sps.csc_matrix(np.vstack([head, rest]))
            slots = np.flatnonzero(A.data >= 10.0)
            self._forms[form] = (A, slots, (A.data[slots] - 10.0).astype(int))
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
        self._A01 = (A0.ravel(), A1.ravel())

    def _solve(self, rho: float, q: np.ndarray, form: str = "probe",
               b_eq: np.ndarray | None = None) -> object | None:
        """Solve with objective ``q``; ``form="polish"`` replaces the normalisation row by
        the polish's two equality rows, with right-hand side ``b_eq``."""
        A0, A1 = self._A01
        A, slots, order = self._forms[form]
        A.data[slots] = (A0 + (rho * rho) * A1)[order]
        b, cones = self._b, self._cones
        if form == "polish":
            assert b_eq is not None
            b = np.concatenate([b_eq, b[1:]])
            cones = [self._clarabel.ZeroConeT(2)] + cones[1:]
        solver = self._clarabel.DefaultSolver(self._P, q, A, b, cones, self._settings)
        sol = solver.solve()
        return sol if str(sol.status) in ("Solved", "AlmostSolved") else None

    @staticmethod
    def _primal(sol: object) -> dict:
        x = np.asarray(sol.x)  # type: ignore[attr-defined]
        return {"P": np.array([[x[0], x[1]], [x[1], x[2]]]), "c0": float(x[3]),
                "c": float(x[4])}

    def polish(self, rho: float, need: float) -> dict | None:
        """Largest ``c`` with margin ``t = need`` (the cvxpy ``polish_problem``, directly)."""
        q = np.zeros(6)
        q[4] = -1.0
        sol = self._solve(rho, q, "polish", np.array([1.0, need]))
        return None if sol is None else self._primal(sol)

    def probe(self, rho: float) -> Probe:
        sol = self._solve(rho, self._q)
        if sol is None:
            return Probe(-math.inf, None, None, "")
        x = np.asarray(sol.x)  # type: ignore[attr-defined]
        return Probe(float(x[5]), self._primal(sol),
                     _smat3(np.asarray(sol.z)[3:9]),  # type: ignore[attr-defined]
                     "CLARABEL(direct)")


def _default_backend(solver: str | None) -> str:
    return "clarabel" if solver is None and "CLARABEL" in _installed_solvers() else "cvxpy"


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
        self.solves = 0
        self._key: tuple | None = None
        self._params_key: tuple | None = None
        self._built = False  # the cvxpy problems, built on first use (the clarabel backend
        # needs them only when Clarabel fails: building them was most of a fresh solver's cost)

    def _build(self) -> None:
        import cvxpy as cp

        self._solver_error = cp.error.SolverError  # what a failed solve raises
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
        self._built = True

    def set_point(self, mu: float, L: float, alpha: float, beta: float,
                  coords: np.ndarray | None = None) -> None:
        r"""Set the (normalised) problem; the solver works with whatever units it is given.

        ``coords`` (3x3, ``blkdiag(T, s)``) solves (22) in the coordinates
        :math:`\xi=T\zeta`, :math:`g=sg'` (see :func:`transform_blocks`): the solver's ``P`` is
        then :math:`T^\top PT` and its dual matrix :math:`W^{-1}ZW^{-\top}`.
        """
        if coords is not None:
            coords = np.asarray(coords, dtype=float)
            if (coords.shape != (3, 3) or not np.all(np.isfinite(coords))
                    or np.any(coords[:2, 2] != 0) or np.any(coords[2, :2] != 0)
                    or coords[2, 2] == 0 or abs(np.linalg.det(coords[:2, :2])) == 0):
                raise ValueError("coords must be a finite, invertible 3x3 matrix "
                                 "blkdiag(T, s) (T 2x2, s a nonzero scalar)")
        key = (mu, L, alpha, beta, None if coords is None else coords.tobytes())
        if key == self._key:
            return
        m = _blocks(mu, L, alpha, beta)
        if coords is not None:
            m = transform_blocks(m, coords)
        self._blocks = m
        self._AB = np.hstack([m["A"], m["B"]])
        if self._direct is not None:
            self._direct.set_point(m)
        self._key = key
        self._params_key = None  # cvxpy parameters are set on first use

    def _set_params(self) -> None:
        if not self._built:
            self._build()
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
        p, c0, c = self.p.value, self.c0.value, self.c.value
        if p is None or c0 is None or c is None:  # read only after a solve that succeeded
            raise RuntimeError("the LMI solver returned no solution to read")
        return {"P": np.array([[p[0], p[1]], [p[1], p[2]]]), "c0": float(c0), "c": float(c)}

    def polish(self, rho: float, need: float) -> dict | None:
        """The certificate with the largest c among those with margin >= ``need`` at ``rho``."""
        if self._direct is not None:
            self.solves += 1
            res = self._direct.polish(rho, need)
            if res is not None:
                return res
        self._set_rho(rho)
        self.need.value = need
        for name in self._solvers:
            self.solves += 1
            try:
                with warnings.catch_warnings():  # inaccurate solutions are rejected later
                    warnings.simplefilter("ignore", UserWarning)
                    self.polish_problem.solve(solver=name, **_solver_options(name))
            except self._solver_error:
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
            except self._solver_error:
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
