"""Independent pure-DP re-accounting of the Laplace momentum methods from their transcripts
(issue 34 item 2): closed form and the run's own ledger as oracles, a brute-force check of the
recorded L1 spreads, and a shared-helper mutant that halves every scale as negative control."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import dp_gd, dp_heavy_ball
from dpbounds.algorithms._transcript import Transcript
from dpbounds.objectives import LogisticRegression
from dpbounds.verify.mutants import mutated
from dpbounds.verify.reaccount import reaccount

# the problem (``objective``) and the four Laplace runs (``laplace_run``) are in conftest.py


def test_full_batch_closed_form(objective: LogisticRegression) -> None:
    """Oracle: the full-batch Laplace DP-GD with uniform budgets has b = S_1 T/(n eps), so
    eps = sum_t S_1/(n b) = eps exactly (Kuru (12)); the transcript records b and S_1/2."""
    f, T = objective, 30
    tr = Transcript()
    r = dp_gd(f, epsilon=0.8, steps=T, trials=2, seed=3, transcript=tr)
    d = tr.as_dict()
    b = d["release_std"]
    assert b == pytest.approx(np.full(T, f.l1_sensitivity * T / (f.n * 0.8)), rel=1e-12)
    ra = reaccount(d, epsilon=0.8, delta=1e-5)
    assert ra.epsilon == pytest.approx(float(np.sum(f.l1_sensitivity / (f.n * b))), rel=1e-12)
    assert ra.epsilon == pytest.approx(0.8, rel=1e-9) and ra.holds
    assert ra.delta == 0.0 and ra.accountant == "pure" and r.ledger.epsilon <= 0.8


def test_correct_runs_agree_with_their_ledger(objective: LogisticRegression, laplace_run) -> None:
    """Second method: the run's own ledger (dpbounds.privacy's pure-DP accountant) and the
    re-accounting agree to 1e-9 at the declared bound; the realised L1 spreads stay within
    S_1/2, the sampling tests hold, on unseen seeds."""
    alg, kw = laplace_run
    for seed in (7, 8):
        tr = Transcript()
        r = alg(objective, epsilon=1.0, steps=40, trials=2, seed=seed, transcript=tr, **kw)
        ra = reaccount(tr.as_dict(), epsilon=1.0, delta=1e-5)
        assert ra.holds, [v.case for v in ra.verdicts if not v.holds]
        assert ra.epsilon == pytest.approx(r.ledger.epsilon, rel=1e-9)
        assert ra.epsilon_realised < ra.epsilon


def test_recorded_spread_against_all_pairs(objective: LogisticRegression) -> None:
    """Oracle: the largest L1 distance over *all* pairs of the first batch's per-sample
    gradients at the start point, by brute force: the recorded 2 M_0 (distance to the
    batch's first sample) lies between half of it and it (triangle inequality), below S_1."""
    f = objective
    x0 = np.full(5, 0.3)
    tr = Transcript()
    dp_heavy_ball(f, epsilon=1.0, steps=2, batch_size=12, trials=1, seed=0, transcript=tr,
                  x0=x0)
    d = tr.as_dict()
    g = np.asarray(f.sample_grads(x0[None, :], d["indices"][:, 0]))[0]
    pair = max(float(np.abs(a - b).sum()) for a in g for b in g)
    m0 = 2.0 * d["max_norm"][0, 0]
    assert pair / 2 - 1e-12 <= m0 <= pair + 1e-12 and pair <= f.l1_sensitivity


def test_half_sensitivity_mutant_fails(objective: LogisticRegression, laplace_run) -> None:
    """Negative control: the shared helper reading the mean's L1 sensitivity as S_1/(2m)
    halves every scale while the run's ledger still reports eps <= 1 (+ rounding); the
    independent re-accounting reports about twice the claim and fails."""
    alg, kw = laplace_run
    tr = Transcript()
    with mutated("laplace_half_sensitivity", alg.__name__):
        r = alg(objective, epsilon=1.0, steps=40, trials=2, seed=0, transcript=tr, **kw)
    ra = reaccount(tr.as_dict(), epsilon=1.0, delta=1e-5)
    assert r.ledger.epsilon <= 1.0 + 1e-9
    assert ra.failed and ra.epsilon > 1.9
    assert math.isfinite(ra.epsilon)


def test_laplace_transcript_refuses_what_it_cannot_account(objective: LogisticRegression
                                                            ) -> None:
    """Bad input: a Laplace transcript under add/remove is a ValueError naming the parameter
    (grid runs are recorded and re-accounted: tests/verify/test_drawn_grid_noise.py)."""
    tr = Transcript()
    dp_gd(objective, epsilon=1.0, steps=3, seed=0, transcript=tr)
    with pytest.raises(ValueError, match="relation"):
        reaccount(tr.as_dict(), epsilon=1.0, delta=1e-5, relation="add_remove")
