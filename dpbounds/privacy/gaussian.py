r"""Gaussian mechanism: the classic calibration (Dwork & Roth 2014, Thm A.1; Lee & Kifer Thm 3.3)
and the analytic Gaussian mechanism (Balle & Wang 2018).

A Gaussian mechanism adds :math:`N(0,\sigma^2 I)` to a query of :math:`L_2` sensitivity
:math:`\Delta` (under whichever neighbouring relation the caller uses: the sensitivity carries it).

Examples
--------
>>> from dpbounds.privacy.gaussian import analytic_gaussian_sigma, classic_gaussian_sigma
>>> round(classic_gaussian_sigma(0.5, 1e-5, 1.0), 4)
9.6896
>>> analytic_gaussian_sigma(0.5, 1e-5, 1.0) < classic_gaussian_sigma(0.5, 1e-5, 1.0)
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special

from dpbounds._validation import (
    check_nonnegative,
    check_open_interval,
    check_positive,
    check_probability,
)
from dpbounds.privacy._util import as_output, finite_or_raise, guard_module, nudge_up
from dpbounds.provenance import LEE_KIFER, Provenance, Source

__all__ = [
    "SOURCE_ANALYTIC",
    "SOURCE_CLASSIC",
    "analytic_gaussian_sigma",
    "classic_gaussian_epsilon",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "gaussian_epsilon",
]

SOURCE_CLASSIC = Source(
    LEE_KIFER, "Theorem 3.3, eq. (3)", Provenance.VERBATIM,
    "Dwork & Roth 2014, Thm A.1: sigma = Delta sqrt(2 ln(1.25/delta))/eps, eps < 1",
)
SOURCE_ANALYTIC = Source(
    "Balle & Wang, Improving the Gaussian Mechanism for DP, ICML 2018", "Theorem 8",
    Provenance.VERBATIM, "exact privacy profile of the Gaussian mechanism",
)


def classic_gaussian_sigma(epsilon: Any, delta: float, sensitivity: Any = 1.0) -> Any:
    r"""Classic Gaussian calibration :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon`.

    Valid only for :math:`0 < \varepsilon < 1` (enforced: ``ValueError`` otherwise; use
    :func:`analytic_gaussian_sigma` for larger budgets).
    """
    epsilon = check_open_interval("epsilon", epsilon, 0.0, 1.0)
    delta = check_probability("delta", delta)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    with np.errstate(over="ignore"):
        out = np.asarray(sensitivity) * math.sqrt(2.0 * math.log(1.25 / delta)) / np.asarray(
            epsilon)
    return as_output(finite_or_raise(out, "sensitivity/epsilon"))


def classic_gaussian_epsilon(sigma: Any, delta: float, sensitivity: Any = 1.0) -> Any:
    r"""Inverse of :func:`classic_gaussian_sigma`; ``ValueError`` if the result is not < 1."""
    sigma = check_positive("sigma", sigma)
    delta = check_probability("delta", delta)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    eps = np.asarray(sensitivity) * math.sqrt(2.0 * math.log(1.25 / delta)) / np.asarray(sigma)
    if np.any(eps >= 1.0):
        raise ValueError(
            "sigma too small for the classic Gaussian bound (it needs epsilon < 1); "
            "use gaussian_epsilon (analytic) instead"
        )
    return as_output(eps)


def _log_delta_terms(sigma: np.ndarray, epsilon: np.ndarray, sensitivity: np.ndarray):
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return special.log_ndtr(a - b), epsilon + special.log_ndtr(-a - b)


def gaussian_delta(sigma: Any, epsilon: Any, sensitivity: Any = 1.0) -> Any:
    r"""Exact :math:`\delta(\varepsilon)` of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    .. math:: \delta = \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
       - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)

    evaluated as :math:`e^{\ell_1}(1 - e^{\ell_2-\ell_1})` with log-CDFs, so values down to
    :math:`10^{-300}` keep full relative precision.
    """
    sigma = np.asarray(check_positive("sigma", sigma))
    epsilon = np.asarray(check_nonnegative("epsilon", epsilon))
    sensitivity = np.asarray(check_positive("sensitivity", sensitivity))
    l1, l2 = _log_delta_terms(sigma, epsilon, sensitivity)
    with np.errstate(under="ignore", invalid="ignore"):
        out = np.exp(l1) * -np.expm1(np.minimum(l2 - l1, 0.0))
    out = np.where(np.isneginf(l1), 0.0, out)  # both terms vanish (huge epsilon)
    return as_output(np.clip(out, 0.0, 1.0))


#: Safety margin on log(delta) in the calibrations: in extreme regimes (tiny Delta/sigma and
#: epsilon) the two Phi terms cancel and log(delta) carries ~1e-10 of rounding noise.
_LOG_DELTA_SLACK = 1e-8


def _log_gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    l1, l2 = _log_delta_terms(np.float64(sigma), np.float64(epsilon), np.float64(sensitivity))
    if np.isneginf(l1):
        return -math.inf
    gap = min(float(l2 - l1), 0.0)
    if gap == 0.0:
        return -math.inf
    return float(l1) + math.log(-math.expm1(gap))


def analytic_gaussian_sigma(epsilon: Any, delta: float, sensitivity: Any = 1.0) -> Any:
    r"""Smallest :math:`\sigma` with :func:`gaussian_delta` :math:`\le\delta` (analytic Gaussian).

    Solved in log-space by Brent's method on :math:`\ln\sigma`, then moved up until the exact
    :math:`\delta(\sigma)` is at most ``delta * (1 - 1e-8)`` (conservative, with a margin for the
    rounding noise of the formula). Any :math:`\varepsilon > 0` works.
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    sensitivity = check_nonnegative("sensitivity", sensitivity)

    def one(eps: float, sens: float) -> float:
        if sens == 0.0:
            return 0.0
        log_delta = math.log(delta) - _LOG_DELTA_SLACK

        def gap(log_s: float) -> float:
            return _log_gaussian_delta(math.exp(log_s), eps, 1.0) - log_delta

        lo, hi = -1.0, 1.0
        while gap(lo) < 0:
            lo -= 2.0
        while gap(hi) > 0:
            hi += 2.0
        log_s = optimize.brentq(gap, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
        s = float(nudge_up(math.exp(log_s)))
        while _log_gaussian_delta(s, eps, 1.0) > log_delta:
            s = float(nudge_up(s * (1.0 + 1e-13)))
        # scale invariance: sigma(Delta) = Delta * sigma(1)
        out = float(nudge_up(s * sens))
        while _log_gaussian_delta(out, eps, sens) > log_delta:
            out = float(nudge_up(out * (1.0 + 1e-13)))
        return out

    out = np.vectorize(one, otypes=[float])(np.asarray(epsilon), np.asarray(sensitivity))
    return as_output(out)


def gaussian_epsilon(sigma: Any, delta: float, sensitivity: Any = 1.0) -> Any:
    r"""Smallest :math:`\varepsilon \ge 0` with :func:`gaussian_delta` :math:`\le\delta` (exact,
    rounded up)."""
    sigma = check_positive("sigma", sigma)
    delta = check_probability("delta", delta)
    sensitivity = check_positive("sensitivity", sensitivity)
    log_delta = math.log(delta) - _LOG_DELTA_SLACK

    def one(sig: float, sens: float) -> float:
        def gap(eps: float) -> float:
            return _log_gaussian_delta(sig, eps, sens) - log_delta

        if gap(0.0) <= 0:
            return 0.0
        hi = 1.0
        while gap(hi) > 0:
            hi *= 2.0
        eps = optimize.brentq(gap, 0.0, hi, xtol=1e-300, rtol=1e-14, maxiter=500)
        # polish by bisection to a few ulps, keeping the valid (upper) end
        up, down = eps, eps
        while gap(up) > 0:
            up = up * (1.0 + 1e-12) + 1e-300
        while down > 0 and gap(down) <= 0:
            down = down * (1.0 - 1e-12)
        for _ in range(80):
            mid = 0.5 * (up + down)
            if not down < mid < up:
                break
            if gap(mid) <= 0:
                up = mid
            else:
                down = mid
        return up

    out = np.vectorize(one, otypes=[float])(np.asarray(sigma), np.asarray(sensitivity))
    return as_output(out)


guard_module(globals(), __all__)
