"""Small boxes of (alpha, beta) around a point, for the branch-and-bound tests (shared by the
tests; nothing here is used by the package)."""

from __future__ import annotations

import math

import numpy as np


def near_boxes(rng: np.random.Generator, a: float, b: float, n: int, spread_a: float,
               spread_b: float, log_wa: tuple[float, float], log_wb: tuple[float, float]
               ) -> list[np.ndarray]:
    """``n`` boxes (al0, al1, b0, b1): centres ``a exp(N(0, spread_a))``, ``b + N(0,
    spread_b)``; half-widths relative ``10^U(log_wa)`` in alpha, absolute ``10^U(log_wb)`` in
    beta."""
    out = []
    for _ in range(n):
        ac, bc = a * math.exp(rng.normal(0, spread_a)), b + rng.normal(0, spread_b)
        wa, wb = 10 ** rng.uniform(*log_wa), 10 ** rng.uniform(*log_wb)
        out.append((ac * (1 - wa), ac * (1 + wa), bc - wb, bc + wb))
    return [np.array(v) for v in zip(*out)]


def at_centre(bound):
    """A plausible bug: a box bound ``bound(prob, lam, al0, al1, b0, b1, T0, T1)`` read at the
    box's centre (a point value used for the whole box)."""
    def wrapped(prob, lam, al0, al1, b0, b1, T0, T1):
        am, bm = 0.5 * (al0 + al1), 0.5 * (b0 + b1)
        return bound(prob, lam, am, am, bm, bm, T0, T1)
    return wrapped
