"""The planner's probe fit (``regimes._probe_fit``) against a closed-form cost model.

A fake study charges a fake CPU clock: compilation once per process, a per-point cold cost
the first time a point's parameters run (its calibration and re-accounting, cached by
parameters in the real studies), a warm fixed cost and a cost per step. No timing is
measured, so nothing here depends on the host's load."""

from __future__ import annotations

import types

import numpy as np
import pytest

from dpbounds.verify import regimes

COMPILE, COLD, WARM, PER_STEP = 2.0, 0.7, 0.3, 2e-5


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.seen: set[tuple] = set()

    def __call__(self) -> float:
        return self.now


def _fake(clock: _Clock, knob: str) -> tuple[types.SimpleNamespace, types.SimpleNamespace]:
    def steps(point: dict) -> int:
        return int(point[knob])

    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(steps=steps(point), gradient_evaluations=steps(point) * trials)

    def run_point(point: dict, inst: object, trials: int, seed: object, mut: object) -> None:
        key = tuple(sorted(point.items()))
        if not clock.seen:
            clock.now += COMPILE
        if key not in clock.seen:
            clock.now += COLD
            clock.seen.add(key)
        clock.now += WARM + PER_STEP * steps(point)

    study = types.SimpleNamespace(plan_point=plan_point, run_point=run_point)
    spec = types.SimpleNamespace(build=lambda n, d, seed: None)
    return study, spec


def _point(knob: str) -> dict:
    return dict(d=8, N=100, T=2000) if knob == "T" else dict(d=8, N=100)


@pytest.mark.parametrize("knob", ["T", "N"])
def test_probe_fit_recovers_the_per_step_cost_and_the_cold_fixed_cost(monkeypatch, knob):
    """Yang et al.'s probes grow ``T``, the others ``N``: either way the fitted cost of a
    1e7-step point is the closed form's ``PER_STEP * 1e7`` (to 1%), and ``c`` is the cold
    fixed cost of a point (``WARM + COLD``), compilation excluded."""
    clock = _Clock()
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _fake(clock, knob)
    a, b, c = regimes._probe_fit(study, spec, _point(knob), 4)  # type: ignore[arg-type]
    exact = PER_STEP * 1e7
    assert a * 1e7 + b * 4e7 == pytest.approx(exact, rel=0.01)
    assert c == pytest.approx(WARM + COLD, rel=0.01)


def test_the_old_probe_rule_reads_a_cold_cache_as_a_per_step_cost(monkeypatch):
    """Negative control: the rule before (only the first probe run twice, its warm timing
    kept, every larger probe timed cold) on the same clock prices a 1e7-step point more than
    3x its closed-form cost (the yang.nsgd grid: 1471 CPU-s estimated, 889 run)."""
    from scipy.optimize import nnls

    clock = _Clock()
    study, spec = _fake(clock, "T")
    rows, secs = [], []
    t = 200
    for k in range(regimes._PROBE_MAX):
        probe = dict(_point("T"), N=32, T=t)
        for _ in range(2 if k == 0 else 1):
            t0 = clock()
            study.run_point(probe, None, 4, 0, None)
            dt = clock() - t0
        secs.append(dt)
        rows.append((1.0, float(t)))
        if dt >= max(regimes._PROBE_SECONDS, 3.0 * min(secs)) and k >= 2:
            break
        t *= 4
    a_mat = np.array(rows)
    scale = a_mat.max(axis=0)
    coef = nnls(a_mat / scale, np.array(secs))[0] / scale
    assert coef[1] * 1e7 > 3 * PER_STEP * 1e7


def _fake_with_memory(clock: _Clock, bytes_per_step: float):
    """The fake study whose plan also holds ``bytes_per_step`` per step (a transcript)."""
    study, spec = _fake(clock, "T")
    plan = study.plan_point
    ran: list[float] = []

    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(plan(point, inst, trials), memory_bytes=bytes_per_step * point["T"])

    def run_point(point: dict, *args: object) -> None:
        ran.append(bytes_per_step * point["T"])
        run(point, *args)

    run = study.run_point
    study.plan_point, study.run_point = plan_point, run_point
    return study, spec, ran


def test_probes_never_run_above_the_memory_cap_and_still_fit_the_cost(monkeypatch):
    """The yang.nsgd case: a run's fixed cost hides the per-step part (its probes reached
    T = 204,800, 92 MiB of transcript planned). With 500 bytes a step the 128 MiB cap admits
    T <= 268,435: none runs above ``PROBE_MAX_BYTES`` (the 819,200-step probe is not run), and
    the fit still prices a 1e7-step point at its closed form (to 1%). Control: without the cap
    the same probes pass it."""
    cap = regimes.PROBE_MAX_BYTES
    clock = _Clock()
    monkeypatch.setattr(regimes.time, "process_time", clock)
    monkeypatch.setattr(regimes, "_PROBE_SECONDS", 50.0)  # growth stops only at the cap
    study, spec, ran = _fake_with_memory(clock, 500.0)
    a, b, _ = regimes._probe_fit(study, spec, _point("T"), 4)  # type: ignore[arg-type]
    assert max(ran) <= regimes.PROBE_MAX_BYTES and len(ran) >= 5  # three probes, the third
    # timed once
    assert a * 1e7 + b * 4e7 == pytest.approx(PER_STEP * 1e7, rel=0.01)
    # control: the cap is what stopped them
    monkeypatch.setattr(regimes, "PROBE_MAX_BYTES", float("inf"))
    clock2 = _Clock()
    monkeypatch.setattr(regimes.time, "process_time", clock2)
    study, spec, ran = _fake_with_memory(clock2, 500.0)
    regimes._probe_fit(study, spec, _point("T"), 4)  # type: ignore[arg-type]
    assert max(ran) > cap


def test_d_probes_never_grow_above_the_memory_cap(monkeypatch):
    """``cost_over_d`` grows one probe at the grid's largest d before timing both ends: it
    stops before a probe whose plan holds more than the cap (here 500 bytes a step)."""
    cap = regimes.PROBE_MAX_BYTES
    clock = _Clock()
    monkeypatch.setattr(regimes.time, "process_time", clock)
    monkeypatch.setattr(regimes, "_PROBE_SECONDS", 5.0)
    study, spec, ran = _fake_with_memory(clock, 500.0)
    monkeypatch.setattr(regimes, "dry_plan",
                        lambda st, sp, point, trials: st.plan_point(point, None, trials))
    factor = regimes.cost_over_d(study, spec, _point("T"), [4, 64], 4)  # type: ignore[arg-type]
    assert factor.powers == (0.0, 0.0)  # the fake's cost does not grow with d
    assert max(ran) <= regimes.PROBE_MAX_BYTES and len(ran) >= 6
    monkeypatch.setattr(regimes, "PROBE_MAX_BYTES", float("inf"))
    ran.clear()
    regimes.cost_over_d(study, spec, _point("T"), [4, 64], 4)  # type: ignore[arg-type]
    assert max(ran) > cap


def test_probes_of_a_quadratic_step_count_stop_before_overshooting(monkeypatch):
    """BST14 runs n^2 steps, so a probe costs 9x the previous one: the rule "grow until a
    run costs 0.3 CPU-s" ran N = 2592 (2.1 CPU-s, twice) right after N = 864 had cost 0.24.
    A probe whose variable part shows at a third of the target now stops where the next
    would cost over 3x the target: no run above 0.9 s on a closed-form clock (cost
    0.005 + 3e-7 n^2), and the fit still prices N = 1e4 at its closed form (to 1%).
    Before the rule the N = 2592 probe ran (2.02 s)."""
    clock = _Clock()
    monkeypatch.setattr(regimes.time, "process_time", clock)
    costs: list[float] = []

    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(steps=float(point["N"]) ** 2, gradient_evaluations=float(point["N"]) ** 2)

    def run_point(point: dict, *args: object) -> None:
        dt = 0.005 + 3e-7 * float(point["N"]) ** 2
        costs.append(dt)
        clock.now += dt

    study = types.SimpleNamespace(plan_point=plan_point, run_point=run_point)
    spec = types.SimpleNamespace(build=lambda n, d, seed: None)
    a, b, c = regimes._probe_fit(study, spec, dict(d=4, N=100), 4)  # type: ignore[arg-type]
    assert max(costs) < 3 * regimes._PROBE_SECONDS
    assert c + (a + b) * 1e8 == pytest.approx(0.005 + 3e-7 * 1e8, rel=0.01)


def _yang_like(clock: _Clock, ran: list[int]):
    """The fake study with Yang et al.'s measured shape: a warm fixed cost of 0.08 CPU-s
    that hides the per-step cost (2e-6 s) below ~1e5 steps, a cold cost of 0.4 per new T.
    Its plan counts no gradient evaluations: a column of zeros in the fit, which divided by 0
    before (the fit was NaN, and every test using this fake failed)."""
    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(steps=int(point["T"]), gradient_evaluations=0)

    def run_point(point: dict, inst: object, trials: int, seed: object, mut: object) -> None:
        ran.append(int(point["T"]))
        key = tuple(sorted(point.items()))
        if key not in clock.seen:
            clock.now += 0.4
            clock.seen.add(key)
        clock.now += 0.08 + 2e-6 * point["T"]

    return (types.SimpleNamespace(plan_point=plan_point, run_point=run_point),
            types.SimpleNamespace(build=lambda n, d, seed: None))


def test_probes_grow_t_past_the_fixed_cost_in_fewer_runs(monkeypatch):
    """Where the fixed cost hides the per-step one, ``T`` grows up to 16x from the first
    probe and, once two warm probes bound the per-step cost, up to 64x: three probes (each a
    cold calibration and re-accounting, 0.4 CPU-s), the last within 3x the target, and the
    fit prices a 1e7-step point at its closed form (2%). Negative controls on the same
    clock: growth by the last probe alone (stop 61) runs four probes, the old 4x growth six."""
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like(clock, ran)
    a, b, c = regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 4)  # type: ignore
    probes = sorted(set(ran))
    # the third from the second's bound: (0.0845 - 0.0804 + 0.15 * 0.0804) * 2238 / 2038 of
    # its 0.0845 CPU-s per step, grown to cost at most 3 targets (47x)
    assert probes == [200, 2238, 105239], probes
    assert 0.08 + 2e-6 * probes[-1] <= 3 * regimes._PROBE_SECONDS
    assert a * 1e7 == pytest.approx(2e-6 * 1e7, rel=0.02)
    assert c == pytest.approx(0.48, rel=0.05)
    growth = regimes._t_growth
    for rule, runs in ((lambda dt, floor, most=None: growth(dt, floor), 4),
                       (lambda dt, floor, most=None: 4.0, 6)):
        clock2, ran2 = _Clock(), []
        monkeypatch.setattr(regimes.time, "process_time", clock2)
        monkeypatch.setattr(regimes, "_t_growth", rule)
        study2, spec2 = _yang_like(clock2, ran2)
        regimes._probe_fit(study2, spec2, dict(d=8, N=100, T=2000), 4)  # type: ignore
        assert len(set(ran2)) == runs, sorted(set(ran2))


@pytest.mark.parametrize("largest", [150, 250, 1000, 3000, 20000, 40000])
def test_probes_never_grow_past_the_largest_point(monkeypatch, largest):
    """With a largest point, no probe is larger than it, the second one included (it could be
    11x past with growth up to 16x: an independent review), except a second probe after a
    first already at or past it (2x the first: the fit's second row); where the growth would
    pass it and it is at least twice the last probe, the largest point itself is probed."""
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like(clock, ran)
    why: list[str] = []
    regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 4,  # type: ignore
                       largest=dict(N=100, T=largest), stopped=why)
    probes = sorted(set(ran))
    if largest <= 200:
        assert probes == [200, 400], probes
    else:
        assert len(probes) >= 2 and max(probes) <= largest, probes
    # the growth passes the largest point where the last probe is at most half of it: it is
    # probed itself (250: the second probe; 1000: [200, 1000]; 20000 and 40000: [200,
    # ~2,240, largest])
    assert (largest in probes) is (largest in (250, 1000, 20000, 40000)), probes
    assert why == ["largest"]


def test_the_probes_grow_no_further_than_the_memory_cap_admits(monkeypatch):
    """A probe's growth keeps the next one's planned memory within ``PROBE_MAX_BYTES``, never
    below 2x: Yang et al.'s shape (0.08 CPU-s warm, 2e-6 a step) at 10 kB a step, where the
    cap admits T <= 13,421, runs no probe that plans more, the third included (the memory
    check stops only the fourth and later). Control: with the cap raised 100x the same clock
    runs a probe that plans more than the real cap."""
    for capped in (True, False):
        clock, ran = _Clock(), []
        monkeypatch.setattr(regimes.time, "process_time", clock)
        if not capped:
            monkeypatch.setattr(regimes, "PROBE_MAX_BYTES", 100 * regimes.PROBE_MAX_BYTES)
        study, spec = _yang_like(clock, ran)
        study.plan_point = lambda point, inst, trials, plan=study.plan_point: dict(
            plan(point, inst, trials), memory_bytes=1e4 * point["T"])
        regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 4)  # type: ignore
        assert (max(ran) * 1e4 <= 128.0 * 2**20) is capped, (capped, ran)


def test_a_probe_planning_more_than_the_line_of_two_plans_is_shrunk_before_it_runs(
        monkeypatch):
    """Memory growing as T^2 (faster than the line through two plans that the growth
    extrapolates): the third probe's plan is over the cap, so its T is halved (re-planned)
    until it fits, before it runs. Control: the same plan at T^1.5 is never shrunk."""
    for power, shrunk in ((2.0, True), (1.5, False)):
        clock, ran, planned = _Clock(), [], []
        monkeypatch.setattr(regimes.time, "process_time", clock)
        study, spec = _yang_like(clock, ran)

        def plan_point(point, inst, trials, plan=study.plan_point, power=power,
                       planned=planned):
            planned.append(int(point["T"]))
            return dict(plan(point, inst, trials), memory_bytes=2.0 * point["T"] ** power)
        study.plan_point = plan_point
        a, _, _ = regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 4)  # type: ignore
        runs = sorted(set(ran))
        assert all(2.0 * t ** power <= regimes.PROBE_MAX_BYTES for t in runs[:3]), runs
        assert (len(planned) > len(runs)) is shrunk, (planned, runs)
        # the fit's rows are the steps that ran (a shrunk probe re-planned): 2e-6 a step
        assert a == pytest.approx(2e-6, rel=1e-6)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(dt=st.floats(1e-6, 100.0), share=st.floats(0.0, 1.0))
def test_t_growth_keeps_the_next_probe_within_three_targets(dt, share):
    """The growth is in ``[2, 16]`` and, unless at its least (2), the next probe costs at
    most ``3 * _PROBE_SECONDS`` even if all of ``dt`` were per step."""
    g = regimes._t_growth(dt, dt * (1.0 - share) + 1e-12 * share)
    lo, hi = regimes._T_GROWTH
    assert lo <= g <= hi
    assert g == lo or g * dt <= 3 * regimes._PROBE_SECONDS * (1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(t=st.integers(100, 10**6), fixed=st.floats(0.0, 1e8), per=st.floats(1e-3, 1e5),
       growth=st.floats(2.0, 64.0))
def test_next_t_keeps_the_line_of_two_plans_within_the_cap(t, fixed, per, growth):
    """With a plan's memory ``fixed + per * T`` (the line through two plans), the next T
    plans at most ``PROBE_MAX_BYTES`` unless at the 2x floor, and is never below the
    proportional rule's (``memory`` at most proportional to T: the fixed part grown too)."""
    memory = fixed + per * t
    cap = regimes.PROBE_MAX_BYTES
    nxt = regimes._next_t(t, growth, memory, None, False, per)
    assert nxt is not None
    assert fixed + per * nxt <= cap * (1 + 1e-9) or nxt == int(2 * t)
    assert nxt >= regimes._next_t(t, growth, memory, None, False)


@settings(max_examples=300, deadline=None)
@given(c=st.floats(0.001, 10.0), a=st.floats(0.0, 1e-3), t0=st.integers(10, 10**5),
       ratio=st.floats(1.5, 100.0), slow0=st.floats(0.0, 1.0), slow=st.floats(0.0, 5.0))
def test_per_step_share_bounds_the_per_step_part(c, a, t0, ratio, slow0, slow):
    """For runs costing ``c + a T`` read slow by any amount (``slow``) and the earlier one
    by up to ``_PROBE_NOISE`` of the faster reading, the share bounds ``a t`` from above;
    read slower than that, it may not (the allowance is what it is)."""
    t = int(t0 * ratio)
    dt0_true, dt_true = c + a * t0, c + a * t
    dt = dt_true * (1.0 + slow)
    dt0 = dt0_true + slow0 * regimes._PROBE_NOISE * min(dt0_true, dt)
    share = regimes._per_step_share(dt, t, [(t0, dt0)])
    assert share is not None and share >= a * t * (1 - 1e-9)
    assert regimes._per_step_share(dt, t, [(t, dt0)]) is None  # no probe of fewer steps


@settings(max_examples=300, deadline=None)
@given(dt=st.floats(1e-6, 100.0), share=st.floats(0.0, 1.0), most=st.floats(0.0, 1.0))
def test_t_growth_with_a_bound_keeps_the_next_probe_within_three_targets(dt, share, most):
    """Given that at most ``shown_most`` of ``dt`` is per step, the growth is in ``[2, 64]``
    and, unless at 2, the next probe costs at most ``3 * _PROBE_SECONDS`` even if all of
    ``shown_most`` is per step; it is never less than without the bound."""
    floor = dt * (1.0 - share) + 1e-12 * share
    bound = most * dt
    g = regimes._t_growth(dt, floor, bound)
    assert regimes._T_GROWTH[0] <= g <= regimes._T_GROWTH_MEASURED
    used = min(max(bound, 1e-9), dt)
    assert g == regimes._T_GROWTH[0] or (dt - used) + g * used <= \
        3 * regimes._PROBE_SECONDS * (1 + 1e-9)
    assert g >= regimes._t_growth(dt, floor) * (1 - 1e-12) or g == regimes._T_GROWTH_MEASURED


def test_per_step_share_reads_the_fastest_earlier_probe_of_fewer_steps():
    """Of several earlier warm probes, the fastest with fewer steps is the baseline (the
    least disturbed reading of the fixed cost); probes of as many steps or more are not."""
    earlier = [(200, 0.09), (1000, 0.06), (3000, 0.07), (9000, 0.05)]
    share = regimes._per_step_share(0.10, 5000, earlier)  # (1000, 0.06), not the last
    noise = regimes._PROBE_NOISE * 0.06
    assert share == pytest.approx((0.10 - 0.06 + noise) * 5000 / (5000 - 1000))
    assert regimes._per_step_share(0.10, 1000, earlier) == pytest.approx(
        (0.10 - 0.09 + regimes._PROBE_NOISE * 0.09) * 1000 / 800)
    # a run read faster than the baseline bounds by the noise alone (never below it)
    assert regimes._per_step_share(0.05, 5000, earlier) == pytest.approx(
        regimes._PROBE_NOISE * 0.05 * 5000 / 4000)
    # a bound above the run itself counts as all of the run per step, no more
    assert regimes._t_growth(0.1, 0.1, 0.5) == regimes._t_growth(0.1, 0.1)


def test_a_bounded_growth_reaches_its_cap_and_a_flat_memory_line_caps_nothing():
    assert regimes._t_growth(0.01, 0.01, 1e-6) == regimes._T_GROWTH_MEASURED == 64.0
    assert regimes._t_growth(0.01, 0.01) == regimes._T_GROWTH[1] == 16.0
    # two plans of the same memory (b = 0): the memory does not grow with T
    assert regimes._next_t(1000, 8.0, 1e6, None, False, 0.0) == 8000


def test_a_fixed_heavy_memory_line_grows_past_the_proportional_cap():
    """100 MiB planned at T = 1000, 1 KiB of it per step: the line admits T ~ 29,000 within
    PROBE_MAX_BYTES, where memory taken as proportional to T admits only the 2x floor."""
    memory, per = 100 * 2**20, 1024.0
    fixed = memory - per * 1000
    line = regimes._next_t(1000, 64.0, memory, None, False, per)
    prop = regimes._next_t(1000, 64.0, memory, None, False)
    assert prop == 2000
    assert line > 25_000 and fixed + per * line <= regimes.PROBE_MAX_BYTES


def test_the_probes_grow_along_the_line_of_their_plans_memory(monkeypatch):
    """Yang et al.'s clock with 100 MiB planned beside 1 KiB a step: the second probe doubles
    (memory taken as proportional to T allows 1.3x; 2x is the floor), then the probes grow
    along the line through the last two plans (34x, to T ~ 13,500, then to ~28,700 at the
    cap), where the proportional rule would allow 2x a probe; no probe plans over
    PROBE_MAX_BYTES."""
    clock, ran, mem = _Clock(), [], []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like(clock, ran)

    def plan_point(point, inst, trials, plan=study.plan_point):
        mem.append(100 * 2**20 + 1024.0 * point["T"])
        return dict(plan(point, inst, trials), memory_bytes=mem[-1])
    study.plan_point = plan_point
    regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 4)  # type: ignore
    probes = sorted(set(ran))
    assert probes[:2] == [200, 400] and probes[2] > 30 * probes[1], probes
    assert 28_000 <= probes[-1] <= 28_700, probes
    assert all(100 * 2**20 + 1024.0 * t <= regimes.PROBE_MAX_BYTES for t in probes)
    assert max(mem) > regimes.PROBE_MAX_BYTES  # a larger plan was asked for, and not run


def test_a_second_probe_over_the_cap_is_shrunk_too(monkeypatch):
    """Memory 30 T^2 bytes: the second probe (grown 11x by time, to T = 2,238) would plan
    150 MB; it is halved before it runs, to within the cap (the next may still plan over it
    at the 2x floor; the fourth and later are not run then)."""
    clock, ran, mem = _Clock(), [], []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like(clock, ran)

    def plan_point(point, inst, trials, plan=study.plan_point):
        mem.append(30.0 * point["T"] ** 2)
        return dict(plan(point, inst, trials), memory_bytes=mem[-1])
    study.plan_point = plan_point
    regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 4)  # type: ignore
    probes = sorted(set(ran))
    assert probes[1] == 1119 and 30.0 * probes[1] ** 2 <= regimes.PROBE_MAX_BYTES, probes



def _yang_like_over_d(clock: _Clock, ran: list[tuple[int, int]], extra_cold: float = 0.0,
                      extra_at: tuple[float, float] = (1e4, np.inf), cold: float = 0.4,
                      fixed: float = 0.08):
    """Yang et al.'s shape (:func:`_yang_like`) with a per-step cost proportional to ``d``
    (2e-6 at d = 8, 4 trials; 8e-6 at 16 trials) and, as in their studies, a cold cost paid
    once per ``T`` whatever ``d`` (the calibration and the re-accounting do not depend on
    it). ``extra_cold``: more that a probe of ``extra_at`` steps (from, to) pays cold (by
    default over 1e4: fresh memory); ``cold`` and ``fixed``: the cold and warm fixed costs."""
    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(steps=int(point["T"]), gradient_evaluations=0)

    def run_point(point: dict, inst: object, trials: int, seed: object, mut: object) -> None:
        ran.append((int(point["d"]), int(point["T"])))
        if point["T"] not in clock.seen:
            clock.now += cold + extra_cold * (extra_at[0] < point["T"] < extra_at[1])
            clock.seen.add(point["T"])
        clock.now += fixed + 2e-6 * trials / 4 * point["T"] * point["d"] / 8

    return (types.SimpleNamespace(plan_point=plan_point, run_point=run_point),
            types.SimpleNamespace(build=lambda n, d, seed: None))


def test_the_last_probe_is_timed_once_and_the_fit_holds(monkeypatch):
    """From the third on, a probe runs once (its cold run less the cold excess measured
    before it is its warm time; 16 trials: the third probe's warm run would be 0.35 CPU-s),
    and the fit prices a 1e7-step point at its closed form (2%), ``c`` the cold fixed cost.
    What its cold run pays beyond the earlier excess is counted per step (a grid point's
    single run pays it too): 0.1 CPU-s more raises the price of 1e7 steps by ~0.1 * 1e7 / T."""
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like_over_d(clock, ran)
    sizes: list[int] = []
    a, b, c = regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 16,  # type: ignore
                                 sizes=sizes)
    runs = [t for _, t in ran]
    assert [runs.count(t) for t in sizes] == [2, 2, 1], (sizes, runs)
    assert sizes == sorted(set(runs)) and len(sizes) == 3
    assert a * 1e7 == pytest.approx(8e-6 * 1e7, rel=0.02)
    assert c == pytest.approx(0.48, rel=0.05)
    clock2, ran2 = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock2)
    study2, spec2 = _yang_like_over_d(clock2, ran2, extra_cold=0.1)
    a2, _, _ = regimes._probe_fit(study2, spec2, dict(d=8, N=100, T=2000), 16)  # type: ignore
    assert a2 * 1e7 == pytest.approx(8e-6 * 1e7 + 0.1 * 1e7 / sizes[-1], rel=0.05)


def test_a_probe_reading_below_the_one_before_runs_again(monkeypatch):
    """Negative control of the rule above: where the second probe's cold excess was larger
    than the third's (1.0 CPU-s more, paid at T ~ 2,000 only), the third's cold run less it
    reads below the second's warm time; the third then runs twice, as every probe did
    before, and the fit holds (2%)."""
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like_over_d(clock, ran, extra_cold=1.0, extra_at=(1e3, 1e4))
    sizes: list[int] = []
    a, _, _ = regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 16,  # type: ignore
                                 sizes=sizes)
    runs = [t for _, t in ran]
    assert len(sizes) == 3 and [runs.count(t) for t in sizes] == [2, 2, 2], (sizes, runs)
    assert a * 1e7 == pytest.approx(8e-6 * 1e7, rel=0.02)


def test_the_power_of_d_is_probed_warm_at_the_fits_sizes(monkeypatch):
    """With the fit and its probes' sizes (``warm``), ``cost_over_d`` times both ends of the
    grid twice each at the largest probed ``T`` that the fit prices within the target at the
    largest ``d``: no run pays a new ``T``'s cold cost (0.4 CPU-s), and the power it reads
    is the one the same runs show. Negative control: without ``warm`` it grows a probe to a
    ``T`` no probe ran, and pays that cold cost."""
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    monkeypatch.setattr(regimes, "dry_plan",
                        lambda st, sp, point, trials: st.plan_point(point, None, trials))
    study, spec = _yang_like_over_d(clock, ran)
    point = dict(d=8, N=100, T=2000)
    sizes: list[int] = []
    fit = regimes._probe_fit(study, spec, point, 16, sizes=sizes)  # type: ignore[arg-type]
    seen, before = set(clock.seen), len(ran)
    start = clock.now
    factor = regimes.cost_over_d(study, spec, point, [2, 32, 128], 16,  # type: ignore
                                 fit=fit, warm=sizes)
    probes = ran[before:]
    t = probes[0][1]
    assert t in sizes and t == max(s for s in sizes if 16 * fit[0] * s <= 0.6)
    assert probes == [(2, t), (2, t), (128, t), (128, t)]
    assert clock.seen == seen  # every run warm
    per = {d: (0.08 + 8e-6 * t * d / 8) / t for d in (2, 128)}
    power = np.log(per[128] / per[2]) / np.log(64)
    assert factor.powers[0] == pytest.approx(power, rel=1e-9)
    assert clock.now - start == pytest.approx(2 * (per[128] + per[2]) * t, rel=1e-9)
    ran.clear()
    regimes.cost_over_d(study, spec, point, [2, 32, 128], 16, fit=fit)  # type: ignore
    assert any(tt not in sizes for _, tt in ran) and clock.seen != seen


def test_a_probe_reading_between_the_first_and_the_last_runs_again(monkeypatch):
    """The once-timed estimate must reach the probe before's warm time, not merely be
    positive or above the first probe's: here it lies between the two (the second probe's
    cold excess set so), and the third probe runs twice."""
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like_over_d(clock, ran)
    sizes: list[int] = []
    regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 16, sizes=sizes)  # type: ignore
    warm = [0.08 + 8e-6 * t for t in sizes]
    extra = warm[2] - (warm[0] + warm[1]) / 2  # the third reads halfway between the first two
    clock2, ran2 = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock2)
    study2, spec2 = _yang_like_over_d(clock2, ran2, extra_cold=extra, extra_at=(1e3, 1e4))
    sizes2: list[int] = []
    regimes._probe_fit(study2, spec2, dict(d=8, N=100, T=2000), 16,  # type: ignore
                       sizes=sizes2)
    runs = [t for _, t in ran2]
    assert sizes2 == sizes and [runs.count(t) for t in sizes2] == [2, 2, 2], (sizes2, runs)


def test_a_probe_cheaper_than_the_target_runs_twice(monkeypatch):
    """Where a probe's cold run costs less than ``_PROBE_SECONDS`` (a fixed cost of 5 ms and
    a cold one of 20 ms: strongly_convex.nag's size), its second run costs little and the
    cold excess's timing noise would be a large part of a once-timed estimate: every probe
    runs twice, and the fit holds (2%)."""
    clock, ran = _Clock(), []
    monkeypatch.setattr(regimes.time, "process_time", clock)
    study, spec = _yang_like_over_d(clock, ran, cold=0.02, fixed=0.005)
    sizes: list[int] = []
    a, _, _ = regimes._probe_fit(study, spec, dict(d=8, N=100, T=2000), 16,  # type: ignore
                                 sizes=sizes, largest={"T": 2e4})
    runs = [t for _, t in ran]
    assert len(sizes) >= 3 and all(runs.count(t) == 2 for t in sizes), (sizes, runs)
    assert a * 1e7 == pytest.approx(8e-6 * 1e7, rel=0.02)


def _priced_fake(bytes_per_step_and_d: float = 0.0):
    """A study whose plan states ``T`` steps and ``bytes * T * d`` bytes (for ``_warm_probe``,
    which only plans)."""
    def plan_point(point: dict, inst: object, trials: int) -> dict:
        return dict(steps=int(point["T"]), gradient_evaluations=0,
                    memory_bytes=bytes_per_step_and_d * point["T"] * point["d"])

    return (types.SimpleNamespace(plan_point=plan_point),
            types.SimpleNamespace(build=lambda n, d, seed: None))


@pytest.mark.parametrize(("warm", "per", "largest", "want", "capped"), [
    # priced 16 * 1e-5 * T at d = 128 (power 1 from d = 8): the largest within 0.6 CPU-s
    ([200, 1000, 2000, 40000], 0.0, None, 2000, None),
    ([200, 40000], 0.0, None, None, None),  # 200 is priced below 0.15: grown instead
    # 2000 steps at d = 128 plan 1.5x the probes' memory cap (at d = 8 they would fit)
    ([200, 1000, 2000], 1.5 / (2000 * 128), None, 1000, None),
    ([200, 1000, 2000], 0.0, {"T": 1500.0}, 1000, 1500.0),  # 2000 passed over for largest
])
def test_the_warm_probe_is_the_largest_priced_size_within_the_limits(
        monkeypatch, warm, per, largest, want, capped):
    """``_warm_probe`` picks the largest warm size the fit prices within ``2 *
    _PROBE_SECONDS`` at the grid's largest ``d`` and at least half the target, planned at
    that ``d`` within the probes' memory cap and not past ``largest`` (then ``capped_at`` is
    ``largest``'s size), at ``N = 32`` where ``T`` grows (the probes' own point)."""
    monkeypatch.setattr(regimes, "dry_plan",
                        lambda st, sp, point, trials: st.plan_point(point, None, trials))
    study, spec = _priced_fake(per * regimes.PROBE_MAX_BYTES)
    fixed = dict(d=8, N=500, T=10**6)
    got = regimes._warm_probe(study, spec, fixed, 128, 8, 16, largest,  # type: ignore
                              (1e-5, 0.0), warm)
    if want is None:
        assert got is None
        return
    assert got == (dict(fixed, d=128, N=32, T=want), capped)


@pytest.mark.parametrize("warm", [[float("nan")], [0], [-200], [2.5], [True], "200", [np.inf]])
def test_bad_warm_sizes_are_a_value_error_naming_them(warm):
    """``cost_over_d(warm=)`` takes positive integer sizes only; anything else is a
    ValueError naming ``warm`` before any probe runs (NaN reached ``int()``, unnamed)."""
    with pytest.raises(ValueError, match="^warm must be"):
        regimes.cost_over_d(None, None, dict(d=8, N=100, T=2000), [2, 8], 4,  # type: ignore
                            fit=(1e-6, 1e-9), warm=warm)
