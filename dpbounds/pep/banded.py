r"""A banded relaxation of the noise-aware PEP: long horizons as a chain of small SDP cones.

**Basis** (**[DERIVED]**). Instead of :math:`(x_0-x^\ast,\nabla F(\text{points}),\xi_t)`
(:mod:`dpbounds.pep.formulation`, where every point is a dense combination carrying the powers
:math:`\beta^t`), the Gram matrix is taken over the iterates and gradients themselves,
interleaved: :math:`x_0,g_0,x_1,g_1,\dots,x_T\,[,g_T]` (:math:`x^\ast=0`, :math:`x_{-1}=x_0`,
:math:`g_k=\nabla F(y_k)`, :math:`y_T=x_T`). The change of basis is invertible
(:math:`x_{t+1}=(1+\beta)x_t-\beta x_{t-1}-\alpha(g_t+\xi_t)` with :math:`\alpha>0`), so with every
constraint kept the SDP is the same problem. The noise is
:math:`\zeta_t=\alpha\xi_t=(1+\beta)x_t-\beta x_{t-1}-x_{t+1}-\alpha g_t`, a combination of four
neighbouring basis vectors, and :math:`\mathbb E\lVert\zeta_t\rVert^2\le\alpha^2s_t^2`; the
point :math:`y_t=(1+\gamma)x_t-\gamma x_{t-1}`.

**The relaxation** (window :math:`w\ge1`): keep the interpolation inequalities of the pairs with
the minimiser and of the points at most :math:`w` steps apart, and the orthogonality
:math:`\mathbb E\langle\zeta_t,v\rangle=0` only for :math:`v\in\{x_s,g_s: t-w\le s\le t\}`
(the full model has every :math:`s\le t`: :math:`\operatorname{span}\{x_0,\xi_{<t},g_{\le t}\}=
\operatorname{span}\{x_{\le t},g_{\le t}\}`). Dropping constraints enlarges the feasible set, so
the value is a **valid upper bound** on the full PEP's value and hence on the worst case; it is
**not exact** (how far it is from the full PEP is measured in tests/pep and the package
docstring). With :math:`w\ge T` every constraint is kept and the value is the full PEP's.

**Why it is fast** (**[DERIVED]**, Grone, Johnson, Sá & Wolkowicz 1984): every kept constraint
and the objective touch only entries :math:`G_{ij}` with :math:`|i-j|\le b=2w+3` in the
interleaved order. A banded pattern is chordal with maximal cliques the windows
:math:`\{i,\dots,i+b\}`, so a partial matrix on the band has a PSD completion iff each window
block is PSD. The SDP over one :math:`(2T+2)`-dimensional cone becomes one over :math:`\approx2T`
cones of size :math:`b+1` -- exactly the same optimum -- which an interior-point method solves in
time linear in :math:`T`.

**The certificate** is written in the same basis: multipliers :math:`\rho\ge0`,
:math:`\lambda_0\ge0`, :math:`\lambda_t\ge0` (of :math:`s_t^2`) and free :math:`\nu` for the kept
orthogonalities, with the function-value equalities and

.. math:: S=\sum\rho_{ij}Q_{ij}/c+\lambda_0E_{x_0x_0}[\text{distance}]
          +\sum_t\frac{\lambda_t}{\alpha^2}\zeta_t\zeta_t^\top
          +\sum\nu\,\mathrm{sym}(\zeta_tv^\top)-C\succeq0,

banded, so its exact check (:mod:`dpbounds.pep.certificate`) is an :math:`LDL^\top` on the band:
cheap at any :math:`T`. Weak duality needs no change of basis: the Gram matrix of any vectors is
PSD, whatever they are.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds.pep.formulation import FixedStepMethod, Layout, method_numbers

__all__: list[str] = []

#: Largest horizon accepted by the banded relaxation: T = 200 with window 3 takes 39 CPU-s
#: (solve 10 s, certificate 29 s; measured, ``time.process_time``, 2-core machine).
MAX_BANDED_STEPS = 200


@dataclass(frozen=True)
class BandedLayout(Layout):
    """The interleaved iterate/gradient basis: ``x_s`` is vector ``2 s``, ``g_k`` is ``2 k + 1``.

    ``points`` (N x n) are the interpolation points y_0..y_{T-1} (and x_T), ``noise_rows``
    (T x n) the scaled noises zeta_t = alpha xi_t, ``window`` the relaxation's window.
    """

    window: int = 1
    noise_rows: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    alpha: Any = 1.0

    def grad(self, k: int) -> int:
        return 2 * k + 1

    def noise(self, t: int) -> int:
        raise ValueError("the banded basis has no noise vector; use noise_rows")

    def iterate(self, s: int) -> int:
        return 2 * s

    @property
    def bandwidth(self) -> int:
        return 2 * self.window + 3

    def pairs(self, subset: str = "all") -> list[tuple[int, int]]:
        """Pairs with the minimiser (index -1) and of points at most ``window`` apart."""
        N, w = self.num_points, self.window
        star = [p for k in range(N) for p in ((-1, k), (k, -1))]
        near = [(i, j) for i in range(N) for j in range(N) if i != j and abs(i - j) <= w]
        return star + near

    def orthogonal(self) -> list[tuple[int, int]]:
        """(t, basis index v) with E<zeta_t, v> = 0 kept: v = x_s, g_s for t - w <= s <= t."""
        out = []
        for t in range(self.T):
            for s in range(max(0, t - self.window), t + 1):
                out += [(t, self.iterate(s)), (t, self.grad(s))]
        return out


def banded_layout(method: FixedStepMethod, T: int, objective: str, window: int, *,
                  exact: bool = False) -> BandedLayout:
    """The banded layout of ``method`` for ``T`` steps (exact: Fraction entries)."""
    with_final = objective == "function_value"
    n = 2 * T + 1 + int(with_final)
    a, b, g, zero = method_numbers(method, n, exact)

    def e(k: int) -> Any:
        v = zero.copy()
        v[k] = 1
        return v

    def x(s: int) -> Any:
        return e(2 * max(s, 0))  # x_{-1} = x_0

    pts = [(1 + g) * x(t) - g * x(t - 1) for t in range(T)]
    if with_final:
        pts.append(x(T))
    zeta = [(1 + b) * x(t) - b * x(t - 1) - x(t + 1) - a * e(2 * t + 1) for t in range(T)]
    dtype = object if exact else float
    return BandedLayout(T, objective, n, np.array(pts, dtype=dtype), x(T), window=window,
                        noise_rows=np.array(zeta, dtype=dtype), alpha=a)


def _band_index(n: int, b: int) -> dict[tuple[int, int], int]:
    """Column of each band entry (i <= j <= i + b) in the variable vector."""
    out: dict[tuple[int, int], int] = {}
    for i in range(n):
        for j in range(i, min(n, i + b + 1)):
            out[(i, j)] = len(out)
    return out


def _band_row(Q: np.ndarray, index: dict[tuple[int, int], int]) -> dict[int, float]:
    """<Q, G> as a combination of the band variables (Q symmetric, supported on the band)."""
    row: dict[int, float] = {}
    rows, cols = np.nonzero(Q)
    for i, j in zip(rows, cols, strict=True):
        if i > j:
            continue
        key = (int(i), int(j))
        if key not in index:
            raise AssertionError(f"entry {key} outside the band")  # cannot happen: see bandwidth
        row[index[key]] = row.get(index[key], 0.0) + float(Q[i, j]) * (1.0 if i == j else 2.0)
    return row


@dataclass(frozen=True)
class BandedSolution:
    """Primal and dual of the banded SDP (normalised units: start value 1)."""

    value: float
    band: dict[tuple[int, int], float]
    function_values: np.ndarray
    rho: np.ndarray
    lambda_initial: float
    lambda_noise_zeta: np.ndarray
    nu: np.ndarray
    cpu_seconds: dict[str, float]


def solve_banded(method: FixedStepMethod, mu: float, L: float, T: int, objective: str,
                 initial: str, noise: tuple[float, ...], window: int,
                 eps: float = 0.0) -> BandedSolution:
    """Solve the banded SDP with Clarabel (direct API), objective + ``eps`` tr(G) (margin).

    ``noise`` is s_t^2 in normalised units. Raises RuntimeError when Clarabel does not solve.
    """
    import clarabel
    import scipy.sparse as sp

    from dpbounds.pep.formulation import _OPTIONS, pair_form

    t0 = time.process_time()
    lay = banded_layout(method, T, objective, window)
    n, N, b = lay.n, lay.num_points, min(lay.bandwidth, lay.n - 1)
    index = _band_index(n, b)
    nv = len(index)
    nx = nv + N  # band entries, then the function values
    c = 2.0 * (L - mu)
    rows: list[dict[int, float]] = []
    rhs: list[float] = []
    # zero cone: orthogonality <zeta_t, v> = 0
    orth = lay.orthogonal()
    for t, v in orth:
        zt = lay.noise_rows[t]
        ev = np.zeros(n)
        ev[v] = 1.0
        rows.append(_band_row((np.outer(zt, ev) + np.outer(ev, zt)) / 2, index))
        rhs.append(0.0)
    n_zero = len(rows)
    # nonnegative cone: interpolation (Q/c . G + F_j - F_i <= 0), start, variances
    pairs = lay.pairs()
    for i, j in pairs:
        Q, fc = pair_form(lay, i, j, mu, L)
        row = _band_row(Q / c, index)
        for k, s in fc.items():
            row[nv + k] = row.get(nv + k, 0.0) + s
        rows.append(row)
        rhs.append(0.0)
    rows.append({nv: 1.0} if initial == "gap" else {index[(0, 0)]: 1.0})
    rhs.append(1.0)
    a2 = method.alpha**2
    for t in range(T):
        zt = lay.noise_rows[t]
        rows.append(_band_row(np.outer(zt, zt), index))
        rhs.append(a2 * noise[t])
    n_nonneg = len(rows) - n_zero
    # PSD cones: the windows {i..i+b} (Clarabel's svec: upper triangle by columns,
    # off-diagonal entries times sqrt 2)
    r2 = np.sqrt(2.0)
    cones_psd = []
    for i0 in range(0, max(n - b, 1)):
        k = min(b + 1, n - i0)
        for jj in range(k):
            for ii in range(jj + 1):
                key = (i0 + ii, i0 + jj)
                rows.append({index[key]: -(1.0 if ii == jj else r2)})
                rhs.append(0.0)
        cones_psd.append(k)
    data, ri, ci = [], [], []
    for r, row in enumerate(rows):
        for col, val in row.items():
            if val != 0.0:
                ri.append(r)
                ci.append(col)
                data.append(val)
    A = sp.csc_matrix((data, (ri, ci)), shape=(len(rows), nx))
    q = np.zeros(nx)
    if objective == "function_value":
        q[nv + N - 1] = -1.0
    else:
        fT = 2 * T
        q[index[(fT, fT)]] = -1.0
    for i in range(n):
        q[index[(i, i)]] -= eps
    P = sp.csc_matrix((nx, nx))
    cones = [clarabel.ZeroConeT(n_zero), clarabel.NonnegativeConeT(n_nonneg),
             *(clarabel.PSDTriangleConeT(k) for k in cones_psd)]
    t1 = time.process_time()
    # tight tolerances first (the certificate's margin is small); Clarabel's defaults when the
    # tight run stalls on a numerical error (seen for Nesterov at T = 10)
    for options in (_OPTIONS["CLARABEL"], {}):
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for name, val in options.items():
            setattr(settings, name, val)
        try:
            sol = clarabel.DefaultSolver(P, q, A, np.asarray(rhs), cones, settings).solve()
        except BaseException as err:  # a Rust panic (PanicException) on extreme scales
            if type(err).__name__ != "PanicException":
                raise
            raise RuntimeError(f"the banded PEP SDP was not solved: Clarabel failed ({err})"
                               ) from None
        status = str(sol.status)
        if status.endswith("Solved"):  # Solved or AlmostSolved: the certificate decides
            break
    else:
        raise RuntimeError(f"the banded PEP SDP was not solved: Clarabel status {status}")
    t2 = time.process_time()
    xs, z = np.asarray(sol.x), np.asarray(sol.z)
    band = {key: float(xs[col]) for key, col in index.items()}
    value = (float(xs[nv + N - 1]) if objective == "function_value"
             else float(xs[index[(2 * T, 2 * T)]]))
    npair = len(pairs)
    return BandedSolution(
        value, band, xs[nv:].copy(), z[n_zero:n_zero + npair].copy(),
        float(z[n_zero + npair]), z[n_zero + npair + 1:n_zero + n_nonneg].copy(),
        z[:n_zero].copy(), {"build": t1 - t0, "solve": t2 - t1})
