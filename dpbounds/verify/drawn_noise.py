r"""The noise a run drew against the scale its transcript declares (issue 34 items 1-2).

A transcript's re-accounting (:mod:`dpbounds.verify.reaccount`) reads each release's noise
scale from ``release_std``, the number the algorithm *computed*. A defect in the draw itself
(a Laplace parameterised by its standard deviation, a draw scaled twice, Gaussian noise where
Laplace is declared) leaves that number right and the privacy wrong. Where the run recorded
what it drew (``noise_drawn``: per release and trial one sufficient statistic of the noise
vector, :meth:`dpbounds.algorithms._transcript.Transcript.drawn`), these tests hold the draws
to the declared law. They read the transcript's dictionary only and import nothing from
:mod:`dpbounds.privacy`, :mod:`dpbounds.algorithms` or :mod:`dpbounds.audit` (the AST scan of
``tests/verify/test_reaccount.py``).

**Null laws [DERIVED].** For :math:`\xi\sim\mathrm{Lap}(b)^d`, :math:`|\xi_j|/b` are i.i.d.
:math:`\mathrm{Exp}(1)` (the Laplace density :math:`e^{-|x|/b}/(2b)`, Dwork & Roth 2014,
Def. 3.2, VERBATIM, folded), so :math:`u=\lVert\xi\rVert_1/b\sim\Gamma(d,1)`; for
:math:`\xi\sim N(0,s^2I_d)`, :math:`u=\lVert\xi\rVert_2^2/s^2\sim\chi^2_d=\Gamma(d/2,2)`. The
draws of different releases and trials are independent, so the total over the :math:`N`
recorded (release, trial) pairs is :math:`\Gamma(Nk,\theta)` with :math:`(k,\theta)=(d,1)`
or :math:`(d/2,2)`: an exact two-sided test of the scale (the mean of :math:`u/(k\theta)` is
1; it reads :math:`c` for a Laplace scale off by :math:`c`, :math:`c^2` for a Gaussian
standard deviation off by :math:`c`). A Kolmogorov-Smirnov test of the :math:`N` values
:math:`u` against :math:`\Gamma(k,\theta)` tests the shape (Gaussian noise of the Laplace's
variance has the right energy and the wrong law). Each test at half the family size
``alpha`` (Bonferroni).

**Power [DERIVED].** The scale test's power against the statistic's mean off by
:data:`~dpbounds.verify.verdicts.POWER_CHANGE` (10 %, either way) is exact: the probability
that :math:`\Gamma(Nk,(1\pm0.1)\theta)` falls outside the null's acceptance interval; the
family's power is at least it. Below 0.8 the row says how many trials would reach it.

Example
-------
>>> import numpy as np
>>> from dpbounds.verify.drawn_noise import drawn_noise_verdicts
>>> rng = np.random.default_rng(0)
>>> b = np.full(50, 0.5)                                  # 50 releases, Laplace scale 0.5
>>> l1 = np.abs(rng.laplace(0.0, b[None, :, None], size=(40, 50, 3))).sum(axis=-1)
>>> tr = dict(noise="laplace", release_std=b, noise_drawn=l1, noise_dim=3)
>>> [v.holds for v in drawn_noise_verdicts(tr)]
[True, True]
>>> tr["noise_drawn"] = l1 / np.sqrt(2.0)                 # drawn with scale b / sqrt 2
>>> [v.holds for v in drawn_noise_verdicts(tr)]
[False, False]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

from dpbounds.verify.verdicts import POWER_CHANGE, Verdict

__all__ = ["drawn_noise_verdicts", "scale_power"]

#: power the scale test must have against a 10 % change to count as powered
POWER = 0.8


def _law(noise: str, dim: int) -> tuple[float, float, str]:
    """``(k, theta, name)``: the per-draw statistic's Gamma law under the declared noise."""
    if noise == "laplace":
        return float(dim), 1.0, "||xi||_1 / b ~ Gamma(d, 1)"
    if noise == "gaussian":
        return dim / 2.0, 2.0, "||xi||_2^2 / s^2 ~ chi2_d"
    raise ValueError(f"noise must be 'laplace' or 'gaussian' for a drawn-noise test, got "
                     f"{noise!r}")


def scale_power(count: float, k: float, level: float, change: float = POWER_CHANGE) -> float:
    r"""Exact power of the two-sided scale test at size ``level`` on a total of ``count``
    draws of :math:`\Gamma(k,\cdot)`, against the mean off by a factor ``1 - change`` and
    ``1 + change`` (the smaller of the two)."""
    shape = float(count) * float(k)
    lo, hi = stats.gamma.ppf(level / 2.0, shape), stats.gamma.isf(level / 2.0, shape)
    return float(min(stats.gamma.cdf(lo, shape, scale=c) + stats.gamma.sf(hi, shape, scale=c)
                     for c in (1.0 - change, 1.0 + change)))


def _trials_needed(per_trial: int, trials: int, k: float, level: float) -> int:
    """Smallest trial count whose scale test has :data:`POWER` (doubling, then bisection)."""
    lo = hi = max(1, trials)
    while scale_power(hi * per_trial, k, level) < POWER:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if scale_power(mid * per_trial, k, level) >= POWER else (mid, hi)
    return hi if scale_power(lo * per_trial, k, level) < POWER else lo


def drawn_noise_verdicts(tr: Mapping[str, Any], *, alpha: float = 1e-3, name: str = "drawn"
                         ) -> list[Verdict]:
    """The two tests of the module docstring on a transcript dictionary (``[]`` when it
    recorded no draws): the scale (exact Gamma total, with its power against a 10 % change)
    and the shape (Kolmogorov-Smirnov), each two-sided at ``alpha / 2``."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    drawn = tr.get("noise_drawn")
    dim = int(tr.get("noise_dim", 0) or 0)
    if drawn is None or dim <= 0:
        return []
    k, theta, law = _law(str(tr["noise"]), dim)
    drawn = np.asarray(drawn, dtype=float)
    scale = np.asarray(tr["release_std"], dtype=float)
    if drawn.ndim != 2 or drawn.shape[1] != scale.size:
        raise ValueError(f"noise_drawn must have shape (trials, {scale.size}) (one column per "
                         f"release), got {drawn.shape}")
    cols = np.isfinite(scale) & (scale > 0) & np.all(np.isfinite(drawn), axis=0)
    if not cols.any():
        return []
    unit = scale if str(tr["noise"]) == "laplace" else scale**2  # the statistic's scale
    u = (drawn[:, cols] / unit[cols]).ravel()
    trials, per_trial = drawn.shape[0], int(cols.sum())
    level = alpha / 2.0
    total, shape = float(u.sum()), u.size * k
    p_scale = float(min(1.0, 2.0 * min(stats.gamma.cdf(total, shape, scale=theta),
                                       stats.gamma.sf(total, shape, scale=theta))))
    ratio = total / (shape * theta)
    power = scale_power(u.size, k, level)
    short = power < POWER
    needs = (f"power {power:.2f} < {POWER} against a 10% change of the noise's scale "
             f"statistic; --trials {_trials_needed(per_trial, trials, k, level)} would"
             if short else "")
    oracle = f"drawn noise against the declared scale ({law}; DERIVED null)"
    rows = [Verdict(name, f"drawn noise scale: mean u/E[u] = {ratio:.4f} over {u.size} draws "
                          f"(d = {dim}); power {power:.2f} against a 10% change",
                    f"two-sided p >= {level:.3g}", p_scale, 0.0, level, oracle,
                    bool(p_scale >= level) and math.isfinite(total), powered=not short,
                    needs=needs, power=power)]
    p_shape = float(stats.kstest(u, stats.gamma(k, scale=theta).cdf).pvalue)
    rows.append(Verdict(name, f"drawn noise law: Kolmogorov-Smirnov of u against {law} "
                              f"({u.size} draws)",
                        f"two-sided p >= {level:.3g}", p_shape, 0.0, level, oracle,
                        bool(p_shape >= level)))
    return rows
