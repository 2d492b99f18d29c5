"""A planned grid's memory estimate covers the cost probes that ran before it.

The probes of a full study run before any grid point and are capped at
``regimes.PROBE_MAX_BYTES`` of planned arrays (``tests/verify/test_cost_probe.py``); the
estimate ``--max-memory-gb`` is compared with is the larger of that and the grid's largest
point, plus the first run's constant. Measured before: ``yang.nsgd --vary N`` at a 120 s
budget peaked 174 MiB above its imports against an 85 MiB estimate (its probes reached
T = 204,800 steps); bench/bench_plan_memory.md."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_a_fallback_carries_the_probes_only_where_they_ran(monkeypatch) -> None:
    """The cost probes run on first use, when the planner prices a grid: a fallback after
    pricing records them, one whose every grid was refused unpriced (for memory) does not,
    nor does a quick study's default grid, which probes no further than its points."""
    s = get_study("strongly_convex.heavy_ball")
    spec = study.problem(s.problems[0]) if isinstance(s.problems[0], str) else s.problems[0]
    probes: list[int] = []

    def probe_fit(study, spec, point, trials, largest=None, stopped=None, sizes=None,
                 target=None):
        probes.append(trials)
        return (1e-6, 1e-9, 0.1)

    def priced(*a, cost_for, **k):  # prices a grid, finds none informative
        cost_for(4)
        cost_for(32)  # probed at the study's probe trials at most (heavy ball: 4,096)
        return None

    monkeypatch.setattr(regimes, "_probe_fit", probe_fit)
    monkeypatch.setattr(regimes, "plan_grid", priced)
    args = (s, spec, "N", (100.0, 200.0), False, dict(s.fixed), 4)
    fallback, _, _ = study._choose_grid(*args, False, "auto", 900.0, False, ())
    assert probes == [4, min(32, s.probe_trials)] and fallback["fallback"]
    assert fallback["probe_memory_bytes"] == regimes.PROBE_MAX_BYTES
    probes.clear()
    monkeypatch.setattr(regimes, "plan_grid", lambda *a, **k: None)  # refused unpriced
    unpriced, _, _ = study._choose_grid(*args, False, "auto", 900.0, False, ())
    assert not probes and unpriced["fallback"] and "probe_memory_bytes" not in unpriced
    quick, _, _ = study._choose_grid(*args, True, "auto", 900.0, False, ())
    assert not probes and "probe_memory_bytes" not in quick


def _fake_planner(monkeypatch, informative_from_t: float):
    """A study whose bound is informative (below the trivial 1) from ``N = 1000`` at
    ``T >= informative_from_t``, holding 100 bytes per step and trial."""
    import types

    def dry_plan(study, spec, point, trials):
        t, n = float(point["T"]), float(point["N"])
        bound = 0.5 if (t >= informative_from_t and n >= 1000) else 2.0
        return dict(bound=bound, trivial=1.0, do_nothing=1.0, steps=t,
                    gradient_evaluations=t * trials, memory_bytes=100.0 * t * trials)

    monkeypatch.setattr(regimes, "dry_plan", dry_plan)
    fake = types.SimpleNamespace(fixed=dict(d=8, N=100, T=1000), theorem="fake",
                                 headline_exponent=lambda var: None)
    return fake


def _plan(fake, budget, trials=16):
    too_large: list[str] = []

    def fits(points, t):
        return max(100.0 * float(p["T"]) * t for p in points) <= budget

    plan = regimes.plan_grid(fake, None, "N", dict(fake.fixed), None, trials,
                             cost=(1e-9, 1e-9), cost_for=lambda t: (1e-9, 1e-9),
                             max_seconds=1e9, reduce_trials=True, fits_memory=fits,
                             too_large=too_large)
    return plan, too_large


def test_the_planner_never_plans_a_grid_above_the_memory_budget(monkeypatch):
    """Only T = 1e7 is informative; its grid holds 4 GB at 4 trials. Under a 1 GB budget the
    planner plans nothing and says why (the study then runs the default grid, labelled);
    under 10 GB it plans T = 1e7 with the most trials that fit, 8 (8 GB; 16 would hold
    16 GB). Before, it planned the 16-trial grid and the study refused it."""
    fake = _fake_planner(monkeypatch, 1e7)
    plan, too_large = _plan(fake, 1e9)
    assert plan is None and too_large == ["T=1e+07"]
    plan, too_large = _plan(fake, 1e10)
    assert plan is not None and plan.fixed["T"] == 1e7 and plan.extra["trials"] == 8
    assert too_large == []
    # control: without a budget the 16-trial grid is planned
    plan, _ = _plan(fake, float("inf"))
    assert plan is not None and plan.extra["trials"] == 16


def test_a_smaller_knob_that_fits_is_planned_when_the_larger_does_not(monkeypatch):
    """Informative from T = 1e5: T = 1e5 and 1e6 fit a 1 GB budget at 16 trials, 1e7 does
    not; the plan is a T that fits, and the skipped knob is named."""
    fake = _fake_planner(monkeypatch, 1e5)
    plan, too_large = _plan(fake, 1e9)
    assert plan is not None and plan.fixed["T"] in (1e5, 1e6) and "T=1e+07" in too_large


def test_the_fallback_says_how_much_the_refused_grid_needs(monkeypatch):
    """A refused informative grid's reason gives the least memory among the grids refused
    (the tree studies' need 0.3-26 TB: "--allow-large runs it" alone did not say it
    cannot), not the first or the last one refused, and a grid that fits does not count.
    Control: with ``allow_large`` nothing is refused."""
    s = get_study("strongly_convex.heavy_ball")
    spec = study.problem(s.problems[0]) if isinstance(s.problems[0], str) else s.problems[0]
    monkeypatch.setattr(regimes, "_probe_fit", lambda *a, **k: (1e-6, 1e-9, 0.1))
    # the estimate: 1e9 bytes per unit of N, read off the grid's largest N
    monkeypatch.setattr(study, "_estimated_memory",
                        lambda st, sp, pts, t, probe=0.0: 1e9 * max(p["N"] for p in pts))
    asked: list[bool] = []

    def plan_grid(*a, fits_memory, too_large, **k):
        for n in (7.0, 5.0, 6.0, 3.0):  # 7, 5 and 6 GB refused under 4 GB; 3 GB fits
            asked.append(fits_memory([{"N": n}], 4))
        if not all(asked):
            too_large.append("T=1e+07")
        return None

    monkeypatch.setattr(regimes, "plan_grid", plan_grid)
    args = (s, spec, "N", (100.0, 200.0), False, dict(s.fixed), 4, False, "auto", 900.0,
            False, ())
    regime, _, _ = study._choose_grid(*args, max_memory=4e9)
    assert asked == [False, False, False, True]
    assert regime["refused_memory_bytes"] == 5e9
    assert "the smallest grid refused needs 5 GB" in regime["why"], regime["why"]
    asked.clear()
    regime, _, _ = study._choose_grid(*args, max_memory=4e9, allow_large=True)
    assert asked == [True] * 4 and "refused_memory_bytes" not in regime


def _memory_fake(monkeypatch) -> tuple[object, list[int], object]:
    """A study whose every point is informative and holds 1e8 bytes per unit of d and trial,
    its cost function recording the trial counts it was asked for."""
    import types

    def dry_plan(study, spec, point, trials):
        return dict(bound=0.5, trivial=1.0, do_nothing=1.0, steps=100.0,
                    gradient_evaluations=100.0 * trials,
                    memory_bytes=1e8 * float(point["d"]) * trials)

    monkeypatch.setattr(regimes, "dry_plan", dry_plan)
    fake = types.SimpleNamespace(fixed=dict(d=8, N=1000, T=100), theorem="fake",
                                 headline_exponent=lambda var: None)
    priced: list[int] = []

    def cost_for(t):
        priced.append(t)
        return (1e-9, 1e-9)
    return fake, priced, cost_for


def test_a_window_over_d_that_fits_is_planned_and_nothing_is_priced_for_a_refused_one(
        monkeypatch):
    """Over d the planner tries the whole grid, then narrower windows: a window above the
    memory budget is now skipped unpriced and a narrower one that fits is planned. Before,
    the widest informative window was priced (cost probes: runs) and then refused, and the
    study fell back to the default grid. Every point is informative here and holds 1e8
    bytes per unit of d and trial: under 7e9 bytes at 4 trials, d <= 16 fits."""
    fake, priced, cost_for = _memory_fake(monkeypatch)

    def plan(budget):
        too_large: list[str] = []
        priced.clear()
        got = regimes.plan_grid(
            fake, None, "d", dict(fake.fixed), (4.0, 8.0, 16.0, 32.0, 64.0), 4,
            cost_for=cost_for, max_seconds=1e9, user_fixed=("N", "T"),
            fits_memory=lambda pts, t: max(1e8 * p["d"] * t for p in pts) <= budget,
            too_large=too_large)
        return got, too_large

    got, too_large = plan(7e9)
    assert got is not None and max(got.values) <= 16 and len(got.values) >= 3, got
    assert too_large == [] and "a wider window is over the memory budget" in got.why, got.why
    # with fewer trials allowed, a window is kept if it fits at the fewest (4: d <= 16 holds
    # 6.4e9), not at the 16 asked for (25.6e9): the plan then runs 4 trials
    too_large = []
    got = regimes.plan_grid(
        fake, None, "d", dict(fake.fixed), (4.0, 8.0, 16.0, 32.0, 64.0), 16,
        cost_for=cost_for, max_seconds=1e9, user_fixed=("N", "T"), reduce_trials=True,
        fits_memory=lambda pts, t: max(1e8 * p["d"] * t for p in pts) <= 7e9,
        too_large=too_large)
    assert got is not None and max(got.values) <= 16 and got.extra["trials"] == 4, got
    # nothing fits: refused with the reason, and no grid was priced
    got, too_large = plan(1e9)
    assert got is None and too_large == ["the informative grid"] and priced == []
    # control: without a budget the whole grid is planned
    got, _ = plan(float("inf"))
    assert got is not None and got.values == (4.0, 8.0, 16.0, 32.0, 64.0)


def test_a_sweep_over_d_reports_the_cost_power_of_d(monkeypatch):
    """The lazily probed cost over d (``regimes.cost_over_d``, at ``min(trials, 16)`` trials)
    still reaches the regime's ``cost_power_of_d`` (an independent review found it empty
    once the probes were made lazy)."""
    s = get_study("strongly_convex.heavy_ball")
    spec = study.problem(s.problems[0]) if isinstance(s.problems[0], str) else s.problems[0]
    over_d: list[int] = []
    fits: list[object] = []
    warms: list[list[int]] = []

    def cost_over_d(study_, spec_, fixed, values, trials, largest=None, fit=None, warm=()):
        over_d.append(trials)
        fits.append(fit)
        warms.append(list(warm))

        def factor(point):
            return (float(point["d"]) ** 0.5, float(point["d"]) ** 0.5)
        factor.powers = (0.5, 0.5)
        return factor

    def probe_fit(study_, spec_, point, trials, largest=None, stopped=None, sizes=None,
                  target=None):
        if sizes is not None:  # the sizes its probes ran at
            sizes.extend([32, 96])
        return (1e-6, 1e-9, 0.1)

    monkeypatch.setattr(regimes, "_probe_fit", probe_fit)
    monkeypatch.setattr(regimes, "cost_over_d", cost_over_d)
    monkeypatch.setattr(regimes, "dry_plan", lambda st, sp, p, t: dict(
        bound=0.5, trivial=1.0, do_nothing=1.0, steps=100.0, gradient_evaluations=100.0 * t,
        memory_bytes=1e3))
    regime, _, _ = study._choose_grid(s, spec, "d", (2.0, 4.0, 8.0, 16.0), False,
                                      dict(s.fixed), 32, False, "auto", 900.0, False, ())
    assert over_d == [16]
    assert regime["cost_power_of_d"] == [0.5, 0.5], regime
    # the probe fit made before it sets where its probes start (the fit at 16 trials as is),
    # and the sizes its probes ran at reach the power's probe (through the planner's
    # ProbeCosts, measured_fit and remembered_cost_over_d)
    assert fits == [(1e-6, 1e-9)], fits
    assert warms == [[32, 96]], warms


def test_every_planned_point_is_priced_with_the_fixed_cost_of_a_run(monkeypatch):
    """A cost ``(a, b, c)``: each point costs ``c + a * steps + b * evaluations`` (closed
    form), so the fixed cost a point pays once (calibration, probes, checks) counts against
    the budget. Before, the planner priced ``a * steps`` only: a full ``clipped_sgd --vary N``
    grid of four 1e6-step points was estimated at 22.7 CPU-s and ran 49.5."""
    import types

    monkeypatch.setattr(regimes, "dry_plan", lambda st, sp, p, t: dict(
        bound=0.5, trivial=1.0, do_nothing=1.0, steps=1000.0 * p["d"],
        gradient_evaluations=10.0 * t, memory_bytes=1e3))
    fake = types.SimpleNamespace(fixed=dict(d=8, N=1000, T=100), theorem="fake",
                                 headline_exponent=lambda var: None)
    vals = (4.0, 8.0, 16.0, 32.0, 64.0)

    def plan(cost, max_seconds=1e9):
        return regimes.plan_grid(fake, None, "d", dict(fake.fixed), vals, 4,
                                 cost_for=lambda t: cost, max_seconds=max_seconds,
                                 user_fixed=("N", "T"))

    got = plan((1e-3, 1e-2, 2.0))
    want = tuple(2.0 + 1e-3 * 1000.0 * v + 1e-2 * 40.0 for v in vals)
    np.testing.assert_allclose(got.seconds, want, rtol=1e-12)
    assert got.extra["fixed_seconds_per_point"] == 2.0
    # the fixed cost decides the budget: 5 points cost 136 CPU-s with it, 126 without
    assert plan((1e-3, 1e-2)).seconds == pytest.approx(tuple(w - 2.0 for w in want))
    assert plan((1e-3, 1e-2), max_seconds=130.0).values == vals
    assert plan((1e-3, 1e-2, 2.0), max_seconds=130.0).values != vals


def test_verify_passes_the_fixed_cost_to_the_plan(monkeypatch):
    """The planner ``verify`` runs prices each point with the probes' fixed cost: the
    regime's ``fixed_seconds_per_point`` is ``_probe_fit``'s ``c`` and every point's estimate
    is ``c + a * steps + b * evaluations`` (closed form), through ``_choose_grid`` (a review
    found the wiring untested: reverting it to the two-number cost passed every test)."""
    s = get_study("strongly_convex.heavy_ball")
    spec = study.problem(s.problems[0]) if isinstance(s.problems[0], str) else s.problems[0]
    monkeypatch.setattr(regimes, "_probe_fit", lambda *a, **k: (1e-6, 1e-4, 0.25))
    monkeypatch.setattr(regimes, "cost_over_d", lambda *a, **k: (lambda p: (1.0, 1.0)))
    monkeypatch.setattr(regimes, "dry_plan", lambda st, sp, p, t: dict(
        bound=0.5, trivial=1.0, do_nothing=1.0, steps=1000.0 * p["d"],
        gradient_evaluations=10.0 * t, memory_bytes=1e3))
    regime, values, _ = study._choose_grid(s, spec, "d", (2.0, 4.0, 8.0, 16.0), False,
                                           dict(s.fixed), 4, False, "auto", 900.0, False, ())
    assert regime["fixed_seconds_per_point"] == 0.25
    want = [0.25 + 1e-6 * 1000.0 * v + 1e-4 * 40.0 for v in values]
    np.testing.assert_allclose(regime["estimated_seconds"], want, rtol=1e-12)


def test_a_window_that_fits_at_the_full_trials_is_not_priced_at_the_fewest(monkeypatch):
    """Windows over d are priced at the asked trials first; the fewest trials' price (a
    second probe fit: ~5 CPU-s of runs for Yang et al.'s full studies) is asked for only when
    that does not fit. Closed form: 1e-5 s per step and trial, 1000 d steps a point, so the
    whole grid (124,000 steps) costs 19.84 s at 16 trials, 9.92 at 8, 4.96 at 4. Before, a
    cost at 4 trials was always measured, here [4, 16] for a grid that fits at 16."""
    import types

    monkeypatch.setattr(regimes, "dry_plan", lambda st, sp, p, t: dict(
        bound=0.5, trivial=1.0, do_nothing=1.0, steps=1000.0 * p["d"],
        gradient_evaluations=0.0, memory_bytes=1e3))
    fake = types.SimpleNamespace(fixed=dict(d=8, N=1000, T=100), theorem="fake",
                                 headline_exponent=lambda var: None)
    vals = (4.0, 8.0, 16.0, 32.0, 64.0)
    priced: list[int] = []

    def cost_for(t):
        priced.append(t)
        return (1e-5 * t, 1e-12)

    def plan(max_seconds):
        priced.clear()
        return regimes.plan_grid(fake, None, "d", dict(fake.fixed), vals, 16,
                                 cost_for=cost_for, max_seconds=max_seconds,
                                 user_fixed=("N", "T"), reduce_trials=True)

    got = plan(100.0)
    assert sorted(set(priced)) == [16] and got.values == vals
    assert sum(got.seconds) == pytest.approx(19.84, rel=1e-6)
    # over the budget at 16 trials: the fewest trials' price is asked for, and the whole
    # grid runs at 8 trials (9.92 s within 10)
    got = plan(10.0)
    assert 4 in priced and got.values == vals and got.extra["trials"] == 8
    assert sum(got.seconds) == pytest.approx(9.92, rel=1e-6)
    # --allow-expensive: the widest informative window runs, unpriced in the window loop,
    # whatever the budget (a review's mutant that priced it planned the cheapest window)
    priced.clear()
    got = regimes.plan_grid(fake, None, "d", dict(fake.fixed), vals, 16, cost_for=cost_for,
                            max_seconds=1.0, user_fixed=("N", "T"), reduce_trials=True,
                            allow_expensive=True)
    assert got.values == vals and sorted(set(priced)) == [16]



@pytest.mark.parametrize("var", ["d", "N"])
def test_a_grid_over_the_memory_budget_at_the_asked_trials_is_priced_at_the_trials_it_runs(
        monkeypatch, var: str) -> None:
    """A grid that fits the memory budget only at fewer trials than asked is priced at the
    most trials that fit (what runs), never at the asked trials: that price decided nothing
    and cost a probe fit of its own (``normalized_sgd --vary N``: 4.3 of its 7.8 CPU-s of
    planning); over ``d`` and ``eps`` the windows too (``normalized_sgd``'s ``--vary d``:
    4.5 of its 9.8 CPU-s). The plan is the one priced at the asked trials would have given
    (the same values, at the trials that fit). Control: where the asked trials fit, they are priced,
    and only they."""
    fake, priced, cost_for = _memory_fake(monkeypatch)

    def plan(budget: float):
        priced.clear()
        return regimes.plan_grid(
            fake, None, var, dict(fake.fixed), (4.0, 8.0, 16.0), 16, cost_for=cost_for,
            max_seconds=1e9, user_fixed=("T",) + (("N",) if var == "d" else ()),
            reduce_trials=True,
            fits_memory=lambda pts, t: max(1e8 * p["d"] * t for p in pts) <= budget,
            too_large=[])

    # over d (up to 16): 16 and 8 trials hold 25.6e9 and 12.8e9, over; 4 fits (6.4e9); over N
    # (d = 8): 16 trials hold 12.8e9, 8 fit
    runs = 4 if var == "d" else 8
    got = plan(7e9)
    assert got is not None and got.extra["trials"] == runs, got
    # the windows over d too are priced at the trials that fit (before: at the asked trials
    # first, a 16-trial probe fit that decided nothing; normalized_sgd --vary d and eps)
    assert set(priced) == {runs}, priced
    assert (got.values == (4.0, 8.0, 16.0) if var == "d" else len(got.values) == 4)
    got = plan(1e12)  # control: the asked trials fit
    assert got is not None and got.extra["trials"] == 16 and set(priced) == {16}, priced


def test_settings_of_t_are_still_compared_at_the_asked_trials(monkeypatch) -> None:
    """With several settings of T (Yang et al.'s knobs) the planner compares them at the asked
    trials, as before: a setting that fits only at fewer trials is not preferred because its
    price there is lower. Here T = 1e4 fits the memory budget only at 4 trials and is nearly
    free there, T = 1e5 and above fit at 16 and cost less at 16 than T = 1e4 does; the plan
    runs T = 1e5 at 16 trials (pricing each setting at its own trials would pick T = 1e4)."""
    import types

    def dry_plan(study, spec, point, trials):
        big = point["T"] == 10_000  # a fake whose T = 1e4 takes 1e7 steps
        steps = 1e7 if big else float(point["T"])
        return dict(bound=0.5, trivial=1.0, do_nothing=1.0, steps=steps,
                    gradient_evaluations=steps * trials,
                    memory_bytes=(1e9 if big else 1e6) * trials)

    monkeypatch.setattr(regimes, "dry_plan", dry_plan)
    fake = types.SimpleNamespace(fixed=dict(d=8, N=1000, T=10_000), theorem="fake",
                                 headline_exponent=lambda var: None)
    costs = {16: (1e-6, 1e-9), 8: (1e-6, 1e-9), 4: (1e-12, 1e-12)}
    got = regimes.plan_grid(
        fake, None, "N", dict(fake.fixed), (100.0, 200.0), 16, cost_for=lambda t: costs[t],
        max_seconds=1e9, reduce_trials=True,
        fits_memory=lambda pts, t: max(dry_plan(None, None, p, t)["memory_bytes"]
                                       for p in pts) <= 5e9, too_large=[])
    assert got is not None and got.fixed["T"] == 100_000 and got.extra["trials"] == 16, got


def test_a_window_over_memory_is_priced_by_the_asked_trials_fit_already_there(monkeypatch):
    """With two settings of T over ``d`` (``clipped_sgd --vary eps``: T = 1e6 fits the memory
    budget at 16 trials, T = 1e7 only at 4), the second setting's windows are priced by the
    16-trial fit already made (its price bounds the 4 trials'), not by a new 4-trial probe
    fit (2-3 CPU-s, whose price the comparison at the asked trials would not use). Control: a
    cost without fits kept (a plain function) prices that window at the 4 trials that fit."""
    import types

    def dry_plan(study, spec, point, trials):
        big = point["T"] >= 10**7
        return dict(bound=0.5, trivial=1.0, do_nothing=1.0, steps=float(point["T"]),
                    gradient_evaluations=float(point["T"]) * trials,
                    memory_bytes=(1e9 if big else 1e6) * trials)

    monkeypatch.setattr(regimes, "dry_plan", dry_plan)
    monkeypatch.setattr(regimes, "_knobs", lambda study, fixed: [dict(T=10**6), dict(T=10**7)])
    fake = types.SimpleNamespace(fixed=dict(d=8, N=1000, T=10**6), theorem="fake",
                                 headline_exponent=lambda var: None)

    class Costs:
        def __init__(self) -> None:
            self.fits: dict[int, object] = {}
            self.priced: list[int] = []

        def __call__(self, t: int) -> tuple[float, float]:
            self.priced.append(t)
            self.fits[t] = ((1e-6, 1e-9), None)
            return (1e-6, 1e-9)

    def plan(cost_for):
        return regimes.plan_grid(
            fake, None, "d", dict(fake.fixed), (2.0, 4.0, 8.0), 16, cost_for=cost_for,
            max_seconds=1e9, user_fixed=("N",), reduce_trials=True,
            fits_memory=lambda pts, t: max(dry_plan(None, None, p, t)["memory_bytes"]
                                           for p in pts) <= 5e9, too_large=[])

    costs = Costs()
    got = plan(costs)
    assert got is not None and got.fixed["T"] == 10**6 and got.extra["trials"] == 16
    assert set(costs.priced) == {16}, costs.priced
    plain: list[int] = []
    got = plan(lambda t: plain.append(t) or (1e-6, 1e-9))
    assert got is not None and got.fixed["T"] == 10**6 and 4 in plain, plain
