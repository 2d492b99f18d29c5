r"""A floor under every Prop. 3.4 bound of one heavy ball :math:`(\alpha,\beta)`.

Source: Kuru, Birbil, Gurbuzbalaban, Yildirim, "Differentially Private Accelerated
Optimization Algorithms", Prop. 3.4 (the LMI (22), VERBATIM up to the sign of :math:`B`, see
:mod:`dpbounds.lmi.heavy_ball_lmi.formulation`) and its bound (23) with the noise term
re-derived (:func:`dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound`, DERIVED). The floor
below is ours. **[DERIVED]**

The LMI-class tuner picks, at each :math:`(\alpha,\beta)`, a few certified rates
:math:`\rho`, a certificate :math:`(P,c_0)` at each and the best horizon :math:`T`. This
module bounds from below what **any** certificate of (22), at **any** rate and horizon
:math:`T\le T_{\max}`, can give for the same :math:`(\alpha,\beta)` -- so the tuned value at
its :math:`(\alpha,\beta)` is within a computed factor of the best that Prop. 3.4 can say
there (the argument is proven; its float64 evaluation is not, see **Arithmetic**).

**The bound.** With :math:`c=1` (the bound is homogeneous in :math:`(P,c_0,c)`) and
:math:`x_{-1}=x_0`, the derived bound (23) of a certificate is

.. math:: b=\rho^{2T}\big(D\,\mathbf 1^\top P\mathbf 1+E_0\big)
          +\frac{1-\rho^{2T}}{1-\rho^2}\,\mathcal E_T\,\alpha^2\Big(P_{11}+\frac L2\Big)

(:func:`dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound`), increasing in :math:`P` through
:math:`\mathbf 1^\top P\mathbf 1` and :math:`P_{11}`.

**A floor under P from quadratics.** Restrict (22) to the vectors
:math:`v=(x,x',\lambda x)` (the gradient of :math:`\frac\lambda2x^2`,
:math:`\lambda\in[\mu,L]`). There :math:`v^\top X_0v=2(\lambda-\mu)(\lambda-L)x^2\le0`, so the
term :math:`c_0X_0` cannot help, and (22) gives, as 2x2 forms in :math:`\xi=(x,x')`,

.. math:: M_\lambda^\top PM_\lambda-\rho^2P\preceq Q_\lambda(\rho),\qquad
          M_\lambda=\begin{bmatrix}1+\beta-\alpha\lambda&-\beta\\1&0\end{bmatrix},\quad
          Q_\lambda=T_\lambda^\top\big(X_1+(1-\rho^2)X_2\big)T_\lambda

(:math:`T_\lambda` maps :math:`\xi` to :math:`v`). If the spectral radius of
:math:`M_\lambda` is below :math:`\rho`, the map
:math:`S\mapsto\sum_{k\ge0}\rho^{-2(k+1)}(M_\lambda^\top)^kSM_\lambda^k` inverting
:math:`P\mapsto\rho^2P-M_\lambda^\top PM_\lambda` is positive, hence
:math:`P\succeq X_\lambda(\rho)`, the solution of the Stein equation
:math:`\rho^2X-M_\lambda^\top XM_\lambda=-Q_\lambda(\rho)`; and :math:`P\succeq0`.

**Every rate in an interval at once.** For :math:`\rho\le\rho'`, :math:`(\rho^2-\rho'^2)P
\preceq0` and :math:`T_\lambda^\top X_2T_\lambda=\frac12\mathrm{diag}(\mu-2\lambda,0)\preceq0`
(so :math:`Q_\lambda(\rho)\preceq Q_\lambda(\rho')`) turn the inequality at :math:`\rho` into
the one at :math:`\rho'`: :math:`P\succeq X_\lambda(\rho')` for **every** certificate with a
rate :math:`\rho\le\rho'`. With :math:`\rho^{2T}` and :math:`(1-\rho^{2T})/(1-\rho^2)`
increasing in :math:`\rho`, on :math:`[\rho_i,\rho_{i+1}]`

.. math:: b\ \ge\ \rho_i^{2T}\big(D\,s_{i+1}+E_0\big)+\frac{1-\rho_i^{2T}}{1-\rho_i^2}\,
          \mathcal E_T\,\alpha^2\Big(p_{i+1}+\frac L2\Big),\quad
          s_{i+1}=\max\big(0,\max_\lambda\mathbf 1^\top X_\lambda(\rho_{i+1})\mathbf 1\big),\
          p_{i+1}=\max\big(0,\max_\lambda X_\lambda(\rho_{i+1})_{11}\big)

(any finite set of :math:`\lambda` gives valid maxima). The intervals cover
:math:`[\rho_0,1)`, :math:`\rho_0` the larger of the quadratic rate rounded down and a
proven lower end of the certified rates (an exactly checked Farkas certificate of the rate
search: no certificate is below either); on the last one :math:`P\succeq0` alone is used.
The floor is the smallest interval bound minimised over :math:`1\le T\le T_{\max}`; the
intervals near the minimum are halved until the floor is within ``rtol`` of the smallest
value of the same expression at the grid's rates.

**Arithmetic.** The 2x2 Stein equations are solved in closed form in float64. Each solution
is lowered by a first-order estimate of its rounding error: a few ulps times the cancellation
factor of each sum (which grows as :math:`\rho` nears the radius of :math:`M_\lambda`),
including the rounding of the inputs :math:`1+\beta-\alpha\lambda` and :math:`1-\rho^2`; a
:math:`\lambda` whose denominator is known to worse than :math:`10^{-3}` is dropped. Checked
against exact rational solves (none above them), but a first-order estimate is not a proof:
the argument is proven, its float64 evaluation carries estimated (not proven) rounding
allowances -- unlike the certificates, which are checked in exact arithmetic. **[DERIVED]**

Near the minimal rate this floor is tight: at Fig. 3's tuned point the polished certificates'
:math:`P_{11}` and :math:`\mathbf 1^\top P\mathbf 1` are within 0.3% and 0.7% of it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_closed_interval, check_int, check_nonnegative
from dpbounds.bounds.strongly_convex.noise_allocation import MAX_HORIZON
from dpbounds.lmi.exact import quadratic_rate_lower_bound
from dpbounds.tuning.horizon_search import minimise_over_horizon

__all__ = ["certificate_floor", "stein_floor"]

_ROUNDING = 1e-12     # relative allowance for the floor's own sums (T-minimisation)
_EPS = float(np.finfo(float).eps)
_N_LAMBDA = 96        # curvatures lambda in [mu, L] (geometric, mu and L included)
_N_RHO = 256          # first grid of rates on [rho_q, 1)
_MAX_ROUNDS = 40      # refinement rounds
_BUDGET_PER_RATE = 20_000  # horizon evaluations per rate (the search's work limit)


def stein_floor(mu: float, L: float, alpha: float, beta: float, rho: Any,
                lams: Any) -> tuple[np.ndarray, np.ndarray]:
    r"""``(s, p)``: lower bounds on :math:`\mathbf 1^\top P\mathbf 1` and :math:`P_{11}` of every
    certificate of (22) (:math:`c=1`) with a rate :math:`\le\rho`, one per ``rho``.

    The largest over ``lams`` of the Stein solutions :math:`X_\lambda(\rho)` (module
    docstring), each clipped at 0; a :math:`\lambda` whose :math:`M_\lambda` has spectral radius
    :math:`\ge\rho` gives no inequality and is skipped.
    """
    rho = np.atleast_1d(np.asarray(rho, dtype=float))[:, None]
    lam = np.atleast_1d(np.asarray(lams, dtype=float))[None, :]
    a, b, r2 = 1.0 + beta - alpha * lam, beta, rho * rho
    # W = X1 + (1 - rho^2) X2 (the printed blocks), then Q = T^T W T with u = lambda x
    q = (1.0 - L * alpha) * beta
    w11 = 0.5 * (-L * b * b + (1.0 - r2) * mu)
    w12, w22 = 0.5 * L * b * b, -0.5 * L * b * b
    w13, w23 = 0.5 * (-q - (1.0 - r2)), 0.5 * q
    w33 = 0.5 * alpha * (2.0 - L * alpha)
    R11 = -(w11 + 2.0 * lam * w13 + lam * lam * w33)
    R12 = -(w12 + lam * w23)
    R22 = -w22 + 0.0 * lam
    # rho^2 X - M^T X M = R with X = [[x, y], [y, z]]:
    #   (rho^2 - a^2) x - 2 a y - z = R11,  (rho^2 + b) y + b a x = R12,  rho^2 z - b^2 x = R22
    # Each quantity is a sum whose terms are computed to a few ulps: its absolute error is at
    # most ~ulps * (sum of |terms|) (first-order error analysis), carried through as ``d*``
    # and taken off the floors (it grows as rho nears the radius of M, where den -> 0).
    u = 8.0 * _EPS
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t1, t2 = 2.0 * a * a * b / (r2 + b), -b * b / r2
        den = (r2 - a * a) + t1 + t2
        e_den = u * (r2 + a * a + np.abs(t1) + np.abs(t2)) / np.abs(den)  # relative
        n1, n2 = 2.0 * a * R12 / (r2 + b), R22 / r2
        num = R11 + n1 + n2
        d_num = u * (np.abs(R11) + np.abs(n1) + np.abs(n2) + np.abs(w11)
                     + np.abs(2.0 * lam * w13) + np.abs(lam * lam * w33) + np.abs(R12))
        # the inputs' own rounding: a = 1 + beta - alpha lambda (absolute ~u (1 + b + alpha
        # lambda)) moves den by |d den / d a| <= 2|a| + 4|a| b / (rho^2 + b), and num through
        # R12; 1 - rho^2 is formed from the rounded rho^2 (absolute ~u rho^2), which enters R11
        # through w11 and w13 (found by an independent review with exact arithmetic: without
        # these terms the allowance fails for rho below ~1/4)
        da = u * (1.0 + b + np.abs(alpha * lam))
        e_den = e_den + da * (2.0 * np.abs(a) + 4.0 * np.abs(a) * b / (r2 + b)) / np.abs(den)
        d_num = d_num + da * 2.0 * np.abs(R12) / (r2 + b) + u * r2 * (0.5 * mu + lam)
        x = num / den
        dx = (d_num + np.abs(num) * (e_den + u)) / np.abs(den)
        y = (R12 - b * a * x) / (r2 + b)
        z = (R22 + b * b * x) / r2
        # 1'X1 = x + 2y + z cancels to ~1e-5 of x when beta is near 1; written as
        # k x + sigma, k = 1 - 2ab/(rho^2 + b) + b^2/rho^2, its error is |k| dx + small
        k1, k2 = 2.0 * a * b / (r2 + b), b * b / r2
        kx = 1.0 - k1 + k2
        g1, g2 = 2.0 * R12 / (r2 + b), R22 / r2
        sigma = g1 + g2
        sx = kx * x + sigma
        d_sigma = 4.0 * u * (np.abs(g1) + np.abs(g2)) + u * (
            2.0 * (np.abs(w12) + np.abs(lam * w23)) / (r2 + b) + np.abs(w22) / r2)
        err_s = (da * 2.0 * b / (r2 + b) * np.abs(x) + np.abs(kx) * dx
                 + 4.0 * u * (1.0 + np.abs(k1) + k2) * np.abs(x) + d_sigma
                 + u * (np.abs(kx * x) + np.abs(sigma)))
        disc = a * a - 4.0 * b
        radius = np.where(disc >= 0, 0.5 * (np.abs(a) + np.sqrt(np.maximum(disc, 0.0))),
                          math.sqrt(b))
    # a lambda whose M reaches rho gives no inequality; nor does one whose solve is too
    # ill-conditioned to use (den known to worse than 1e-3): dropping it keeps a floor
    ok = (radius < rho * (1.0 - 1e-12)) & np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
    ok &= np.isfinite(err_s) & np.isfinite(dx) & (e_den < 1e-3)
    s = np.where(ok, sx - np.where(ok, err_s, 0.0), 0.0).max(axis=1)
    p = np.where(ok, x - np.where(ok, dx, 0.0), 0.0).max(axis=1)
    return np.maximum(s, 0.0), np.maximum(p, 0.0)


def _minima(rates: np.ndarray, s: np.ndarray, p: np.ndarray, alpha: float, L: float,
            dist_sq: float, gap0: float, noise: Any, Tmax: int) -> np.ndarray:
    """Lower bounds on min over 1 <= T <= Tmax of
    rate^(2T) (D s + E0) + (1 - rate^(2T)) / (1 - rate^2) E_T alpha^2 (p + L/2), one per rate
    (the branch and bound over horizons of :mod:`dpbounds.tuning.horizon_search`: exact, or
    lowered by its proven gap where it hit its work limit)."""
    from dpbounds.lmi.heavy_ball_bound import LMIBoundCurves

    with np.errstate(divide="ignore"):  # rate 0 (e.g. alpha = 1/L at mu = L): log -> -inf
        B = alpha * alpha * (p + 0.5 * L) / -np.expm1(2.0 * np.log(rates))
    curves = LMIBoundCurves(dist_sq * s + gap0, B, rates, noise)
    res = minimise_over_horizon(curves, rates.size, Tmax, joint=False,
                                max_evaluations=_BUDGET_PER_RATE * rates.size)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(res.gap), res.best / (1.0 + res.gap), 0.0)


def certificate_floor(mu: float, L: float, alpha: float, beta: float, *, noise: Any,
                      max_horizon: int, dist_sq: float, gap0: float,
                      rho_min: float = 0.0, rtol: float = 1e-4) -> float:
    r"""No certificate of (22) for heavy ball :math:`(\alpha,\beta)`, at any rate, gives
    a derived bound (23) below this at any horizon :math:`1\le T\le` ``max_horizon``.

    ``noise(T)`` is :math:`\mathcal E_T=\mathbb E\lVert w_T\rVert^2` (vectorised over ``T``);
    ``dist_sq`` and ``gap0`` are :math:`D\ge\lVert x_0-x^\ast\rVert^2` and :math:`E_0` as in the
    bound. ``rho_min`` is a *proven* lower bound on the rates (22) certifies (e.g.
    ``rho_lower`` of :func:`dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_rate`, an exactly
    checked Farkas certificate); the quadratic rate is used when it is larger. See the module
    docstring for the argument. ``inf`` when heavy ball does not contract on a quadratic (no
    certificate exists).
    """
    max_horizon = check_int("max_horizon", max_horizon, minimum=1, maximum=MAX_HORIZON)
    dist_sq = float(check_nonnegative("dist_sq", dist_sq))
    gap0 = float(check_nonnegative("gap0", gap0))
    rho_min = float(check_closed_interval("rho_min", rho_min, 0.0, 1.0))
    rtol = float(check_closed_interval("rtol", rtol, 0.0, 0.5))
    if rtol <= 0:
        raise ValueError(f"rtol must lie in (0, 0.5], got {rtol}")
    # quadratic_rate_lower_bound validates mu, L, alpha and beta
    rho_q = max(quadratic_rate_lower_bound(mu, L, alpha, beta), rho_min)
    if rho_q >= 1.0:
        return math.inf
    lams = np.unique(np.concatenate([np.geomspace(mu, L, _N_LAMBDA), [mu, L]]))
    # the grid on [rho_q, 1): 1 - rho geometric from 1 - rho_q down to 1e-6 of it
    edges = 1.0 - (1.0 - rho_q) * np.geomspace(1.0, 1e-6, _N_RHO)
    args = (alpha, L, dist_sq, gap0, noise, max_horizon)
    last = _minima(edges[-1:], np.zeros(1), np.zeros(1), *args)[0]  # [edges[-1], 1): P >= 0
    for _ in range(_MAX_ROUNDS):
        lo, hi = edges[:-1], edges[1:]
        s, p = stein_floor(mu, L, alpha, beta, hi, lams)
        floors = _minima(lo, s, p, *args)
        # the same expression at the rates themselves (what the floor converges to)
        target = min(float(np.min(_minima(hi, s, p, *args))), last)
        floor = min(float(np.min(floors)), last)
        if floor >= target * (1.0 - rtol):
            break
        split = floors < target * (1.0 - rtol)
        edges = np.unique(np.concatenate([edges, 0.5 * (lo[split] + hi[split])]))
    return floor * (1.0 - _ROUNDING)
