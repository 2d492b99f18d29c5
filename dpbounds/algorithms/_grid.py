r"""Release-safe noise for the algorithms: ``noise="grid"``.

``noise="float"`` (the default) adds float64 noise to a float64 gradient: fast, and exact
for simulation studies, but the released float's last mantissa bits depend on the gradient
(Mironov 2012; ``dpbounds audit ALG --low-bits`` certifies ε far above the claim from them).
``noise="grid"`` releases :math:`\gamma\,(\operatorname{round}(g/\gamma) + Z)` with
:math:`\gamma = 2^{-j}` and :math:`Z` integer noise drawn exactly (integer arithmetic only)
by the vectorised samplers of :mod:`dpbounds.privacy.discrete`: discrete Laplace for the
pure-DP algorithms, discrete Gaussian for the zCDP ones. The released value is a function of
the integer :math:`\operatorname{round}(g/\gamma) + Z` alone, so its bits carry nothing
more, and every iterate computed from released values is post-processing.

Grid (DERIVED). Rounding moves each coordinate of a neighbour's difference by at most one
unit, so the integer query's sensitivity is :math:`\lfloor\Delta_1/\gamma\rfloor + d` (L1) or
:math:`\Delta_2/\gamma + \sqrt d` (L2), where :math:`\Delta` is the exact sensitivity times
:func:`float_sum_factor` (the query is computed in float64 before it is rounded: at most
:math:`(4k^2+4d+64)2^{-53}` of it for a sum of :math:`k` terms). :func:`grid_bits_for` picks
the coarsest grid on which the rounding adds at most :math:`2^{-16}` of the sensitivity
(about 15 ppm of noise), coarsened for the Gaussian until :math:`\sigma/\gamma \le 2^{24}`
(the int64 sampler's range; the rounding then costs :math:`\sqrt d\,2^{-24}\sigma/\Delta_2` of
the sensitivity).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpbounds._validation import check_choice
from dpbounds.backend import TrialRandom, is_cupy, to_numpy
from dpbounds.privacy.discrete import MAX_INDEX, RawPool

__all__ = ["GRID_SPAN_BITS", "MAX_SUMMANDS", "NOISE_KINDS", "GridStream", "check_noise",
           "discrete_gaussian_parameters", "float_down", "float_sum_factor", "float_up",
           "gaussian_grid", "gaussian_tree_grid", "grid_bits_for"]

#: The two noise options of every algorithm that releases iterates.
NOISE_KINDS: tuple[str, ...] = ("float", "grid")
#: The sensitivity spans at least ``2^GRID_SPAN_BITS`` times the rounding's extra units.
GRID_SPAN_BITS = 16
#: Largest discrete Gaussian standard deviation in grid units (``2 t m <= 2^52``).
MAX_SIGMA_BITS = 24
#: Numbers per trial one block of draws holds at most.
BLOCK_NUMBERS = 1 << 16


def check_noise(noise: Any, xp: Any = np) -> str:
    """``"float"`` or ``"grid"`` (ValueError naming ``noise`` otherwise); the grid option
    draws from NumPy generators (not CuPy's), on the host."""
    noise = check_choice("noise", noise, NOISE_KINDS)
    if noise == "grid" and is_cupy(xp):
        raise ValueError("noise='grid' needs a host backend (numpy or array_api_strict): its "
                         "exact integer samplers draw from NumPy generators")
    return noise


#: Largest number of summands :func:`float_sum_factor` covers (its gamma_k bound needs
#: k u well below 1; 2^26 keeps k u / (1 - k u) within 1 + 2^-26 of k u).
MAX_SUMMANDS = 1 << 26


def float_sum_factor(summands: int, d: int) -> Fraction:
    r"""A factor :math:`1+\eta` by which the float64 evaluation of a sum of ``summands``
    vectors of dimension ``d``, each of L2 norm at most :math:`c`, can enlarge the
    neighbours' difference over its exact sensitivity :math:`\Delta\ge c`.

    DERIVED (the grid's release rounds the *computed* query, so its integer sensitivity must
    cover the float error too; Wang, Balle & Kasiviswanathan's and Canonne, Kamath &
    Steinke's theorems are about the exact query). Recursive summation in any order (NumPy's
    pairwise sums, BLAS dot products with or without FMA included) has componentwise error
    :math:`|\hat s-s|\le\gamma_{k-1}\sum_i|x_i|` with :math:`\gamma_k=ku/(1-ku)`,
    :math:`u=2^{-53}` (Higham 2002, *Accuracy and Stability of Numerical Algorithms*, §4.2,
    the bound for any summation order; RECONSTRUCTED: quoted from memory, its equation
    number not checked here), so in L2 at most :math:`\gamma_{k-1}kc` per data set and
    :math:`2\gamma_{k-1}kc\le 2.1k^2u\,\Delta` between neighbours; a computed clip or
    normalisation leaves each term's norm within :math:`(d+4)u` of its bound (a norm of
    ``d`` squares, one division, one product), the differing terms thus within
    :math:`2(d+4)u\,\Delta`; the final scaling (a mean, a step size) adds a few units of
    :math:`u`. So :math:`\eta=(4k^2+4d+64)u` (about twice the sum) covers all of it for
    :math:`k\le` :data:`MAX_SUMMANDS`. At :math:`k=10^5` it is :math:`4.4\times10^{-6}`
    of the sensitivity: about 4 ppm of noise. The componentwise bound gives the same factor
    for an L1 sensitivity (terms of L1 norm at most :math:`c`).
    """
    k = int(summands)
    if not 1 <= k <= MAX_SUMMANDS:
        raise ValueError(f"summands must be in [1, {MAX_SUMMANDS}] (the float-summation "
                         f"bound of the grid's sensitivity), got {summands!r}")
    return 1 + Fraction(4 * k * k + 4 * int(d) + 64, 2**53)


def float_up(q: Fraction) -> float:
    """The smallest float >= ``q``."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def float_down(q: Fraction) -> float:
    """The largest float <= ``q``."""
    f = float(q)
    return f if Fraction(f) <= q else math.nextafter(f, -math.inf)


def grid_bits_for(sensitivity: float, rounding_units: float,
                  max_noise: float | None = None) -> int:
    r""":math:`j` of the grid :math:`2^{-j}`: the smallest with
    :math:`2^j\Delta \ge 2^{16}\cdot` ``rounding_units`` (``d`` for L1, :math:`\sqrt d` for L2),
    lowered while ``max_noise`` :math:`\cdot 2^j > 2^{24}` (may be negative: a grid coarser
    than 1)."""
    j = math.ceil(math.log2(rounding_units / sensitivity)) + GRID_SPAN_BITS
    if max_noise is not None:
        j = min(j, math.floor(MAX_SIGMA_BITS - math.log2(max_noise)))
    return int(j)


class GridStream:
    r"""Releases ``value + noise`` on the grid :math:`2^{-j}` for every trial, step by step.

    ``params[t]`` is step ``t``'s noise parameter (hashable; ``None``: no noise that step) and
    ``sampler(param, size, pool)`` draws ``(trials, size)`` integers from a
    :class:`~dpbounds.privacy.discrete.RawPool` of the trials' generators. Runs of equal
    parameters are drawn in blocks (one sampler call per block, vectorised over trials x
    steps x coordinates); trial ``k``'s noise depends only on ``(seed, k)``.
    """

    def __init__(self, stream: TrialRandom, grid_bits: int, params: list[Hashable],
                 sampler: Callable[[Any, int, RawPool], np.ndarray], d: int,
                 xp: Any = np) -> None:
        self.pool = RawPool(stream.generators())
        self.grid_bits = int(grid_bits)
        self.params = params
        self.sampler = sampler
        self.d = int(d)
        self.xp = xp
        self._block: np.ndarray | None = None
        self._start = self._stop = 0

    def _fill(self, t: int) -> None:
        cap = max(1, BLOCK_NUMBERS // self.d)
        stop = t + 1
        while stop < len(self.params) and stop - t < cap and self.params[stop] == self.params[t]:
            stop += 1
        size = (stop - t) * self.d
        # one batch for every trial and number of the block (vectorised over trials x steps
        # x coordinates); each trial reads its own generator's words (RawPool)
        self._block = self.sampler(self.params[t], size, self.pool).reshape(
            len(self.pool.gens), stop - t, self.d)
        self._start, self._stop = t, stop

    def noise(self, t: int) -> np.ndarray:
        """Step ``t``'s integer noise :math:`Z_t`, ``(trials, d)`` grid units (what
        :meth:`release` adds; ``params[t]`` must not be ``None``)."""
        if self._block is None or not self._start <= t < self._stop:
            self._fill(t)
        assert self._block is not None
        return self._block[:, t - self._start]

    def release(self, t: int, value: Any) -> Any:
        """``2^-j (round(value 2^j) + Z_t)`` for step ``t`` (``value``: ``(trials, d)``)."""
        if self.params[t] is None:
            return value
        z = self.noise(t)
        v = np.asarray(to_numpy(value), dtype=np.float64)
        if not np.all(np.isfinite(v)):
            raise ValueError("a gradient released on the grid is not finite")
        k = np.rint(np.ldexp(v, self.grid_bits)) + z
        if np.any(np.abs(k) > MAX_INDEX):
            raise ValueError(f"a released gradient is too large for the grid 2^-{self.grid_bits}"
                             ": its grid index reached 2^53")
        return self.xp.asarray(np.ldexp(k, -self.grid_bits))


def _sqrt_up(d: int) -> Fraction:
    """A rational upper bound on :math:`\\sqrt d` (within 1e-6)."""
    return Fraction(math.isqrt(d * 10**12) + 1, 10**6)


def discrete_gaussian_parameters(sigma: float, grid_bits: int) -> tuple[int, int]:
    r"""Integers ``(t, m)`` with :math:`tm \ge (2^j\sigma)^2` and :math:`t \approx 2^j\sigma`:
    the discrete Gaussian of :func:`~dpbounds.privacy.discrete.discrete_gaussian_array`
    (variance parameter :math:`tm` grid units squared, never below the one asked for)."""
    su2 = (Fraction(sigma) * Fraction(2) ** grid_bits) ** 2
    t = math.isqrt(math.floor(su2)) + 1  # > sqrt(su2)
    m = max(1, math.ceil(su2 / t))
    return t, m


def gaussian_grid(stream: TrialRandom, sensitivity: float, sigma: float, d: int, steps: int,
                  epsilon: float, delta: float, neighbouring: Any, xp: Any = np,
                  sampling_rate: float | None = None,
                  sampling: str = "without_replacement",
                  conversion: str = "standard",
                  stream_steps: int | None = None, *,
                  summands: int) -> tuple[GridStream, Any, float]:
    r"""The grid version of ``steps`` Gaussian releases of L2 ``sensitivity`` calibrated to
    ``(epsilon, delta)`` in zCDP (float noise ``sigma``): its stream, the per-step ledger
    entry and the effective noise std in value units.

    The integer query's L2 sensitivity is :math:`u = 2^j\Delta_2 + \sqrt d` (an upper bound,
    DERIVED: rounding moves each coordinate by < 1 unit); the discrete Gaussian of variance
    parameter :math:`\sigma_u^2 = tm` on it is :math:`u^2/(2tm)`-zCDP (Canonne, Kamath &
    Steinke 2020, multivariate discrete Gaussian, RECONSTRUCTED theorem number). Only that
    zCDP guarantee is recorded (a :class:`~dpbounds.privacy.ZcdpMechanism` per step; an
    accountant that would read a continuous Gaussian's PLD is not given one). The noise is
    calibrated by the package's one routine (:func:`~dpbounds.privacy.calibrate.calibrate`,
    zCDP accountant with ``conversion`` ``"standard"`` or ``"tight"``) on that entry, so the
    ledger never exceeds the target.

    With ``sampling_rate`` (a without-replacement subsample per step, replace-one) the entry
    is a :class:`~dpbounds.privacy.SubsampledDiscreteGaussianMechanism` (integer shifts of L2
    norm at most :math:`\lceil u\rceil`, variance :math:`tm`, dimension ``d``), amplified
    by :func:`~dpbounds.privacy.rdp.without_replacement_discrete_gaussian_rdp` (DERIVED,
    issue 35; until then Wang, Balle & Kasiviswanathan's Theorem 9 alone, 9.6-49x the float
    noise), calibrated with the RDP accountant. With
    ``sampling="poisson"`` (add/remove) the entry is amplified by
    :func:`~dpbounds.privacy.rdp.poisson_zcdp_rdp` instead (Zhu & Wang's Theorem 6 or each
    direction bounded on its own, whichever is smaller: 1.08-1.3x the float noise where
    Theorem 9 without replacement needs 1.45-50x).

    ``stream_steps`` (default ``steps``) is the number of releases the stream makes when it
    differs from the number of entries one record is charged (a tree: ``T`` node releases,
    ``steps`` = the nodes one record enters). ``summands``: how many terms of norm at most
    the sensitivity the float query sums (a batch, ``n``, a tree node's leaves times their
    batch), for :func:`float_sum_factor`.
    """
    from dpbounds.privacy.accountants import ZcdpAccountant
    from dpbounds.privacy.calibrate import calibrate
    from dpbounds.privacy.discrete import discrete_gaussian_array
    from dpbounds.privacy.mechanisms import (
        MAX_DISCRETE_VARIANCE,
        Sampling,
        SubsampledDiscreteGaussianMechanism,
        SubsampledZcdpMechanism,
        ZcdpMechanism,
    )

    accountant: Any = (ZcdpAccountant(neighbouring, conversion) if sampling_rate is None
                       else "rdp")

    factor = float_sum_factor(summands, d)

    def entry_on(j: int) -> Callable[[float], Any]:
        units2 = (Fraction(sensitivity) * factor * Fraction(2) ** j + _sqrt_up(d)) ** 2
        # the integer L2 bound on the query's change, rounded up: ceil(sqrt(units2))
        shift = math.isqrt(math.ceil(units2))
        shift += shift * shift < units2

        def entry(s: float) -> Any:
            t, m = discrete_gaussian_parameters(s, j)
            if sampling_rate is None:
                return ZcdpMechanism(float_up(units2 / (2 * t * m)), neighbouring)
            if t * m > MAX_DISCRETE_VARIANCE:
                # beyond the sampler (a calibration's search only: such a final noise puts
                # the run on a coarser grid below): any rho-zCDP mechanism's bound
                return SubsampledZcdpMechanism(float_up(units2 / (2 * t * m)), sampling_rate,
                                               neighbouring, Sampling(sampling))
            # a discrete Gaussian at integer shifts: without replacement its own bound
            # (rdp.without_replacement_discrete_gaussian_rdp), Poisson the zCDP one
            return SubsampledDiscreteGaussianMechanism(
                variance=t * m, sensitivity=shift, dimension=d, sampling_rate=sampling_rate,
                neighbouring=neighbouring, sampling=Sampling(sampling))
        return entry

    # The grid is chosen for the float run's noise; where the grid's own accounting needs
    # far more (the generic amplification theorems of a subsampled grid give little at small
    # budgets: eps = 0.1, q = 0.01, T = 2000 needed ~100x the float noise), the calibrated
    # noise can leave the int64 sampler: the grid is then coarsened for it and the noise
    # calibrated again on the coarser grid (its rounding then weighs a little more).
    j = grid_bits_for(sensitivity, math.sqrt(d), max_noise=sigma)
    for _ in range(4):
        entry = entry_on(j)
        s = calibrate(entry, epsilon, delta, accountant, steps, initial=sigma,
                      neighbouring=neighbouring)
        t, m = discrete_gaussian_parameters(s, j)
        coarser = grid_bits_for(sensitivity, math.sqrt(d), max_noise=s)
        if 2 * t * m <= 2**52 or coarser >= j:
            break
        j = coarser
    if 2 * t * m > 2**52:
        raise ValueError(f"the grid Gaussian's variance {t * m} grid units^2 is beyond the "
                         "int64 sampler (2tm <= 2^52) even on a coarsened grid")

    def sampler(param: Any, size: int, pool: RawPool) -> np.ndarray:
        return discrete_gaussian_array(param[0], param[1], size, pool)

    params: list[Hashable] = [(t, m)] * (steps if stream_steps is None else stream_steps)
    return (GridStream(stream, j, params, sampler, d, xp), entry(s),
            math.sqrt(t * m) * 2.0 ** -j)


def gaussian_tree_grid(stream: TrialRandom, groups: Sequence[tuple[float, float, int]],
                       step_group: Sequence[int], d: int, epsilon: float, delta: float,
                       neighbouring: Any, xp: Any = np, *, summands: int
                       ) -> tuple[GridStream, tuple[tuple[Any, int], ...], tuple[float, ...]]:
    r"""The grid version of a tree whose nodes fall into noise groups (Algorithm 2's
    first-epoch and later nodes): its stream, ledger entries and per-group noise std.

    ``groups[i] = (sensitivity, sigma, node_count)``: group ``i``'s nodes have L2
    sensitivity :math:`\Delta_i` and float noise :math:`\sigma_i`, and one record enters at
    most :math:`K_i` of them; ``step_group[t]`` is the group of the node formed at step
    ``t``. On one grid :math:`2^{-j}` (the finest any group needs, coarsened for the largest
    noise), group ``i`` is recorded as :math:`K_i` discrete Gaussian releases of integer
    sensitivity :math:`u_i = 2^j\Delta_i + \sqrt d`, a
    :class:`~dpbounds.privacy.ZcdpMechanism` of :math:`u_i^2/(2\sigma_{u,i}^2)` each (Canonne,
    Kamath & Steinke 2020; DERIVED as :func:`gaussian_grid`). One common factor
    :math:`c \ge 1` on every :math:`\sigma_i` (the float run's split kept) is calibrated by
    :func:`~dpbounds.privacy.calibrate.calibrate` (zCDP accountant, standard conversion) on
    all entries, so the ledger never exceeds the target.
    """
    from dpbounds.privacy.accountants import ZcdpAccountant
    from dpbounds.privacy.calibrate import calibrate
    from dpbounds.privacy.discrete import discrete_gaussian_array
    from dpbounds.privacy.mechanisms import ComposedMechanism, ZcdpMechanism

    j = min(grid_bits_for(sens, math.sqrt(d), max_noise=sigma) for sens, sigma, _ in groups)
    factor = float_sum_factor(summands, d)  # the float query's error (``summands`` terms)
    units2 = [(Fraction(sens) * factor * Fraction(2) ** j + _sqrt_up(d)) ** 2
              for sens, _, _ in groups]

    def params_for(c: float) -> list[tuple[int, int]]:
        return [discrete_gaussian_parameters(c * sigma, j) for _, sigma, _ in groups]

    def entries(c: float) -> tuple[tuple[Any, int], ...]:
        return tuple((ZcdpMechanism(float_up(u2 / (2 * t * m)), neighbouring), k)
                     for u2, (t, m), (_, _, k) in zip(units2, params_for(c), groups))

    c = calibrate(lambda c: ComposedMechanism(entries(c), neighbouring), epsilon, delta,
                  ZcdpAccountant(neighbouring, "standard"), neighbouring=neighbouring,
                  initial=1.0)
    tm = params_for(c)
    if any(2 * t * m > 2**52 for t, m in tm):
        raise ValueError("a grid Gaussian's variance is beyond the int64 sampler (2tm <= 2^52)")

    def sampler(param: Any, size: int, pool: RawPool) -> np.ndarray:
        return discrete_gaussian_array(param[0], param[1], size, pool)

    params: list[Hashable] = [tm[g] for g in step_group]
    return (GridStream(stream, j, params, sampler, d, xp), entries(c),
            tuple(math.sqrt(t * m) * 2.0 ** -j for t, m in tm))
