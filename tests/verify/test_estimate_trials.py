"""The cost model of the strongly convex studies (stop 65): what a probe runs, what a point's
plan counts, and the analysis after the runs.

Before, their full studies were priced at 0.2-50x their runs: the probes ran 16 trials
where the points run 1,500-3,000, and the plans counted N sample gradients per step where
the quadratic's full gradient ``Qx - b`` reads none of the N records. And the bootstrap
after the runs (0.3 of ``strongly_convex.nag --vary N``'s 0.5 CPU-s) was not estimated.
Oracles: the objective itself (its full gradient with every record replaced by NaN), the
rule of :func:`~dpbounds.verify.regimes.probe_trials` written out, the arguments the probe
fit is called with, and a closed-form rate for the analysis.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.verify import regimes, scaling_study
from dpbounds.verify.problems import problem
from dpbounds.verify.theorems import get_study

_STRONGLY_CONVEX = {"strongly_convex.heavy_ball": 1, "strongly_convex.nag": 2,
                    "strongly_convex.masg": 2}


def test_the_quadratics_full_gradient_reads_no_record() -> None:
    # the oracle of the plans below: with every record's offset NaN, the full gradient of
    # the quadratic is unchanged (a gradient over the records would be NaN)
    inst = problem("quadratic").build(200, 6, seed=0)
    f = inst.objective
    x = np.tile(np.asarray(inst.x0, dtype=float).ravel(), (3, 1))
    g = np.asarray(f._full_grad(x), dtype=float)
    f._e = np.full_like(np.asarray(f._e, dtype=float), np.nan)
    np.testing.assert_array_equal(np.asarray(f._full_grad(x), dtype=float), g)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("theorem", sorted(_STRONGLY_CONVEX))
@pytest.mark.parametrize("n", [100, 3000])
def test_a_strongly_convex_plan_counts_one_gradient_per_step_and_trial(theorem: str,
                                                                     n: int) -> None:
    study = get_study(theorem)
    spec = problem("quadratic")
    point = dict(study.fixed, N=n, d=4)
    inst = spec.build(n, 4, seed=0)
    trials = 7
    pl = study.plan_point(point, inst, trials)
    runs = _STRONGLY_CONVEX[theorem]  # nag and masg run both allocations
    assert pl["gradient_evaluations"] == pl["steps"] * trials * runs  # whatever N is


@pytest.mark.parametrize("theorem,trials,expected", [
    ("strongly_convex.nag", 2, 2), ("strongly_convex.nag", 999, 999),
    ("strongly_convex.masg", 3000, 3000), ("strongly_convex.heavy_ball", 10_000, 4096),
    ("nonconvex.clipped_sgd", 16, 16), ("nonconvex.clipped_sgd", 2000, 16),
    ("tran_cutkosky.alg1", 150, 16), ("tran_cutkosky.alg1", 4, 4)])
def test_probe_trials(theorem: str, trials: int, expected: int) -> None:
    # declared per study: the strongly convex studies 4,096 at most, every other 16
    assert regimes.probe_trials(get_study(theorem), trials) == expected


def _probed_trials(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []

    def fake_fit(study, spec, point, trials, largest=None, stopped=None, sizes=None,
                 target=None):
        seen.append(int(trials))
        if stopped is not None:
            stopped.append("largest")
        return (1e-6, 1e-9, 0.01)
    monkeypatch.setattr(regimes, "_probe_fit", fake_fit)
    return seen


def _plan_of(theorem: str, **kw) -> dict:
    out: dict = {}

    class Stop(Exception):
        pass

    def on_plan(reg):
        out.update(reg)
        raise Stop
    with pytest.raises(Stop):
        scaling_study(theorem, estimate=True, on_plan=on_plan, progress=False, **kw)
    return out


def test_a_strongly_convex_study_is_probed_at_its_own_trials(monkeypatch) -> None:
    seen = _probed_trials(monkeypatch)
    _plan_of("strongly_convex.nag", vary={"eps": None})  # 3,000 trials
    assert seen and set(seen) == {3000}
    seen.clear()
    _plan_of("strongly_convex.nag", quick=True)  # the estimate's path: 1,500 trials
    assert seen and set(seen) == {1500}


def test_a_study_of_few_trials_is_probed_at_16_at_most(monkeypatch) -> None:
    seen = _probed_trials(monkeypatch)
    _plan_of("tran_cutkosky.alg1", quick=True)  # 150 trials
    assert seen and set(seen) == {16}
    seen.clear()
    # a user's many trials of a study that does not declare more (an independent review:
    # probed at 2,000 trials, clipped_sgd planned in 8.4 CPU-s where 16-trial probes take 2.3)
    _plan_of("nonconvex.clipped_sgd", quick=True, trials=2000)
    assert seen and set(seen) == {16}


def _analysis_oracle(theorem: str, reg: dict, rate: float, replicates: int) -> float:
    study = get_study(theorem)
    return rate * replicates * len(reg["values"]) * reg["trials"] * len(study.components)


def test_the_estimate_counts_the_bootstrap_after_the_runs(monkeypatch) -> None:
    _probed_trials(monkeypatch)
    rate = 3.25e-9
    monkeypatch.setattr(regimes, "_bootstrap_seconds", lambda trials: rate)
    # the estimate's path (a quick study): its trials are the study's quick count
    reg = _plan_of("strongly_convex.nag", quick=True, replicates=400)
    study = get_study("strongly_convex.nag")
    after = rate * 400 * len(reg["estimated_seconds"]) * study.trials[1] \
        * len(study.components)
    assert reg["estimated_analysis_seconds"] == pytest.approx(after, rel=1e-12)
    assert reg["estimated_total_seconds"] == pytest.approx(
        math.fsum(reg["estimated_seconds"]) + after, rel=1e-12)
    # a planned grid, and one whose trials the budget lowered (3,000 -> 8): the analysis of
    # the points and trials that run
    def dearer_fit(study, spec, point, trials, largest=None, stopped=None, sizes=None,
                 target=None):
        if stopped is not None:
            stopped.append("largest")
        return (1e-6, 1e-6, 0.01)
    monkeypatch.setattr(regimes, "_probe_fit", dearer_fit)
    for budget, trials in ((900.0, 3000), (0.05, 8)):
        reg = _plan_of("strongly_convex.nag", vary={"N": None}, replicates=300,
                       max_seconds=budget)
        assert reg["name"] == "informative" and reg["trials"] == trials
        after = _analysis_oracle("strongly_convex.nag", reg, rate, 300)
        assert reg["estimated_analysis_seconds"] == pytest.approx(after, rel=1e-12)
        assert reg["estimated_total_seconds"] == pytest.approx(
            math.fsum(reg["estimated_seconds"]) + after, rel=1e-12)


def test_the_bootstrap_rate_prices_a_larger_bootstrap() -> None:
    # oracle: a bootstrap 20x the timed one's values, timed here (a factor 4 either way:
    # the rate is a timing on a possibly loaded host; a rate per call, not per value,
    # is off by 1e5)
    import time

    from dpbounds.verify.statistics import bootstrap_slope

    regimes._bootstrap_seconds.cache_clear()
    rate = regimes._bootstrap_seconds(1000)
    rng = np.random.default_rng(1)
    samples = [rng.uniform(1.0, 2.0, 1000) for _ in range(4)]
    bootstrap_slope([1, 2, 4, 8], samples, replicates=50)
    best = math.inf
    for _ in range(3):
        t0 = time.process_time()
        bootstrap_slope([1, 2, 4, 8], samples, replicates=2000)
        best = min(best, time.process_time() - t0)
    assert 0.25 <= rate * 2000 * 4 * 1000 / best <= 4.0


def test_the_bootstrap_rate_is_a_positive_time_per_resampled_value() -> None:
    regimes._bootstrap_seconds.cache_clear()
    rate = regimes._bootstrap_seconds(200)
    # a resampled value costs nanoseconds, not the whole call over one value
    assert 1e-12 <= rate < 1e-6


def test_the_bootstrap_rate_is_remembered_per_study(monkeypatch) -> None:
    from dpbounds.verify.costs import CostMemo

    study, spec = get_study("strongly_convex.nag"), problem("quadratic")
    memo = CostMemo()
    with regimes.remembering(memo):
        first = regimes.bootstrap_seconds(study, spec, 3000)
    assert memo.changed and memo.misses == 1 and len(memo.entries) == 1

    def timed_again(trials: int) -> float:
        raise AssertionError("timed again: the remembered rate was not read")
    monkeypatch.setattr(regimes, "_bootstrap_seconds", timed_again)
    memo.reset_counts()
    with regimes.remembering(memo):
        assert regimes.bootstrap_seconds(study, spec, 3000) == first
    assert memo.hits == 1 and memo.misses == 0
    for other in ((get_study("strongly_convex.masg"), 3000), (study, 1500)):
        with regimes.remembering(memo), pytest.raises(AssertionError, match="timed again"):
            regimes.bootstrap_seconds(other[0], spec, other[1])  # its own key
    # a remembered rate that is no rate (0, negative) is timed again
    for key in memo.entries:
        memo.entries[key]["value"] = 0.0
    with regimes.remembering(memo), pytest.raises(AssertionError, match="timed again"):
        regimes.bootstrap_seconds(study, spec, 3000)
