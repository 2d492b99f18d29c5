r"""Floating-point-safe noise: the discrete Laplace mechanism on a power-of-two grid.

Why
---
A float64 release ``value + noise`` (noise drawn as a float, added in floating point) is
not the mechanism its privacy proof is about: the set of floats the sum can take depends on
``value``, so its last mantissa bits leak it (Mironov 2012, "On significance of the least
significant bits for differential privacy", CCS). ``dpbounds audit ALG --low-bits``
measures this channel; for Laplace DP-GD it certifies ε well above the claim. Simulation
studies are unaffected (they never release a run); a release on real data is.

What
----
:class:`GridLaplace` releases :math:`\gamma\,(\operatorname{round}(v/\gamma) + Z)` with
:math:`\gamma = 2^{-j}` and :math:`Z` an integer drawn **exactly** (integer arithmetic only)
from the discrete Laplace law :math:`P[Z=z]\propto e^{-|z|/b}` by Algorithm 2 of Canonne,
Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy" (VERBATIM, with
their Algorithm 1 for the Bernoulli(exp(−γ)) coins). The released float is
:math:`\gamma k` for an integer :math:`|k| < 2^{53}`: exact in float64, a function of
:math:`k` alone, so its bits carry nothing beyond :math:`k` and any later arithmetic is
post-processing. :class:`GridGaussian` does the same with the exact discrete Gaussian (their
Algorithm 3), accounted in zCDP.

Accounting (DERIVED). For :math:`|v - v'|_1 \le \Delta` (per coordinate sums),
:math:`|\operatorname{round}(v/\gamma) - \operatorname{round}(v'/\gamma)|_1 \le
\lfloor\Delta/\gamma\rfloor + 1` per coordinate touched, in grid units
:math:`\Delta_u`; the discrete Laplace of scale :math:`b` on an integer query of L1
sensitivity :math:`\Delta_u` is :math:`(\Delta_u/b)`-DP (the pmf ratio is at most
:math:`e^{\Delta_u/b}`; Ghosh, Roughgarden & Sundararajan 2009, the geometric mechanism).
The scale is a rational :math:`b = t/s` rounded up so that :math:`\Delta_u/b \le \varepsilon`
holds exactly; :attr:`GridLaplace.epsilon_spent` is that ratio. For a d-dimensional value
``sensitivity`` is the L1 sensitivity and :math:`\Delta_u = \lfloor\Delta/\gamma\rfloor + d`.

Example
-------
>>> import numpy as np
>>> from dpbounds.privacy.discrete import GridLaplace
>>> mech = GridLaplace(sensitivity=2.0, epsilon=1.0, grid_bits=10)
>>> mech.epsilon_spent <= 1.0
True
>>> out = mech.release(np.array([0.3]), np.random.default_rng(0))
>>> bool(out[0] * 2**10 == round(out[0] * 2**10))   # on the grid, exactly
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_positive
from dpbounds.privacy.mechanisms import DiscreteGaussianMechanism

__all__ = ["GridGaussian", "GridLaplace", "RawPool", "discrete_gaussian_array",
           "discrete_laplace_array"]

#: Denominator of the rational noise scale (its rounding up costs at most 1/64 of a unit).
SCALE_DENOMINATOR = 64
#: Largest grid index a release may reach: gamma * k is exact in float64 below 2^53.
MAX_INDEX = 2**53 - 1
#: Largest magnitude an int64 noise array holds.
INT64_MAX = 2**63 - 1


def _rational(name: str, value: Any, *, positive: bool) -> Fraction:
    """``value`` as an exact Fraction; ValueError naming ``name`` for NaN, inf, non-numbers and
    values below the range (``> 0`` or ``>= 0``)."""
    try:
        q = Fraction(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a finite rational number, got {value!r}") from None
    if q < 0 or (positive and q == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return q


#: Largest bound drawn with one ``rng.integers`` call (NumPy's int64 sampler refuses
#: ``high`` above 2^63 - 1; the discrete Gaussian's coins have denominators far beyond it).
_NATIVE_HIGH = 2**62


def _uniform_below(n: int, rng: np.random.Generator) -> int:
    """A uniform integer in ``[0, n)``, exactly, for any positive Python int ``n``.

    Below 2^62 one ``rng.integers`` call (the stream of earlier versions, unchanged); above,
    rejection sampling: ``n.bit_length()`` uniform bits from ``rng.bytes`` read as a Python
    int, redrawn until below ``n`` (accepted with probability > 1/2, so < 2 draws expected).
    """
    if n <= _NATIVE_HIGH:
        return int(rng.integers(0, n))
    bits = n.bit_length()
    nbytes = (bits + 7) // 8
    excess = 8 * nbytes - bits  # leading bits dropped so the draw has exactly ``bits`` bits
    while True:
        u = int.from_bytes(rng.bytes(nbytes), "little") >> excess
        if u < n:
            return u


def _bernoulli(p: Fraction, rng: np.random.Generator) -> bool:
    """Bernoulli(p) for a rational ``p`` in [0, 1], exactly (one uniform integer below the
    denominator, of any size)."""
    return _uniform_below(p.denominator, rng) < p.numerator


def bernoulli_exp(gamma: Fraction, rng: np.random.Generator) -> bool:
    """Bernoulli(exp(−gamma)) for a rational ``gamma >= 0``, exactly: Canonne, Kamath &
    Steinke (2020), Algorithm 1 (VERBATIM)."""
    gamma = _rational("gamma", gamma, positive=False)
    if gamma <= 1:
        k = 1
        while _bernoulli(gamma / k, rng):
            k += 1
        return k % 2 == 1
    for _ in range(math.floor(gamma)):
        if not bernoulli_exp(Fraction(1), rng):
            return False
    return bernoulli_exp(gamma - math.floor(gamma), rng)


def discrete_laplace(scale: Fraction, size: int, rng: np.random.Generator) -> np.ndarray:
    r"""``size`` integers with :math:`P[Z=z]\propto e^{-|z|/\mathrm{scale}}`, exactly:
    Canonne, Kamath & Steinke (2020), Algorithm 2 (VERBATIM) with ``scale = t/s``."""
    scale = _rational("scale", scale, positive=True)
    size = check_int("size", size, minimum=0, maximum=10**8)
    t, s = scale.numerator, scale.denominator
    out = np.empty(size, dtype=np.int64)
    for i in range(size):
        while True:
            u = _uniform_below(t, rng)
            if not bernoulli_exp(Fraction(u, t), rng):
                continue
            v = 0
            while bernoulli_exp(Fraction(1), rng):
                v += 1
            y = (u + t * v) // s
            b = int(rng.integers(0, 2))
            if b == 1 and y == 0:
                continue
            if y > INT64_MAX:  # an int64 array cannot hold it (numpy would raise OverflowError)
                raise ValueError(f"scale = {float(scale):.3g} too large: a draw exceeded 2^63")
            out[i] = (1 - 2 * b) * y
            break
    return out


def discrete_gaussian(sigma2: Fraction, size: int, rng: np.random.Generator) -> np.ndarray:
    r"""``size`` integers with :math:`P[Z=z]\propto e^{-z^2/(2\sigma^2)}`, exactly: Canonne,
    Kamath & Steinke (2020), Algorithm 3 (VERBATIM; ``sigma2`` rational)."""
    sigma2 = _rational("sigma2", sigma2, positive=True)
    size = check_int("size", size, minimum=0, maximum=10**8)
    t = math.isqrt(math.floor(sigma2)) + 1  # floor(sigma) + 1
    out = np.empty(size, dtype=np.int64)
    for i in range(size):
        while True:
            y = int(discrete_laplace(Fraction(t), 1, rng)[0])
            gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
            if bernoulli_exp(gamma, rng):
                out[i] = y
                break
    return out


# ---------------------------------------------------------------------------------------
# Vectorised exact samplers (int64 arithmetic; a Python loop per rejection round, not per
# number). The algorithms above, run on arrays of numbers that may belong to many trials:
# every pending number draws in the same round, and the rounds end once all are accepted (a
# geometric number of rounds). Each trial reads raw 64-bit words from its own generator, in
# the order its own numbers ask for them (:class:`RawPool`), so what trial k draws depends
# on its generator alone, never on the other trials or on how many there are.
# ---------------------------------------------------------------------------------------
#: Largest denominator the int64 samplers accept: Algorithm 1's ``den * k`` stays below
#: 2^62 for every ``k <= 1024`` (``k`` exceeds ``j`` with probability ``1/j!``).
MAX_DENOMINATOR = 2**52
#: Raw words a trial's pool holds beyond what its numbers are expected to need.
_POOL_SLACK = 64


class RawPool:
    """Raw 64-bit words from one generator per trial, read in order, drawn ahead in blocks.

    Row ``k`` of the buffer is always the next words of generator ``k``'s ``random_raw``
    stream, and trial ``k`` reads them in the order its own numbers ask (``words``), so what
    trial ``k`` gets depends on its generator alone, never on the other trials or on how
    many there are. Words drawn ahead stay in the pool for the next call.
    """

    def __init__(self, gens: list[np.random.Generator], reserve: int = 256) -> None:
        self.gens = gens
        self.n = len(gens)
        self.buf = np.stack([g.bit_generator.random_raw(reserve) for g in gens])
        self.ptr = np.zeros(self.n, dtype=np.int64)

    def _grow(self, width: int) -> None:
        """Drop the words every trial has read; extend every row to ``width`` words from its
        own generator (one ``random_raw`` call per trial)."""
        done = int(self.ptr.min())
        kept = self.buf[:, done:]
        self.ptr -= done
        if width > kept.shape[1]:
            extra = width - kept.shape[1]
            kept = np.concatenate(
                [kept, np.stack([g.bit_generator.random_raw(extra) for g in self.gens])], axis=1)
        self.buf = kept

    def reserve(self, per_trial: int) -> None:
        """Make room for ``per_trial`` more words in every trial's row before a batch."""
        if int(self.ptr.max()) + per_trial > self.buf.shape[1]:
            self._grow(int(self.ptr.max() - self.ptr.min()) + per_trial + _POOL_SLACK)

    def words(self, owner: np.ndarray) -> np.ndarray:
        """One unread word per entry of ``owner`` (trial indices in ascending order)."""
        if owner.size == 0:
            return np.zeros(0, dtype=np.uint64)
        if self.n == 1:  # one generator: consecutive words
            pos = self.ptr[0] + np.arange(owner.size)
            self.ptr += owner.size
        else:
            counts = np.bincount(owner, minlength=self.n)
            start = np.cumsum(counts) - counts
            pos = self.ptr[owner] + (np.arange(owner.size) - start[owner])
            self.ptr += counts
        if int(self.ptr.max()) > self.buf.shape[1]:  # rare: reserve() sized it for the batch
            self._grow_to(2 * int(self.ptr.max()) + _POOL_SLACK)
        return self.buf[owner, pos]

    def _grow_to(self, width: int) -> None:
        if width > self.buf.shape[1]:
            extra = width - self.buf.shape[1]
            self.buf = np.concatenate(
                [self.buf, np.stack([g.bit_generator.random_raw(extra) for g in self.gens])],
                axis=1)


def _below(n: np.ndarray, owner: np.ndarray, pool: RawPool) -> np.ndarray:
    """A uniform integer in ``[0, n)`` per element (``1 <= n <= 2^62``), exactly: the top
    ``bitlen(n - 1)`` bits of a raw word, redrawn until below ``n`` (accepted w.p. > 1/2)."""
    n = np.asarray(n, dtype=np.int64)
    bits = np.frexp((n - 1).astype(np.float64))[1]  # >= bitlen(n - 1): 2^bits >= n
    bits = np.where(n > 1, np.maximum(bits, 1), 0)
    shift = (64 - bits).astype(np.uint64)
    out = np.zeros(n.shape, dtype=np.int64)
    todo = np.flatnonzero(n > 1)
    while todo.size:
        w = pool.words(owner[todo])
        u = (w >> shift[todo]).astype(np.int64)
        ok = u < n[todo]
        out[todo[ok]] = u[ok]
        todo = todo[~ok]
    return out


def _bern_exp_unit(num: np.ndarray, den: np.ndarray | int, owner: np.ndarray, pool: RawPool
                   ) -> np.ndarray:
    """Bernoulli(exp(-num/den)) per element for ``0 <= num <= den`` (int64 arrays):
    Canonne, Kamath & Steinke (2020), Algorithm 1 for gamma <= 1 (VERBATIM), every
    element's loop run in the same rounds."""
    num = np.asarray(num, dtype=np.int64)
    den_a = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
    k = np.ones(num.shape, dtype=np.int64)
    active = np.arange(num.size)
    while active.size:
        if k[active[0]] >= 1024:  # every active element has the same k (probability 1/1024!)
            raise RuntimeError("Bernoulli(exp(-gamma)) loop ran past k = 1024")
        go = _below(den_a[active] * k[active], owner[active], pool) < num[active]
        active = active[go]
        k[active] += 1
    return (k % 2) == 1


def _bern_exp(num: np.ndarray, den: int, owner: np.ndarray, pool: RawPool) -> np.ndarray:
    """Bernoulli(exp(-num/den)) per element for ``num >= 0`` (Algorithm 1, VERBATIM:
    ``floor(gamma)`` coins of exp(-1), then one of exp(-frac(gamma)))."""
    num = np.asarray(num, dtype=np.int64)
    whole, frac = np.divmod(num, den)
    alive = np.ones(num.shape, dtype=bool)
    left = whole.copy()
    idx = np.flatnonzero(left > 0)
    while idx.size:
        coin = _bern_exp_unit(np.ones(idx.size, dtype=np.int64), 1, owner[idx], pool)
        alive[idx[~coin]] = False
        idx = idx[coin]
        left[idx] -= 1
        idx = idx[left[idx] > 0]
    idx = np.flatnonzero(alive)
    alive[idx] = _bern_exp_unit(frac[idx], den, owner[idx], pool)
    return alive


def _check_denominator(name: str, value: int) -> int:
    if not 1 <= value <= MAX_DENOMINATOR:
        raise ValueError(f"{name} must lie in [1, 2^52] for the int64 sampler, got {value}")
    return value


def _dlap_pooled(t: int, s: int, owner: np.ndarray, pool: RawPool) -> np.ndarray:
    """Discrete Laplace of scale ``t/s`` for every entry of ``owner`` (Algorithm 2)."""
    out = np.empty(owner.size, dtype=np.int64)
    pending = np.arange(owner.size)
    while pending.size:
        own = owner[pending]
        k = pending.size
        u = _below(np.full(k, t, dtype=np.int64), own, pool)
        ok = _bern_exp_unit(u, t, own, pool)
        v = np.zeros(k, dtype=np.int64)
        idx = np.flatnonzero(ok)
        while idx.size:  # V: the number of exp(-1) coins that succeed before one fails
            idx = idx[_bern_exp_unit(np.ones(idx.size, dtype=np.int64), 1, own[idx], pool)]
            v[idx] += 1
        if np.any(v > (INT64_MAX - t) // t):  # probability about exp(-2^62 / t)
            raise RuntimeError("discrete Laplace draw beyond int64")
        y = (u + t * v) // s
        b = (pool.words(own) >> np.uint64(63)).astype(np.int64)  # a fair sign bit
        accept = ok & ~((b == 1) & (y == 0))
        out[pending[accept]] = ((1 - 2 * b) * y)[accept]
        pending = pending[~accept]
    return out


def _dgauss_pooled(t: int, m: int, owner: np.ndarray, pool: RawPool,
                   rng_for: Any) -> np.ndarray:
    """Discrete Gaussian of variance parameter ``t m`` for every entry of ``owner``."""
    den = 2 * t * m
    out = np.empty(owner.size, dtype=np.int64)
    pending = np.arange(owner.size)
    while pending.size:
        own = owner[pending]
        y = _dlap_pooled(t, 1, own, pool)
        x = np.abs(y) - m
        small = np.abs(x) < 2**31
        accept = np.zeros(pending.size, dtype=bool)
        accept[small] = _bern_exp(x[small] * x[small], den, own[small], pool)
        for i in np.flatnonzero(~small):  # astronomically rare: exact big-integer coin
            accept[i] = bernoulli_exp(Fraction(int(x[i]) ** 2, den), rng_for(int(own[i])))
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


def _owners(trials: int, per_trial: int) -> np.ndarray:
    return np.repeat(np.arange(trials), per_trial)


def discrete_laplace_array(scale: Fraction, size: int, rng: np.random.Generator | RawPool,
                           trials: int = 1) -> np.ndarray:
    r"""``size`` integers per trial with :math:`P[Z=z]\propto e^{-|z|/\mathrm{scale}}`,
    exactly, in int64 arithmetic on arrays: Canonne, Kamath & Steinke (2020), Algorithm 2
    (VERBATIM) with ``scale = t/s`` (``t <= 2^52``), every pending number redrawn in the same
    round. ``rng``: a generator (``trials = 1``; shape ``(size,)``) or a :class:`RawPool` of
    ``trials`` generators (shape ``(trials, size)``, row k from generator k alone)."""
    scale = _rational("scale", scale, positive=True)
    size = check_int("size", size, minimum=0, maximum=10**8)
    t = _check_denominator("scale's numerator", scale.numerator)
    pool = rng if isinstance(rng, RawPool) else RawPool([rng])
    pool.reserve(16 * size)
    z = _dlap_pooled(t, scale.denominator, _owners(pool.n, size), pool)
    return z if not isinstance(rng, RawPool) else z.reshape(pool.n, size)


def discrete_gaussian_array(t: int, m: int, size: int, rng: np.random.Generator | RawPool
                            ) -> np.ndarray:
    r"""``size`` integers per trial with :math:`P[Z=z]\propto e^{-z^2/(2\sigma^2)}` for
    :math:`\sigma^2 = t\,m` (integers ``t, m >= 1``, ``2tm <= 2^52``), exactly.

    Canonne, Kamath & Steinke (2020), Algorithm 3 (VERBATIM) with its Laplace scale ``t``
    (any positive ``t`` is exact; ``t`` near :math:`\sigma` is efficient): a proposal
    :math:`Y` (discrete Laplace of scale ``t``) is accepted with probability
    :math:`\exp(-(|Y|-\sigma^2/t)^2/(2\sigma^2)) = \exp(-(|Y|-m)^2/(2tm))`; choosing
    :math:`\sigma^2 = tm` (DERIVED) makes :math:`\sigma^2/t` an integer, so the coin is a
    ratio of int64s. A proposal with :math:`||Y|-m| \ge 2^{31}` (probability about
    :math:`e^{-2^{31}/t}`) takes the exact Python-integer coin instead. ``rng`` as in
    :func:`discrete_laplace_array`."""
    t = check_int("t", t, minimum=1)
    m = check_int("m", m, minimum=1)
    size = check_int("size", size, minimum=0, maximum=10**8)
    den = _check_denominator("2 t m", 2 * t * m)
    del den
    pool = rng if isinstance(rng, RawPool) else RawPool([rng])
    pool.reserve(32 * size)
    z = _dgauss_pooled(t, m, _owners(pool.n, size), pool, lambda k: pool.gens[k])
    return z if not isinstance(rng, RawPool) else z.reshape(pool.n, size)


def _grid_index(value: Any, grid_bits: int) -> np.ndarray:
    """``round(value / 2^-grid_bits)`` (exact: scaling by a power of two), finite only."""
    v = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError("value must be finite")
    return np.rint(np.ldexp(v, grid_bits))


def _on_grid(index: np.ndarray, grid_bits: int) -> np.ndarray:
    if np.any(np.abs(index) > MAX_INDEX):
        raise ValueError(f"value too large for grid_bits = {grid_bits}: the grid index must "
                         "stay below 2^53 (use fewer grid_bits)")
    return np.ldexp(index, -grid_bits)


@dataclass(frozen=True)
class GridLaplace:
    r"""Discrete Laplace on the grid :math:`2^{-\mathrm{grid\_bits}}\mathbb Z` (see the
    module docstring): a pure :math:`\varepsilon`-DP, floating-point-safe release.

    Parameters
    ----------
    sensitivity:
        L1 sensitivity :math:`\Delta > 0` of the value released.
    epsilon:
        Budget of one release, :math:`> 0`.
    grid_bits:
        :math:`j` in :math:`\gamma = 2^{-j}`, in [0, 40]: finer grids cost more noise units
        and nothing in accuracy below the noise.
    dim:
        Coordinates per release (each may round by one unit).
    """

    sensitivity: float
    epsilon: float
    grid_bits: int = 20
    dim: int = 1
    scale: Fraction = field(init=False)
    units: int = field(init=False)

    def __post_init__(self) -> None:
        check_positive("sensitivity", self.sensitivity)
        check_positive("epsilon", self.epsilon)
        check_int("grid_bits", self.grid_bits, minimum=0, maximum=40)
        check_int("dim", self.dim, minimum=1, maximum=10**6)
        units = math.floor(Fraction(self.sensitivity) * 2**self.grid_bits) + self.dim
        exact = Fraction(units) / Fraction(self.epsilon)  # floats are dyadic: exact
        scale = Fraction(math.ceil(exact * SCALE_DENOMINATOR), SCALE_DENOMINATOR)
        object.__setattr__(self, "units", units)
        object.__setattr__(self, "scale", scale)

    @property
    def grid(self) -> float:
        """:math:`\\gamma`."""
        return 2.0 ** -self.grid_bits

    @property
    def epsilon_spent(self) -> float:
        """:math:`\\Delta_u/b \\le \\varepsilon` (exact rational, rounded up to a float)."""
        ratio = Fraction(self.units) / self.scale
        f = float(ratio)
        return f if Fraction(f) >= ratio else math.nextafter(f, math.inf)

    @property
    def noise_std(self) -> float:
        """Standard deviation of one coordinate's noise (in value units, about
        :math:`\\sqrt2\\,b\\gamma`)."""
        q = math.exp(-1.0 / float(self.scale))
        return self.grid * math.sqrt(2.0 * q) / (1.0 - q)

    def release(self, value: Any, rng: np.random.Generator) -> np.ndarray:
        """``grid * (round(value / grid) + Z)``, ``Z`` exact discrete Laplace; float64, on the
        grid exactly. ``ValueError`` when a grid index would reach 2^53."""
        k = _grid_index(value, self.grid_bits)
        return _on_grid(k + discrete_laplace(self.scale, k.size, rng).reshape(k.shape),
                        self.grid_bits)


@dataclass(frozen=True)
class GridGaussian:
    r"""Discrete Gaussian on the grid :math:`2^{-\mathrm{grid\_bits}}\mathbb Z`: a
    :math:`\rho`-zCDP, floating-point-safe release.

    Accounting (DERIVED from Canonne, Kamath & Steinke 2020, Thm 14, RECONSTRUCTED: the
    theorem number is from memory, the statement is their multivariate one: an integer
    query of L2 sensitivity :math:`\Delta_u` plus independent discrete Gaussians of variance
    parameter :math:`\sigma_u^2` is :math:`\Delta_u^2/(2\sigma_u^2)`-zCDP). Rounding moves
    each coordinate of the difference by less than one unit, so
    :math:`\Delta_u = \Delta/\gamma + \sqrt d`; :math:`\sigma_u^2` is the rational
    :math:`(\Delta_u^2/(2\rho))` rounded up (:math:`\Delta_u^2` bounded above by a
    rational first), so :attr:`rho_spent` :math:`\le` ``rho``.

    Parameters
    ----------
    sensitivity:
        L2 sensitivity :math:`\Delta > 0`.
    rho:
        zCDP budget of one release, :math:`> 0`.
    grid_bits, dim:
        As :class:`GridLaplace`.
    """

    sensitivity: float
    rho: float
    grid_bits: int = 20
    dim: int = 1
    sigma2: Fraction = field(init=False)
    units2: Fraction = field(init=False)

    def __post_init__(self) -> None:
        check_positive("sensitivity", self.sensitivity)
        check_positive("rho", self.rho)
        check_int("grid_bits", self.grid_bits, minimum=0, maximum=40)
        check_int("dim", self.dim, minimum=1, maximum=10**6)
        root_d = Fraction(math.isqrt(self.dim * 10**12) + 1, 10**6)  # >= sqrt(dim)
        units = Fraction(self.sensitivity) * 2**self.grid_bits + root_d
        units2 = units * units
        exact = units2 / (2 * Fraction(self.rho))
        sigma2 = Fraction(math.ceil(exact * SCALE_DENOMINATOR), SCALE_DENOMINATOR)
        object.__setattr__(self, "units2", units2)
        object.__setattr__(self, "sigma2", sigma2)

    @property
    def rho_spent(self) -> float:
        r""":math:`\Delta_u^2/(2\sigma_u^2) \le \rho`, rounded up to a float."""
        ratio = self.units2 / (2 * self.sigma2)
        f = float(ratio)
        return f if Fraction(f) >= ratio else math.nextafter(f, math.inf)

    def mechanism(self, neighbouring: Any = "add_remove") -> DiscreteGaussianMechanism:
        r"""The release as a :class:`~dpbounds.privacy.mechanisms.DiscreteGaussianMechanism`
        for the accountants (``sensitivity`` is :math:`\Delta` under ``neighbouring``).

        Its integer sensitivity is :math:`\lfloor 2^j\Delta\rfloor + 1` for ``dim = 1``
        (DERIVED: each rounding moves a value by at most half a unit, so the integer
        difference is at most :math:`2^j\Delta + 1`; an integer, so at most its floor), else
        :math:`\lceil\Delta_u\rceil`; its ``rho`` is then at most :attr:`rho_spent` for
        ``dim = 1`` (above it by at most :math:`(\lceil\Delta_u\rceil/\Delta_u)^2` else). The PLD
        accountant reads ``dim = 1`` releases of standard deviation up to :math:`2^{16}` grid
        units (``grid_bits`` small enough); the zCDP and RDP accountants read any.
        """
        if self.dim == 1:
            units = math.floor(Fraction(self.sensitivity) * 2**self.grid_bits) + 1
        else:
            units = math.ceil(Fraction(self.sensitivity) * 2**self.grid_bits
                              + Fraction(math.isqrt(self.dim * 10**12) + 1, 10**6))
        return DiscreteGaussianMechanism(neighbouring, variance=self.sigma2, sensitivity=units,
                                         dimension=self.dim)

    def release(self, value: Any, rng: np.random.Generator) -> np.ndarray:
        """``grid * (round(value / grid) + Z)``, ``Z`` exact discrete Gaussian; on the grid."""
        k = _grid_index(value, self.grid_bits)
        return _on_grid(k + discrete_gaussian(self.sigma2, k.size, rng).reshape(k.shape),
                        self.grid_bits)
