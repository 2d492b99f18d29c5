r"""Global search of the DP heavy-ball bound over :math:`(\alpha,\beta)` with a proven gap.

The quadratic-class bound (:class:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.
HeavyBallDPObjective`) is
:math:`B(\alpha,\beta,T)=\frac L2\big(2D\,\tau(\alpha,\beta,T)+V(\alpha,\beta)\,\mathcal E_T\big)`
with the transient envelope :math:`\tau`
(:func:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.log_transient_envelope`) and
:math:`V=\max_{\lambda\in\{\mu,L\}}v_\lambda`. On a box
:math:`[\alpha_0,\alpha_1]\times[\beta_0,\beta_1]` **[DERIVED]**:

* :math:`V\ge\max_\lambda\alpha_0(1+\beta_0)/((1-\beta_0)\lambda(2+2\beta_1-\alpha_0\lambda))`
  (each factor bounded separately; the box is unstable if the last factor is not positive);
* :math:`\tau` is non-decreasing in :math:`|x|_{\max}=\max_\lambda|1+\beta-\alpha\lambda|/
  (2\sqrt\beta)` and in :math:`\beta`; where every point of the box has real roots,
  :math:`\tau\ge U_{T+1}^2+U_T^2` at :math:`(a_{lo},\beta_1)` (the Lucas sequence
  :math:`U_k(a,b)` increases in :math:`a` and decreases in :math:`b` there); and always
  :math:`\tau\ge\rho^{2T}` with the spectral radius bounded below by
  :math:`\max(\sqrt{\beta_0},\tfrac12(|s|_{lo}+\sqrt{(|s|_{lo}^2-4\beta_1)_+}))`.

The minimum over :math:`T` of these lower bounds is a lower bound of the box. A branch and
bound over boxes in :math:`(\log\alpha,-\log(1-\beta))` covers **every** :math:`\alpha>0`,
:math:`0\le\beta<1` (two unbounded tails: :math:`\alpha\le\alpha_{\min}`,
:math:`\beta\ge\beta_{\max}`), evaluates the bound at the centres of the most promising boxes
and returns the best point found and the smallest lower bound left: a proven bracket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds.bounds.strongly_convex._lucas import lucas_u
from dpbounds.bounds.strongly_convex.gradient_noise import (
    laplace_scale_at_horizon,
    subsampling_variance,
)
from dpbounds.bounds.strongly_convex.heavy_ball_dp import _log_envelope_at

__all__ = []

_T_EXACT = 256       # horizons evaluated one by one in a box's lower bound; knots beyond
_MAX_BOXES = 20_000  # boxes a certification may create
_ROUNDS = 10
_CHUNK = 1 << 18     # (box, horizon) pairs per vectorised lower bound


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


def _abs_low(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))


def box_lower_bounds(a0, a1, b0, b1, mu, L, D, Tgrid, noise) -> np.ndarray:
    """:func:`_box_lower_bounds` in chunks of boxes (bounded memory)."""
    a0, a1, b0, b1 = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a0, a1, b0, b1)))
    step = max(1, _CHUNK // Tgrid.size)
    return np.concatenate([_box_lower_bounds(a0[i:i + step], a1[i:i + step], b0[i:i + step],
                                             b1[i:i + step], mu, L, D, Tgrid, noise)
                           for i in range(0, a0.size, step)] or [np.empty(0)])


def _box_lower_bounds(a0, a1, b0, b1, mu, L, D, Tgrid, noise) -> np.ndarray:
    """Lower bound of B on each box [a0, a1] x [b0, b1] over the horizons ``Tgrid`` (see the
    module docstring; ``noise`` is E_T on ``Tgrid``; a horizon knot ``Tgrid[i]`` stands for
    ``[Tgrid[i], Tgrid[i+1] - 1]``: decay taken at the right end, noise at the left)."""
    a0, a1, b0, b1 = (np.asarray(v, dtype=float)[:, None] for v in (a0, a1, b0, b1))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        sm = _abs_low(1.0 + b0 - a1 * mu, 1.0 + b1 - a0 * mu)
        sL = _abs_low(1.0 + b0 - a1 * L, 1.0 + b1 - a0 * L)
        a_lb = np.maximum(sm, sL)
        # spectral radius from below: max(sqrt(beta0), the larger real root at a corner).
        # p(z) = (z - 1)(z - beta) + alpha lam z is largest at (alpha1, beta1) for z in
        # [beta1, 1]: where its root there is real, every point of the box has a root above
        # it; likewise p(-z) at (alpha0, beta1) for negative roots
        rho = np.sqrt(b0)
        for lam in (mu, L):
            for s in (1.0 + b1 - a1 * lam, a0 * lam - 1.0 - b1):
                disc = s * s - 4.0 * b1
                root = np.where((s > 0) & (disc >= 0),
                                0.5 * (s + np.sqrt(np.maximum(disc, 0.0))), 0.0)
                rho = np.maximum(rho, root)
        T_hi = np.append(Tgrid[1:] - 1, Tgrid[-1])[None, :].astype(float)
        T_lo = Tgrid[None, :].astype(float)
        exact = T_hi == T_lo  # single horizons: the envelope's own lower bound
        log_tau = 2.0 * T_hi * np.log(rho)
        real = a_lb * a_lb >= 4.0 * b1
        u1 = lucas_u(a_lb, b1, T_lo + 1.0)
        u0 = lucas_u(a_lb, b1, T_lo)
        log_real = np.log(u1 * u1 + u0 * u0)
        log_cplx = np.where(b0 > 0, _log_envelope_at(np.minimum(a_lb, 2.0 * np.sqrt(b1)),
                                                     b1, b0, T_lo), -np.inf)
        log_tau = np.where(exact, np.maximum(log_tau, np.where(real, log_real, log_cplx)),
                           log_tau)
        tau = np.exp(log_tau)
        V = np.zeros(a0.shape)
        unstable = np.zeros(a0.shape, dtype=bool)
        for lam in (mu, L):
            den = (1.0 - b0) * lam * (2.0 + 2.0 * b1 - a0 * lam)
            unstable |= den <= 0
            V = np.maximum(V, np.where(den > 0, a0 * (1.0 + b0) / den, 0.0))
        lb = 0.5 * L * (2.0 * D * tau + V * noise[None, :])
        lb = np.where(np.isnan(lb), 0.0, lb)
        out = np.min(lb, axis=1)
    return np.where(unstable[:, 0], np.inf, out)


def _horizon_grid(Tmax: int) -> np.ndarray:
    if Tmax <= _T_EXACT:
        return np.arange(1, Tmax + 1)
    return np.unique(np.concatenate([np.arange(1, _T_EXACT + 1), np.round(np.geomspace(
        _T_EXACT + 1, Tmax, 256)).astype(np.int64)]))


def certify_minimum(evaluate: Any, mu: float, L: float, D: float, d: int, n: int, m: int,
                    eps: float, S: float, Tmax: int, *, best: float, alpha: float, beta: float,
                    x_range: tuple[float, float], y_range: tuple[float, float],
                    rtol: float = 1e-3, cells: int = 24) -> Bracket:
    r"""Branch and bound for :math:`\min B` with the incumbent ``(alpha, beta)`` of value
    ``best``; ``evaluate(alpha, beta)`` returns the bound at the best horizon of each point
    (arrays). Stops when every box's lower bound is within ``rtol`` of the best value, or at
    :data:`_MAX_BOXES` boxes / :data:`_ROUNDS` rounds (then the bracket is wider)."""
    Tgrid = _horizon_grid(Tmax)
    noise = _noise(Tgrid, d, n, m, eps, S)
    x0, x1 = x_range
    y0, y1 = y_range
    xs = np.linspace(x0, x1, cells + 1)
    ys = np.linspace(y0, y1, cells + 1)
    X0, Y0 = (g.ravel() for g in np.meshgrid(xs[:-1], ys[:-1]))
    X1, Y1 = X0 + (xs[1] - xs[0]), Y0 + (ys[1] - ys[0])

    def to_ab(xl: np.ndarray, xh: np.ndarray, yl: np.ndarray, yh: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return (np.where(np.isneginf(xl), 0.0, np.exp(xl)), np.exp(xh),
                -np.expm1(-yl), np.where(np.isposinf(yh), 1.0, -np.expm1(-yh)))

    # the two unbounded tails, cut along the other axis (and their corner)
    fine = np.linspace(0.0, 1.0, 8 * cells + 1)
    tx, ty = x0 + fine * (x1 - x0), y0 + fine * (y1 - y0)
    k = fine.size - 1
    tails = (np.concatenate([np.full(k, -np.inf), tx[:-1], [-np.inf]]),
             np.concatenate([np.full(k, x0), tx[1:], [x0]]),
             np.concatenate([ty[:-1], np.full(k, y1), [y1]]),
             np.concatenate([ty[1:], np.full(k, np.inf), [np.inf]]))
    tail_low = float(np.min(box_lower_bounds(*to_ab(*tails), mu, L, D, Tgrid, noise)))
    boxes: tuple[np.ndarray, ...] = (X0, X1, Y0, Y1)
    n_boxes = X0.size + tails[0].size
    settled = np.inf  # smallest lower bound among the boxes pruned so far
    for _ in range(_ROUNDS):
        lb = box_lower_bounds(*to_ab(*boxes), mu, L, D, Tgrid, noise)
        # evaluate the centres of the most promising boxes: a better incumbent prunes more
        order = np.argsort(lb)[:64]
        cx = 0.5 * (boxes[0][order] + boxes[1][order])
        cy = 0.5 * (boxes[2][order] + boxes[3][order])
        vals = evaluate(np.exp(cx), -np.expm1(-cy))
        k = int(np.argmin(vals))
        if vals[k] < best:
            best, alpha, beta = float(vals[k]), float(np.exp(cx[k])), float(-np.expm1(-cy[k]))
        keep = lb * (1.0 + rtol) < best
        settled = min(settled, float(np.min(lb[~keep], initial=np.inf)))
        boxes = tuple(b[keep] for b in boxes)
        if boxes[0].size == 0 or n_boxes + 4 * boxes[0].size > _MAX_BOXES:
            break
        xm, ym = 0.5 * (boxes[0] + boxes[1]), 0.5 * (boxes[2] + boxes[3])
        boxes = (np.concatenate([boxes[0], xm, boxes[0], xm]),
                 np.concatenate([xm, boxes[1], xm, boxes[1]]),
                 np.concatenate([boxes[2], boxes[2], ym, ym]),
                 np.concatenate([ym, ym, boxes[3], boxes[3]]))
        n_boxes += boxes[0].size
    open_low = (float(np.min(box_lower_bounds(*to_ab(*boxes), mu, L, D, Tgrid, noise)))
                if boxes[0].size else np.inf)
    lower = min(settled, open_low, tail_low, best)
    return Bracket(lower, best, alpha, beta, n_boxes)
