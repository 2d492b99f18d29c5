"""The planner prices a run's trace: the full-sample gradient norms it records.

Yang et al.'s runs record ~101 iterates per trial, each the gradient norm over all N samples;
the cost probes run at N = 32, where that costs nothing, so a grid at N = 5623-56230 was priced
at ~0.4 of what its runs cost (bench/bench_verify_estimate.md). A plan now says how many
sample gradients its trace evaluates (``trace_samples``) and the planner times them.

Oracles: the count of full-sample gradient rows a real run evaluates (the objective's
``grad_norm`` wrapped; exact, two-sided), with a negative control (the count without the
starting iterate's record must differ); the planner's seconds against the cost model's terms
written out here."""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.verify import regimes
from dpbounds.verify.study import problem
from dpbounds.verify.theorems import get_study


@pytest.mark.parametrize("theorem", ["nonconvex.clipped_sgd", "nonconvex.normalized_sgd"])
@pytest.mark.parametrize(("n", "T", "d", "trials"), [(300, 250, 4, 3), (120, 1000, 2, 2),
                                                      (64, 7, 3, 4), (50, 1001, 2, 2),
                                                      (40, 1234, 3, 2)])
def test_trace_samples_are_the_runs_full_sample_gradients(theorem, n, T, d, trials):
    s = get_study(theorem)
    spec = problem(s.problems[0])
    pt = dict(s.fixed, N=n, T=T, d=d, eps=1.0)
    inst = spec.build(n, d, seed=0)
    plan = s.plan_point(pt, inst, trials)
    rows: list[int] = []
    other: list[tuple[int, ...]] = []
    obj = inst.objective
    real = obj.grad_norm

    def counting(x):
        x = np.asarray(x)
        if x.ndim == 2 and x.shape[0] == trials:
            rows.append(x.shape[0] * obj.n)
        else:
            other.append(x.shape)
        return real(x)

    obj.grad_norm = counting  # the instance's own objective, this run only
    s.run_point(pt, inst, trials, 0, None)
    assert plan["trace_samples"] == sum(rows), (plan["trace_samples"], sum(rows))
    # besides the trace: only the do-nothing value, ||grad F(x_0)|| at one state
    assert other == [(1, d)], other
    # negative controls: the records without the starting iterate's, or (T not a multiple
    # of the spacing) without the last iterate's, miss the count
    every = max(1, T // 100)
    assert -(-T // every) * trials * n != sum(rows)
    if T % every:
        assert (T // every + 1) * trials * n != sum(rows)


def test_the_planners_seconds_are_the_models_terms():
    """``_costed``'s seconds = fixed + a steps + b evaluations + trace samples x the timed
    seconds per sample, for a plan with a trace; without one, no trace term."""
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    base = dict(s.fixed, N=20000, T=100000, eps=1.0)
    cost = (2e-6, 3e-7, 0.25)
    scale = {2: (1.0, 1.0), 8: (2.0, 3.0)}  # a cost factor of d (cost_over_d's), per term
    plan = regimes._costed(s, spec, "d", base, (2.0, 8.0), 16, cost, "x", "", {},
                           lambda p: scale[int(p["d"])])
    for d, secs in zip((2, 8), plan.seconds, strict=True):
        dry = regimes.dry_plan(s, spec, dict(base, d=d), 16)
        per = regimes.trace_seconds(spec, d, 16)
        assert per > 0 and dry["trace_samples"] == 101 * 16 * 20000
        fa, fb = scale[d]
        want = 0.25 + 2e-6 * fa * dry["steps"] + 3e-7 * fb * dry["gradient_evaluations"] \
            + dry["trace_samples"] * per
        assert secs == pytest.approx(want, rel=1e-12)
    assert plan.extra["trace_seconds_per_sample"] == [regimes.trace_seconds(spec, d, 16)
                                                      for d in (2, 8)]
    # a plan without a trace count (the strongly convex studies'): no trace term
    nag = get_study("strongly_convex.nag")
    nspec = problem(nag.problems[0])
    nb = dict(nag.fixed, N=50)
    p2 = regimes._costed(nag, nspec, "d", nb, (2.0,), 4, cost, "x", "", {})
    dry2 = regimes.dry_plan(nag, nspec, dict(nb, d=2), 4)
    assert "trace_samples" not in dry2
    assert p2.seconds[0] == pytest.approx(
        0.25 + 2e-6 * dry2["steps"] + 3e-7 * dry2["gradient_evaluations"], rel=1e-12)


class _ClockedObjective:
    """An objective whose full-sample gradient costs exactly 1e-9 s per sample and row on a
    fake clock (the oracle of ``trace_seconds``: nothing else advances it)."""

    def __init__(self, clock: list[float], n: int) -> None:
        self.clock, self.n, self.rows = clock, n, []

    def grad_norm(self, x):
        x = np.asarray(x)
        self.rows.append(x.shape[0])
        self.clock[0] += 1e-9 * x.shape[0] * self.n
        return np.zeros(x.shape[0])


def test_trace_seconds_is_seconds_per_sample_and_trial(monkeypatch):
    """On the fake clock: 1e-9 s per sample and trial for any trial count, timed on at most
    16 rows (a larger count is priced per trial, not run)."""
    import types

    clock = [0.0]
    built: list[_ClockedObjective] = []

    class Spec:
        def build(self, n, d, seed=0):
            obj = _ClockedObjective(clock, n)
            built.append(obj)
            return types.SimpleNamespace(objective=obj, x0=np.zeros(d))

    monkeypatch.setattr(regimes, "time", types.SimpleNamespace(process_time=lambda: clock[0]))
    regimes._trace_seconds.cache_clear()
    try:
        for trials in (1, 4, 16, 64):
            assert regimes.trace_seconds(Spec(), 8, trials) == pytest.approx(1e-9, rel=1e-9)
        assert all(r <= 16 for obj in built for r in obj.rows)
    finally:
        regimes._trace_seconds.cache_clear()


def test_the_estimate_prices_the_trace(monkeypatch):
    """``study._estimate`` (the default grid's estimate) uses the same terms: the probe fit's
    ``(a, b, c)`` and the trace samples at the timed seconds each."""
    from dpbounds.verify import study as study_mod

    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    monkeypatch.setattr(regimes, "_probe_fit", lambda *a, **k: (2e-6, 3e-7, 0.25))
    points = [dict(s.fixed, N=n, T=10000, d=4, eps=1.0) for n in (1000, 8000)]
    regime: dict = {}
    study_mod._estimate(s, spec, points, 16, regime)
    for pt, secs in zip(points, regime["estimated_seconds"], strict=True):
        dry = regimes.dry_plan(s, spec, pt, 16)
        want = 0.25 + 2e-6 * dry["steps"] + 3e-7 * dry["gradient_evaluations"] \
            + dry["trace_samples"] * regimes.trace_seconds(spec, 4, 16)
        assert dry["trace_samples"] > 0 and secs == pytest.approx(want, rel=1e-12)
