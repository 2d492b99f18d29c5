r"""DP-NAG and multi-stage DP-MASG error bounds (Kuru et al., Section 4).

Theorem 4.1 (adapted from Aybat et al. 2019, Thm 2.3): DP-NAG with :math:`\alpha\le1/L`,
:math:`\beta=(1-\sqrt{\alpha\mu})/(1+\sqrt{\alpha\mu})` and Laplace noise of scale :math:`b_t`
satisfies

.. math:: E_t\le(1-\sqrt{\mu\alpha})E_{t-1}+\alpha(1+\alpha L)\big(b_t^2d+\sigma_s^2(m,n)/2\big)
          \qquad(28)

and, unrolled, :math:`E_T\le a_{T,0}E_0+\sum_{t=1}^Ta_{T,t}(b_t^2d+\sigma_s^2/2)` (29) with
:math:`a_{T,t}=(1-\sqrt{\mu\alpha})^{T-t}\alpha(1+\alpha L)`. Theorem 4.3 (DP-MASG, stage
schedule (33)) has the same form with
:math:`a_{T,t}=2^{s_T-s_t}\prod_{i=t+1}^T(1-\sqrt{\mu\alpha^{(s_i)}})\,\alpha^{(s_t)}(1+\alpha^{(s_t)}L)`.

Every weight is computed as a **logarithm** (cumulative sums of ``log1p(-sqrt(mu alpha))``), so
horizons up to :math:`T=10^7` neither overflow nor underflow.

Decisions on the paper/code mismatches (``kuru_et_al.md`` §11-§12, each has a test):

* **Factor in** :math:`a_{T,t}`. The paper's :math:`\alpha(1+\alpha L)` is right: Aybat et al.'s
  noise term is :math:`\alpha(1+\alpha L)\sigma^2/2` with
  :math:`\sigma^2\ge\mathbb E\lVert w\rVert^2`,
  and Laplace noise has :math:`\mathbb E\lVert\eta\rVert^2=2b^2d`. The reference code's
  :math:`(\alpha/2)(1+\alpha L)` (and its :math:`2^{s_T}` instead of :math:`2^{s_T-s_0}` on
  :math:`E_0`) is available as ``convention="reference_code"`` to reproduce its horizon choices.
* **Stage-1 length**. (33) only asks :math:`n_1\ge1`. Default
  :math:`\lceil2\sqrt\kappa\ln\sqrt\kappa\rceil` (the Section-5 code);
  ``first_stage_rounding="floor"`` reproduces the Fig. 2 script (:math:`T=53,133,293,613` for
  :math:`K=2..5`).
* **m vs n in the Laplace scale**: see :mod:`dpbounds.bounds.strongly_convex.noise_allocation`.

Examples
--------
>>> from dpbounds.bounds.strongly_convex.nesterov import masg_schedule
>>> [masg_schedule(1.0, 20.0, stages=K, first_stage_rounding="floor").horizon for K in (2, 3, 4, 5)]
[53, 133, 293, 613]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpbounds._validation import check_finite, check_int, check_nonnegative, check_positive
from dpbounds.provenance import Source
from dpbounds.schedules import (  # their home (the algorithms use them too); re-exported
    MAX_HORIZON,
    SOURCE_EQ33,
    SOURCE_THM41,
    SOURCE_THM43,
    Schedule,
    masg_schedule,
    nesterov_momentum,
    nesterov_schedule,
)

__all__ = ["MAX_HORIZON", "SOURCE_EQ33", "SOURCE_THM41", "SOURCE_THM43", "Schedule",
           "masg_schedule", "nesterov_momentum", "nesterov_schedule", "unrolled_bound"]

CONVENTIONS = ("paper", "reference_code")


@dataclass(frozen=True)
class ErrorWeights:
    r"""Log-weights of the unrolled bound (29)/(34): :math:`\log a_{T,0}`, :math:`\log a_{T,t}`."""

    log_a0: float
    log_a: np.ndarray
    convention: str
    source: Source

    @property
    def a0(self) -> float:
        return math.exp(self.log_a0)

    @property
    def a(self) -> np.ndarray:
        """The weights :math:`a_{T,t}` (can underflow to 0 for long horizons; use ``log_a``)."""
        return np.exp(self.log_a)


def log_contraction_factors(schedule: Schedule, mu: float) -> np.ndarray:
    r"""log(1 - sqrt(mu alpha_t)) per iteration.

    ``-inf`` where :math:`\mu\alpha_t=1` (with :math:`\alpha\le1/L` only for
    :math:`\mu=L`, :math:`\alpha=1/L`): that step contracts the error to 0, a legitimate
    setting that the weights handle as an exact zero.
    """
    s = np.sqrt(mu * schedule.steps)
    if np.any(s > 1):
        raise ValueError("every step must satisfy mu * alpha <= 1 (alpha <= 1/L suffices)")
    with np.errstate(divide="ignore"):
        return np.log1p(-s)


def error_weights(schedule: Schedule, mu: float, L: float, *,
                  convention: str = "paper") -> ErrorWeights:
    r"""The weights :math:`a_{T,t}` of (29) (one stage) or (34) (MASG), in log-space.

    .. math:: \log a_{T,t}=(s_T-s_t)\ln2+\sum_{i=t+1}^T\log(1-\sqrt{\mu\alpha_i})
              +\log\big(\alpha_t(1+\alpha_tL)\big),\qquad
              \log a_{T,0}=(s_T-s_0)\ln2+\sum_{i=1}^T\log(1-\sqrt{\mu\alpha_i})

    ``convention="reference_code"`` uses the MATLAB code's :math:`(\alpha/2)(1+\alpha L)` and
    :math:`2^{s_T}` on :math:`E_0` instead (sheet §12.2, defect 6).
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if np.any(schedule.steps > 1.0 / L * (1 + 1e-12)):
        raise ValueError("Theorems 4.1/4.3 need every step alpha <= 1/L")
    lc = log_contraction_factors(schedule, mu)
    # tail[k] = sum_{i > k} log(1 - sqrt(mu alpha_i)) as a suffix sum, not a difference of
    # prefix sums: exact where a factor is 0 (log = -inf; no inf - inf)
    tail = np.concatenate([np.cumsum(lc[::-1])[::-1], [0.0]])
    sT = int(schedule.stages[-1])
    alpha = schedule.steps
    factor = 0.5 if convention == "reference_code" else 1.0
    log_c = np.log(factor * alpha) + np.log1p(alpha * L)
    log_a = (sT - schedule.stages) * math.log(2.0) + tail[1:] + log_c
    s0 = 0 if convention == "reference_code" else 1
    log_a0 = (sT - s0) * math.log(2.0) + tail[0]
    src = SOURCE_THM41 if schedule.name == "NAG" else SOURCE_THM43
    return ErrorWeights(float(log_a0), log_a, convention, src)


def unrolled_bound(weights: ErrorWeights, initial_error: float, scales: Any, d: int, *,
                   subsampling_var: float = 0.0, log_scales: Any = None) -> float:
    r"""(29)/(34): :math:`a_{T,0}E_0+\sum_ta_{T,t}(b_t^2d+\sigma_s^2/2)`, summed in log-space.

    ``scales`` are the Laplace scales :math:`b_t` (or pass ``log_scales``).
    """
    E0 = float(check_nonnegative("initial_error", initial_error))
    d = check_int("d", d, minimum=1)
    if log_scales is None:
        log_scales = np.log(np.broadcast_to(check_positive("scales", scales),
                                            weights.log_a.shape))
    log_scales = np.broadcast_to(np.asarray(log_scales, dtype=float), weights.log_a.shape)
    noise = np.logaddexp(2.0 * log_scales + math.log(d),
                         math.log(subsampling_var / 2.0) if subsampling_var > 0 else -np.inf)
    # a zero weight (mu alpha = 1) meets an infinite scale where no budget was spent: 0 * inf = 0
    with np.errstate(invalid="ignore"):
        terms = np.where(np.isneginf(weights.log_a), -np.inf, weights.log_a + noise)
    if E0 > 0:
        terms = np.append(terms, weights.log_a0 + math.log(E0))
    return float(np.exp(logsumexp(terms)))


def nesterov_recursion(
    schedule: Schedule, mu: float, L: float, initial_error: float, scales: Any, d: int, *,
    subsampling_var: float = 0.0,
) -> np.ndarray:
    r"""Iterate (28) (and its MASG analogue, a factor 2 at each stage change) from :math:`E_0`.

    Returns :math:`(E_0, E_1, \dots, E_T)`; :math:`E_T` equals :func:`unrolled_bound` with the
    paper's weights.
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    d = check_int("d", d, minimum=1)
    subsampling_var = float(check_nonnegative("subsampling_var", subsampling_var))
    T = schedule.horizon
    b = np.broadcast_to(np.asarray(check_positive("scales", scales), dtype=float), (T,))
    q = np.exp(log_contraction_factors(schedule, mu))
    alpha = schedule.steps
    out = np.empty(T + 1)
    out[0] = float(check_nonnegative("initial_error", initial_error))
    prev_stage = 1
    for t in range(1, T + 1):
        jump = 2.0 if schedule.stages[t - 1] > prev_stage else 1.0
        prev_stage = schedule.stages[t - 1]
        out[t] = jump * out[t - 1]
        out[t] = q[t - 1] * out[t] + alpha[t - 1] * (1 + alpha[t - 1] * L) * (
            b[t - 1] ** 2 * d + subsampling_var / 2)
    return out


def _finite_error(out: np.ndarray) -> np.ndarray:
    """The exact error, or a ValueError when it left the float64 range (a diverging run)."""
    if not np.all(np.isfinite(out)):
        raise ValueError("the expected error exceeds the float64 range: the iteration diverges "
                         "(a step alpha * lambda far beyond 1) or the noise is too large")
    return out


def nesterov_expected_error_quadratic(
    schedule: Schedule, mu: float, eigenvalues: Any, noise_variances: Any, initial_error: Any,
    *, restart: bool = False,
) -> np.ndarray:
    r"""Exact :math:`\mathbb E[F(x_t)]-F^\ast` (t = 0..T) of DP-NAG on a quadratic **[DERIVED]**.

    :math:`F=\tfrac12\sum_i\lambda_ix_i^2`, iteration (27) with the schedule's steps and Nesterov
    momentum, :math:`x_{-1}=x_0` (coordinates ``initial_error``), isotropic noise with
    per-coordinate variance ``noise_variances[t-1]`` (:math:`2b_t^2` for Laplace) at step ``t``.
    Per eigenvalue the state :math:`(e_t,e_{t-1})` follows
    :math:`e_{t+1}=(1-\alpha\lambda)((1+\beta)e_t-\beta e_{t-1})-\alpha w_t`; its 2x2 covariance is
    propagated exactly (no sampling).

    ``restart=True`` resets the momentum at each stage change (:math:`x_{t-1}:=x_t`), as
    :func:`dpbounds.algorithms.dp_masg` does by default. Theorem 4.3's bound (34) is for that
    run: without the restart the exact error can exceed it (e.g. :math:`\mu=0.99`, :math:`L=1`,
    :math:`T=37`: :math:`6.6\cdot10^{-4}` against a bound of :math:`2.7\cdot10^{-4}`).
    """
    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    T = schedule.horizon
    var = np.broadcast_to(np.asarray(check_nonnegative("noise_variances", noise_variances),
                                     dtype=float), (T,))
    e0 = np.broadcast_to(np.asarray(check_finite("initial_error", initial_error)), lam.shape)
    S = np.ones((lam.size, 2, 2)) * (e0**2)[:, None, None]
    beta = schedule.momenta(mu)
    out = np.empty(T + 1)
    out[0] = 0.5 * np.sum(lam * S[:, 0, 0])
    prev_stage = schedule.stages[0]
    for t in range(T):
        if schedule.stages[t] != prev_stage:
            prev_stage = schedule.stages[t]
            if restart:  # x_{t-1} := x_t: the second moment of (e_t, e_t)
                S[:, 0, 1] = S[:, 1, 0] = S[:, 1, 1] = S[:, 0, 0]
        a, b = schedule.steps[t], beta[t]
        M = np.zeros((lam.size, 2, 2))
        M[:, 0, 0] = (1 - a * lam) * (1 + b)
        M[:, 0, 1] = -(1 - a * lam) * b
        M[:, 1, 0] = 1.0
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging run: checked below
            S = M @ S @ np.transpose(M, (0, 2, 1))
            S[:, 0, 0] += a * a * var[t]
            out[t + 1] = 0.5 * np.sum(lam * S[:, 0, 0])
    return _finite_error(out)


def nesterov_final_error_quadratic(
    schedule: Schedule, mu: float, eigenvalues: Any, noise_variances: Any, initial_error: Any,
    *, multiplicities: Any = None, log_noise_variances: Any = None, restart: bool = False,
) -> float:
    r"""The final :math:`\mathbb E[F(x_T)]-F^\ast` of :func:`nesterov_expected_error_quadratic`.

    The same exact second moments, a whole stage at a time. Within a stage the recursion per
    eigenvalue, :math:`e_{t+1}=a\,e_t-b\,e_{t-1}-\alpha w_t` (:math:`a=(1-\alpha\lambda)(1+\beta)`,
    :math:`b=(1-\alpha\lambda)\beta`), is a fixed linear filter, run in C by
    :func:`scipy.signal.lfilter`: the second moment :math:`\Sigma=\sum_i\sigma_iu_iu_i^\top` at
    the stage start is carried by filtering its eigenvectors, and the stage's noise adds
    :math:`\alpha^2\sum_jv_jg_jg_j^\top` with :math:`g_j` the impulse response read at the stage
    end. :math:`O(T)` work in C instead of :math:`T` Python steps; forming :math:`M^n` and
    multiplying would lose digits through cancellation near the double root of NAG's
    momentum at :math:`\lambda=\mu`, filtering does not. ``multiplicities`` weights each
    eigenvalue (default 1), so a spectrum ``{mu, L}`` on ``d`` coordinates needs two entries;
    ``restart`` as in :func:`nesterov_expected_error_quadratic`. ``log_noise_variances``
    (instead of ``noise_variances``, which is then ignored) gives the
    variances as logarithms: a step whose variance exceeds the float64 range (a budget near 0)
    still contributes its exact, representable share ``v_j g_j^2``; ``+inf`` (no budget at
    all) contributes 0 where the dynamics annihilate it (``g_j = 0``).
    """
    from scipy.signal import lfilter, lfiltic

    lam = np.atleast_1d(check_positive("eigenvalues", eigenvalues)).astype(float)
    mult = (np.ones(lam.size) if multiplicities is None
            else np.broadcast_to(np.asarray(check_nonnegative("multiplicities", multiplicities),
                                            dtype=float), lam.shape))
    T = schedule.horizon
    if log_noise_variances is None:
        var = np.broadcast_to(np.asarray(check_nonnegative("noise_variances", noise_variances),
                                         dtype=float), (T,))
        with np.errstate(divide="ignore"):
            log_var = np.log(var)
    else:
        log_var = np.broadcast_to(np.asarray(log_noise_variances, dtype=float), (T,))
        if np.any(np.isnan(log_var)):
            raise ValueError("log_noise_variances must not be nan")
    e0 = np.broadcast_to(np.asarray(check_finite("initial_error", initial_error)), lam.shape)
    beta = schedule.momenta(mu)

    def weighted(x: np.ndarray, lv: np.ndarray) -> float:
        """sum_j exp(lv_j) x_j in log-space (x_j = 0 contributes 0 even where lv_j = inf)."""
        nz = x != 0
        if not np.any(nz):
            return 0.0
        with np.errstate(over="ignore"):
            return float(np.sum(np.sign(x[nz]) * np.exp(lv[nz] + np.log(np.abs(x[nz])))))

    total = 0.0
    for i, lam_i in enumerate(lam):
        S = np.full((2, 2), e0[i] ** 2)  # second moment of (e_t, e_{t-1}); x_{-1} = x_0
        start = 0
        for n_k in schedule.stage_lengths:
            if restart and start > 0:  # x_{t-1} := x_t at a stage change
                S = np.full((2, 2), S[0, 0])
            alpha, b_mom = float(schedule.steps[start]), float(beta[start])
            den = [1.0, -(1.0 - alpha * lam_i) * (1.0 + b_mom), (1.0 - alpha * lam_i) * b_mom]
            w, V = np.linalg.eigh(S)
            new = np.zeros((2, 2))
            for w_j, v_j in zip(w, V.T):  # carry each eigen-direction through the stage
                if w_j > 0:
                    y, _ = lfilter([1.0], den, np.zeros(n_k), zi=lfiltic([1.0], den, v_j))
                    end = np.array([y[-1], y[-2] if n_k > 1 else v_j[0]])
                    new += w_j * np.outer(end, end)
            h = lfilter([1.0], den, np.eye(1, n_k).ravel())  # U_1 .. U_n
            lv = log_var[start:start + n_k][::-1]             # v_{n-1-k} meets U_{k+1}, U_k
            hi, lo = h, np.concatenate([[0.0], h[:-1]])
            new[0, 0] += alpha**2 * weighted(hi * hi, lv)
            new[0, 1] += alpha**2 * weighted(hi * lo, lv)
            new[1, 1] += alpha**2 * weighted(lo * lo, lv)
            new[1, 0] = new[0, 1]
            S = new
            start += n_k
        total += 0.5 * mult[i] * lam_i * S[0, 0]
    return float(_finite_error(np.asarray(total)))


__all__ += ["error_weights", "log_contraction_factors", "nesterov_expected_error_quadratic",
            "nesterov_final_error_quadratic"]
