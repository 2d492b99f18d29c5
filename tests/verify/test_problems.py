"""The Huber well's declared constants hold exactly (property tests against finite
differences and a numerical minimiser), R of a run, and the hard instance's lower bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from dpbounds.objectives import HuberWell
from dpbounds.verify import problem

_f = HuberWell.random(n=20, d=3, G=1.5, L=2.0, spread=0.4, seed=0)
vec = st.lists(st.floats(-4, 4), min_size=3, max_size=3).map(np.array)


@given(x=vec)
@settings(max_examples=60, deadline=None)
def test_every_sample_gradient_is_at_most_G(x: np.ndarray) -> None:
    g = _f.sample_grads(_f.initial_state(1, x))
    assert np.max(np.linalg.norm(g, axis=-1)) <= _f.G * (1 + 1e-12)


@given(x=vec, y=vec)
@settings(max_examples=60, deadline=None)
def test_every_sample_is_L_smooth(x: np.ndarray, y: np.ndarray) -> None:
    gx = _f.sample_grads(_f.initial_state(1, x))[0]
    gy = _f.sample_grads(_f.initial_state(1, y))[0]
    lhs = np.linalg.norm(gx - gy, axis=-1)
    assert np.all(lhs <= _f.L * np.linalg.norm(x - y) * (1 + 1e-9) + 1e-12)


@given(x=vec)
@settings(max_examples=30, deadline=None)
def test_gradient_matches_finite_differences(x: np.ndarray) -> None:
    h = 1e-6
    fd = np.array([(_f.loss(_f.initial_state(1, x + h * e))[0]
                    - _f.loss(_f.initial_state(1, x - h * e))[0]) / (2 * h) for e in np.eye(3)])
    assert np.allclose(fd, _f.grad(_f.initial_state(1, x))[0], atol=1e-5)


def test_closed_form_optimum_against_a_numerical_minimiser() -> None:
    res = minimize(lambda z: float(_f.loss(_f.initial_state(1, z))[0]), np.full(3, 2.0),
                   jac=lambda z: np.asarray(_f.grad(_f.initial_state(1, z))[0]), tol=1e-12)
    assert res.fun == pytest.approx(_f.optimum.value, abs=1e-9)
    assert np.allclose(res.x, _f.optimum.x, atol=1e-4)


def test_the_gradient_norm_is_G_far_out() -> None:
    f = HuberWell.random(n=5, d=2, G=1.0, L=1.0, spread=0.0, seed=0)
    assert float(f.grad_norm(f.initial_state(1, [3.0, 4.0]))[0]) == pytest.approx(1.0)


def test_bad_constants_are_refused() -> None:
    with pytest.raises(ValueError, match="G/L"):
        HuberWell(np.array([[1.0, 0.0], [-1.0, 0.0]]), G=1.0, L=2.0)
    with pytest.raises(ValueError, match="G"):
        HuberWell(np.zeros((2, 2)), G=-1.0)
    with pytest.raises(ValueError, match="problem"):
        problem("nonsense")
    with pytest.raises(ValueError, match="spread"):
        problem("huber_well", spread=1.5)


def test_run_R_is_the_gap_of_the_start() -> None:
    inst = problem("huber_well").build(50, 7, seed=1)
    # start inside the quadratic zone: R = L start^2 / 2 exactly
    assert inst.R == pytest.approx(0.6**2 / 2, rel=1e-12)
    floor = problem("noise_floor").build(50, 7, seed=1)
    assert floor.R == pytest.approx(0.0, abs=1e-15) and floor.R_tune == pytest.approx(0.18)


def test_hard_instance_lower_bound_holds_for_normalized_steps() -> None:
    """Any run moving eta per step keeps ||grad F|| = G until it can reach the zone; the
    tree-momentum algorithm's measured average respects the bound, and a do-nothing run
    (gradient G throughout) sits exactly at G."""
    from dpbounds.algorithms import tree_momentum_nsgd

    inst = problem("hard").build(100, 2, seed=0)
    eta, E = 0.01, 3
    res = tree_momentum_nsgd(inst.objective, epsilon=8.0, delta=1e-5, epochs=E, step_size=eta,
                             trials=3, seed=0, x0=inst.x0, trace="grad_norm")
    lb = inst.lower_bound(eta, 100 * E)
    assert lb == pytest.approx(1.0)  # (5 - 1)/0.01 = 400 > T = 300: the zone is out of reach
    assert np.all(res.trace[:, :-1].mean(axis=1) >= lb * (1 - 1e-9))
    assert math.isclose(inst.R, 5.0 - 0.5, rel_tol=1e-12)
