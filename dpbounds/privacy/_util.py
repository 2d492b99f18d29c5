"""Small numerical helpers shared by the privacy modules (not public API)."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_output(value: np.ndarray) -> Any:
    """Return a Python float for 0-d results and the array otherwise."""
    value = np.asarray(value, dtype=float)
    return float(value) if value.ndim == 0 else value


def log1p_times_expm1(x: Any, ratio: Any) -> np.ndarray:
    r"""``log(1 + ratio * (exp(x) - 1))`` for ``x >= 0`` and ``ratio > 0``, without overflow.

    For ``x <= 30`` it uses ``log1p(ratio * expm1(x))`` (no cancellation, no overflow); beyond,
    ``x + log(ratio) + log1p((1/ratio - 1) e^{-x})`` keeps ``exp(x)`` out of the computation.
    """
    x = np.asarray(x, dtype=float)
    ratio = np.asarray(ratio, dtype=float)
    x, ratio = np.broadcast_arrays(x, ratio)
    out = np.empty(x.shape, dtype=float)
    small = x <= 30.0
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        out[small] = np.log1p(ratio[small] * np.expm1(x[small]))
        xl, rl = x[~small], ratio[~small]
        out[~small] = xl + np.log(rl) + np.log1p((1.0 / rl - 1.0) * np.exp(-xl))
    return out


def nudge_up(value: Any, ulps: int = 4) -> Any:
    """Move a calibrated noise level a few ulps up so rounding can never overshoot privacy."""
    out = np.asarray(value, dtype=float)
    for _ in range(ulps):
        out = np.nextafter(out, np.inf)
    return out
