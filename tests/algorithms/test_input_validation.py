"""Bad input to the algorithms and objectives: a ValueError naming the parameter, at once.

Regression tests for issue 8 item 10 (every algorithm accepted an ``x0`` holding NaN and
returned NaN) and for integer parameters given ``1e30`` (accepted, then an attempt to allocate
or to loop that long). The oracle is the contract itself; the negative controls are the
valid inputs next to each bad one, which must run and give finite results.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpbounds.algorithms as A
from dpbounds.algorithms._common import MAX_STEPS, MAX_TRIALS
from dpbounds.backend import TrialRandom, to_numpy
from dpbounds.objectives import (
    CoshCosineObjective,
    LogisticRegression,
    NonconvexLogisticRegression,
    QuadraticObjective,
)


def _takes_x0(name):
    # the *_opt variants take **kwargs and pass x0 on to dp_nag / dp_masg
    return ("x0" in inspect.signature(getattr(A, name.split("[")[0])).parameters
            or name in ("dp_nag_opt", "dp_masg_opt"))


BAD_X0 = {
    "nan": lambda d: np.r_[np.nan, np.zeros(d - 1)],
    "inf": lambda d: np.r_[np.zeros(d - 1), np.inf],
    "-inf scalar": lambda d: -math.inf,
    "wrong length": lambda d: np.zeros(d + 1),
    "not a number": lambda d: "zero",
}


@pytest.mark.parametrize("bad", sorted(BAD_X0))
def test_every_algorithm_rejects_a_bad_x0(algorithm_table, case_name, bad):
    cases, objectives = algorithm_table
    if not _takes_x0(case_name):
        pytest.skip(f"{case_name} has no x0 (it starts from the exact minimiser)")
    f = objectives[case_name][0]
    with pytest.raises(ValueError, match="x0"):
        cases[case_name](f, trials=2, seed=0, x0=BAD_X0[bad](f.d))
    # negative control: a finite x0 of the right shape runs and stays finite
    res = cases[case_name](f, trials=2, seed=0, x0=np.full(f.d, 0.1))
    assert np.all(np.isfinite(to_numpy(res.x)))


@pytest.mark.parametrize("trials", [1e30, 0, 2.5, -1, MAX_TRIALS + 1, math.nan, "3"])
def test_every_algorithm_rejects_bad_trials_at_once(algorithm_table, case_name, trials):
    cases, objectives = algorithm_table
    with pytest.raises(ValueError, match="trials"):
        cases[case_name](objectives[case_name][0], trials=trials, seed=0)


LOGISTIC = LogisticRegression(*(lambda r: (r.uniform(-1, 1, (60, 3)),
                                           np.where(r.uniform(size=60) < 0.5, -1.0, 1.0)))(
    np.random.default_rng(0)), l2=0.05)
NONCONVEX = NonconvexLogisticRegression(LOGISTIC.features_np, LOGISTIC.labels_np)

STEP_PARAMETERS = {
    "dp_gd": (lambda v: A.dp_gd(LOGISTIC, epsilon=1.0, steps=v), "steps"),
    "dp_gd[gaussian]": (lambda v: A.dp_gd(LOGISTIC, epsilon=1.0, delta=1e-5, steps=v,
                                          mechanism="gaussian", clip_threshold=1.0), "steps"),
    "dp_heavy_ball": (lambda v: A.dp_heavy_ball(LOGISTIC, epsilon=1.0, steps=v), "steps"),
    "dp_nag": (lambda v: A.dp_nag_opt(LOGISTIC, epsilon=1.0, steps=v), "steps"),
    "dp_masg": (lambda v: A.dp_masg_opt(LOGISTIC, epsilon=1.0, steps=v), "steps"),
    "dp_sgd": (lambda v: A.dp_sgd(LOGISTIC, epsilon=1.0, delta=1e-5, steps=v, batch_size=5,
                                  step_size=0.1, clip_threshold=1.0), "steps"),
    "dp_nsgd": (lambda v: A.dp_nsgd(LOGISTIC, epsilon=1.0, delta=1e-5, steps=v, batch_size=5,
                                    step_size=0.1, regulariser=0.1), "steps"),
    "noisy_projected_sgd": (lambda v: A.noisy_projected_sgd(
        LOGISTIC, epsilon=1.0, delta=1e-5, radius=1.0, steps=v), "steps"),
    "dp_agd": (lambda v: A.dp_agd(LOGISTIC, epsilon=1.0, delta=1e-5, max_iterations=v),
               "max_iterations"),
    "dp_agd[grid]": (lambda v: A.dp_agd(LOGISTIC, epsilon=1.0, delta=1e-5, grid_size=v),
                     "grid_size"),
    "tree_momentum_nsgd": (lambda v: A.tree_momentum_nsgd(
        NONCONVEX, epsilon=1.0, delta=1e-5, epochs=v, step_size=0.1), "epochs"),
    "sensitivity_reduced_nsgd": (lambda v: A.sensitivity_reduced_nsgd(
        NONCONVEX, epsilon=1.0, delta=1e-5, epochs=v, step_size=0.1), "epochs"),
}


@pytest.mark.parametrize("name", sorted(STEP_PARAMETERS))
@pytest.mark.parametrize("value", [1e30, MAX_STEPS + 1, 0, 3.5])
def test_step_counts_are_bounded_and_integral(name, value):
    run, param = STEP_PARAMETERS[name]
    with pytest.raises(ValueError, match=param):
        run(value)


def test_epochs_times_steps_per_epoch_is_bounded():
    with pytest.raises(ValueError, match="epochs"):
        A.tree_momentum_nsgd(NONCONVEX, epsilon=1.0, delta=1e-5, epochs=MAX_STEPS // 10,
                             step_size=0.1)


def test_default_steps_of_noisy_projected_sgd_refused_when_n_squared_is_too_long():
    rng = np.random.default_rng(1)
    big = LogisticRegression(rng.uniform(-1, 1, (4000, 2)), np.ones(4000))
    with pytest.raises(ValueError, match="steps"):
        A.noisy_projected_sgd(big, epsilon=1.0, delta=1e-5, radius=1.0)


def test_default_step_size_needs_a_finite_smoothness():
    f = CoshCosineObjective(2, offsets=np.array([[0.1, 0.0], [-0.1, 0.0]]))  # L = inf
    with pytest.raises(ValueError, match="step_size"):
        A.dp_gd(f, epsilon=1.0, steps=3)
    r = A.dp_gd(f, epsilon=1.0, steps=3, step_size=0.1, trace="loss")  # negative control
    assert np.all(np.isfinite(r.trace))


def test_alpha_cap_is_checked():
    with pytest.raises(ValueError, match="alpha_cap"):
        A.dp_agd(LOGISTIC, epsilon=1.0, delta=1e-5, alpha_cap=math.nan)


@pytest.mark.parametrize("make,param", [
    (lambda bad: LogisticRegression(bad, np.ones(3)), "features"),
    (lambda bad: LogisticRegression(np.ones((3, 3)), bad[:, 0]), "labels"),
    (lambda bad: QuadraticObjective([1.0, 2.0, 3.0], b=bad[1]), "b"),
    (lambda bad: QuadraticObjective([1.0, 2.0, 3.0], offsets=bad), "offsets"),
    (lambda bad: QuadraticObjective([1.0, math.nan, 3.0]), "eigenvalues"),
    (lambda bad: CoshCosineObjective(3, offsets=bad), "offsets"),
])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_objectives_reject_non_finite_data(make, param, value):
    bad = np.ones((3, 3))
    bad[1, 0] = value
    with pytest.raises(ValueError, match=param):
        make(bad)


def test_declared_offset_radius_must_bound_the_offsets():
    offsets = np.array([[1.0, 0.0], [-1.0, 0.0]])
    with pytest.raises(ValueError, match="offset_l1_radius"):
        QuadraticObjective([1.0, 1.0], offsets=offsets, offset_l2_radius=0.5)
    q = QuadraticObjective([1.0, 1.0], offsets=offsets, offset_l2_radius=2.0)
    assert q.l2_sensitivity == 4.0


def test_state_size_is_bounded_before_allocation():
    wide = QuadraticObjective(np.ones(2**11))  # 2^11 x 10^6 trials = 16 GiB of state
    with pytest.raises(ValueError, match="trials x d"):
        wide.initial_state(MAX_TRIALS)
    assert wide.initial_state(2).shape == (2, 2**11)


def test_trial_random_refuses_huge_trial_counts():
    with pytest.raises(ValueError, match="trials"):
        TrialRandom(0, 1e30)


@settings(max_examples=40, deadline=None)
@given(x0=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=3, max_size=3))
def test_x0_fuzz_runs_finite_or_raises(x0):
    arr = np.asarray(x0)
    if not np.all(np.isfinite(arr)):
        with pytest.raises(ValueError, match="x0"):
            A.dp_heavy_ball(LOGISTIC, epsilon=1.0, steps=2, x0=arr, trace=None)
    else:
        LOGISTIC.initial_state(1, arr)  # finite values of any size are a valid start


def test_tiny_epsilon_never_overflows_into_an_exception():
    # sigma ~ 1e303 at epsilon = 1e-300: sigma**2 overflowed (OverflowError) in the step size
    r = A.noisy_projected_sgd(LOGISTIC, epsilon=1e-300, delta=1e-5, radius=2.0, steps=3)
    assert math.isfinite(r.params["G"]) and np.all(np.isfinite(to_numpy(r.x)))


@pytest.mark.parametrize("run", [
    lambda: A.dp_gd(LOGISTIC, epsilon=1e-300, steps=3),
    lambda: A.dp_heavy_ball(LOGISTIC, epsilon=1e-300, steps=3),
])
def test_laplace_noise_beyond_float64_is_refused_not_nan(run):
    # the fuzz run: scale b ~ 1e300 made x inf and the trace NaN without a word
    with pytest.raises(ValueError, match="epsilon"):
        run()
