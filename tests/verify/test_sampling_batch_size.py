"""The Poisson batch-size dispersion test of :func:`dpbounds.verify.sampling.sampling_verdicts`
(second adversary round, ``bench/adversary_results_2.md``: a fixed batch drawn and accounted as
Poisson). Oracles: transcripts built here with NumPy (Bernoulli membership / fixed subsets),
and the p-value's validity against a Monte Carlo of binomial draws."""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.verify.sampling import sampling_verdicts

N, B, T, TRIALS = 12, 3, 30, 3


def _transcript(fixed: bool, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    q = B / N
    idx = np.full((TRIALS, T, N), -1)
    for k in range(TRIALS):
        for t in range(T):
            if fixed:  # a uniform B-subset at every step
                members = rng.choice(N, size=B, replace=False)
            else:  # Poisson: each sample joins with probability q
                members = np.flatnonzero(rng.random(N) < q)
            idx[k, t, :members.size] = np.sort(members)
    return dict(indices=idx, n=N, batch_size=B, steps=T, trials=TRIALS, sampling="poisson",
                sampling_rate=q)


def _size_row(verdicts: list) -> object:
    rows = [v for v in verdicts if "per-step batch sizes" in v.case]
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize("seed", range(5))
def test_poisson_batches_pass_fixed_size_fails(seed: int) -> None:
    ok = sampling_verdicts(_transcript(False, seed))
    assert all(v.holds for v in ok)
    assert _size_row(ok).measured > 1e-3  # a lower-tail p nowhere near the level
    bad = _size_row(sampling_verdicts(_transcript(True, seed)))  # negative control
    assert not bad.holds and bad.measured < 1e-6


def test_size_p_value_is_valid_by_monte_carlo() -> None:
    """The union-bound p-value of the modal size is conservative: under Poisson sizes
    (binomial draws here, not the module's code) P[p < a] <= a, checked at a = 0.05 and 0.2
    with a 4-sigma Monte Carlo margin, at a small n where discreteness matters most."""
    from dpbounds.verify.sampling import _modal_size

    rng = np.random.default_rng(1)
    n, q, steps, reps = 4, 0.5, 15, 2000
    p = np.array([_modal_size(rng.binomial(n, q, size=steps), n, q)[2] for _ in range(reps)])
    for a in (0.05, 0.2):
        assert np.mean(p < a) <= a + 4 * np.sqrt(a * (1 - a) / reps)
    assert _modal_size(np.full(steps, 2), n, q)[2] < 1e-6  # a fixed size: all at one value
