r"""Zero-concentrated DP (Bun & Steinke 2016), as used by Lee & Kifer's DP-AGD.

A :math:`\rho`-zCDP mechanism has Rényi divergences :math:`D_\alpha \le \alpha\rho` for all
:math:`\alpha > 1`. Budgets compose by addition (Lee & Kifer Lemma 3.5); the Gaussian mechanism
is :math:`\Delta_2^2/(2\sigma^2)`-zCDP (Lemma 3.6); :math:`\epsilon`-DP implies
:math:`\epsilon^2/2`-zCDP (Lemma 3.7); and :math:`\rho`-zCDP implies
:math:`(\rho + 2\sqrt{\rho\ln(1/\delta)}, \delta)`-DP (Lemma 3.8). The tighter conversion uses
the improved RDP→DP bound (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2020)
at the optimal order.

Examples
--------
>>> from dpbounds.privacy.zcdp import dp_to_zcdp_rho, zcdp_to_dp_epsilon
>>> rho = dp_to_zcdp_rho(1.0, 1e-8)          # Lee & Kifer eq. (5), closed form
>>> round(zcdp_to_dp_epsilon(rho, 1e-8), 10)  # Lemma 3.8 gives back epsilon
1.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import (
    check_choice,
    check_nonnegative,
    check_positive,
    check_probability,
    check_scalars,
)
from dpbounds.privacy._util import (
    as_output,
    finite_or_raise,
    guard_module,
    nudge_up,
    positive_or_raise,
)
from dpbounds.provenance import LEE_KIFER, Provenance, Source

__all__ = ["SOURCE_EQ5", "SOURCE_LEMMA_3_6", "SOURCE_LEMMA_3_7", "SOURCE_LEMMA_3_8", "compose_zcdp",
           "dp_to_zcdp_rho", "gaussian_sigma_for_zcdp", "gaussian_zcdp_rho", "pure_dp_to_zcdp_rho",
           "zcdp_to_dp_epsilon"]

SOURCE_LEMMA_3_6 = Source(LEE_KIFER, "Lemma 3.6", Provenance.VERBATIM, "Gaussian -> zCDP")
SOURCE_LEMMA_3_7 = Source(LEE_KIFER, "Lemma 3.7", Provenance.VERBATIM, "pure DP -> zCDP")
SOURCE_LEMMA_3_8 = Source(LEE_KIFER, "Lemma 3.8", Provenance.VERBATIM, "zCDP -> (eps, delta)")
SOURCE_EQ5 = Source(
    LEE_KIFER, "eq. (5)", Provenance.VERBATIM,
    "closed form rho = (sqrt(log(1/delta)+eps) - sqrt(log(1/delta)))^2 is DERIVED",
)

_METHODS = ("standard", "tight")


def gaussian_zcdp_rho(sigma: Any, sensitivity: Any = 1.0) -> Any:
    r""":math:`\rho = \Delta_2^2/(2\sigma^2)` of the Gaussian mechanism (Lee & Kifer Lemma 3.6)."""
    sigma = check_positive("sigma", sigma)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        out = (np.asarray(sensitivity) / np.asarray(sigma)) ** 2 / 2.0
    if np.any((np.asarray(sensitivity) > 0) & (out < np.finfo(float).tiny)):
        # flushed to 0 or subnormal, as the accountants refuse it (sigma = 1e300 read rho 0)
        raise ValueError("sensitivity/sigma is too small for float64: rho underflows below "
                         "the smallest normal float")
    return as_output(finite_or_raise(out, "sensitivity/sigma"))


def gaussian_sigma_for_zcdp(rho: Any, sensitivity: Any = 1.0) -> Any:
    r"""Gaussian std for a zCDP budget: :math:`\sigma = \Delta_2/\sqrt{2\rho}` (Lemma 3.6)."""
    rho = check_positive("rho", rho)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    with np.errstate(over="ignore"):
        out = nudge_up(np.asarray(sensitivity) / np.sqrt(2.0 * np.asarray(rho)))
    return as_output(finite_or_raise(out, "sensitivity/rho"))


def pure_dp_to_zcdp_rho(epsilon: Any) -> Any:
    r""":math:`\epsilon`-DP implies :math:`\epsilon^2/2`-zCDP (Lee & Kifer Lemma 3.7)."""
    epsilon = check_nonnegative("epsilon", epsilon)
    with np.errstate(over="ignore"):
        out = np.asarray(epsilon) ** 2 / 2.0
    return as_output(finite_or_raise(out, "epsilon"))


def compose_zcdp(rhos: Any) -> float:
    r"""Composition (Lemma 3.5): :math:`\sum_i\rho_i`."""
    return float(np.sum(np.atleast_1d(check_nonnegative("rhos", rhos))))


def _tight_epsilon_scalar(rho: float, delta: float) -> float:
    """min over alpha > 1 of alpha*rho + log1p(-1/alpha) - (log(delta) + log(alpha))/(alpha-1)."""
    if rho == 0.0:
        return 0.0
    log_delta = math.log(delta)

    def eps_at(log_am1: float) -> float:
        if not -300.0 < log_am1 < 300.0:
            return math.inf
        am1 = math.exp(log_am1)
        a = 1.0 + am1
        mironov = a * rho - log_delta / am1
        if am1 < 0.01:  # the improved form is numerically unstable as alpha -> 1
            return mironov
        return min(mironov, a * rho + math.log1p(-1.0 / a) - (log_delta + math.log(a)) / am1)

    # the standard bound's optimum alpha - 1 = sqrt(log(1/delta)/rho) is a good centre
    centre = 0.5 * (math.log(-log_delta) - math.log(rho))
    from scipy import optimize  # on first use (see privacy.rdp._log_a_fractional)

    res = optimize.minimize_scalar(
        eps_at, bracket=(centre - 1.0, centre), bounds=None, method="brent",
        options={"xtol": 1e-12},
    )
    best = min(float(res.fun), eps_at(centre))
    # every order gives a valid bound; never report worse than the standard conversion
    standard = rho + 2.0 * math.sqrt(rho * -log_delta)
    return max(0.0, min(best, standard))


def zcdp_to_dp_epsilon(rho: Any, delta: float, method: str = "standard") -> Any:
    r""":math:`\varepsilon` such that :math:`\rho`-zCDP implies :math:`(\varepsilon,\delta)`-DP.

    ``method="standard"``: Lee & Kifer Lemma 3.8, :math:`\rho + 2\sqrt{\rho\ln(1/\delta)}`
    (Mironov's conversion at the optimal order). ``method="tight"``: the improved conversion
    :math:`\min_{\alpha>1}\alpha\rho + \ln(1-1/\alpha) - (\ln\delta + \ln\alpha)/(\alpha-1)`
    (Canonne-Kamath-Steinke 2020, Prop. 12), never larger than the standard one.
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(delta=delta)
    rho = check_nonnegative("rho", rho)
    delta = check_probability("delta", delta)
    method = check_choice("method", method, _METHODS)
    rho_arr = np.asarray(rho, dtype=float)
    if method == "standard":
        with np.errstate(over="ignore"):
            out = rho_arr + 2.0 * np.sqrt(rho_arr) * math.sqrt(-math.log(delta))
        return as_output(finite_or_raise(out, "rho"))
    out = np.vectorize(_tight_epsilon_scalar, otypes=[float])(rho_arr, delta)
    return as_output(out)


def zcdp_to_dp_delta(rho: float, epsilon: float, method: str = "standard") -> float:
    r""":math:`\delta` such that :math:`\rho`-zCDP implies :math:`(\varepsilon,\delta)`-DP.

    ``"standard"`` inverts Lemma 3.8: :math:`\delta = e^{-(\varepsilon-\rho)^2/(4\rho)}` for
    :math:`\varepsilon \ge \rho`; ``"tight"`` minimises the improved bound
    :math:`\ln\delta = (\alpha-1)(\alpha\rho - \varepsilon + \ln(1-1/\alpha)) - \ln\alpha`
    over :math:`\alpha > 1` (any order gives a valid bound).
    """
    rho = float(check_nonnegative("rho", rho))
    epsilon = float(check_nonnegative("epsilon", epsilon))
    method = check_choice("method", method, _METHODS)
    if rho == 0.0:
        return 0.0
    if method == "standard":
        if epsilon <= rho:
            return 1.0
        return float(min(1.0, math.exp(-((epsilon - rho) ** 2) / (4.0 * rho))))

    def log_delta(log_am1: float) -> float:
        am1 = math.exp(min(log_am1, 700.0))
        a = 1.0 + am1
        mironov = am1 * (a * rho - epsilon)
        if am1 < 0.01:
            return mironov
        return min(mironov, am1 * (a * rho - epsilon + math.log1p(-1.0 / a)) - math.log(a))

    grid = np.linspace(-8.0, 20.0, 561)
    vals = np.array([log_delta(x) for x in grid])
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    from scipy import optimize  # on first use (see privacy.rdp._log_a_fractional)

    res = optimize.minimize_scalar(log_delta, bounds=(lo, hi), method="bounded")
    best = min(float(vals[i]), float(res.fun))
    return float(min(1.0, math.exp(min(best, 0.0))))


def dp_to_zcdp_rho(epsilon: Any, delta: float, method: str = "standard") -> Any:
    r"""Largest :math:`\rho` meeting :math:`(\varepsilon,\delta)` (Lee & Kifer eq. (5)).

    ``method="standard"`` solves :math:`\varepsilon = \rho + 2\sqrt{\rho\ln(1/\delta)}` in closed
    form **[DERIVED]**: :math:`\rho = (\sqrt{\ln(1/\delta)+\varepsilon} - \sqrt{\ln(1/\delta)})^2`,
    computed as :math:`\varepsilon^2/(\sqrt{L+\varepsilon}+\sqrt L)^2` (no cancellation).
    ``method="tight"`` inverts the tight conversion by bisection. Both are moved down by a few
    ulps (conservative: ``zcdp_to_dp_epsilon(rho, delta) <= epsilon``).
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(delta=delta)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    method = check_choice("method", method, _METHODS)
    L = -math.log(delta)
    eps = np.asarray(epsilon, dtype=float)
    rho = (eps / (np.sqrt(L + eps) + math.sqrt(L))) ** 2
    rho = np.nextafter(np.nextafter(rho, 0.0), 0.0)
    positive_or_raise(rho, "epsilon")
    if method == "tight":
        rho = np.vectorize(lambda e, r: _invert_tight(e, r, delta), otypes=[float])(eps, rho)
    else:
        # the forward formula rounds too (sqrt, sum): step down until it is within budget
        rho = np.vectorize(lambda e, r: _down_until(e, r, delta), otypes=[float])(eps, rho)
    return as_output(rho)


def _down_until(epsilon: float, rho: float, delta: float) -> float:
    """``rho`` moved down by ulps until Lemma 3.8 evaluated in floats gives at most epsilon."""
    log_inv = math.sqrt(-math.log(delta))
    while rho > 0 and rho + 2.0 * math.sqrt(rho) * log_inv > epsilon:
        rho = float(np.nextafter(rho, 0.0))
    return rho


def _invert_tight(epsilon: float, rho_lo: float, delta: float) -> float:
    """Largest rho with tight eps(rho) <= epsilon, by bisection from the standard rho."""
    rho_hi = rho_lo * 2.0
    while _tight_epsilon_scalar(rho_hi, delta) <= epsilon:
        rho_lo, rho_hi = rho_hi, rho_hi * 2.0
    for _ in range(200):
        mid = 0.5 * (rho_lo + rho_hi)
        if _tight_epsilon_scalar(mid, delta) <= epsilon:
            rho_lo = mid
        else:
            rho_hi = mid
        if rho_hi - rho_lo <= 1e-14 * rho_hi:
            break
    return rho_lo


guard_module(globals(), __all__)
