"""The ``drawn_spread`` verdict: trials that share their noise are caught, independent ones pass.

Oracle: the chi-square law of the sample variance. Independent per-trial energies (sums of
squares of ``n`` Gaussian draws, simulated here) pass in every one of 2,000 simulated studies
(the check's level is 1e-6); trials with identical noise (the ``shared_trial`` mutant of the
adversary run, ``bench/adversary_results.md``) and trials scaled copies of one another's
noise fail."""

from __future__ import annotations

import math

import numpy as np

from dpbounds.verify.study import _spread_verdict


def _records(values_per_point: list[np.ndarray], sd: float) -> list[dict]:
    return [{"c:drawn": v, "checks": {"drawn": {"kind": "drawn", "sd": sd}}}
            for v in values_per_point]


def _energies(rng: np.random.Generator, trials: int, n: int, sigma: float) -> np.ndarray:
    return sigma**2 * rng.chisquare(n, size=trials)


def test_independent_trials_pass_and_their_spread_reads_one():
    rng = np.random.default_rng(0)
    n, sigma, trials = 400, 0.7, 6
    sd = sigma**2 * math.sqrt(2 * n)
    ratios = []
    for _ in range(2000):
        recs = _records([_energies(rng, trials, n, sigma) for _ in range(4)], sd)
        v = _spread_verdict("s", "drawn", "d", recs)
        assert v is not None and v.holds
        ratios.append(v.measured)
    # the pooled ratio s^2 / sd^2 has mean 1 (two-sided, 5 standard errors of the mean)
    se = math.sqrt(2.0 / 20) / math.sqrt(len(ratios))
    assert abs(np.mean(ratios) - 1.0) < 5 * se


def test_shared_and_copied_noise_fail():
    rng = np.random.default_rng(1)
    n, sigma, trials = 400, 0.7, 6
    sd = sigma**2 * math.sqrt(2 * n)
    one = _energies(rng, 1, n, sigma)
    shared = _records([np.repeat(one, trials) for _ in range(4)], sd)
    assert not _spread_verdict("s", "drawn", "d", shared).holds
    # near copies: every trial's noise is trial 0's times (1 + 1e-3 u)
    near = _records([one * (1 + 1e-3 * rng.uniform(size=trials)) for _ in range(4)], sd)
    assert not _spread_verdict("s", "drawn", "d", near).holds


def test_too_few_trials_give_no_verdict():
    recs = _records([np.array([1.0, 2.0])], 1.0)
    assert _spread_verdict("s", "drawn", "d", recs) is None
