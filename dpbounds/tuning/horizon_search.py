r"""The best horizon :math:`T\le T_{\max}` of a bound without evaluating every horizon.

:func:`minimise_over_horizon` is a branch and bound over the horizons of ``k`` points (e.g.
``k`` heavy-ball :math:`(\alpha,\beta)`): an objective gives its value at (point, horizon)
pairs and a lower bound on an interval of horizons; intervals whose lower bound exceeds the best
value found are discarded. For the DP heavy-ball bound
(:class:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.HeavyBallDPObjective`) the transient is
at least :math:`\rho^{2T}` and the noise term increases in :math:`T`, so the result is the exact
minimiser over every horizon in memory independent of :math:`T_{\max}`; where the lower bound
is weak (very ill-conditioned problems) a work limit applies and the result carries its proven
gap.

Example
-------
>>> import numpy as np
>>> from dpbounds.tuning.horizon_search import minimise_over_horizon
>>> class Parabola:  # (T - 37)^2 per point, with an exact lower bound on [lo, hi]
...     def values(self, p, T):
...         return (T - 37.0) ** 2
...     def lower(self, p, lo, hi):
...         return np.where((lo <= 37) & (37 <= hi), 0.0, np.minimum((lo - 37.0) ** 2,
...                                                                   (hi - 37.0) ** 2))
>>> int(minimise_over_horizon(Parabola(), 1, 10**6, joint=False).best_T[0])
37
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dpbounds._progress import progress_bar
from dpbounds._validation import check_int

__all__ = []

_BATCH = 1 << 18      # (point, horizon) pairs evaluated per round
_KNOTS = 48           # first evaluation: geometric knots over 1..Tmax
_SPLIT = 16           # a surviving interval is split into this many parts
_EXHAUST = 64         # intervals this short are evaluated point by point
_PRUNE_SLACK = 1e-9   # a lower bound must exceed the best by this (relative) to prune


class HorizonSearch(NamedTuple):
    """Result of :func:`minimise_over_horizon` (arrays over the points)."""

    best_T: np.ndarray
    best: np.ndarray
    #: proven relative gap: best <= (1 + gap) * min over all T (0: exact; inf: no certificate)
    gap: np.ndarray
    evaluations: int


def minimise_over_horizon(objective: Any, k: int, Tmax: int, *, joint: bool,
                           max_evaluations: int | None = None, progress: bool = False,
                           desc: str = "horizon search") -> HorizonSearch:
    r""":math:`\min_{1\le T\le T_{\max}}` of an objective for ``k`` points (branch and bound).

    ``objective.values(p, T)`` gives the objective at (point, horizon) pairs and
    ``objective.lower(p, lo, hi)`` a lower bound on :math:`[lo,hi]`. The horizons are first
    evaluated at geometric knots; an interval between evaluated horizons is dropped when its
    lower bound exceeds the best value found (of its point, or of all points with
    ``joint=True``, which is all a grid search needs), otherwise split and searched again, and
    evaluated point by point once short. The result equals ``argmin`` over every horizon (ties
    to the smaller :math:`T`), in :math:`O(T^\ast)` evaluations per point in practice and
    :math:`O(1)` memory in :math:`T_{\max}`. Where the lower bound is weak (a bound that is
    nearly flat in :math:`T` over a huge range, e.g. :math:`L/\mu=10^{12}`) the work is capped
    at ``max_evaluations``; ``gap`` then says how far from the minimum the result can be.

    Returns
    -------
    HorizonSearch (with ``joint=True`` only the best point's entries are minima; the others
    are upper bounds).
    """
    k = check_int("k", k, minimum=1, maximum=10**7)
    Tmax = check_int("Tmax", Tmax, minimum=1)
    knots = np.unique(np.round(np.geomspace(1, Tmax, min(_KNOTS, Tmax))).astype(np.int64))
    P = np.repeat(np.arange(k), knots.size)
    T = np.tile(knots, k)
    vals = objective.values(P, T).reshape(k, knots.size)
    vals = np.where(np.isnan(vals), np.inf, vals)
    j = np.argmin(vals, axis=1)
    best_T, best = knots[j].copy(), vals[np.arange(k), j].copy()
    used = int(P.size)
    gaps = (knots[1:] - knots[:-1]) > 1
    lo0, hi0 = knots[:-1][gaps] + 1, knots[1:][gaps] - 1
    stack = [(np.repeat(np.arange(k), lo0.size), np.tile(lo0, k), np.tile(hi0, k))]
    # lines=True: a long search prints plain lines in logs and pipes (every 10 s)
    bar = progress_bar(progress, total=k * Tmax, desc=desc, unit="T", unit_scale=True,
                       lines=True)
    bar.update(k * knots.size)

    def record(p: np.ndarray, t: np.ndarray, v: np.ndarray) -> None:
        v = np.where(np.isnan(v), np.inf, v)
        order = np.lexsort((t, v, p))  # per point: smallest value, then smallest T
        p, t, v = p[order], t[order], v[order]
        first = np.ones(p.size, dtype=bool)
        first[1:] = p[1:] != p[:-1]
        p, t, v = p[first], t[first], v[first]
        better = (v < best[p]) | ((v == best[p]) & (t < best_T[p]))
        best[p[better]], best_T[p[better]] = v[better], t[better]

    gap = np.zeros(k)
    while stack:
        sp, slo, shi = stack.pop()
        if sp.size > _BATCH // _SPLIT:  # bounded work per round: put the rest back
            stack.append((sp[_BATCH // _SPLIT:], slo[_BATCH // _SPLIT:], shi[_BATCH // _SPLIT:]))
            sp, slo, shi = sp[:_BATCH // _SPLIT], slo[:_BATCH // _SPLIT], shi[:_BATCH // _SPLIT]
        threshold = np.full(sp.size, np.min(best)) if joint else best[sp]
        lb = objective.lower(sp, slo, shi)
        keep = lb * (1.0 - _PRUNE_SLACK) <= threshold
        bar.update(int(np.sum(shi[~keep] - slo[~keep] + 1)))
        sp, slo, shi = sp[keep], slo[keep], shi[keep]
        if sp.size == 0:
            continue
        length = shi - slo + 1
        short = length <= _EXHAUST
        cost = int(np.sum(length[short])) + int(np.sum(~short)) * (_SPLIT + 1)
        if max_evaluations is not None and used + cost > max_evaluations:
            stack.append((sp, slo, shi))  # out of work: certify what is left by its bound
            gap = _remaining_gap(objective, stack, best, joint)
            break
        used += cost
        if np.any(short):  # every horizon of the short intervals
            n_each = length[short]
            p_all = np.repeat(sp[short], n_each)
            offsets = np.arange(n_each.sum()) - np.repeat(np.cumsum(n_each) - n_each, n_each)
            t_all = np.repeat(slo[short], n_each) + offsets
            record(p_all, t_all, objective.values(p_all, t_all))
            bar.update(int(n_each.sum()))
        long_ = ~short
        if np.any(long_):  # split: evaluate _SPLIT + 1 inner knots, keep the gaps between them
            lp, llo, lhi = sp[long_], slo[long_], shi[long_]
            frac = np.linspace(0.0, 1.0, _SPLIT + 1)
            kn = np.round(llo[:, None] + frac[None, :] * (lhi - llo)[:, None]).astype(np.int64)
            p_all = np.repeat(lp, _SPLIT + 1)
            record(p_all, kn.ravel(), objective.values(p_all, kn.ravel()))
            bar.update(int(kn.size))
            glo, ghi = kn[:, :-1] + 1, kn[:, 1:] - 1
            ok = glo <= ghi
            stack.append((np.repeat(lp, _SPLIT)[ok.ravel()], glo[ok], ghi[ok]))
    bar.close()
    return HorizonSearch(best_T, best, gap, used)


def _remaining_gap(objective: Any, stack: list, best: np.ndarray, joint: bool) -> np.ndarray:
    """best / (smallest lower bound left unexplored) - 1, per point (or of the best point)."""
    lowest = np.full(best.size, np.inf)
    for sp, slo, shi in stack:
        np.minimum.at(lowest, sp, objective.lower(sp, slo, shi))
    if joint:
        lowest[:] = np.min(lowest)
        ref = np.full(best.size, np.min(best))
    else:
        ref = best
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gap = np.where(lowest >= ref, 0.0, ref / lowest - 1.0)
    return np.where(np.isnan(gap), np.inf, gap)
