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

The dual mixes two families of instances (``_Dual``): start and sampling noise in one
coordinate (as above), and, with sampling and :math:`d\ge2`, in two coordinates (start at
:math:`\lambda\sim\pi_A`, sampling at :math:`\pi_S`, the other :math:`d-2` at
:math:`\pi_3`), the two configurations of the primal worst case; with the first family only, a
review measured a bracket of 9.3% where the worst case puts them apart (with both: 2.2% there;
at most 3.5% on 40 random problems, median 2.1%, of which 2% is the certification grid of
oversampling 8).
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
    # the second family (start and sampling in two coordinates) exists only with both
    apart = d >= 2 and sampling_var > 0
    for _ in range(_ROUNDS):
        lam = np.unique(lam)
        P, H = responses(lam, steps, momenta, lookahead)
        Hf = 0.5 * lam[:, None] * H
        dual = _Dual(initial_gap * P, sampling_var * Hf.sum(axis=1), Hf, d, apart,
                     sensitivity, n, m, epsilon)
        pi = dual.maximise(None if pi is None else dual.extend(pi, lam, prev))
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


class _Dual:
    r"""The dual :math:`q` on a fixed set of :math:`k` curvatures.

    Mixtures of two families of admissible instances, with family weights
    :math:`(\theta, 1-\theta)`: *together* (start and sampling noise in one coordinate at
    :math:`\lambda\sim\pi_1`, the other :math:`d-1` at :math:`\pi_2`) and, where it exists,
    *apart* (start at :math:`\pi_A`, sampling at :math:`\pi_S` in another coordinate, the
    other :math:`d-2` at :math:`\pi_3`). Every point is a mixture of admissible instances,
    so its value is a lower bound (weak duality) whether or not the ascent found the best.
    """

    def __init__(self, start: np.ndarray, sampling: np.ndarray, Hf: np.ndarray, d: int,
                 apart: bool, S: float, n: int, m: int, eps: float) -> None:
        self.Hf, self.d = Hf, d
        self.S, self.n, self.m, self.eps = S, n, m, eps
        self.k = start.size
        zero = np.zeros_like(start)
        # blocks: (fixed part of the error per curvature, coordinates, family)
        self.blocks = [(start + sampling, 1.0, 0), (zero, float(d - 1), 0)]
        if apart:
            self.blocks += [(start, 1.0, 1), (sampling, 1.0, 1), (zero, float(d - 2), 1)]
        self.families = 2 if apart else 1
        self.size = len(self.blocks) * self.k + self.families
        self._cache: dict[bytes, object] = {}

    def _parts(self, pi: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        k = self.k
        ps = [pi[j * k:(j + 1) * k] for j in range(len(self.blocks))]
        return ps, pi[len(self.blocks) * k:]

    def allocation(self, pi: np.ndarray):
        key = pi.tobytes()
        if key not in self._cache:
            ps, th = self._parts(pi)
            mix = sum(th[f] * c * p for p, (_, c, f) in zip(ps, self.blocks))
            w = 2.0 * (mix @ self.Hf)
            # a weight of 0 at a step is harmless but the solver wants positive weights
            w = np.maximum(w, 1e-300 * max(float(np.max(w)), 1e-300))
            self._cache[key] = optimal_noise(w, self.S, self.n, self.m, self.eps)
        return self._cache[key]

    def _fixed(self, pi: np.ndarray) -> float:
        ps, th = self._parts(pi)
        return float(sum(th[f] * (p @ x) for p, (x, _, f) in zip(ps, self.blocks)))

    def value_and_grad(self, pi: np.ndarray) -> tuple[float, np.ndarray]:
        ps, th = self._parts(pi)
        al = self.allocation(pi)
        noise = self.Hf @ (2.0 * np.exp(2.0 * al.log_scales))
        # per block: the gradient in its own (conditional) weights; per family: its error
        g_blocks = [x + c * noise for x, c, _ in self.blocks]
        g_fam = np.zeros(self.families)
        for p, g, (_, _, f) in zip(ps, g_blocks, self.blocks):
            g_fam[f] += float(p @ g)
        return self._fixed(pi) + float(al.value), np.concatenate([*g_blocks, g_fam])

    def lower(self, pi: np.ndarray) -> float:
        al = self.allocation(pi)
        # without a certified lower end of the inner problem only 0 (noise >= 0) is proven
        low = al.lower_value if math.isfinite(al.lower_value) else 0.0
        return self._fixed(pi) + float(low)

    def set_gap(self, pi: np.ndarray) -> float:
        """The worst case on this set of curvatures of ``pi``'s allocation over ``q(pi)``,
        minus 1 (0 at the saddle point)."""
        al = self.allocation(pi)
        noise = self.Hf @ (2.0 * np.exp(2.0 * al.log_scales))
        rest = float(np.max(noise))
        primal = float(np.max(self.blocks[0][0] + noise)) + (self.d - 1) * rest
        if self.families == 2:
            primal = max(primal, float(np.max(self.blocks[2][0] + noise))
                         + float(np.max(self.blocks[3][0] + noise)) + (self.d - 2) * rest)
        return primal / self.value_and_grad(pi)[0] - 1.0

    def extend(self, pi: np.ndarray, lam: np.ndarray, lam_prev: np.ndarray) -> np.ndarray:
        """The previous weights carried onto the grown set of curvatures (0 on the new ones)."""
        k_old, k = lam_prev.size, lam.size
        idx = np.searchsorted(lam, lam_prev)
        out = np.zeros(self.size)
        for j in range(len(self.blocks)):
            out[j * k + idx] = pi[j * k_old:(j + 1) * k_old]
        out[len(self.blocks) * k:] = pi[len(self.blocks) * k_old:]
        return out

    def _normalise(self, pi: np.ndarray) -> np.ndarray:
        ps, th = self._parts(pi)
        return np.concatenate([*(p / np.sum(p) for p in ps), th / np.sum(th)])

    def maximise(self, start: np.ndarray | None, tol: float = 2e-3,
                 iterations: int = 80) -> np.ndarray:
        """Exponentiated-gradient ascent on the simplices (each block's curvatures and the
        family weights), the step quartered whenever ``q`` does not increase, until the gap
        on this set is below ``tol``."""
        k, nb = self.k, len(self.blocks)
        pi = np.concatenate([np.full(nb * k, 1.0 / k), np.full(self.families,
                                                               1.0 / self.families)])
        if start is not None and start.size == self.size:
            pi = start.copy()
        # a floor keeps every curvature (and family) reachable by the multiplicative updates
        pi = self._normalise(np.maximum(pi, 1e-6 / k))
        v, g = self.value_and_grad(pi)
        eta = 1.0
        cuts = [j * k for j in range(1, nb + 1)]
        for _ in range(iterations):
            if self.set_gap(pi) <= tol:
                break
            # gradients in units of the value: the step is scale free
            z = eta * g / max(abs(v), 1e-300)
            z = np.concatenate([b - np.max(b) for b in np.split(z, cuts)])
            cand = self._normalise(pi * np.exp(z))
            vc, gc = self.value_and_grad(cand)
            if vc > v:
                pi, v, g = cand, vc, gc
                eta = min(2.0 * eta, 1e3)
            else:
                eta *= 0.25
                if eta < 1e-8:
                    break
        return pi


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
