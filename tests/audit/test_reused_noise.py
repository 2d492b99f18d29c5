"""The reused-noise mutant (noise drawn once, added at every step) and the step-increment
statistic that sees it.

Oracles: (1) exact: under the mutant every step's draw is the first one (bit for bit), with
the right scale, and the real algorithm's draws are not; (2) exact: on the default
one-record pair the mutant's released transcript is one release repeated (all columns
equal), so it is mu_claim / sqrt(T)-GDP there and no sound auditor can refute it on that
pair (why the mutant brings its own pair); (3) the ledger's claim: on the mutant's pair (the
differing record absent from some steps) the audit refutes it on three seeds, while the
real algorithm in the same pair is consistent (negative control), and the linear statistic
alone misses it on DP-SGD (the statistic matters: a control that must fail).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.audit import AUDITS, audit
from dpbounds.audit.mutation import get_mutant, reused_noise
from dpbounds.audit.runner import run_sets
from dpbounds.audit.statistics import fit_scorers, held_out_bound
from dpbounds.backend import TrialRandom
from dpbounds.privacy import Neighbouring

_R, _A = Neighbouring.REPLACE_ONE, Neighbouring.ADD_REMOVE

RUNS = 1000  # per data set: a perfect separation certifies 4.85 > 3 with 500 held out


def test_reused_noise_repeats_the_first_draw_with_its_scale():
    with reused_noise():
        r = TrialRandom(0, 3)
        a, b = r.normal((2,), scale=1.0), r.normal((2,), scale=2.0)
        c = r.normal_steps(4, (2,), scale=3.0)
        la, lb = r.laplace((2,), scale=1.0), r.laplace((2,), scale=0.5)
    np.testing.assert_array_equal(b, 2.0 * a)
    np.testing.assert_array_equal(lb, 0.5 * la)
    assert c.shape == (3, 4, 2)
    np.testing.assert_array_equal(c, np.repeat(c[:, :1], 4, axis=1))
    # outside the block the draws are independent again (the patch is undone)
    r = TrialRandom(0, 3)
    a2, b2 = r.normal((2,)), r.normal((2,))
    np.testing.assert_array_equal(a2, a)  # the first draw is the stream's own
    assert not np.allclose(b2, a2)


def test_on_the_default_pair_the_mutant_repeats_one_release():
    # one record in every step: a constant signal, so the transcript is (s + z) * (1, ..., 1)
    spec = AUDITS["dp_sgd"]
    setting = spec.build(_R, 3.0, 0.05)
    mut = get_mutant("reused_noise", spec, _R, setting)
    (f,), _, _ = run_sets(spec, setting, 50, seed=0, sets=((0, 0),), function=mut.function)
    assert f.shape == (50, 5)
    np.testing.assert_allclose(f, np.repeat(f[:, :1], 5, axis=1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name,relation,runs", [
    ("dp_sgd", _R, RUNS), ("dp_nsgd", _R, RUNS),
    ("tree_momentum_nsgd_T3", _R, RUNS), ("tree_momentum_nsgd_T8", _R, RUNS),
    # Poisson at q = 1/2: D' shows both signs in only ~56 % of runs (4.77-4.85 at 2,000 on
    # seeds 0-2, measured; one seed here: its PLD calibration dominates the test's time)
    ("dp_sgd", _A, 2 * RUNS)])
def test_reused_noise_is_caught_on_three_seeds(name, relation, runs):
    for seed in (0, 1, 2) if relation == _R else (1,):
        bad = audit(name, relation, trials=runs, seed=seed, mutant="reused_noise", null=False)
        assert bad.violation and bad.claimed_epsilon == pytest.approx(3.0, rel=1e-5), bad


@pytest.mark.parametrize("name,relation", [("dp_sgd", _R),
                                           ("tree_momentum_nsgd_T3", _R),
                                           ("dp_sgd", _A)])
def test_the_real_algorithm_in_the_mutants_pair_is_consistent(name, relation):
    spec = AUDITS[name]
    setting = get_mutant("reused_noise", spec, relation,
                         spec.build(relation, 4.885, 0.05)).new_setting
    (f_d, f_p), claimed, delta = run_sets(spec, setting, 4 * RUNS, seed=0)
    r = held_out_bound(f_d, f_p, delta, 0.95, setting.scorers)
    assert 0.0 <= r.bound.lower <= claimed, (r.name, r.bound)


def test_increments_statistic_sees_what_the_linear_one_misses():
    spec = AUDITS["dp_sgd"]
    mut = get_mutant("reused_noise", spec, _R, spec.build(_R, 3.0, 0.05))
    (f_d, f_p), claimed, delta = run_sets(spec, mut.new_setting, RUNS, seed=1,
                                          function=mut.function)
    half = RUNS // 2
    lowers = {}
    for name in ("linear", "increments"):
        score = fit_scorers(f_d[:half], f_p[:half], (name,))[name]
        lowers[name] = held_out_bound(f_d, f_p, delta, 0.95, scorer=(name, score)).bound.lower
    # the record's sign flips the step profile, not its mean: a linear test sees ~nothing
    assert lowers["linear"] < 1.0 < claimed < lowers["increments"], lowers


def test_increments_of_a_single_feature_score_zero():
    score = fit_scorers(np.ones((4, 1)), np.zeros((4, 1)), ("increments",))["increments"]
    np.testing.assert_array_equal(score(np.ones((3, 1))), np.zeros(3))


def test_reused_noise_candidate_set_holds_its_level_under_the_null():
    # the whole estimator of the mutant's audit (best of linear, gaussian-lr, increments,
    # chosen on the selection half) on 200 null pairs: false positives at most alpha
    from dpbounds.audit.statistics import false_positive_rate

    rng = np.random.default_rng(22)
    lowers = []
    for i in range(200):
        draw = (rng.normal, rng.laplace)[i % 2]
        f_d, f_p = draw(size=(300, 5)), draw(size=(300, 5))
        lowers.append(held_out_bound(f_d, f_p, 0.05, 0.95,
                                     ("linear", "gaussian-lr", "increments")).bound.lower)
    rate, _, high = false_positive_rate(np.array(lowers))
    assert rate <= 0.05 and high <= 0.05, (rate, high)
