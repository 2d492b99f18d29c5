r"""Generic noise calibration: invert any accountant for the noise level at a target (ε, δ).

:func:`calibrate` never overshoots: it brackets the noise parameter geometrically, then
bisects on its logarithm and always returns the **upper** end of the bracket, whose ε was
verified by the accountant to be at most the target. The accountant's ε must be non-increasing
in the noise parameter (true for every mechanism here: more noise is post-processing-equivalent
to less noise plus extra noise).

Examples
--------
>>> from dpbounds.privacy.calibrate import calibrate
>>> from dpbounds.privacy.mechanisms import SubsampledGaussianMechanism
>>> sigma = calibrate(lambda s: SubsampledGaussianMechanism(s, 0.01), 1.0, 1e-5, count=1000)
>>> from dpbounds.privacy.accountants import RdpAccountant
>>> RdpAccountant().compose(SubsampledGaussianMechanism(sigma, 0.01), 1000).get_epsilon(1e-5) <= 1
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dpbounds._validation import check_int, check_positive, check_probability
from dpbounds.privacy.accountants import Accountant, make_accountant
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    SubsampledGaussianMechanism,
    SubsampledLaplaceMechanism,
    TreeAggregationMechanism,
)

__all__ = ["CalibrationResult", "calibrate", "calibrate_result", "epsilon_of"]


def epsilon_of(
    mechanism: Mechanism,
    delta: float | None,
    accountant: Any = "rdp",
    count: int = 1,
    neighbouring: Any = None,
) -> float:
    """ε of ``count`` runs of ``mechanism`` under a fresh ``accountant`` (name, instance or
    factory)."""
    acc = make_accountant(accountant, neighbouring)
    acc.compose(mechanism, count)
    if acc.name == "pure":
        return acc.get_epsilon(None)
    return acc.get_epsilon(delta)


class CalibrationResult(tuple):
    """``(noise, epsilon_attained)``; ``noise`` is the calibrated parameter."""

    __slots__ = ()

    def __new__(cls, noise: float, epsilon: float):
        return super().__new__(cls, (noise, epsilon))

    @property
    def noise(self) -> float:
        return self[0]

    @property
    def epsilon(self) -> float:
        return self[1]


def calibrate_result(
    mechanism_for: Callable[[float], Mechanism],
    epsilon: float,
    delta: float | None,
    accountant: Any = "rdp",
    count: int = 1,
    *,
    neighbouring: Any = None,
    initial: float = 1.0,
    rtol: float = 1e-6,
    max_noise: float = 1e15,
) -> CalibrationResult:
    """Like :func:`calibrate` but also returns the ε the returned noise attains."""
    epsilon = check_positive("epsilon", epsilon)
    if delta is not None:
        delta = check_probability("delta", delta)
    count = check_int("count", count, minimum=1)
    rtol = check_positive("rtol", rtol)
    initial = check_positive("initial", initial)
    if not callable(mechanism_for):
        raise ValueError("mechanism_for must be a callable noise -> Mechanism")
    if isinstance(accountant, Accountant):
        accountant = accountant.spawn()
    if accountant == "pure" or getattr(accountant, "name", None) == "pure":
        delta = None
    elif delta is None:
        raise ValueError("delta must lie in (0, 1) for an approximate-DP accountant, got None")

    cache: dict[float, float] = {}

    def eps(x: float) -> float:
        if x not in cache:
            cache[x] = epsilon_of(mechanism_for(x), delta, accountant, count, neighbouring)
        return cache[x]

    hi = initial
    while eps(hi) > epsilon:
        hi *= 4.0
        if hi > max_noise:
            raise ValueError(
                f"epsilon={epsilon!r} is out of reach: even noise {max_noise:g} gives "
                f"epsilon={eps(hi / 4.0):.4g} under this accountant"
            )
    lo = hi / 4.0
    while eps(lo) <= epsilon:
        hi, lo = lo, lo / 4.0
        if lo < 1e-300:
            return CalibrationResult(hi, eps(hi))
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if eps(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return CalibrationResult(hi, eps(hi))


def calibrate(
    mechanism_for: Callable[[float], Mechanism],
    epsilon: float,
    delta: float | None,
    accountant: Any = "rdp",
    count: int = 1,
    *,
    neighbouring: Any = None,
    initial: float = 1.0,
    rtol: float = 1e-6,
    max_noise: float = 1e15,
) -> float:
    r"""Smallest noise parameter (up to ``rtol``) whose ε under ``accountant`` is at most
    ``epsilon`` after ``count`` runs — never overshoots.

    Parameters
    ----------
    mechanism_for : callable
        Maps the noise parameter (Gaussian std :math:`\sigma`, Laplace scale :math:`b`) to a
        mechanism, e.g. ``lambda s: SubsampledGaussianMechanism(s, q)``.
    epsilon, delta : float
        Target; ``delta`` is ignored (may be ``None``) for the pure-DP accountant.
    accountant : str, Accountant or callable
        ``'rdp'``, ``'zcdp'``, ``'pld'``, ``'pure'``, an accountant (its settings are reused,
        its state is not) or a factory.
    count : int
        Number of runs (steps) of the mechanism.
    neighbouring : optional
        Relation of the accountant when ``accountant`` is a name.
    rtol : float
        Relative width of the final bracket (default 1e-6; use ~1e-4 with PLD for speed).

    Returns
    -------
    float
        The noise parameter; the accountant certifies :math:`\varepsilon' \le` ``epsilon``.
    """
    return calibrate_result(mechanism_for, epsilon, delta, accountant, count,
                            neighbouring=neighbouring, initial=initial, rtol=rtol,
                            max_noise=max_noise).noise


def _mechanism_factory(kind: str, **params: Any) -> Callable[[float], Mechanism]:
    """Helpers used by the CLI table: a one-parameter family of a standard mechanism."""
    if kind == "gaussian":
        return lambda s: GaussianMechanism(s, **params)
    if kind == "subsampled_gaussian":
        return lambda s: SubsampledGaussianMechanism(s, **params)
    if kind == "tree":
        return lambda s: TreeAggregationMechanism(s, **params)
    if kind == "laplace":
        return lambda b: LaplaceMechanism(b, **params)
    if kind == "subsampled_laplace":
        return lambda b: SubsampledLaplaceMechanism(b, **params)
    raise ValueError(f"kind must be a known mechanism family, got {kind!r}")
