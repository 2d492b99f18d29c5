"""Scaling studies: the rounding policy against the closed form, the run-level bound, the
verdicts on the real algorithms, and the negative controls that must FAIL (a mutant whose noise
grows too fast in d, a bound whose d exponent is too small, a bound too small by 100)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.verify import (
    ScalingResult,
    get_study,
    problem,
    ratio_at_most,
    scaling_study,
    slope_at_most,
)

_KW = dict(vary={"d": [4, 16, 64]}, fixed={"N": 250}, trials=4, replicates=300, seed=0)


@pytest.fixture(scope="module")
def alg1() -> ScalingResult:
    return scaling_study("tran_cutkosky.alg1", **_KW)


@pytest.fixture(scope="module")
def alg1_mutant() -> ScalingResult:
    return scaling_study("tran_cutkosky.alg1", mutation="noise_d", **_KW)


def _verdict(res: ScalingResult, case: str, claim: str = "measured/bound"):
    (v,) = [v for v in res.verdicts if v.case.split(" (")[0] == case and v.claim.startswith(claim)]
    return v


def test_rounding_policy_matches_the_closed_form(alg1: ScalingResult) -> None:
    """E is the nearest integer >= 1 of Theorem 6's choice, and eta = u(E)/N with
    u = sqrt(3R/(c_L L E)), c_L = 24 + 3/(2N) recomputed here at the rounded E."""
    for p in alg1.params:
        assert p["E"] == max(1, math.floor(p["E_real"] + 0.5))
        N, R, L = 250, p["R_tune"], 1.0
        u = math.sqrt(3 * R / ((24 + 1.5 / N) * L * p["E"]))
        assert p["eta"] == pytest.approx(u / N, rel=1e-12)
        assert p["T"] == N * p["E"]
        assert p["sigma"] <= p["sigma_theorem4"]  # exact accountant needs no more noise


def test_epochs_below_the_minimum_are_raised_and_reported() -> None:
    res = scaling_study("tran_cutkosky.alg2", vary={"d": [4, 64]}, fixed={"N": 250},
                        trials=2, replicates=50)
    assert all(p["E"] >= 2 for p in res.params)
    raised = [n for notes in res.notes for n in notes if "raised to 2" in n]
    assert raised, res.params


def test_study_result_shapes_and_vacuous_flag(alg1: ScalingResult) -> None:
    assert alg1.values == (4.0, 16.0, 64.0)
    assert alg1.trials["noise"].shape == (3, 4)
    with pytest.raises(ValueError):
        alg1.trials["noise"][0, 0] = 1.0  # frozen data
    # Theorem 6 is far above G = 1 at N = 250: vacuous everywhere, and flagged, not passed
    assert all(alg1.vacuous)
    v = _verdict(alg1, "grad_output over d")
    assert v.vacuous and not v.holds and v.status == "vacuous"
    assert str(alg1.exponents()) == "d^(1/4) N^(-1/2) eps^(-1/2)"
    assert alg1.headline_exponent == 0.25


def test_the_algorithm_moves_from_the_start(alg1: ScalingResult) -> None:
    # the old study's measurement equalled ||grad F(x0)||: here the run must do better
    start_grad = 0.6  # L * start on the quadratic zone
    assert all(m.ci_high < start_grad for m in alg1.measured["grad_avg"])


def test_components_respect_their_lemmas(alg1: ScalingResult) -> None:
    assert _verdict(alg1, "noise over d").holds
    assert _verdict(alg1, "bias over d").holds
    # the grid slope of Lemma 12 at the rounded E is followed (ratio ~ constant)
    assert _verdict(alg1, "noise over d", "slope <= bound's grid").holds
    assert alg1.ratio_range("noise")[1] < 1.0


def test_mutant_with_noise_growing_in_d_is_caught(alg1: ScalingResult,
                                                  alg1_mutant: ScalingResult) -> None:
    v_ok = _verdict(alg1, "noise over d", "slope <= bound's grid")
    v_bad = _verdict(alg1_mutant, "noise over d", "slope <= bound's grid")
    assert v_ok.holds
    assert not v_bad.holds and not v_bad.vacuous
    assert not _verdict(alg1_mutant, "noise over d", "slope <= path").holds
    assert not _verdict(alg1_mutant, "noise over d").holds  # above Lemma 12 at large d
    assert alg1_mutant.slopes["noise"].ci_low > alg1.slopes["noise"].ci_high
    assert not alg1_mutant.holds


def test_a_bound_with_too_small_a_d_exponent_fails(alg1: ScalingResult) -> None:
    # negative control: claim the tree noise does not grow with d (exponent 0)
    wrong = slope_at_most("ctl", "noise", alg1.slopes["noise"], 0.0, "wrong exponent")
    assert not wrong.holds
    # and a bound 100 times too small fails the ratio verdict (not vacuous: no trivial bound)
    small = ratio_at_most("ctl", "noise", alg1.measured["noise"], alg1.bound["noise"] / 100,
                          "bound / 100")
    assert not small.holds and not small.vacuous


def test_trials_are_reproducible_from_the_seed(alg1: ScalingResult) -> None:
    again = scaling_study("tran_cutkosky.alg1", **_KW)
    for c in alg1.components:
        assert np.array_equal(again.trials[c], alg1.trials[c])


def test_hard_instance_lower_bound_verdict() -> None:
    res = scaling_study("tran_cutkosky.alg1", problem("hard"), vary={"N": [200, 400]},
                        fixed={"d": 2}, trials=2, replicates=50)
    v = _verdict(res, "grad_avg over N", ">= hard")
    assert v.holds and np.all(res.lower_bound > 0)


def test_yang_studies_run_the_private_algorithms() -> None:
    for th in ("yang.nsgd", "yang.sgd"):
        res = scaling_study(th, vary={"eps": [0.5, 2.0]}, fixed={"T": 300}, trials=3,
                            replicates=50)
        assert all(p["sigma"] > 0 for p in res.params)  # private: sigma > 0
        assert res.slopes["grad_min"].ci_low <= res.slopes["grad_min"].ci_high
        assert get_study(th).theorem == res.theorem


def test_dp_erm_study_maps_n_and_flags_the_trivial_bound() -> None:
    res = scaling_study("kamath.bst14", vary={"N": [20, 40]}, trials=3, replicates=50)
    assert res.headline_exponent == -1.0  # the theorem's n is the problem's N
    assert all(p["T"] == int(v) ** 2 for p, v in zip(res.params, res.values))
    assert np.all(res.trivial == 2.0)  # G * diameter of the unit ball
    # measured excess risk never exceeds the trivial bound G * diam
    assert all(m.mean <= 2.0 for m in res.measured["excess_risk"])


def test_dp_nag_study_bound_holds_and_optimal_allocation_helps() -> None:
    res = scaling_study("strongly_convex.nag", vary={"eps": [0.5, 4.0]}, trials=60,
                        replicates=100)
    assert res.problem.kind == "quadratic"
    assert not any(res.vacuous)  # Kuru et al.'s bound is informative here
    assert _verdict(res, "subopt over eps").holds
    assert all(p["analytic_ratio"] >= 1.0 for p in res.params)
    # optimal allocation is not worse than uniform in simulation either (at 5 standard errors)
    for mo, mu in zip(res.measured["subopt"], res.measured["subopt_uniform"]):
        assert mo.mean <= mu.mean + 5 * math.hypot(mo.se, mu.se)
    mutant = scaling_study("strongly_convex.nag", vary={"d": [2, 32]}, trials=60,
                           replicates=100, mutation="noise_d")
    assert not _verdict(mutant, "subopt over d").holds  # Laplace noise sqrt(d) too large


def test_dp_shb_study_follows_its_bound() -> None:
    res = scaling_study("strongly_convex.heavy_ball", vary={"N": [300, 1000]}, trials=60,
                        replicates=100)
    assert _verdict(res, "subopt over N").holds
    assert _verdict(res, "subopt over N", "slope <= bound's grid").holds
    assert all(p["T"] >= 1 and 0 <= p["beta"] < 1 for p in res.params)


@pytest.mark.parametrize("kwargs, match", [
    (dict(vary={"d": [4]}), "two grid values"),
    (dict(vary={"x": [1, 2]}), "vary"),
    (dict(vary={"d": [4, 4.5]}), "integers"),
    (dict(vary={"d": [4, 8]}, mutation="bogus"), "mutation"),
    (dict(vary={"d": [4, 8]}, fixed={"zz": 1}), "fixed"),
    (dict(vary={"d": [4, 8]}, trials=1), "trials"),
])
def test_bad_input_names_the_parameter(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        scaling_study("tran_cutkosky.alg1", **kwargs)


def test_unknown_theorem_lists_the_covered_ones() -> None:
    with pytest.raises(ValueError, match="covered"):
        scaling_study("convex.output_perturbation", vary={"d": [1, 2]})


def test_first_nonvacuous_n_against_a_direct_evaluation() -> None:
    from dpbounds.bounds.registry import get
    from dpbounds.verify import first_nonvacuous_n

    p = dict(d=4, eps=8.0, delta=1e-5, G=1.0, L=1.0, R=0.18)
    n = first_nonvacuous_n("tran_cutkosky.alg1", p)
    e = get("tran_cutkosky.alg1")
    assert e.value(dict(p, N=n * 1.001)) < 1.0 < e.value(dict(p, N=n / 1.001))


def test_store_resumes_finished_points(tmp_path) -> None:
    """A study with a store computes each grid point once; a re-run reads them back and gives
    identical trials."""
    kw = dict(vary={"d": [4, 8]}, fixed={"N": 100}, trials=2, replicates=50, store=tmp_path)
    first = scaling_study("tran_cutkosky.alg1", **kw)
    assert len(list(tmp_path.rglob("*.json"))) >= 2
    again = scaling_study("tran_cutkosky.alg1", **kw)
    assert np.array_equal(first.trials["noise"], again.trials["noise"])
