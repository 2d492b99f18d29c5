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
                                                      (64, 7, 3, 4)])
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
    assert other == [(1, d)] or (trials == 1 and not other), other
    # negative control: the records without the starting iterate's miss the count
    every = max(1, T // 100)
    assert (T // every) * trials * n != sum(rows)


def test_the_planners_seconds_are_the_models_terms():
    """``_costed``'s seconds = fixed + a steps + b evaluations + trace samples x the timed
    seconds per sample, for a plan with a trace; without one, no trace term."""
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    base = dict(s.fixed, N=20000, T=100000, eps=1.0)
    cost = (2e-6, 3e-7, 0.25)
    plan = regimes._costed(s, spec, "d", base, (2.0, 8.0), 16, cost, "x", "", {})
    for d, secs in zip((2, 8), plan.seconds, strict=True):
        dry = regimes.dry_plan(s, spec, dict(base, d=d), 16)
        per = regimes.trace_seconds(spec, d, 16)
        assert per > 0 and dry["trace_samples"] == 101 * 16 * 20000
        want = 0.25 + 2e-6 * dry["steps"] + 3e-7 * dry["gradient_evaluations"] \
            + dry["trace_samples"] * per
        assert secs == pytest.approx(want, rel=1e-12)
    assert plan.extra["trace_seconds_per_sample"] == regimes.trace_seconds(spec, 2, 16)
    # a plan without a trace count (the strongly convex studies'): no trace term
    nag = get_study("strongly_convex.nag")
    nspec = problem(nag.problems[0])
    nb = dict(nag.fixed, N=50)
    p2 = regimes._costed(nag, nspec, "d", nb, (2.0,), 4, cost, "x", "", {})
    dry2 = regimes.dry_plan(nag, nspec, dict(nb, d=2), 4)
    assert "trace_samples" not in dry2
    assert p2.seconds[0] == pytest.approx(
        0.25 + 2e-6 * dry2["steps"] + 3e-7 * dry2["gradient_evaluations"], rel=1e-12)
