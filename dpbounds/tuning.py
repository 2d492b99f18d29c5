r"""Tuning DP heavy ball and DP-NAG / DP-MASG from Kuru et al.'s bounds.

* :func:`tune_heavy_ball` -- the :math:`(\alpha,\beta,T)` minimising a heavy-ball bound on
  quadratics in :math:`\mathcal S_{\mu,L}` (Theorem 3.5's setting) **with the DP noise level that**
  :math:`T` **implies**: each step is :math:`\epsilon/T`-DP through (11)-(13), so the Laplace scale
  :math:`b=S_1/(m\epsilon_0)` grows with :math:`T` and the per-coordinate noise variance is
  :math:`\sigma_T^2=2b^2+\sigma_s^2(m,n)`. The bound used is the rigorous version of (25)
  (:func:`dpbounds.bounds.strongly_convex.heavy_ball.heavy_ball_bound_valid`, **[DERIVED]**):

  .. math:: B(\alpha,\beta,T)=\frac L2\Big(C_T^2\rho^{2T}\lVert\xi_0-\xi^\ast\rVert^2
            +d\max_{\lambda\in\{\mu,L\}}v_\lambda(\alpha,\beta;\sigma_T^2)\Big)

  with the exact transient constant :math:`C_T` (max over a grid of :math:`\lambda\in[\mu,L]`),
  :math:`v_\lambda` the exact stationary variance per direction (:math:`m(\alpha,\beta)` is their
  sum),
  and the worst spectrum for the noise term. It is compared with Polyak's classical
  :math:`(\alpha,\beta)` and with the paper's Section-5 choice
  (:math:`\alpha=1/L`, :math:`\beta=(1-\sqrt{\alpha\mu})/(1+\sqrt{\alpha\mu})`), each at its best
  :math:`T`.
* :func:`tune_nesterov` -- Remark 4.1's horizon for DP-NAG or DP-MASG with the optimal noise
  schedule of Prop. 4.2 (or the numeric solution of (30) when :math:`m<n`), against the uniform
  budget :math:`\epsilon/T`.

Both return data (dataclasses with ``rows()``/``table()``) in the PEPit spirit: each row gives
the bound (theory value) beside an exactly computed value (the expected error on a worst-case
quadratic, propagated exactly -- no sampling).

**Horizon search.** The best :math:`T\le T_{\max}` of a heavy-ball :math:`(\alpha,\beta)` is
found without evaluating every horizon: :math:`\lVert M^T\rVert_2` has a closed form at any
:math:`T` (:mod:`dpbounds.bounds.strongly_convex._lucas`), the noise term increases in
:math:`T` and the transient is at least :math:`\rho^{2T}`, so intervals of horizons whose lower
bound exceeds the best value found are discarded (branch and bound). The result is the exact
minimiser over every horizon (checked against the sequential products of
:func:`naive_transient_sq`), in
memory independent of :math:`T_{\max}`; where that lower bound is weak (very ill-conditioned
problems) a work limit applies and the row reports its proven ``horizon_gap``. DP-NAG's (32)
uses prefix sums (:func:`~dpbounds.bounds.strongly_convex.noise_allocation.select_horizon`,
:math:`O(T_{\max})`).

Example
-------
>>> from dpbounds.tuning import tune_heavy_ball
>>> res = tune_heavy_ball(mu=0.02, L=5.1, d=20, n=10**5, epsilon=1.0, sensitivity=40.0,
...                       initial_gap=10.0, max_horizon=300, grid=12)
>>> res.tuned.bound <= res.classical.bound
True
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from dpbounds._progress import progress_bar
from dpbounds._validation import check_choice, check_int, check_nonnegative, check_positive
from dpbounds.bounds.strongly_convex._lucas import CompanionPowers, companion_spectral_radius
from dpbounds.bounds.strongly_convex.heavy_ball import (
    SOURCE_STATIONARY,
    classical_heavy_ball_parameters,
    heavy_ball_expected_error,
    heavy_ball_rate,
)
from dpbounds.bounds.strongly_convex.nesterov import (
    error_weights,
    masg_schedule,
    nesterov_final_error_quadratic,
    nesterov_schedule,
    subsampling_variance,
    unrolled_bound,
)
from dpbounds.bounds.strongly_convex.noise_allocation import (
    LOG_FLOAT_MAX,
    MAX_HORIZON,
    SOURCE_REMARK41,
    check_max_horizon,
    optimal_noise,
    optimal_noise_closed_form,
    select_horizon,
    select_horizon_subsampled,
    uniform_noise,
)
from dpbounds.privacy.laplace import deamplify_without_replacement
from dpbounds.provenance import Source

__all__ = [
    "HeavyBallChoice",
    "HeavyBallTuning",
    "NesterovChoice",
    "NesterovTuning",
    "heavy_ball_dp_bound",
    "tune_heavy_ball",
    "tune_nesterov",
]

MECHANISMS = ("laplace",)
#: most entries :func:`heavy_ball_dp_bound` builds (1 GiB of float64)
MAX_BOUND_ARRAY = 1 << 27


def _noise_variance(T: Any, sensitivity: float, n: int, m: int, epsilon: float) -> np.ndarray:
    """Per-coordinate gradient-noise variance 2 b_T^2 + sigma_s^2 at horizon T (eqs. 12-13, 21).

    ``inf`` where it exceeds the float64 range (horizons the tuners never select; they call
    :func:`_check_noise_fits` first).
    """
    T = np.asarray(T, dtype=float)
    eps0 = np.asarray(deamplify_without_replacement(epsilon / T, m, n))  # eq. (13) for every T
    with np.errstate(over="ignore", divide="ignore"):
        b = sensitivity / (m * eps0)
        return 2.0 * b * b + subsampling_variance(sensitivity, n, m)


def _check_noise_fits(sensitivity: float, n: int, m: int, epsilon: float, d: int) -> None:
    """ValueError naming ``epsilon`` when even one step's noise, ``2 d b_1^2``, overflows float64.

    ``T = 1`` spends the whole budget in one step: the least noise any horizon has. Beyond
    this every bound is ``inf`` (a bound of 1e308 says nothing either); say why instead.
    """
    eps1 = float(deamplify_without_replacement(epsilon, m, n))  # eq. (13) with T = 1
    log_b = math.log(sensitivity) - math.log(m) - (math.log(eps1) if eps1 > 0 else -math.inf)
    log_noise = math.log(2.0 * d) + 2.0 * log_b
    if not log_noise <= LOG_FLOAT_MAX:
        raise ValueError(
            f"epsilon={epsilon!r} is too small for this problem: even with T = 1 the DP noise "
            f"term 2 d b^2 (b = S_1/(m eps_0), Laplace scale) would be exp({log_noise:.6g}), "
            "beyond the float64 range (about 1.8e308); use a larger epsilon")


def naive_transient_sq(alpha: np.ndarray, beta: np.ndarray, lams: np.ndarray,
                       Tmax: int) -> np.ndarray:
    """max_lambda ||T_lambda^t||_2^2 for t = 1..Tmax by sequential 2x2 products; (k,) -> (k, Tmax).

    The reference implementation (the one the tuner used before the closed form of
    :mod:`dpbounds.bounds.strongly_convex._lucas`): O(Tmax) Python steps and O(k Tmax) memory.
    Kept as the oracle of the tests and of ``bench/bench_horizon.py``.
    """
    k = alpha.size
    M = np.zeros((k, lams.size, 2, 2))
    M[..., 0, 0] = 1.0 + beta[:, None] - alpha[:, None] * lams[None, :]
    M[..., 0, 1] = -beta[:, None]
    M[..., 1, 0] = 1.0
    P = np.broadcast_to(np.eye(2), M.shape).copy()
    out = np.empty((k, Tmax))
    for t in range(Tmax):
        P = M @ P
        # spectral norm^2 of a 2x2 = largest eigenvalue of P^T P (closed form)
        a, b, c, d = P[..., 0, 0], P[..., 0, 1], P[..., 1, 0], P[..., 1, 1]
        fro = a * a + b * b + c * c + d * d
        det = a * d - b * c
        out[:, t] = np.max(0.5 * (fro + np.sqrt(np.maximum(fro * fro - 4 * det * det, 0.0))),
                           axis=1)
    return out


class _HeavyBallObjective:
    r"""The tuning objective :math:`B(\alpha,\beta,T)` of a set of stable :math:`(\alpha,\beta)`.

    ``values(p, T)`` evaluates :math:`B` at pairs (point index, horizon) in :math:`O(1)` each
    (closed-form matrix powers,
    :func:`~dpbounds.bounds.strongly_convex._lucas.companion_power_norm_sq`), and
    ``lower(p, lo, hi)`` bounds :math:`B` from below on :math:`T\in[lo,hi]`:
    :math:`\lVert M_\lambda^T\rVert_2\ge\rho_\lambda^T` (the spectral radius) decreases in
    :math:`T` and the noise term increases in :math:`T` (each step gets
    :math:`\epsilon/T`).
    """

    def __init__(self, alpha, beta, mu, L, lams, *, d, n, m, epsilon, sensitivity, dist_sq):
        a = 1.0 + beta[:, None] - alpha[:, None] * lams[None, :]
        b = np.broadcast_to(np.asarray(beta, dtype=float)[:, None], a.shape)
        self.n_lambda = lams.size
        self.powers = CompanionPowers(a, b)  # matrix (point p, lambda j) is p * n_lambda + j
        self.rho = np.max(companion_spectral_radius(a, b), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.vmax = np.maximum(_v(alpha, beta, mu), _v(alpha, beta, L))  # per sigma^2
        self.L, self.d, self.dist_sq = L, d, dist_sq
        self._noise = (sensitivity, n, m, epsilon)

    def noise_variance(self, T: np.ndarray) -> np.ndarray:
        return _noise_variance(T, *self._noise)

    def values(self, p: np.ndarray, T: np.ndarray) -> np.ndarray:
        out = np.empty(p.size)
        nl = self.n_lambda
        step = max(1, _BATCH // nl)
        for i in range(0, p.size, step):  # bounded memory: at most _BATCH matrix powers at once
            pi, Ti = p[i:i + step], T[i:i + step]
            idx = pi[:, None] * nl + np.arange(nl)[None, :]
            ns = np.max(self.powers.norm_sq(idx, Ti[:, None]), axis=1)
            noise = self.d * self.vmax[pi] * self.noise_variance(Ti)
            with np.errstate(over="ignore", invalid="ignore"):
                out[i:i + step] = 0.5 * self.L * (ns * 2.0 * self.dist_sq + noise)
        return out

    def lower(self, p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            trans = np.exp(2.0 * hi * np.log(self.rho[p]))  # rho = 0: exactly 0
            return 0.5 * self.L * (trans * 2.0 * self.dist_sq
                                   + self.d * self.vmax[p] * self.noise_variance(lo))


def _v(a: np.ndarray, b: np.ndarray, lam: float) -> np.ndarray:
    return a * (1 + b) / ((1 - b) * lam * (2 + 2 * b - a * lam))


_LOG_FLOAT_MAX_STEP = 700.0  # log(alpha) beyond this would overflow exp
_BATCH = 1 << 18      # matrix powers evaluated per vectorised call
_KNOTS = 48           # first evaluation: geometric knots over 1..Tmax
_SPLIT = 16           # a surviving interval is split into this many parts
_EXHAUST = 64         # intervals this short are evaluated point by point
_PRUNE_SLACK = 1e-9   # a lower bound must exceed the best by this (relative) to prune
# work limits ((alpha, beta, T) evaluations, ~50k per second): only reached where the lower bound
# is weak over a huge range of T (e.g. L/mu = 1e12); the result then carries its proven gap
_GRID_BUDGET = 400_000      # the coarse (alpha, beta) grid, jointly
_REFINE_BUDGET = 5_000      # each Nelder-Mead evaluation
_CHOICE_BUDGET = 100_000    # each reported choice (tuned, Polyak, paper)


class HorizonSearch(NamedTuple):
    """Result of :func:`_minimise_over_horizon` (arrays over the points)."""

    best_T: np.ndarray
    best: np.ndarray
    #: proven relative gap: best <= (1 + gap) * min over all T (0: exact; inf: no certificate)
    gap: np.ndarray
    evaluations: int


def _minimise_over_horizon(objective: Any, k: int, Tmax: int, *, joint: bool,
                           max_evaluations: int | None = None, progress: bool = False,
                           desc: str = "horizon search") -> HorizonSearch:
    r""":math:`\min_{1\le T\le T_{\max}}` of an objective for ``k`` points (branch and bound).

    ``objective.values(p, T)`` gives the objective at (point, horizon) pairs and
    ``objective.lower(p, lo, hi)`` a lower bound on :math:`[lo,hi]`. The horizons are first
    evaluated at geometric knots; an interval between evaluated horizons is dropped when its
    lower bound exceeds the best value found (of its point, or of all points with
    ``joint=True``, which is all a grid search needs), otherwise split and searched again, and
    evaluated point by point once short. The result equals ``argmin`` over every horizon (ties
    to the smaller :math:`T`), in :math:`O(T^\ast)` evaluations per point in practice and
    :math:`O(1)` memory in :math:`T_{\max}`. Where the lower bound is weak (a bound that is
    nearly flat in :math:`T` over a huge range, e.g. :math:`L/\mu=10^{12}`) the work is capped
    at ``max_evaluations``; ``gap`` then says how far from the minimum the result can be.

    Returns
    -------
    HorizonSearch (with ``joint=True`` only the best point's entries are minima; the others
    are upper bounds).
    """
    knots = np.unique(np.round(np.geomspace(1, Tmax, min(_KNOTS, Tmax))).astype(np.int64))
    P = np.repeat(np.arange(k), knots.size)
    T = np.tile(knots, k)
    vals = objective.values(P, T).reshape(k, knots.size)
    vals = np.where(np.isnan(vals), np.inf, vals)
    j = np.argmin(vals, axis=1)
    best_T, best = knots[j].copy(), vals[np.arange(k), j].copy()
    used = int(P.size)
    gaps = (knots[1:] - knots[:-1]) > 1
    lo0, hi0 = knots[:-1][gaps] + 1, knots[1:][gaps] - 1
    stack = [(np.repeat(np.arange(k), lo0.size), np.tile(lo0, k), np.tile(hi0, k))]
    bar = progress_bar(progress, total=k * Tmax, desc=desc, unit="T", unit_scale=True)
    bar.update(k * knots.size)

    def record(p: np.ndarray, t: np.ndarray, v: np.ndarray) -> None:
        v = np.where(np.isnan(v), np.inf, v)
        order = np.lexsort((t, v, p))  # per point: smallest value, then smallest T
        p, t, v = p[order], t[order], v[order]
        first = np.ones(p.size, dtype=bool)
        first[1:] = p[1:] != p[:-1]
        p, t, v = p[first], t[first], v[first]
        better = (v < best[p]) | ((v == best[p]) & (t < best_T[p]))
        best[p[better]], best_T[p[better]] = v[better], t[better]

    gap = np.zeros(k)
    while stack:
        sp, slo, shi = stack.pop()
        if sp.size > _BATCH // _SPLIT:  # bounded work per round: put the rest back
            stack.append((sp[_BATCH // _SPLIT:], slo[_BATCH // _SPLIT:], shi[_BATCH // _SPLIT:]))
            sp, slo, shi = sp[:_BATCH // _SPLIT], slo[:_BATCH // _SPLIT], shi[:_BATCH // _SPLIT]
        threshold = np.full(sp.size, np.min(best)) if joint else best[sp]
        lb = objective.lower(sp, slo, shi)
        keep = lb * (1.0 - _PRUNE_SLACK) <= threshold
        bar.update(int(np.sum(shi[~keep] - slo[~keep] + 1)))
        sp, slo, shi = sp[keep], slo[keep], shi[keep]
        if sp.size == 0:
            continue
        length = shi - slo + 1
        short = length <= _EXHAUST
        cost = int(np.sum(length[short])) + int(np.sum(~short)) * (_SPLIT + 1)
        if max_evaluations is not None and used + cost > max_evaluations:
            stack.append((sp, slo, shi))  # out of work: certify what is left by its bound
            gap = _remaining_gap(objective, stack, best, joint)
            break
        used += cost
        if np.any(short):  # every horizon of the short intervals
            n_each = length[short]
            p_all = np.repeat(sp[short], n_each)
            offsets = np.arange(n_each.sum()) - np.repeat(np.cumsum(n_each) - n_each, n_each)
            t_all = np.repeat(slo[short], n_each) + offsets
            record(p_all, t_all, objective.values(p_all, t_all))
            bar.update(int(n_each.sum()))
        long_ = ~short
        if np.any(long_):  # split: evaluate _SPLIT + 1 inner knots, keep the gaps between them
            lp, llo, lhi = sp[long_], slo[long_], shi[long_]
            frac = np.linspace(0.0, 1.0, _SPLIT + 1)
            kn = np.round(llo[:, None] + frac[None, :] * (lhi - llo)[:, None]).astype(np.int64)
            p_all = np.repeat(lp, _SPLIT + 1)
            record(p_all, kn.ravel(), objective.values(p_all, kn.ravel()))
            bar.update(int(kn.size))
            glo, ghi = kn[:, :-1] + 1, kn[:, 1:] - 1
            ok = glo <= ghi
            stack.append((np.repeat(lp, _SPLIT)[ok.ravel()], glo[ok], ghi[ok]))
    bar.close()
    return HorizonSearch(best_T, best, gap, used)


def _remaining_gap(objective: Any, stack: list, best: np.ndarray, joint: bool) -> np.ndarray:
    """best / (smallest lower bound left unexplored) - 1, per point (or of the best point)."""
    lowest = np.full(best.size, np.inf)
    for sp, slo, shi in stack:
        np.minimum.at(lowest, sp, objective.lower(sp, slo, shi))
    if joint:
        lowest[:] = np.min(lowest)
        ref = np.full(best.size, np.min(best))
    else:
        ref = best
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gap = np.where(lowest >= ref, 0.0, ref / lowest - 1.0)
    return np.where(np.isnan(gap), np.inf, gap)


def heavy_ball_dp_bound(
    alpha: Any, beta: Any, mu: float, L: float, *, d: int, n: int, epsilon: float,
    sensitivity: float, initial_distance_sq: float, max_horizon: int, m: int | None = None,
    n_lambda: int = 24,
) -> np.ndarray:
    r"""The tuning objective :math:`B(\alpha,\beta,T)` for :math:`T=1..T_{\max}` **[DERIVED]**.

    Returns an array of shape ``(len(alpha), max_horizon)`` (``inf`` where heavy ball is unstable
    or the value exceeds the float64 range); that array is limited to
    :data:`MAX_BOUND_ARRAY` entries (the tuner itself never builds it: it searches the horizons
    by branch and bound). ``initial_distance_sq`` is :math:`\lVert x_0-x^\ast\rVert^2`
    (:math:`x_{-1}=x_0`, so :math:`\lVert\xi_0-\xi^\ast\rVert^2` is twice it).
    """
    alpha = np.atleast_1d(check_positive("alpha", alpha)).astype(float)
    beta = np.broadcast_to(np.asarray(check_nonnegative("beta", beta), dtype=float), alpha.shape)
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    d = check_int("d", d, minimum=1)
    n = check_int("n", n, minimum=1)
    m = n if m is None else check_int("m", m, minimum=1, maximum=n)
    epsilon = float(check_positive("epsilon", epsilon))
    sensitivity = float(check_positive("sensitivity", sensitivity))
    initial_distance_sq = float(check_nonnegative("initial_distance_sq", initial_distance_sq))
    Tmax = check_int("max_horizon", max_horizon, minimum=1)
    if alpha.size * Tmax > MAX_BOUND_ARRAY:
        raise ValueError(f"max_horizon={Tmax} with {alpha.size} (alpha, beta) points needs "
                         f"{alpha.size * Tmax} values, more than {MAX_BOUND_ARRAY}; use "
                         "tune_heavy_ball (it searches the horizons without this array)")
    lams = np.linspace(mu, L, n_lambda)
    stable = beta < 1
    if np.any(stable):
        stable[stable] = np.asarray(heavy_ball_rate(alpha[stable], beta[stable], mu, L)) < 1
    out = np.full((alpha.size, Tmax), np.inf)
    if not np.any(stable):
        return out
    obj = _HeavyBallObjective(alpha[stable], beta[stable], mu, L, lams, d=d, n=n, m=m,
                              epsilon=epsilon, sensitivity=sensitivity,
                              dist_sq=initial_distance_sq)
    k = int(np.sum(stable))
    T = np.arange(1, Tmax + 1)
    out[stable] = obj.values(np.repeat(np.arange(k), Tmax), np.tile(T, k)).reshape(k, Tmax)
    return out


@dataclass(frozen=True)
class HeavyBallChoice:
    """One (alpha, beta, T) with its bound and the exactly computed error (PEPit style)."""

    label: str
    alpha: float
    beta: float
    horizon: int
    rate: float
    bound: float
    computed: float
    noise_scale: float
    #: proven: ``bound <= (1 + horizon_gap) * min_T B(alpha, beta, T)`` (0: T is the best horizon)
    horizon_gap: float = 0.0

    def row(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class HeavyBallTuning:
    r"""Result of :func:`tune_heavy_ball`.

    ``tuned`` minimises the bound; ``classical`` is Polyak's :math:`(\alpha,\beta)` and
    ``paper_section5`` the paper's DP-HB choice, each at its own best :math:`T`.
    """

    tuned: HeavyBallChoice
    classical: HeavyBallChoice
    paper_section5: HeavyBallChoice
    setting: dict
    source: Source = SOURCE_STATIONARY

    @property
    def improvement(self) -> float:
        """classical bound / tuned bound (``inf`` when the classical choice has no certificate)."""
        return self.classical.bound / self.tuned.bound

    def rows(self) -> list[dict]:
        return [c.row() for c in (self.tuned, self.classical, self.paper_section5)]

    def table(self) -> str:
        head = (f"{'choice':<36}{'alpha':>10}{'beta':>9}{'T':>7}{'rho':>9}{'bound':>12}"
                f"{'computed':>12}{'b_T':>11}")
        lines = [head, "-" * len(head)]
        for c in (self.tuned, self.classical, self.paper_section5):
            lines.append(f"{c.label:<36}{c.alpha:>10.4g}{c.beta:>9.4f}{c.horizon:>7d}"
                         f"{c.rate:>9.4f}{c.bound:>12.4e}{c.computed:>12.4e}{c.noise_scale:>11.3e}")
        def ratio(c: HeavyBallChoice) -> str:
            if not math.isfinite(c.bound):
                return "no certificate for it"
            return f"{c.bound / self.tuned.bound:.3g}x"

        lines.append(f"bound improvement over Polyak: {ratio(self.classical)}; over the paper's "
                     f"Section-5 DP-HB: {ratio(self.paper_section5)}")
        for c in (self.tuned, self.classical, self.paper_section5):
            if c.horizon_gap > 0:  # the work limit of the horizon search was reached
                within = (f"within a factor {1 + c.horizon_gap:.4g} of"
                          if math.isfinite(c.horizon_gap) else "not certified to be")
                lines.append(f"{c.label}: T is {within} the best horizon for its (alpha, beta) "
                             "(the horizon search hit its work limit)")
        if self.setting.get("function_class") == "smooth_strongly_convex":
            lines.append("bound = Prop. 3.4 certificate + derived noise term, all of S_mu,L "
                         "[DERIVED]; computed = exact E[F(x_T)]-F* on diag(mu, L, ...)")
        else:
            lines.append("bound = rigorous (25) with exact C_T [DERIVED]; computed = exact "
                         "E[F(x_T)]-F* on diag(mu, L, ...), ||x0-x*||^2 = 2 E0 / mu")
        return "\n".join(lines)


def _spectrum(mu: float, L: float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The worst-case quadratic diag(mu, L, ...): its two eigenvalues and their multiplicities.

    (Two numbers instead of a length-``d`` array: ``d`` may be 10^9.)
    """
    return np.array([mu, L]), np.array([d // 2, d - d // 2], dtype=float)


def _hb_expected_error(T: int, a: float, b: float, mu: float, L: float, d: int, s2: float,
                       dist_sq: float) -> float:
    """Exact E[F(x_T)] - F* on diag(mu, L, ...), ||x0 - x*||^2 = dist_sq spread evenly."""
    lams, mult = _spectrum(mu, L, d)
    e0 = math.sqrt(dist_sq / d)
    return float(sum(w * heavy_ball_expected_error(T, a, b, [lam], s2, e0)[1]
                     for lam, w in zip(lams, mult) if w > 0))


def _hb_search(alpha: Any, beta: Any, mu: float, L: float, d: int, n: int, m: int, eps: float,
               S: float, dist_sq: float, Tmax: int, *, joint: bool, budget: int,
               progress: bool = False, n_lambda: int = 24
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best horizon, bound and proven gap of each (alpha, beta) (bound ``inf``: unstable)."""
    alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
    beta = np.broadcast_to(np.asarray(beta, dtype=float), alpha.shape)
    best_T = np.ones(alpha.size, dtype=np.int64)
    best = np.full(alpha.size, np.inf)
    gap = np.zeros(alpha.size)
    stable = (alpha > 0) & (beta >= 0) & (beta < 1)  # beta can round to 1 when L/mu ~ 1e32
    if np.any(stable):
        stable[stable] = np.asarray(heavy_ball_rate(alpha[stable], beta[stable], mu, L)) < 1
    if np.any(stable):
        obj = _HeavyBallObjective(alpha[stable], beta[stable], mu, L,
                                  np.linspace(mu, L, n_lambda), d=d, n=n, m=m, epsilon=eps,
                                  sensitivity=S, dist_sq=dist_sq)
        res = _minimise_over_horizon(obj, int(np.sum(stable)), Tmax, joint=joint,
                                     max_evaluations=budget, progress=progress,
                                     desc=f"horizons of {int(np.sum(stable))} (alpha, beta)")
        best_T[stable], best[stable], gap[stable] = res.best_T, res.best, res.gap
    return best_T, best, gap


def _hb_choice(label, a, b, mu, L, d, n, m, eps, S, dist_sq, Tmax) -> HeavyBallChoice:
    Ts, vals, gaps = _hb_search(a, b, mu, L, d, n, m, eps, S, dist_sq, Tmax, joint=False,
                                budget=_CHOICE_BUDGET)
    T, val = int(Ts[0]), float(vals[0])
    s2 = float(_noise_variance(np.asarray(T), S, n, m, eps))
    computed = (_hb_expected_error(T, a, b, mu, L, d, s2, dist_sq) if np.isfinite(val)
                else np.inf)
    rho = float(heavy_ball_rate(a, b, mu, L)) if 0 <= b < 1 else 1.0
    scale = math.sqrt(max(s2 - subsampling_variance(S, n, m), 0.0) / 2.0)
    return HeavyBallChoice(label, float(a), float(b), T, rho, val, float(computed), scale,
                           float(gaps[0]))


def tune_heavy_ball(
    mu: float, L: float, *, d: int, n: int, epsilon: float, sensitivity: float,
    initial_gap: float | None = None, initial_distance_sq: float | None = None,
    m: int | None = None, mechanism: str = "laplace", max_horizon: int = 1000, grid: int = 30,
    function_class: str = "quadratic", progress: bool = False,
) -> HeavyBallTuning:
    r"""The :math:`(\alpha,\beta,T)` minimising the DP heavy-ball bound (see module docstring).

    Parameters
    ----------
    mu, L, d, n, epsilon, sensitivity :
        Problem class, dimension, data-set size, total budget (pure :math:`\epsilon`-DP, basic
        composition, replace-one) and :math:`L_1` sensitivity :math:`S_1`.
    initial_gap, initial_distance_sq :
        :math:`F(x_0)-F^\ast` (the paper's :math:`E_0`; converted to
        :math:`\lVert x_0-x^\ast\rVert^2\le2E_0/\mu`) or the squared distance directly.
    m :
        Batch size (default ``n``: no subsampling, Theorem 3.5's setting).
    mechanism :
        ``"laplace"`` (the paper's).
    max_horizon, grid :
        Largest :math:`T` (at most
        :data:`~dpbounds.bounds.strongly_convex.noise_allocation.MAX_HORIZON`) and the size of
        the coarse :math:`(\alpha,\beta)` grid before the local refinement (scipy
        Nelder-Mead on :math:`(\log\alpha,\mathrm{logit}\,\beta)`). Every horizon up to
        ``max_horizon`` is searched by branch and bound (module docstring), so the cost hardly
        depends on ``max_horizon``.
    function_class : {"quadratic", "smooth_strongly_convex"}
        ``"quadratic"``: the rigorous (25) (Theorem 3.5's class). ``"smooth_strongly_convex"``:
        all of :math:`\mathcal S_{\mu,L}` through verified Prop. 3.4 certificates and the derived
        noise bound :func:`~dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound`, minimised over
        :math:`T` and over a few certified rates above the minimal one (a larger
        :math:`\rho` can come with a much smaller :math:`P`); grid search only (``grid`` is
        capped at 12), then a local 5x5 refinement.
    progress :
        Show tqdm bars on stderr for the long steps (only on a terminal, after 2 s).
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    d = check_int("d", d, minimum=1)
    n = check_int("n", n, minimum=1)
    m = n if m is None else check_int("m", m, minimum=1, maximum=n)
    eps = float(check_positive("epsilon", epsilon))
    S = float(check_positive("sensitivity", sensitivity))
    if (initial_gap is None) == (initial_distance_sq is None):
        raise ValueError("give exactly one of initial_gap or initial_distance_sq")
    dist_sq = (2.0 * float(check_nonnegative("initial_gap", initial_gap)) / mu
               if initial_gap is not None
               else float(check_nonnegative("initial_distance_sq", initial_distance_sq)))
    Tmax = check_max_horizon(max_horizon)
    grid = check_int("grid", grid, minimum=3)
    _check_noise_fits(S, n, m, eps, d)
    if function_class == "smooth_strongly_convex":
        return _tune_hb_lmi(mu, L, d, n, m, eps, S, dist_sq, Tmax, min(grid, 12), mechanism,
                            initial_gap if initial_gap is not None else 0.5 * L * dist_sq,
                            progress)
    if function_class != "quadratic":
        raise ValueError("function_class must be 'quadratic' or 'smooth_strongly_convex', got "
                         f"{function_class!r}")

    # coarse grid in (log alpha, beta): only the best (alpha, beta, T) of the grid is needed
    A, Bt = np.meshgrid(np.geomspace(1e-3 / L, 1.99 / L, grid), np.linspace(0.0, 0.995, grid))
    _, best, _ = _hb_search(A.ravel(), Bt.ravel(), mu, L, d, n, m, eps, S, dist_sq, Tmax,
                            joint=True, budget=_GRID_BUDGET, progress=progress)
    k = int(np.argmin(best))
    if not np.isfinite(best[k]):  # the grid has stable points: only the noise can overflow
        raise ValueError(f"epsilon={eps!r} is too small for this problem: the DP heavy-ball "
                         "bound exceeds the float64 range at every (alpha, beta, T)")
    a0, b0 = A.ravel()[k], Bt.ravel()[k]
    bar = progress_bar(progress, total=200, desc="local refinement (Nelder-Mead)")

    def objective(z: np.ndarray) -> float:
        bar.update()
        if not z[0] < _LOG_FLOAT_MAX_STEP:  # a step this large is unstable anyway
            return 1e300
        a = math.exp(z[0])
        b = float(expit(z[1]))
        if not (a > 0 and b < 1):  # beta rounded to 1 (or alpha to 0): no rate below 1
            return 1e300
        v = float(_hb_search(a, b, mu, L, d, n, m, eps, S, dist_sq, Tmax, joint=False,
                             budget=_REFINE_BUDGET)[1][0])
        return math.log(v) if np.isfinite(v) and v > 0 else 1e300

    b0c = min(max(b0, 1e-4), 1 - 1e-4)
    res = minimize(objective, [math.log(a0), math.log(b0c / (1 - b0c))], method="Nelder-Mead",
                   options={"xatol": 1e-4, "fatol": 1e-6, "maxiter": 200})
    bar.close()
    args = (mu, L, d, n, m, eps, S, dist_sq, Tmax)
    a_c, b_c = classical_heavy_ball_parameters(mu, L)
    classical = _hb_choice("Polyak (best T)", a_c, b_c, *args)
    a_p = 1.0 / L
    b_p = (1 - math.sqrt(a_p * mu)) / (1 + math.sqrt(a_p * mu))
    paper = _hb_choice("paper Sec.5 (best T)", a_p, b_p, *args)
    # the search result, or a starting point it did not improve on (the grid point, or
    # Polyak's / the paper's choice: e.g. mu = L, where alpha = 1/L, beta = 0 is exact in one
    # step and lies on no grid): "tuned" is never worse than the choices it is compared with
    label = "tuned (alpha,beta,T)"
    candidates = [(a0, b0)]
    if res.x[0] < _LOG_FLOAT_MAX_STEP and expit(res.x[1]) < 1 and math.exp(res.x[0]) > 0:
        candidates.insert(0, (math.exp(res.x[0]), float(expit(res.x[1]))))
    tuned = min((_hb_choice(label, a, b, *args) for a, b in candidates),
                key=lambda c: c.bound)
    for c in (classical, paper):
        if c.bound < tuned.bound:
            tuned = replace(c, label=label)
    setting = {"mu": mu, "L": L, "d": d, "n": n, "m": m, "epsilon": eps, "sensitivity": S,
               "initial_distance_sq": dist_sq, "max_horizon": Tmax, "mechanism": mechanism,
               "function_class": "quadratic"}
    return HeavyBallTuning(tuned, classical, paper, setting)


# ----------------------------------------------------------------------------- LMI class
_RHO_OFFSETS = (0.002, 0.01, 0.04, 0.15)


class _LMICurves:
    """The derived LMI bound of a few certified rates as horizon objectives (see _lmi_best).

    ``A rho^(2T) + B (1 - rho^(2T)) E||w_T||^2``: the first term decreases and the second
    increases in ``T`` (the noise grows with ``T``), which gives the lower bound on an interval.
    """

    def __init__(self, A, B, rho, noise):
        self.A, self.B, self.rho, self.noise = (np.asarray(A), np.asarray(B), np.asarray(rho),
                                                noise)

    def _curve(self, p, t_decay, t_noise):
        with np.errstate(under="ignore", divide="ignore"):
            r2 = np.exp(2.0 * t_decay * np.log(self.rho[p]))
            r2n = np.exp(2.0 * t_noise * np.log(self.rho[p]))
        return self.A[p] * r2 + self.B[p] * (1.0 - r2n) * self.noise(t_noise)

    def values(self, p, T):
        return self._curve(p, T, T)

    def lower(self, p, lo, hi):
        return self._curve(p, hi, lo)


def _lmi_best(mu, L, a, b, noise, Tmax, dist_sq, gap0, lmi):
    """Best derived LMI bound over T and a few certified rates: (bound, T, rho) or None."""
    from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_certificate_at, heavy_ball_lmi_rate

    base = heavy_ball_lmi_rate(mu, L, a, b, tol=1e-4, lmi=lmi, polish=False)
    if not base.certified:
        return None
    A, B, rhos = [], [], []
    for off in _RHO_OFFSETS:
        rho = base.rho + (1.0 - base.rho) * off
        cert = heavy_ball_lmi_certificate_at(mu, L, a, b, rho, lmi=lmi)
        if not (cert.certified and cert.verified):
            continue
        v0 = float(np.sum(cert.P)) * dist_sq + cert.c * gap0  # x_{-1} = x_0
        coef = a * a * cert.P[0, 0] / cert.c + L * a * a / 2.0
        A.append(v0 / cert.c)
        B.append(coef / (1.0 - rho * rho))
        rhos.append(rho)
    if not rhos:
        return None
    res = _minimise_over_horizon(_LMICurves(A, B, rhos, noise), len(rhos), Tmax, joint=True,
                                 max_evaluations=_CHOICE_BUDGET)
    j = int(np.argmin(res.best))
    return float(res.best[j]), int(res.best_T[j]), rhos[j]


def _tune_hb_lmi(mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, mechanism, gap0, progress):
    from dpbounds.lmi.heavy_ball_lmi import HeavyBallLMI

    lmi = HeavyBallLMI(backend="clarabel")
    s2s = subsampling_variance(S, n, m)

    def noise(T):  # E||w_T||^2 = 2 d b_T^2 + sigma_s^2
        return d * (_noise_variance(T, S, n, m, eps) - s2s) + s2s

    def evaluate(a, b):
        return _lmi_best(mu, L, a, b, noise, Tmax, dist_sq, gap0, lmi)

    la = np.linspace(math.log(1e-2 / L), math.log(1.5 / L), grid)
    bs = 1.0 - np.geomspace(1.0, 0.01, grid)  # beta in [0, 0.99], dense near 1
    results = {}
    with progress_bar(progress, total=grid * grid + 25, desc="LMI certificates") as bar:
        for x in la:
            for b in bs:
                results[(x, b)] = evaluate(math.exp(x), b)
                bar.update()
    found = {k: v for k, v in results.items() if v is not None}
    if not found:
        raise ValueError("no (alpha, beta) on the grid has a Prop. 3.4 certificate")
    (x0, b0), _ = min(found.items(), key=lambda kv: kv[1][0])
    hx = la[1] - la[0]
    lb0 = math.log(max(1.0 - b0, 1e-3))  # refine beta on the log(1 - beta) scale
    hb = math.log(1.0 / 0.01) / (grid - 1)
    for x in np.linspace(x0 - hx, x0 + hx, 5):
        for b in np.clip(1.0 - np.exp(np.linspace(lb0 - hb, lb0 + hb, 5)), 0.0, 0.995):
            r = evaluate(math.exp(x), float(b))
            if r is not None:
                found[(x, float(b))] = r
    (xb, bb), (val, Tb, rho) = min(found.items(), key=lambda kv: kv[1][0])

    def choice(label, a, b, res):
        if res is None:
            return HeavyBallChoice(label + " [no certificate]", float(a), float(b), 0,
                                   float("nan"), float("inf"), float("nan"), float("nan"))
        val, Tb, rho = res
        s2 = float(_noise_variance(np.asarray(Tb), S, n, m, eps))
        comp = _hb_expected_error(Tb, a, b, mu, L, d, s2, dist_sq)
        scale = math.sqrt(max(s2 - s2s, 0.0) / 2.0)
        return HeavyBallChoice(label, float(a), float(b), int(Tb), float(rho), float(val),
                               float(comp), scale)

    tuned = choice("tuned (alpha,beta,T)", math.exp(xb), bb, (val, Tb, rho))
    a_c, b_c = classical_heavy_ball_parameters(mu, L)
    classical = choice("Polyak (best T)", a_c, b_c, evaluate(a_c, b_c))
    a_p = 1.0 / L
    b_p = (1 - math.sqrt(a_p * mu)) / (1 + math.sqrt(a_p * mu))
    paper = choice("paper Sec.5 (best T)", a_p, b_p, evaluate(a_p, b_p))
    setting = {"mu": mu, "L": L, "d": d, "n": n, "m": m, "epsilon": eps, "sensitivity": S,
               "initial_distance_sq": dist_sq, "initial_gap": gap0, "max_horizon": Tmax,
               "mechanism": mechanism, "function_class": "smooth_strongly_convex"}
    return HeavyBallTuning(tuned, classical, paper, setting)


# ----------------------------------------------------------------------------- Nesterov
@dataclass(frozen=True)
class NesterovChoice:
    """One DP-NAG / DP-MASG configuration with its bound and the exactly computed error."""

    label: str
    method: str
    horizon: int
    allocation: str
    bound: float
    computed: float
    epsilons: np.ndarray = field(repr=False)
    scales: np.ndarray = field(repr=False)

    def row(self) -> dict:
        return {"label": self.label, "method": self.method, "horizon": self.horizon,
                "allocation": self.allocation, "bound": self.bound, "computed": self.computed}


@dataclass(frozen=True)
class NesterovTuning:
    """Result of :func:`tune_nesterov`: tuned rows and the uniform-budget baselines."""

    choices: tuple[NesterovChoice, ...]
    setting: dict
    source: Source = SOURCE_REMARK41

    def rows(self) -> list[dict]:
        return [c.row() for c in self.choices]

    def table(self) -> str:
        head = f"{'choice':<30}{'T':>6}  {'allocation':<26}{'bound':>12}{'computed':>12}"
        lines = [head, "-" * len(head)]
        for c in self.choices:
            lines.append(f"{c.label:<30}{c.horizon:>6d}  {c.allocation:<26}{c.bound:>12.4e}"
                         f"{c.computed:>12.4e}")
        lines.append("bound = (29)/(34) with E_0 = initial gap; computed = exact E[F(x_T)]-F* of "
                     "the same run (NAG, or MASG with momentum restarts) on a quadratic with "
                     "eigenvalues {mu, L}")
        return "\n".join(lines)


def _nag_choice(label, method, sched, mu, L, d, n, m, eps, S, E0, allocation) -> NesterovChoice:
    w = error_weights(sched, mu, L)
    if allocation == "uniform":
        al = uniform_noise(w, S, n, m, eps)
    elif m == n:
        al = optimal_noise_closed_form(w, S, n, eps)
    else:
        al = optimal_noise(w, S, n, m, eps)
    s2 = subsampling_variance(S, n, m)
    bound = unrolled_bound(w, E0, None, d, subsampling_var=s2, log_scales=al.log_scales)
    lams, mult = _spectrum(mu, L, d)
    e0 = math.sqrt(2.0 * E0 / float(np.sum(mult * lams)))  # F(x0) - F* = E0 exactly
    # per-step variance 2 b_t^2 + sigma_s^2 / d in log-space: a step the optimum gives almost
    # no budget has a scale beyond float64, yet its share of the error is tiny and exact; a
    # step with zero weight (mu alpha = 1) gets no budget (b_t = inf) and contributes 0
    log_var = np.logaddexp(math.log(2.0) + 2.0 * al.log_scales,
                           math.log(s2 / d) if s2 > 0 else -np.inf)
    # MASG as dp_masg runs it: momentum restarted at each stage change (Theorem 4.3's bound is
    # for that run; without the restart the exact error can exceed it)
    computed = nesterov_final_error_quadratic(sched, mu, lams, None, e0, multiplicities=mult,
                                              log_noise_variances=log_var,
                                              restart=method == "masg")
    if not math.isfinite(computed):
        raise ValueError(f"epsilon={eps!r} is too small for this problem: the exact error of "
                         "this run exceeds the float64 range (about 1.8e308); use a larger "
                         "epsilon")
    return NesterovChoice(label, method, sched.horizon, al.method, bound, float(computed),
                          al.epsilons, al.scales)


def tune_nesterov(
    mu: float, L: float, *, d: int, n: int, epsilon: float, sensitivity: float,
    initial_gap: float, m: int | None = None, c: float = 1.0, max_horizon: int = 1000,
    methods: tuple[str, ...] = ("nag", "masg"), reference_horizons: tuple[int, ...] = (100, 1000),
    progress: bool = False,
) -> NesterovTuning:
    r"""Remark 4.1's horizon and the optimal noise schedule for DP-NAG / DP-MASG.

    For each method: the horizon minimising (32) (:math:`m=n`; for :math:`m<n` the optimal value
    of (30) plus the subsampling term, :func:`select_horizon_subsampled`), with the optimal
    allocation, against the uniform budget at ``reference_horizons`` (the paper's grid uses
    100-1000). ``max_horizon`` is at most
    :data:`~dpbounds.bounds.strongly_convex.noise_allocation.MAX_HORIZON`; ``progress`` shows a
    tqdm bar for the subsampled search. :math:`\mu=L` with ``c = 1`` is allowed:
    :math:`\mu\alpha=1`, each step contracts the error to 0 and only the last step's noise
    counts. The "computed" error of DP-MASG is that of the run with momentum restarts
    (:func:`dpbounds.algorithms.dp_masg`'s
    default), the run Theorem 4.3 bounds.
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    d = check_int("d", d, minimum=1)
    n = check_int("n", n, minimum=1)
    m = n if m is None else check_int("m", m, minimum=1, maximum=n)
    eps = float(check_positive("epsilon", epsilon))
    S = float(check_positive("sensitivity", sensitivity))
    E0 = float(check_nonnegative("initial_gap", initial_gap))
    c = float(check_positive("c", c))
    if c > 1.0:
        raise ValueError(f"c must lie in (0, 1] (Theorems 4.1/4.3 need the step c/L <= 1/L), "
                         f"got {c!r}")
    Tmax = check_max_horizon(max_horizon)
    refs = tuple(check_int("reference_horizons", T, minimum=1, maximum=MAX_HORIZON)
                 for T in reference_horizons)
    for method in methods:
        check_choice("methods", method, ("nag", "masg"))
    _check_noise_fits(S, n, m, eps, d)
    choices = []
    for method in methods:
        if m == n:
            hc = select_horizon(mu, L, initial_error=E0, d=d, sensitivity=S, n=n, epsilon=eps,
                                max_horizon=Tmax, method=method, c=c, progress=progress)
        else:
            hc = select_horizon_subsampled(mu, L, initial_error=E0, d=d, sensitivity=S, n=n,
                                           m=m, epsilon=eps, max_horizon=Tmax,
                                           method=method, c=c, progress=progress)

        def sched_for(T: int, method: str = method):
            return (nesterov_schedule(c / L, T) if method == "nag"
                    else masg_schedule(mu, L, horizon=T, c=c))

        name = "DP-NAG" if method == "nag" else "DP-MASG"
        choices.append(_nag_choice(f"{name}-opt (Remark 4.1 T)", method, sched_for(hc.horizon),
                                   mu, L, d, n, m, eps, S, E0, "optimal"))
        for T in refs:
            choices.append(_nag_choice(f"{name} uniform eps/T", method, sched_for(T), mu, L, d,
                                       n, m, eps, S, E0, "uniform"))
            choices.append(_nag_choice(f"{name}-opt at T={T}", method, sched_for(T), mu, L, d,
                                       n, m, eps, S, E0, "optimal"))
    setting = {"mu": mu, "L": L, "d": d, "n": n, "m": m, "epsilon": eps, "sensitivity": S,
               "initial_gap": E0, "c": c, "max_horizon": Tmax}
    return NesterovTuning(tuple(choices), setting)


# ----------------------------------------------------------------------------- Figure 3 setting
def figure3_setting(m: int | None = None, *, seed: int = 1) -> dict:
    r"""Kuru et al.'s Section 5 / Figure 3 problem constants (``m = n``; Figure 4: ``m = 1000``).

    :math:`d=20`, :math:`n=10^5`, :math:`\epsilon=1`, :math:`\lambda=0.01`,
    :math:`\mu=2\lambda`, :math:`S_1=40`, :math:`E_0=10`, and :math:`L` the largest eigenvalue of
    :math:`U^\top U/n+2\lambda I` for the synthetic data (:func:`dpbounds.data.kuru_synthetic`,
    ``seed``; about 5.103, the population value being :math:`1/12+d/4+0.02`).
    """
    from dpbounds.data import kuru_synthetic

    A, _ = kuru_synthetic(n=100_000, d=20, seed=seed)
    L = float(np.linalg.eigvalsh(A.T @ A / A.shape[0] + 0.02 * np.eye(20))[-1])
    out = {"mu": 0.02, "L": L, "d": 20, "n": 100_000, "epsilon": 1.0, "sensitivity": 40.0,
           "initial_gap": 10.0}
    if m is not None:
        out["m"] = check_int("m", m, minimum=1, maximum=100_000)
    return out


def figure3_summary(*, lmi: bool = False, max_horizon: int = 1000) -> str:
    """Tuned-vs-classical tables for the Figure-3 setting (text; used by ``dpbounds demo``).

    ``lmi=True`` adds the all-of-:math:`\\mathcal S_{\\mu,L}` heavy-ball table (a few seconds).
    """
    s = figure3_setting()
    parts = ["Kuru et al. Figure-3 setting: " + ", ".join(
        f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}" for k, v in s.items())]
    hb = tune_heavy_ball(**s, max_horizon=max_horizon)
    parts += ["", "DP heavy ball, quadratic class (Theorem 3.5):", hb.table()]
    if lmi:
        hbl = tune_heavy_ball(**s, max_horizon=max_horizon,
                              function_class="smooth_strongly_convex")
        parts += ["", "DP heavy ball, all of S_mu,L (Prop. 3.4 certificates):", hbl.table()]
    nag = tune_nesterov(**s, max_horizon=max_horizon)
    parts += ["", "DP-NAG / DP-MASG (Theorem 4.1 / 4.3, Prop. 4.2, Remark 4.1):", nag.table()]
    return "\n".join(parts)


__all__ += ["figure3_setting", "figure3_summary"]
