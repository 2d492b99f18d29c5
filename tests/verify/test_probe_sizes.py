"""The planner's cost probes grow no larger than the grid they price, and its scan of ``N``
plans no further than its answer needs.

Before: the probes grew until a run cost 0.3 CPU-s whatever the grid, so
``strongly_convex.nag --vary N`` probed up to ``N = 23,328`` for a grid up to ``N = 110``
(runs estimated at 0.04 CPU-s) and ``strongly_convex.masg --vary d`` spent 8.7 of its 9.8
CPU-s of planning growing ``cost_over_d``'s probe to ``N = 23,328`` for a grid at ``N = 500``;
and every lattice point up to ``N = 1e6`` was dry-planned before the first informative one
was picked. Oracles: the closed-form fake clock of ``test_cost_probe.py`` (redefined here),
the old scan written out below, counted calls."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.verify import regimes
from dpbounds.verify import study as study_mod

WARM, PER_STEP = 0.3, 2e-5


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fake(clock: _Clock, ran: list[dict]):
    """Closed form: a run costs ``WARM + PER_STEP * N * d / 8`` on the fake clock."""

    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(steps=float(point["N"]), gradient_evaluations=float(point["N"]) * trials)

    def run_point(point: dict, inst: object, trials: int, seed: object, mut: object) -> None:
        ran.append(dict(point))
        clock.now += WARM + PER_STEP * point["N"] * point["d"] / 8.0

    return (types.SimpleNamespace(plan_point=plan_point, run_point=run_point),
            types.SimpleNamespace(build=lambda n, d, seed: None))


def test_probe_costs_stop_at_the_grid_and_probe_again_for_a_larger_one(monkeypatch):
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _fake(clock, ran)
    costs = regimes.ProbeCosts(study, spec, dict(d=8, N=100))  # type: ignore[arg-type]
    a, b, c = costs(16, largest=dict(N=110.0))
    assert ran and max(p["N"] for p in ran) <= 110  # N = 32 and 96, twice each
    # the capped fit still prices a large point at its closed form (a noiseless clock)
    assert a * 1e6 + b * 16e6 == pytest.approx(PER_STEP * 1e6, rel=2e-3)  # b's 1e-9 floor
    assert c == pytest.approx(WARM, rel=1e-6)
    n_runs = len(ran)
    costs(16, largest=dict(N=100.0))  # within the probed size: the same fit, no run
    assert len(ran) == n_runs
    costs(16, largest=dict(N=1e5))  # larger: probed again, further
    assert len(ran) > n_runs and max(p["N"] for p in ran) > 110
    n_runs = len(ran)
    costs(16, largest=dict(N=1e6))  # that fit stopped at its own limit, not the grid's
    assert len(ran) == n_runs
    # control: without a grid the probes grow as before
    ran.clear()
    regimes.ProbeCosts(study, spec, dict(d=8, N=100))(16)  # type: ignore[arg-type]
    assert max(p["N"] for p in ran) > 110


def test_cost_over_d_grows_no_larger_than_the_grid(monkeypatch):
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    monkeypatch.setattr(regimes, "dry_plan",
                        lambda st, sp, point, trials: st.plan_point(point, None, trials))
    study, spec = _fake(clock, ran)
    f = regimes.cost_over_d(study, spec, dict(d=8, N=500), (2, 8, 32), 16,  # type: ignore
                            largest=dict(N=500.0))
    assert max(p["N"] for p in ran) <= 500 and f.capped_at == 500.0  # type: ignore[attr-defined]
    # the per-step cost is linear in d here; the power read at N = 288 (fixed cost WARM
    # against 0.0058 s of steps at d = 8) is what the small probe sees: between 0 and 1
    assert 0.0 <= f.powers[0] <= 1.0  # type: ignore[attr-defined]
    ran.clear()
    g = regimes.cost_over_d(study, spec, dict(d=8, N=500), (2, 8, 32), 16)  # type: ignore
    assert max(p["N"] for p in ran) > 500 and g.capped_at is None  # type: ignore[attr-defined]
    # the larger probe reads the per-step power closer to its closed form (1)
    assert g.powers[0] > f.powers[0]  # type: ignore[attr-defined]


def test_a_larger_point_over_d_is_probed_again(monkeypatch):
    calls: list[float] = []

    def cost_over_d(study_, spec_, fixed, values, trials, largest=None, fit=None, warm=()):
        calls.append(largest["N"])

        def factor(point):
            return (1.0, 1.0)
        factor.powers = (0.5, 0.5)
        factor.capped_at = largest["N"]
        return factor

    s = study_mod.get_study("strongly_convex.heavy_ball")
    spec = study_mod.problem(s.problems[0])
    seen: list[float] = []

    def plan_grid(*a, cost_factor, **k):
        for n in (500.0, 400.0, 5000.0, 5000.0):  # the third is larger than the probe
            seen.append(n)
            cost_factor(dict(s.fixed, N=n, d=4.0))
        return None

    monkeypatch.setattr(regimes, "cost_over_d", cost_over_d)
    monkeypatch.setattr(regimes, "plan_grid", plan_grid)
    study_mod._choose_grid(s, spec, "d", (2.0, 4.0, 8.0), False, dict(s.fixed), 4, False,
                           "auto", 900.0, False, ())
    assert calls == [500.0, 5000.0]


def _old_n_start(plans, path, headline):
    """The scan before: every lattice point planned, then the first informative one."""
    ns = [n for n, _ in plans]
    ok = [regimes._informative(p) for _, p in plans]
    b = np.array([p["bound"] for _, p in plans], dtype=float)
    for i, n in enumerate(ns):
        if not ok[i]:
            continue
        if path:
            if headline is None or i + 1 >= len(ns):
                return None
            with np.errstate(divide="ignore", invalid="ignore"):
                s = math.log(b[i + 1] / b[i]) / math.log(ns[i + 1] / n)
            if abs(s - headline) > regimes._SLOPE_TOL:
                continue
        grid = [int(round(n * 10 ** (k / 3))) for k in range(4)]
        if grid[-1] > regimes._N_MAX * 10:
            return None
        return grid[0]
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.floats(0.01, 10.0)), min_size=1, max_size=25),
       st.booleans(), st.sampled_from([None, -0.5, -1.0]), st.integers(0, 3))
def test_the_lazy_scan_gives_the_old_answer_planning_less(rows, path, headline, start):
    ns = [int(round(10 ** (start + k / 4))) for k in range(len(rows))]
    plans = {n: dict(bound=bd if inf else 2.0 + bd, trivial=2.0, do_nothing=3.0)
             for n, (inf, bd) in zip(ns, rows)}
    asked: list[int] = []

    def plan_at(n):
        asked.append(n)
        return plans[n]

    got = regimes._n_start(ns, plan_at, path, headline)
    assert got == _old_n_start([(n, plans[n]) for n in ns], path, headline)
    assert len(asked) == len(set(asked))  # each point planned once
    if got is not None:  # no further than the answer (path: one point beyond)
        assert max(asked) <= ns[min(ns.index(got) + (1 if path else 0), len(ns) - 1)]


def test_the_lazy_scan_keeps_the_grid_size_rule_and_a_zero_bound():
    """Two cases the random ones rarely reach: the first informative N whose factor-10 grid
    passes 10 N_MAX gives no grid, asking nothing beyond it; a zero bound on a path gives an
    infinite slope (skipped), as the old scan's NumPy division did, not an exception."""
    ns = [10**5, 2 * 10**5, 2 * 10**6, 4 * 10**6]
    plans = {10**5: dict(bound=2.0, trivial=1.0, do_nothing=1.0),
             2 * 10**5: dict(bound=2.0, trivial=1.0, do_nothing=1.0),
             2 * 10**6: dict(bound=0.5, trivial=1.0, do_nothing=1.0),
             4 * 10**6: dict(bound=0.4, trivial=1.0, do_nothing=1.0)}
    asked: list[int] = []

    def plan_at(n):
        asked.append(n)
        return plans[n]

    assert regimes._n_start(ns, plan_at, False, None) is None
    assert _old_n_start([(n, plans[n]) for n in ns], False, None) is None
    assert max(asked) == 2 * 10**6
    zero = {10: dict(bound=0.0, trivial=1.0, do_nothing=1.0),
            20: dict(bound=0.0, trivial=1.0, do_nothing=1.0),
            40: dict(bound=0.5, trivial=1.0, do_nothing=1.0)}
    ns0 = [10, 20, 40]
    want = _old_n_start([(n, zero[n]) for n in ns0], True, -0.5)
    assert regimes._n_start(ns0, zero.__getitem__, True, -0.5) == want


def test_a_study_with_settings_of_t_prices_its_knobs_with_one_fit(monkeypatch):
    """Yang et al.'s knobs (T = 1e4 ... 1e7) are compared by their grids' cost: one uncapped
    fit prices them all, as before. Fits sized to each knob chose another T in an independent
    review's case (``clipped_sgd --vary N`` at d = 2, eps = 8) and re-probed every knob. A
    study without knobs, or with T fixed by the user, gets fits sized to its grid."""
    import types

    monkeypatch.setattr(regimes, "dry_plan", lambda st_, sp, p, t: dict(
        bound=0.5 if p["N"] >= 1000 else 2.0, trivial=1.0, do_nothing=1.0,
        steps=float(p["T"]), gradient_evaluations=float(p["T"]) * t, memory_bytes=1e3))
    asked: list[object] = []

    class Sized:
        sized = True

        def __call__(self, t, largest=None):
            asked.append(largest)
            return (1e-9, 1e-9, 0.0)

    fake = types.SimpleNamespace(fixed=dict(d=8, N=100, T=1000), theorem="fake",
                                 headline_exponent=lambda var: None)
    regimes.plan_grid(fake, None, "N", dict(fake.fixed), None, 4, cost_for=Sized(),
                      max_seconds=1e9)
    assert asked and all(a is None for a in asked)
    asked.clear()
    regimes.plan_grid(fake, None, "N", dict(fake.fixed), None, 4, cost_for=Sized(),
                      max_seconds=1e9, user_fixed=("T",))
    assert asked and all(a is not None for a in asked)
