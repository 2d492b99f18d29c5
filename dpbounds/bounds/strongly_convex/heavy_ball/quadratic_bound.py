r"""The bound (25) of Kuru et al., Theorem 3.5 (**VERBATIM**), for heavy ball on a quadratic.

.. math::
   \mathbb E[F(x_t)]-F^\ast\le V(\xi_0)C_t^2\rho^{2t}+L\,m(\alpha,\beta) \qquad (25)

with the rate and :math:`C_t` of :mod:`~dpbounds.bounds.strongly_convex.heavy_ball.dynamics` and
the noise term of :mod:`~dpbounds.bounds.strongly_convex.heavy_ball.stationary_error`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbounds._validation import check_nonnegative, check_positive
from dpbounds.bounds.strongly_convex.heavy_ball.dynamics import (
    _check_hb,
    _check_mu_L,
    _finite,
    _hb_rate_at,
    heavy_ball_rate_eq26_as_printed,
    heavy_ball_transient_constant,
)
from dpbounds.bounds.strongly_convex.heavy_ball.stationary_error import heavy_ball_noise_term

__all__ = [
    "heavy_ball_bound_valid",
    "heavy_ball_quadratic_bound",
]


def heavy_ball_quadratic_bound(
    t: Any, alpha: float, beta: float, mu: float, L: float, sigma2: float,
    initial_state_error: float, *, eigenvalues: Any = None, C: Any = None,
    rate: str = "heavy_ball",
) -> Any:
    r"""The right-hand side of (25), :math:`V(\xi_0)C_t^2\rho^{2t}+L\,m(\alpha,\beta)` (VERBATIM).

    Parameters
    ----------
    t : int or array
        Iteration(s).
    alpha : float
        Step size.
    beta : float
        Momentum.
    mu : float
        Strong convexity :math:`\mu`.
    L : float
        Smoothness :math:`L`.
    sigma2 : float
        Per-coordinate noise variance :math:`\sigma_T^2`.
    initial_state_error : float
        :math:`\mathbb E\lVert\xi_0-\xi^\ast\rVert^2` (the paper's
        :math:`\mathbb E\lVert(\xi_0-\xi^\ast)(\xi_0-\xi^\ast)^\top\rVert`; the reference code uses
        10).
    eigenvalues : array, optional
        Spectrum of :math:`Q` for :math:`m(\alpha,\beta)`; default ``[mu, L]`` (Fig. 1, d = 2).
    C : None, float, callable or "exact"
        :math:`C_t`: ``None`` gives the paper's Fig. 1 choice :math:`C_t=t`; a float ``c`` gives
        :math:`C_t=ct`; a callable ``C(t)``; ``"exact"`` uses :func:`heavy_ball_transient_constant`.
    rate : {"heavy_ball", "eq26_as_printed"}
        Which :math:`\rho`: the heavy-ball roots (correct) or (26) as printed (to reproduce Fig. 1).
    """
    mu, L = _check_mu_L(mu, L)
    lam = np.array([mu, L]) if eigenvalues is None else np.atleast_1d(
        check_positive("eigenvalues", eigenvalues)).astype(float)
    sigma2 = float(check_nonnegative("sigma2", sigma2))
    initial_state_error = float(check_nonnegative("initial_state_error", initial_state_error))
    if rate == "heavy_ball":
        rho = float(np.max(_hb_rate_at(*(_check_hb(alpha, beta)), lam)))
    elif rate == "eq26_as_printed":
        rho = float(heavy_ball_rate_eq26_as_printed(alpha, beta, mu, L))
    else:
        raise ValueError(f"rate must be 'heavy_ball' or 'eq26_as_printed', got {rate!r}")
    if rho >= 1:
        raise ValueError(f"Theorem 3.5 needs rho < 1, got rho = {rho:.6g}")
    t_arr = np.asarray(check_nonnegative("t", t), dtype=float)
    if C is None:
        Ct = t_arr
    elif isinstance(C, str):
        if C != "exact":
            raise ValueError(f"C must be None, a number, a callable or 'exact', got {C!r}")
        t_int = _check_steps_array("t", t_arr)
        Ct = np.vectorize(lambda s: heavy_ball_transient_constant(alpha, beta, lam, int(s)),
                          otypes=[float])(t_int)
    elif callable(C):
        Ct = np.asarray(check_nonnegative("C", C(t_arr)), dtype=float)
    else:
        Ct = float(check_nonnegative("C", C)) * t_arr
    with np.errstate(over="ignore"):
        V0 = initial_state_error + sigma2 * float(alpha) ** 2 / (1.0 - rho**2)
        m = heavy_ball_noise_term(alpha, beta, lam, sigma2)
        out = _transient(V0, Ct, rho, t_arr) + L * m
    return _finite(out, "bound (25)", "initial_state_error, sigma2 or C too large")


def _transient(V0: Any, Ct: Any, rho: float, t: Any) -> np.ndarray:
    """``V0 * Ct**2 * rho**(2 t)`` in log space (``Ct**2`` may overflow where ``rho**2t`` is 0)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log = (np.log(V0) + 2.0 * np.log(Ct)
               + np.where(np.asarray(t) == 0, 0.0, 2.0 * np.asarray(t) * np.log(rho)))
        return np.exp(log)


def _check_steps_array(name: str, t: Any) -> np.ndarray:
    """Integers in [0, 2**53] (any shape), as int64."""
    arr = np.asarray(check_nonnegative(name, t), dtype=float)
    if np.any(arr != np.floor(arr)) or np.any(arr > 2.0**53):
        raise ValueError(f"{name} must contain integers in [0, 2**53], got {t!r}")
    return arr.astype(np.int64)


def heavy_ball_bound_valid(
    t: Any, alpha: float, beta: float, eigenvalues: Any, sigma2: float,
    initial_state_error: float,
) -> Any:
    r"""A rigorous, computable version of (25) **[DERIVED]**.

    .. math:: \mathbb E[F(x_t)]-F^\ast\le\frac{L}{2}\Big(C_t^2\rho^{2t}\,
              \mathbb E\lVert\xi_0-\xi^\ast\rVert^2+m(\alpha,\beta)\Big)

    with the exact :math:`C_t` of :func:`heavy_ball_transient_constant`: the same steps as B.3
    (:math:`\lVert M^t\rVert\le C_t\rho^t`, the noise part of the :math:`x_t` block increases to
    :math:`m`) followed by :math:`F-F^\ast\le\tfrac L2\lVert x-x^\ast\rVert^2`. (25) as printed
    drops
    the :math:`L/2` on the transient (absorbed in the unspecified :math:`C_t`) and doubles the noise
    term.
    """
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    alpha_a, beta_a = _check_hb(alpha, beta)
    sigma2 = float(check_nonnegative("sigma2", sigma2))
    initial_state_error = float(check_nonnegative("initial_state_error", initial_state_error))
    rho = float(np.max(_hb_rate_at(alpha_a, beta_a, lam)))
    if rho >= 1:
        raise ValueError(f"heavy ball is unstable here (rho = {rho:.6g} >= 1)")
    t_arr = np.atleast_1d(_check_steps_array("t", t))
    Ct = np.array([heavy_ball_transient_constant(alpha, beta, lam, int(s)) for s in t_arr.ravel()])
    Ct = Ct.reshape(t_arr.shape)
    m = heavy_ball_noise_term(alpha, beta, lam, sigma2)
    with np.errstate(over="ignore"):
        out = 0.5 * lam.max() * (_transient(initial_state_error, Ct, rho, t_arr) + m)
    return _finite(out.reshape(np.shape(t)), "the bound", "initial_state_error or sigma2 too "
                   "large, or eigenvalues too small")
