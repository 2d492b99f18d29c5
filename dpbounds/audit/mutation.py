"""Under-noised copies of the algorithms, for mutation testing of the audit.

:func:`scaled_noise` multiplies the scale of every noise draw the algorithms make (Gaussian,
Laplace and exponential draws of :class:`~dpbounds.backend.TrialRandom`) by a factor, while
everything else — calibration, ledger, mini-batches — stays as it is. A run inside
``scaled_noise(0.5)`` is the algorithm with its calibrated σ halved that still claims the
original ε: a copy the audit must flag. Sampling draws (uniform, permutations, subsets,
integers) are untouched, so the mutant sees the same mini-batches.

It patches the class for the duration of the ``with`` block (not thread-safe): a testing
tool, not something an algorithm should ever run under.

Example
-------
>>> from dpbounds.backend import TrialRandom
>>> from dpbounds.audit.mutation import scaled_noise
>>> with scaled_noise(0.5):
...     a = TrialRandom(0, 1).normal((), scale=2.0)
>>> b = TrialRandom(0, 1).normal((), scale=1.0)
>>> bool(a[0] == b[0])
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpbounds._validation import check_nonnegative
from dpbounds.backend import TrialRandom

__all__ = ["scaled_noise"]


@contextmanager
def scaled_noise(factor: float) -> Iterator[None]:
    """Within the block, every noise scale passed to ``TrialRandom.normal``/``laplace``/
    ``exponential`` is multiplied by ``factor`` (``>= 0``; 1 changes nothing)."""
    factor = check_nonnegative("noise_factor", factor)
    if factor == 1.0:
        yield
        return
    original = TrialRandom._scaled

    def _scaled(self: TrialRandom, base: Any, scale: Any, ndim_extra: int) -> Any:
        return original(self, base, scale * factor, ndim_extra)

    TrialRandom._scaled = _scaled  # type: ignore[method-assign]
    try:
        yield
    finally:
        TrialRandom._scaled = original  # type: ignore[method-assign]
