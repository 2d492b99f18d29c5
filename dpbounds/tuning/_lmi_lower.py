r"""A proven lower bound for the LMI-class heavy-ball tuner (every :math:`\alpha,\beta,T`).

The Prop. 3.4 bound of :func:`dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound` holds for every
:math:`F\in\mathcal S_{\mu,L}`, every start with :math:`\lVert x_0-x^\ast\rVert^2\le D` and
:math:`F(x_0)-F^\ast\le E_0`, and every zero-mean gradient noise independent of the past with
:math:`\mathbb E\lVert w_t\rVert^2\le\mathcal E_T` (its derivation, Lemma B.1, uses nothing
else). So at every certified :math:`(\alpha,\beta,T)` it is at least the error of DP-SHB on
any such instance, and its minimum is at least the minimum of that error. **[DERIVED]**

**Instance and bound.** Take :math:`F=\frac\lambda2\lVert x-x^\ast\rVert^2`
(:math:`\lambda\in[\mu,L]`), noise of variance :math:`\mathcal E_T/d` in each coordinate,
and the start :math:`e_0=x_0-x^\ast` with coordinates :math:`\pm\sqrt{D'/d}`,
:math:`D'=\min(D,2E_0/\lambda)`, signs uniform (the bound holds for each start, so for their
average). Heavy ball is linear: :math:`x_T-x^\ast=e_0-h(y)` with :math:`h` linear in the
observations :math:`y_t=g_t-\lambda(x_t-x_0)=\lambda e_0+w_t`, :math:`t<T` (:math:`x_t-x_0` is
a linear function of the earlier observations). The mean squared error of any linear estimate
of :math:`e_0` from :math:`T` such observations is at least the linear MMSE, which depends on
second moments only: per coordinate :math:`\frac{D'}d\,\frac{\mathcal E_T}{\mathcal E_T+T
\lambda^2D'}`. Summing over coordinates,

.. math:: \mathbb E[F(x_T)]-F^\ast\ \ge\ \ell_\lambda(T)=\frac\lambda2\,D'\,
          \frac{\mathcal E_T}{\mathcal E_T+T\lambda^2D'}

for **every** :math:`(\alpha,\beta)` (indeed every linear first-order method), and
:math:`\max_\lambda\min_{T\le T_{\max}}\ell_\lambda(T)` is a lower bound of the tuner's
minimum. It ignores heavy ball's structure, so the bracket it gives is wide (it is what can be
proven without a branch and bound over SDPs).

**Two tightenings.** (i) *Swap.* At a fixed :math:`(\alpha,\beta,T)` the bound is at least
:math:`\ell_\lambda(T)` for **every** :math:`\lambda`, hence at least
:math:`\max_\lambda\ell_\lambda(T)`; minimising over :math:`T` gives
:math:`\min_T\max_\lambda\ell_\lambda(T)\ge\max_\lambda\min_T\ell_\lambda(T)`.
(ii) *One polynomial for all* :math:`\lambda` *(heavy ball's structure).* Heavy ball started at
:math:`x_{-1}=x_0` is a Krylov method: the noise-free error is :math:`p_T(\lambda)e_0` with
:math:`p_T` a polynomial of degree :math:`\le T`, :math:`p_T(0)=1`, the **same** polynomial for
every :math:`\lambda` (its coefficients depend on :math:`\alpha,\beta` only). The noise is
zero mean, so on the instance above (deterministic start, :math:`\lVert e_0\rVert^2=D'`) the
error is at least the bias :math:`\frac\lambda2 D'p_T(\lambda)^2=w(\lambda)p_T(\lambda)^2`,
:math:`w(\lambda)=\min(\lambda D/2,E_0)\ge w_{\min}=\min(\mu D/2,E_0)`. Hence
:math:`\max_\lambda w\,p_T^2\ge w_{\min}\max_{[\mu,L]}p_T^2\ge w_{\min}/
C_T(\tfrac{L+\mu}{L-\mu})^2` by the Chebyshev minimax property
(:math:`\min_{p(0)=1,\deg p\le T}\max_{[\mu,L]}|p|=1/C_T((L+\mu)/(L-\mu))`, :math:`C_T` the
Chebyshev polynomial of the first kind). So for every :math:`(\alpha,\beta)`

.. math:: \text{LMI bound}(\alpha,\beta,T)\ \ge\ b(T)=\max\Big(\max_\lambda\ell_\lambda(T),
          \ \frac{w_{\min}}{\cosh^2(T\,\mathrm{arccosh}\frac{L+\mu}{L-\mu})}\Big),

and :math:`\min_{1\le T\le T_{\max}}b(T)` is the proven lower bound (the max over a finite
:math:`\lambda` grid is a valid inner max; :math:`\mu=L` gives :math:`p_T(L)=0` possible, the
Chebyshev term is then 0). **[DERIVED]**
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds.bounds.strongly_convex.gradient_noise import dp_noise_level

__all__ = ["chebyshev_bias_bound", "linear_method_lower_bound", "linear_mmse_error",
           "noise_lower_bound"]

_N_LAMBDA = 65
_CHUNK = 1 << 20


def linear_mmse_error(lam: Any, T: Any, noise: Any, dist_sq: float, initial_gap: float) -> Any:
    r""":math:`\ell_\lambda(T)` of the module docstring (``noise`` is :math:`\mathcal E_T`),
    broadcast over ``lam``, ``T`` and ``noise``."""
    lam, T, noise = (np.asarray(v, dtype=float) for v in (lam, T, noise))
    Dp = np.minimum(dist_sq, 2.0 * initial_gap / lam)
    # noise = 0 (a zero sensitivity or eps = inf): x / 0 = inf and val = 0, the exact limit
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        val = 0.5 * lam * Dp / (1.0 + T * lam * lam * Dp / noise)
    return np.where(np.isnan(val), 0.0, val)


def chebyshev_bias_bound(mu: float, L: float, dist_sq: float, initial_gap: float, T: Any) -> Any:
    r"""The Chebyshev bias term :math:`w_{\min}/C_T((L+\mu)/(L-\mu))^2` of the module
    docstring, a lower bound of the worst-quadratic error of any Krylov method after ``T`` steps."""
    T = np.asarray(T, dtype=float)
    wmin = min(0.5 * mu * dist_sq, initial_gap)
    if L <= mu:
        return np.zeros_like(T)
    g = math.acosh((L + mu) / (L - mu))
    with np.errstate(over="ignore"):
        return wmin / np.cosh(T * g) ** 2


def linear_method_lower_bound(mu: float, L: float, d: int, n: int, m: int, eps: float, S: float,
                              dist_sq: float, initial_gap: float, Tmax: int) -> float:
    r""":math:`\min_{1\le T\le T_{\max}}b(T)` (module docstring), the inner max over a
    geometric grid of :math:`\lambda\in[\mu,L]` (any grid gives a valid bound)."""
    return noise_lower_bound(mu, L, dist_sq, initial_gap, Tmax,
                             lambda T: dp_noise_level(S, d, n, m, eps, T))


def noise_lower_bound(mu: float, L: float, dist_sq: float, initial_gap: float, Tmax: int,
                      noise: Any) -> float:
    r""":math:`\min_{1\le T\le T_{\max}}b(T)` with :math:`\mathcal E_T` = ``noise(T)``, the
    total second moment of each step's noise in a run of horizon :math:`T` (any sequence:
    the argument of the module docstring holds at each :math:`T` on its own; a plug-in's
    calibration, ``d`` times its per-coordinate variance), and for every fixed-step linear
    momentum method :math:`y_t=x_t+\gamma(x_t-x_{t-1})`, any :math:`\gamma`: its query points
    :math:`y_t-x_0` are linear in the earlier observations :math:`g_s-\lambda(y_s-x_0)=
    \lambda e_0+w_s` as heavy ball's are, and its noise-free error is a polynomial of degree
    :math:`\le T` with :math:`p_T(0)=1` (Krylov), so both terms of :math:`b(T)` hold.
    **[DERIVED]**"""
    lams = np.unique(np.concatenate([np.geomspace(mu, L, _N_LAMBDA), [mu, L]]))
    best = np.inf
    for start in range(1, Tmax + 1, _CHUNK):
        T = np.arange(start, min(Tmax, start + _CHUNK - 1) + 1, dtype=float)
        E = np.asarray(noise(T), dtype=float)
        val = linear_mmse_error(lams[:, None], T[None, :], E[None, :], dist_sq, initial_gap)
        b = np.maximum(np.max(val, axis=0), chebyshev_bias_bound(mu, L, dist_sq, initial_gap, T))
        best = min(best, float(np.min(b)))
    return float(best)
