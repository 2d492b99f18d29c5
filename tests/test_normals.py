"""The compiled Gaussian stream (``dpbounds._normals``, ``TrialRandom(normals="fast")``).

Oracles: the standard normal law itself (scipy.stats.norm's CDF for a two-sided
Kolmogorov-Smirnov test; the closed-form moments 0, 1, 0, 3 with their sampling standard errors;
the tail mass 1 - Phi(r) beyond the ziggurat's base strip with a binomial CI) and a pure-Python
re-implementation of the xoshiro256++ recurrence from its reference C code. Negative controls:
the same distribution checks refuse a stream scaled by 1.01 and one whose tail beyond r is cut,
and the bit checks see a different trial count's bits when the seeding depends on it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds import _normals
from dpbounds.backend import TrialRandom

pytestmark = pytest.mark.skipif(not _normals.AVAILABLE, reason="needs numba (the fast extra)")

Z = 5.0  # two-sided, ~6e-7 per check: deterministic seeds, so a failure is a real defect


def _failures(x: np.ndarray) -> list[str]:
    """Which checks a sample of supposed standard normals fails (two-sided, Z standard errors)."""
    from scipy import stats

    n = x.size
    out = []
    if stats.kstest(x, "norm").pvalue < 1e-6:
        out.append("ks")
    mean, var = x.mean(), x.var()
    c = x - mean
    skew = (c ** 3).mean() / var ** 1.5
    kurt = (c ** 4).mean() / var ** 2 - 3.0
    for name, value, se in (("mean", mean, 1 / math.sqrt(n)), ("var", var - 1, math.sqrt(2 / n)),
                            ("skew", skew, math.sqrt(6 / n)), ("kurt", kurt, math.sqrt(24 / n))):
        if abs(value) > Z * se:
            out.append(name)
    p = 2 * stats.norm.sf(_normals._R)  # |X| beyond the base strip: the tail algorithm's part
    k = int(np.count_nonzero(np.abs(x) > _normals._R))
    if abs(k - n * p) > Z * math.sqrt(n * p * (1 - p)):
        out.append("tail")
    return out


@pytest.fixture(scope="module")
def sample() -> np.ndarray:
    rng = TrialRandom(12345, 4, normals="fast")
    return np.asarray(rng.normal_steps(1 << 15, (16,))).ravel()  # 2^21 numbers


def test_distribution_is_standard_normal(sample) -> None:
    assert _failures(sample) == []


def test_negative_controls_fail_the_distribution_checks(sample) -> None:
    assert "var" in _failures(sample * 1.01)
    cut = np.clip(sample, -_normals._R, _normals._R)  # a ziggurat without its tail
    assert "tail" in _failures(cut)


def test_wedges_and_tail_have_their_mass(sample) -> None:
    # the layers' edges X[1..255]: each number lands in a wedge or rectangle region between
    # consecutive edges with the normal law's probability (binomial CI), not only overall
    from scipy import stats

    edges = np.concatenate([[0.0], _normals._X[1:_normals._LAYERS][::-1][::16], [np.inf]])
    edges = np.unique(edges)
    counts, _ = np.histogram(np.abs(sample), bins=edges)
    p = np.diff(2 * stats.norm.cdf(edges) - 1)
    n = sample.size
    z = (counts - n * p) / np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(z) < Z), z


def _xoshiro_reference(state: list[int], count: int) -> list[int]:
    """xoshiro256++ as in Blackman & Vigna's xoshiro256plusplus.c, in Python integers."""
    m = (1 << 64) - 1
    s = list(state)

    def rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (64 - k))) & m

    out = []
    for _ in range(count):
        out.append((rotl((s[0] + s[3]) & m, 23) + s[0]) & m)
        t = (s[1] << 17) & m
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


def test_bits_follow_the_reference_recurrence() -> None:
    import numba

    @numba.njit
    def words(s, n):
        out = np.empty(n, dtype=np.uint64)
        for i in range(n):
            out[i] = _normals._next(s)
        return out

    start = _normals.initial_states([np.random.SeedSequence(7)])[0]
    got = words(start.copy(), 50)
    assert [int(v) for v in got] == _xoshiro_reference([int(v) for v in start], 50)


def test_trial_bits_do_not_depend_on_the_trial_count_or_the_blocks() -> None:
    one = np.asarray(TrialRandom(3, 1, normals="fast").normal_steps(200, (16,)))
    eight_rng = TrialRandom(3, 8, normals="fast")
    eight = np.concatenate([np.asarray(eight_rng.normal_steps(b, (16,))) for b in (7, 150, 43)],
                           axis=1)  # the same 200 steps, cut into three blocks
    assert np.array_equal(one[0], eight[0])  # bit for bit
    three = np.asarray(TrialRandom(3, 3, normals="fast").normal_steps(200, (16,)))
    assert np.array_equal(three, eight[:3])
    # the trials are different streams, uncorrelated within sampling error
    r = np.corrcoef(eight.reshape(8, -1))[np.triu_indices(8, 1)]
    assert np.all(np.abs(r) < Z / math.sqrt(200 * 16))


def test_negative_control_seeding_by_trial_count_is_seen() -> None:
    # a stream seeded from (seed, trials) instead of (seed, k) changes trial 0's bits: the
    # comparison above would catch it
    def seeded_by_count(trials: int) -> np.ndarray:
        seqs = np.random.SeedSequence(3 + 1000 * trials).spawn(trials)
        states = _normals.initial_states(seqs)
        out = np.empty((trials, 200 * 16))
        _normals.fill_standard_normal(states, out)
        return out

    assert not np.array_equal(seeded_by_count(1)[0], seeded_by_count(8)[0])


def test_selection_scaling_and_split() -> None:
    fast = np.asarray(TrialRandom(0, 2, normals="fast").normal_steps(4, (3,), 0.5))
    base = np.asarray(TrialRandom(0, 2, normals="fast").normal_steps(4, (3,)))
    numpy_ = np.asarray(TrialRandom(0, 2, normals="numpy").normal_steps(4, (3,), 0.5))
    assert fast.shape == numpy_.shape == (2, 4, 3)
    np.testing.assert_array_equal(fast, 0.5 * base)  # the same scaling path as NumPy's stream
    assert not np.array_equal(fast, numpy_)
    a, b = TrialRandom(0, 2, normals="fast").split(2)
    assert a.normals == b.normals == "fast"
    assert not np.array_equal(np.asarray(a.normal_steps(4, (3,))),
                              np.asarray(b.normal_steps(4, (3,))))


def test_environment_variable_and_bad_values(monkeypatch) -> None:
    monkeypatch.setenv("DPBOUNDS_NORMALS", "fast")
    assert TrialRandom(0, 1).normals == "fast"
    monkeypatch.setenv("DPBOUNDS_NORMALS", "pcg")
    with pytest.raises(ValueError, match="DPBOUNDS_NORMALS"):
        TrialRandom(0, 1)
    monkeypatch.delenv("DPBOUNDS_NORMALS")
    assert TrialRandom(0, 1).normals == "numpy"
    with pytest.raises(ValueError, match="normals"):
        TrialRandom(0, 1, normals="xoshiro")
