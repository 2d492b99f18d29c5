"""One Student-t interval: ``dpbounds.intervals.student_t_interval`` is the figures' ``mean_ci``
and the computation inside ``dpbounds.verify.mean_ci``, with the numbers of both former copies.

Oracles: ``scipy.stats.t.interval`` on the standard error, and the two formulas as they were
before the merge (bit for bit); negative control: the normal quantile is too narrow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from dpbounds.intervals import student_t_interval
from dpbounds.verify import mean_ci


def _old_figures(v: np.ndarray, axis: int = 0, level: float = 0.95):
    """``paper_figs._common.mean_ci`` before the merge."""
    mean, k = v.mean(axis=axis), v.shape[axis]
    if k < 2:
        return mean, np.zeros_like(mean)
    return mean, float(stats.t.ppf(0.5 + level / 2.0, k - 1)) * (
        v.std(axis=axis, ddof=1) / math.sqrt(k))


def _old_library(v: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """``dpbounds.verify.mean_ci`` before the merge: (mean, low, high)."""
    m = float(v.mean())
    if v.size == 1:
        return m, m, m
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    q = float(stats.t.ppf(0.5 + level / 2, v.size - 1))
    return m, m - q * se, m + q * se


# dyadic values: scipy's sem (the oracle) loses itself in subnormals, the interval does not
_finite = st.integers(-10**6, 10**6).map(lambda i: i / 64)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 5), st.integers(1, 12)), elements=_finite),
       st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_the_interval_is_scipys_and_both_old_copies(x: np.ndarray, level: float) -> None:
    m, h = student_t_interval(x, axis=1, level=level)
    old_m, old_h = _old_figures(x, 1, level)
    assert m.tobytes() == old_m.tobytes() and h.tobytes() == old_h.tobytes()
    for row, mi, hi in zip(x, m, h):
        r = mean_ci(row, level)
        assert (r.mean, r.ci_low, r.ci_high) == _old_library(row, level)
        assert r.mean == mi and r.ci_high - r.mean == pytest.approx(hi, rel=1e-9, abs=1e-9)
        if row.size > 1 and np.ptp(row) > 0:
            lo, up = stats.t.interval(level, row.size - 1, loc=row.mean(), scale=stats.sem(row))
            assert hi == pytest.approx((up - lo) / 2, rel=1e-9)


def test_the_figures_use_the_library_interval() -> None:
    from paper_figs import _common

    assert _common.mean_ci is student_t_interval


def test_negative_control_the_normal_quantile_is_too_narrow() -> None:
    x = np.array([1.0, 2.0, 4.0])
    _, h = student_t_interval(x)
    assert h > 2 * 1.96 * stats.sem(x)  # t_2(0.975) = 4.30
    assert student_t_interval([5.0])[1] == 0.0
    with pytest.raises(ValueError, match="level"):
        student_t_interval(x, level=1.0)
