r"""Heavy ball's linear dynamics on a quadratic: iteration matrices, rates, transient constant.

Kuru et al., Section 3.2 and Appendix B.3 (see ``kuru_et_al.md`` §11). **The rate.** Eq. (26)
*as printed* uses the roots of
:math:`z^2-(1+\beta)(1-\alpha\lambda)z+\beta(1-\alpha\lambda)`, the characteristic polynomial of
**Nesterov's** method on a quadratic. Heavy ball's recursion (47) has
:math:`z^2-(1+\beta-\alpha\lambda)z+\beta`, whose roots are the :math:`a_{\lambda,\pm}` of
Appendix B.3. :func:`heavy_ball_rate` implements the heavy-ball roots (the correct rate, tested
against the spectral radius of the iteration matrix and against simulation);
:func:`heavy_ball_rate_eq26_as_printed` keeps the printed formula for reproducing Fig. 1 and
the reference code ``rho_HB_quad.m``; it is the same function as
:func:`nesterov_quadratic_rate`, its honest name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbounds._validation import check_finite, check_int, check_positive, check_scalars

__all__ = [
    "classical_heavy_ball_parameters",
    "heavy_ball_iteration_blocks",
    "heavy_ball_iteration_matrix",
    "heavy_ball_rate",
    "heavy_ball_rate_eq26_as_printed",
    "heavy_ball_transient_constant",
    "nesterov_quadratic_rate",
]


# ----------------------------------------------------------------------------- inputs
def _check_hb(alpha: Any, beta: Any) -> tuple[np.ndarray, np.ndarray]:
    alpha = np.asarray(check_positive("alpha", alpha), dtype=float)
    beta = np.asarray(check_finite("beta", beta), dtype=float)
    if np.any((beta < 0) | (beta >= 1)):
        shown = beta.item() if beta.ndim == 0 else beta  # 1.5, not array(1.5)
        raise ValueError(f"beta must lie in [0, 1), got {shown!r}")
    return alpha, beta


def _check_mu_L(mu: Any, L: Any) -> tuple[float, float]:
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    return mu, L


def _out(x: np.ndarray) -> Any:
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def _finite(x: Any, what: str, cause: str) -> Any:
    """``x`` as returned by :func:`_out`, or a ValueError saying which inputs overflow."""
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} is not finite in float64 at these inputs ({cause})")
    return _out(x)


def _check_steps(name: str, t: Any) -> int:
    # 2**53: every larger float is an even integer, and rho**t has underflowed long before
    return check_int(name, t, minimum=0, maximum=2**53)


def classical_heavy_ball_parameters(mu: float, L: float) -> tuple[float, float]:
    r"""Polyak's tuning :math:`\alpha=4/(\sqrt\mu+\sqrt L)^2`,
    :math:`\beta=((\sqrt\kappa-1)/(\sqrt\kappa+1))^2`.

    Kuru et al., Section 3.2 (VERBATIM). It minimises the quadratic rate without noise:
    :math:`\rho=\sqrt\beta=(\sqrt\kappa-1)/(\sqrt\kappa+1)`.
    """
    mu, L = _check_mu_L(mu, L)
    with np.errstate(over="ignore", divide="ignore"):
        alpha = 4.0 / (np.sqrt(mu) + np.sqrt(L)) ** 2
    q = np.sqrt(mu / L)  # 1/sqrt(kappa): no inf/inf for mu << L
    beta = ((1.0 - q) / (1.0 + q)) ** 2
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha = 4/(sqrt(mu)+sqrt(L))^2 is not a positive float64 for mu={mu}, "
                         f"L={L}")
    return float(alpha), float(beta)


# ----------------------------------------------------------------------------- rates
def _root_modulus(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Largest |root| of z^2 - s z + q (real s, q), vectorised and without complex numbers.

    Scaled by ``max(|s|, sqrt|q|)`` so that no square overflows; ``inf`` when ``s`` or ``q`` is
    infinite (a root is).
    """
    s, q = np.broadcast_arrays(np.asarray(s, dtype=float), np.asarray(q, dtype=float))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        k = np.maximum(np.abs(s), np.sqrt(np.abs(q)))
        k = np.where((k > 0) & np.isfinite(k), k, 1.0)
        s1, q1 = s / k, q / k / k
        disc = s1 * s1 - 4.0 * q1
        real = disc >= 0
        r_real = 0.5 * (np.abs(s1) + np.sqrt(np.where(real, disc, 0.0)))
        r_cplx = np.sqrt(np.where(real, 0.0, q1))  # complex pair: |z|^2 = q > 0
        out = k * np.where(real, r_real, r_cplx)
    return np.where(np.isfinite(s) & np.isfinite(q), out, np.inf)


def _hb_rate_at(alpha: np.ndarray, beta: np.ndarray, lam: Any) -> np.ndarray:
    with np.errstate(over="ignore"):  # alpha * lam = inf: the rate is inf
        return _root_modulus(1.0 + beta - alpha * lam, beta)


def heavy_ball_rate(alpha: Any, beta: Any, mu: float, L: float) -> Any:
    r"""Heavy-ball rate on quadratics,
    :math:`\rho=\max_{\lambda\in\{\mu,L\}}\max_\pm|a_{\lambda,\pm}|`.

    Roots of (47) (Kuru et al., App. B.3):
    :math:`a_{\lambda,\pm}=\tfrac12\big(1+\beta-\alpha\lambda\pm\sqrt{(1+\beta-\alpha\lambda)^2-4\beta}\big)`.
    :math:`\rho_\lambda` is a non-decreasing function of :math:`|1+\beta-\alpha\lambda|`, hence
    quasi-convex in :math:`\lambda`, and the maximum over :math:`[\mu,L]` sits at an end point.
    ``rho`` is the spectral radius of the iteration matrix :math:`M(\alpha,\beta)` for every
    quadratic with spectrum in :math:`[\mu,L]` that contains :math:`\mu` and :math:`L`.

    Parameters
    ----------
    alpha : float or array (broadcast)
        Step size, > 0.
    beta : float or array (broadcast)
        Momentum, in [0, 1).
    mu : float
        Strong convexity, ``0 < mu <= L``.
    L : float
        Smoothness.

    Returns
    -------
    float or array
        ``rho``; ``rho >= 1`` means heavy ball does not converge on some quadratic.

    Examples
    --------
    >>> mu, L = 0.1, 1.0
    >>> a, b = classical_heavy_ball_parameters(mu, L)
    >>> round(heavy_ball_rate(a, b, mu, L), 6) == round(b ** 0.5, 6)
    True
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(mu=mu, L=L)
    alpha, beta = _check_hb(alpha, beta)
    mu, L = _check_mu_L(mu, L)
    return _out(np.maximum(_hb_rate_at(alpha, beta, mu), _hb_rate_at(alpha, beta, L)))


def nesterov_quadratic_rate(alpha: Any, beta: Any, mu: float, L: float) -> Any:
    r"""Rate of Nesterov's method (6) on quadratics with spectrum in :math:`[\mu,L]`.

    Largest modulus of the roots of :math:`z^2-(1+\beta)(1-\alpha\lambda)z+\beta(1-\alpha\lambda)`,
    maximised over :math:`\lambda\in\{\mu,L\}`. This is exactly what Kuru et al. print as the
    heavy-ball rate (26); see :func:`heavy_ball_rate_eq26_as_printed`.
    """
    alpha, beta = _check_hb(alpha, beta)
    mu, L = _check_mu_L(mu, L)

    def at(lam: float) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            u = 1.0 - alpha * lam
            return _root_modulus((1.0 + beta) * u, np.where(beta == 0, 0.0, beta * u))

    return _out(np.maximum(at(mu), at(L)))


def heavy_ball_rate_eq26_as_printed(alpha: Any, beta: Any, mu: float, L: float) -> Any:
    r"""Kuru et al. eq. (26) **as printed** (VERBATIM), kept to reproduce Fig. 1.

    .. math:: a_{\lambda,\pm}=\tfrac12\Big((1+\beta)(1-\alpha\lambda)\pm
              \sqrt{(1+\beta)^2(1-\alpha\lambda)^2-4\beta(1-\alpha\lambda)}\Big)

    These are Nesterov's roots, not heavy ball's: they agree with :func:`heavy_ball_rate` only
    for :math:`\beta=0`. The reference code ``rho_HB_quad.m`` implements this formula.
    Use :func:`heavy_ball_rate` for heavy ball.
    """
    return nesterov_quadratic_rate(alpha, beta, mu, L)


def heavy_ball_iteration_matrix(alpha: float, beta: float, eigenvalues: Any) -> np.ndarray:
    r"""The iteration matrix :math:`M(\alpha,\beta)` of (47) in the eigenbasis of :math:`Q`.

    Returns the :math:`2d\times2d` matrix
    :math:`\begin{bmatrix}(1+\beta)I-\alpha\Lambda&-\beta I\\ I&0\end{bmatrix}` acting on
    :math:`(x_t-x^\ast, x_{t-1}-x^\ast)`.
    """
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    alpha, beta = (float(v) for v in _check_hb(alpha, beta))
    d = lam.size
    with np.errstate(over="ignore"):
        diag = _finite(1.0 + beta - alpha * lam, "the iteration matrix",
                       "alpha * eigenvalues overflows")
    M = np.zeros((2 * d, 2 * d))
    M[:d, :d] = np.diag(np.atleast_1d(diag))
    M[:d, d:] = -beta * np.eye(d)
    M[d:, :d] = np.eye(d)
    return M


def heavy_ball_iteration_blocks(alpha: Any, beta: Any, lam: Any) -> np.ndarray:
    r"""The 2x2 blocks :math:`T_\lambda=\begin{bmatrix}1+\beta-\alpha\lambda&-\beta\\1&0
    \end{bmatrix}` of :math:`M(\alpha,\beta)` per eigenvalue (App. B.3), broadcast over
    ``alpha, beta, lam``: shape ``broadcast + (2, 2)``."""
    a, b, lam = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (alpha, beta, lam)))
    for name, value in (("alpha", a), ("beta", b), ("lam", lam)):
        if not np.isfinite(value).all():
            raise ValueError(f"{name} must be finite (got {value[~np.isfinite(value)].flat[0]})")
    T = np.zeros(a.shape + (2, 2))
    with np.errstate(over="ignore"):  # inf entries: the callers check finiteness
        T[..., 0, 0] = 1.0 + b - a * lam
    T[..., 0, 1] = -b
    T[..., 1, 0] = 1.0
    return T


def _blocks(alpha: float, beta: float, lam: np.ndarray) -> np.ndarray:
    """Stack of the 2x2 blocks T_i of M (shape (d, 2, 2))."""
    return heavy_ball_iteration_blocks(alpha, beta, lam)


def _matrix_powers(T: np.ndarray, t: int) -> np.ndarray:
    """T^t for a stack of square matrices, by repeated squaring."""
    out = np.broadcast_to(np.eye(T.shape[-1]), T.shape).copy()
    base = T.copy()
    while t > 0:
        if t & 1:
            out = out @ base
        t >>= 1
        if t:
            base = base @ base
    return out


def heavy_ball_transient_constant(alpha: float, beta: float, eigenvalues: Any, t: int) -> float:
    r"""The smallest :math:`C_t` with :math:`\lVert M^t\rVert_2\le C_t\rho^t` **[DERIVED]**.

    Theorem 3.5 only states :math:`C_t=\mathcal O(t)`; this evaluates
    :math:`C_t=\max_i\lVert T_i^t\rVert_2/\rho^t` exactly (``rho`` the spectral radius over the
    given eigenvalues), so (25) becomes a number.
    """
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    alpha, beta = (float(v) for v in _check_hb(alpha, beta))
    t = _check_steps("t", t)
    rho = float(np.max(_hb_rate_at(np.asarray(alpha), np.asarray(beta), lam)))
    T = _blocks(alpha, beta, lam)
    if 0 < rho < np.inf:
        T = T / rho  # ||(T/rho)^t|| grows at most polynomially: no overflow or 0/0 for large t
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(_matrix_powers(T, t), ord=2, axis=(1, 2))
    return float(_finite(np.max(norms), "C_t", "t or alpha * eigenvalues too large"))
