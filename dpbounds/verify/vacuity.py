"""Where a tuned bound stops being vacuous: the smallest ``N`` with bound below the trivial one.

Example
-------
>>> from dpbounds.verify.vacuity import first_nonvacuous_n
>>> n = first_nonvacuous_n("tran_cutkosky.alg2", dict(d=4, eps=8.0, delta=1e-5, G=1.0,
...                        L=1.0, R=0.18))
>>> 2.0e4 < n < 2.2e4  # Theorem 9 as derived for the implemented Algorithm 2
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dpbounds._validation import check_positive
from dpbounds.bounds.registry import get

__all__ = ["first_nonvacuous_n"]


def first_nonvacuous_n(theorem: str, problem: Mapping[str, float],
                       trivial: float | None = None, *, n_min: float = 10.0,
                       n_max: float = 1e15) -> float:
    """Smallest (real) ``N`` at which the tuned bound of ``theorem`` drops below ``trivial``.

    ``problem`` holds the other problem keys (``d, eps, delta, G, L, R``); ``trivial``
    defaults to ``G`` (a gradient norm never exceeds it). Bisection in ``log N`` to relative
    precision 1e-9, assuming the bound decreases in ``N`` beyond the returned value; ``inf``
    when it stays vacuous up to ``n_max``. Points where the bound's assumptions fail count as
    vacuous.
    """
    entry = get(theorem)
    trivial = check_positive("trivial", float(problem["G"]) if trivial is None else trivial)

    def below(n: float) -> bool:
        v = float(entry.value(dict(problem, N=n), invalid="nan"))
        return math.isfinite(v) and v < trivial

    lo, hi = n_min, n_min
    while not below(hi):
        lo, hi = hi, hi * 4
        if hi > n_max:
            return math.inf
    if lo == hi:
        return hi
    while hi / lo > 1 + 1e-9:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if not below(mid) else (lo, mid)
    return hi
