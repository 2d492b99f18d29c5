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
from scipy import special

from dpbounds._validation import (
    check_nonnegative,
    check_open_interval,
    check_positive,
    check_probability,
    check_scalars,
)
from dpbounds.privacy._util import as_output, finite_or_raise, guard_module, nudge_up
from dpbounds.provenance import LEE_KIFER, Provenance, Source

__all__ = ["SOURCE_CLASSIC", "analytic_gaussian_sigma", "classic_gaussian_epsilon",
           "classic_gaussian_sigma", "gaussian_delta", "gaussian_epsilon"]

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
        # ln(1.25 / delta) as a difference: 1.25 / delta overflowed at delta < 1.25e-308
        # (fuzz round 16: `privacy --delta 1e-308` refused "sensitivity/epsilon")
        root = math.sqrt(2.0 * (math.log(1.25) - math.log(delta)))
        out = np.asarray(sensitivity) * root / np.asarray(epsilon)
    return as_output(finite_or_raise(out, "sensitivity/epsilon"))


def classic_gaussian_epsilon(sigma: Any, delta: float, sensitivity: Any = 1.0) -> Any:
    r"""Inverse of :func:`classic_gaussian_sigma`; ``ValueError`` if the result is not < 1."""
    sigma = check_positive("sigma", sigma)
    delta = check_probability("delta", delta)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    root = math.sqrt(2.0 * (math.log(1.25) - math.log(delta)))  # no overflow at tiny delta
    eps = np.asarray(sensitivity) * root / np.asarray(sigma)
    if np.any(eps >= 1.0):
        raise ValueError(
            "sigma too small for the classic Gaussian bound (it needs epsilon < 1); "
            "use gaussian_epsilon (analytic) instead"
        )
    return as_output(eps)


#: float64 unit roundoff
_ULP = 2.0**-52
#: Largest tolerated error bound on log(delta) before the evaluation switches to mpmath.
_FLOAT_LOG_ERROR = 1e-12
#: log(delta) below this is decisively below every float delta (>= 5e-324, log >= -744.5).
_NEGLIGIBLE_LOG = -1000.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_HALF_LOG_PI_2 = 0.5 * math.log(0.5 * math.pi)
_LOG_FLOAT_MAX = math.log(1e308)


def _log1mexp(x: np.ndarray) -> np.ndarray:
    """``log(1 - exp(x))`` for ``x <= 0`` without cancellation (-inf at x = 0)."""
    x = np.minimum(np.asarray(x, dtype=float), 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return np.where(x > -math.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def _log_mills(t: np.ndarray) -> np.ndarray:
    """log of the Mills ratio R(t) = Phi(-t)/phi(t) (any real t; overflow-free for t >= 0)."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.log(special.erfcx(t / math.sqrt(2.0))) + _HALF_LOG_PI_2


def _log_delta_float(sigma: np.ndarray, epsilon: np.ndarray, sensitivity: np.ndarray):
    r"""log delta in float64 and a bound on its absolute error (inf where not trusted).

    With :math:`a = \Delta/(2\sigma)`, :math:`b = \varepsilon\sigma/\Delta` (so
    :math:`\varepsilon = 2ab`) and :math:`x = a - b`, the identity
    :math:`e^{\varepsilon}\phi(-a-b) = \phi(x)` turns Balle & Wang's profile into

    .. math:: \delta = \Phi(x)\,(1 - \rho), \qquad
       \rho = \frac{\phi(x) R(a+b)}{\Phi(x)} = \frac{R(a+b)}{R(b-a)},

    with the Mills ratio :math:`R(t) = \Phi(-t)/\phi(t)` (``erfcx``): no ``e^\varepsilon``
    and no difference of huge log-CDFs. What is left is the rounding of ``x`` (relative to
    ``max(a, b)``) and the cancellation in ``1 - rho``; the returned bound covers both.
    """
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        a = sensitivity / (2.0 * sigma)
        b = epsilon * sigma / sensitivity
        x = a - b
        t = a + b
        log_cdf = special.log_ndtr(x)
        log_rho = np.where(
            x >= 0,
            _log_mills(t) - 0.5 * x * x - _HALF_LOG_2PI - log_cdf,
            _log_mills(t) - _log_mills(-x),
        )
        log_rho = np.minimum(log_rho, 0.0)
        log_delta = log_cdf + _log1mexp(log_rho)
        one_minus_rho = -np.expm1(log_rho)
        big = np.maximum(a, b)
        err = _ULP * (16.0 + 8.0 * np.abs(log_cdf)
                      + (8.0 * big * np.maximum(np.abs(x), 1.0) + 16.0) / one_minus_rho)
        ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & np.isfinite(err)
        # far below every float delta: log Phi(x) >= log delta is a valid, decisive answer
        # (x itself is accurate to a relative 1e-3 here)
        negligible = (log_cdf < _NEGLIGIBLE_LOG) & (big < 1e12 * np.abs(x)) & np.isfinite(x)
        log_delta = np.where(negligible, log_cdf, log_delta)
        err = np.where(negligible, 0.0, np.where(ok, err, np.inf))
    return log_delta, err


def _log_delta_mp(sigma: float, epsilon: float, sensitivity: float) -> float:
    """log delta in mpmath (the float path's fallback), from the exact float inputs.

    ``x = a - b`` is formed from exact products, so only the cancellation in
    ``Phi(x) - phi(x) R(a+b)`` (at most ~log10(1/a) digits) needs extra precision.
    For ``a < 1e-30`` that difference is ``2 a g(b) (1 + O(a^2 (1+b)^2))`` with
    ``g(b) = 1 - b R(b)``, the derivative of ``-R``.
    """
    import mpmath as mp

    a_est = sensitivity / (2.0 * sigma) if sigma > 0 else math.inf
    lost = 0 if not 0 < a_est < 1 else int(-math.log10(a_est)) + 2
    with mp.workdps(60 + min(lost, 32)):
        s, e, d = mp.mpf(sigma), mp.mpf(epsilon), mp.mpf(sensitivity)
        a = d / (2 * s)
        b = e * s / d
        x = (d * d - 2 * e * s * s) / (2 * s * d)

        def log_cdf(u):  # log Phi(u), asymptotic far in the lower tail
            if u > -1e6:
                return mp.log(mp.ncdf(u))
            v = 1 / (u * u)
            return -u * u / 2 - mp.log(-u) - mp.log(2 * mp.pi) / 2 + mp.log(
                1 - v + 3 * v**2 - 15 * v**3 + 105 * v**4)

        def log_mills(u):  # log R(u), u >= 0
            if u > 1e6:
                v = 1 / (u * u)
                return -mp.log(u) + mp.log(1 - v + 3 * v**2 - 15 * v**3 + 105 * v**4)
            return log_cdf(-u) - mp.log(mp.npdf(u))

        log_pdf_x = -x * x / 2 - mp.log(2 * mp.pi) / 2
        if a < mp.mpf("1e-30"):
            if b > 1e6:
                v = 1 / (b * b)
                g = v * (1 - 3 * v + 15 * v**2 - 105 * v**3)
            else:
                with mp.workdps(mp.mp.dps + 2 * max(0, int(mp.log10(b + 1)))):
                    g = 1 - b * mp.exp(log_mills(b))
            return float(log_pdf_x + mp.log(2 * a) + mp.log(g))
        if x < -1e6:
            return float(log_cdf(x))  # an upper bound, decisively negligible
        if x > 1e6:
            return 0.0  # delta rounds to 1 (an upper bound)
        log_rho = log_mills(a + b) + log_pdf_x - log_cdf(x)
        return float(log_cdf(x) + mp.log(-mp.expm1(log_rho)))


def _log_delta(sigma: Any, epsilon: Any, sensitivity: Any) -> tuple[np.ndarray, np.ndarray]:
    """log delta of the Gaussian mechanism and a bound on its absolute error, elementwise:
    float64 where that is accurate to 1e-12, mpmath elsewhere."""
    sigma, epsilon, sensitivity = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (sigma, epsilon, sensitivity)))
    log_delta, err = _log_delta_float(sigma, epsilon, sensitivity)
    log_delta, err = np.array(log_delta, dtype=float), np.array(err, dtype=float)
    for i in np.ndindex(err.shape):
        if not err[i] > _FLOAT_LOG_ERROR:
            continue
        value = _log_delta_mp(float(sigma[i]), float(epsilon[i]), float(sensitivity[i]))
        # (-inf: below every float, exactly representable as such)
        log_delta[i] = value
        err[i] = 4.0 * _ULP * (abs(value) + 1.0) if math.isfinite(value) else 0.0
    return log_delta, err


def gaussian_delta(sigma: Any, epsilon: Any, sensitivity: Any = 1.0) -> Any:
    r"""Exact :math:`\delta(\varepsilon)` of the Gaussian mechanism (Balle & Wang 2018, Thm 8),
    rounded up.

    .. math:: \delta = \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
       - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)

    Evaluated in log-space with Mills ratios (no :math:`e^\varepsilon`, no cancellation of
    large log-CDFs) in float64 where that is accurate to :math:`10^{-12}`, and in mpmath
    elsewhere (e.g. :math:`\Delta/\sigma \ge 10^9`, or :math:`\Delta/\sigma` and
    :math:`\varepsilon` so small that the two terms agree to many digits). The result is
    moved up by its error bound, so it never understates :math:`\delta`; values below the
    normal float range (:math:`< 2.2\cdot10^{-308}`) are rounded up to the next subnormal.

    Examples
    --------
    >>> gaussian_delta(1.0, 1.0) > gaussian_delta(2.0, 1.0)
    True
    >>> gaussian_delta(1e-9, 1.0)  # Delta/sigma = 1e9: no privacy at epsilon = 1
    1.0
    """
    sigma = np.asarray(check_positive("sigma", sigma))
    epsilon = np.asarray(check_nonnegative("epsilon", epsilon))
    sensitivity = np.asarray(check_positive("sensitivity", sensitivity))
    log_delta, err = _log_delta(sigma, epsilon, sensitivity)
    with np.errstate(under="ignore"):
        out = np.exp(np.minimum(log_delta + err, 0.0))
    # below the normal range exp() rounds to a coarse grid (or to 0): one ulp up keeps the
    # result an upper bound (delta > 0 for every finite sigma)
    out = np.where(out < np.finfo(float).tiny, np.nextafter(out, np.inf), out)
    return as_output(out)


#: Safety margin on log(delta) in the calibrations, on top of the error bound of
#: :func:`_log_delta` (kept from the float-only version: a relative 1e-8 in delta).
_LOG_DELTA_SLACK = 1e-8


def _log_gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Upper bound on log delta (scalar), the quantity the calibrations compare."""
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError("sigma out of floating-point range (it overflows or underflows)")
    log_delta, err = _log_delta(sigma, epsilon, sensitivity)
    return float(log_delta + err)


def _clipped(gap: Any) -> Any:
    """``gap`` with +-inf (a delta below every float, or 1) replaced by +-1e300: Brent's
    method needs finite values to keep its bracket."""
    return lambda x: min(max(gap(x), -1e300), 1e300)


def analytic_gaussian_sigma(epsilon: Any, delta: float, sensitivity: Any = 1.0) -> Any:
    r"""Smallest :math:`\sigma` with :func:`gaussian_delta` :math:`\le\delta` (analytic Gaussian).

    Solved in log-space by Brent's method on :math:`\ln\sigma`, then moved up until the exact
    :math:`\delta(\sigma)` is at most ``delta * (1 - 1e-8)`` (conservative, with a margin for the
    rounding noise of the formula). Any :math:`\varepsilon > 0` works.
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(delta=delta)
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
            if hi > _LOG_FLOAT_MAX:
                raise ValueError(
                    f"epsilon={eps!r}, delta={delta!r}: the noise needed exceeds the float range "
                    "(sigma > 1e308); epsilon and delta are too small")
        from scipy import optimize  # on first use (see privacy.rdp._log_a_fractional)

        log_s = optimize.brentq(_clipped(gap), lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
        s = float(nudge_up(math.exp(log_s)))
        while _log_gaussian_delta(s, eps, 1.0) > log_delta:
            s = float(nudge_up(s * (1.0 + 1e-13)))
        # scale invariance: sigma(Delta) = Delta * sigma(1)
        out = float(nudge_up(s * sens))
        if not math.isfinite(out):
            raise ValueError(
                f"sensitivity={sens!r} with epsilon={eps!r}, delta={delta!r}: sigma exceeds "
                "the float range (> 1e308)")
        while _log_gaussian_delta(out, eps, sens) > log_delta:
            out = float(nudge_up(out * (1.0 + 1e-13)))
        return out

    out = np.vectorize(one, otypes=[float])(np.asarray(epsilon), np.asarray(sensitivity))
    return as_output(out)


def _step_until(gap: Any, start: float, fallback: float, direction: int) -> float:
    """From ``start``, step by about 1e-12 relative (at least one ulp) up (``direction=+1``)
    until ``gap <= 0``, or down until ``gap > 0``; ``fallback`` (which satisfies that already)
    after 64 steps."""
    x = start
    for _ in range(64):
        if (gap(x) <= 0) == (direction > 0):
            return x
        if direction > 0:
            x = max(x * (1.0 + 1e-12) + 1e-300, math.nextafter(x, math.inf))
        else:
            x = min(x * (1.0 - 1e-12), math.nextafter(x, 0.0))
            if x <= 0.0:
                return fallback
    return fallback


def gaussian_epsilon(sigma: Any, delta: float, sensitivity: Any = 1.0) -> Any:
    r"""Smallest :math:`\varepsilon \ge 0` with :func:`gaussian_delta` :math:`\le\delta` (exact,
    rounded up)."""
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(delta=delta)
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
            if hi > 1e308:
                raise ValueError(
                    f"sensitivity/sigma={sens / sig:.3g}: epsilon exceeds the float range "
                    "(> 1e308); sigma is too small for this sensitivity")
        lo = 0.5 * hi  # a factor-2 bracket, also for epsilon far below 1
        while lo > 0 and gap(lo) <= 0:
            hi, lo = lo, 0.5 * lo
        from scipy import optimize  # on first use (see privacy.rdp._log_a_fractional)

        eps = optimize.brentq(_clipped(gap), lo, hi, xtol=1e-300, rtol=1e-14, maxiter=500)
        # polish by bisection to a few ulps, keeping the valid (upper) end
        # (a few steps each; the bracket ends lo < hi stay valid fallbacks: for subnormal
        # eps, eps * (1 - 1e-12) rounds back to eps, and an unbounded loop never ended)
        up, down = _step_until(gap, eps, hi, +1), _step_until(gap, eps, lo, -1)
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
