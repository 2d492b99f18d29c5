"""The cost model of a quick study (stop 66): a run's per-trial cost told from its per-step
cost, each smaller ``d`` priced by its own run, probes timed without the garbage collector.

Measured before (24 quick studies, 2-core Zen 4): the tree studies' ``--quick --vary N`` and
``--vary eps`` estimates read 0.21-0.34 of their runs (their 16-trial probes put a 150-trial
point's per-trial cost into a per-step cost), the grids over ``d`` were priced at their
largest ``d`` (2-3.8x once the first was fixed), and a full collection landing in both timings
of BST14's 6 ms first probe priced its points 3.6x. Oracles: a closed-form cost charged to a
fake CPU clock (no timing is measured here), and the garbage collector's own state.
"""

from __future__ import annotations

import gc
import types

import pytest

from dpbounds.verify import regimes
from dpbounds.verify.costs import CostMemo

COMPILE, WARM, PER_STEP, PER_TRIAL, PER_EVAL = 1.0, 0.05, 2e-6, 7e-4, 1.3e-6


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.runs: list[tuple[dict, int]] = []

    def __call__(self) -> float:
        return self.now


def _cost(steps: int, trials: int, d: int = 8, d_top: int = 8) -> float:
    """The closed form the fake charges a warm run (the oracle)."""
    scale = (1.0 + d) / (1.0 + d_top)  # a step's cost grows with d
    return WARM + PER_TRIAL * trials + scale * (PER_STEP * steps + PER_EVAL * steps * trials)


def _fake(clock: _Clock, d_top: int = 8) -> tuple[types.SimpleNamespace,
                                                  types.SimpleNamespace]:
    def steps(point: dict) -> int:
        return 2 * int(point["N"])  # grown with N, as the tree studies' T = N E

    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(steps=steps(point), gradient_evaluations=steps(point) * trials)

    def run_point(point: dict, inst: object, trials: int, seed: object, mut: object) -> None:
        if not clock.runs:
            clock.now += COMPILE
        clock.runs.append((dict(point), int(trials)))
        clock.now += _cost(steps(point), trials, int(point["d"]), d_top)

    study = types.SimpleNamespace(plan_point=plan_point, run_point=run_point,
                                  run=run_point, theorem="fake")
    spec = types.SimpleNamespace(build=lambda n, d, seed: None, kind="fake")
    return study, spec


def _price(fit: tuple[float, float, float], steps: int, trials: int,
           factor: float = 1.0) -> float:
    a, b, c = fit
    return c + factor * (a * steps + b * steps * trials)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(regimes.time, "process_time", c)
    # the fake's plans straight from it (the planner's cache looks studies up by name)
    monkeypatch.setattr(regimes, "cost_plan", lambda st, sp, p, t: st.plan_point(p, None, t))
    return c


def test_a_fit_with_the_points_trials_prices_them_to_2_percent(clock: _Clock) -> None:
    study, spec = _fake(clock)
    point, largest = dict(d=8, N=1000), {"N": 1000.0}
    fit = regimes._probe_fit(study, spec, point, 16, largest,  # type: ignore[arg-type]
                             target=150)
    for n in (250, 500, 1000):
        exact = _cost(2 * n, 150)
        assert _price(fit, 2 * n, 150) == pytest.approx(exact, rel=0.02), n


def test_negative_control_one_trial_count_prices_them_3x_low(clock: _Clock) -> None:
    """What the estimate did before: the same probes at 16 trials alone cannot tell the
    per-trial cost from the per-step one, and a 150-trial point reads a third of its cost
    or less (measured on the real studies: 0.21-0.34)."""
    study, spec = _fake(clock)
    fit = regimes._probe_fit(study, spec, dict(d=8, N=1000), 16,  # type: ignore[arg-type]
                             {"N": 1000.0})
    assert _price(fit, 2000, 150) < _cost(2000, 150) / 3


def test_the_extra_runs_are_two_probes_at_4x_the_trials_and_cost_little(clock: _Clock
                                                                       ) -> None:
    study, spec = _fake(clock)
    regimes._probe_fit(study, spec, dict(d=8, N=1000), 16, {"N": 1000.0},  # type: ignore
                       target=150)
    more = [(p, t) for p, t in clock.runs if t != 16]
    assert [t for _, t in more] == [64, 64]  # min(150, 4 x 16)
    assert more[0][0]["N"] == min(p["N"] for p, _ in clock.runs)  # the smallest probe
    # the other: the largest whose 16-trial cost, x4, is at most _PROBE_SECONDS
    probed = sorted({p["N"] for p, t in clock.runs if t == 16})
    ok = [n for n in probed if 4 * _cost(2 * n, 16) <= regimes._PROBE_SECONDS]
    assert more[1][0]["N"] == max(ok)
    assert all(_cost(2 * p["N"], t) <= regimes._PROBE_SECONDS for p, t in more)


def test_no_extra_run_where_the_points_run_the_probes_trials(clock: _Clock) -> None:
    study, spec = _fake(clock)
    regimes._probe_fit(study, spec, dict(d=8, N=1000), 16, {"N": 1000.0},  # type: ignore
                       target=16)
    assert {t for _, t in clock.runs} == {16}


def test_the_target_is_part_of_the_memo_key() -> None:
    from dpbounds.verify.problems import problem
    from dpbounds.verify.theorems import get_study

    study, spec = get_study("tran_cutkosky.alg1"), problem()
    parts = [regimes._memo_parts(study, spec, dict(d=8, N=100), 16, None, t)
             for t in (None, 16, 150, 300)]
    # a plan priced at the probes' own trials keys as before; more trials key apart
    assert parts[0] == parts[1] and parts[0] is not None
    assert parts[2] != parts[1] and parts[2] != parts[3]
    memo = CostMemo()
    assert len({memo.key("probe_fit", **p) for p in parts}) == 3


@pytest.mark.parametrize("d", [2, 4])
def test_d_factor_reads_the_cost_of_a_step_at_a_smaller_d(clock: _Clock, d: int) -> None:
    """The fit at d = 32 prices a point at d as the closed form's ratio (1 + d) / 33 of
    a step (to 5%), from one run at that d."""
    study, spec = _fake(clock, d_top=32)
    largest = {"N": 1000.0}
    fit = regimes._probe_fit(study, spec, dict(d=32, N=1000), 16, largest,  # type: ignore
                             target=150)
    before = len(clock.runs)
    f = regimes.d_factor(study, spec, dict(d=d, N=1000), 150, fit,  # type: ignore[arg-type]
                         largest)
    assert len(clock.runs) == before + 1 and clock.runs[-1][0]["d"] == d
    assert f == pytest.approx((1.0 + d) / 33.0, rel=0.05)
    exact = _cost(2000, 150, d, 32)
    assert _price(fit, 2000, 150, f) == pytest.approx(exact, rel=0.05)
    # negative control: priced at the largest d (the factor 1 before), 2.5x and more high
    assert _price(fit, 2000, 150) > 2.5 * exact


def test_d_factor_is_at_most_1(clock: _Clock) -> None:
    study, spec = _fake(clock, d_top=2)
    largest = {"N": 1000.0}
    fit = regimes._probe_fit(study, spec, dict(d=2, N=1000), 16, largest,  # type: ignore
                             target=16)
    # a point that costs more a step than the fit's (d = 8 > 2 here) is clamped to 1
    assert regimes.d_factor(study, spec, dict(d=8, N=1000), 16, fit,  # type: ignore
                            largest) == 1.0
    f = regimes.d_factor(study, spec, dict(d=1, N=1000), 16, fit,  # type: ignore
                         largest)
    assert f == pytest.approx(2.0 / 3.0, rel=0.05)


def test_cpu_seconds_pauses_the_collector_and_restores_it() -> None:
    seen: list[bool] = []
    assert gc.isenabled()
    regimes.cpu_seconds(lambda: seen.append(gc.isenabled()))
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        regimes.cpu_seconds(lambda: None)
        assert not gc.isenabled()  # a caller's disabled collector stays disabled
    finally:
        gc.enable()

    # nested (or overlapping on two threads): the collector stays paused until the last ends
    inner: list[bool] = []
    regimes.cpu_seconds(lambda: (regimes.cpu_seconds(lambda: None),
                                 inner.append(gc.isenabled())))
    assert inner == [False] and gc.isenabled()

    def boom() -> None:
        raise RuntimeError("x")
    with pytest.raises(RuntimeError):
        regimes.cpu_seconds(boom)
    assert gc.isenabled()


def test_cpu_seconds_reads_no_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control by construction: a run that triggers a full collection inside the
    timing pays none of it (the collector is off), so the timed work is the run's alone."""
    collected: list[int] = []

    def cb(phase: str, info: dict) -> None:
        if phase == "start":
            collected.append(info["generation"])
    gc.callbacks.append(cb)
    try:
        regimes.cpu_seconds(lambda: [[] for _ in range(200_000)])  # many allocations
        assert collected == []
        [[] for _ in range(200_000)]  # the same allocations, collector on
    finally:
        gc.callbacks.remove(cb)
    assert collected  # the control: these allocations do trigger collections


def test_d_factor_is_remembered_in_the_cost_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpbounds.verify.problems import problem
    from dpbounds.verify.theorems import get_study

    study, spec = get_study("tran_cutkosky.alg1"), problem()
    calls: list[dict] = []

    def timed(st, sp, point, trials):  # type: ignore[no-untyped-def]
        calls.append(dict(point))
        return 0.5, 1.0
    monkeypatch.setattr(regimes, "_timed_run", timed)
    memo, fit, largest = CostMemo(), (1e-6, 1e-6, 0.1), {"N": 300.0}
    point = dict(study.fixed, d=4, N=300)
    first = regimes.d_factor(study, spec, point, 150, fit, largest, memo)
    assert regimes.d_factor(study, spec, point, 150, fit, largest, memo) == first
    assert len(calls) == 1 and calls[0]["d"] == 4
    regimes.d_factor(study, spec, point, 150, (2e-6, 1e-6, 0.1), largest, memo)
    assert len(calls) == 2  # another fit is another key


def test_one_extra_size_prices_high_not_low(clock: _Clock, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """An independent review's case: a fixed cost so large that only the smallest probe
    runs again at more trials. Four unknowns then had three constraints and the fit put
    the cost per evaluation into the per-trial term (0.51x at 150 trials, 0.09x at 2,000);
    without the per-trial column it is priced per evaluation: exact here (no per-trial
    cost), never below."""
    import tests.verify.test_estimate_per_trial as me

    monkeypatch.setattr(me, "WARM", 0.3)
    monkeypatch.setattr(me, "PER_TRIAL", 0.0)
    study, spec = _fake(clock)
    for target in (150, 2000):
        clock.runs.clear()
        fit = regimes._probe_fit(study, spec, dict(d=8, N=1000), 16,  # type: ignore
                                 {"N": 1000.0}, target=target)
        assert len({p["N"] for p, t in clock.runs if t != 16}) == 1  # one size again
        exact = _cost(2000, target)
        assert _price(fit, 2000, target) == pytest.approx(exact, rel=0.05), target


def test_the_estimate_applies_each_d_factor_and_probes_at_the_points_trials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``study._estimate`` over a grid in d: the fit is asked at the probes' trials with the
    points' trials as its target, one factor per smaller d (at that d, the fit's price and
    the grid's largest N), and each point's estimate is the cost model written out here:
    ``c + f (a steps + b evaluations)`` plus the trace's samples (review: three mutants of
    ``_estimate`` -- no target, factor 1, factor at the top d -- survived every test)."""
    from dpbounds.verify import study as st
    from dpbounds.verify.problems import problem
    from dpbounds.verify.theorems import get_study

    s, spec = get_study("tran_cutkosky.alg1"), problem()
    fit, trace = (2e-6, 3e-7, 0.25), 1e-9
    asked: list[tuple] = []
    factors = {4: 0.2, 16: 0.5}

    def measured(study, spec_, point, trials, largest=None, memo=None, stopped=None,
                 sizes=None, *, target=None):  # type: ignore[no-untyped-def]
        asked.append(("fit", int(point["d"]), trials, target))
        return fit

    def d_factor(study, spec_, point, trials, fit_, largest, memo=None):  # type: ignore
        asked.append(("factor", int(point["d"]), trials, tuple(fit_), dict(largest)))
        return factors[int(point["d"])]
    monkeypatch.setattr(regimes, "measured_fit", measured)
    monkeypatch.setattr(regimes, "d_factor", d_factor)
    monkeypatch.setattr(regimes, "trace_seconds", lambda sp, d, t: trace)
    points = [dict(s.fixed, d=d, N=300) for d in (4, 16, 64)]
    regime: dict = {}
    st._estimate(s, spec, points, 150, regime)
    assert asked[0] == ("fit", 64, 16, 150)
    assert sorted(asked[1:]) == [("factor", 4, 150, fit, {"N": 300.0}),
                                 ("factor", 16, 150, fit, {"N": 300.0})]
    for q, got in zip(points, regime["estimated_seconds"]):
        pl = regimes.dry_plan(s, spec, q, 150)
        f = factors.get(int(q["d"]), 1.0)
        want = (fit[2] + f * (fit[0] * pl["steps"] + fit[1] * pl["gradient_evaluations"])
                + float(pl.get("trace_samples", 0.0)) * trace)
        assert got == pytest.approx(want, rel=1e-12), q["d"]
    assert regime["estimated_total_seconds"] == pytest.approx(sum(regime["estimated_seconds"]))


@pytest.mark.parametrize("target", [0, -3, 2.5, float("nan"), True, "150"])
def test_measured_fit_rejects_a_bad_target(target: object) -> None:
    from dpbounds.verify.problems import problem
    from dpbounds.verify.theorems import get_study

    with pytest.raises(ValueError, match="target"):
        regimes.measured_fit(get_study("tran_cutkosky.alg1"), problem(), dict(d=4, N=100),
                             16, target=target)  # type: ignore[arg-type]


def _rungs(start: int, grow: int, top: float) -> list[int]:
    out, n = [], start
    while n <= top:
        out.append(n)
        n *= grow
    return out


def test_d_factor_runs_the_smallest_rung_priced_at_its_threshold(clock: _Clock) -> None:
    """The size rule written out: N = 32 x 3^k up to the largest point, the first whose
    variable part the fit prices at >= _FACTOR_SECONDS at the point's own d."""
    study, spec = _fake(clock, d_top=32)
    fit = (1e-5, 1e-6, 0.05)  # a (hypothetical) fit at d = 32, 150 trials
    largest = {"N": 30000.0}
    regimes.d_factor(study, spec, dict(d=4, N=30000), 150, fit,  # type: ignore[arg-type]
                     largest)
    want = next(n for n in _rungs(32, 3, 30000)
                if fit[0] * 2 * n + fit[1] * 2 * n * 150 >= regimes._FACTOR_SECONDS)
    assert clock.runs[-1] == (dict(d=4, N=want), 150)
    # never past the largest point: a fit priced far too low stops at its last rung
    regimes.d_factor(study, spec, dict(d=4, N=300), 150, (1e-12, 1e-12, 0.0),  # type: ignore
                     {"N": 300.0})
    assert clock.runs[-1] == (dict(d=4, N=max(_rungs(32, 3, 300))), 150)


def test_d_factor_stops_at_the_probe_memory(clock: _Clock, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    study, spec = _fake(clock, d_top=32)
    monkeypatch.setattr(regimes, "_planned_bytes", lambda st, sp, p, t: (
        0.0 if p["N"] <= 96 else 2 * regimes.PROBE_MAX_BYTES))
    regimes.d_factor(study, spec, dict(d=4, N=30000), 150,  # type: ignore[arg-type]
                     (1e-12, 1e-12, 0.0), {"N": 30000.0})
    assert clock.runs[-1][0]["N"] == 96


def test_d_factor_floor_and_t_rungs(clock: _Clock) -> None:
    """A run at or below the fixed cost reads the floor 0.01, not 0 or less; a point with a
    T grows T (200 x 4^k) at N = 32, as the probes do."""
    study, spec = _fake(clock, d_top=32)
    f = regimes.d_factor(study, spec, dict(d=4, N=1000), 16,  # type: ignore[arg-type]
                         (1e-3, 1e-6, 100.0), {"N": 1000.0})
    assert f == 0.01
    plans: list[dict] = []
    orig = study.plan_point

    def plan_t(point: dict, inst: object, trials: int) -> dict:
        plans.append(dict(point))
        return orig(point, inst, trials)
    study.plan_point = plan_t
    regimes.d_factor(study, spec, dict(d=4, N=5000, T=3200), 16,  # type: ignore[arg-type]
                     (1e-12, 1e-12, 0.0), {"N": 5000.0, "T": 3200.0})
    assert list(dict.fromkeys(p["T"] for p in plans)) == _rungs(200, 4, 3200)
    assert all(p["N"] == 32 for p in plans)


@pytest.mark.parametrize("change", ["trials", "largest", "point"])
def test_d_factor_memo_keys_on_its_arguments(monkeypatch: pytest.MonkeyPatch,
                                            change: str) -> None:
    from dpbounds.verify.problems import problem
    from dpbounds.verify.theorems import get_study

    s, spec = get_study("tran_cutkosky.alg1"), problem()
    calls: list[dict] = []
    monkeypatch.setattr(regimes, "_timed_run", lambda st, sp, p, t: (
        calls.append(dict(p, trials=t)) or (0.5, 1.0)))
    memo, fit = CostMemo(), (1e-6, 1e-6, 0.1)
    args = dict(point=dict(s.fixed, d=4, N=300), trials=150, largest={"N": 300.0})
    regimes.d_factor(s, spec, args["point"], args["trials"], fit, args["largest"], memo)
    other = dict(args)
    other[change] = dict(trials=151, largest={"N": 900.0},
                         point=dict(s.fixed, d=8, N=300))[change]
    regimes.d_factor(s, spec, other["point"], other["trials"], fit, other["largest"], memo)
    assert len(calls) == 2  # not read from the first's entry


def test_the_target_reaches_the_probe_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """From ProbeCosts (a planned grid's fits) through measured_fit to _probe_fit: probed
    at the study's probe trials, with the points' trials as the target."""
    from dpbounds.verify.problems import problem
    from dpbounds.verify.theorems import get_study

    seen: list[tuple[int, object]] = []

    def fit(study, spec, point, trials, largest=None, stopped=None, sizes=None,
            target=None):  # type: ignore[no-untyped-def]
        seen.append((trials, target))
        return (1e-6, 1e-6, 0.1)
    monkeypatch.setattr(regimes, "_probe_fit", fit)
    s, spec = get_study("tran_cutkosky.alg1"), problem()
    regimes.measured_fit(s, spec, dict(d=4, N=100), 16, target=150)
    regimes.ProbeCosts(s, spec, dict(s.fixed))(150)
    assert seen == [(16, 150), (16, 150)]


def test_the_analysis_exponents_are_computed_while_planning() -> None:
    """An estimated study computes the analysis's symbolic exponents before its runs (where
    the command counts its planning); one without an estimate leaves them to the analysis."""
    from dpbounds.verify import scaling_study
    from dpbounds.verify.studies import _common

    seen: list[int] = []

    class Stop(Exception):
        pass

    def on_plan(reg: dict) -> None:
        seen.append(_common._path_exponents.cache_info().currsize)
        raise Stop
    for estimate in (True, False):
        _common._path_exponents.cache_clear()
        with pytest.raises(Stop):
            scaling_study("kamath.bst14", vary={"N": [25, 50]}, estimate=estimate,
                          on_plan=on_plan, progress=False)
    assert seen == [1, 0]
