"""Confidence intervals shared by the library (:mod:`dpbounds.verify.statistics`) and the
figure scripts (``paper_figs``): a light, low-layer module (``dpbounds._layers``), so a figure
worker does not import the verification studies to draw an error bar.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_open_interval

__all__ = ["student_t_interval"]


def student_t_interval(values: Any, axis: int = 0,
                       level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Mean along ``axis`` and the half-width of its ``level`` Student-t interval.

    The half-width is ``t_{k-1}((1+level)/2) * s / sqrt(k)`` for ``k`` values along ``axis``
    (``s`` with ``ddof=1``): with few runs the normal quantile 1.96 would make the bars too
    narrow (``t_1(0.975) = 12.7``). Zero for a single value, which has no spread to estimate.
    The one Student-t interval of dpbounds: :func:`dpbounds.verify.mean_ci` and the figures'
    error bars (``paper_figs._common.mean_ci``) are this; non-finite values propagate here
    (``mean_ci`` refuses them).

    Examples
    --------
    >>> m, h = student_t_interval([1.0, 2.0, 4.0])
    >>> round(float(m), 4), round(float(h), 4)  # t_2(0.975) = 4.303, s / sqrt(3) = 0.8819
    (2.3333, 3.7946)

    Raises ``ValueError`` naming ``level`` outside (0, 1).
    """
    level = check_open_interval("level", level, 0.0, 1.0)
    v = np.asarray(values, dtype=float)
    mean = v.mean(axis=axis)
    k = v.shape[axis]
    if k < 2:
        return mean, np.zeros_like(mean)
    se = v.std(axis=axis, ddof=1) / math.sqrt(k)
    from scipy import stats  # on first use: scipy.stats costs 0.3-0.7 CPU-s to import

    return mean, float(stats.t.ppf(0.5 + level / 2.0, k - 1)) * se
