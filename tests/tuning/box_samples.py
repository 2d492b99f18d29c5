"""Small boxes of (alpha, beta) around a point, for the branch-and-bound tests (shared by the
tests; nothing here is used by the package)."""

from __future__ import annotations

import math
from fractions import Fraction

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


def tiny_beta_cases(n: int, seed: int) -> list[tuple[float, float, float, int, int]]:
    """Point boxes ``(lam, alpha, beta, T0, T1)`` of heavy ball with a tiny momentum (beta
    1e-17..1e-6) and complex roots at ``lam`` (angle 0.001..pi - 0.001): cos theta's numerator
    cancels (alpha lam ~ 1) and is divided by 2 sqrt(beta), where rounding matters most."""
    rng = np.random.default_rng(seed)
    cases = [(556.5603912774255, 0.0017967502101699792, 2.91666276459134e-16, 3, 3)]
    while len(cases) < n:
        b, lam = 10 ** rng.uniform(-17, -6), 10 ** rng.uniform(-3, 3)
        th = rng.uniform(0.001, math.pi - 0.001)
        T0 = int(rng.integers(1, 6))
        cases.append((lam, (1 + b - 2 * math.sqrt(b) * math.cos(th)) / lam, b, T0,
                      T0 + int(rng.integers(0, 2))))
    return cases


def exact_least_start(a, b, T0: int, T1: int) -> float:
    """min over T0 <= t <= T1 of e_t^2, e_{t+1} = a e_t - b e_{t-1}, e_0 = e_{-1} = 1, in exact
    rational arithmetic (``a``, ``b`` Fractions)."""
    e, ep, least = Fraction(1), Fraction(1), None
    for t in range(1, T1 + 1):
        e, ep = a * e - b * ep, e
        if t >= T0:
            least = e * e if least is None else min(least, e * e)
    return float(least)
