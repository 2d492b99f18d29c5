"""A planned grid's memory estimate covers the cost probes that ran before it.

The probes of a full study run before any grid point and are capped at
``regimes.PROBE_MAX_BYTES`` of planned arrays (``tests/verify/test_cost_probe.py``); the
estimate ``--max-memory-gb`` is compared with is the larger of that and the grid's largest
point, plus the first run's constant. Measured before: ``yang.nsgd --vary N`` at a 120 s
budget peaked 174 MiB above its imports against an 85 MiB estimate (its probes reached
T = 204,800 steps); bench/bench_plan_memory.md."""

from __future__ import annotations

from dpbounds.verify import regimes, study
from dpbounds.verify.theorems import get_study


def _estimate(regime: dict) -> float:
    s = get_study("strongly_convex.heavy_ball")
    spec = study.problem(s.problems[0]) if isinstance(s.problems[0], str) else s.problems[0]
    point = dict(s.fixed, **s.quick_fixed)
    study._check_memory(s, spec, [point], 4, 2.0**40, False, regime)
    return regime["estimated_memory_bytes"]


def test_a_planned_grid_counts_its_probes_and_a_given_grid_does_not() -> None:
    grid_only = _estimate({})
    planned = _estimate({"probe_memory_bytes": regimes.PROBE_MAX_BYTES})
    # the quick heavy-ball point holds well under the cap: the cap decides
    assert grid_only < regimes.PROBE_MAX_BYTES + study.FIRST_RUN_BYTES
    assert planned == regimes.PROBE_MAX_BYTES + study.FIRST_RUN_BYTES


def test_both_planned_outcomes_carry_the_probes(monkeypatch) -> None:
    """The planner's answer (a grid, or the default grid as a fallback) records the probes;
    a quick study's default grid, which probes no further than its points, does not."""
    s = get_study("strongly_convex.heavy_ball")
    spec = study.problem(s.problems[0]) if isinstance(s.problems[0], str) else s.problems[0]
    monkeypatch.setattr(regimes, "seconds_per_evaluation", lambda *a, **k: (1e-6, 1e-9))
    monkeypatch.setattr(regimes, "plan_grid", lambda *a, **k: None)  # no informative grid
    args = (s, spec, "N", (100.0, 200.0), False, dict(s.fixed), 4)
    fallback, _, _ = study._choose_grid(*args, False, "auto", 900.0, False, ())
    assert fallback["fallback"] and fallback["probe_memory_bytes"] == regimes.PROBE_MAX_BYTES
    quick, _, _ = study._choose_grid(*args, True, "auto", 900.0, False, ())
    assert "probe_memory_bytes" not in quick
