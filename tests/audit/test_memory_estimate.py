"""``audit``'s memory estimate (what ``--max-memory-gb`` is compared with, and what ``audit
plan`` prints per row) against the memory an audit allocates, measured by ``tracemalloc``
(NumPy reports its arrays to it): the per-run part of the estimate must cover what more runs
hold, and not by more than 4x (an estimate far above would refuse audits that fit).
``bench/bench_audit_memory.py`` compares the whole estimate with child processes' peak
resident sets (0.62-0.70 of it, up to 200,000 runs per set)."""

from __future__ import annotations

import tracemalloc

import pytest

from dpbounds.audit import audit
from dpbounds.audit.runner import memory_estimate


def _peak(trials: int) -> tuple[float, int, float]:
    tracemalloc.start()
    try:
        res = audit("dp_gd_gaussian_d4", trials=trials, seed=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return float(peak), res.features, res.estimated_memory_bytes


@pytest.mark.slow
def test_the_per_run_estimate_covers_what_more_runs_hold_and_not_4x_more() -> None:
    small, k, est_small = _peak(4000)
    large, k_large, est_large = _peak(20000)
    assert k == k_large == 20
    assert est_small == memory_estimate(4000, k, 3) and est_large == memory_estimate(20000, k, 3)
    grew, estimated = large - small, est_large - est_small
    assert 0.25 * estimated <= grew <= estimated, (grew, estimated)


def test_the_plan_prints_the_audits_estimate_per_row() -> None:
    from dpbounds.audit.planner import Plan, PlanRow
    from dpbounds.privacy import Neighbouring

    row = PlanRow("e", "m", 1.0, 1e5, 3.0, memory_estimate(100000, 5, 3))
    assert f"{memory_estimate(100000, 5, 3) / 2**30:,.2f} GiB" in str(
        Plan("a", Neighbouring.REPLACE_ONE, "", 1.0, 0.0, 1.0, 0.95, _Pilot(), (row,)))
    assert PlanRow("e", "m", 1.0, float("inf"), float("inf")).to_dict()["memory_bytes"] is None


class _Pilot:
    trials, epsilon_lower, mu_hat, cpu_seconds = 10, 0.5, 1.0, 0.1

    def to_dict(self) -> dict:
        return {}
