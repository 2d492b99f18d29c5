"""Tests that kill the survivors of mutant hunt 19 (stop 84) that change a number or a refusal:
each states the behaviour a mutant removed, against an independent oracle where one exists."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpbounds.privacy.composition import compose_events, parse_event


def test_asymmetric_parts_compose_as_dp_accounting_does() -> None:
    # M10: the balanced tree paired one part's remove PMF with the other's add PMF; symmetric
    # parts (Gaussian, Laplace) cannot show it, Poisson-subsampled Gaussians can (1.4% low)
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import PLDAccountant

    from dpbounds.privacy.accountants.pld_accountant import PldAccountant
    from dpbounds.privacy.mechanisms import SubsampledGaussianMechanism

    ours = PldAccountant("add_remove")
    ours.compose(SubsampledGaussianMechanism(0.8, 0.2), 50)
    ours.compose(SubsampledGaussianMechanism(2.0, 0.5), 20)
    ref = PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
                        value_discretization_interval=ours.discretization_interval())
    ref.compose(dpa.PoissonSampledDpEvent(0.2, dpa.GaussianDpEvent(0.8)), 50)
    ref.compose(dpa.PoissonSampledDpEvent(0.5, dpa.GaussianDpEvent(2.0)), 20)
    for delta in (1e-3, 1e-6):
        assert ours.get_epsilon(delta) == pytest.approx(ref.get_epsilon(delta), rel=2e-3)


def test_a_risk_target_the_later_events_alone_exceed_is_refused() -> None:
    # M16: the merged runs split off as `steps` (10) instead of `merged - steps` (30): the
    # floor check saw 10 steps of z = 1 (TPR 0.94 at FPR 0.05) where 30 allow 0.99994, and
    # the composition was reported at eps ~20 for ~40 spent
    with pytest.raises(ValueError, match="events after the first alone allow tpr"):
        compose_events(["gaussian:z=1,steps=10", "gaussian:z=1,steps=30"], delta=1e-5,
                       accountants=["rdp"], risk_target=(0.95, 0.05))


def _objective(d: int = 4, n: int = 30):
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (n, d))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    return LogisticRegression(A, np.sign(A @ np.ones(d)), l2=0.1, l1_radius=np.sqrt(d),
                              l2_radius=1.0)


def _below_own(method, f, **kw) -> list[str]:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        method.run(f, steps=2, seed=0, **kw)
    return [str(w.message) for w in said if "is below" in str(w.message)]


def _laplace(**kw):
    from dpbounds import extend

    return extend.Method("lap_h19", step=lambda x, grad, noise, p: x - 0.1 * (grad(x) + noise),
                         mechanism="laplace", neighbouring="replace_one", **kw)


def test_a_laplace_plug_in_below_its_own_l1_bound_says_so() -> None:
    f = _objective()
    # M21: the clipped mean's L1 sensitivity is 2 sqrt(d) clip / n (0.1333 at d = 4, n = 30);
    # the mutant dropped sqrt(d) and was silent at 0.6 of it
    own = 2 * np.sqrt(4) * 1.0 / 30
    said = _below_own(_laplace(clip=1.0, sensitivity=0.6 * own), f, epsilon=1.0)
    assert said and "2 sqrt(d) clip / n" in said[0]
    assert _below_own(_laplace(clip=1.0, sensitivity=own), f, epsilon=1.0) == []  # at it
    # M22: without a clip the mean gradient's L1 sensitivity / n is the bound (not L2's)
    l1, l2 = f.l1_sensitivity / 30, f.l2_sensitivity / 30
    assert l2 < l1
    assert _below_own(_laplace(sensitivity=(l1 + l2) / 2), f, epsilon=1.0)
    assert _below_own(_laplace(sensitivity=l1), f, epsilon=1.0) == []


def test_calibrate_warns_below_the_clipped_mean_as_run_does() -> None:
    # M27: extend.calibrate kept the data-derived warning and dropped the below-own one
    from dpbounds import extend

    f = _objective(d=3)
    m = extend.Method("g_h19", step=lambda x, grad, noise, p: x - 0.1 * (grad(x) + noise),
                      mechanism="gaussian", neighbouring="replace_one", clip=1.0,
                      sensitivity=1e-6)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        extend.calibrate(m, epsilon=1.0, delta=1e-5, steps=3, objective=f)
    assert any("is below" in str(w.message) and "2 clip / n" in str(w.message) for w in said)


def _notes():
    from dpbounds.privacy.events import dp_event_to_json, to_dp_event
    from dpbounds.privacy.mechanisms import GaussianMechanism

    pytest.importorskip("dp_accounting")
    ev = to_dp_event((GaussianMechanism(2.0), 3))
    inner = {**dp_event_to_json(ev),
             "written_for": {"accountant": "pld", "neighbouring": "replace_one"}}
    return dp_event_to_json(ev), inner


def test_a_note_inside_any_nesting_is_checked() -> None:
    from dpbounds.privacy.events import dp_event_from_json

    plain, inner = _notes()
    # M28: a note under a SelfComposedDpEvent's "event" (the walk went into "events" only)
    selfc = {"class_name": "SelfComposedDpEvent", "event": inner, "count": 4}
    for kw in ({"accountant": "rdp"}, {"neighbouring": "add_remove"}):
        with pytest.raises(ValueError, match=r"event\.event was written"):
            dp_event_from_json(selfc, **kw)
    # M29: every note, not the first found: the top one agrees, the nested one does not
    outer = {"class_name": "ComposedDpEvent", "events": [plain, inner],
             "written_for": {"accountant": "rdp", "neighbouring": "add_remove"}}
    with pytest.raises(ValueError, match=r"events\[1\] was written"):
        dp_event_from_json(outer, accountant="rdp", neighbouring="add_remove")
    dp_event_from_json(selfc, accountant="pld", neighbouring="replace_one")  # as written


def test_a_key_given_twice_in_a_spec_is_refused() -> None:
    # M33: "z=4,...,z=0.5" read the last z: 8x less noise than the first says
    with pytest.raises(ValueError, match="z given twice"):
        parse_event("gaussian:z=4,steps=10,z=0.5")


def test_a_curve_at_an_infinite_epsilon_is_refused() -> None:
    # M20: curve=[1, inf] erased every accountant's epsilon ("epsilon must be finite")
    with pytest.raises(ValueError, match="curve must hold finite numbers"):
        compose_events(["gaussian:z=1,steps=10"], curve=[1.0, float("inf")], delta=1e-5)
