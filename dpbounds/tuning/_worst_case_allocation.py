r"""Noise allocations and horizons of DP-NAG / DP-MASG chosen by the worst-case error
**[DERIVED]**, with a proven bracket on the best allocation at each horizon.

For a fixed run (per-step steps :math:`\alpha_t`, momenta :math:`\beta_t`, look-aheads
:math:`\gamma_t`, horizon :math:`T`) the error of one coordinate with curvature
:math:`\lambda` is linear in the per-step Laplace variances :math:`v_t=2b_t^2`:

.. math::

    e(\lambda;v)=E_0\,p_T(\lambda)^2+\tfrac\lambda2\sum_t\alpha_t^2h_{T,t}(\lambda)^2
    (v_t+\sigma_s^2)

(:math:`p_T` the noiseless response to a unit start, :math:`h_{T,t}` the response of
:math:`x_T` to a unit input at step :math:`t`; the start put where
:math:`F(x_0)-F^\ast=E_0`), and :math:`\tfrac\lambda2\sum_t\alpha_t^2h_{T,t}^2v_t` for a
coordinate that carries only privacy noise. The worst case over quadratics
(:func:`~dpbounds.bounds.strongly_convex.quadratic_worst_case.quadratic_worst_case`) is a
maximum of such linear functions, so minimising it over the budgets
:math:`\epsilon_t` (:math:`\sum_t\epsilon_t\le\epsilon`, :math:`v_t=2b(\epsilon_t)^2` convex
in :math:`\epsilon_t`, eq. (11)) is a convex min-max problem. For any probability weights
:math:`\pi_1,\pi_2` on curvatures,

.. math::

    q(\pi)=\sum_i\pi_{1,i}\big(E_0p_T(\lambda_i)^2+\sigma\text{-term}_i\big)
    +\min_{\epsilon}\sum_t a_t(\pi)\,2b(\epsilon_t)^2,\qquad
    a_t(\pi)=\sum_i\big(\pi_{1,i}+(d-1)\pi_{2,i}\big)\tfrac{\lambda_i}2\alpha_t^2h_{T,t}(\lambda_i)^2

is the expected error of a mixture of admissible instances (start and sampling noise in one
coordinate at :math:`\lambda_i\sim\pi_1`, the other :math:`d-1` coordinates at
:math:`\lambda_j\sim\pi_2`) under the best allocation against that mixture, hence a lower
bound on the best worst case at this :math:`T` (weak duality). The inner minimum is problem
(30) with weights :math:`2a_t(\pi)`, solved with its own proven lower bound
(:func:`~dpbounds.bounds.strongly_convex.noise_allocation.optimal_noise`).

:func:`best_allocation` maximises :math:`q` over :math:`\pi` (exponentiated-gradient ascent
on the simplices, with the envelope gradient) on a set of curvatures that grows by exchange:
the allocation of the current :math:`\pi` is certified by ``quadratic_worst_case``, whose
maximising curvatures are added, until the bracket closes. It returns the allocation, its
certified worst case (``upper``) and the proven ``lower`` bound on the best allocation's worst
case at this horizon.
The horizon is then searched (not proven): a geometric grid, refined around its best.

Limitation: the dual's instances put the start and the sampling noise in one coordinate; where
the worst case puts them in two (``same_coordinate=False``, only with sampling and d >= 2) the
bracket need not close (measured 9.3% on one of 100 random problems; median 2.1%), while
``lower`` stays valid.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpbounds.bounds.strongly_convex.noise_allocation import optimal_noise
from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case

__all__: list[str] = []

_START_POINTS = 9  # initial Chebyshev-Lobatto curvatures of the dual
_ROUNDS = 6         # exchange rounds at most
_GAP_TOL = 0.03     # stop exchanging once upper <= (1 + tol) * lower


@dataclass(frozen=True)
class WorstCaseAllocation:
    """The allocation of one horizon chosen by the worst case, with its proven bracket."""

    horizon: int
    epsilons: np.ndarray
    log_scales: np.ndarray
    #: attained on an admissible quadratic (a lower end of this run's worst case)
    value: float
    #: certified: this run's worst case is at most this
    upper: float
    #: proven: no allocation of the budget at this horizon has a worst case below this
    lower: float

    @property
    def gap(self) -> float:
        """``upper / lower - 1``: the allocation is proven within this of the best one."""
        return self.upper / self.lower - 1.0 if self.lower > 0 else math.inf


def responses(lam: np.ndarray, a_t: np.ndarray, b_t: np.ndarray, g_t: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`p_T(\lambda)^2` and :math:`H_{i,t}=\alpha_t^2h_{T,t}(\lambda_i)^2`, by the adjoint
    recursion (one backward pass from :math:`x_T`)."""
    T = a_t.size
    u0, u1 = np.ones_like(lam), np.zeros_like(lam)  # coefficients of (x_{t+1}, x_t) in x_T
    H = np.empty((lam.size, T))
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(T - 1, -1, -1):
            H[:, t] = a_t[t] * a_t[t] * u0 * u0
            a = (1.0 + b_t[t]) - a_t[t] * (1.0 + g_t[t]) * lam
            b = b_t[t] - a_t[t] * g_t[t] * lam
            u0, u1 = a * u0 + u1, -b * u0
        return (u0 + u1) ** 2, H  # the start x_0 = x_{-1}


def best_allocation(mu: float, L: float, d: int, steps: np.ndarray, momenta: np.ndarray,
                    lookahead: np.ndarray, *, sensitivity: float, n: int, m: int,
                    epsilon: float, sampling_var: float, initial_gap: float,
                    oversampling: int = 8) -> WorstCaseAllocation:
    """The allocation minimising the worst case at this horizon (module docstring)."""
    T = steps.size
    k = np.arange(_START_POINTS)
    lam = 0.5 * (L + mu) + 0.5 * (L - mu) * np.cos(k * math.pi / (_START_POINTS - 1))
    best: WorstCaseAllocation | None = None
    lower = 0.0
    pi = None
    prev = np.empty(0)
    for _ in range(_ROUNDS):
        lam = np.unique(lam)
        P, H = responses(lam, steps, momenta, lookahead)
        Hf = 0.5 * lam[:, None] * H
        fixed = initial_gap * P + sampling_var * Hf.sum(axis=1)
        dual = _Dual(fixed, Hf, d, sensitivity, n, m, epsilon)
        pi = dual.maximise(None if pi is None else _extend(pi, lam, prev))
        prev = lam
        lower = max(lower, dual.lower(pi))
        alloc = dual.allocation(pi)
        lap = 2.0 * np.exp(2.0 * alloc.log_scales)
        wc = quadratic_worst_case(mu, L, d, alpha=steps, beta=momenta, gamma=lookahead,
                                  laplace_var=lap, sampling_var=sampling_var,
                                  initial_gap=initial_gap, oversampling=oversampling)
        cand = WorstCaseAllocation(T, alloc.epsilons, alloc.log_scales, float(wc.value),
                                   float(wc.upper), lower)
        if best is None or cand.upper < best.upper:
            best = cand
        if best.upper <= (1.0 + _GAP_TOL) * lower:
            break
        new = np.array([wc.start_eigenvalue, wc.noise_eigenvalue, wc.sampling_eigenvalue])
        if np.all(np.isin(new, lam)):
            # the maximisers are already in the set: refine around them instead
            new = np.concatenate([new * (1 + s) for s in (-1e-3, 1e-3, -1e-2, 1e-2)])
        lam = np.concatenate([lam, np.clip(new, mu, L)])
    assert best is not None
    return WorstCaseAllocation(best.horizon, best.epsilons, best.log_scales, best.value,
                               best.upper, lower)


def _extend(pi: np.ndarray, lam: np.ndarray, lam_prev: np.ndarray) -> np.ndarray:
    """The previous weights carried onto the grown set of curvatures (0 on the new ones)."""
    n = lam.size
    out = np.zeros(2 * n)
    idx = np.searchsorted(lam, lam_prev)
    half = pi.size // 2
    out[idx] = pi[:half]
    out[n + idx] = pi[half:]
    return out


class _Dual:
    r"""The concave dual :math:`q(\pi)` on a fixed set of curvatures."""

    def __init__(self, fixed: np.ndarray, Hf: np.ndarray, d: int, S: float, n: int, m: int,
                 eps: float) -> None:
        self.fixed, self.Hf, self.d = fixed, Hf, d
        self.S, self.n, self.m, self.eps = S, n, m, eps
        self.k = fixed.size
        self._cache: dict[bytes, object] = {}

    def _split(self, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p1 = np.clip(pi[:self.k], 0.0, None)
        p2 = np.clip(pi[self.k:], 0.0, None)
        return p1 / max(p1.sum(), 1e-300), p2 / max(p2.sum(), 1e-300)

    def allocation(self, pi: np.ndarray):
        key = pi.tobytes()
        if key not in self._cache:
            p1, p2 = self._split(pi)
            w = 2.0 * ((p1 + (self.d - 1) * p2) @ self.Hf)
            # a weight of 0 at a step is harmless but the solver wants positive weights
            w = np.maximum(w, 1e-300 * max(float(np.max(w)), 1e-300))
            self._cache[key] = optimal_noise(w, self.S, self.n, self.m, self.eps)
        return self._cache[key]

    def value_and_grad(self, pi: np.ndarray) -> tuple[float, np.ndarray]:
        p1, p2 = self._split(pi)
        al = self.allocation(pi)
        lap = 2.0 * np.exp(2.0 * al.log_scales)
        noise = self.Hf @ lap
        value = float(p1 @ self.fixed + al.value)
        return value, np.concatenate([self.fixed + noise, (self.d - 1) * noise])

    def lower(self, pi: np.ndarray) -> float:
        p1, _ = self._split(pi)
        al = self.allocation(pi)
        # without a certified lower end of the inner problem only 0 (noise >= 0) is proven
        low = al.lower_value if math.isfinite(al.lower_value) else 0.0
        return float(p1 @ self.fixed + low)

    def set_gap(self, pi: np.ndarray) -> float:
        """The worst case on this set of curvatures of ``pi``'s allocation over ``q(pi)``,
        minus 1 (0 at the saddle point)."""
        al = self.allocation(pi)
        noise = self.Hf @ (2.0 * np.exp(2.0 * al.log_scales))
        primal = float(np.max(self.fixed + noise) + (self.d - 1) * np.max(noise))
        return primal / self.value_and_grad(pi)[0] - 1.0

    def maximise(self, start: np.ndarray | None, tol: float = 2e-3,
                 iterations: int = 80) -> np.ndarray:
        """Exponentiated-gradient ascent on the two simplices, the step halved whenever
        ``q`` does not increase (``q`` is concave and smooth), until the gap on this set is
        below ``tol``."""
        k = self.k
        pi = np.full(2 * k, 1.0 / k) if start is None else start.copy()
        if not (np.any(pi[:k] > 0) and np.any(pi[k:] > 0)):
            pi = np.full(2 * k, 1.0 / k)
        # a floor keeps every curvature reachable by the multiplicative updates
        pi = _normalise(np.maximum(pi, 1e-6 / k), k)
        v, g = self.value_and_grad(pi)
        eta = 1.0
        for _ in range(iterations):
            if self.set_gap(pi) <= tol:
                break
            # gradients in units of the value: the step is scale free
            z = eta * g / max(abs(v), 1e-300)
            z1, z2 = z[:k] - np.max(z[:k]), z[k:] - np.max(z[k:])
            cand = _normalise(pi * np.exp(np.concatenate([z1, z2])), k)
            vc, gc = self.value_and_grad(cand)
            if vc > v:
                pi, v, g = cand, vc, gc
                eta = min(2.0 * eta, 1e3)
            else:
                eta *= 0.25
                if eta < 1e-8:
                    break
        return pi


def _normalise(pi: np.ndarray, k: int) -> np.ndarray:
    return np.concatenate([pi[:k] / np.sum(pi[:k]), pi[k:] / np.sum(pi[k:])])


def search_horizon(evaluate: Callable[[int], WorstCaseAllocation], max_horizon: int,
                   points: int = 16, also: tuple[int, ...] = ()) -> tuple[WorstCaseAllocation, int]:
    """The horizon of least worst case: a geometric grid of ``points`` horizons in
    [1, max_horizon] and the horizons ``also`` (e.g. the bound's choice, so the result is never
    worse than it), then a golden-section refinement between the best point's neighbours.
    Returns the best and the number of horizons evaluated (not proven optimal)."""
    grid = sorted({int(round(x)) for x in np.geomspace(1, max_horizon, points)}
                  | {T for T in also if 1 <= T <= max_horizon})
    seen: dict[int, WorstCaseAllocation] = {}

    def val(T: int) -> float:
        if T not in seen:
            seen[T] = evaluate(T)
        return seen[T].upper

    vals = [val(T) for T in grid]
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    # golden section on the integers of [lo, hi] (the surrogate is close to unimodal in T)
    g = (math.sqrt(5) - 1) / 2
    while hi - lo > 2:
        a = int(round(hi - g * (hi - lo)))
        b = int(round(lo + g * (hi - lo)))
        if a == b:
            b = a + 1
        if val(a) <= val(b):
            hi = b
        else:
            lo = a
    for T in range(lo, hi + 1):
        val(T)
    T_best = min(seen, key=lambda T: seen[T].upper)
    return seen[T_best], len(seen)
