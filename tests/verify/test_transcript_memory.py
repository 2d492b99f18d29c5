"""The verify plans' memory estimate against what a run and its checks hold (issue 36,
"nothing that eats memory"; stop 60): Yang et al.'s studies record a transcript of every step
and trial, which their checks read, sort and test. Oracle: ``tracemalloc``'s peak over the
whole point (the run, the transcript and every check), measured here."""

from __future__ import annotations

import tracemalloc

import pytest

from dpbounds.verify.problems import problem
from dpbounds.verify.studies._common import _plan
from dpbounds.verify.study import get_study


@pytest.mark.parametrize(("theorem", "over", "trials"), [
    ("nonconvex.normalized_sgd", {"T": 20000, "N": 200}, 4),
    ("nonconvex.clipped_sgd", {"T": 20000, "N": 200, "B": 8}, 4),
    ("nonconvex.normalized_sgd", {"T": 20000, "N": 200}, 16),
    ("nonconvex.tree_momentum_nsgd", {"N": 4000, "d": 2}, 2),  # T from N: a tree of nodes
    ("nonconvex.normalized_sgd", {"T": 1000, "N": 20000, "d": 32}, 4),  # the trace: N d
])
def test_the_plan_bounds_what_a_point_holds(theorem: str, over: dict, trials: int) -> None:
    """The dry plan's ``memory_bytes`` bounds the traced peak of the point, and is not loose
    by more than 2x (measured 0.58-0.89: the plan's per step-trial term counts the checks'
    copies at their largest). Control: the plan without its transcript term is below the
    peak (the transcript and its checks are most of it)."""
    s = get_study(theorem)
    point = dict(s.fixed, **over)
    kind = problem(s.problems[0])
    inst = kind.build(int(point["N"]), int(point["d"]), seed=0)
    if "T" in point:  # compiled, imported: not counted
        s.run_point(dict(point, T=200), inst, trials, 0, None)
    else:
        s.run_point(dict(point, N=100), kind.build(100, int(point["d"]), seed=0), trials, 0,
                    None)
    plan = s.plan_point(point, inst, trials)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        s.run_point(point, inst, trials, 0, None)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    est = float(plan["memory_bytes"])
    assert 0.5 * est <= peak <= est, (peak, est)
    T = int(plan["steps"])
    bare = _plan(1.0, 1.0, 1.0, T, T, trials, point, block=T)["memory_bytes"]
    assert bare < peak, (bare, peak)
