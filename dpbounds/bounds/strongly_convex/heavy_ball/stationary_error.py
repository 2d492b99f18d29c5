r"""The exact error heavy ball's noise causes on a quadratic: stationary, and at a finite :math:`t`.

Kuru et al., Theorem 3.5 and Appendix B.3 (see ``kuru_et_al.md`` §11). **The noise term is
exact** (**DERIVED**). :math:`m(\alpha,\beta)` of (25) equals the stationary
:math:`\mathbb E\lVert x_t-x^\ast\rVert^2` of heavy ball with isotropic noise (the 2x2 discrete
Lyapunov equation per eigenvalue, solved symbolically in :func:`stationary_variance_symbolic`).
The stationary suboptimality is :math:`\tfrac12\sum_i\lambda_i v_i`, so :math:`L\,m` overstates it
by the factor :math:`2L\sum_i v_i/\sum_i\lambda_iv_i\in[2,2\kappa]` (:class:`StationaryError`).
The intermediate claim :math:`\mathrm{Tr}(\bar E_t)\le m+\dots` of B.3 is off by a factor 2 in its
limit: the trace of the stacked state :math:`(x_t,x_{t-1})` tends to :math:`2m`; (25) itself
only needs the :math:`x_t` block and is valid.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from dpbounds._validation import check_finite, check_nonnegative, check_positive, check_scalars
from dpbounds.bounds.strongly_convex.heavy_ball.dynamics import (
    _blocks,
    _check_hb,
    _check_steps,
    _finite,
    _hb_rate_at,
    _matrix_powers,
    _out,
)
from dpbounds.bounds.strongly_convex.heavy_ball.sources import SOURCE_STATIONARY
from dpbounds.provenance import Source

__all__ = [
    "StationaryError",
    "heavy_ball_expected_error",
    "heavy_ball_noise_term",
    "heavy_ball_stationary_error",
    "stationary_variance",
    "stationary_variance_symbolic",
]


# ----------------------------------------------------------------------------- noise term
def heavy_ball_noise_term(alpha: Any, beta: Any, eigenvalues: Any, sigma2: Any) -> Any:
    r""":math:`m(\alpha,\beta)` of Theorem 3.5 (VERBATIM).

    .. math:: m(\alpha,\beta)=\frac{\sigma_T^2}{2}\sum_{i=1}^d
              \frac{2\alpha(1+\beta)}{(1-\beta)\lambda_i(2+2\beta-\alpha\lambda_i)}

    Parameters
    ----------
    alpha : float or array
        Step size (broadcast against ``beta``; ``eigenvalues`` is summed over).
    beta : float or array
        Momentum.
    eigenvalues : array
        Eigenvalues :math:`\lambda_i` of :math:`Q`.
    sigma2 : float
        Per-coordinate noise variance :math:`\sigma_T^2` (``2 b**2`` for Laplace scale ``b``).

    Returns
    -------
    float or array
        ``m``; ``inf`` where :math:`\alpha\lambda_i\ge2(1+\beta)` (heavy ball diverges).
    """
    alpha, beta = _check_hb(alpha, beta)
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    if lam.ndim > 1:  # a 2-d array raised TypeError (fuzz round 7)
        raise ValueError(f"eigenvalues must be one number or a 1-d array, got shape "
                         f"{lam.shape}")
    sigma2 = check_nonnegative("sigma2", sigma2)
    unstable = ~np.all(_stable(alpha[..., None], beta[..., None], lam), axis=-1)
    v = stationary_variance(alpha[..., None], beta[..., None], lam, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        m = np.where(unstable, np.inf, sigma2 * np.sum(np.where(np.isfinite(v), v, 0.0), axis=-1))
    if np.any(~unstable & ~np.isfinite(m)):
        raise ValueError("m(alpha, beta) overflows float64 at these inputs (sigma2 too large or "
                         "eigenvalues too small)")
    return _out(m)


def _stable(alpha: Any, beta: Any, lam: Any) -> np.ndarray:
    """Heavy ball converges on eigenvalue lam: 0 < alpha lam < 2 (1 + beta) (0 <= beta < 1)."""
    with np.errstate(over="ignore"):
        return alpha * lam < 2.0 * (1.0 + beta)


def stationary_variance(alpha: Any, beta: Any, lam: Any, sigma2: Any = 1.0) -> np.ndarray:
    r"""Per-eigenvalue stationary :math:`\mathrm{Var}(x-x^\ast)` of heavy ball (broadcast).

    :math:`v_\lambda=\alpha(1+\beta)\sigma^2/\big((1-\beta)\lambda(2+2\beta-\alpha\lambda)
    \big)` (the summand of :math:`m(\alpha,\beta)`; :func:`stationary_variance_symbolic`
    derives it); ``inf`` where heavy ball is unstable on ``lam``.
    """
    for name, value in (("alpha", alpha), ("beta", beta), ("lam", lam), ("sigma2", sigma2)):
        if not np.all(np.isfinite(np.asarray(value, dtype=float))):
            raise ValueError(f"{name} must be finite, got {value!r}")
    alpha, beta, lam, sigma2 = (np.asarray(v, dtype=float) for v in (alpha, beta, lam, sigma2))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        den = (1.0 - beta) * lam * (2.0 + 2.0 * beta - alpha * lam)
        v = alpha * (1.0 + beta) * sigma2 / den
    return np.where(den > 0, v, np.inf)


@functools.lru_cache(maxsize=1)
def stationary_variance_symbolic() -> dict[str, sp.Expr]:
    r"""Stationary covariance of heavy ball in one eigen-direction, solved symbolically.

    With :math:`e_t=x_t-x^\ast` along an eigenvector of eigenvalue :math:`\lambda` the state
    :math:`(e_t,e_{t-1})` obeys :math:`s_{t+1}=T s_t+(-\alpha w_t,0)`,
    :math:`T=\begin{bmatrix}1+\beta-\alpha\lambda&-\beta\\1&0\end{bmatrix}`. The stationary
    covariance :math:`\Sigma` solves the discrete Lyapunov equation
    :math:`\Sigma=T\Sigma T^\top+\mathrm{diag}(\alpha^2\sigma^2,0)`.

    Returns
    -------
    dict
        ``"variance"`` (:math:`\Sigma_{11}=\mathbb E e_t^2`), ``"covariance"``
        (:math:`\Sigma_{12}`), ``"suboptimality"`` (:math:`\tfrac12\lambda\Sigma_{11}`),
        ``"m_term"``
        (the summand of :math:`m(\alpha,\beta)` as printed) and ``"gap"``
        (``variance - m_term``, simplifies to 0). Symbols: ``alpha, beta, lam, sigma2``.
    """
    a, b, lam, s2 = sp.symbols("alpha beta lam sigma2", positive=True)
    s11, s12, s22 = sp.symbols("s11 s12 s22")
    T = sp.Matrix([[1 + b - a * lam, -b], [1, 0]])
    S = sp.Matrix([[s11, s12], [s12, s22]])
    N = sp.Matrix([[a**2 * s2, 0], [0, 0]])
    eq = T * S * T.T + N - S
    sol = sp.solve([eq[0, 0], eq[0, 1], eq[1, 1]], [s11, s12, s22], dict=True)[0]
    var = sp.factor(sp.simplify(sol[s11]))
    m_term = s2 / 2 * 2 * a * (1 + b) / ((1 - b) * lam * (2 + 2 * b - a * lam))
    return {
        "variance": var,
        "covariance": sp.factor(sp.simplify(sol[s12])),
        "suboptimality": sp.factor(lam * var / 2),
        "m_term": m_term,
        "gap": sp.simplify(var - m_term),
    }


@dataclass(frozen=True)
class StationaryError:
    r"""Exact stationary error of heavy ball on a quadratic next to Theorem 3.5's terms.

    Attributes
    ----------
    distance_sq:
        :math:`\lim_t\mathbb E\lVert x_t-x^\ast\rVert^2` (exact).
    suboptimality:
        :math:`\lim_t\mathbb E[F(x_t)]-F^\ast=\tfrac12\sum_i\lambda_iv_i` (exact).
    m:
        :math:`m(\alpha,\beta)` of Theorem 3.5 (equals ``distance_sq``: the term is tight).
    L_times_m:
        The additive term :math:`L\,m(\alpha,\beta)` of (25).
    source:
        Citation.
    """

    distance_sq: float
    suboptimality: float
    m: float
    L_times_m: float
    source: Source = SOURCE_STATIONARY
    unit_looseness: float | None = field(default=None, repr=False)

    @property
    def looseness(self) -> float:
        """``L_times_m / suboptimality`` (in ``[2, 2 kappa]``; 1 would be tight).

        The ratio does not depend on the noise level; for ``sigma2 = 0`` (0/0) it is the ratio
        at unit noise.
        """
        if self.unit_looseness is not None:
            return self.unit_looseness
        return self.L_times_m / self.suboptimality

    def __str__(self) -> str:
        return (f"stationary E||x-x*||^2 = {self.distance_sq:.6g} (m(alpha,beta) = {self.m:.6g}); "
                f"E[F-F*] = {self.suboptimality:.6g} vs L*m = {self.L_times_m:.6g} "
                f"(bound/exact = {self.looseness:.4g})")


def heavy_ball_stationary_error(
    alpha: float, beta: float, eigenvalues: Any, sigma2: float
) -> StationaryError:
    r"""Exact stationary error of DP-SHB on a quadratic with isotropic noise **[DERIVED]**.

    Per eigenvalue (from :func:`stationary_variance_symbolic`):
    :math:`v_i=\alpha(1+\beta)\sigma^2/\big((1-\beta)\lambda_i(2+2\beta-\alpha\lambda_i)\big)`;
    :math:`\mathbb E\lVert x-x^\ast\rVert^2=\sum_iv_i=m(\alpha,\beta)` and
    :math:`\mathbb E[F(x)-F^\ast]=\tfrac12\sum_i\lambda_iv_i`.

    Raises
    ------
    ValueError
        If heavy ball is unstable for some eigenvalue (no stationary distribution).

    Examples
    --------
    >>> err = heavy_ball_stationary_error(0.5, 0.3, [0.5, 1.0], sigma2=1e-4)
    >>> abs(err.distance_sq - err.m) < 1e-18, round(err.looseness, 4)
    (True, 2.9438)
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(alpha=alpha, beta=beta, sigma2=sigma2)
    alpha_a, beta_a = _check_hb(alpha, beta)
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    if lam.ndim > 1:  # a 2-d array raised TypeError (fuzz round 7)
        raise ValueError(f"eigenvalues must be one number or a 1-d array, got shape "
                         f"{lam.shape}")
    sigma2 = float(check_nonnegative("sigma2", sigma2))
    rho = float(np.max(_hb_rate_at(alpha_a, beta_a, lam)))
    if rho >= 1.0:
        raise ValueError(f"heavy ball with alpha={alpha}, beta={beta} is unstable on these "
                         f"eigenvalues (rho = {rho:.6g} >= 1): no stationary error")
    v = stationary_variance(float(alpha_a), float(beta_a), lam, sigma2)
    m = float(heavy_ball_noise_term(alpha, beta, lam, sigma2))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # v_i without its common factor alpha (1 + beta) sigma2 / (1 - beta): the looseness
        # ratio does not depend on it (and stays defined when v underflows or sigma2 = 0)
        unit = 1.0 / (lam * (2.0 + 2.0 * float(beta_a) - float(alpha_a) * lam))
        out = StationaryError(
            distance_sq=float(np.sum(v)),
            suboptimality=float(0.5 * np.sum(lam * v)),
            m=m,
            L_times_m=float(np.max(lam)) * m,
            unit_looseness=float(np.max(lam) * np.sum(unit) / (0.5 * np.sum(lam * unit))),
        )
    values = (out.distance_sq, out.suboptimality, out.L_times_m, out.looseness)
    if not all(np.isfinite(values)):
        raise ValueError("the stationary error overflows float64 at these inputs (sigma2 too "
                         "large or eigenvalues too small)")
    return out


# ----------------------------------------------------------------------------- bounds
def heavy_ball_expected_error(
    t: int, alpha: float, beta: float, eigenvalues: Any, sigma2: float, initial_error: Any
) -> tuple[float, float]:
    r"""Exact finite-time mean squared distance and suboptimality of heavy ball **[DERIVED]**.

    Heavy ball on :math:`\tfrac12x^\top Qx` (eigenvalues ``eigenvalues``) started at
    :math:`x_{-1}=x_0`, with :math:`x_0-x^\ast` having coordinates ``initial_error`` in the
    eigenbasis and i.i.d. noise of per-coordinate variance ``sigma2``. Uses
    :math:`\Sigma_t=\Sigma_\infty+T^t(\Sigma_0-\Sigma_\infty)T^{t\top}` per eigenvalue.
    """
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    if lam.ndim > 1:  # a 2-d array raised TypeError (fuzz round 7)
        raise ValueError(f"eigenvalues must be one number or a 1-d array, got shape "
                         f"{lam.shape}")
    e0 = np.asarray(check_finite("initial_error", initial_error), dtype=float)
    if e0.ndim > 1 or e0.size not in (1, lam.size):
        raise ValueError(f"initial_error must be a number or have one entry per eigenvalue "
                         f"({lam.size}), got shape {e0.shape}")
    e0 = np.broadcast_to(e0, lam.shape)
    alpha_a, beta_a = _check_hb(alpha, beta)
    sigma2 = float(check_nonnegative("sigma2", sigma2))
    t = _check_steps("t", t)
    if not np.all(_stable(float(alpha_a), float(beta_a), lam)):
        raise ValueError("heavy ball is unstable on these eigenvalues (alpha * eigenvalue >= "
                         "2 (1 + beta))")
    T = _blocks(float(alpha_a), float(beta_a), lam)
    with np.errstate(over="ignore", invalid="ignore"):
        # stationary covariance per eigenvalue (the Lyapunov solution; Sigma_22 = Sigma_11)
        v = stationary_variance(float(alpha_a), float(beta_a), lam, sigma2)
        cov = _stationary_covariance(float(alpha_a), float(beta_a), lam, sigma2)
        S_inf = np.zeros((lam.size, 2, 2))
        S_inf[:, 0, 0] = S_inf[:, 1, 1] = v
        S_inf[:, 0, 1] = S_inf[:, 1, 0] = cov
        S0 = np.ones((1, 2, 2)) * (e0**2)[:, None, None]  # x_{-1} = x_0: rank-one start
        Tt = _matrix_powers(T, t)
        St = S_inf + Tt @ (S0 - S_inf) @ np.transpose(Tt, (0, 2, 1))
        var_t = St[:, 0, 0]
        out = np.array([np.sum(var_t), 0.5 * np.sum(lam * var_t)])
    dist, gap = _finite(out, "the expected error", "sigma2 or initial_error too large, or "
                        "eigenvalues too small")
    return float(dist), float(gap)


def _stationary_covariance(alpha: float, beta: float, lam: np.ndarray, s2: float) -> np.ndarray:
    # Sigma_12 = (1+beta-alpha*lam)/(1+beta) * Sigma_11 (off-diagonal of the Lyapunov equation)
    return (1.0 + beta - alpha * lam) / (1.0 + beta) * stationary_variance(alpha, beta, lam, s2)
