r"""The noise of a DP gradient step with Laplace noise and subsampling (Kuru et al., Section 3).

One definition of each noise quantity the strongly convex bounds and the tuners use:

* :func:`laplace_scale_at_horizon` — the scale :math:`b_T=S_1/(m\epsilon_0)` of eq. (12) with
  :math:`\epsilon_0=\ln[1+(e^{\epsilon/T}-1)n/m]` of eq. (13): each of :math:`T` steps is
  :math:`\epsilon/T`-DP through the amplification (11) (replace-one, basic composition);
* :func:`subsampling_variance` — :math:`\sigma_s^2(m,n)=\frac{S_1^2}{4}\frac1m\frac{n-m}{n-1}`,
  eq. (21), the trace bound of the mini-batch covariance (0 for :math:`m=n`);
* :func:`gradient_noise_variance` — :math:`2b_T^2+\sigma_s^2`, a per-coordinate bound of the
  gradient-noise variance at horizon :math:`T` (Laplace(b) has variance :math:`2b^2`; the
  subsampling covariance's trace bound is used per coordinate, which is conservative);
* :func:`dp_noise_level` — :math:`\mathcal E_T=\sigma_s^2(m,n)+2dS_1^2/(m^2\epsilon_0^2)`, eq.
  (20), the trace of :math:`\mathrm{Cov}(w_t|x_t)`;
* :func:`laplace_covariance_eq38_as_printed` — (38) as printed, which drops the factor 2.

Example
-------
>>> from dpbounds.bounds.strongly_convex.gradient_noise import (
...     dp_noise_level, laplace_scale_at_horizon)
>>> b = laplace_scale_at_horizon(100, sensitivity=40.0, n=10**5, m=10**5, epsilon=1.0)
>>> round(float(b), 6)  # S_1 / (n eps / T) without subsampling
0.04
>>> round(dp_noise_level(40.0, 20, 10**5, 10**5, 1.0, 100), 6) == round(2 * 20 * b**2, 6)
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.privacy.laplace import deamplify_without_replacement
from dpbounds.provenance import KURU, Provenance, Source

__all__ = ["SOURCE_EQ20", "SOURCE_EQ21", "laplace_covariance_eq38_as_printed"]

SOURCE_EQ20 = Source(KURU, "Proposition 3.3, eqs. (20)-(21)", Provenance.VERBATIM,
                     "Laplace(b) has variance 2 b^2 per coordinate; (38) drops the 2 (sheet §11.3)")
SOURCE_EQ21 = Source(KURU, "Proposition 3.3, eq. (21)", Provenance.VERBATIM)

#: log of the largest float64
LOG_FLOAT_MAX = math.log(np.finfo(float).max)
#: log of half the smallest subnormal float64: a value below it rounds to 0
LOG_FLOAT_ZERO = -1075.0 * math.log(2.0)


def subsampling_variance(sensitivity: float, n: int, m: int) -> float:
    r""":math:`\sigma_s^2(m,n)=\frac{S_1^2}{4}\frac1m\frac{n-m}{n-1}` (eq. (21)); 0 for m = n."""
    S = float(check_nonnegative("sensitivity", sensitivity))
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1, maximum=n)
    if m == n:  # no subsampling (also for S = 1e300, where S^2 * 0 would be inf * 0 = nan)
        return 0.0
    with np.errstate(over="ignore"):
        out = (S / 2.0) * (S / 2.0) / m * ((n - m) / (n - 1))  # inf, not OverflowError
    if not math.isfinite(out):
        raise ValueError(f"sensitivity={S!r} is too large: the subsampling variance S^2/(4m) "
                         "exceeds the float64 range")
    return float(out)


def laplace_scale_at_horizon(T: Any, sensitivity: float, n: int, m: int,
                             epsilon: float) -> Any:
    r"""Laplace scale :math:`b_T=S_1/(m\epsilon_0)` of eqs. (12)-(13) for every horizon ``T``.

    ``T`` broadcasts (an array of horizons gives an array); ``inf`` where :math:`\epsilon/T`
    underflows (horizons no bound selects; :func:`check_noise_fits` says so in words).
    """
    if np.ndim(sensitivity) != 0:
        raise ValueError(f"sensitivity must be one positive number; got {sensitivity!r}")
    sensitivity = float(check_positive("sensitivity", sensitivity))
    T = np.asarray(check_positive("T", T), dtype=float)
    eps0 = np.asarray(deamplify_without_replacement(epsilon / T, m, n))  # eq. (13) for every T
    with np.errstate(over="ignore", divide="ignore"):
        b = sensitivity / (m * eps0)
    return float(b) if b.ndim == 0 else b


def gradient_noise_variance(T: Any, sensitivity: float, n: int, m: int, epsilon: float) -> Any:
    r"""Per-coordinate gradient-noise variance bound :math:`2b_T^2+\sigma_s^2(m,n)` at horizon
    ``T`` (broadcasts; ``inf`` where it exceeds the float64 range)."""
    b = np.asarray(laplace_scale_at_horizon(T, sensitivity, n, m, epsilon))
    with np.errstate(over="ignore"):
        out = 2.0 * b * b + subsampling_variance(sensitivity, n, m)
    return float(out) if out.ndim == 0 else out


def check_noise_fits(sensitivity: float, n: int, m: int, epsilon: float, d: int) -> None:
    """ValueError naming ``epsilon`` when even one step's noise, ``2 d b_1^2``, overflows float64.

    ``T = 1`` spends the whole budget in one step: the least noise any horizon has. Beyond
    this every bound is ``inf`` (a bound of 1e308 says nothing either); say why instead.
    """
    eps1 = float(deamplify_without_replacement(epsilon, m, n))  # eq. (13) with T = 1
    log_b = math.log(sensitivity) - math.log(m) - (math.log(eps1) if eps1 > 0 else -math.inf)
    log_noise = math.log(2.0 * d) + 2.0 * log_b
    if not log_noise <= LOG_FLOAT_MAX:
        raise ValueError(
            # both named: S_1 = 1e300 was blamed on epsilon alone (fuzz round 9)
            f"epsilon={epsilon!r} is too small for sensitivity S_1={sensitivity:.3g}: even "
            f"with T = 1 the DP noise term 2 d b^2 (b = S_1/(m eps_0) = "
            f"{sensitivity:.3g}/({m} x {eps1:.3g}), "
            f"Laplace scale) would be exp({log_noise:.6g}), beyond the float64 range (about "
            "1.8e308); use a larger epsilon or a smaller sensitivity S_1")


def noise_underflow_note(sensitivity: float, n: int, m: int, epsilon: float, d: int,
                         max_horizon: int = 1) -> str:
    """A sentence when the DP noise term ``2 d b_T^2`` is 0 in float64 even at the longest
    horizon searched (``b_T`` grows with T) and the full batch adds no sampling noise, else
    ``""``: the runs are then tuned as noiseless, and their worst cases underflow (fuzz round
    13: S_1 = 1e-300 printed a table of zeros without a word; eps = 1e300 answers so on
    purpose, ``tests/test_edges_fuzz2.py``). With ``m < n`` the sampling variance is still in
    range, and a subnormal term still computes (review of stop 80: the note fired there)."""
    if m < n:
        return ""
    horizon = max(1, int(max_horizon))
    eps_t = float(deamplify_without_replacement(epsilon / horizon, m, n))
    if not eps_t > 0:
        return ""
    log_noise = (math.log(2.0 * d) + 2.0 * (math.log(sensitivity) - math.log(m)
                                             - math.log(eps_t)))
    if log_noise >= LOG_FLOAT_ZERO:
        return ""
    return (f"note: the DP noise term 2 d b_T^2 is exp({log_noise:.6g}) even at T = {horizon}, "
            "0 in float64: these runs are tuned as noiseless, and their worst cases print as "
            "0 where they fall below float64's range; to see the noise's effect rescale the "
            "problem (S_1 -> k S_1 with E0 -> k^2 E0 multiplies every worst case by k^2 and "
            "leaves the tuning unchanged)")


def _finite(x: Any, what: str, cause: str) -> Any:
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} is not finite in float64 at these inputs ({cause})")
    return float(x) if x.ndim == 0 else x


def dp_noise_level(sensitivity: float, d: int, n: int, m: int, epsilon: float, T: Any) -> Any:
    r"""The noise level :math:`\mathcal E_T=\sigma_s^2(m,n)+2dS_1^2/(m^2\epsilon_0^2)` of (20).

    The trace bound of :math:`\mathrm{Cov}(w_t|x_t)`: Laplace noise of scale
    :math:`b=S_1/(m\epsilon_0)` (eq. (12)) contributes :math:`2b^2` per coordinate. ``T`` may be
    an array of horizons (then an array).
    """
    sensitivity = float(check_nonnegative("sensitivity", sensitivity))
    d = check_int("d", d, minimum=1)
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1, maximum=n)
    check_positive("epsilon", epsilon)
    T_arr = np.asarray(check_positive("T", T), dtype=float)
    if np.any(T_arr != np.floor(T_arr)):
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    b = np.asarray(laplace_scale_at_horizon(T_arr, sensitivity, n, m, epsilon))
    with np.errstate(over="ignore", invalid="ignore"):
        out = subsampling_variance(sensitivity, n, m) + 2.0 * d * np.square(b)
    return _finite(out, "the noise level (20)", "sensitivity too large or epsilon / T too small")


def laplace_covariance_eq38_as_printed(sensitivity: float, d: int, m: int, eps0: float) -> float:
    r"""(38) as printed, :math:`S_1^2d/(m^2\epsilon_0^2)`: half the true trace :math:`2db^2`.

    Kept only to show the discrepancy; (20) and :func:`dp_noise_level` use :math:`2b^2`.
    """
    sensitivity = float(check_nonnegative("sensitivity", sensitivity))
    d = check_int("d", d, minimum=1)
    m = check_int("m", m, minimum=1)
    eps0 = float(check_positive("eps0", eps0))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out = d * np.square(np.float64(sensitivity) / (np.float64(m) * eps0))
    return _finite(out, "(38)", "sensitivity too large or eps0 too small")
