r"""The tuners' "computed" column: the exact error of DP heavy ball on an admissible quadratic.

**The noise model of Kuru et al. (20) for the algorithm as run** [DERIVED from (8), (12), (39)].
DP-SHB (:func:`dpbounds.algorithms.dp_heavy_ball`) uses :math:`\nabla F_{B_t}(x)+\eta_t` with a
batch :math:`B_t` of :math:`m` of the :math:`n` samples drawn without replacement and
:math:`\eta_{t,k}\sim\mathrm{Laplace}(b_T)` i.i.d. The error :math:`w_t=v_t+\eta_t`
(:math:`v_t` the sampling error) has, given :math:`x_t`, independent parts and

* per coordinate :math:`k`: :math:`\mathrm{Var}(w_{t,k})=2b_T^2+\sigma_{y,k}^2\frac1m
  \frac{n-m}{n-1}` (Laplace variance :math:`2b^2`; (39) for the mean of a sample without
  replacement, :math:`\sigma_{y,k}^2` the population variance of coordinate :math:`k`);
* in total :math:`\mathbb E\lVert w_t\rVert^2=2db_T^2+\frac1m\frac{n-m}{n-1}\sum_k
  \sigma_{y,k}^2\le2db_T^2+\sigma_s^2(m,n)=\mathcal E_T` (20)-(21), since (41) bounds the
  **sum** over coordinates, :math:`\sum_k\sigma_{y,k}^2\le S_1^2/4`.

So :math:`\sigma_s^2` is a budget for the whole vector, not for each coordinate: the (20) of the
LMI bound is right, and charging :math:`\sigma_s^2` to each of the :math:`d` coordinates
(:math:`d\sigma_s^2` in total, what this module did before) describes no data set with
sensitivity :math:`S_1`. The budget is attained: the data :math:`\pm\frac{S_1}2e_j` (half of
the samples each, :math:`n` even) have :math:`L_1` sensitivity :math:`S_1` and
:math:`\sigma_{y,j}^2=S_1^2/4`.

:func:`heavy_ball_error` is therefore the exact :math:`\mathbb E[F(x_T)]-F^\ast` of DP-SHB on
a **concrete admissible instance** (:func:`worst_case_instance`): :math:`F=\tfrac12x^\top Qx`
with :math:`Q` diagonal, spectrum in :math:`[\mu,L]`, the initial error
:math:`x_0-x^\ast` in one coordinate within :math:`\lVert x_0-x^\ast\rVert^2\le D` and
:math:`F(x_0)-F^\ast\le E_0`, and the whole sampling variance in one coordinate; among a
few such instances the worst one. Every bound the tuners certify holds on it, so
"computed <= bound" is a test of the bound (``tests/tuning/test_contracts.py``, which also
checks this value against a Monte Carlo run of the real algorithm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_expected_error

__all__ = []

_N_LAMBDA = 9  # eigenvalues tried per coordinate (mu, L and interior points)


def worst_case_spectrum(mu: float, L: float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The quadratic diag(mu, L, ...): its two eigenvalues and their multiplicities.

    (Two numbers instead of a length-``d`` array: ``d`` may be 10^9.)
    """
    return np.array([mu, L]), np.array([d // 2, d - d // 2], dtype=float)


def sampling_variance_of_instance(sensitivity: float, n: int, m: int) -> float:
    r"""Exact variance of the batch-mean offset of the data :math:`\pm\frac{S_1}2e_j`.

    :math:`\lfloor n/2\rfloor` samples at :math:`+S_1/2`, the rest at :math:`-S_1/2`:
    population variance :math:`S_1^2k(n-k)/n^2` (:math:`=S_1^2/4` for even :math:`n`), times
    :math:`\frac1m\frac{n-m}{n-1}` (39); 0 when :math:`m=n`. Never above (21).
    """
    if m >= n:
        return 0.0
    k = n // 2
    return float(sensitivity * sensitivity * (k / n) * ((n - k) / n) / m * ((n - m) / (n - 1)))


@dataclass(frozen=True)
class HeavyBallInstance:
    """A diagonal quadratic and start on which :func:`heavy_ball_error` is exact.

    ``eigenvalues[k]`` is the curvature of coordinate ``k`` (length ``min(d, 3)``; the last
    one stands for ``repeat`` coordinates when ``d > 3``: :meth:`spectrum` spells them out),
    ``initial_error`` the start ``x0 - x*`` (in coordinate 0 only) and
    ``sampling_coordinate`` where the data offsets ``+-S1/2`` lie.
    """

    eigenvalues: np.ndarray
    repeat: int
    initial_error: float
    sampling_coordinate: int
    error: float

    def spectrum(self) -> np.ndarray:
        """All ``d`` eigenvalues (small ``d`` only)."""
        return np.concatenate([self.eigenvalues[:-1],
                               np.full(self.repeat, self.eigenvalues[-1])])


def _unit_errors(T: int, a: float, b: float, lams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact E[F(x_T)] - F* per eigenvalue for a unit start (no noise) and unit noise (x0 = x*)."""
    start = np.array([heavy_ball_expected_error(T, a, b, [lam], 0.0, 1.0)[1] for lam in lams])
    noise = np.array([heavy_ball_expected_error(T, a, b, [lam], 1.0, 0.0)[1] for lam in lams])
    return start, noise


def worst_case_instance(T: int, a: float, b: float, mu: float, L: float, d: int, *,
                        laplace_var: float, sampling_var: float, dist_sq: float,
                        initial_gap: float | None = None) -> HeavyBallInstance:
    r"""The worst of a family of admissible instances, with its exact error.

    Parameters
    ----------
    T : int
        Horizon.
    a : float
        Step size :math:`\alpha` (with ``b`` stable on :math:`[\mu,L]`).
    b : float
        Momentum :math:`\beta`.
    mu : float
        Strong convexity of the class :math:`\mathcal S_{\mu,L}` (quadratics).
    L : float
        Smoothness of the class.
    d : int
        Dimension.
    laplace_var :
        Per-coordinate Laplace variance :math:`2b_T^2`.
    sampling_var :
        Variance of the batch-mean sampling error, all of it in one coordinate
        (:func:`sampling_variance_of_instance`; at most :math:`\sigma_s^2` of (21)).
    dist_sq : float
        :math:`\lVert x_0-x^\ast\rVert^2\le D`.
    initial_gap : float, optional
        :math:`F(x_0)-F^\ast\le E_0` (if given).

    The exact error is linear in the squared start and in each coordinate's noise variance
    (the recursion is linear and the noise has mean 0), so each coordinate's eigenvalue is
    chosen from a grid of :math:`[\mu,L]` to maximise its own share.
    """
    lams = np.unique(np.concatenate([np.linspace(mu, L, _N_LAMBDA), [mu, L]]))
    start, noise = _unit_errors(T, a, b, lams)
    e0_sq = np.full(lams.size, float(dist_sq))
    if initial_gap is not None:
        e0_sq = np.minimum(e0_sq, 2.0 * float(initial_gap) / lams)  # F(x0) - F* <= E0
    j = int(np.argmax(noise))  # the worst curvature for noise
    with np.errstate(over="ignore", invalid="ignore"):
        if d >= 2:  # coordinate 0: the start; coordinate 1: the sampling; the rest: Laplace
            first = start * e0_sq + laplace_var * noise
            i = int(np.argmax(first))
            error = (first[i] + (d - 1) * laplace_var * noise[j] + sampling_var * noise[j])
            eig = np.array([lams[i], lams[j]] + ([lams[j]] if d > 2 else []))
            return HeavyBallInstance(eig, d - 2 if d > 2 else 1, math.sqrt(e0_sq[i]), 1,
                                     float(error))
        first = start * e0_sq + (laplace_var + sampling_var) * noise
        i = int(np.argmax(first))
        return HeavyBallInstance(np.array([lams[i]]), 1, math.sqrt(e0_sq[i]), 0,
                                 float(first[i]))


def heavy_ball_error(T: int, a: float, b: float, mu: float, L: float, d: int, *,
                     laplace_var: float, sampling_var: float, dist_sq: float,
                     initial_gap: float | None = None) -> float:
    r"""Exact :math:`\mathbb E[F(x_T)]-F^\ast` of DP-SHB on :func:`worst_case_instance`
    **[DERIVED]** (module docstring: the Laplace variance per coordinate, the sampling
    variance once in total)."""
    return worst_case_instance(T, a, b, mu, L, d, laplace_var=laplace_var,
                               sampling_var=sampling_var, dist_sq=dist_sq,
                               initial_gap=initial_gap).error
