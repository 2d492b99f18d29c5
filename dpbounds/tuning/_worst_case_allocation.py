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

The horizon is searched (:func:`search_horizon`: a geometric grid, refined around its best)
and then **proven** (:func:`prove_horizon`, DERIVED): a mixture of admissible instances is
an admissible adversary at every horizon, so its value under the best allocation against it
bounds the best worst case from below at every :math:`T`, and on an interval of horizons
between two momentum restarts it is bounded below by one problem (30) whose weights every
horizon of the interval dominates (:class:`_Horizons`). A branch and bound over
:math:`1..T_{\max}` (intervals split, and solved at their middle, until their bound is within
``tol`` of the best attained worst case) gives ``lower``: no horizon :math:`T\le T_{\max}`
with any allocation has a worst case below it. Measured (``bench/worst_case_nag.py``, 26
rows): the best (T, allocation) proven within 0.12%..0.56%, at 1.2x-2.2x the CPU of the
search alone; on MASG (ragged in T across stages) the proof also found better horizons than
the search's (a dense horizon oracle had found up to 2.4% better before; none now).

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
_MODEL_FLOATS = 5 * 10**7  # prove_horizon keeps horizon models of at most this many floats


@dataclass(frozen=True)
class Mixture:
    r"""A mixture of admissible instances (a dual point), as weights per curvature.

    Its expected error at horizon :math:`T` under the best allocation against it is
    :math:`E_0\,\text{start}\cdot p_T^2+\sigma_s^2\,\text{sampling}\cdot\sum_tHf_{T,t}
    +\min_\epsilon\sum_t2(\text{noise}\cdot Hf_{T,t})b_t^2`, a lower bound on the best
    worst case at *every* horizon (the instances do not depend on :math:`T`).
    """

    curvatures: np.ndarray
    #: privacy-noise coordinates at each curvature (expected count)
    noise: np.ndarray
    #: probability of the start at each curvature
    start: np.ndarray
    #: probability of the sampling noise at each curvature
    sampling: np.ndarray


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
    #: the mixture of admissible instances that proves ``lower`` (valid at every horizon)
    mixture: Mixture | None = None

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
    mixture: Mixture | None = None
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
        if dual.lower(pi) > lower or mixture is None:
            lower = max(lower, dual.lower(pi))
            mixture = dual.mixture(pi, lam)
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
                               best.upper, lower, mixture)


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

    def mixture(self, pi: np.ndarray, lam: np.ndarray) -> Mixture:
        """``pi`` as weights per curvature (noise, start, sampling)."""
        ps, th = self._parts(pi)
        noise = sum(th[f] * c * p for p, (_, c, f) in zip(ps, self.blocks))
        start = th[0] * ps[0] + (th[1] * ps[2] if self.families == 2 else 0.0)
        sampling = th[0] * ps[0] + (th[1] * ps[3] if self.families == 2 else 0.0)
        return Mixture(lam.copy(), np.asarray(noise, dtype=float), np.asarray(start, dtype=float),
                       np.asarray(sampling, dtype=float))

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
        value = float(self.value_and_grad(pi)[0])
        if value <= 0.0:  # noiseless (eps ~ 1e300 or S_1 ~ 1e-300: exact zeros): no gap
            return 0.0 if primal <= 0.0 else math.inf
        return primal / value - 1.0

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


# ------------------------------------------------------------------ the horizon, proven
def _stage_starts(steps: np.ndarray, mom: np.ndarray, gam: np.ndarray) -> list[int]:
    r"""The first steps of the stages of :class:`_Horizons`: 0 and every restart
    (:math:`\beta_t=\gamma_t=0`) that changes the dynamics (a restart with the stage's own
    step and no momentum continues it: e.g. :math:`\mu=L`, where every step has
    :math:`\beta=0`, is one stage)."""
    starts, inner = [0], None  # inner: (step, momentum, look-ahead) of the stage after its start
    for t in range(1, steps.size):
        cur = (steps[t], mom[t], gam[t])
        if mom[t] == 0.0 and gam[t] == 0.0:
            if steps[t] == steps[starts[-1]] and inner in (None, cur):
                inner = cur
                continue
            starts.append(t)
            inner = None
        elif inner is None:
            inner = cur
    return starts


class _Horizons:
    r"""A mixture's lower bound at every horizon of one run (its prefixes), in O(T k) memory.

    The run of horizon :math:`T` is the first :math:`T` steps of the run of horizon
    :math:`T_{\max}` (NAG: constant; MASG: the schedule (33) cut at :math:`T`, restarts at the
    stage starts). A *restart* :math:`s` (:math:`\beta_s=\gamma_s=0`, and :math:`s=0` where
    :math:`x_{-1}=x_0`) makes :math:`x_{s+1}` depend on :math:`x_s` only; between two restarts
    :math:`s<s'` the step, momentum and look-ahead are constant (checked). For
    :math:`s\le T\le s'` and curvature :math:`\lambda` [DERIVED, linearity]:

    * the start: :math:`x_T=x_0\,P_T`, :math:`P` by one forward pass;
    * an input at step :math:`t<s` reaches :math:`x_T` through :math:`x_s`:
      :math:`\alpha_t^2h_{T,t}^2=c_t\,p(T-s)^2`, with :math:`c_t=\alpha_t^2h_{s,t}^2` (the
      responses at horizon :math:`s`) and :math:`p(j)` the stage's response to
      :math:`x_s=1` from a restart;
    * an input at step :math:`s\le t<T`: :math:`\alpha_t^2h_{T,t}^2=\alpha^2r(T-1-t)^2`, with
      :math:`r` the stage's response to :math:`(x_{t+1},x_t)=(1,0)` (time invariant).

    So on an interval :math:`[T_1,T_2]\subseteq[s,s']` the noise weights of every :math:`T`
    dominate, term by term after an injection of the steps, the weights :math:`c_t\min_{[T_1,
    T_2]}p^2` (:math:`t<s`) and :math:`\alpha^2r(j)^2` (:math:`j<T_1-s`). Problem (30) with
    more steps or larger weights has no smaller optimum (restrict its optimal budgets to the
    injected steps: a feasible allocation of the smaller problem, with no larger value), so
    the inner minimum at each :math:`T` is at least the certified lower end of (30) on those
    weights, and the mixture's value on the interval is at least
    :math:`\min_{[T_1,T_2]}(\text{start and sampling terms})` plus that. With
    :math:`T_1=T_2` it is the mixture's value at :math:`T` (the dual's lower bound there).
    """

    def __init__(self, mix: Mixture, steps: np.ndarray, mom: np.ndarray, gam: np.ndarray,
                 initial_gap: float, sampling_var: float) -> None:
        lam = mix.curvatures
        self.mix, self.T = mix, steps.size
        self.lam_half = 0.5 * lam
        T = steps.size
        starts = _stage_starts(steps, mom, gam)
        self.starts = np.array(starts + [T])
        # the start's response P_T (signed), T = 0..Tmax: one forward pass
        x = np.ones((T + 1, lam.size))
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(T):
                a = (1.0 + mom[t]) - steps[t] * (1.0 + gam[t]) * lam
                b = mom[t] - steps[t] * gam[t] * lam
                x[t + 1] = a * x[t] - b * x[max(t - 1, 0)]  # x_{-1} = x_0
        self.stages = []
        fixed = np.full(T + 1, np.inf)
        for k in range(len(starts)):
            s, e = int(self.starts[k]), int(self.starts[k + 1])
            al = steps[s]
            be, ga = (mom[s + 1], gam[s + 1]) if s + 1 < e else (0.0, 0.0)
            if not (np.all(steps[s:e] == al) and np.all(mom[s + 1:e] == be)
                    and np.all(gam[s + 1:e] == ga)):
                raise ValueError("the run is not constant between its restarts")
            a = (1.0 + be) - al * (1.0 + ga) * lam
            b = be - al * ga * lam
            n = e - s
            p = np.empty((n + 1, lam.size))  # response of x_{s+j} to x_s = 1 (restart)
            r = np.empty((n + 1, lam.size))  # response of x_{t+1+j} to (x_{t+1}, x_t) = (1, 0)
            p[0], r[0] = 1.0, 1.0
            if n >= 1:
                p[1] = 1.0 - al * lam
                r[1] = a
            with np.errstate(over="ignore", invalid="ignore"):
                for j in range(1, n):
                    p[j + 1] = a * p[j] - b * p[j - 1]
                    r[j + 1] = a * r[j] - b * r[j - 1]
            c = responses(lam, steps[:s], mom[:s], gam[:s])[1] if s > 0 else np.zeros((lam.size, 0))
            cum_r = np.concatenate([np.zeros((1, lam.size)), np.cumsum(r[:n] ** 2, axis=0)])
            # sum over t of alpha_t^2 h_{T,t}^2 for T = s..e (the sampling noise's weight)
            samp = c.sum(axis=1)[None, :] * p ** 2 + al * al * cum_r
            fixed[s:e + 1] = np.minimum(fixed[s:e + 1], (
                initial_gap * (x[s:e + 1] ** 2) @ mix.start
                + sampling_var * (samp * self.lam_half[None, :]) @ mix.sampling))
            self.stages.append((s, e, al, p, r, c))
        self.fixed = fixed
        self.floats = x.size + fixed.size + sum(p.size + r.size + c.size
                                                 for _, _, _, p, r, c in self.stages)

    def stage_of(self, T: int) -> int:
        """The stage whose interval [s, s'] holds T (the later one at a restart)."""
        return int(np.searchsorted(self.starts, T, side="right") - 1) if T < self.T else \
            len(self.stages) - 1

    def lower(self, lo: int, hi: int, S: float, n: int, m: int, eps: float) -> float:
        """Proven: the mixture's value at every T in [lo, hi] (in one stage) is at least this."""
        k = self.stage_of(lo)
        s, e, al, p, r, c = self.stages[k]
        if not (s <= lo <= hi <= e):
            raise ValueError("the interval crosses a restart")
        w = self.mix.noise * self.lam_half  # per curvature
        pmin = np.min(p[lo - s:hi - s + 1] ** 2, axis=0)
        weights = np.concatenate([2.0 * ((w * pmin) @ c), 2.0 * al * al * ((r[:lo - s] ** 2) @ w)])
        fixed = float(np.min(self.fixed[lo:hi + 1]))
        if not math.isfinite(fixed):  # an overflowing response: claim only what is proven (0)
            fixed = 0.0
        weights = weights[weights > 0]  # dropping steps lowers (30): still a lower bound
        if weights.size == 0 or not np.all(np.isfinite(weights)):
            return fixed if weights.size == 0 else 0.0
        al_ = optimal_noise(weights, S, n, m, eps)
        low = al_.lower_value if math.isfinite(al_.lower_value) else 0.0
        return fixed + float(low)


@dataclass(frozen=True)
class HorizonProof:
    """Result of :func:`prove_horizon`."""

    #: the best (horizon, allocation) found (by certified worst case)
    best: WorstCaseAllocation
    #: proven: no horizon T <= Tmax with any allocation of the budget has a worst case below this
    lower: float
    #: every horizon whose allocation problem was solved (the search's and the proof's)
    evaluated: dict[int, WorstCaseAllocation]
    #: interval bounds computed
    intervals: int
    #: horizons solved by the proof (beyond ``seen``)
    solved: int


def prove_horizon(evaluate: Callable[[int], WorstCaseAllocation],
                  seen: dict[int, WorstCaseAllocation], steps: np.ndarray, momenta: np.ndarray,
                  lookahead: np.ndarray, *, sensitivity: float, n: int, m: int, epsilon: float,
                  sampling_var: float, initial_gap: float, tol: float = 0.002,
                  max_evaluations: int = 40, max_intervals: int = 4000) -> HorizonProof:
    r"""A proven lower bound on :math:`\min_{1\le T\le T_{\max}}` of the best worst case
    **[DERIVED]**, by branch and bound over intervals of horizons.

    ``steps, momenta, lookahead``: the run of horizon :math:`T_{\max}`, whose prefixes are the
    runs of the shorter horizons; ``seen``: horizons already solved (e.g. by
    :func:`search_horizon`); ``evaluate(T)``: :func:`best_allocation` at ``T``.

    Every solved horizon carries a mixture of admissible instances (its dual point); a
    mixture's value is a lower bound on the best worst case at *every* horizon, and
    :class:`_Horizons` bounds it from below on a whole interval of horizons between two
    restarts. The horizons :math:`1..T_{\max}` are cut at the restarts; an interval whose bound
    (the best of the mixtures of the solved horizons nearest to it and of the best one) is
    below ``value / (1 + tol)`` (``value``: the attained worst case of the best horizon found,
    by certified upper end) is split, after solving its middle horizon when none inside it
    is solved (so that a mixture fitted there is available; a better horizon found on the way
    becomes the best). A single horizon's bound is its own dual's. The result is the least
    bound over the final partition: valid whatever the work limits (``max_evaluations``
    horizons solved, ``max_intervals`` interval bounds), which only make it weaker.
    """
    import heapq

    seen = dict(seen)
    Tmax = steps.size
    models: dict[int, _Horizons] = {}
    S, eps = sensitivity, epsilon

    def model(T: int) -> _Horizons | None:
        mix = seen[T].mixture
        if mix is None:
            return None
        if T in models:
            models[T] = models.pop(T)  # most recently used last
        else:
            models[T] = _Horizons(mix, steps, momenta, lookahead, initial_gap, sampling_var)
            # O(Tmax k) memory each: keep the recently used within a budget
            while len(models) > 1 and sum(h.floats for h in models.values()) > _MODEL_FLOATS:
                models.pop(next(iter(models)))
        return models[T]

    def best_T() -> int:
        return min(seen, key=lambda T: seen[T].upper)

    count = 0

    def bound(lo: int, hi: int, target: float) -> float:
        # the mixtures of the solved horizons nearest to [lo, hi] (log scale) and of the best,
        # nearest first, until one clears the target
        nonlocal count
        keys = np.array(sorted(seen))
        near = keys[np.argsort(np.abs(np.log(keys / math.sqrt(lo * hi))), kind="stable")[:2]]
        out = seen[lo].lower if lo == hi and lo in seen else 0.0
        for T in dict.fromkeys([*(int(t) for t in near), best_T()]):
            if out >= target:
                break
            h = model(T)
            if h is not None:
                count += 1
                out = max(out, h.lower(lo, hi, S, n, m, eps))
        return out

    def target() -> float:
        return seen[best_T()].value / (1.0 + tol)

    heap: list[tuple[float, int, int]] = []
    starts = _stage_starts(steps, momenta, lookahead)
    for s, e in zip(starts, [*starts[1:], Tmax]):
        lo = max(s, 1)
        if lo <= e:
            heapq.heappush(heap, (bound(lo, e, target()), lo, e))
    done: list[float] = []
    solved = 0
    while heap:
        lb, lo, hi = heapq.heappop(heap)
        if lb >= target() or count >= max_intervals:
            done.append(lb)
            continue
        if not any(lo <= T <= hi for T in seen) and solved < max_evaluations:
            mid = (lo + hi) // 2
            seen[mid] = evaluate(mid)
            solved += 1
            pieces = [(lo, mid - 1), (mid, mid), (mid + 1, hi)]
        elif lo == hi:
            done.append(lb)  # its own dual's bound: nothing left to split
            continue
        else:
            mid = (lo + hi) // 2
            pieces = [(lo, mid), (mid + 1, hi)]
        for a, b in pieces:
            if a <= b:
                heapq.heappush(heap, (max(bound(a, b, target()), lb), a, b))
    return HorizonProof(seen[best_T()], min(done), seen, count, solved)
