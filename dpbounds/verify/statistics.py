r"""Means with confidence intervals and log–log slopes with bootstrap intervals.

A scaling study measures a quantity :math:`Y` at grid points :math:`x_1<\dots<x_m` (``trials``
independent runs each) and asks how :math:`\mathbb E Y` scales: the **slope** is the least-squares
fit of :math:`\log\bar Y_j` on :math:`\log x_j`. Its uncertainty comes from the trials: the
**bootstrap** resamples the runs of every point independently (with replacement), recomputes
the means and refits; the percentile interval of the refitted slopes is the CI. Each bootstrap
replicate is drawn from ``numpy.random.default_rng(seed)`` so results are reproducible.

Example
-------
>>> import numpy as np
>>> from dpbounds.verify.statistics import loglog_slope
>>> x = np.array([1.0, 2.0, 4.0, 8.0])
>>> round(loglog_slope(x, 3.0 * x**0.25), 12)
0.25
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_open_interval, check_positive
from dpbounds.intervals import student_t_interval

__all__ = ["MeanCI", "SlopeCI", "bootstrap_slope", "loglog_slope", "mean_ci"]


@dataclass(frozen=True)
class MeanCI:
    """Mean of a sample with a Student-t confidence interval (``level``)."""

    mean: float
    ci_low: float
    ci_high: float
    se: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass(frozen=True)
class SlopeCI:
    """A log–log slope with its bootstrap percentile interval."""

    slope: float
    ci_low: float
    ci_high: float
    level: float
    replicates: int

    def as_dict(self) -> dict[str, float]:
        return {"slope": self.slope, "ci_low": self.ci_low, "ci_high": self.ci_high}


def _reals(name: str, values: Any) -> np.ndarray:
    """``values`` as a float array; ``ValueError`` naming ``name`` for complex numbers,
    integers beyond float64 (10**400: OverflowError) or anything not a number (fuzz 7)."""
    try:
        if np.iscomplexobj(values) or any(isinstance(v, complex) for v in
                                          np.asarray(values, dtype=object).ravel()):
            raise TypeError
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be real numbers within float64's range, got "
                         f"{reprlib.repr(values)}") from None


def mean_ci(values: Any, level: float = 0.95) -> MeanCI:
    """Mean and its ``level`` Student-t interval
    (:func:`dpbounds.intervals.student_t_interval` of the flattened values; zero width for one
    value).

    Raises ``ValueError`` for an empty sample or non-finite values (no silent NaN).
    """
    level = check_open_interval("level", level, 0.0, 1.0)
    v = _reals("values", values).ravel()
    if v.size == 0:
        raise ValueError("values must hold at least one number")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite (NaN or inf in a measured component)")
    mean, half = student_t_interval(v, 0, level)
    m, h = float(mean), float(half)
    if v.size == 1:
        return MeanCI(m, m, m, 0.0, 1)
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    return MeanCI(m, m - h, m + h, se, int(v.size))


def loglog_slope(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Least-squares slope of ``log y`` on ``log x`` (``x, y > 0``, at least 2 distinct x)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # x <= 0: refused below, by name
        lx = np.log(_reals("x", x))
        ly = np.log(_reals("y", y))
    if lx.size < 2 or np.ptp(lx) == 0:
        raise ValueError("a slope needs at least two distinct grid values")
    if not (np.all(np.isfinite(lx)) and np.all(np.isfinite(ly))):
        raise ValueError("a log-log slope needs positive, finite x and y")
    lx = lx - lx.mean()
    return float(np.dot(lx, ly - ly.mean()) / np.dot(lx, lx))


def local_slopes(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> list[float]:
    """Slopes of ``log y`` against ``log x`` between consecutive grid points.

    ``x`` (distinct) and ``y`` are positive and finite, of equal length at least 2.
    """
    xs = np.asarray(check_positive("x", x), dtype=float).ravel()
    ys = np.asarray(check_positive("y", y), dtype=float).ravel()
    if xs.size != ys.size or xs.size < 2:
        raise ValueError(f"x and y must have the same length, at least 2; got {xs.size} and "
                         f"{ys.size}")
    if np.unique(xs).size != xs.size:
        raise ValueError("x must hold distinct grid values")
    lx, ly = np.log(xs), np.log(ys)
    return [float(v) for v in np.diff(ly) / np.diff(lx)]


def bootstrap_slope(x: Sequence[float], samples: Sequence[Any], *, replicates: int = 2000,
                    level: float = 0.95, seed: Any = 0) -> SlopeCI:
    """Log–log slope of the per-point means with a bootstrap percentile interval.

    Parameters
    ----------
    x:
        Grid values (positive).
    samples:
        One 1-d array of positive per-trial measurements per grid value.
    replicates:
        Bootstrap replicates (each resamples every point's trials with replacement).
    level:
        Coverage of the percentile interval.
    seed:
        Seed of ``numpy.random.default_rng``.
    """
    replicates = check_int("replicates", replicates, minimum=10)
    level = check_open_interval("level", level, 0.0, 1.0)
    xs = np.asarray(x, dtype=float)
    arrs = [np.asarray(s, dtype=float).ravel() for s in samples]
    if len(arrs) != xs.size:
        raise ValueError(f"samples must hold one array per grid value ({xs.size}), "
                         f"got {len(arrs)}")
    if any(a.size == 0 or np.any(~np.isfinite(a)) or np.any(a <= 0) for a in arrs):
        raise ValueError("every sample must be non-empty, finite and positive for a log fit")
    point = loglog_slope(xs, [a.mean() for a in arrs])
    rng = np.random.default_rng(seed)
    # means of resampled trials, one row per replicate (vectorised per point)
    means = np.stack([a[rng.integers(0, a.size, size=(replicates, a.size))].mean(axis=1)
                      for a in arrs], axis=1)
    lx = np.log(xs) - np.log(xs).mean()
    ly = np.log(means)
    slopes = (ly - ly.mean(axis=1, keepdims=True)) @ lx / np.dot(lx, lx)
    lo, hi = np.quantile(slopes, [0.5 - level / 2, 0.5 + level / 2])
    return SlopeCI(point, float(lo), float(hi), level, replicates)
