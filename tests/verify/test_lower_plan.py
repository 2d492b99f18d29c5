"""A study's lower plan (``TheoremStudy.lower_plan``) against its dry plan, and the planner
that trusts it.

Yang et al.'s dry plans calibrate the claimed noise (an RDP accountant, ~0.1 CPU-s a point);
their lower plan is the bound without privacy noise, which the planner uses to skip the dry
plan of a point that is vacuous anyway (``normalized_sgd``'s full studies: 7.2-11.6 -> 2.5-2.9
CPU-s of planning, the same fallback). The declared fact is that the bound is non-decreasing
in the noise. Oracles: the dry plan itself (the lower bound is never above it and the floors
are the same numbers), the same bound at two noise levels (monotone), counted dry plans; a
negative control with twice the claimed noise must fail the first check."""

from __future__ import annotations

import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.verify import regimes
from dpbounds.verify.studies import normalized_and_clipped_sgd as yang
from dpbounds.verify.study import problem
from dpbounds.verify.theorems import get_study

STUDIES = ("nonconvex.normalized_sgd", "nonconvex.clipped_sgd")
POINTS = [dict(N=n, T=t, d=d, eps=e) for n, t, d, e in (
    (100, 1e4, 8, 0.5), (5623, 1e6, 16, 0.5), (31623, 1e5, 2, 0.25), (1000, 1e7, 32, 2.0),
    (562341, 1e6, 4, 1.0))]


def _pair(theorem: str, point: dict) -> tuple[dict, dict]:
    s = get_study(theorem)
    spec = problem(s.problems[0])
    pt = dict(s.fixed, **point)
    inst = spec.build(min(int(pt["N"]), regimes._PLAN_SAMPLES), int(pt["d"]), seed=(0, 0))
    return s.lower_plan(pt, inst, 16), s.plan_point(pt, inst, 16)


def _lower_holds(low: dict, dry: dict) -> bool:
    return (low["bound"] <= dry["bound"] and low["trivial"] == dry["trivial"]
            and low["do_nothing"] == dry["do_nothing"]
            # the cost fields, where the lower plan states them all, are the dry plan's
            # (the planner's memory checks read them from it: regimes.cost_plan)
            and (not all(k in low for k in regimes.COST_FIELDS)
                 or all(low[k] == dry[k] for k in regimes.COST_FIELDS)))


@pytest.mark.parametrize("theorem", STUDIES)
def test_the_lower_plan_is_below_the_dry_plan_with_the_same_floors(theorem):
    for point in POINTS:
        low, dry = _pair(theorem, point)
        assert _lower_holds(low, dry), (point, low, dry)
        assert low["bound"] < dry["bound"]  # the claimed noise moves the bound
        assert all(k in low for k in regimes.COST_FIELDS)  # Yang et al.'s state them all


def test_cost_plan_reads_the_lower_plans_cost_fields_without_a_dry_plan(monkeypatch):
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    pt = dict(s.fixed, N=5623, T=1e6, d=16, eps=0.5)
    regimes._cached_plan.cache_clear()
    monkeypatch.setattr(regimes, "_cached_plan", lambda *a: pytest.fail("a dry plan"))
    got = regimes.cost_plan(s, spec, pt, 16)
    monkeypatch.undo()
    assert got == {k: regimes.dry_plan(s, spec, pt, 16)[k] for k in regimes.COST_FIELDS}


def test_negative_control_a_lower_plan_with_other_cost_fields_fails():
    low, dry = _pair("nonconvex.clipped_sgd", POINTS[1])
    assert _lower_holds(low, dry)
    assert not _lower_holds(dict(low, memory_bytes=low["memory_bytes"] / 2), dry)
    # a lower plan without the cost fields is not checked on them (cost_plan reads the dry
    # plan's then)
    assert _lower_holds({k: v for k, v in low.items() if k != "steps"}, dry)


def test_negative_control_a_noisier_lower_plan_fails(monkeypatch):
    # the "lower" plan at twice the claimed noise is above the dry plan
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    real = yang._claimed_multiplier
    failed = []
    for point in POINTS:
        pt = dict(s.fixed, **point)
        inst = spec.build(min(int(pt["N"]), regimes._PLAN_SAMPLES), int(pt["d"]), seed=(0, 0))
        dry = s.plan_point(pt, inst, 16)
        monkeypatch.setattr(yang, "_claimed_multiplier", lambda *a: 2.0 * real(*a))
        noisier = yang._run_yang("sgd", pt, inst, 16, 0, None, dry=True)
        monkeypatch.setattr(yang, "_claimed_multiplier", real)
        failed.append(not _lower_holds(noisier, dry))
    assert all(failed)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(("nsgd", "sgd")), st.sampled_from(POINTS),
       st.floats(0.0, 50.0), st.floats(1.0, 4.0))
def test_the_bound_is_non_decreasing_in_the_noise(kind, point, z, factor):
    """The declared fact the lower plan rests on, checked at two noise levels."""
    theorem = "nonconvex.normalized_sgd" if kind == "nsgd" else "nonconvex.clipped_sgd"
    s = get_study(theorem)
    pt = dict(s.fixed, **point)
    inst = problem(s.problems[0]).build(min(int(pt["N"]), regimes._PLAN_SAMPLES), int(pt["d"]),
                                        seed=(0, 0))
    real = yang._claimed_multiplier
    try:
        yang._claimed_multiplier = lambda *a: z
        lo = yang._run_yang(kind, pt, inst, 16, 0, None, dry=True)["bound"]
        yang._claimed_multiplier = lambda *a: z * factor
        hi = yang._run_yang(kind, pt, inst, 16, 0, None, dry=True)["bound"]
    finally:
        yang._claimed_multiplier = real
    assert lo <= hi


def test_the_planner_skips_dry_plans_where_the_lower_plan_is_vacuous(monkeypatch):
    """A fake study informative from N = 1000 at T >= 1e6, whose lower plan is vacuous below
    N = 500: the planner asks no dry plan there, and plans what it plans without one."""
    def dry_plan(study, spec, point, trials):
        asked.append((float(point["N"]), float(point["T"])))
        ok = point["T"] >= 1e6 and point["N"] >= 1000
        return dict(bound=0.5 if ok else 2.0, trivial=1.0, do_nothing=1.0,
                    steps=float(point["T"]), gradient_evaluations=float(point["T"]) * trials,
                    memory_bytes=1e3)

    fake = types.SimpleNamespace(fixed=dict(d=8, N=100, T=1000), theorem="fake",
                                 headline_exponent=lambda var: None)
    monkeypatch.setattr(regimes, "dry_plan", dry_plan)

    def plan(lower: bool):
        asked.clear()
        monkeypatch.setattr(regimes, "certainly_vacuous", (lambda st_, sp, p, t: p["N"] < 500)
                            if lower else (lambda *a: False))
        got = {var: regimes.plan_grid(fake, None, var, dict(fake.fixed), vals, 4,
                                      cost_for=lambda t: (1e-9, 1e-9), max_seconds=1e9)
               for var, vals in (("N", None), ("d", (2.0, 4.0, 8.0)))}
        return got, list(asked)

    asked: list[tuple[float, float]] = []
    with_lower, asked_lower = plan(True)
    without, asked_all = plan(False)
    for var in ("N", "d"):
        assert with_lower[var] is not None and without[var] is not None
        assert with_lower[var].values == without[var].values
        assert with_lower[var].fixed == without[var].fixed
    assert asked_lower and all(n >= 500 for n, _ in asked_lower)
    assert any(n < 500 for n, _ in asked_all)  # control: the scan asked there before


def test_the_planner_screens_with_the_dry_plans_instance(monkeypatch):
    """``certainly_vacuous`` builds the instance the dry plan builds (its N capped at
    ``_PLAN_SAMPLES``, the same seed): a lower plan on another instance would bound another
    problem's bound (a review's surviving mutant built it with another seed)."""
    from dpbounds.verify.problems import VerifyProblem

    built: list[tuple] = []
    real = VerifyProblem.build

    def build(self, n, d, seed=0):
        built.append((self.kind, n, d, seed))
        return real(self, n, d, seed=seed)

    monkeypatch.setattr(VerifyProblem, "build", build)
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    point = dict(s.fixed, N=31623, T=1e5, d=2, eps=0.25)
    regimes._cached_plan.cache_clear()
    regimes._cached_hook.cache_clear()
    regimes._built.cache_clear()
    regimes.dry_plan(s, spec, point, 16)
    regimes._built.cache_clear()  # each builds its own (the cache would share one)
    regimes.certainly_vacuous(s, spec, point, 16)
    assert len(built) == 2 and built[0] == built[1], built
    assert built[0][1] == regimes._PLAN_SAMPLES
    # with the cache the lower plan reads the dry plan's instance itself (one build)
    built.clear()
    regimes._cached_plan.cache_clear()
    regimes._cached_hook.cache_clear()
    regimes._built.cache_clear()
    regimes.dry_plan(s, spec, point, 16)
    regimes.certainly_vacuous(s, spec, point, 16)
    assert built == [("huber_well", regimes._PLAN_SAMPLES, 2, (0, 0))]
    assert not regimes._plan_instance(spec, point).x0.flags.writeable  # shared: read-only


# --- is_informative: the dry plan's answer from a bracket of the claimed noise -------------

#: points around the informative region of T = 1e6, d = 16 (informative for N = 5623 to
#: 31623 only: docs/verify.md), others on both sides of it, and points where the claimed
#: noise decides (the lower plan is informative there)
EDGE_POINTS = [dict(N=n, T=t, d=d, eps=e) for n, t, d, e in (
    (3162, 1e6, 16, 0.5), (5623, 1e6, 16, 0.5), (31623, 1e6, 16, 0.5), (56234, 1e6, 16, 0.5),
    (17783, 1e5, 2, 0.25), (1000, 1e7, 32, 2.0), (10000, 1e6, 4, 1.0), (100, 1e4, 8, 0.5),
    # the noise decides: informative without it, vacuous with it (clipped_sgd)
    (3162, 1e5, 2, 0.25), (5623, 1e6, 16, 0.25), (56234, 1e6, 16, 1.0), (10000, 1e6, 16, 0.25))]


def _decide(theorem: str, point: dict, clear: bool = True) -> tuple[bool, bool]:
    """(is_informative, the dry plan's answer) at ``point``."""
    s = get_study(theorem)
    spec = problem(s.problems[0])
    pt = dict(s.fixed, **point)
    inst = spec.build(min(int(pt["N"]), regimes._PLAN_SAMPLES), int(pt["d"]), seed=(0, 0))
    if clear:  # each from its own calibration: the bracket's cannot feed the dry plan's
        yang._MULTIPLIERS.clear()
    dry = regimes._informative(s.plan_point(pt, inst, 16))
    if clear:
        yang._MULTIPLIERS.clear()
    fast = s.is_informative(pt, inst, 16)
    if clear:
        yang._MULTIPLIERS.clear()
    return fast, dry


@settings(max_examples=24, deadline=None)
@given(st.sampled_from(STUDIES), st.sampled_from(EDGE_POINTS + POINTS),
       st.sampled_from((2, 4, 8, 16, 32)), st.sampled_from((0.25, 0.5, 1.0, 2.0)))
def test_is_informative_is_the_dry_plans_answer(theorem, point, d, eps):
    fast, dry = _decide(theorem, dict(point, d=d, eps=eps))
    assert fast == dry


@pytest.mark.parametrize("theorem", STUDIES)
def test_is_informative_on_both_sides_of_the_region(theorem):
    answers = [_decide(theorem, p) for p in EDGE_POINTS]
    assert all(fast == dry for fast, dry in answers), answers
    if theorem == "nonconvex.clipped_sgd":  # both answers occur (the check is not one-sided)
        assert {dry for _, dry in answers} == {True, False}


def test_negative_control_deciding_from_the_lower_end_alone_fails(monkeypatch):
    """A mutant that calls a point informative where the bound at the bracket's LOWER end is
    below the floor (the calibrated noise may be larger): it disagrees with the dry plan."""
    import importlib

    cal_mod = importlib.import_module("dpbounds.privacy.calibrate")
    real = cal_mod.noise_multiplier_bracket

    def lower_end_only(*args, settled, **kw):
        lo, hi = real(*args, settled=lambda lo, hi: True, **kw)  # the first bracket
        return lo, lo

    monkeypatch.setattr(cal_mod, "noise_multiplier_bracket", lower_end_only)
    wrong = []
    for point in EDGE_POINTS + POINTS:
        yang._MULTIPLIERS.clear()
        fast, dry = _decide("nonconvex.clipped_sgd", point)
        wrong.append(fast != dry)
    yang._MULTIPLIERS.clear()
    assert any(wrong)


def test_the_planner_asks_is_informative_not_the_dry_plan(monkeypatch):
    """``regimes.informative`` answers from the study's ``is_informative`` (a fake study):
    no dry plan is built; without one it reads the dry plan."""
    dry_calls: list[int] = []
    monkeypatch.setattr(regimes, "dry_plan", lambda *a: dry_calls.append(1) or dict(
        bound=0.5, trivial=1.0, do_nothing=1.0))
    monkeypatch.setattr(regimes, "certainly_vacuous", lambda *a: False)
    decided: list[float] = []
    fake = types.SimpleNamespace(theorem="fake.decides", is_informative=lambda pt, inst, t: (
        decided.append(pt["N"]) or pt["N"] > 10))
    monkeypatch.setattr("dpbounds.verify.theorems.get_study", lambda name: fake)
    monkeypatch.setattr(regimes, "_plan_instance", lambda spec, pt: None)
    regimes._cached_hook.cache_clear()
    assert regimes.informative(fake, None, dict(N=100, d=2), 4) is True
    assert regimes.informative(fake, None, dict(N=5, d=2), 4) is False
    assert decided == [100, 5] and not dry_calls
    plain = types.SimpleNamespace(theorem="fake.plain")
    assert regimes.informative(plain, None, dict(N=100, d=2), 4) is True
    assert dry_calls == [1]
    regimes._cached_hook.cache_clear()


#: the floor's crossing of clipped_sgd at N = 5039, T = 1e6, d = 16 (found by bisection over
#: eps in an independent review: bound / floor - 1 = +-2e-16 there); at EPS_STAR the bracket
#: never settles and the answer (informative) comes from the full calibration
EPS_STAR = 0.4999470884946296
BOUNDARY = [dict(N=5039, T=10**6, d=16, eps=EPS_STAR * (1 + k * 1e-7))
            for k in (-100, -3, -1, 0, 1, 3, 100)]


def test_is_informative_at_the_floors_crossing():
    """Points within 1e-5 of the crossing, both sides: the same answers as the dry plan,
    both answers occur, and a search that ran to its end (at the crossing) answers
    informative there (its kept multiplier is the calibration's, bit for bit)."""
    import importlib

    cal_mod = importlib.import_module("dpbounds.privacy.calibrate")
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    answers, ran_informative = [], 0
    for point in BOUNDARY:
        fast, dry = _decide("nonconvex.clipped_sgd", point)
        answers.append((fast, dry))
        pt = dict(s.fixed, **point)
        yang._MULTIPLIERS.clear()
        s.is_informative(pt, regimes._plan_instance(spec, pt), 16)
        for (e, dl, q, T), z in yang._MULTIPLIERS.items():  # kept only from a full search
            assert z == cal_mod.noise_multiplier_for_epsilon(
                e, dl, q, T, sampling="without_replacement")
            ran_informative += fast
        yang._MULTIPLIERS.clear()
    assert all(f == d for f, d in answers), answers
    assert {d for _, d in answers} == {True, False}
    assert ran_informative >= 1


@pytest.mark.parametrize("theorem", STUDIES)
def test_is_informative_after_the_dry_plan_reads_its_multiplier(theorem):
    """Asked after the dry plan (its multiplier kept): the same answer, from that multiplier
    (no search: the bracket function is not called)."""
    import importlib

    cal_mod = importlib.import_module("dpbounds.privacy.calibrate")
    s = get_study(theorem)
    spec = problem(s.problems[0])
    real = cal_mod.noise_multiplier_bracket
    for point in EDGE_POINTS + BOUNDARY[2:5]:
        pt = dict(s.fixed, **point)
        inst = regimes._plan_instance(spec, pt)
        yang._MULTIPLIERS.clear()
        dry = regimes._informative(s.plan_point(pt, inst, 16))
        cal_mod.noise_multiplier_bracket = None  # type: ignore[assignment]
        try:
            fast = s.is_informative(pt, inst, 16)
        finally:
            cal_mod.noise_multiplier_bracket = real
        assert fast == dry, point
    yang._MULTIPLIERS.clear()


def test_a_settled_bracket_is_never_kept_for_the_dry_plan():
    """After ``is_informative`` at points whose bracket settled, the dry plan's bound is the
    one computed from a fresh calibration (a kept bracket end would move the bound and the
    run's sigma)."""
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    for point in EDGE_POINTS:
        pt = dict(s.fixed, **point)
        inst = regimes._plan_instance(spec, pt)
        yang._MULTIPLIERS.clear()
        fresh = s.plan_point(pt, inst, 16)["bound"]
        yang._MULTIPLIERS.clear()
        s.is_informative(pt, inst, 16)
        assert s.plan_point(pt, inst, 16)["bound"] == fresh, point
    yang._MULTIPLIERS.clear()


def test_cost_plan_reads_the_dry_plan_when_the_lower_plan_omits_a_cost_field(monkeypatch):
    # a plug-in's lower plan may state only bound, trivial and do_nothing
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    pt = dict(s.fixed, N=1000, T=1e5, d=8, eps=0.5)
    monkeypatch.setattr(regimes, "_cached_hook", lambda *a: (
        ("bound", 0.0), ("trivial", 1.0), ("do_nothing", 1.0), ("steps", -1)))
    got = regimes.cost_plan(s, spec, pt, 16)
    dry = regimes.dry_plan(s, spec, pt, 16)
    assert got == {k: dry[k] for k in regimes.COST_FIELDS if k in dry} and got["steps"] > 0


@pytest.mark.parametrize("trials", [4, 6])
def test_the_lower_plans_cost_fields_follow_the_trials(trials):
    """The planner's memory checks ask at fewer trials than 16 (budget fitting): the lower
    plan's cost fields are the dry plan's at every trial count."""
    s = get_study("nonconvex.clipped_sgd")
    spec = problem(s.problems[0])
    for point in POINTS[:3]:
        pt = dict(s.fixed, **point)
        inst = spec.build(min(int(pt["N"]), regimes._PLAN_SAMPLES), int(pt["d"]), seed=(0, 0))
        low, dry = s.lower_plan(pt, inst, trials), s.plan_point(pt, inst, trials)
        assert all(low[k] == dry[k] for k in regimes.COST_FIELDS), (point, trials)
