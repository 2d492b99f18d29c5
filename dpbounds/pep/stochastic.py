r"""The noise-aware PEP as an SDP over the expected Gram matrix, solved with cvxpy.

**Noise model** (**[DERIVED]**, after Taylor & Bach 2019). :math:`F\in\mathcal S_{\mu,L}` is fixed
(independent of the noise), :math:`x_0` is deterministic, and the oracle returns
:math:`g_t=\nabla F(y_t)+\xi_t` with :math:`\mathbb E[\xi_t\mid\text{past}]=0` and
:math:`\mathbb E\lVert\xi_t\rVert^2\le s_t^2` (a trace: :math:`s_t^2` is the whole second moment,
e.g. :math:`\mathcal E_T` of Kuru et al. (20)). "Past" is everything fixed before :math:`\xi_t` is
drawn: :math:`x_0`, the noises :math:`\xi_s` (:math:`s<t`) and the gradients at
:math:`y_0,\dots,y_t`; gradients at later points depend on :math:`\xi_t` and are left free.
Only :math:`\mathbb E\langle\xi_t,v\rangle=0` for past :math:`v` is used (weaker than a
martingale difference), so the bound covers that larger model too. The variance is an
inequality, as (20) is: a bound then covers every smaller noise, the value is non-decreasing in
each :math:`s_t` (larger :math:`s_t`, larger feasible set) and the dual multipliers
:math:`\lambda_t` are non-negative. (With an equality the value could only be smaller, and
:math:`\lambda_t` could take either sign.) Where :math:`s_t=0` the dual does not pin
:math:`\lambda_t`: the returned one is valid but need not be the smallest.

**The SDP.** Let :math:`G=\mathbb E[P^\top P]` for :math:`P=[x_0-x^\ast,\nabla F(\text{points}),
\xi_0,\dots,\xi_{T-1}]` and :math:`f_k=\mathbb E F(\text{point }k)-F^\ast`. Every run gives a
feasible :math:`(G,f)`: :math:`G\succeq0`; each interpolation inequality holds pointwise and is
linear in the Gram matrix and the function values, so it holds for the expectations; the
orthogonality gives :math:`G_{\xi_t,v}=\mathbb E\langle\xi_t,v\rangle=0`; the variance gives
:math:`G_{\xi_t\xi_t}\le s_t^2`; the start gives :math:`f_0\le E_0` (or
:math:`G_{00}\le\lVert x_0-x^\ast\rVert^2`). So the SDP maximum of
:math:`f_{x_T}` (or :math:`\mathbb E\lVert x_T-x^\ast\rVert^2`) is a **valid upper bound** on the
worst case, over every dimension :math:`d` (:math:`G` may have any rank). It is a relaxation: the
expectation of Gram matrices need not be realised by one function's random run. How tight it is
is read from lower bounds: the exact worst case over quadratics (tests/pep: ratio 0.55 to 1.00 on
20 random problems, 1.00 on 6 of them; the loose ones mix a distance start with a function-value
objective, where the deterministic worst case is not quadratic either).

**The dual** gives multipliers with :math:`\text{worst}\le\lambda_0E_0+\sum_t\lambda_ts_t^2` for
**every** :math:`(E_0,s)` (dual feasibility does not involve them); see
:mod:`dpbounds.pep.certificate`, which checks it in exact rational arithmetic.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds._validation import (
    check_choice,
    check_flag,
    check_int,
    check_nonnegative,
    check_positive,
)
from dpbounds.pep.certificate import (
    PEPCertificate,
    banded_certificate_from_duals,
    certificate_from_duals,
)
from dpbounds.pep.formulation import (
    _OPTIONS,
    OBJECTIVES,
    PAIR_SETS,
    SOURCE_INTERPOLATION,
    SOURCE_STOCHASTIC_PEP,
    FixedStepMethod,
    check_class,
    check_horizon,
    check_method,
    check_scales,
    layout,
    pair_form,
)
from dpbounds.provenance import Source

__all__ = ["PEPResult", "pep_worst_case"]

#: Relative margins tried, in turn, for the certificate's SDP (objective + eps tr G with
#: eps = margin * value / tr G*: the bound costs about ``margin`` relative); a larger one is
#: tried when rounding the float dual to rationals breaks positive semidefiniteness.
MARGINS = (1e-7, 1e-5, 1e-3)

#: Largest dense interpolation-constraint matrix built (GB): 8 bytes x pairs x n^2, n = 2T + 2
#: (+1): all pairs reach it near T = 88 (T = 100 needs 3.4 GB), consecutive pairs near T = 250.
MAX_CONSTRAINT_GB = 2.0

@dataclass(frozen=True)
class PEPResult:
    """The worst case found by :func:`pep_worst_case`.

    Attributes
    ----------
    value:
        The SDP optimum (float solver): the worst case of the objective, an upper bound on the
        worst case over :math:`\\mathcal S_{\\mu,L}` under the noise model.
    certified_value:
        :math:`\\lambda_0E_0+\\sum_t\\lambda_ts_t^2` of the exactly verified certificate, rounded
        up (``None`` without a certificate): a proven upper bound, ``>= value`` up to solver
        accuracy.
    certificate:
        The verified dual certificate, or ``None`` (``certify=False`` or every margin failed).
    gram:
        The primal expected Gram matrix (basis: x_0 - x*, gradients at the points, noises;
        ``pairs="banded"``: the interleaved iterates and gradients x_0, g_0, x_1, .., with the
        entries outside the band, which the relaxation leaves free, as NaN).
    function_values:
        Expected F - F* at the points (y_0..y_{T-1}, then x_T for the function-value objective).
    pairs:
        The interpolation pairs imposed (``"all"``: the PEP; ``"consecutive"``: a relaxation).
    cpu_seconds:
        ``time.process_time`` of the primal solve, and of the certificate (solve and check).
    """

    method: FixedStepMethod
    mu: float
    L: float
    T: int
    objective: str
    initial: str
    initial_value: float
    noise_variances: tuple[float, ...]
    noise_orthogonal: bool
    pairs: str
    value: float
    certified_value: float | None
    certificate: PEPCertificate | None
    gram: np.ndarray
    function_values: np.ndarray
    solver: str
    cpu_seconds: dict[str, float]
    sources: tuple[Source, ...] = field(default=(SOURCE_STOCHASTIC_PEP, SOURCE_INTERPOLATION))

    def __str__(self) -> str:
        cert = ("no certificate" if self.certified_value is None
                else f"certified <= {self.certified_value:.6g}")
        return (f"PEP worst case of {self.method.name} (alpha={self.method.alpha:.4g}, beta="
                f"{self.method.beta:.4g}, gamma={self.method.gamma:.4g}), T={self.T}, "
                f"{self.objective}: {self.value:.6g} ({cert}"
                + (", banded relaxation: an upper bound, not exact)" if self.pairs == "banded"
                   else ")"))


def _noise(noise_variances: Any, T: int) -> tuple[float, ...]:
    if noise_variances is None:
        return (0.0,) * T
    s = np.asarray(check_nonnegative("noise_variances", noise_variances), dtype=float)
    if s.ndim == 0:
        return (float(s),) * T
    if s.shape != (T,):
        raise ValueError(f"noise_variances must be a number or a sequence of T = {T} variances "
                         f"s_t^2 >= 0, got {s.shape[0] if s.ndim == 1 else s.shape} entries")
    return tuple(float(v) for v in s)


def _initial(initial_gap: Any, initial_distance_sq: Any) -> tuple[str, float]:
    if (initial_gap is None) == (initial_distance_sq is None):
        raise ValueError("give exactly one of initial_gap (F(x0) - F* <= E0, > 0) and "
                         "initial_distance_sq (||x0 - x*||^2 <= R^2, > 0)")
    if initial_gap is not None:
        return "gap", float(check_positive("initial_gap", initial_gap))
    return "distance", float(check_positive("initial_distance_sq", initial_distance_sq))


class _SDP:
    """The cvxpy problem in normalised units (start value 1), eps a parameter (margin)."""

    def __init__(self, method: FixedStepMethod, mu: float, L: float, T: int, objective: str,
                 initial: str, noise: tuple[float, ...], orthogonal: bool,
                 pair_set: str = "all") -> None:
        import cvxpy as cp

        lay = layout(method, T, objective)
        self.lay, n, N = lay, lay.n, lay.num_points
        self.pairs = lay.pairs(pair_set)
        gigabytes = 8 * len(self.pairs) * n * n / 1e9
        if gigabytes > MAX_CONSTRAINT_GB:
            raise ValueError(
                f"T = {T} is too large for pairs={pair_set!r}: the interpolation constraints "
                f"would take {gigabytes:.1f} GB (limit {MAX_CONSTRAINT_GB} GB); use a smaller T"
                + (" or pairs='consecutive'" if pair_set == "all" else ""))
        c = 2.0 * (L - mu)
        A = np.empty((len(self.pairs), n * n))
        B = np.zeros((len(self.pairs), N))
        for r, (i, j) in enumerate(self.pairs):
            Q, fc = pair_form(lay, i, j, mu, L)
            A[r] = Q.ravel() / c
            for k, s in fc.items():
                B[r, k] = s
        self.G = cp.Variable((n, n), symmetric=True)
        self.f = cp.Variable(N)
        self.eps = cp.Parameter(nonneg=True, value=0.0)
        vecG = cp.vec(self.G, order="F")
        noise_idx = [lay.noise(t) for t in range(T)]
        self.c_int = A @ vecG + B @ self.f <= 0
        self.c_init = (self.f[0] <= 1.0) if initial == "gap" else (self.G[0, 0] <= 1.0)
        self.c_noise = cp.diag(self.G)[noise_idx] <= np.asarray(noise)
        self.c_psd = self.G >> 0
        cons = [self.c_int, self.c_init, self.c_noise, self.c_psd]
        self.orth = lay.orthogonal() if orthogonal else []
        if self.orth:
            sel = np.array([a + b * n for a, b in self.orth])
            cons.append(vecG[sel] == 0)
        if objective == "function_value":
            self.obj = self.f[N - 1]
        else:
            xT = lay.x_final
            self.obj = cp.sum(cp.multiply(np.outer(xT, xT), self.G))
        self.problem = cp.Problem(cp.Maximize(self.obj + self.eps * cp.trace(self.G)), cons)

    def solve(self, solver: str | None) -> str:
        import cvxpy as cp

        tries = [solver] if solver else ["CLARABEL", "SCS"]
        last: Exception | None = None
        for name in tries:
            try:
                with warnings.catch_warnings():  # "optimal_inaccurate" is judged below
                    warnings.simplefilter("ignore", UserWarning)
                    self.problem.solve(solver=name, **_OPTIONS.get(name, {}))
            except cp.error.SolverError as err:
                last = err
                continue
            if self.problem.status in ("optimal", "optimal_inaccurate"):
                return name
            last = RuntimeError(f"{name}: status {self.problem.status}")
        raise RuntimeError(f"the PEP SDP was not solved: {last}")


def pep_worst_case(
    method: FixedStepMethod, mu: float, L: float, T: int, *,
    initial_gap: float | None = None, initial_distance_sq: float | None = None,
    noise_variances: Any = None, objective: str = "function_value",
    noise_orthogonal: bool = True, pairs: str = "all", certify: bool = True,
    solver: str | None = None, window: int = 2,
    progress: Callable[[str], None] | None = None,
) -> PEPResult:
    r"""Worst case of :math:`\mathbb E[F(x_T)]-F^\ast` (or of
    :math:`\mathbb E\lVert x_T-x^\ast\rVert^2`) over :math:`\mathcal S_{\mu,L}` for a noisy
    fixed-step method **[DERIVED]**.

    The SDP of the module docstring (an upper bound on the worst case; with zero noise it is the
    exact worst case of Taylor, Hendrickx & Glineur's PEP, as PEPit computes it).

    Parameters
    ----------
    method:
        The method (:class:`FixedStepMethod`: gradient descent, heavy ball, Nesterov or any
        :math:`(\alpha,\beta,\gamma)`); :math:`x_{-1}=x_0`.
    mu:
        Strong convexity, ``0 < mu < L``.
    L:
        Smoothness, > 0.
    T:
        Number of steps, 1..10000 (cost grows fast: see the package docstring).
    initial_gap:
        :math:`E_0`: admissible starts have :math:`F(x_0)-F^\ast\le E_0` (> 0). Exactly one of
        ``initial_gap`` and ``initial_distance_sq`` is given.
    initial_distance_sq:
        :math:`R^2`: admissible starts have :math:`\lVert x_0-x^\ast\rVert^2\le R^2` (> 0).
    noise_variances:
        :math:`s_t^2\ge0`, :math:`t=0..T-1` (a number: the same each step; ``None``: no noise):
        :math:`\mathbb E\lVert\xi_t\rVert^2\le s_t^2`.
    objective:
        ``"function_value"`` (:math:`\mathbb E F(x_T)-F^\ast`) or ``"distance"``.
    noise_orthogonal:
        Impose :math:`\mathbb E\langle\xi_t,v\rangle=0` for the past :math:`v` (the model).
        ``False`` drops it: the noise may then correlate with the past, a mean-square inexact
        oracle (larger worst case; used as a control in the tests).
    pairs:
        ``"all"`` (every pair of points: the PEP), ``"consecutive"`` (the pairs with the
        minimiser and of neighbouring iterates only: a relaxation, so still a valid upper bound,
        with O(T) instead of O(T^2) inequalities) or ``"banded"`` (the relaxation of
        :mod:`dpbounds.pep.banded`: pairs and noise orthogonality within ``window`` steps, in
        the iterate basis as a chain of small SDP cones; a valid upper bound, not exact; T up to
        ``MAX_BANDED_STEPS``; about 2 CPU-s at T = 100).
    certify:
        Build and exactly verify the dual certificate (a second SDP solve, with a margin).
    solver:
        A cvxpy solver name; default Clarabel, then SCS if Clarabel fails (``"banded"``:
        Clarabel's own API, this argument is not used).
    window:
        The window :math:`w\ge1` of ``pairs="banded"`` (larger: tighter and slower; with
        :math:`w\ge T` nothing is dropped and the value is the full PEP's).
    progress:
        Called with a label after each SDP solve: the worst case, then each certificate
        attempt (at most :data:`MARGINS` of them; ``1 + len(MARGINS)`` calls at most). At
        ``T = 20`` a solve may take a minute where the worst case is near the solver's
        tolerance (``rate hb`` shows a bar with it).

    Returns
    -------
    PEPResult
        ``value``, the certified bound and certificate, the primal Gram solution, CPU times.

    Examples
    --------
    >>> m = FixedStepMethod.gradient_descent(1.0)
    >>> r = pep_worst_case(m, 0.5, 1.0, 1, initial_distance_sq=1.0, noise_variances=0.25,
    ...                    objective="distance")
    >>> round(r.value, 6), r.certificate is not None   # max|1 - alpha lambda|^2 + alpha^2 s^2
    (0.5, True)
    """
    method = check_method(method)
    mu, L = check_class(mu, L)
    T = check_horizon(T)
    objective = check_choice("objective", objective, OBJECTIVES)
    kind, start = _initial(initial_gap, initial_distance_sq)
    noise = _noise(noise_variances, T)
    orthogonal = check_flag("noise_orthogonal", noise_orthogonal)
    pair_set = check_choice("pairs", pairs, PAIR_SETS)
    certify = check_flag("certify", certify)
    if progress is not None and not callable(progress):  # it would fail after a long solve
        raise ValueError(f"progress must be a function progress(label) or None, got "
                         f"{progress!r}")
    check_scales(mu, L, method.alpha, start, noise)
    if pair_set == "banded":
        if not orthogonal:
            raise ValueError("noise_orthogonal must be True with pairs='banded' (the banded "
                             "relaxation is built on the orthogonality)")
        return _banded(method, mu, L, T, objective, kind, start, noise, certify,
                       check_int("window", window, minimum=1), progress)
    tick = progress or (lambda label: None)

    t0 = time.process_time()
    sdp = _SDP(method, mu, L, T, objective, kind, tuple(s / start for s in noise), orthogonal,
               pair_set)
    used = sdp.solve(solver)
    value = float(np.asarray(sdp.obj.value)) * start
    G = np.asarray(sdp.G.value, dtype=float)
    f = np.asarray(sdp.f.value, dtype=float)
    cpu = {"solve": time.process_time() - t0}
    tick("worst case")

    cert = None
    if certify:
        t1 = time.process_time()
        trace = max(float(np.trace(G)), 1e-300)
        for margin in MARGINS:
            sdp.eps.value = margin * max(value / start, 1e-12) / trace
            try:
                sdp.solve(solver)
            except RuntimeError:
                tick(f"certificate, margin {margin:g}")
                continue
            tick(f"certificate, margin {margin:g}")
            cert = certificate_from_duals(
                method, mu, L, T, objective, kind, orthogonal, sdp.pairs, sdp.orth,
                rho=np.asarray(sdp.c_int.dual_value, dtype=float).ravel(),
                lambda_initial=float(np.asarray(sdp.c_init.dual_value).ravel()[0]),
                lambda_noise=np.asarray(sdp.c_noise.dual_value, dtype=float).ravel(),
                psd_dual=np.asarray(sdp.c_psd.dual_value, dtype=float), margin=margin)
            if cert is not None:
                break
        cpu["certificate"] = time.process_time() - t1
    certified = None if cert is None else cert.bound(start, noise)
    return PEPResult(method, mu, L, T, objective, kind, start, noise, orthogonal, pair_set, value,
                     certified, cert, G * start, f * start, used, cpu)



def _banded(method: FixedStepMethod, mu: float, L: float, T: int, objective: str, kind: str,
            start: float, noise: tuple[float, ...], certify: bool, window: int,
            progress: Callable[[str], None] | None = None) -> PEPResult:
    """``pep_worst_case`` with ``pairs="banded"`` (see :mod:`dpbounds.pep.banded`)."""
    from dpbounds.pep.banded import MAX_BANDED_STEPS, solve_banded

    tick = progress or (lambda label: None)

    if T > MAX_BANDED_STEPS:
        raise ValueError(f"T must be <= {MAX_BANDED_STEPS} for pairs='banded', got {T}")
    t0 = time.process_time()
    scaled = tuple(s / start for s in noise)
    sol = solve_banded(method, mu, L, T, objective, kind, scaled, window)
    value = sol.value * start
    cpu = {"solve": time.process_time() - t0}
    tick("worst case")
    cert = None
    if certify:
        t1 = time.process_time()
        trace = max(sum(v for (i, j), v in sol.band.items() if i == j), 1e-300)
        for margin in MARGINS:
            eps = margin * max(sol.value, 1e-12) / trace
            try:
                dual = solve_banded(method, mu, L, T, objective, kind, scaled, window, eps)
            except RuntimeError:
                tick(f"certificate, margin {margin:g}")
                continue
            tick(f"certificate, margin {margin:g}")
            cert = banded_certificate_from_duals(
                method, mu, L, T, objective, kind, window, rho=dual.rho,
                lambda_initial=dual.lambda_initial, lambda_noise_zeta=dual.lambda_noise_zeta,
                nu=dual.nu, margin=margin)
            if cert is not None:
                break
        cpu["certificate"] = time.process_time() - t1
    n = 2 * T + 1 + int(objective == "function_value")
    G = np.full((n, n), np.nan)
    for (i, j), v in sol.band.items():
        G[i, j] = G[j, i] = v * start
    certified = None if cert is None else cert.bound(start, noise)
    return PEPResult(method, mu, L, T, objective, kind, start, noise, True, "banded", value,
                     certified, cert, G, sol.function_values * start, "CLARABEL", cpu)
