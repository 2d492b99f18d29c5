"""The worst-case quadratic of the tuners' "computed" column: exact errors, no sampling."""

from __future__ import annotations

import math

import numpy as np

from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_expected_error


def worst_case_spectrum(mu: float, L: float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The worst-case quadratic diag(mu, L, ...): its two eigenvalues and their multiplicities.

    (Two numbers instead of a length-``d`` array: ``d`` may be 10^9.)
    """
    return np.array([mu, L]), np.array([d // 2, d - d // 2], dtype=float)


def heavy_ball_error(T: int, a: float, b: float, mu: float, L: float, d: int, s2: float,
                       dist_sq: float) -> float:
    """Exact E[F(x_T)] - F* on diag(mu, L, ...), ||x0 - x*||^2 = dist_sq spread evenly."""
    lams, mult = worst_case_spectrum(mu, L, d)
    e0 = math.sqrt(dist_sq / d)
    return float(sum(w * heavy_ball_expected_error(T, a, b, [lam], s2, e0)[1]
                     for lam, w in zip(lams, mult) if w > 0))
