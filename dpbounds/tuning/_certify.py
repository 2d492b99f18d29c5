r"""Global search of the DP heavy-ball bound over :math:`(\alpha,\beta,T)` with a proven gap.

The quadratic-class bound (:class:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.
HeavyBallDPObjective`) is
:math:`B(\alpha,\beta,T)=\frac L2\big(2D\,\tau(a,\beta,T)+V(\alpha,\beta)\,\mathcal E_T\big)`,
:math:`a=\max_{\lambda\in\{\mu,L\}}|1+\beta-\alpha\lambda|`, with the transient envelope
:math:`\tau=P_{T+1}^2+(1+\beta^2)P_T^2+\beta^2P_{T-1}^2`,
:math:`P_k=\beta^{(k-1)/2}g_k(c)`, :math:`c=a/(2\sqrt\beta)`, :math:`g_k(c)=\min(k,1/\sqrt{1-c^2})`
for :math:`c<1` and :math:`\sinh(k\varphi)/\sinh\varphi` (:math:`c=\cosh\varphi`) for
:math:`c\ge1` (:math:`P_k=a^{k-1}` at :math:`\beta=0`)
(:func:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.log_transient_envelope`), and
:math:`V=\max_{\lambda\in\{\mu,L\}}v_\lambda`,
:math:`v_\lambda=\alpha(1+\beta)/((1-\beta)\lambda(2+2\beta-\alpha\lambda))`.
Every step below is **[DERIVED]** here (and tested against dense evaluation in
``tests/tuning/test_certify.py``).

1. **Reduction to** :math:`\alpha\le\alpha^\ast(\beta)=2(1+\beta)/(\mu+L)`. For
   :math:`\alpha\ge\alpha^\ast`, :math:`a=\alpha L-1-\beta` increases in :math:`\alpha`;
   :math:`g_k` is non-decreasing in :math:`c` (so :math:`\tau` in :math:`a`) and every
   :math:`v_\lambda` increases in :math:`\alpha` (numerator up, denominator down). So
   :math:`B(\alpha,\beta,T)\ge B(\alpha^\ast,\beta,T)` and the minimum lies in
   :math:`\alpha=t\,\alpha^\ast(\beta)`, :math:`t\in(0,1]`, where every point is stable and
   :math:`a=(1+\beta)(1-tq)`, :math:`q=2\mu/(\mu+L)`.
2. **V is increasing in t and in beta**:
   :math:`v_\lambda=\frac{2t}{\mu+L}\frac{1+\beta}{1-\beta}\big/\big(\lambda(2-2t\lambda/(\mu+L))
   \big)`. On a box :math:`[t_0,t_1]\times[\beta_0,\beta_1]`: :math:`V\ge V(t_0,\beta_0)`.
3. **The transient from below**: :math:`a\ge a_{lo}=(1+\beta_0)(1-t_1q)` and :math:`\tau` is
   non-decreasing in :math:`a` at fixed :math:`\beta`. For :math:`k\ge1`:

   * where :math:`a_{lo}^2\ge4\beta_1` (real roots everywhere in the box),
     :math:`P_k=U_k(a,\beta)\ge U_k(a_{lo},\beta_1)`: :math:`U_k=h_{k-1}(r_1,r_2)` (complete
     homogeneous polynomial of the roots, :math:`r_1+r_2=a`, :math:`r_1r_2=\beta`) is
     Schur-convex on :math:`\mathbb R_+^2`, so it decreases as :math:`\beta` grows at fixed
     :math:`a`;
   * always :math:`P_k\ge\beta_0^{(k-1)/2}g_k(a_{lo}/(2\sqrt{\beta_1}))` (:math:`c\ge
     a_{lo}/(2\sqrt{\beta_1})`, :math:`g_k` non-decreasing in :math:`c`);
   * always :math:`P_k\ge\rho^{k-1}` with :math:`\rho` the spectral radius of the
     :math:`\mu`-block (:math:`U_k\ge r_1^{k-1}`; :math:`g_k\ge1`), and over the box
     :math:`\rho\ge\min_{\beta\in[\beta_0,\beta_1]}\rho(a_{lo},\beta)`: :math:`r_1(a_{lo},
     \beta_1)` if :math:`\beta_1\le a_{lo}^2/4`, :math:`\sqrt{\beta_0}` if
     :math:`\beta_0\ge a_{lo}^2/4`, else :math:`a_{lo}/2` (decreasing in :math:`\beta`, then
     :math:`\sqrt\beta`).

   The coefficients :math:`1+\beta^2`, :math:`\beta^2` are taken at :math:`\beta_0`.
4. **An interval of horizons** :math:`[T_{lo},T_{hi}]`: :math:`\mathcal E_T` increases in
   :math:`T` (each step gets :math:`\epsilon/T`), so :math:`\mathcal E_T\ge\mathcal E_{T_{lo}}`;
   :math:`U_k=r_1^{k-1}\frac{1-x^k}{1-x}` (:math:`x=r_2/r_1`) with the second factor increasing
   in :math:`k`, :math:`g_k` non-decreasing in :math:`k` and :math:`\beta^{(k-1)/2}`,
   :math:`\rho^{k-1}` non-increasing (:math:`\le1`), so each bound of 3. at :math:`k` is at
   least its value at :math:`k_{lo}` times the per-step factor to the power
   :math:`k_{hi}-k_{lo}`.

:func:`box_lower_bounds` is the minimum over the horizons of these bounds (intervals refined
where they could matter); :func:`certify_minimum` is a branch and bound over boxes in
:math:`(\log t,-\log(1-\beta))` that covers **every** :math:`\alpha>0`, :math:`0\le\beta<1`,
:math:`1\le T\le T_{\max}` (two unbounded tails: :math:`t\le t_{\min}`,
:math:`\beta\ge\beta_{\max}`), evaluates the bound at the centres of the most promising boxes
and returns the best point found and the smallest lower bound left: a proven bracket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds.bounds.strongly_convex.gradient_noise import (
    laplace_scale_at_horizon,
    subsampling_variance,
)
from dpbounds.bounds.strongly_convex.heavy_ball_dp import log_chebyshev_envelope

__all__ = ["Bracket", "box_lower_bounds", "certify_minimum", "log_g"]

_T_SINGLE = 32       # horizons 1.._T_SINGLE start as single horizons, then geometric intervals
_T_RATIO = 1.25      # ratio of the first geometric intervals of horizons
_T_SPLIT = 8         # an interval of horizons that could hold the minimum is cut in this many
_MAX_BOXES = 60_000  # boxes a certification may create (bounded CPU; a wider bracket)
_ROUNDS = 40
_BATCH = 1 << 16     # (box, horizon interval) pairs per vectorised lower bound
_PAIR_BUDGET = 1 << 23  # pairs one box_lower_bounds call may evaluate
_SAFETY = 1e-9       # relative margin for rounding in the lower bounds
_T_MIN = 1e-9        # t = alpha / alpha* below this: one tail
_Y_MAX = math.log(1e9)  # beta above 1 - 1e-9: the other tail


@dataclass(frozen=True)
class Bracket:
    """``lower <= min B <= best`` over every alpha > 0, 0 <= beta < 1, T <= Tmax."""

    lower: float
    best: float
    alpha: float
    beta: float
    boxes: int

    @property
    def gap(self) -> float:
        """Proven relative gap ``best / lower - 1`` (0 when closed, ``inf`` if no lower bound)."""
        if self.lower >= self.best:
            return 0.0
        return self.best / self.lower - 1.0 if self.lower > 0 else math.inf


def _noise(T: np.ndarray, d: int, n: int, m: int, eps: float, S: float) -> np.ndarray:
    b = np.asarray(laplace_scale_at_horizon(T, S, n, m, eps))
    with np.errstate(over="ignore"):
        return 2.0 * d * b * b + subsampling_variance(S, n, m)


def log_g(c: np.ndarray, k: np.ndarray) -> np.ndarray:
    r"""log of :math:`g_k(c)` (module docstring, the library's envelope factor,
    :func:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.log_chebyshev_envelope`, broadcast);
    ``-inf`` at ``k <= 0``. Non-decreasing in ``c`` and in ``k``."""
    c, k = np.broadcast_arrays(np.asarray(c, dtype=float), np.asarray(k, dtype=float))
    return np.where(k <= 0, -np.inf, log_chebyshev_envelope(c, np.maximum(k, 0.0)))


def _log_p_lower(klo, khi, a_c, b0, b1, real, lr1, lgeo_x, lrho):
    """log of a lower bound of P_k for every k in [klo, khi] on the box (module docstring, 3-4).

    ``lr1``: log of the smallest largest root (real boxes only), ``lgeo_x``: log of the
    smallest root ratio x; ``lrho``: log of the spectral-radius lower bound; ``a_c``: the
    smallest a / (1 + beta) * (1 + beta1)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        span = khi - klo
        pos = klo >= 1
        kl = np.maximum(klo, 1.0)
        # real roots: U_k = r1^(k-1) (1 - x^k) / (1 - x)
        geo = np.where(lgeo_x < -1e-12,
                       np.log(-np.expm1(kl * lgeo_x)) - np.log(-np.expm1(lgeo_x)),
                       np.log(kl))
        lu = (kl - 1.0) * lr1 + geo + span * np.minimum(lr1, 0.0)
        lu = np.where(real, lu, -np.inf)
        # every box: beta0^((k-1)/2) g_k(a_c / (2 sqrt(beta1)))
        c = np.where(b1 > 0, a_c / (2.0 * np.sqrt(b1)), np.inf)
        half = 0.5 * np.log(b0)
        lc = np.where(khi > 1.0, (khi - 1.0) * half, 0.0) + log_g(c, kl)
        lc = np.where(np.isnan(lc), -np.inf, lc)
        # every box: rho^(k-1)
        ls = np.where(khi > 1.0, (khi - 1.0) * np.minimum(lrho, 0.0), 0.0)
        lu, lc, ls = (np.where(np.isnan(v), -np.inf, v) for v in (lu, lc, ls))
        out = np.maximum(np.maximum(lu, lc), ls)
        out = np.where(khi <= 1.0, 0.0, out)  # P_1 = 1
    return np.where(pos, out, -np.inf)  # P_0 = 0


def _pair_lower(t0, t1, b0, b1, Tlo, Thi, mu, L, D, noise_lo):
    """Lower bound of B on box x [Tlo, Thi] (arrays of pairs; module docstring)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        q = 2.0 * mu / (mu + L)
        # the mu-block's p(z) = z^2 - (1 + beta)(1 - t q) z + beta grows in t and beta on
        # [0, 1]: its largest real root is smallest at the corner (t1, b1), largest at (t0, b0)
        w1 = np.maximum(1.0 - t1 * q, 0.0)
        a_c = (1.0 + b1) * w1
        disc = a_c * a_c - 4.0 * b1
        real = disc >= 0  # then real at every point of the box (disc falls in t and beta)
        r1 = 0.5 * (a_c + np.sqrt(np.maximum(disc, 0.0)))
        lr1 = np.minimum(np.log(r1), 0.0)
        a_0 = (1.0 + b0) * np.maximum(1.0 - t0 * q, 0.0)
        r1_max = 0.5 * (a_0 + np.sqrt(np.maximum(a_0 * a_0 - 4.0 * b0, 0.0)))
        lx = np.minimum(np.where(b0 > 0, np.log(b0) - 2.0 * np.log(r1_max), -np.inf), 0.0)
        # complex somewhere: rho >= sqrt(beta) and >= sqrt(beta_c(t1)) (critical damping)
        s_c = w1 / (1.0 + np.sqrt(np.maximum(1.0 - w1 * w1, 0.0)))
        rho = np.where(real, r1, np.sqrt(np.maximum(b0, s_c * s_c)))
        args = (a_c, b0, b1, real, lr1, lx, np.log(rho))
        l1 = _log_p_lower(Tlo + 1.0, Thi + 1.0, *args)
        l0 = _log_p_lower(Tlo, Thi, *args)
        lm = _log_p_lower(Tlo - 1.0, Thi - 1.0, *args)
        tau = np.exp(2.0 * l1) + (1.0 + b0 * b0) * np.exp(2.0 * l0) + b0 * b0 * np.exp(2.0 * lm)
        V = np.zeros(np.shape(t0))
        for lam in (mu, L):
            V = np.maximum(V, 2.0 * t0 / (mu + L) * (1.0 + b0) / (1.0 - b0)
                           / (lam * (2.0 - 2.0 * t0 * lam / (mu + L))))
        lb = 0.5 * L * (2.0 * D * tau + V * noise_lo)
        lb = np.where(np.isnan(lb), 0.0, lb)
    return lb * (1.0 - _SAFETY)


def _horizon_intervals(Tmax: int) -> tuple[np.ndarray, np.ndarray]:
    """The starting intervals of horizons: singles, then geometric ones up to Tmax."""
    lo = list(range(1, min(Tmax, _T_SINGLE) + 1))
    hi = list(lo)
    t = hi[-1]
    while t < Tmax:
        nxt = min(Tmax, max(t + 1, int(math.floor(t * _T_RATIO))))
        lo.append(t + 1)
        hi.append(nxt)
        t = nxt
    return np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)


def box_lower_bounds(t0, t1, b0, b1, mu: float, L: float, D: float, d: int, n: int, m: int,
                     eps: float, S: float, Tmax: int, threshold: float = math.inf) -> np.ndarray:
    r"""Lower bound of :math:`\min_{T\le T_{\max}}B` on each box :math:`[t_0,t_1]\times
    [\beta_0,\beta_1]` (:math:`\alpha=t\,\alpha^\ast(\beta)`, module docstring).

    Intervals of horizons whose bound is below ``threshold`` are cut until single horizons, so
    a returned value below ``threshold`` is the minimum over single horizons of the bounds of
    3.; one at or above it may be weaker (still a lower bound)."""
    t0, t1, b0, b1 = (np.asarray(v, dtype=float).ravel() for v in
                      np.broadcast_arrays(t0, t1, b0, b1))
    out = np.full(t0.size, np.inf)
    Ilo, Ihi = _horizon_intervals(Tmax)
    # depth-first over batches of (box, interval) pairs: bounded memory, and bounded work (past
    # _PAIR_BUDGET an interval keeps its own bound, valid but weaker: a wider bracket)
    per = max(1, _BATCH // Ilo.size)  # boxes per starting batch
    stack = [(np.repeat(np.arange(s, min(t0.size, s + per)), Ilo.size),
              np.tile(Ilo, min(t0.size, s + per) - s), np.tile(Ihi, min(t0.size, s + per) - s))
             for s in range(0, t0.size, per)][::-1]
    used = 0
    while stack:
        p, lo, hi = stack.pop()
        if p.size > _BATCH:
            stack.append((p[_BATCH:], lo[_BATCH:], hi[_BATCH:]))
            p, lo, hi = p[:_BATCH], lo[:_BATCH], hi[:_BATCH]
        lb = _pair_lower(t0[p], t1[p], b0[p], b1[p], lo.astype(float), hi.astype(float),
                         mu, L, D, _noise(lo, d, n, m, eps, S))
        used += p.size
        refine = (hi > lo) & (lb < threshold) & (used < _PAIR_BUDGET)
        np.minimum.at(out, p[~refine], lb[~refine])
        if not np.any(refine):
            continue
        p, lo, hi = p[refine], lo[refine], hi[refine]
        # cut each interval in up to _T_SPLIT parts
        frac = np.linspace(0.0, 1.0, _T_SPLIT + 1)
        kn = np.floor(lo[:, None] + frac[None, :] * (hi - lo + 1)[:, None]).astype(np.int64)
        kn[:, -1] = hi + 1
        nlo, nhi = kn[:, :-1], kn[:, 1:] - 1
        ok = nlo <= nhi
        stack.append((np.repeat(p, _T_SPLIT)[ok.ravel()], nlo[ok], nhi[ok]))
    return out


def certify_minimum(evaluate: Any, mu: float, L: float, D: float, d: int, n: int, m: int,
                    eps: float, S: float, Tmax: int, *, best: float, alpha: float, beta: float,
                    rtol: float = 5e-4, cells: int = 16,
                    max_boxes: int = _MAX_BOXES) -> Bracket:
    r"""Branch and bound for :math:`\min B` with the incumbent ``(alpha, beta)`` of value
    ``best``; ``evaluate(alpha, beta)`` returns the bound at the best horizon of each point
    (arrays). Stops when every box's lower bound is within ``rtol`` of the best value, or at
    ``max_boxes`` boxes / :data:`_ROUNDS` rounds (then the bracket is wider)."""
    def box_lows(t0: Any, t1: Any, b0: Any, b1: Any, *, threshold: float) -> np.ndarray:
        return box_lower_bounds(t0, t1, b0, b1, mu, L, D, d, n, m, eps, S, Tmax, threshold)

    scale = 2.0 / (mu + L)
    # the tail t <= t_min must not contract within Tmax steps even at beta = 1 - e^-Y_MAX:
    # 1 - rho <= (1 + beta) t q / (1 - beta) (the root of z^2 - (1+beta)(1-tq)z + beta near 1)
    q = 2.0 * mu / (mu + L)
    x0, x1 = math.log(_T_MIN), 0.0
    y0, y1 = 0.0, _Y_MAX
    xs = np.linspace(x0, x1, cells + 1)
    ys = np.linspace(y0, y1, 2 * cells + 1)
    X0, Y0 = (g.ravel() for g in np.meshgrid(xs[:-1], ys[:-1]))
    X1, Y1 = X0 + (xs[1] - xs[0]), Y0 + (ys[1] - ys[0])
    deep = math.log(1e-3 * math.exp(-_Y_MAX) / (Tmax * q))
    if deep < x0:  # a column of boxes below the grid (the grid itself does not depend on Tmax)
        X0, X1 = np.concatenate([X0, np.full(ys.size - 1, deep)]), np.concatenate(
            [X1, np.full(ys.size - 1, x0)])
        Y0, Y1 = np.concatenate([Y0, ys[:-1]]), np.concatenate([Y1, ys[1:]])
        x0 = deep

    def to_tb(xl, xh, yl, yh):
        return (np.where(np.isneginf(xl), 0.0, np.exp(xl)), np.exp(xh),
                -np.expm1(-yl), np.where(np.isposinf(yh), 1.0, -np.expm1(-yh)))

    def to_ab(x, y):
        t, b = np.exp(x), -np.expm1(-y)
        return t * scale * (1.0 + b), b

    # the two unbounded tails, cut along the other axis (and their corner)
    fine = np.linspace(0.0, 1.0, 16 * cells + 1)
    tx, ty = x0 + fine * (x1 - x0), y0 + fine * (y1 - y0)
    k = fine.size - 1
    tails = (np.concatenate([np.full(k, -np.inf), tx[:-1], [-np.inf]]),
             np.concatenate([np.full(k, x0), tx[1:], [x0]]),
             np.concatenate([ty[:-1], np.full(k, y1), [y1]]),
             np.concatenate([ty[1:], np.full(k, np.inf), [np.inf]]))
    tail_low = float(np.min(box_lows(*to_tb(*tails),
                                             threshold=best / (1.0 + rtol))))
    boxes: tuple[np.ndarray, ...] = (X0, X1, Y0, Y1)
    n_boxes = X0.size + tails[0].size
    settled = np.inf  # smallest lower bound among the boxes pruned so far
    for _ in range(_ROUNDS):
        thr = best / (1.0 + rtol)
        lb = box_lows(*to_tb(*boxes), threshold=thr)
        # evaluate the centres of the most promising boxes and their corner (t1, beta0) (the
        # optimum can sit on the domain's corner t = 1, beta = 0): a better incumbent prunes more
        order = np.argsort(lb)[:32]
        cx = np.concatenate([0.5 * (boxes[0][order] + boxes[1][order]), boxes[1][order]])
        cy = np.concatenate([0.5 * (boxes[2][order] + boxes[3][order]), boxes[2][order]])
        ca, cb = to_ab(cx, cy)
        vals = evaluate(ca, cb)
        j = int(np.argmin(vals))
        if vals[j] < best:
            best, alpha, beta = float(vals[j]), float(ca[j]), float(cb[j])
        keep = lb * (1.0 + rtol) < best
        settled = min(settled, float(np.min(lb[~keep], initial=np.inf)))
        boxes = tuple(b[keep] for b in boxes)
        if boxes[0].size == 0 or n_boxes + 4 * boxes[0].size > max_boxes:
            break
        xm, ym = 0.5 * (boxes[0] + boxes[1]), 0.5 * (boxes[2] + boxes[3])
        boxes = (np.concatenate([boxes[0], xm, boxes[0], xm]),
                 np.concatenate([xm, boxes[1], xm, boxes[1]]),
                 np.concatenate([boxes[2], boxes[2], ym, ym]),
                 np.concatenate([ym, ym, boxes[3], boxes[3]]))
        n_boxes += boxes[0].size
    open_low = (float(np.min(box_lows(*to_tb(*boxes),
                                              threshold=best / (1.0 + rtol))))
                if boxes[0].size else np.inf)
    lower = min(settled, open_low, tail_low, best)
    return Bracket(lower, best, alpha, beta, n_boxes)
