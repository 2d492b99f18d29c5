r"""DP heavy ball with the noise a horizon implies: the bounds and their registry entries.

Each of :math:`T` steps is :math:`\epsilon/T`-DP through eqs. (11)-(13) of Kuru et al., so the
Laplace scale :math:`b_T=S_1/(m\epsilon_0)` grows with :math:`T` and the gradient noise has
:math:`\mathbb E\lVert w_t\rVert^2\le\mathcal E_T=2db_T^2+\sigma_s^2(m,n)`, eq. (20)
(:mod:`~dpbounds.bounds.strongly_convex.gradient_noise`; :math:`\sigma_s^2` bounds the sampling
variance of the whole vector, (41), not of each coordinate: :mod:`dpbounds.tuning._quadratic`
derives it for the algorithm as run). With it:

* :class:`HeavyBallDPObjective` / :func:`heavy_ball_dp_bound` — quadratics in
  :math:`\mathcal S_{\mu,L}` (Theorem 3.5's class), the rigorous version of (25) **[DERIVED]**:

  .. math:: B(\alpha,\beta,T)=\frac L2\Big(C_T^2\rho^{2T}\lVert\xi_0-\xi^\ast\rVert^2
            +\max_{\lambda\in\{\mu,L\}}v_\lambda(\alpha,\beta;1)\,\mathcal E_T\Big)

  with the exact transient constant :math:`C_T` (closed-form matrix powers,
  :mod:`~dpbounds.bounds.strongly_convex._lucas`, maximised over a grid of
  :math:`\lambda\in[\mu,L]`), :math:`v_\lambda` the exact stationary variance per direction
  (:func:`~dpbounds.bounds.strongly_convex.heavy_ball.stationary_variance`;
  :math:`m(\alpha,\beta)` is their sum): the noise of covariance :math:`R` adds
  :math:`\sum_i v_i(1)R_{ii}\le\max_iv_i(1)\,\mathrm{tr}R` to
  :math:`\mathbb E\lVert x_T-x^\ast\rVert^2` (in :math:`Q`'s eigenbasis; :math:`v` is
  the limit of increasing partial sums), and :math:`v_\lambda` is largest at
  :math:`\lambda\in\{\mu,L\}` (its denominator is concave in :math:`\lambda`);
* the bound (23) of Proposition 3.4 for all of :math:`\mathcal S_{\mu,L}` from a verified LMI
  certificate: :mod:`dpbounds.lmi.heavy_ball_bound` (above this package, ``dpbounds._layers``),
  built on :func:`best_horizon`, :data:`PARAMS` and :func:`problem_params` of this module.

Registered (:mod:`dpbounds.bounds.registry`) here, at its best horizon :math:`T\le T_{\max}`:

* ``strongly_convex.heavy_ball`` — quadratic problems, Polyak's :math:`(\alpha,\beta)`
  (``strongly_convex.heavy_ball_lmi`` is registered by :mod:`dpbounds.lmi.heavy_ball_bound`).

:func:`dpbounds.tuning.tune_heavy_ball` searches :math:`(\alpha,\beta,T)` on the same bounds.

Example
-------
>>> from dpbounds.bounds.registry import get
>>> e = get("strongly_convex.heavy_ball")
>>> p = dict(mu=0.02, L=5.1028, d=20, N=1e5, eps=1.0, S1=40.0, R=10.0, problem_class="quadratic")
>>> h = e.hyperparameters(p)
>>> 1 <= h["T"] <= 1000 and 0 < e.value(p) < 10.0
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbounds._validation import (
    MAX_COUNT,
    check_int,
    check_nonnegative,
    check_positive,
    check_scalars,
)
from dpbounds.bounds.numeric import NumericBound
from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.strongly_convex.gradient_noise import (
    SOURCE_EQ20,
    check_noise_fits,
    laplace_scale_at_horizon,
    subsampling_variance,
)
from dpbounds.bounds.strongly_convex.heavy_ball import (
    SOURCE_STATIONARY,
    SOURCE_THM35,
    classical_heavy_ball_parameters,
    heavy_ball_rate,
    stationary_variance,
    theorem_3_5,
)
from dpbounds.bounds.theorem import Assumption, sym

__all__ = ["heavy_ball_dp_bound", "problem_params"]

#: most entries :func:`heavy_ball_dp_bound` builds (1 GiB of float64)
MAX_BOUND_ARRAY = 1 << 27
#: largest horizon searched when the problem gives none: the largest T of Kuru et al.'s
#: Section 5 grid (T in {100, 200, 500, 1000})
DEFAULT_MAX_HORIZON = 1000
_BATCH = 1 << 18  # matrix powers evaluated per vectorised call


def log_chebyshev_envelope(c: np.ndarray, k: np.ndarray) -> np.ndarray:
    r"""log of a bound on :math:`g_k(c)=\sup_{|x|\le c}|U^{cheb}_{k-1}(x)|`:
    :math:`\min(k,1/\sqrt{1-c^2})` for :math:`c<1`, :math:`\sinh(k\varphi)/\sinh\varphi`
    (:math:`c=\cosh\varphi`) for :math:`c\ge1`; 0 for :math:`k=0`.
    Non-decreasing in :math:`c` (and equal to :math:`k` at 1)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inner = np.minimum(np.log(k), -0.5 * np.log1p(-np.minimum(c, 1.0) ** 2))
        phi = np.arccosh(np.maximum(c, 1.0))
        big = k * phi
        log_sinh_k = np.where(big > 20.0, big + np.log1p(-np.exp(-2.0 * big)) - math.log(2.0),
                              np.log(np.sinh(big)))
        log_sinh_1 = np.where(phi > 20.0, phi + np.log1p(-np.exp(-2.0 * phi)) - math.log(2.0),
                              np.log(np.sinh(phi)))
        outer = np.where(phi > 1e-7, log_sinh_k - log_sinh_1, np.log(k))
        out = np.where(c < 1.0, inner, outer)
    return np.where(k == 0, -np.inf, out)


def _log_power_bounds(log_q: np.ndarray, c: np.ndarray, a: np.ndarray, beta0: np.ndarray,
                      k: np.ndarray) -> np.ndarray:
    """log of the envelope P_k = sqrt(beta)^(k-1) g_k(c); for beta = 0 (no complex roots)
    P_k = a^(k-1) exactly (the limit)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gen = (k - 1.0) * log_q + log_chebyshev_envelope(c, k)
        zero_beta = np.where(k == 0, -np.inf, np.where(k == 1, 0.0, (k - 1.0) * np.log(a)))
        return np.where(beta0, zero_beta, gen)


def log_transient_envelope(alpha: Any, beta: Any, mu: float, L: float, T: Any) -> np.ndarray:
    r"""log of an upper bound on :math:`\sup_{\lambda\in[\mu,L]}\lVert M_\lambda^T\rVert_2^2`
    **[DERIVED]** (broadcast over ``alpha, beta, T``).

    :math:`M_\lambda^T=\begin{bmatrix}p_{T+1}&-\beta p_T\\p_T&-\beta p_{T-1}\end{bmatrix}` with
    :math:`p_k=\beta^{(k-1)/2}U^{cheb}_{k-1}(x)`, :math:`x=(1+\beta-\alpha\lambda)/(2\sqrt\beta)`
    (Cayley-Hamilton, :mod:`~dpbounds.bounds.strongly_convex._lucas`). :math:`|U^{cheb}_{k-1}(x)|`
    is at most :math:`\min(k,1/\sqrt{1-x^2})` for :math:`|x|<1` and increases in :math:`|x|\ge1`
    (from :math:`k` at 1), so over :math:`\lambda\in[\mu,L]` each entry is at most its value
    :math:`P_k` at the largest :math:`|x|`, an end point; the spectral norm is at most the
    Frobenius norm of those: :math:`P_{T+1}^2+(1+\beta^2)P_T^2+\beta^2P_{T-1}^2`. A maximum over a
    grid of :math:`\lambda` (what this bound used before) is not a bound: between grid points
    the oscillating :math:`\sin(T\theta)` can be ~100 times larger, and a tuner finds exactly
    such points. The envelope is non-decreasing in :math:`|x|_{\max}` and in :math:`\beta`,
    which gives :func:`dpbounds.tuning.tune_heavy_ball` its lower bounds on boxes.
    """
    alpha, beta, T = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (alpha, beta, T)))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        a = np.maximum(np.abs(1.0 + beta - alpha * mu), np.abs(1.0 + beta - alpha * L))
        return _log_envelope_at(a, beta, beta, T)


def _log_envelope_at(a: np.ndarray, q_beta: np.ndarray, beta: np.ndarray,
                     T: np.ndarray) -> np.ndarray:
    """log(P_{T+1}^2 + (1 + beta^2) P_T^2 + beta^2 P_{T-1}^2) at |x|max = a / (2 sqrt(q_beta)),
    the power sqrt(beta)^(k-1) and the coefficients taken at ``beta`` (a lower bound on a box
    when q_beta >= beta; the value when they are equal)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        c = a / (2.0 * np.sqrt(q_beta))
        log_q = 0.5 * np.log(beta)
        zero = beta == 0
        terms = [2.0 * _log_power_bounds(log_q, c, a, zero, T + 1.0),
                 np.log1p(beta * beta) + 2.0 * _log_power_bounds(log_q, c, a, zero, T),
                 2.0 * np.log(beta) + 2.0 * _log_power_bounds(log_q, c, a, zero, T - 1.0)]
        return np.logaddexp(np.logaddexp(terms[0], terms[1]), np.where(zero, -np.inf, terms[2]))


class HeavyBallDPObjective:
    r"""The DP heavy-ball bound :math:`B(\alpha,\beta,T)` of a set of stable :math:`(\alpha,\beta)`.

    ``values(p, T)`` evaluates :math:`B` at pairs (point index, horizon) in :math:`O(1)` each
    (:func:`log_transient_envelope`, a bound over every :math:`\lambda\in[\mu,L]`), and
    ``lower(p, lo, hi)`` bounds :math:`B` from below on :math:`T\in[lo,hi]`:
    :math:`\lVert M_\lambda^T\rVert_2\ge\rho_\lambda^T` (the spectral radius) decreases in
    :math:`T` and the noise term increases in :math:`T` (each step gets
    :math:`\epsilon/T`).
    """

    def __init__(self, alpha: np.ndarray, beta: np.ndarray, mu: float, L: float,
                 lams: np.ndarray | None = None, *, d: int, n: int, m: int, epsilon: float,
                 sensitivity: float, dist_sq: float) -> None:
        del lams  # the envelope covers every lambda in [mu, L]
        self.alpha, self.beta, self.mu = np.asarray(alpha, float), np.asarray(beta, float), mu
        self.rho = np.asarray(heavy_ball_rate(self.alpha, self.beta, mu, L), dtype=float)
        self.rho = np.atleast_1d(self.rho)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.vmax = np.maximum(stationary_variance(alpha, beta, mu),
                                   stationary_variance(alpha, beta, L))  # per sigma^2
        self.L, self.d, self.dist_sq = L, d, dist_sq
        self._noise = (sensitivity, n, m, epsilon)

    def noise_variance(self, T: np.ndarray) -> np.ndarray:
        r""":math:`\mathcal E_T=2db_T^2+\sigma_s^2` of (20): the total, not per coordinate."""
        S, n, m, eps = self._noise
        b = np.asarray(laplace_scale_at_horizon(T, S, n, m, eps))
        with np.errstate(over="ignore", invalid="ignore"):
            return 2.0 * self.d * b * b + subsampling_variance(S, n, m)

    def transient(self, p: np.ndarray, T: np.ndarray) -> np.ndarray:
        """The bound on sup_lambda ||M_lambda^T||_2^2 of points ``p``."""
        with np.errstate(over="ignore", under="ignore"):
            return np.exp(log_transient_envelope(self.alpha[p], self.beta[p], self.mu, self.L,
                                                 T))

    def values(self, p: np.ndarray, T: np.ndarray) -> np.ndarray:
        out = np.empty(p.size)
        step = _BATCH
        for i in range(0, p.size, step):  # bounded memory
            pi, Ti = p[i:i + step], T[i:i + step]
            noise = self.vmax[pi] * self.noise_variance(Ti)
            with np.errstate(over="ignore", invalid="ignore"):
                out[i:i + step] = 0.5 * self.L * (self.transient(pi, Ti) * 2.0 * self.dist_sq
                                                  + noise)
        return out

    def lower(self, p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            trans = np.exp(2.0 * hi * np.log(self.rho[p]))  # rho = 0: exactly 0
            return 0.5 * self.L * (trans * 2.0 * self.dist_sq
                                   + self.vmax[p] * self.noise_variance(lo))


def heavy_ball_dp_bound(
    alpha: Any, beta: Any, mu: float, L: float, *, d: int, n: int, epsilon: float,
    sensitivity: float, initial_distance_sq: float, max_horizon: int, m: int | None = None,
    n_lambda: int = 24,
) -> np.ndarray:
    r"""The DP heavy-ball bound :math:`B(\alpha,\beta,T)` for :math:`T=1..T_{\max}` **[DERIVED]**.

    Returns an array of shape ``(len(alpha), max_horizon)`` (``inf`` where heavy ball is unstable
    or the value exceeds the float64 range); that array is limited to
    :data:`MAX_BOUND_ARRAY` entries (the tuner itself never builds it: it searches the horizons
    by branch and bound). ``initial_distance_sq`` is :math:`\lVert x_0-x^\ast\rVert^2`
    (:math:`x_{-1}=x_0`, so :math:`\lVert\xi_0-\xi^\ast\rVert^2` is twice it).
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(mu=mu, L=L, d=d, n=n, epsilon=epsilon, sensitivity=sensitivity,
                  initial_distance_sq=initial_distance_sq, max_horizon=max_horizon, m=m,
                  n_lambda=n_lambda)
    alpha = np.atleast_1d(check_positive("alpha", alpha)).astype(float)
    if alpha.ndim > 1:  # a 2-d grid raised an IndexError (fuzz round 7)
        raise ValueError(f"alpha must be one number or a 1-d array, got shape {alpha.shape}")
    try:
        beta = np.broadcast_to(np.asarray(check_nonnegative("beta", beta), dtype=float),
                               alpha.shape)
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        raise ValueError(f"beta must be one number or an array of alpha's shape "
                         f"{alpha.shape}, got shape {np.shape(beta)}") from None
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    d = check_int("d", d, minimum=1, maximum=MAX_COUNT)  # 10**400 overflowed
    n = check_int("n", n, minimum=1, maximum=MAX_COUNT)
    m = n if m is None else check_int("m", m, minimum=1, maximum=n)
    epsilon = float(check_positive("epsilon", epsilon))
    sensitivity = float(check_positive("sensitivity", sensitivity))
    initial_distance_sq = float(check_nonnegative("initial_distance_sq", initial_distance_sq))
    Tmax = check_int("max_horizon", max_horizon, minimum=1)
    n_lambda = check_int("n_lambda", n_lambda, minimum=2, maximum=4096)
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
    obj = HeavyBallDPObjective(alpha[stable], beta[stable], mu, L, lams, d=d, n=n, m=m,
                                epsilon=epsilon, sensitivity=sensitivity,
                                dist_sq=initial_distance_sq)
    k = int(np.sum(stable))
    T = np.arange(1, Tmax + 1)
    out[stable] = obj.values(np.repeat(np.arange(k), Tmax), np.tile(T, k)).reshape(k, Tmax)
    return out


# ----------------------------------------------------------------------------- registry
def problem_params(p: Mapping[str, Any]) -> dict[str, Any]:
    r"""The shared problem in the strongly convex bounds' terms: ``mu, L, d, n, m, eps, S1``,
    ``E0`` (:math:`F(x_0)-F^\ast` = the problem's ``R``) and ``max_horizon``.

    ``N``, ``d``, ``m`` must be integers (Kuru et al.'s ``n`` data points, batches of ``m``);
    ``m`` defaults to ``N`` (no subsampling), ``max_horizon`` to :data:`DEFAULT_MAX_HORIZON`.
    """
    n = check_int("N", p["N"], minimum=1)
    return {"mu": float(p["mu"]), "L": float(p["L"]), "d": check_int("d", p["d"], minimum=1),
            "n": n, "m": check_int("m", p.get("m", n), minimum=1, maximum=n),
            "eps": float(p["eps"]), "S1": float(p["S1"]), "E0": float(p["R"]),
            "max_horizon": check_int("max_horizon", p.get("max_horizon", DEFAULT_MAX_HORIZON),
                                     minimum=1)}


#: the parameters of both DP heavy-ball entries (this module's and dpbounds.lmi.heavy_ball_bound's)
PARAMS = ("mu", "L", "d", "n", "m", "eps", "S1", "E0", "max_horizon")
ASSUMPTION_MU = Assumption("mu <= L", sym("mu") <= sym("L"))
ASSUMPTION_DP = Assumption("pure eps-DP: Laplace noise with eps/T per step (eqs. (11)-(13)), "
                           "basic composition, replace-one neighbours, batches of m without "
                           "replacement")


def best_horizon(values: np.ndarray, what: str) -> tuple[float, int]:
    """The smallest of ``values`` (NaN: unstable, skipped) and its horizon (1-based)."""
    values = np.where(np.isnan(values), np.inf, values)
    k = int(np.argmin(values))
    if not math.isfinite(values[k]):
        raise ValueError(f"{what} is not finite at any horizon T <= max_horizon (heavy ball "
                         "unstable, or epsilon too small for this problem)")
    return float(values[k]), k + 1


def _quadratic(p: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
    """Polyak's (alpha, beta) at the horizon minimising the rigorous (25)."""
    check_noise_fits(p["S1"], p["n"], p["m"], p["eps"], p["d"])
    alpha, beta = classical_heavy_ball_parameters(p["mu"], p["L"])
    B = heavy_ball_dp_bound(alpha, beta, p["mu"], p["L"], d=p["d"], n=p["n"], m=p["m"],
                            epsilon=p["eps"], sensitivity=p["S1"],
                            initial_distance_sq=2.0 * p["E0"] / p["mu"],
                            max_horizon=p["max_horizon"])[0]
    value, T = best_horizon(B, "the heavy-ball bound (25)")
    return value, {"alpha": alpha, "beta": beta, "T": float(T)}


_QUADRATIC = NumericBound(
    name="strongly_convex.heavy_ball (Theorem 3.5, rigorous (25), best T)",
    quantity=r"\mathbb E[F(x_T)]-F^\ast",
    parameters=PARAMS,
    method="best horizon T <= max_horizon of the rigorous (25) with exact C_T",
    evaluator=_quadratic,
    sources=(SOURCE_THM35, SOURCE_STATIONARY, SOURCE_EQ20),
    assumptions=(Assumption("F quadratic with spectrum in [mu, L] (Theorem 3.5)"), ASSUMPTION_MU,
                 ASSUMPTION_DP),
    closed_form=theorem_3_5(),
    description="(25) with the exact transient constant C_T and the exact stationary variance "
                "(DERIVED; the printed (25) leaves C_t = O(t) unspecified); Polyak's "
                "alpha = 4/(sqrt(mu)+sqrt(L))^2, beta = ((sqrt(kappa)-1)/(sqrt(kappa)+1))^2",
)

register(Entry(
    name="strongly_convex.heavy_ball",
    title="DP heavy ball on quadratics, Polyak's (alpha, beta), best T (Kuru et al. Thm 3.5)",
    problem_class="quadratic",
    theorem=_QUADRATIC,
    tuned=_QUADRATIC,
    to_params=problem_params,
    requires=("mu", "S1"),
    crossovers=False,
    notes="rigorous (25) [DERIVED]; E0 = R; tune (alpha, beta, T) with 'dpbounds tune hb'",
    algorithm="dpbounds.algorithms.dp_heavy_ball",
    figure="paper_figs/kuru_fig1.py",
    test="tests/bounds/strongly_convex/test_heavy_ball_dp.py",
))
