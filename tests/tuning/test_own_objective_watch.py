"""A private selection on an objective class of one's own (walkthrough of stop 80).

Before: a class whose ``l1_sensitivity`` property read its records ran silently (the runs'
Laplace noise calibrated to the private data), and ``sensitivity=`` -- the public bound the
watch's own refusal advised -- was refused as "not a hyper-parameter to search". Now:

* a calibration constant a class of one's own computes in a property is refused at the read,
  unless the class lists it in ``PUBLIC_CONSTANTS`` or the runs are given a public
  ``sensitivity=`` (a class attribute is a declaration, read freely);
* a fixed ``sensitivity=`` is accepted, and the runs it makes are calibrated to it alone.

Oracle: the runs' ledgers on two neighbouring data sets (one record replaced by a far one),
compared field by field: a data-derived sensitivity moves the noise (the leak the refusal
stops), a public one does not (two-sided).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.objectives import LogisticRegression
from dpbounds.tuning import select_privately


class RecordSensitivity(LogisticRegression):
    """S_1 from the data's own largest row (what a newcomer writes)."""

    @property
    def l1_sensitivity(self) -> float:
        return 2.0 * float(np.max(np.abs(self.features_np).sum(axis=1)))


class DeclaredSensitivity(RecordSensitivity):
    PUBLIC_CONSTANTS = ("l1_sensitivity",)  # the user's word that it is a public bound


class ConstantSensitivity(LogisticRegression):
    l1_sensitivity = 3.0  # a class attribute: public by construction


def _data(far: bool = False):
    rng = np.random.default_rng(0)
    a = rng.uniform(-0.5, 0.5, (200, 2))
    if far:
        a[0] = [4.0, -4.0]  # a neighbour: one record replaced
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    return a, y


def _objective(cls, far: bool = False):
    a, y = _data(far)
    return cls(a, y, l2=0.02, l1_radius=8.0, l2_radius=6.0)


KW = dict(epsilon=1.0, score_epsilon=0.1, loss_bound=5.0, stop_probability=0.3,
          momentum=0.0, seed=3)
GRID = {"step_size": [0.25, 0.5], "steps": [3]}


def _scales(obj, **kw):
    res = dp_heavy_ball(obj, epsilon=1.0, steps=3, step_size=0.5, momentum=0.0, seed=0, **kw)
    return [(m.scale, m.sensitivity) for m, _ in res.privacy.ledger.entries]


def test_a_record_derived_sensitivity_moves_the_noise_and_is_refused():
    # the leak itself: the neighbour's runs draw other noise
    assert _scales(_objective(RecordSensitivity)) != _scales(_objective(RecordSensitivity, True))
    with pytest.raises(ValueError, match=r"reads the objective's l1_sensitivity, a property "
                                         r"RecordSensitivity computes.*PUBLIC_CONSTANTS"):
        select_privately(dp_heavy_ball, _objective(RecordSensitivity), GRID, **KW)


def test_a_declared_or_constant_sensitivity_runs():
    for cls in (DeclaredSensitivity, ConstantSensitivity):
        sel = select_privately(dp_heavy_ball, _objective(cls), GRID, **KW)
        assert np.all(np.isfinite(sel.x)) and sel.epsilon > 0


def test_a_fixed_public_sensitivity_is_accepted_and_alone_sets_the_noise():
    fixed = dict(sensitivity=16.0)  # the neighbours' bound: 2 x the declared l1_radius
    a = _scales(_objective(RecordSensitivity), **fixed)
    b = _scales(_objective(RecordSensitivity, True), **fixed)
    assert a == b  # two-sided: the neighbour's noise is the same
    sel = select_privately(dp_heavy_ball, _objective(RecordSensitivity), GRID, **fixed, **KW)
    assert np.all(np.isfinite(sel.x))
    with pytest.raises(ValueError, match="not a hyper-parameter to search"):  # searched: no
        select_privately(dp_heavy_ball, _objective(RecordSensitivity),
                         {**GRID, "sensitivity": [1.0, 16.0]}, **KW)


def test_the_override_warning_reads_the_objective_as_advice_only():
    obj = _objective(RecordSensitivity, True)  # its own S_1 is 16
    with pytest.warns(UserWarning, match="below the objective's own l1_sensitivity"):
        dp_heavy_ball(obj, epsilon=1.0, steps=2, step_size=0.5, momentum=0.0, seed=0,
                      sensitivity=1.0)
    # inside a selection the comparison is not a read of the data's constant: no refusal and
    # no warning (a warning there would depend on the data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        select_privately(dp_heavy_ball, obj, GRID, sensitivity=1.0, **KW)


# ----------------------------------------------------------- review 2 of stop 80: what slipped
class CachedSensitivity(LogisticRegression):
    from functools import cached_property

    @cached_property
    def l1_sensitivity(self) -> float:
        return 2.0 * float(np.max(np.abs(self.features_np).sum(axis=1)))


class InstanceSensitivity(LogisticRegression):
    l1_sensitivity = float("inf")  # a "declaration", overwritten from the records below

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.l1_sensitivity = 2.0 * float(np.max(np.abs(self.features_np).sum(axis=1)))


class OwnLipschitz(LogisticRegression):
    def lipschitz(self, radius: float = float("inf")) -> float:
        return float(np.max(np.linalg.norm(self.features_np, axis=1)))

    @property
    def sample_smoothness(self) -> float:
        return 0.25 * float(np.max(np.sum(self.features_np**2, axis=1)))


def _reads(name):
    def algorithm(objective, **run):
        getattr(objective, name)  # the read itself is what is refused
        return dp_heavy_ball(objective, **run)

    return algorithm


@pytest.mark.parametrize("cls, name", [(CachedSensitivity, "l1_sensitivity"),
                                       (OwnLipschitz, "lipschitz"),
                                       (OwnLipschitz, "sample_smoothness")])
def test_a_cached_or_an_unlisted_constant_is_refused(cls, name):
    # each moved the noise with the data and reported eps 3.3 (1.36, 1.85) on both neighbours
    with pytest.raises(ValueError, match=f"reads the objective's {name}, a property"):
        select_privately(_reads(name), _objective(cls), GRID, **KW)


class SometimesInstance(LogisticRegression):
    l1_sensitivity = 20.0  # the class's declaration (the far neighbour's own reads 16)

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.features_np[0, 0] > 1.0:  # on some data sets only (review 3: M1)
            self.l1_sensitivity = 2.0 * float(np.max(np.abs(self.features_np).sum(axis=1)))


def test_an_instance_attribute_never_shadows_the_class_in_a_run():
    # review 2 (an instance attribute from the records ran at eps 3.3) and review 3 (one set
    # on some data sets only refused one neighbour and ran the other): during a run the class's
    # own answer is read, so the noise and the refusal are the same on both neighbours
    seen = []

    def spy(objective, **run):
        res = dp_heavy_ball(objective, **run)
        seen.append([m.sensitivity for m, _ in res.privacy.ledger.entries])
        return res

    for far in (False, True):
        f = _objective(SometimesInstance, far)
        assert ("l1_sensitivity" in f.__dict__) == far  # the neighbour holds another value
        select_privately(spy, f, {"step_size": [0.5], "steps": [3]}, **KW)
    assert len({tuple(x) for x in seen}) == 1
    assert seen[0][0] == pytest.approx(20.0 / 200, rel=1e-4)
    # InstanceSensitivity declares inf on the class: its runs refuse (never the data's value)
    with pytest.raises(ValueError):
        select_privately(dp_heavy_ball, _objective(InstanceSensitivity), GRID, **KW)


def test_a_searched_declared_bound_is_refused_a_fixed_one_is_not():
    from dpbounds.tuning.by_runs import DECLARED_BOUNDS, check_names

    for name in DECLARED_BOUNDS:  # a search picks the smallest: the least noise
        with pytest.raises(ValueError, match="not a hyper-parameter to search"):
            check_names(dp_heavy_ball, {name: f"grid[{name!r}]"})
        check_names(lambda objective, **kw: None, {name: f"fixed argument {name!r}"})


def test_an_undeclared_radius_read_only_to_warn_does_not_refuse_a_public_sensitivity():
    # the radius branch of the advisory read (review 2: untested): a logistic regression whose
    # radii are the data's, given a public S_1, runs, without a data-dependent warning
    a, y = _data()
    f = LogisticRegression(a, y, l2=0.02)  # radii undeclared: the data's largest norms
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sel = select_privately(dp_heavy_ball, f, GRID, sensitivity=16.0, **KW)
    assert np.all(np.isfinite(sel.x))
    with pytest.raises(ValueError, match="reads the objective's l1_radius"):  # control
        select_privately(dp_heavy_ball, LogisticRegression(a, y, l2=0.02), GRID, **KW)


def test_every_constant_the_algorithms_read_is_watched_or_structural():
    """A machine check of CALIBRATION_CONSTANTS: every attribute of an objective that
    dpbounds.algorithms reads (``objective.X``, ``f.X``, ``getattr(objective, "X")``) is either
    watched or on this list of the data's interface and shape."""
    import re
    from pathlib import Path

    from dpbounds.tuning.private_selection import CALIBRATION_CONSTANTS

    structural = {"n", "d", "xp", "regularizer_grad", "sample_grads", "initial_state",
                  "optimum", "grad", "clipped_mean_grad", "convex", "loss_and_grad", "loss",
                  "_host_fgh", "rowwise_states", "normalized_mean_grad", "labels_np",
                  "grad_norm", "features_np", "clipped_loss", "centre", "_reg_host", "_psi",
                  "_dpsi", "_d2psi", "_data_grad", "_gradient_parts", "centred_records",
                  "psi_slope", "regularizer", "sample_losses", "suboptimality", "l2",
                  "to_backend", "name", "problem_class",
                  # a warning's words (which formula a declared L came from), not a constant
                  "smoothness_origin"}
    root = Path(__file__).resolve().parents[2] / "dpbounds" / "algorithms"
    read = set()
    for path in root.glob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"\b(?:objective|f)\.([A-Za-z_][A-Za-z0-9_]*)", text))
        read |= set(re.findall(r"getattr\((?:objective|f), \"([A-Za-z_0-9]+)\"", text))
    unknown = sorted(read - structural - set(CALIBRATION_CONSTANTS))
    assert not unknown, f"watch these or list them as structural: {unknown}"
    assert {"l1_sensitivity", "lipschitz", "sample_smoothness"} <= read  # the scan works


def test_the_packages_own_objectives_declare_every_constant_they_hold():
    from dpbounds.cli.tune_runs_cmd import build_problem
    from dpbounds.objectives import HuberSVM, NonconvexLogisticRegression, QuadraticObjective
    from dpbounds.tuning.private_selection import _own_properties

    a, y = _data()
    objs = [build_problem(p, 100, 3, 0.02, None, 0)
            for p in ("logistic", "quadratic", "huber_well", "far", "noise_floor", "hard")]
    objs += [HuberSVM(a, y), NonconvexLogisticRegression(a, y),
             QuadraticObjective.random(d=3, mu=0.5, L=2.0, n=20, seed=0, offset_scale=1.0)]
    assert all(_own_properties(o) == ([], []) for o in objs)
    watched, pinned = _own_properties(_objective(CachedSensitivity))  # control
    assert "l1_sensitivity" in watched and "l1_sensitivity" not in pinned


class Proxy:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, key):
        return getattr(self._inner, key)


class TrackingSetattr(LogisticRegression):
    def __setattr__(self, key, value):
        self.__dict__[key] = value  # a change-tracking pattern: __class__ lands in __dict__


class RaisedSlope(LogisticRegression):
    @property
    def psi_slope(self) -> float:  # an input of the package's l1_sensitivity
        return float(np.max(np.abs(self.features_np)))


class ResetRadius(LogisticRegression):
    def __init__(self, a, y, **kw):
        super().__init__(a, y, **kw)
        self.l1_radius = float(np.max(np.abs(a).sum(axis=1)))  # declared 8, then the data's


def test_hooks_wrappers_transitive_inputs_and_reset_radii_are_refused():
    # review 3 of stop 80: each ran with its noise moved by the data (8x on neighbours)
    a, y = _data()
    declared = dict(l2=0.02, l1_radius=8.0, l2_radius=6.0)
    with pytest.raises(ValueError, match="defines Proxy.__getattr__"):
        select_privately(dp_heavy_ball, Proxy(LogisticRegression(a, y, l2=0.02)), GRID, **KW)
    with pytest.raises(ValueError, match="defines TrackingSetattr.__setattr__"):
        select_privately(dp_heavy_ball, TrackingSetattr(a, y, **declared), GRID, **KW)
    with pytest.raises(ValueError, match="reads the objective's psi_slope"):
        select_privately(dp_heavy_ball, RaisedSlope(a, y, **declared), GRID, **KW)
    with pytest.raises(ValueError, match="reads the objective's l1_radius"):
        select_privately(dp_heavy_ball, ResetRadius(a, y, **declared), GRID, **KW)
    # control: the same declaration, untouched, runs
    assert np.all(np.isfinite(select_privately(
        dp_heavy_ball, LogisticRegression(a, y, **declared), GRID, **KW).x))


def test_a_subclass_of_a_package_class_runs_with_the_package_classs_constants():
    # review 3 of stop 80: pinned to the class, HuberSVM's curvature (then an instance
    # attribute, 1/(2h)) would have read the margin losses' 0.25 in a subclass's runs: a
    # difference clip 4x too small at h = 0.5. Oracle: the plain class's own run.
    from dpbounds.algorithms import sensitivity_reduced_nsgd
    from dpbounds.objectives import HuberSVM

    class MyHuber(HuberSVM):
        pass

    a, y = _data()
    kw = dict(epsilon=1.0, delta=1e-5, epochs=1, step_size=0.1, batch_size=50,
              clip_threshold=6.0, noise="grid", seed=0)
    want = sensitivity_reduced_nsgd(HuberSVM(a, y, l2=0.02, l1_radius=8.0, l2_radius=6.0),
                                    **kw).params["diff_clip"]
    seen = []

    def spy(objective, **run):
        res = sensitivity_reduced_nsgd(objective, **run)
        seen.append(res.params["diff_clip"])
        return res

    fixed = {k: v for k, v in kw.items() if k not in ("epsilon", "seed", "noise", "step_size")}
    select_privately(spy, MyHuber(a, y, l2=0.02, l1_radius=8.0, l2_radius=6.0),
                     {"step_size": [0.1]}, epsilon=1.0, score_epsilon=0.1, loss_bound=5.0,
                     stop_probability=0.5, target_delta=1e-5, seed=0, **fixed)
    assert seen and all(v == pytest.approx(want, rel=1e-12) for v in seen)
    with pytest.raises(AttributeError):  # a curvature from the records cannot be set on it
        MyHuber(a, y).psi_curvature = 3.0
