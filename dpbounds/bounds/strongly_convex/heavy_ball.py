r"""Heavy ball (DP-SHB) on quadratics: rate, additive noise term, exact stationary error.

Kuru et al., Section 3.2, Theorem 3.5 and its proof (Appendix B.3). Heavy ball with step
:math:`\alpha` and momentum :math:`\beta` on :math:`F(x)=\tfrac12x^\top Qx+a^\top x+b` with
:math:`\mu I\preceq Q\preceq LI` and noisy gradients :math:`\nabla F(x_t)+w_t`,
:math:`\mathbb E[w_tw_t^\top|x_t]\preceq\sigma_T^2I` (for Laplace noise of scale :math:`b`,
:math:`\sigma_T^2=2b^2`):

.. math::
   \mathbb E[F(x_t)]-F^\ast\le V(\xi_0)C_t^2\rho^{2t}+L\,m(\alpha,\beta) \qquad (25)

   m(\alpha,\beta)=\frac{\sigma_T^2}{2}\sum_{i=1}^d
       \frac{2\alpha(1+\beta)}{(1-\beta)\lambda_i(2+2\beta-\alpha\lambda_i)}.

What this module settles (see ``kuru_et_al.md`` §11):

* **The rate.** Eq. (26) *as printed* uses the roots of
  :math:`z^2-(1+\beta)(1-\alpha\lambda)z+\beta(1-\alpha\lambda)`, the characteristic polynomial of
  **Nesterov's** method on a quadratic. Heavy ball's recursion (47) has
  :math:`z^2-(1+\beta-\alpha\lambda)z+\beta`, whose roots are the :math:`a_{\lambda,\pm}` of
  Appendix B.3. :func:`heavy_ball_rate` implements the heavy-ball roots (the correct rate, tested
  against the spectral radius of the iteration matrix and against simulation);
  :func:`heavy_ball_rate_eq26_as_printed` keeps the printed formula for reproducing Fig. 1 and
  the reference code ``rho_HB_quad.m``; it is the same function as
  :func:`nesterov_quadratic_rate`, its honest name.
* **The noise term is exact.** :math:`m(\alpha,\beta)` equals the stationary
  :math:`\mathbb E\lVert x_t-x^\ast\rVert^2` of heavy ball with isotropic noise (the 2x2 discrete
  Lyapunov equation per eigenvalue, solved symbolically in :func:`stationary_variance_symbolic`).
  The stationary suboptimality is :math:`\tfrac12\sum_i\lambda_i v_i`, so :math:`L\,m` overstates it
  by the factor :math:`2L\sum_i v_i/\sum_i\lambda_iv_i\in[2,2\kappa]` (:class:`StationaryError`).
  The intermediate claim :math:`\mathrm{Tr}(\bar E_t)\le m+\dots` of B.3 is off by a factor 2 in its
  limit: the trace of the stacked state :math:`(x_t,x_{t-1})` tends to :math:`2m`; (25) itself
  only needs the :math:`x_t` block and is valid.

Examples
--------
>>> from dpbounds.bounds.strongly_convex.heavy_ball import (
...     heavy_ball_rate, heavy_ball_rate_eq26_as_printed)
>>> round(heavy_ball_rate(1.0, 0.3, mu=0.5, L=1.0), 4)        # HB roots (App. B.3)
0.5477
>>> round(heavy_ball_rate_eq26_as_printed(1.0, 0.3, mu=0.5, L=1.0), 4)  # NAG roots
0.3873
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from dpbounds._validation import check_finite, check_int, check_nonnegative, check_positive
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "SOURCE_B3_ROOTS",
    "SOURCE_BOUND_DERIVED",
    "SOURCE_EQ26_PRINTED",
    "SOURCE_PROP34",
    "SOURCE_STATIONARY",
    "SOURCE_THM35",
    "StationaryError",
    "classical_heavy_ball_parameters",
    "heavy_ball_bound_valid",
    "heavy_ball_expected_error",
    "heavy_ball_iteration_blocks",
    "heavy_ball_iteration_matrix",
    "heavy_ball_noise_term",
    "heavy_ball_quadratic_bound",
    "heavy_ball_rate",
    "heavy_ball_rate_eq26_as_printed",
    "heavy_ball_stationary_error",
    "heavy_ball_transient_constant",
    "nesterov_quadratic_rate",
    "stationary_variance",
    "stationary_variance_symbolic",
]

SOURCE_THM35 = Source(KURU, "Theorem 3.5, eqs. (24)-(25)", Provenance.VERBATIM)
SOURCE_B3_ROOTS = Source(
    KURU, "Appendix B.3, roots a_{lambda,+-} of (47)", Provenance.VERBATIM,
    "heavy-ball characteristic roots; eq. (26) as printed uses NAG's roots (sheet §11.2)",
)
SOURCE_EQ26_PRINTED = Source(
    KURU, "eq. (26) as printed", Provenance.VERBATIM,
    "roots of z^2-(1+b)(1-a l)z+b(1-a l): Nesterov on a quadratic, not heavy ball",
)
SOURCE_PROP34 = Source(
    KURU, "Proposition 3.4, eqs. (22)-(23)", Provenance.VERBATIM,
    "with B = [-alpha; 0] (eq. (18) prints +alpha, sheet §11.1)",
)
SOURCE_BOUND_DERIVED = Source(
    KURU, "Proposition 3.4 / Lemma B.1, noise term re-derived", Provenance.DERIVED,
    "E V(xi_{t+1}) <= rho^2 E V(xi_t) + (alpha^2 P11 + c L alpha^2/2) E||w||^2",
)
SOURCE_STATIONARY = Source(
    KURU, "Theorem 3.5 / App. B.3: exact stationary error", Provenance.DERIVED,
    "discrete Lyapunov equation of the 2x2 recursion per eigenvalue, solved with sympy",
)


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
    alpha, beta : float or array (broadcast)
        Step size > 0 and momentum in [0, 1).
    mu, L : float
        Strong convexity and smoothness, ``0 < mu <= L``.

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


# ----------------------------------------------------------------------------- noise term
def heavy_ball_noise_term(alpha: Any, beta: Any, eigenvalues: Any, sigma2: Any) -> Any:
    r""":math:`m(\alpha,\beta)` of Theorem 3.5 (VERBATIM).

    .. math:: m(\alpha,\beta)=\frac{\sigma_T^2}{2}\sum_{i=1}^d
              \frac{2\alpha(1+\beta)}{(1-\beta)\lambda_i(2+2\beta-\alpha\lambda_i)}

    Parameters
    ----------
    alpha, beta : float or array
        Step and momentum (broadcast against each other; ``eigenvalues`` is summed over).
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
    alpha_a, beta_a = _check_hb(alpha, beta)
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
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
    alpha, beta, mu, L, sigma2 :
        Step, momentum, :math:`\mu`, :math:`L`, per-coordinate noise variance :math:`\sigma_T^2`.
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


# ----------------------------------------------------------------------------- theorem objects
def _hb_rate_expr(alpha: sp.Expr, beta: sp.Expr, lam: sp.Expr, printed: bool) -> sp.Expr:
    if printed:  # (26) as printed: roots of z^2 - (1+b)(1-a l) z + b (1-a l)
        s, q = (1 + beta) * (1 - alpha * lam), beta * (1 - alpha * lam)
    else:  # App. B.3: roots of z^2 - (1+b-a l) z + b
        s, q = 1 + beta - alpha * lam, beta
    disc = s**2 - 4 * q
    return sp.Piecewise((sp.sqrt(sp.Max(q, 0)), disc < 0),
                        ((sp.Abs(s) + sp.sqrt(sp.Max(disc, 0))) / 2, True))


@functools.lru_cache(maxsize=2)
def theorem_3_5(rate: str = "heavy_ball") -> Any:
    r"""Theorem 3.5 / (25) as a :class:`~dpbounds.bounds.theorem.Theorem` (Fig. 1 form, d = 2).

    .. math:: \mathbb E[F(x_t)]-F^\ast\le\Big(E_0+\frac{\sigma^2\alpha^2}{1-\rho^2}\Big)(Ct)^2
              \rho^{2t}+L\,m(\alpha,\beta),\qquad Q=\mathrm{diag}(\mu,L)

    Symbols: ``alpha, beta, mu, L, sigma2`` (per-coordinate noise variance :math:`\sigma_T^2`),
    ``t``, ``C`` (:math:`C_t=Ct`) and ``E0`` (:math:`\mathbb E\lVert\xi_0-\xi^\ast\rVert^2`).
    ``rate="heavy_ball"`` uses the App. B.3 roots (correct); ``"eq26_as_printed"`` the printed
    (26) (Nesterov's roots), to reproduce Fig. 1.

    Example
    -------
    >>> thm = theorem_3_5()
    >>> round(float(thm.evaluate(alpha=0.5, beta=0.3, mu=0.5, L=1.0, sigma2=1e-4, t=50, C=1.0,
    ...                          E0=10.0)), 8)
    0.00012325
    """
    from dpbounds.bounds.theorem import Assumption, Theorem, sym

    if rate not in ("heavy_ball", "eq26_as_printed"):
        raise ValueError(f"rate must be 'heavy_ball' or 'eq26_as_printed', got {rate!r}")
    a, b, mu, L, s2, t, C, E0 = (sym(k) for k in ("alpha", "beta", "mu", "L", "sigma2", "t",
                                                   "C", "E0"))
    printed = rate == "eq26_as_printed"
    rho = sp.Max(_hb_rate_expr(a, b, mu, printed), _hb_rate_expr(a, b, L, printed))
    m = s2 / 2 * sum(2 * a * (1 + b) / ((1 - b) * lam * (2 + 2 * b - a * lam)) for lam in (mu, L))
    V0 = E0 + s2 * a**2 / (1 - rho**2)
    expr = V0 * (C * t) ** 2 * rho ** (2 * t) + L * m
    sources = (SOURCE_THM35, SOURCE_EQ26_PRINTED if printed else SOURCE_B3_ROOTS)
    return Theorem(
        name=f"kuru.theorem_3_5[{rate}]",
        quantity=r"\mathbb E[F(x_t)]-F^\ast",
        expr=expr,
        sources=sources,
        assumptions=(
            Assumption("F quadratic (24) with spectrum {mu, L} (Fig. 1, d = 2)"),
            Assumption("0 <= beta < 1", b < 1),
            Assumption("mu <= L", mu <= L),
            Assumption("rho < 1", rho < 1),
            Assumption("E[w w^T | x] <= sigma2 I, E[w | x] = 0"),
        ),
        regime={"t": 1},
        description="C_t = C t (the paper fixes C = 1 in Fig. 1); rho from "
                    + ("(26) as printed" if printed else "App. B.3 roots"),
    )


@functools.lru_cache(maxsize=1)
def stationary_error_theorem() -> Any:
    r"""Exact stationary :math:`\mathbb E[F(x)-F^\ast]` of DP-SHB on :math:`\mathrm{diag}(\mu,L)`.

    :math:`\tfrac12\sum_{\lambda\in\{\mu,L\}}\alpha(1+\beta)\sigma^2/((1-\beta)(2+2\beta-\alpha
    \lambda))` **[DERIVED]**, an equality (the :math:`L\,m(\alpha,\beta)` of (25) is >= 2 times it).
    """
    from dpbounds.bounds.theorem import Assumption, Theorem, sym

    a, b, mu, L, s2 = (sym(k) for k in ("alpha", "beta", "mu", "L", "sigma2"))
    sub = stationary_variance_symbolic()["suboptimality"]
    al, be, la, si = sp.symbols("alpha beta lam sigma2", positive=True)
    expr = sum(sub.xreplace({al: a, be: b, la: x, si: s2}) for x in (mu, L))
    return Theorem(
        name="kuru.stationary_error",
        quantity=r"\lim_t\mathbb E[F(x_t)]-F^\ast",
        expr=expr,
        sources=(SOURCE_STATIONARY, SOURCE_THM35),
        assumptions=(Assumption("0 <= beta < 1", b < 1),
                     Assumption("stability: alpha L < 2 (1 + beta)", a * L < 2 * (1 + b))),
        regime={"sigma2": 1},
        description="equality, not a bound: solution of the 2x2 discrete Lyapunov equation",
    )


__all__ += ["stationary_error_theorem", "theorem_3_5"]


def heavy_ball_symbolic(rate: str = "heavy_ball") -> dict[str, sp.Expr]:
    r"""Sympy expressions of :math:`\rho(\alpha,\beta;\mu,L)` and :math:`m(\alpha,\beta)` (d = 2).

    ``rate="heavy_ball"``: App. B.3 roots; ``"eq26_as_printed"``: (26) as printed. Symbols are
    :func:`dpbounds.bounds.theorem.sym` symbols ``alpha, beta, mu, L, sigma2``; ``m`` uses the
    spectrum :math:`\{\mu,L\}`. Evaluate with ``sympy.lambdify`` or through :func:`theorem_3_5`.
    """
    from dpbounds.bounds.theorem import sym

    if rate not in ("heavy_ball", "eq26_as_printed"):
        raise ValueError(f"rate must be 'heavy_ball' or 'eq26_as_printed', got {rate!r}")
    a, b, mu, L, s2 = (sym(k) for k in ("alpha", "beta", "mu", "L", "sigma2"))
    printed = rate == "eq26_as_printed"
    rho = sp.Max(_hb_rate_expr(a, b, mu, printed), _hb_rate_expr(a, b, L, printed))
    m = s2 / 2 * sum(2 * a * (1 + b) / ((1 - b) * lam * (2 + 2 * b - a * lam)) for lam in (mu, L))
    return {"rho": rho, "m": m}


__all__ += ["heavy_ball_symbolic"]
