r"""Dense privacy-loss distributions: composition by FFT, hockey-stick divergences (internal).

A :class:`DensePld` is the probability mass function of a privacy loss on the grid
:math:`L_i = (\ell + i)h` plus a mass at :math:`+\infty`, as built by ``dp_accounting``'s
(pessimistic, connect-the-dots) constructors. dp_accounting composes such PMFs too, but its
sparse self-composition evaluates ``size ** count`` as a Python integer (45 s for
:math:`10^7` steps), its FFT window comes from a Chernoff bound on 40 fixed orders that is
~6x wider than needed at large counts, and its :math:`\varepsilon(\delta)` is a Python loop over
the grid. Here:

* :func:`self_compose` is one FFT power, on a window from a Chernoff bound whose orders are
  centred on the distribution's own spread;
* tails of at most ``TAIL_MASS`` are cut pessimistically (the upper tail goes to
  :math:`+\infty`, the lower tail onto the lowest kept loss), as in dp_accounting;
* FFT round-off is covered (dp_accounting ignores it): an FFT power rescales the whole mass by
  ~3e-16 x count and takes up to ~1.2e-16 x count from the upper tails (measured against an
  80-bit FFT), so every mass is inflated by 2e-15 x count and 1e-15 x count is added at
  :math:`+\infty` (deltas below that are out of reach: epsilon is ``inf`` there);
* :func:`delta_for_epsilon` and :func:`epsilon_for_delta` are vectorised and exact for the PMF:
  :math:`\delta(\varepsilon) = p_\infty + \sum_{L_i>\varepsilon}p_i(1-e^{\varepsilon-L_i})`.

Examples
--------
>>> import numpy as np
>>> one = DensePld(interval=1.0, lower=-1, probs=np.array([0.5, 0.0, 0.5]), infinity_mass=0.0)
>>> round(delta_for_epsilon(one, 0.0), 6)   # randomised response with eps = 1
0.31606
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

#: Probability mass a truncation may move (pessimistically), as dp_accounting's default.
TAIL_MASS = 1e-15
#: most grid points one FFT composition may take (2^24 float64: ~0.6 GB with its spectrum and
#: copies): a Chernoff window of 10^9 tiny steps took 8 GB and was still growing (fuzz 10)
MAX_FFT_POINTS = 2**24
#: Relative inflation of the masses per composition, for the round-off of an FFT power.
_MASS_ROUND_OFF = 2e-15
#: Mass added at +inf per composition for the round-off in the upper tail (8x the largest
#: deficit of an upper tail measured against the same FFT power in 80-bit long double:
#: 1.2e-16 per composition, for 50 to 10^5 compositions).
_TAIL_ROUND_OFF = 1e-15


@dataclass(frozen=True)
class DensePld:
    """PMF of a privacy loss on ``interval * (lower + i)``, plus ``infinity_mass`` at +inf."""

    interval: float
    lower: int
    probs: np.ndarray
    infinity_mass: float

    @property
    def losses(self) -> np.ndarray:
        return (self.lower + np.arange(self.probs.size)) * self.interval


def from_dp_accounting_pmf(pmf) -> DensePld:
    """The arrays of a ``dp_accounting`` ``PLDPmf`` (through its dense form)."""
    dense = pmf.to_dense_pmf()
    try:  # dp_accounting exposes no public accessor for the arrays
        return DensePld(float(dense._discretization), int(dense._lower_loss),
                        np.asarray(dense._probs, dtype=float), float(dense._infinity_mass))
    except AttributeError as err:  # pragma: no cover - depends on dp_accounting's internals
        raise RuntimeError(f"unsupported dp_accounting version: {err}") from None


def symmetrise(remove: DensePld) -> DensePld:
    r"""The symmetric pair whose privacy profile for :math:`\alpha \ge 1` is ``remove``'s: the
    dominating pair of a Gaussian step on a batch drawn **without replacement** under the
    replace-one relation, for every :math:`\alpha` and both orders of the data sets.

    Derivation (DERIVED; the ingredients are Balle, Barthe & Gaboardi 2018, Theorem 2,
    "advanced joint convexity", and Zhu, Dong & Wang 2022, Theorem 10, composition of
    dominating pairs, the two results RECONSTRUCTED: their statements as used here, their
    numbers quoted from memory, not checked against the papers; Lebeda, Regehr, Kamath &
    Steinke 2024 show why one direction is not enough). Let :math:`D \simeq D'` differ in
    record :math:`i`, and couple the batches
    (:math:`B` of :math:`n`, :math:`\gamma = B/n`). Then :math:`M(D) = (1-\gamma)\mu_0 +
    \gamma\mu_1` and :math:`M(D') = (1-\gamma)\mu_0 + \gamma\mu_1'`, where :math:`\mu_0` is the
    output law when :math:`i` is not drawn (the same for both). With :math:`\alpha' =
    1 + \gamma(\alpha - 1) \ge 1` and :math:`\beta = \alpha'/\alpha`, Theorem 2 and joint
    convexity give :math:`H_{\alpha'}(M(D)\|M(D')) \le \gamma[(1-\beta)H_\alpha(\mu_1\|\mu_0) +
    \beta H_\alpha(\mu_1\|\mu_1')] \le \gamma H_\alpha(P\|Q)`, where :math:`(P, Q) =
    (N(\Delta,\sigma^2), N(0,\sigma^2))` is the base Gaussian's replace-one pair (:math:`\mu_1`
    against :math:`\mu_1'` by the same batch; :math:`\mu_1` against :math:`\mu_0` by swapping
    :math:`i` for a uniform record outside the batch, which makes the second batch uniform
    among those without :math:`i`). The right side is exactly :math:`H_{\alpha'}(\gamma P +
    (1-\gamma)Q\,\|\,Q)`, the ``remove`` direction of a Poisson-subsampled Gaussian of
    sensitivity :math:`\Delta`. For :math:`\alpha < 1` the identity :math:`H_\alpha(A\|B) =
    1 - \alpha + \alpha H_{1/\alpha}(B\|A)` and the bound on the reversed pair give
    :math:`H_\alpha(M(D)\|M(D')) \le 1-\alpha+\alpha H_{1/\alpha}(\text{remove})`. Both are
    the profile of the symmetric pair built here: it keeps ``remove``'s positive losses
    :math:`p_k` at :math:`kh`, mirrors each to :math:`-kh` with mass :math:`p_ke^{-kh}` (the
    second distribution's mass there), keeps the mass at :math:`+\infty` and puts the rest
    at loss 0. Its first distribution has total mass 1 and its second as well (the mirrored
    mass at :math:`-\infty` equals ``infinity_mass``); the rest at 0 is
    :math:`1 - P(L > 0) - Q(L > 0) \ge 0` for the Gaussian mixture (``ValueError`` if a PMF
    makes it negative beyond round-off). A pessimistic ``remove`` (losses rounded up, tails to
    :math:`+\infty`) stays pessimistic: each side's profile only grows.

    Tightness: the data set :math:`D = \{x, x', \ldots, x'\}` against :math:`D' =
    \{x', \ldots, x'\}` with opposite clipped contributions attains ``remove`` exactly at every
    step, so the composed epsilon of one direction is a lower bound; the symmetric pair's is
    7-13% above it at the parameters in ``tests/privacy/test_without_replacement_pld.py``
    (the gap is what an adaptive adversary may exploit by switching directions).

    Examples
    --------
    >>> import numpy as np
    >>> one = DensePld(1.0, -1, np.array([0.2, 0.3, 0.5]), 0.0)
    >>> sym = symmetrise(one)
    >>> sym.lower, np.round(sym.probs, 4).tolist()
    (-1, [0.1839, 0.3161, 0.5])
    """
    h = remove.interval
    k = remove.lower + np.arange(remove.probs.size)
    pos = k > 0
    top = int(k[pos].max()) if pos.any() else 0
    probs = np.zeros(2 * top + 1)
    probs[top + k[pos]] = remove.probs[pos]
    probs[top - k[pos]] = remove.probs[pos] * np.exp(-h * k[pos].astype(float))
    rest = 1.0 - math.fsum(probs) - remove.infinity_mass
    if rest < -1e-12:
        raise ValueError(f"symmetrise: the positive losses carry more than their share of the "
                         f"mass (1 - P(L>0) - Q(L>0) = {rest:.3g} < 0); not a dominating pair of "
                         "a without-replacement step")
    probs[top] = max(rest, 0.0)
    return DensePld(h, -top, probs, remove.infinity_mass)


def _trim(probs: np.ndarray, tail: float) -> tuple[int, np.ndarray, float]:
    """Cut a prefix and a suffix of mass <= tail/2 each: the prefix mass is added to the first
    kept entry (a larger loss: pessimistic), the suffix mass is returned (for +inf)."""
    probs = np.maximum(probs, 0.0)  # FFT round-off; raising a mass only adds to delta
    left = int(np.searchsorted(np.cumsum(probs), tail / 2, side="right"))
    right = probs.size - int(np.searchsorted(np.cumsum(probs[::-1]), tail / 2, side="right"))
    right = max(right, left + 1)
    kept = probs[left:right].copy()
    kept[0] += probs[:left].sum()
    return left, kept, float(probs[right:].sum())


def _chernoff_window(probs: np.ndarray, count: int, tail: float) -> tuple[int, int]:
    """Index range [lo, hi] holding all but ``tail`` of the sum of ``count`` draws from
    ``probs`` (indices 0..n-1): Chernoff bounds P[S >= b] <= exp(count K(t) - t b), minimised
    over orders t from the optimum of a Gaussian of the same spread down to 0.1/n (the scale
    of rare large losses, e.g. a subsampled Gaussian with a tiny sampling rate)."""
    n = probs.size
    idx = np.arange(n, dtype=float)
    mass = probs.sum()
    mean = float(idx @ probs) / mass
    spread = math.sqrt(max(float(((idx - mean) ** 2) @ probs) / mass, 1e-12))
    log_term = math.log(2.0 / tail)
    centre = math.sqrt(2.0 * log_term / count) / spread
    orders = np.geomspace(min(centre / 64.0, 0.1 / n), centre * 64.0, 64)
    with np.errstate(divide="ignore"):
        log_p = np.log(probs)
    lo, hi = 0, (n - 1) * count
    for sign in (1.0, -1.0):
        t = sign * orders
        # log-MGF of the index, centred at the mean for accuracy (K(t) = t mean + ...)
        log_mgf = special.logsumexp(log_p[None, :] + t[:, None] * (idx - mean)[None, :], axis=1)
        bound = count * mean + (count * log_mgf + log_term) / t
        if sign > 0:
            hi = min(hi, math.ceil(float(np.min(bound))))
        else:
            lo = max(lo, math.floor(float(np.max(bound))))
    return lo, max(hi, lo)


def self_compose(pld: DensePld, count: int, tail: float = TAIL_MASS) -> DensePld:
    """``count``-fold composition of ``pld`` with itself: one FFT power over a Chernoff window
    (the mass outside it, at most ``tail``, is added to +inf: it may alias into the window)."""
    if count == 1:
        return pld
    lo, hi = _chernoff_window(pld.probs, count, tail)
    from scipy import fft  # on first use: 0.1 CPU-s of import that most commands never need

    size = fft.next_fast_len(max(hi - lo + 1, pld.probs.size))
    if size > MAX_FFT_POINTS:
        raise MemoryError(f"the {count}-fold composition spans {size:,} grid points (at most "
                          f"{MAX_FFT_POINTS:,})")
    spectrum = fft.rfft(pld.probs, size)
    np.power(spectrum, count, out=spectrum)
    out = np.roll(fft.irfft(spectrum, size), -lo)[: hi - lo + 1]
    # the power scales the whole mass by the round-off of the total, ~3e-16 x count (measured
    # against repeated squaring); inflating every mass keeps delta an upper bound
    out *= 1.0 + _MASS_ROUND_OFF * count
    offset, out, right = _trim(out, tail)
    infinity = tail + right + _TAIL_ROUND_OFF * count - math.expm1(
        count * math.log1p(-pld.infinity_mass))
    return DensePld(pld.interval, count * pld.lower + lo + offset, out, min(1.0, infinity))


def compose(a: DensePld, b: DensePld, tail: float = TAIL_MASS) -> DensePld:
    """Composition of two PLDs on the same grid (a full FFT convolution, then trimmed)."""
    if a.interval != b.interval:
        raise ValueError(f"interval must agree to compose PLDs, got {a.interval} and {b.interval}")
    from scipy import signal  # on first use: it pulls in scipy.stats (~1 CPU-s of imports)

    if a.probs.size + b.probs.size > MAX_FFT_POINTS:
        raise MemoryError(f"the composition spans {a.probs.size + b.probs.size:,} grid points "
                          f"(at most {MAX_FFT_POINTS:,})")
    offset, out, right = _trim(signal.fftconvolve(a.probs, b.probs), tail)
    infinity = (a.infinity_mass + b.infinity_mass - a.infinity_mass * b.infinity_mass + right
                + 2 * _TAIL_ROUND_OFF)
    return DensePld(a.interval, a.lower + b.lower + offset, out, min(1.0, infinity))


def delta_for_epsilon(pld: DensePld, epsilon: float) -> float:
    """Hockey-stick divergence of the PMF at ``epsilon``."""
    losses = pld.losses
    above = losses > epsilon
    gain = -np.expm1(epsilon - losses[above])
    return float(min(1.0, pld.infinity_mass + float(gain @ pld.probs[above])))


def epsilon_for_delta(pld: DensePld, delta: float) -> float:
    """Smallest ``epsilon >= 0`` with :func:`delta_for_epsilon` at most ``delta`` (``inf`` if
    the mass at +inf exceeds ``delta``); exact for the PMF, rounded up by ~1e-12."""
    if pld.infinity_mass > delta:
        return math.inf
    if delta_for_epsilon(pld, 0.0) <= delta:
        return 0.0
    h, p = pld.interval, pld.probs
    losses = pld.losses
    # For eps in (L_{k-1}, L_k]: delta(eps) = inf + S_k - e^eps T_k with the suffix sums
    # S_k = sum_{i>=k} p_i and e^{L_k} T_k = sum_{i>=k} p_i e^{-(L_i - L_k)} =: E_k, where
    # E_k = p_k + e^{-h} E_{k+1} (a first-order recursion, run backwards by lfilter).
    rev = p[::-1]
    suffix = np.cumsum(rev)[::-1]
    from scipy import signal

    weighted = signal.lfilter([1.0], [1.0, -math.exp(-h)], rev)[::-1]
    # delta at the grid points: delta(L_k) = inf + S_{k+1} - e^{-h} E_{k+1}
    at_grid = pld.infinity_mass + np.append(suffix[1:] - math.exp(-h) * weighted[1:], 0.0)
    k = int(np.argmax(at_grid <= delta))  # first grid loss with delta(L_k) <= delta
    excess = pld.infinity_mass + suffix[k] - delta
    eps = losses[k] + math.log(excess / weighted[k]) if excess > 0 else losses[k]
    eps = min(max(eps, losses[k] - h, 0.0), losses[k])
    return eps + 1e-12 * max(1.0, abs(eps))


def tradeoff_vertices(pld: DensePld) -> tuple[np.ndarray, np.ndarray]:
    r"""The vertices :math:`(\alpha_j, \beta_j)` of the optimal attack's ROC curve for the
    pair this PMF describes (FPR under the second distribution, TPR under the first).

    DERIVED (Neyman-Pearson; Dong, Roth & Su 2022, Prop. 2.12's duality): the likelihood-ratio
    test that rejects when the loss is at least :math:`L_j` has
    :math:`\beta_j = p_\infty + \sum_{i\ge j}p_i` and
    :math:`\alpha_j = \sum_{i\ge j}p_ie^{-L_i}` (the second distribution's mass there),
    and the best TPR at FPR :math:`\alpha` is the piecewise-linear concave curve through them,
    equivalently :math:`\min_{\gamma\ge0}\gamma\alpha + H_\gamma` (the hockey-stick divergence
    at every real :math:`\varepsilon=\ln\gamma`). Returned in increasing FPR, with the end
    points (0, p_inf) and (sum of the second distribution's mass, 1 - 0): ``alpha`` may end
    below 1 when the grid truncated it (the rest of the curve then runs to (1, 1)).
    """
    p, h = pld.probs, pld.interval
    losses = pld.losses
    rev = p[::-1]
    suffix = np.cumsum(rev)[::-1]  # S_j = sum_{i>=j} p_i
    from scipy import signal  # on first use (see _convolve)

    # alpha_j = e^{-L_j} E_j with E_j = p_j + e^{-h} E_{j+1} (as epsilon_for_delta), in logs
    weighted = signal.lfilter([1.0], [1.0, -math.exp(-h)], rev)[::-1]
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        alpha = np.exp(np.log(weighted) - losses)
    beta = pld.infinity_mass + suffix
    order = np.argsort(alpha, kind="stable")
    alpha = np.concatenate(([0.0], alpha[order], [1.0]))
    beta = np.concatenate(([pld.infinity_mass], beta[order], [1.0]))
    return np.minimum(alpha, 1.0), np.minimum(beta, 1.0)


def tradeoff_tpr(pld: DensePld, fpr: np.ndarray) -> np.ndarray:
    """The best attack's TPR at each ``fpr`` (in [0, 1]): the concave curve through
    :func:`tradeoff_vertices`, at least ``fpr`` (the coin-flip test)."""
    alpha, beta = tradeoff_vertices(pld)  # both ascending (a zero mass repeats a vertex)
    fpr = np.asarray(fpr, dtype=float)
    return np.clip(np.maximum(np.interp(fpr, alpha, beta), fpr), 0.0, 1.0)
