"""Verdict semantics and mutants: correct algorithms pass their ratio and exact verdicts, each
mutant is caught by the verdict built for it, slopes never gate, the grid planner says where a
bound is informative and what it costs."""

from __future__ import annotations

import math

import pytest

from dpbounds.verify import Verdict, get_study, problem, scaling_study
from dpbounds.verify.regimes import dry_plan, plan_grid

_A1 = dict(vary={"d": [4, 16]}, fixed={"N": 200}, trials=4, replicates=100)


def _status(res, key: str) -> bool:
    (v,) = [v for v in res.verdicts if v.case.split(" (")[0] == f"{key} over {res.vary}"
            and v.gating]
    return v.holds


def test_correct_tree_run_passes_its_exact_checks() -> None:
    res = scaling_study("tran_cutkosky.alg1", **_A1)
    for key in ("ledger", "drawn", "noise_exact"):
        assert _status(res, key), key
    assert res.holds


def test_noise_sqrt2_is_caught_by_the_drawn_and_exact_checks_not_the_ledger() -> None:
    res = scaling_study("tran_cutkosky.alg1", mutation="noise_sqrt2", **_A1)
    assert _status(res, "ledger")  # the ledger is unchanged: the mutant lies there
    assert not _status(res, "drawn") and not _status(res, "noise_exact")
    assert not res.holds


def test_over_noising_fails_the_ledger_and_the_exact_noise() -> None:
    res = scaling_study("tran_cutkosky.alg2", mutation="noise_d", **_A1)
    assert not _status(res, "ledger_2") and not _status(res, "noise_exact")
    assert _status(res, "drawn")  # it drew what it declared


def test_frozen_heavy_ball_fails_its_bound_and_exact_value() -> None:
    kw = dict(vary={"N": [300, 1000]}, trials=40, replicates=100)
    ok = scaling_study("strongly_convex.heavy_ball", **kw)
    assert ok.holds and _status(ok, "subopt_exact") and all(ok.informative)
    assert _status(ok, "subopt_sign")  # closed-form F*: F(x_T) - F* >= 0 at every trial
    bad = scaling_study("strongly_convex.heavy_ball", mutation="frozen", **kw)
    assert not _status(bad, "subopt") and not _status(bad, "subopt_exact")


def test_nsgd_noise_r_is_caught_and_applies_to_nsgd_only() -> None:
    kw = dict(vary={"eps": [0.5, 2.0]}, fixed={"T": 300}, trials=3, replicates=50)
    assert scaling_study("yang.nsgd", **kw).holds
    bad = scaling_study("yang.nsgd", mutation="nsgd_noise_r", **kw)
    assert not _status(bad, "drawn") and _status(bad, "ledger")
    with pytest.raises(ValueError, match="does not apply"):
        scaling_study("yang.sgd", mutation="nsgd_noise_r", **kw)


def test_slopes_are_shape_diagnostics() -> None:
    v = Verdict("s", "c", "slope <= exponent + CI", 1.0, 0.1, 0.0, "o", False, gating=False)
    assert not v.failed and v.status == "no (shape)"
    assert Verdict("s", "c", "== exact", 1.0, 0.1, 0.0, "o", False).failed


def test_json_says_where_the_bound_is_informative() -> None:
    res = scaling_study("strongly_convex.heavy_ball", vary={"N": [100, 1000]}, trials=20,
                        replicates=50)
    doc = res.to_json()
    assert doc["regime"]["name"] == "user grid"
    info = doc["informative"]
    # N = 100: bound 4.6 above the start's R = 1.3; N = 1000: below both
    assert [i["informative"] for i in info] == [False, True]
    assert info[0]["below_do_nothing"] is False and info[1]["below_trivial"] is True
    assert all(v["gating"] is False for v in doc["verdicts"] if "slope" in v["name"])


def test_planner_finds_the_informative_grid_and_its_cost() -> None:
    """Heavy ball: affordable, every planned point informative (checked by dry plans);
    Tran & Cutkosky Alg. 1 at today's cost: every informative point over the budget, each
    skipped with its estimate (>= 1.4e8 steps x 4 trials at 1e-6 s)."""
    spec = problem("quadratic")
    st = get_study("strongly_convex.heavy_ball")
    g = plan_grid(st, spec, "N", dict(st.fixed), None, 20, cost=(1e-6, 1e-8))
    assert g is not None and len(g.values) == 4 and g.values[-1] / g.values[0] == 10
    for v in g.values:
        p = dry_plan(st, spec, dict(g.fixed, N=int(v)), 20)
        assert p["bound"] < min(p["trivial"], p["do_nothing"])
    tc = get_study("tran_cutkosky.alg1")
    g1 = plan_grid(tc, problem("huber_well"), "N", dict(tc.fixed), None, 4, cost=(1e-6, 0.0),
                   max_seconds=60)
    # narrowed to its cheapest grid (2 points, factor 1.5), both still over 60 s: skipped
    assert g1 is not None and not g1.values and len(g1.skipped) == 2
    assert g1.extra["full_values"][0] > 1e5  # Theorem 6 is informative only from N ~ 1.7e5


def test_planner_fits_the_budget_with_fewer_trials_and_a_narrower_span() -> None:
    """Theorem 9 with a cost linear in the trials (1 us per trial-step, the compiled loop
    under load): the factor-10 grid at 16 trials (~4e4 s) is over 900 s; the planner
    narrows the span and lowers the trials until the estimate fits, every point informative
    by dry plans (the oracle), the first at Theorem 9's first informative N. Control:
    without reduce_trials the count stays 16 and at most one point fits (the study would fall
    back to the default grid)."""
    tc = get_study("tran_cutkosky.alg2")
    spec = problem("huber_well")

    def cost(t: int) -> tuple[float, float]:
        return 1e-6 * t, 0.0

    g = plan_grid(tc, spec, "N", dict(tc.fixed), None, 16, cost_for=cost, max_seconds=900,
                  reduce_trials=True)
    assert g is not None and not g.skipped and len(g.values) >= 2
    t = g.extra["trials"]
    assert t in (4, 8) and sum(g.seconds) <= 900
    for v, s in zip(g.values, g.seconds):
        p = dry_plan(tc, spec, dict(g.fixed, N=int(v)), t)
        assert p["bound"] < min(p["trivial"], p["do_nothing"])
        assert s == pytest.approx(1e-6 * t * p["steps"])
    n0 = g.values[0]
    below = dry_plan(tc, spec, dict(g.fixed, N=int(n0 * 0.85)), t)
    assert below["bound"] >= below["do_nothing"]  # the lattice point before is not
    ctrl = plan_grid(tc, spec, "N", dict(tc.fixed), None, 16, cost_for=cost, max_seconds=900)
    assert ctrl is not None and ctrl.extra["trials"] == 16 and len(ctrl.values) < 2
    assert ctrl.skipped


def test_bst14_full_study_plans_at_its_informative_eps_and_keeps_the_users() -> None:
    """BST14's informative N scales as 1/eps: the full study plans at eps = 8 (n ~ 1e4,
    T = 1e8) unless the user fixes eps; at eps = 1 the first informative n is > 1e5."""
    from dpbounds.verify.study import _choose_grid

    st = get_study("kamath.bst14")
    spec = problem("huber_well")
    vals = st.defaults["N"][0]
    reg, values, fixed = _choose_grid(st, spec, "N", vals, False, dict(st.fixed), 16, False,
                                      "auto", 1e9, False, [])
    assert reg["name"] == "informative" and fixed["eps"] == 8.0 and values[0] < 2e4
    for v in values:
        p = dry_plan(st, spec, dict(fixed, N=int(v)), 16)
        assert p["bound"] < min(p["trivial"], p["do_nothing"])
    g = plan_grid(st, spec, "N", dict(st.fixed), None, 4, cost=(1e-12, 0.0),
                  allow_expensive=True)
    assert g is not None and g.fixed["eps"] == 1.0 and g.values[0] > 1e5


def test_path_grid_follows_the_headline_exponent() -> None:
    """Theorem 6 over N: the path grid's bound slopes are within 0.1 of the headline -1/2
    (checked on the planned values by dry plans); a theorem without a headline has no path."""
    tc = get_study("tran_cutkosky.alg1")
    spec = problem("huber_well")
    g = plan_grid(tc, spec, "N", dict(tc.fixed), None, 4, path=True, cost=(1e-9, 0.0))
    assert g is not None and g.regime == "path" and len(g.values) == 4
    b = [dry_plan(tc, spec, dict(g.fixed, N=int(v)), 4)["bound"] for v in g.values]
    s = math.log(b[1] / b[0]) / math.log(g.values[1] / g.values[0])
    assert abs(s - (-0.5)) <= 0.1
    shb = get_study("strongly_convex.heavy_ball")
    assert plan_grid(shb, problem("quadratic"), "N", dict(shb.fixed), None, 4, path=True,
                     cost=(1e-9, 0.0)) is None


def test_cost_model_predicts_a_longer_run_and_the_fit_without_fixed_cost_does_not():
    """The planner's cost model against the measured CPU time of a run 5-50x longer than its
    largest probe (the oracle is the measurement; a factor-6 window both ways, as CPU time on a
    shared machine is noisy). Control: a fit without the fixed cost per run, on the two tiny
    probes the planner used before, is off by more than 20x (it charged calibration and
    dispatch to a few steps and estimated 21.8 h for a point that costs minutes)."""
    import time

    import numpy as np

    from dpbounds.verify.regimes import seconds_per_evaluation

    st = get_study("tran_cutkosky.alg1")
    spec = problem("huber_well")
    base = dict(N=1000, d=4, eps=8.0, delta=1e-6)
    a, b = seconds_per_evaluation(st, spec, base, 4)
    big = dict(base, N=6000)
    inst = spec.build(6000, 4, seed=0)
    pl = dry_plan(st, spec, big, 4)
    t0 = time.process_time()
    st.run_point(big, inst, 4, 0, None)
    measured = time.process_time() - t0
    predicted = a * pl["steps"] + b * pl["gradient_evaluations"]
    assert measured / 6 <= predicted <= 6 * measured, (predicted, measured)
    rows, secs = [], []
    for n in (32, 96):
        p = dict(base, N=n)
        inst_n = spec.build(n, 4, seed=0)
        q = dry_plan(st, spec, p, 4)
        t0 = time.process_time()
        st.run_point(p, inst_n, 4, 0, None)
        secs.append(time.process_time() - t0)
        rows.append((q["steps"], q["gradient_evaluations"]))
    old = np.linalg.lstsq(np.array(rows, float), np.array(secs), rcond=None)[0]
    old_pred = max(old[0], 0) * pl["steps"] + max(old[1], 0) * pl["gradient_evaluations"]
    assert old_pred > 20 * measured, (old_pred, measured)


def test_grid_cuts_refine_and_window_the_grid() -> None:
    """The candidate grids of a d/eps plan: the given grid, then windows of its ratio-2
    refinement, widest first, never fewer than three values; a path grid is never cut."""
    from dpbounds.verify.regimes import _grid_cuts

    cuts = _grid_cuts((2.0, 8.0, 32.0, 128.0), path=False)
    assert cuts[0] == (2.0, 8.0, 32.0, 128.0)
    assert cuts[1] == (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
    assert all(len(c) >= 3 for c in cuts)
    assert [len(c) for c in cuts[1:]] == sorted((len(c) for c in cuts[1:]), reverse=True)
    assert all(b / a == 2.0 for c in cuts[1:] for a, b in zip(c, c[1:]))
    assert _grid_cuts((2.0, 8.0, 32.0), path=True) == [(2.0, 8.0, 32.0)]


def test_planner_over_d_cuts_the_grid_to_where_the_bound_is_informative() -> None:
    """Theorem 6 at a user-fixed N = 5e5 over d = 4..64: vacuous from d = 32 (the bound grows
    as d^(1/4)), so the plan keeps the widest window where every point is informative (dry
    plans are the oracle), says so, and the next refined value above it is vacuous. Control:
    at N = 2e5 no window of three values is informative, so there is no plan."""
    st = get_study("tran_cutkosky.alg1")
    spec = problem("huber_well")
    grid = (4, 8, 16, 32, 64)

    def plan_at(n: float):
        return plan_grid(st, spec, "d", dict(st.fixed, N=n), grid, 4, cost=(1e-9, 0.0),
                         allow_expensive=True, user_fixed=["N"])

    def informative(n: int, d: float) -> bool:
        p = dry_plan(st, spec, dict(st.fixed, N=n, d=int(d)), 4)
        return p["bound"] < min(p["trivial"], p["do_nothing"])

    g = plan_at(5e5)
    assert g is not None and g.values == (4.0, 8.0, 16.0) and "d grid cut to [4, 16]" in g.why
    assert all(informative(500_000, d) for d in g.values)
    assert not informative(500_000, 32)
    assert plan_at(2e5) is None


def test_planner_over_d_prefers_a_narrower_window_that_fits_the_budget() -> None:
    """Theorem 6 over d = 4..64 with a cost of 1e-8 s per trial-step: the whole grid is
    informative at N = 1e6 but costs ~450 s; at a 100 s budget the plan is the widest window
    that fits (every point informative by dry plans, the total within the budget) and says
    why. Control: an unlimited budget keeps the whole grid."""
    st = get_study("tran_cutkosky.alg1")
    spec = problem("huber_well")

    def plan_at(budget: float):
        return plan_grid(st, spec, "d", dict(st.fixed), (4, 8, 16, 32, 64), 4,
                         cost_for=lambda t: (1e-8 * t, 0.0), max_seconds=budget)

    g = plan_at(100.0)
    assert g is not None and 3 <= len(g.values) < 5 and sum(g.seconds) <= 100.0
    assert "over the budget" in g.why and not g.skipped
    for v in g.values:
        p = dry_plan(st, spec, dict(g.fixed, d=int(v)), 4)
        assert p["bound"] < min(p["trivial"], p["do_nothing"])
    full = plan_at(1e9)
    assert full is not None and full.values == (4.0, 8.0, 16.0, 32.0, 64.0)
    assert sum(full.seconds) > 100.0


def test_skip_clipping_is_caught_by_the_clip_probe_only() -> None:
    """No verify problem has per-sample norms above the study's C = 3 tau0, so only the
    probe at a binding threshold (exact clipped mean from NumPy) sees unclipped DP-SGD."""
    kw = dict(vary={"eps": [0.25, 2.0]}, fixed={"T": 300}, trials=3, replicates=50)
    ok = scaling_study("yang.sgd", **kw)
    assert ok.holds and _status(ok, "clip_exact")
    assert all(p["clip_gap_over_se"] > 10 for p in ok.params)  # clipping moves the mean
    bad = scaling_study("yang.sgd", mutation="skip_clipping", **kw)
    assert not _status(bad, "clip_exact") and not bad.holds
    assert _status(bad, "ledger") and _status(bad, "drawn")  # blind to it, as before
    # DP-NSGD, Algorithms 1 and 2: tests/verify/test_clip_binds.py; no clip in DP heavy ball
    with pytest.raises(ValueError, match="does not apply"):
        scaling_study("strongly_convex.heavy_ball", mutation="skip_clipping",
                      vary={"d": [2, 4]}, trials=3, replicates=50)


def test_cost_over_d_recovers_the_power_of_d_and_clamps_it(monkeypatch) -> None:
    """The factor of :func:`cost_over_d` against a closed-form cost (the oracle): probe runs
    that cost ``c * steps * d^0.75`` (steps depending on d, as tuned horizons do) give the
    power 0.75, a factor of exactly 1 at the fixed point's d and ``(d/d0)^0.75`` elsewhere;
    timing noise that only adds time (one of the two runs at each end 3x slower) does not
    move it; a power
    above 1 (more than a step's O(d) work) is clamped. Control: a d-independent cost per step
    gives the factor 1 everywhere, though the steps differ."""
    from dpbounds.verify import regimes

    st = get_study("kamath.bst14")
    spec = problem("huber_well")  # not run: the probe runs are the closed form below
    fixed = dict(st.fixed, d=4)
    law = {"p": 0.75}
    probed: list[int] = []

    def fake(study, spec_, point, trials):
        probed.append(int(point["d"]))
        steps = 1000.0 * point["N"] / point["d"]
        slow = 3.0 if len(probed) % 4 in (1, 2) else 1.0  # one slow run at each end
        return slow * 1e-5 * steps * point["d"] ** law["p"], steps

    monkeypatch.setattr(regimes, "_timed_run", fake)
    f = regimes.cost_over_d(st, spec, fixed, (2, 8, 32, 128))
    assert set(probed) == {2, 128}  # the grid's two ends only
    assert f.powers == pytest.approx((0.75, 0.75), rel=1e-12)
    assert f(dict(fixed)) == (1.0, 1.0)
    assert f(dict(fixed, d=32)) == pytest.approx((8.0**0.75, 8.0**0.75), rel=1e-12)
    law["p"] = 5.0
    assert regimes.cost_over_d(st, spec, fixed, (2, 8)).powers == (1.0, 1.0)
    law["p"] = 0.0
    h = regimes.cost_over_d(st, spec, fixed, (2, 8))
    assert h(dict(fixed, d=8)) == (1.0, 1.0)
    assert regimes.cost_over_d(st, spec, fixed, (8,))(dict(fixed, d=8)) == (1.0, 1.0)


def test_planner_over_d_costs_each_point_at_its_own_d() -> None:
    """With a cost that grows as d^2 (``cost_factor``), every point's estimate is the dry
    plan's steps times the scaled cost (the oracle: the dry plans themselves), and at a budget
    1.5x the whole grid's d-independent cost the grid is cut to a narrower window.
    Control: without the factor the whole grid is planned, as before (this is how BST14 over
    d = 2..8 ran 1242 CPU-s against 888 estimated)."""
    st = get_study("tran_cutkosky.alg1")
    spec = problem("huber_well")
    grid = (4, 8, 16, 32, 64)
    rate = 1e-8

    def plan(factor, budget):
        return plan_grid(st, spec, "d", dict(st.fixed), grid, 4,
                         cost_for=lambda t: (rate * t, 0.0), max_seconds=budget,
                         cost_factor=factor)

    flat = plan(None, 1e9)
    assert flat is not None and flat.values == tuple(float(d) for d in grid)
    budget = 1.5 * sum(flat.seconds)  # the flat grid fits with room to spare

    def quad(p):
        return ((p["d"] / 4.0) ** 2, 1.0)

    quad.powers = (2.0, 0.0)
    g = plan(quad, budget)
    assert g is not None and len(g.values) < len(grid) and sum(g.seconds) <= budget
    for v, s in zip(g.values, g.seconds, strict=True):
        p = dry_plan(st, spec, dict(g.fixed, d=int(v)), 4)
        assert s == pytest.approx(rate * 4 * (v / 4.0) ** 2 * p["steps"], rel=1e-12)
    assert g.extra["cost_power_of_d"] == [2.0, 0.0]
    assert plan(None, budget).values == flat.values  # control


def test_planner_over_d_runs_the_cheapest_informative_window_when_none_fits() -> None:
    """Theorem 6 over d = 4..64 at 1e-8 s per trial-step: every informative window of three
    values costs more than a 60 s budget. The plan is then the cheapest informative window,
    its most expensive points dropped to fit (each kept point informative by dry plans, the
    total within the budget), not the vacuous default grid. Control: the widest window (what
    the planner took before) loses every point at this budget."""
    st = get_study("tran_cutkosky.alg1")
    spec = problem("huber_well")
    g = plan_grid(st, spec, "d", dict(st.fixed), (4, 8, 16, 32, 64), 4,
                  cost_for=lambda t: (1e-8 * t, 0.0), max_seconds=60.0)
    assert g is not None and len(g.values) >= 2 and sum(g.seconds) <= 60.0
    assert "cheapest informative window" in g.why
    for v in g.values:
        p = dry_plan(st, spec, dict(g.fixed, d=int(v)), 4)
        assert p["bound"] < min(p["trivial"], p["do_nothing"])
    wide = plan_grid(st, spec, "d", dict(st.fixed), (4, 8, 16, 32, 64), 4,
                     cost_for=lambda t: (1e-8 * t, 0.0), max_seconds=1e9)
    # the widest window's two cheapest points already cost more than 60 s: it kept one
    # point (no slope), so the study fell back to the vacuous default grid
    assert wide is not None and sum(sorted(wide.seconds)[:2]) > 60.0


def test_cost_over_d_starts_where_the_fit_prices_it_and_reuses_its_last_probe(
        monkeypatch) -> None:
    """Given the probe fit at the fixed point's d, :func:`cost_over_d` starts its growth at
    the largest probe the fit prices at most ``2 * _PROBE_SECONDS`` at the largest d (at
    power 1, the most it allows), runs no first probe twice (the fit paid compilation) and
    times the largest d once more, not twice: the last grown probe is one of its timings.
    Oracle: a closed-form cost ``1e-8 * steps * d^0.75`` (power 0.75, read as before).
    Control: without the fit it starts at N = 32, twice, and times both ends twice."""
    from dpbounds.verify import regimes

    st = get_study("kamath.bst14")
    spec = problem("huber_well")  # not run: the probe runs are the closed form below
    fixed = dict(st.fixed, d=4)
    runs: list[tuple[int, int]] = []

    def steps(point):
        return 1000.0 * point["N"] / point["d"]

    def fake(study, spec_, point, trials):
        runs.append((int(point["N"]), int(point["d"])))
        return 1e-8 * steps(point) * point["d"] ** 0.75, steps(point)

    monkeypatch.setattr(regimes, "_timed_run", fake)
    monkeypatch.setattr(regimes, "cost_plan", lambda study, spec_, point, trials: dict(
        steps=steps(point), gradient_evaluations=0.0, memory_bytes=0.0))
    fit = (1e-8 * 4**0.75, 0.0)  # exact at d = 4
    f = regimes.cost_over_d(st, spec, fixed, (2, 8, 32, 128), fit=fit)
    assert f.powers == pytest.approx((0.75, 0.75), rel=1e-12)
    ladder = [32 * 3**k for k in range(regimes._PROBE_MAX)]
    start = max(n for n in ladder  # the steps at the largest d, where the probe runs
                if 128 / 4 * fit[0] * steps(dict(N=n, d=128)) <= 2 * regimes._PROBE_SECONDS)
    grown = [n for n in ladder if n >= start]
    assert start > 32 and runs == [(n, 128) for n in grown] + [
        (grown[-1], 2), (grown[-1], 128), (grown[-1], 2)], runs
    runs.clear()
    g = regimes.cost_over_d(st, spec, fixed, (2, 8, 32, 128))  # control: no fit
    assert g.powers == f.powers
    assert runs[:2] == [(32, 128), (32, 128)] and runs[-4:] == [
        (runs[-1][0], 2), (runs[-1][0], 128), (runs[-1][0], 2), (runs[-1][0], 128)], runs


def test_cost_over_d_stops_before_a_probe_three_times_its_target(monkeypatch) -> None:
    """A probe at half the target whose next (4x the steps) would cost over 3x the target
    ends the growth: clipped_sgd's T = 12,800 at d = 128 ran 0.55 CPU-s and its next 1.9,
    twice. Oracle: a closed-form cost, 0.5 CPU-s at T = 12,800 and d = 128."""
    from dpbounds.verify import regimes

    st = get_study("nonconvex.clipped_sgd")
    spec = problem("huber_well")
    fixed = dict(st.fixed)
    c = 0.5 / (12800 * 128**0.5)
    runs: list[int] = []

    def fake(study, spec_, point, trials):
        runs.append(int(point["T"]))
        return c * point["T"] * point["d"] ** 0.5, float(point["T"])

    monkeypatch.setattr(regimes, "_timed_run", fake)
    monkeypatch.setattr(regimes, "cost_plan", lambda study, spec_, point, trials: dict(
        steps=float(point["T"]), gradient_evaluations=0.0, memory_bytes=0.0))
    f = regimes.cost_over_d(st, spec, fixed, (2, 128))
    assert max(runs) == 12800 and f.powers == pytest.approx((0.5, 0.5), rel=1e-12)


def test_the_fit_that_starts_the_d_probes_bounds_the_cost_from_above() -> None:
    """``study._fit_above``: the probe fit at the asked trials as it is; one at fewer trials
    scaled up by the ratio (a step costs at most in proportion to its trials); one at more
    trials as it is (it costs more); none made: ``None``."""
    from dpbounds.verify.study import _fit_above

    fit = ((2e-6, 3e-9, 0.4), None)
    assert _fit_above({16: fit}, 16) == (2e-6, 3e-9)
    assert _fit_above({4: fit}, 16) == pytest.approx((8e-6, 1.2e-8))
    assert _fit_above({32: fit, 4: ((1.0, 1.0, 0.0), None)}, 16) == pytest.approx((4.0, 4.0))
    assert _fit_above({32: fit}, 16) == (2e-6, 3e-9)
    assert _fit_above({}, 16) is None


def test_cost_over_d_from_the_fit_never_grows_past_the_largest_point(monkeypatch) -> None:
    """With the fit, the probes of the power of d still stop before the largest point that
    runs (an independent review: the start rung's checks were skipped, so the probes ran
    N = 864 for a grid at N <= 300, and masg's N = 2592 for 1000) and before a probe over
    the memory cap. Oracle: the closed-form cost and plans of the test above."""
    from dpbounds.verify import regimes

    st = get_study("kamath.bst14")
    spec = problem("huber_well")
    fixed = dict(st.fixed, d=4)
    runs: list[int] = []

    def steps(point):
        return 1000.0 * point["N"] / point["d"]

    def fake(study, spec_, point, trials):
        runs.append(int(point["N"]))
        return 1e-8 * steps(point) * point["d"] ** 0.75, steps(point)

    monkeypatch.setattr(regimes, "_timed_run", fake)
    monkeypatch.setattr(regimes, "cost_plan", lambda study, spec_, point, trials: dict(
        steps=steps(point), gradient_evaluations=0.0, memory_bytes=100.0 * point["N"]))
    fit = (1e-8 * 4**0.75, 0.0)
    f = regimes.cost_over_d(st, spec, fixed, (2, 128), largest={"N": 300.0}, fit=fit)
    assert max(runs) <= 300 and f.capped_at == 300.0, runs
    runs.clear()
    monkeypatch.setattr(regimes, "PROBE_MAX_BYTES", 100.0 * 900)
    regimes.cost_over_d(st, spec, fixed, (2, 128), fit=fit)
    assert max(runs) <= 900, runs


def test_a_vacuous_plan_over_the_memory_budget_still_falls_back(monkeypatch) -> None:
    """A grid over N informative only at its smallest points, over the memory budget at the
    asked 16 trials and within it at 8: no narrowed span is informative, so the planner
    returns no plan (the default grid runs, the reason names the memory), as it did before
    it priced such a grid at 8 trials (an independent review: it returned the vacuous grid,
    "bound below ... at every point")."""
    from dpbounds.verify import regimes

    def dry_plan(study, spec, point, trials):  # informative at N = 6 and 10 only
        return dict(bound=0.5 if int(point["N"]) in (6, 10) else 2.0, trivial=1.0,
                    do_nothing=1.0, steps=100.0, gradient_evaluations=100.0 * trials,
                    memory_bytes=1e8 * float(point["N"]) * trials)

    import types
    monkeypatch.setattr(regimes, "dry_plan", dry_plan)
    fake = types.SimpleNamespace(fixed=dict(d=8, N=1000, T=100), theorem="fake",
                                 headline_exponent=lambda var: None)
    too_large: list[str] = []
    got = regimes.plan_grid(
        fake, None, "N", dict(fake.fixed), None, 16,
        cost_for=lambda t: (1e-9, 1e-9), max_seconds=1e9, user_fixed=("T",),
        reduce_trials=True,  # the N span (up to 80) fits at 8 trials, not 16
        fits_memory=lambda pts, t: max(1e8 * p["N"] * t for p in pts) <= 1e8 * 80 * 8,
        too_large=too_large)
    assert got is None and too_large, (got, too_large)


@pytest.mark.parametrize("fit", [(float("nan"), 0.0), (1e-6, float("inf")), (-1e-6, 0.0),
                                 (1e-6,), ("a", 0.0)])
def test_cost_over_d_refuses_a_fit_that_is_not_a_cost(fit) -> None:
    """A fit with NaN, inf, a negative or a missing entry would start the probes anywhere
    (NaN compares false: the largest rung): a ValueError naming ``fit``."""
    from dpbounds.verify import regimes

    st = get_study("kamath.bst14")
    with pytest.raises(ValueError, match="fit must be"):
        regimes.cost_over_d(st, problem("huber_well"), dict(st.fixed, d=4), (2, 128), fit=fit)
