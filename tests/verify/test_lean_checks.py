"""The re-accounting's checks in blocks: the same floats as all at once.

A full Yang et al. study (10^6 steps, 8 trials) held (trials, T) temporaries of 64 MB each in
the drawn-noise Kolmogorov-Smirnov test (scipy's, about five at once) and in the re-accounted
noise multiplier's minimum (three), and peaked above its memory plan
(bench/bench_plan_memory.md). Both now run in blocks; the oracles here are scipy's
``kstest`` itself and the minimum written out over the whole array."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbounds.algorithms import dp_sgd
from dpbounds.algorithms._transcript import Transcript
from dpbounds.verify import drawn_noise, reaccount
from dpbounds.verify.problems import problem


@pytest.mark.parametrize("n", [1, 7, 64, 65, 1000, 4099])
@pytest.mark.parametrize("shift", [0.0, 0.3, -0.3])
def test_ks_pvalue_is_scipys_to_the_bit(monkeypatch, n, shift):
    monkeypatch.setattr(drawn_noise, "_KS_BLOCK", 64)  # many blocks, a partial last one
    law = stats.gamma(4.0, scale=0.5)
    u = law.rvs(size=n, random_state=np.random.default_rng(n)) * math.exp(shift)
    expected = stats.kstest(u, law.cdf).pvalue  # shift > 0: D- decides, < 0: D+
    assert drawn_noise._ks_pvalue(u.copy(), law.cdf) == expected


def test_ks_pvalue_sees_a_wrong_law():
    """Control: a 10% larger scale on 4099 draws is rejected, the right one is not."""
    law = stats.gamma(4.0, scale=0.5)
    u = law.rvs(size=4099, random_state=np.random.default_rng(0))
    assert drawn_noise._ks_pvalue(u * 1.1, law.cdf) < 1e-3 < drawn_noise._ks_pvalue(u, law.cdf)


def _transcript() -> dict:
    inst = problem("huber_well").build(50, 3, seed=0)
    tr = Transcript()
    dp_sgd(inst.objective, epsilon=1.0, delta=1e-5, steps=300, batch_size=5,
           clip_threshold=0.5, step_size=0.1, trials=3, seed=0, x0=inst.x0, transcript=tr)
    return tr.as_dict()


@pytest.mark.parametrize("where", [0, 150, 299])
def test_noise_multiplier_minimum_in_blocks_is_the_whole_arrays(monkeypatch, where):
    """The smallest std / sensitivity over (trials, T), the largest norm put in the first,
    a middle or the last (partial) block of 7 steps: the z of ``_account`` is the minimum
    over the whole array written out here."""
    tr = _transcript()
    monkeypatch.setattr(reaccount, "_STEP_BLOCK", 7)
    norms = np.random.default_rng(1).uniform(0.1, 0.5, size=(3, 300))
    norms[1, where] = 0.9
    # each step releases the mean of a batch of 5: every contribution is weighted 1/5 (the
    # run's definition, not read back through the module's own helper)
    w = np.full(300, 1.0 / 5.0)
    std = np.asarray(tr["release_std"], dtype=float)
    exact = float(np.min(std[None, :] / (2.0 * w[None, :] * norms)))
    _, _, z, _ = reaccount._account(tr, "replace_one", norms, 1e-5, "rdp", 3)
    assert z == exact
    # control: without the block holding the largest norm the minimum is another
    assert float(np.min(np.delete(std[None, :] / (2.0 * w[None, :] * norms), where, 1))) > z


def test_a_nan_cdf_value_gives_a_nan_p_as_scipys(monkeypatch):
    """Independent review: a NaN inside one block was dropped by Python's max (p = 1.0 where
    scipy says NaN); a NaN p fails the law row."""
    monkeypatch.setattr(drawn_noise, "_KS_BLOCK", 2)
    law = stats.gamma(3.0, scale=2.0)
    u = np.array([1.0, np.nan, 2.0, 3.0, 50.0])
    assert math.isnan(stats.kstest(u, law.cdf).pvalue)
    assert math.isnan(drawn_noise._ks_pvalue(u.copy(), law.cdf))


def test_a_nan_release_std_at_a_contribution_certifies_nothing(monkeypatch):
    """Independent review: a NaN recorded noise made the minimum NaN and the re-accounting
    read "no contribution", eps = 0 (before the blocks too), or, in blocks, skipped its block
    and its worst step. Now the epsilon is inf whatever the block."""
    tr = _transcript()
    tr["release_std"] = np.asarray(tr["release_std"], dtype=float).copy()
    tr["release_std"][150] = np.nan
    norms = np.full((3, 300), 0.3)
    norms[0, 151] = 5.0
    for block in (7, 1 << 16):
        monkeypatch.setattr(reaccount, "_STEP_BLOCK", block)
        eps, _, z, how = reaccount._account(tr, "replace_one", norms, 1e-5, "rdp", 3)
        assert eps == math.inf and math.isnan(z) and "NaN" in how
