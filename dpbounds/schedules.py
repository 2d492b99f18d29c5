r"""Step-size schedules of (DP-)NAG and multi-stage MASG (Kuru et al., Section 4).

A low-layer home (``dpbounds._layers``) for what both the bounds
(:mod:`dpbounds.bounds.strongly_convex.nesterov`) and the algorithms
(:mod:`dpbounds.algorithms.momentum`) use: Nesterov's momentum for strongly convex problems,
the constant-step schedule of Theorem 4.1 and the MASG stage schedule (33) of Theorem 4.3.

Examples
--------
>>> from dpbounds.schedules import masg_schedule
>>> [masg_schedule(1.0, 20.0, stages=K, first_stage_rounding="floor").horizon for K in (2, 3, 4, 5)]
[53, 133, 293, 613]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_finite, check_int, check_positive
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "MAX_HORIZON",
    "SOURCE_EQ33",
    "SOURCE_THM41",
    "SOURCE_THM43",
    "Schedule",
    "masg_schedule",
    "nesterov_momentum",
    "nesterov_schedule",
]

SOURCE_THM41 = Source(KURU, "Theorem 4.1, eqs. (28)-(29)", Provenance.VERBATIM,
                      "adapted from Aybat et al. (NeurIPS 2019), Thm 2.3")
SOURCE_THM43 = Source(KURU, "Theorem 4.3, eq. (34)", Provenance.VERBATIM,
                      "printed '=' read as '<='")
SOURCE_EQ33 = Source(KURU, "eq. (33), MASG stage schedule", Provenance.VERBATIM,
                     "Aybat et al. 2019; stage-1 length n_1 >= 1 is free")

#: longest schedule (and largest ``max_horizon`` of the horizon searches, which keep the bound at
#: every horizon: three float64 arrays kept, about 0.5 GB peak at this size)
MAX_HORIZON = 10**7


def nesterov_momentum(alpha: Any, mu: float) -> Any:
    r""":math:`\beta=(1-\sqrt{\alpha\mu})/(1+\sqrt{\alpha\mu})` (Theorem 4.1).

    The one definition of Nesterov's momentum for strongly convex problems (the algorithms,
    the tuners, the figures call it). :math:`\mu\alpha\ge1` gives :math:`\beta=0` (the step
    alone contracts the error to 0; the theorems need :math:`\alpha\le1/L\le1/\mu`).

    Example
    -------
    >>> round(nesterov_momentum(1.0, 0.25), 12)  # sqrt(mu alpha) = 1/2
    0.333333333333
    """
    alpha = np.asarray(check_positive("alpha", alpha), dtype=float)
    mu = float(check_positive("mu", mu))
    s = np.sqrt(np.minimum(alpha * mu, 1.0))
    out = (1.0 - s) / (1.0 + s)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class Schedule:
    r"""A step-size schedule of (DP-)NAG / MASG: per-iteration step and stage index.

    Attributes
    ----------
    steps:
        :math:`\alpha^{(s_t)}` for :math:`t=1..T` (length ``T``).
    stages:
        Stage index :math:`s_t\in\{1,2,\dots\}` of each iteration.
    stage_lengths:
        :math:`n_k` of each stage actually used.
    """

    steps: np.ndarray
    stages: np.ndarray
    stage_lengths: tuple[int, ...]
    name: str = "NAG"
    source: Source = SOURCE_THM41

    @property
    def horizon(self) -> int:
        return int(self.steps.size)

    def truncated(self, T: int) -> Schedule:
        """The first ``T`` iterations of the schedule."""
        T = check_int("T", T, minimum=1, maximum=self.horizon)
        lengths, left = [], T
        for n_k in self.stage_lengths:
            if left <= 0:
                break
            lengths.append(min(n_k, left))
            left -= n_k
        return Schedule(self.steps[:T], self.stages[:T], tuple(lengths), self.name, self.source)

    def momenta(self, mu: float) -> np.ndarray:
        """Nesterov momentum of each iteration (see :func:`nesterov_momentum`)."""
        return np.asarray(nesterov_momentum(self.steps, mu))


def nesterov_schedule(alpha: float, T: int) -> Schedule:
    """Constant-step DP-NAG (Theorem 4.1): one stage of length ``T``."""
    alpha = float(check_positive("alpha", alpha))
    T = check_int("T", T, minimum=1, maximum=MAX_HORIZON)
    return Schedule(np.full(T, alpha), np.ones(T, dtype=np.int64), (T,), "NAG", SOURCE_THM41)


def masg_schedule(
    mu: float, L: float, *, stages: int | None = None, horizon: int | None = None, p: float = 1.0,
    c: float = 1.0, first_stage_length: int | None = None, first_stage_rounding: str = "ceil",
) -> Schedule:
    r"""The MASG stage schedule (33), step sizes scaled by ``c`` as in Section 5.

    :math:`\alpha^{(1)}=c/L`, :math:`n_1\ge1`; for :math:`k\ge2`:
    :math:`n_k=2^k\lceil\sqrt\kappa\ln(2^{p+2})\rceil`, :math:`\alpha^{(k)}=c/(2^{2k}L)`.

    Parameters
    ----------
    mu : float
        Strong convexity, :math:`0<\mu\le L`.
    L : float
        Smoothness.
    stages : int, optional
        The number of stages ``K`` (full stages). Exactly one of ``stages`` and ``horizon``
        must be given.
    horizon : int, optional
        A horizon ``T`` (the schedule is cut after ``T`` iterations).
    p :
        :math:`p\ge1` of (33).
    c :
        Step-size factor (Section 5 uses :math:`c\in\{0.1,1\}`; the theorem needs
        :math:`\alpha^{(k)}\le1/L`, i.e. ``c <= 1``).
    first_stage_length :
        :math:`n_1`; default :math:`2\sqrt\kappa\ln\sqrt\kappa` rounded by ``first_stage_rounding``
        (at least 1).
    first_stage_rounding : {"ceil", "floor"}
        ``"ceil"`` as in ``DP_NAG_LR.m`` (Figs. 3-4); ``"floor"`` as in the Fig. 2 script.
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    c = float(check_positive("c", c))
    p = float(check_finite("p", p))
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    if (stages is None) == (horizon is None):
        raise ValueError("give exactly one of stages (K) or horizon (T)")
    kappa = L / mu
    if not math.isfinite(kappa):
        raise ValueError(f"L/mu = {L}/{mu} overflows float64: mu is too small relative to L")
    if first_stage_length is None:
        raw = 2.0 * math.sqrt(kappa) * math.log(math.sqrt(kappa))
        if first_stage_rounding == "ceil":
            n1 = math.ceil(raw - 1e-12)
        elif first_stage_rounding == "floor":
            n1 = math.floor(raw + 1e-12)
        else:
            raise ValueError(f"first_stage_rounding must be 'ceil' or 'floor', got "
                             f"{first_stage_rounding!r}")
        n1 = max(1, n1)
    else:
        n1 = check_int("first_stage_length", first_stage_length, minimum=1)
    C = math.ceil(math.sqrt(kappa) * (p + 2) * math.log(2.0) - 1e-12)
    if stages is not None:
        K = check_int("stages", stages, minimum=1, maximum=64)
        lengths = [n1] + [2**k * C for k in range(2, K + 1)]
        if sum(lengths) > MAX_HORIZON:
            raise ValueError(f"stages={K} gives {sum(lengths)} iterations, more than "
                             f"MAX_HORIZON={MAX_HORIZON}; use fewer stages")
    else:
        T = check_int("horizon", horizon, minimum=1, maximum=MAX_HORIZON)
        lengths, total, k = [min(n1, T)], min(n1, T), 2
        while total < T:
            n_k = min(2**k * C, T - total)
            lengths.append(n_k)
            total += n_k
            k += 1
    steps = np.concatenate([np.full(n_k, c / L if k == 1 else c / (4.0**k * L))
                            for k, n_k in enumerate(lengths, start=1)])
    stage_idx = np.concatenate([np.full(n_k, k, dtype=np.int64)
                                for k, n_k in enumerate(lengths, start=1)])
    return Schedule(steps, stage_idx, tuple(lengths), "MASG", SOURCE_THM43)
