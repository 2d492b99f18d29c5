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

**Grid noise [DERIVED].** A run that releases on the grid :math:`2^{-j}` (``grid_bits``
in the transcript: the Laplace momentum methods with ``noise="grid"``) draws integers
:math:`Z_j` with :math:`P[Z=z]=\frac{1-q}{1+q}q^{|z|}`, :math:`q=e^{-1/b}`, ``b`` the
recorded scale in grid units (``release_std`` :math:`\cdot 2^j`; Canonne, Kamath & Steinke
2020, Definition of the discrete Laplace, VERBATIM up to notation), and records
:math:`S=\sum_{j\le d}|Z_j|`, the sufficient statistic of ``q``. Then :math:`|Z|=B(1+G)`
with :math:`B\sim\mathrm{Bernoulli}(2q/(1+q))` and :math:`G` geometric
(:math:`P[G=k]=(1-q)q^k`), so :math:`S=N+W`, :math:`N\sim\mathrm{Bin}(d,2q/(1+q))` the
non-zero coordinates and, given ``N``, :math:`W` negative binomial (failures before ``N``
successes of probability :math:`1-q`): the exact cdf of ``S`` is a mixture of ``d + 1``
negative binomial cdfs (:func:`dlap_l1_cdf`). :math:`E|Z|=2q/(1-q^2)`,
:math:`E|Z|^2=2q/(1-q)^2`. Two rows as above, each at ``alpha / 2``: the scale, a two-sided
z-test of the total :math:`\sum S` at its exact null mean and variance (normal reference:
a sum of ``d`` x draws independent terms; its size is checked by Monte Carlo in
``tests/verify/test_drawn_grid_noise.py``), with its power against the scale off by 10 %
from the same moments; the law, Pearson's chi-square of the draws' counts in ``K`` cells per
release cut at that release's null ``i/K`` quantiles, with each cell's exact probability
from the cdf (``K = min(10, draws // 10)``; ``K - 1`` degrees of freedom).

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
from scipy import special, stats

from dpbounds.verify.verdicts import POWER_CHANGE, Verdict

__all__ = ["dlap_l1_cdf", "drawn_noise_verdicts", "scale_power"]

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
    return _smallest(lambda n: scale_power(n * per_trial, k, level), trials)


def _smallest(power: Any, trials: int) -> int:
    """Smallest trial count ``n >= 1`` with ``power(n) >= POWER`` (``power`` increasing)."""
    lo = hi = max(1, trials)
    while power(hi) < POWER:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(mid) >= POWER else (mid, hi)
    return hi if power(lo) < POWER else lo


def dlap_l1_cdf(s: Any, b: Any, d: int) -> np.ndarray:
    r""":math:`P[\sum_{j\le d}|Z_j|\le s]` for ``d`` i.i.d. discrete Laplace :math:`Z_j` of
    scale ``b`` (:math:`q=e^{-1/b}`), exactly (module docstring, DERIVED): the mixture over
    the number ``N`` of non-zero coordinates, :math:`\mathrm{Bin}(d, 2q/(1+q))`, of the
    negative binomial cdf of :math:`s-N` (``N`` successes of probability :math:`1-q`).
    ``s`` and ``b`` broadcast."""
    s_arr, b_arr = np.broadcast_arrays(np.floor(np.asarray(s, dtype=float)),
                                       np.asarray(b, dtype=float))
    p = -np.expm1(-1.0 / b_arr)                     # 1 - q, accurate for large b
    q = 1.0 - p
    nonzero, zero = 2.0 * q / (1.0 + q), p / (1.0 + q)  # P[Z != 0], P[Z = 0]
    out = np.where(s_arr >= 0, zero**d, 0.0)
    for n in range(1, int(d) + 1):
        # P[NB(n, p) <= k] = I_p(n, k + 1), the regularised incomplete beta function
        k = s_arr - n
        nb = np.where(k >= 0, special.betainc(n, np.maximum(k, 0.0) + 1.0, p), 0.0)
        out = out + math.comb(int(d), n) * nonzero**n * zero ** (int(d) - n) * nb
    return np.clip(out, 0.0, 1.0)


def _dlap_moments(b: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact mean and variance of :math:`\sum_{j\le d}|Z_j|` (discrete Laplace, scale ``b``)."""
    p = -np.expm1(-1.0 / b)
    q = 1.0 - p
    mean = 2.0 * q / (p * (1.0 + q))                # E|Z| = 2q / (1 - q^2)
    second = 2.0 * q / p**2                         # E|Z|^2 = 2q / (1 - q)^2
    return d * mean, d * (second - mean**2)


def _dlap_cuts(b: np.ndarray, d: int, cells: int) -> np.ndarray:
    """Per scale ``b`` (``(R,)``), the integer cut points :math:`c_i` (``(R, cells - 1)``): the
    smallest ``s`` with cdf >= ``i / cells`` (vectorised integer bisection)."""
    level = np.arange(1, cells) / cells
    mean, var = _dlap_moments(b, d)
    bb = np.broadcast_to(b[:, None], (b.size, cells - 1))
    # a bracket around the moment-matched Gamma's quantile (a guess only), kept where the
    # exact cdf confirms it, else the safe one [-1, mean + 40 sd]
    guess = stats.gamma.ppf(level[None, :], (mean**2 / var)[:, None],
                            scale=(var / mean)[:, None])
    width = np.ceil(0.002 * np.sqrt(var) + 4.0)[:, None]
    lo, hi = np.floor(guess - width), np.ceil(guess + width)
    ok = (dlap_l1_cdf(lo, bb, d) < level) & (dlap_l1_cdf(hi, bb, d) >= level)
    lo = np.where(ok, np.maximum(lo, -1.0), -1.0)   # cdf(-1) = 0 < level
    hi = np.where(ok, hi, np.ceil(mean + 40.0 * np.sqrt(var) + 10.0)[:, None])
    while np.any(hi - lo > 1):
        mid = np.floor((lo + hi) / 2.0)
        up = dlap_l1_cdf(mid, bb, d) >= level
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
    return hi


def _grid_verdicts(name: str, drawn: np.ndarray, scale: np.ndarray, grid_bits: int, dim: int,
                   level: float) -> list[Verdict]:
    """The two rows of a grid run's integer draws (module docstring, "Grid noise")."""
    b = np.ldexp(scale, grid_bits)                  # the discrete Laplace scale, grid units
    trials, per_trial = drawn.shape
    m0, v0 = _dlap_moments(b, dim)
    total, mean, var = float(drawn.sum()), trials * float(m0.sum()), trials * float(v0.sum())
    z = (total - mean) / math.sqrt(var)
    p_scale = float(min(1.0, 2.0 * stats.norm.sf(abs(z))))
    crit = float(stats.norm.isf(level / 2.0))
    m1, v1 = float(m0.sum()), float(v0.sum())     # one trial's null mean and variance
    alts = [tuple(float(x.sum()) for x in _dlap_moments((1.0 + c) * b, dim))
            for c in (-POWER_CHANGE, POWER_CHANGE)]

    def power(n: int) -> float:
        """P[reject] at ``n`` trials with the scale off by -10 % or +10 % (the smaller)."""
        def phi(x: float) -> float:
            return 0.5 * math.erfc(-x / math.sqrt(2.0))
        return min(phi((n * (m1 - a) - crit * math.sqrt(n * v1)) / math.sqrt(n * w))
                   + phi((n * (a - m1) - crit * math.sqrt(n * v1)) / math.sqrt(n * w))
                   for a, w in alts)

    pw = power(trials)
    short = pw < POWER
    needs = (f"power {pw:.2f} < {POWER} against a 10% change of the grid noise's scale; "
             f"--trials {_smallest(power, trials)} would" if short else "")
    law = "sum_j |Z_j| of the discrete Laplace (grid units)"
    oracle = (f"drawn integer noise against the declared discrete Laplace scale ({law}: "
              "Binomial non-zeros + negative binomial, exact; DERIVED null)")
    count = drawn.size
    rows = [Verdict(name, f"drawn grid noise scale: mean S/E[S] = {total / mean:.4f} over "
                          f"{count} draws (d = {dim}, grid 2^-{grid_bits}); power {pw:.2f} "
                          "against a 10% change",
                    f"two-sided p >= {level:.3g}", p_scale, 0.0, level, oracle,
                    bool(p_scale >= level) and math.isfinite(total), powered=not short,
                    needs=needs, power=pw)]
    cells = int(min(10, max(2, count // 10)))
    cuts = _dlap_cuts(b, dim, cells)                                     # (R, cells - 1)
    edges = np.concatenate([np.zeros((b.size, 1)),
                            dlap_l1_cdf(cuts, b[:, None], dim), np.ones((b.size, 1))], axis=1)
    expected = trials * np.diff(edges, axis=1).sum(axis=0)
    cell = np.stack([np.searchsorted(cuts[r], drawn[:, r], side="left")
                     for r in range(per_trial)], axis=1)
    observed = np.bincount(cell.ravel(), minlength=cells).astype(float)
    keep = expected > 0
    chi2 = float(np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep]))
    dof = max(1, int(keep.sum()) - 1)
    p_shape = float(stats.chi2.sf(chi2, dof))
    rows.append(Verdict(name, f"drawn grid noise law: chi-square of {count} draws in {cells} "
                              f"cells of exact null probability ({law}; {dof} dof)",
                        f"upper-tail p >= {level:.3g}", p_shape, 0.0, level, oracle,
                        bool(p_shape >= level)))
    return rows


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
    grid_bits = tr.get("grid_bits")
    if grid_bits is not None and str(tr["noise"]) != "laplace":
        raise ValueError("a grid transcript's draws are tested for noise='laplace' (the "
                         f"discrete Laplace) only, got noise={tr['noise']!r}")
    k, theta, law = _law(str(tr["noise"]), dim)
    drawn = np.asarray(drawn, dtype=float)
    scale = np.asarray(tr["release_std"], dtype=float)
    if drawn.ndim != 2 or drawn.shape[1] != scale.size:
        raise ValueError(f"noise_drawn must have shape (trials, {scale.size}) (one column per "
                         f"release), got {drawn.shape}")
    cols = np.isfinite(scale) & (scale > 0) & np.all(np.isfinite(drawn), axis=0)
    if not cols.any():
        return []
    if grid_bits is not None:
        return _grid_verdicts(name, drawn[:, cols], scale[cols], int(grid_bits), dim,
                              alpha / 2.0)
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
