r"""Tests of the declared sampling against the realised indices of a transcript (issue 34 item 2).

Amplification by sampling holds only for batches drawn as declared; these tests read the
``indices`` of :meth:`dpbounds.algorithms._transcript.Transcript.as_dict` and nothing else.
Every test is two-sided (but Poisson's batch-size test, one-sided) at a Bonferroni share
``alpha / k`` of the family-wise size (``k`` tests; Poisson's third test see below), and
states its power against a named defect.

* **Poisson** (rate ``q``): the total membership count over ``trials x T x n`` independent
  Bernoulli(``q``) draws, an exact binomial test; the per-sample inclusion counts
  :math:`c_i\sim\mathrm{Bin}(T,q)` i.i.d., dispersion :math:`\sum_i(c_i-Tq)^2/(Tq(1-q))`
  against :math:`\chi^2_n` (a fixed cyclic order gives every sample :math:`\lfloor Tq\rceil`,
  a dispersion near 0). Power against a rate 10% off: normal approximation [DERIVED]. And
  the per-step batch sizes, i.i.d. :math:`\mathrm{Bin}(n,q)`: the count of the most frequent
  size against a union bound of exact binomial tails (a fixed batch size drawn and accounted
  as Poisson puts every step at one size: the second adversary round's ``fixed_as_poisson``,
  ``bench/adversary_results_2.md``); this third Poisson test is at ``alpha / 2`` like the
  other two (the family's size at most ``1.5 alpha``) [DERIVED].
* **Uniform B-subset per step, independent steps** (``"without_replacement"``): inclusion
  counts with :math:`\mathrm{Var}\,c_i=Tq(1-q)`, :math:`\mathrm{Cov}(c_i,c_j)=-Tq(1-q)/(n-1)`,
  so :math:`\frac{n-1}{n}\sum_i(c_i-Tq)^2/(Tq(1-q))\approx\chi^2_{n-1}` [DERIVED]; and the
  overlaps :math:`|S_t\cap S_{t+1}|`, i.i.d. hypergeometric :math:`(n, B, B)` under
  independence (given :math:`S_{t+1}` the law of the overlap does not depend on it), mean
  :math:`B^2/n`, summed to a normal ``z``. A cyclic order has overlap 0 (``n >= 2B``).
* **A fresh uniform permutation per epoch** (``"shuffle"``, ``S = n // B`` steps per epoch):
  each epoch's indices distinct; Spearman's :math:`\rho` of each epoch's order with the
  sample index (uniformity: catches an unshuffled order) and between consecutive epochs'
  positions (independence across epochs: catches an order reused), each
  :math:`\rho\sqrt{m-1}` approximately :math:`N(0,1)` under independent uniform permutations
  of :math:`m` items [VERBATIM: the null variance :math:`1/(m-1)` of Spearman's
  :math:`\rho`], summed over epochs and trials.
* **One permutation for the run** (``"shuffle_once"``, Algorithm 2: the batch of ``t`` is the
  batch of ``t - S``): every epoch repeats the first; its uniformity as above.

Example
-------
>>> import numpy as np
>>> from dpbounds.verify.sampling import sampling_verdicts
>>> idx = (np.arange(40)[:, None] * 2 + np.arange(2)) % 10      # a cyclic order, n=10, B=2
>>> tr = dict(indices=idx[None], n=10, batch_size=2, steps=40, trials=1,
...           sampling="without_replacement", sampling_rate=0.2)
>>> [v.holds for v in sampling_verdicts(tr)]
[False, False]
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from scipy import stats

from dpbounds._patching import thread_patch
from dpbounds.backend import TrialRandom, to_numpy
from dpbounds.verify.verdicts import Verdict

__all__ = ["cyclic_batches", "sampling_verdicts", "unshuffled"]

#: power a test must have against its named defect to count as shown
POWER = 0.8


def _two_sided_normal(z: float) -> float:
    return float(2.0 * stats.norm.sf(abs(z)))


def _two_sided_chi2(x: float, df: int) -> float:
    return float(min(1.0, 2.0 * min(stats.chi2.cdf(x, df), stats.chi2.sf(x, df))))


def _row(name: str, case: str, p: float, level: float, power: float, against: str,
         holds: bool | None = None, *, decide: str = "", sided: str = "two-sided") -> Verdict:
    """A test's verdict row. Its power against the named defect travels as data
    (``Verdict.power``); below :data:`POWER` the row has ``powered=False`` and ``needs``
    (``decide``: the smallest run that reaches it), which a study counts as not shown
    (INCONCLUSIVE), never as a pass and never in place of a failure."""
    short = power < POWER
    return Verdict(name, f"{case}; power {power:.2f} against {against}",
                   f"{sided} p >= {level:.3g}", p, 0.0, level,
                   "sampling test on the realised indices (DERIVED null)",
                   bool(p >= level) if holds is None else holds,
                   powered=not short, power=float(power),
                   needs=(f"power {power:.2f} < {POWER} against {against}; "
                          + (decide or "no run length reaches it (more trials would)"))
                   if short else "")


def _smallest(power_of: Callable[[int], float], start: int, cap: int = 10**9) -> int | None:
    """Smallest ``k >= start`` with ``power_of(k) >= POWER`` (``power_of`` non-decreasing
    in ``k``, as every power here is in the run's length); ``None`` when ``cap`` falls short.
    Doubling then bisection: about 60 evaluations."""
    if power_of(cap) < POWER:
        return None
    lo = hi = max(start, 1)
    while power_of(hi) < POWER:
        lo, hi = hi, min(2 * hi, cap)
    while hi - lo > 1:  # power_of(lo) < POWER <= power_of(hi) (or lo == start)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_of(mid) >= POWER else (mid, hi)
    return hi if power_of(lo) < POWER else lo


def _steps_decide(power_of: Callable[[int], float], T: int, trials: int) -> str:
    t = _smallest(power_of, T)
    return "" if t is None else f"T >= {t} steps ({trials} trials) would reach it"


def _epochs_decide(power_of: Callable[[int], float], epochs: int, S: int, trials: int
                   ) -> str:
    e = _smallest(power_of, epochs)
    return ("" if e is None else
            f"{e} epochs (T >= {e * S} steps, {trials} trials) would reach it")


def _structure(idx: np.ndarray, n: int, full: bool) -> str:
    """'' when every step's indices are distinct and in range (and fill the batch)."""
    if idx.size and (idx.max() >= n or idx.min() < -1):
        return f"indices outside [0, {n})"
    s = np.sort(idx, axis=-1)
    dup = (s[..., 1:] == s[..., :-1]) & (s[..., 1:] >= 0)
    if dup.any():
        return "a sample twice in one step"
    if full and (idx < 0).any():
        return "a step with fewer than B samples"
    return ""


def _squared_deviations(idx: np.ndarray, n: int, mean: float) -> float:
    """``sum_k sum_i (c_ki - mean)^2`` of the per-trial inclusion counts ``c_ki`` (how many
    steps of trial ``k`` used sample ``i``), a block of trials at a time: one ``bincount`` per
    block of at most :data:`_COUNT_CELLS` counts and as many indices, so O(that) memory (a
    dense ``(trials, n)`` table held 4 GB at 4000 trials, n = 126492; one ``bincount`` per
    trial cost 10 us each, most of a 4000-trial clip probe's checks; a block sized by its
    counts alone copied a long transcript's indices twice over, 117 -> 332 MiB at 16 trials
    of 20,000 steps of 64: an independent review). Each trial's sum is NumPy's sum of its
    row, added in trial order: the same floats as one trial at a time."""
    trials = idx.shape[0]
    flat = idx.reshape(trials, -1)
    per = max(1, min(_COUNT_CELLS // max(n, 1), _COUNT_CELLS // max(flat.shape[1], 1)))
    total = 0.0
    if per == 1 or flat.shape[1] >= n:  # a trial's own bincount is as cheap: no copies
        for k in range(trials):
            v = flat[k]
            total += float(np.sum((np.bincount(v[v >= 0], minlength=n) - mean) ** 2))
        return total
    for k0 in range(0, trials, per):
        block = flat[k0:k0 + per]
        rows = block.shape[0]
        keep = block >= 0
        # trial k's sample i counted in cell k * n + i of the block
        cells = (block + n * np.arange(rows, dtype=np.int64)[:, None])[keep]
        counts = np.bincount(cells, minlength=rows * n).reshape(rows, n)
        for row_sum in np.sum((counts - mean) ** 2, axis=1):
            total += float(row_sum)
    return total


#: the most inclusion counts (and indices) :func:`_squared_deviations` holds at once (2 MiB of
#: int64 counts; ~6 MiB with the indices' offset copies)
_COUNT_CELLS = 2**18


def _dispersion(idx: np.ndarray, n: int, steps: int, q: float, df_each: int, scale: float
                ) -> tuple[float, float, int]:
    """(statistic, two-sided p, df) of the inclusion-count dispersion; and the power
    against a cyclic order is 1 when the largest cyclic statistic is below the lower
    critical value (checked by the caller)."""
    var = steps * q * (1.0 - q)
    x = float(scale * _squared_deviations(idx, n, steps * q) / var)
    df = df_each * idx.shape[0]
    return x, _two_sided_chi2(x, df), df


def _cyclic_power(trials: int, n: int, steps: int, q: float, scale: float, df: int,
                  level: float) -> float:
    """1 when a cyclic order (every count within 1 of ``Tq``) is rejected, else 0."""
    worst = scale * trials * n / (steps * q * (1.0 - q))
    return 1.0 if 2.0 * stats.chi2.cdf(worst, df) < level else 0.0


def _modal_size(sizes: np.ndarray, n: int, q: float) -> tuple[int, int, float]:
    r"""(most frequent batch size, its count ``c`` over the ``S`` steps, p-value) of the
    per-step batch sizes.

    Under Poisson sampling the sizes are i.i.d. :math:`\mathrm{Bin}(n,q)`, so the number of
    steps of size ``k`` is :math:`C_k\sim\mathrm{Bin}(S,p_k)`, :math:`p_k` the binomial pmf;
    the p-value of the largest count is the union bound
    :math:`P[\max_k C_k\ge c]\le\sum_{k=0}^n P[C_k\ge c]` (valid, conservative; exact
    binomial tails) [DERIVED]. A fixed batch size, the defect, gives ``c = S`` and
    :math:`p\le\sum_k p_k^S`."""
    flat = np.asarray(sizes, dtype=np.int64).reshape(-1)
    steps = int(flat.size)
    counts = np.bincount(flat, minlength=n + 1)
    mode = int(np.argmax(counts))
    c = int(counts[mode])
    pmf = stats.binom.pmf(np.arange(n + 1), n, q)
    return mode, c, float(min(1.0, np.sum(stats.binom.sf(c - 1, steps, pmf))))


def _fixed_size_power(steps: int, n: int, q: float, level: float) -> float:
    """1 when a batch of one fixed size at every step is rejected, else 0."""
    pmf = stats.binom.pmf(np.arange(n + 1), n, q)
    return 1.0 if float(np.sum(pmf ** steps)) < level else 0.0


def _poisson_power(draws: int, q: float, level: float) -> float:
    """Power of the two-sided binomial rate test at ``level`` against a rate 10% off
    (normal approximation [DERIVED])."""
    q1 = 1.1 * q
    return float(stats.norm.cdf((abs(q1 - q) * math.sqrt(draws)
                                 - stats.norm.isf(level / 2) * math.sqrt(q * (1 - q)))
                                / math.sqrt(q1 * (1 - q1))))


def _spearman_sum(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """(rho * sqrt(m - 1), 1) of two position vectors over the entries present in both."""
    keep = (a >= 0) & (b >= 0)
    m = int(keep.sum())
    if m < 3:
        return 0.0, 0
    rho = _spearman_rho(a[keep], b[keep])
    return float(rho) * math.sqrt(m - 1), 1


def _distinct_ranks(x: np.ndarray) -> np.ndarray | None:
    """``scipy.stats.rankdata(x)`` for distinct values (ranks ``1..m`` as floats, the same
    numbers its ``"average"`` method gives without ties); ``None`` when ``x`` has a tie."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    if np.any(xs[1:] == xs[:-1]):
        return None
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = np.arange(1, x.size + 1, dtype=np.float64)
    return ranks


def _spearman_rho(a: np.ndarray, b: np.ndarray) -> float:
    """``scipy.stats.spearmanr(a, b)[0]``, bit for bit: the Pearson correlation of the ranks
    by ``np.corrcoef`` of the stacked columns, as SciPy computes it, with the ranks of distinct
    values built directly (SciPy's ``apply_along_axis(rankdata)`` was most of a study's
    sampling-test time); with a tie, SciPy itself."""
    ra, rb = _distinct_ranks(a), _distinct_ranks(b)
    if ra is None or rb is None:
        return float(stats.spearmanr(a, b)[0])
    return float(np.corrcoef(np.column_stack((ra, rb)), rowvar=False)[1, 0])


#: numbers sorted at once by :func:`_consecutive_overlaps` (32 MiB of int64)
_OVERLAP_BLOCK = 1 << 22


def _consecutive_overlaps(s: np.ndarray) -> np.ndarray:
    """``(trials, T - 1)`` sizes of the intersection of batches ``t`` and ``t + 1`` of
    ``s`` (``(trials, T, B)``, each batch of distinct indices): the duplicates of the two
    batches' merged, sorted concatenation (what ``np.intersect1d(..., assume_unique=True)``
    counts), for a block of steps at once. One call per pair cost 3.2 us: 64 of a full
    ``clipped_sgd --vary N`` study's 141 CPU-s went to its 2e7 pairs."""
    trials, T, B = s.shape
    out = np.empty((trials, max(T - 1, 0)))
    step = max(1, _OVERLAP_BLOCK // (2 * B * max(trials, 1)))
    for t0 in range(0, T - 1, step):
        t1 = min(T - 1, t0 + step)
        if B <= 2:  # every pair of entries compared: 10-20x faster than sorting rows of 2-4
            out[:, t0:t1] = np.count_nonzero(
                s[:, t0:t1, :, None] == s[:, t0 + 1:t1 + 1, None, :], axis=(-1, -2))
            continue
        both = np.concatenate((s[:, t0:t1], s[:, t0 + 1:t1 + 1]), axis=-1)
        both.sort(axis=-1)
        out[:, t0:t1] = np.count_nonzero(both[..., 1:] == both[..., :-1], axis=-1)
    return out


def _positions(order: np.ndarray, n: int) -> np.ndarray:
    pos = np.full(n, -1)
    pos[order] = np.arange(order.size)
    return pos


def sampling_verdicts(tr: Mapping[str, Any], *, alpha: float = 1e-3, name: str = "sampling"
                      ) -> list[Verdict]:
    """The tests of the module docstring for the transcript's declared ``sampling`` (none for
    ``"full"``)."""
    scheme = str(tr["sampling"])
    if scheme == "full" or tr.get("indices") is None:
        return []
    idx = np.asarray(tr["indices"])
    n, B, T = int(tr["n"]), int(tr["batch_size"]), int(tr["steps"])
    trials = idx.shape[0]
    bad = _structure(idx, n, scheme != "poisson")
    if bad:
        return [Verdict(name, f"{scheme} batches: {bad}", "well-formed batches", 1.0, 0.0, 0.0,
                        "structure of the realised indices", False)]
    out: list[Verdict] = []
    if scheme == "poisson":
        q = float(tr["sampling_rate"])
        level = alpha / 2
        total, draws = int((idx >= 0).sum()), trials * T * n
        p = float(stats.binomtest(total, draws, q).pvalue)
        out.append(_row(name, f"Poisson rate {q:.4g}: {total} members of {draws} draws", p,
                        level, _poisson_power(draws, q, level), "a rate 10% off",
                        decide=_steps_decide(lambda t: _poisson_power(trials * t * n, q,
                                                                      level), T, trials)))
        x, p, df = _dispersion(idx, n, T, q, n, 1.0)
        out.append(_row(name, f"per-sample inclusion counts, chi2 = {x:.4g} on {df} df", p,
                        level, _cyclic_power(trials, n, T, q, 1.0, df, level),
                        "a cyclic order",
                        decide=_steps_decide(lambda t: _cyclic_power(trials, n, t, q, 1.0, df,
                                                                     level), T, trials)))
        if 0.0 < q < 1.0:
            sizes = np.sum(idx.reshape(trials, T, -1) >= 0, axis=-1)
            mode, c, p = _modal_size(sizes, n, q)
            out.append(_row(name, f"per-step batch sizes: size {mode} at {c} of {sizes.size} "
                                  "steps (Poisson: Bin(n, q) sizes)", p, level,
                            _fixed_size_power(trials * T, n, q, level),
                            "a fixed batch size", sided="one-sided",
                            decide=_steps_decide(lambda t: _fixed_size_power(
                                trials * t, n, q, level), T, trials)))
        return out
    if scheme == "without_replacement":
        q = B / n
        level = alpha / 2
        if B == n:
            return []  # every sample in every step: nothing random to test
        x, p, df = _dispersion(idx, n, T, q, n - 1, (n - 1) / n)
        out.append(_row(name, f"per-sample inclusion counts, chi2 = {x:.4g} on {df} df", p,
                        level, _cyclic_power(trials, n, T, q, (n - 1) / n, df, level),
                        "a cyclic order",
                        decide=_steps_decide(lambda t: _cyclic_power(
                            trials, n, t, q, (n - 1) / n, df, level), T, trials)))
        if T < 2:
            return out
        overlap = _consecutive_overlaps(np.asarray(idx).reshape(trials, T, -1))
        mean = B * B / n
        var = B * q * (1 - q) * (n - B) / (n - 1)
        cnt = overlap.size
        z = float((overlap.sum() - cnt * mean) / math.sqrt(cnt * var))
        crit = stats.norm.isf(level / 2)

        def overlap_power(t: int) -> float:  # a cyclic order's z over trials x (t - 1) pairs
            pairs = trials * (t - 1)
            return 1.0 if pairs > 0 and pairs * mean / math.sqrt(pairs * var) > crit else 0.0

        out.append(_row(name, f"overlap of consecutive batches, z = {z:.3g} over {cnt} pairs",
                        _two_sided_normal(z), level, overlap_power(T),
                        "a cyclic order (overlap 0)",
                        decide=_steps_decide(overlap_power, T, trials)))
        return out
    # epochs of S steps: "shuffle" (fresh) or "shuffle_once" (one permutation for the run)
    S = max(1, n // B)
    epochs = T // S
    if epochs < 1:
        return []
    level = alpha / (2 if scheme == "shuffle" else 1)
    orders = idx[:, :epochs * S, :].reshape(trials, epochs, S * B)
    if any(np.unique(orders[k, e]).size != S * B for k in range(trials) for e in range(epochs)):
        return [Verdict(name, f"{scheme}: an epoch uses a sample twice", "each epoch a "
                        "permutation prefix", 1.0, 0.0, 0.0, "structure", False)]
    if scheme == "shuffle_once" and not (orders == orders[:, :1]).all():
        return [Verdict(name, "shuffle_once: an epoch differs from the first", "one "
                        "permutation for the run", 1.0, 0.0, 0.0, "structure", False)]
    m = S * B
    per_epoch = range(epochs if scheme == "shuffle" else 1)
    z_sum, cnt = 0.0, 0
    for k in range(trials):
        for e in per_epoch:
            z1, c1 = _spearman_sum(_positions(orders[k, e], n), np.arange(n))
            z_sum, cnt = z_sum + z1, cnt + c1
    z = z_sum / math.sqrt(max(cnt, 1))
    crit = stats.norm.isf(level / 2)

    def rho_power(k: int) -> float:  # an unshuffled or reused order has rho = 1 on each of k
        return 1.0 if math.sqrt(k * (m - 1)) > crit else 0.0

    out.append(_row(name, f"order vs sample index (Spearman), z = {z:.3g} over {cnt} epochs",
                    _two_sided_normal(z), level, rho_power(cnt), "an unshuffled order",
                    # shuffle_once tests one epoch per trial: a longer run adds nothing
                    decide="" if scheme == "shuffle_once" else _epochs_decide(
                        lambda e: rho_power(trials * e), epochs, S, trials)))
    if scheme == "shuffle" and epochs >= 2:
        z_sum, cnt = 0.0, 0
        for k in range(trials):
            for e in range(epochs - 1):
                z1, c1 = _spearman_sum(_positions(orders[k, e], n),
                                       _positions(orders[k, e + 1], n))
                z_sum, cnt = z_sum + z1, cnt + c1
        z = z_sum / math.sqrt(max(cnt, 1))
        out.append(_row(name, f"consecutive epochs' orders (Spearman), z = {z:.3g} over {cnt} "
                              "pairs", _two_sided_normal(z), level,
                        rho_power(cnt), "one order reused across epochs",
                        decide=_epochs_decide(lambda e: rho_power(trials * (e - 1)), epochs,
                                              S, trials)))
    return out


@contextlib.contextmanager
def _replaced_draw(method: str, replace: Callable[..., np.ndarray]) -> Iterator[None]:
    """``TrialRandom.<method>`` draws as before (the stream advances as in a correct run) and
    returns ``replace(drawn, *args)`` instead, in the backend and dtype of the draw."""
    def make(inner: Any) -> Any:
        def patched(self: TrialRandom, *args: Any) -> Any:
            drawn = np.asarray(to_numpy(inner(self, *args)))
            return self.xp.asarray(np.broadcast_to(replace(drawn, *args), drawn.shape)
                                   .astype(drawn.dtype))
        return patched

    with thread_patch(TrialRandom, method, make):  # this thread's draws only
        yield


@contextlib.contextmanager
def cyclic_batches() -> Iterator[None]:
    """Mutant: every ``TrialRandom.subsample_steps`` call returns the next batches of a fixed
    cyclic order (step ``t`` uses ``tB .. tB+B-1 mod n``) while the run accounts them as
    sampled. Steps are counted from entering the block (one run per block)."""
    done = [0]

    def cyclic(drawn: np.ndarray, n: int, m: int, steps: int) -> np.ndarray:
        t = np.arange(done[0], done[0] + steps)
        done[0] += steps
        return (t[:, None] * m + np.arange(m)[None, :]) % n

    with _replaced_draw("subsample_steps", cyclic):
        yield


@contextlib.contextmanager
def unshuffled() -> Iterator[None]:
    """Mutant: ``TrialRandom.permutation`` returns the identity (the data in stored order
    every epoch) while the run claims shuffled epochs."""
    with _replaced_draw("permutation", lambda drawn, n: np.arange(n)):
        yield
