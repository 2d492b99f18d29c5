"""Defects found by ``bench/fuzz_public_api.py`` (every public function with extreme and
malformed arguments): each input below raised something other than a ValueError, or returned a
NaN, before it was fixed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.algorithms import noisy_projected_sgd
from dpbounds.algorithms.dp_agd import gradient_average
from dpbounds.algorithms.tree_momentum import sensitivity_reduced_privacy
from dpbounds.audit.neighbours import replace_one_pair
from dpbounds.audit.statistics import clopper_pearson, epsilon_from_counts
from dpbounds.audit.transcript import output_features
from dpbounds.bounds.strongly_convex.gradient_noise import laplace_scale_at_horizon
from dpbounds.bounds.strongly_convex.heavy_ball import (
    heavy_ball_iteration_blocks,
    heavy_ball_rate,
    stationary_variance,
)
from dpbounds.bounds.strongly_convex.noise_allocation import naive_select_horizon
from dpbounds.data import kuru_synthetic
from dpbounds.lmi import closed_form_rate_map
from dpbounds.objectives import LogisticRegression, Objective
from dpbounds.privacy import poisson_subsampled_gaussian_rdp
from dpbounds.tuning.heavy_ball import naive_transient_sq
from dpbounds.verify.persistence import tree_noise_persistence
from dpbounds.verify.verdicts import mean_se


def _objective():
    ds = kuru_synthetic(n=50, d=3, seed=0)
    return LogisticRegression.kuru(*ds, lam=0.01, paper_smoothness=True, **ds.domain())


@pytest.mark.parametrize("call, name", [
    (lambda: gradient_average(1.0, 0.0, 1.0, 1.0), "rho_new"),        # ZeroDivisionError
    (lambda: replace_one_pair(dim=1e15), "dim"),                      # MemoryError (7 PiB)
    (lambda: clopper_pearson(10, 10, 1e300), "confidence"),           # returned nan
    (lambda: output_features(np.ones(3), direction=True), "x"),       # IndexError
    (lambda: laplace_scale_at_horizon(1.0, [math.nan], 10, 10, 1.0), "sensitivity"),  # nan
    (lambda: heavy_ball_iteration_blocks(0.1, [math.nan], 0.01), "beta"),  # nan blocks
    (lambda: naive_select_horizon(0.1, 1.0, initial_error=1.0, d=10, sensitivity=-1.0, n=10,
                                  epsilon=1.0, max_horizon=3), "sensitivity"),
    (lambda: Objective(10, math.inf, np), "d"),                       # OverflowError
    (lambda: closed_form_rate_map(0.1, 1.0, [[0.1]], 0.5), "alphas"),
    (lambda: epsilon_from_counts(1, 1, 0, 1e-5, 0.95), "trials"),     # ZeroDivisionError
    (lambda: poisson_subsampled_gaussian_rdp(0.01, 1.0, orders=1e15), "orders"),  # MemoryError
    (lambda: stationary_variance(-math.inf, 0.5, 0.01), "alpha"),     # returned nan
    (lambda: mean_se([math.nan, 1.0]), "values"),                     # returned nan
    (lambda: tree_noise_persistence(n=10, epochs=2, d=2, alpha=0.1, sigma=5e-324), "sigma"),
    (lambda: sensitivity_reduced_privacy(1.0, 1e-5, n=10, epochs=10, alpha=0.1, gamma=1e30,
                                         clip_norm=1.0, diff_clip=1.0), "gamma"),  # ZeroDivision
    (lambda: naive_transient_sq(0.1, -math.inf, 1.0, 3), "beta"),     # returned nan
])
def test_bad_input_is_a_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_gradient_average_is_the_precision_weighted_mean():
    # oracle: (rho_old * first + (rho_new - rho_old) * second) / rho_new, by hand
    assert gradient_average(1.0, 4.0, 2.0, 6.0) == pytest.approx((2.0 + 3 * 6.0) / 4.0)


def test_huge_sensitivity_gives_an_infinite_bound_not_an_overflow():
    # used to raise OverflowError from Python float arithmetic; select_horizon's convention is inf
    best, bounds = naive_select_horizon(0.1, 1.0, initial_error=1.0, d=10, sensitivity=1e300,
                                        n=10, epsilon=1.0, max_horizon=3)
    assert np.all(np.isinf(bounds)) and best == 1


def test_rate_maps_accept_single_numbers():
    # a scalar alpha/beta is a grid of one point; oracle: the closed-form rate itself
    rm = closed_form_rate_map(0.1, 1.0, 0.2, 0.5)
    assert rm.rho_closed_form.shape == (1, 1)
    assert rm.rho_closed_form[0, 0] == pytest.approx(heavy_ball_rate(0.2, 0.5, 0.1, 1.0))


def test_transient_reference_accepts_scalars():
    # oracle: ||T^t||_2^2 by numpy's matrix power and norm
    out = naive_transient_sq(0.1, 0.5, 1.0, 3)
    T = heavy_ball_iteration_blocks(0.1, 0.5, 1.0)
    expect = [np.linalg.norm(np.linalg.matrix_power(T, t), 2) ** 2 for t in (1, 2, 3)]
    np.testing.assert_allclose(out[0], expect, rtol=1e-12)


def test_a_huge_lipschitz_constant_is_simulated_not_an_overflow():
    # BST14's sigma squared L before the root (OverflowError at L = 1e300); the projection keeps
    # the iterate in the ball whatever the noise, so the run is finite
    r = noisy_projected_sgd(_objective(), epsilon=1.0, delta=1e-5, radius=1.0, lipschitz=1e300,
                            steps=5, trials=2, seed=0)
    assert np.all(np.isfinite(r.x_numpy())) and np.all(np.linalg.norm(r.x_numpy(), axis=1) <= 1.0)
    assert r.params["sigma"] > 1e300


def test_stationary_variance_at_a_zero_eigenvalue_is_infinite():
    # Python floats used to raise ZeroDivisionError; the documented value where heavy ball
    # does not contract (lambda = 0) is inf
    assert stationary_variance(0.1, 0.5, 0.0) == np.inf


def test_fuzz_round4_nan_and_huge_inputs_are_refused():
    # found by bench/fuzz_public_api.py --seed 11: a NaN slope from a NaN point, a verdict
    # from a NaN bound (always "fails" silently), n_lambda = 2**63 (IndexError)
    from dpbounds.bounds.strongly_convex.heavy_ball_dp import heavy_ball_dp_bound
    from dpbounds.verify.statistics import local_slopes
    from dpbounds.verify.verdicts import upper

    with pytest.raises(ValueError, match="y"):
        local_slopes([1.0, 2.0], [float("nan"), 1.0])
    with pytest.raises(ValueError, match="same length"):
        local_slopes([1.0, 2.0, 4.0], [1.0, 2.0])
    assert local_slopes([1.0, 2.0, 4.0], [1.0, 2.0, 8.0]) == pytest.approx([1.0, 2.0])
    with pytest.raises(ValueError, match="bound"):
        upper("s", "c", 1.0, 1.0, float("nan"), "oracle")
    assert upper("s", "c", 1.0, 0.1, 2.0, "oracle").holds
    with pytest.raises(ValueError, match="n_lambda"):
        heavy_ball_dp_bound(0.1, 0.5, 0.1, 1.0, d=10, n=10, epsilon=1.0, sensitivity=1.0,
                            initial_distance_sq=1.0, max_horizon=10, n_lambda=2**63)


def test_fuzz_round4_seed12():
    # bench/fuzz_public_api.py --calls 50 --seed 12: NaN precision in GradAvg, sigma = 1e300 in
    # the tree noise variance (OverflowError), step_size = 1e300 in tree momentum (NaN
    # iterates), k = 2**63 points in the horizon search (OverflowError)
    from dpbounds.algorithms import tree_momentum_nsgd
    from dpbounds.algorithms.dp_agd import gradient_average
    from dpbounds.algorithms.tree_aggregation import compose_noise_variance
    from dpbounds.objectives import LogisticRegression
    from dpbounds.tuning.horizon_search import minimise_over_horizon

    one = np.ones((2, 3))
    with pytest.raises(ValueError, match="rho_old"):
        gradient_average(np.array([1.0, 1.0]), np.array([np.nan, 1.0]), one, one)
    # the rows dp_agd does not average (rho_old = rho_new = 1) stay allowed; oracle: weights
    avg = gradient_average(np.array([1.0, 1.0]), np.array([4.0, 1.0]), one, 3 * one)
    np.testing.assert_allclose(avg, [[2.5] * 3, [1.0] * 3])
    with pytest.raises(ValueError, match="sigma"):
        compose_noise_variance(10, 0.1, 1e300)
    assert compose_noise_variance(6, 0.0, 2.0) == 8.0  # two nodes x sigma^2
    rng = np.random.default_rng(0)
    f = LogisticRegression(rng.standard_normal((20, 3)), rng.choice([-1.0, 1.0], 20))
    with pytest.raises(ValueError, match="step_size"):
        tree_momentum_nsgd(f, epsilon=1.0, delta=1e-5, epochs=10, step_size=1e300,
                           x0=np.ones(3))
    with pytest.raises(ValueError, match="k"):
        minimise_over_horizon(None, 2**63, 10, joint=False)


def test_yang_bounds_evaluate_along_an_eps_array():
    # found by the bounds-explorer notebook: compare.crossover(..., variable="eps") raised
    # TypeError for Yang et al.'s entries (c2 was fitted with float(eps) on an array).
    # Oracle: the same bound evaluated point by point.
    from dpbounds.bounds import registry

    entry = registry.get("nonconvex.clipped_sgd")
    base = {"d": 10, "N": 1e5, "delta": 1e-5, "G": 1.0, "L": 1.0, "R": 1.0}
    eps = np.array([0.5, 2.0])
    vec = entry.value(dict(base, eps=eps), invalid="nan")
    one = [float(entry.value(dict(base, eps=e), invalid="nan")) for e in eps]
    np.testing.assert_allclose(vec, one, rtol=1e-12)


def test_heavy_ball_blocks_refuse_infinite_parameters():
    # fuzz --seed 13: alpha = beta = -inf gave a NaN block (inf - inf)
    from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_iteration_blocks

    with pytest.raises(ValueError, match="alpha must be finite"):
        heavy_ball_iteration_blocks(-np.inf, -np.inf, 0.01)
    T = heavy_ball_iteration_blocks(0.5, 0.25, 2.0)  # closed form [[1+b-a*lam, -b], [1, 0]]
    np.testing.assert_array_equal(T, [[0.25, -0.25], [1.0, 0.0]])


def test_fuzz_seed14_tiny_rates_and_tolerances():
    # fuzz --seed 14: lemma31_constant at sampling_rate 5e-324 divided by zero; the naive LMI
    # bisection at tol = 1e-300 never ended (its bracket cannot be split below ~1e-16)
    from dpbounds.bounds.nonconvex.generalized_smoothness import lemma31_constant
    from dpbounds.lmi.heavy_ball_lmi import naive_heavy_ball_lmi_rate

    with pytest.raises(ValueError, match="sampling_rate"):
        lemma31_constant(1.0, 0.999999, sampling_rate=5e-324, steps=10_000, sampling="poisson")
    with pytest.raises(ValueError, match="tol"):
        naive_heavy_ball_lmi_rate(0.1, 1.0, 0.1, 0.5, tol=1e-300)


def test_naive_transient_refuses_bad_parameters_and_overflows_to_inf():
    # fuzz --seed 15: alpha = -1, beta = 1e300 gave NaN (inf - inf in the 2x2 norm)
    from dpbounds.tuning.heavy_ball import naive_transient_sq

    with pytest.raises(ValueError, match="alpha > 0"):
        naive_transient_sq(-1.0, 1e300, 1.0, 1)
    # alpha * lam = 4, beta = 0.5: |eigenvalue| > 1, the powers overflow to inf, never nan
    out = naive_transient_sq(4.0, 0.5, 1.0, 3000)
    assert not np.isnan(out).any() and np.isinf(out[0, -1])
    # stable point: t = 1 equals the closed-form spectral norm^2 of the block
    from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_iteration_blocks
    T = heavy_ball_iteration_blocks(0.5, 0.25, 2.0)
    assert naive_transient_sq(0.5, 0.25, 2.0, 1)[0, 0] == pytest.approx(
        np.linalg.norm(T, 2) ** 2, rel=1e-12)


def test_momentum_flags_must_be_bools():
    # fuzz --seed 16: dp_masg(restart=nan, horizon_reselection=5e-324) ran (both truthy) and
    # returned the NaN flag in its params
    from dpbounds.algorithms import dp_masg, dp_nag
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(0)
    f = LogisticRegression.kuru(rng.standard_normal((50, 3)), rng.choice([-1.0, 1.0], 50))
    with pytest.raises(ValueError, match="restart must be True or False"):
        dp_masg(f, epsilon=1.0, steps=10, restart=float("nan"))
    with pytest.raises(ValueError, match="horizon_reselection"):
        dp_nag(f, epsilon=1.0, steps=10, horizon_reselection=5e-324)
    assert dp_masg(f, epsilon=1.0, steps=10, restart=np.bool_(False), seed=0).steps == 10


def test_gaussian_epsilon_at_subnormal_delta_and_sensitivity_ends():
    # hypothesis (tests/privacy/test_fuzz.py) found sigma = 0.25, delta = sensitivity =
    # 2.2e-313: the polishing loop eps * (1 - 1e-12) never moved a subnormal eps (a hang).
    # Oracle: gaussian_delta at the returned eps is within the target.
    import signal

    from dpbounds import privacy as P

    def fail(*_):
        raise TimeoutError("gaussian_epsilon ran longer than 20 s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(20)
    try:
        eps = P.gaussian_epsilon(0.25, 2.2250738585e-313, 2.2250738585e-313)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert 0 < eps < 1e-300
    assert P.gaussian_delta(0.25, eps, 2.2250738585e-313) <= 2.2250738585e-313


# --- issue 19, item 6: privacy inputs that were accepted silently ----------------------------
def test_split_budget_never_returns_a_zero_share():
    from dpbounds.privacy import split_budget

    with pytest.raises(ValueError, match=r"weights\[1\]=1e-300 is too small"):
        split_budget(1, weights=[1e300, 1e-300])  # returned [1, 0] (a zero-budget step)
    with pytest.raises(ValueError, match="weights must be a real number or a non-empty array"):
        split_budget(1, weights=[])  # returned []
    with pytest.raises(ValueError, match="weights must be a non-empty 1-d array"):
        split_budget(1, weights=[[1.0, 2.0]])
    with pytest.raises(ValueError, match="weights must be a real number"):
        split_budget(1, weights=[True, True])
    # the sum of two huge weights overflowed to inf, so both shares were 0; exact halves now
    assert split_budget(1.0, weights=[1e308, 1e308]).tolist() == [0.5, 0.5]


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(1e-6, 1e3),
       weights=st.lists(st.floats(1e-150, 1e150), min_size=1, max_size=50))
def test_split_budget_shares_are_positive_and_proportional(eps, weights):
    from dpbounds.privacy import split_budget

    shares = split_budget(eps, weights=weights)
    assert np.all(shares > 0) and shares.sum() <= eps  # never overshoots the budget
    assert shares.sum() == pytest.approx(eps, rel=1e-12)
    # oracle: exact rational proportions
    from fractions import Fraction

    total = sum(Fraction(w) for w in weights)
    for w, s in zip(weights, shares):
        assert s == pytest.approx(float(Fraction(eps) * Fraction(w) / total), rel=1e-12)


def test_convert_sensitivity_wants_a_bool():
    from dpbounds.privacy.mechanisms import convert_sensitivity

    with pytest.raises(ValueError, match="per_example_sum must be True or False, got 'yes'"):
        convert_sensitivity(1.0, "replace_one", "add_remove", per_example_sum="yes")
    with pytest.raises(ValueError, match="per_example_sum"):
        convert_sensitivity(1.0, "add_remove", "replace_one", per_example_sum=1)
    assert convert_sensitivity(1.0, "replace_one", "add_remove", per_example_sum=True) == 0.5


PRIVACY_BAD = {"bool": True, "nan": math.nan, "inf": math.inf, "empty": [], "text": "yes",
               "huge-int": 10**300}


@pytest.mark.parametrize("bad", sorted(PRIVACY_BAD))
def test_privacy_functions_refuse_malformed_scalars(bad):
    # found by auditing every public function of dpbounds.privacy with these values: a
    # TypeError (delta=[]), a silent 2.0 (alpha=True), a hang (max_exact_order=inf)
    from dpbounds import privacy as P
    from dpbounds.privacy.rdp import without_replacement_gaussian_rdp

    value = PRIVACY_BAD[bad]
    calls = {
        "delta": lambda v: P.gaussian_epsilon(2.0, v),
        "alpha": lambda v: P.momentum_node_sensitivity(1.0, v, 10),
        "max_exact_order": lambda v: without_replacement_gaussian_rdp(0.1, 2.0, [2.0],
                                                                       max_exact_order=v),
        "epsilon": lambda v: P.classic_gaussian_sigma(v, 1e-5),
    }
    for name, call in calls.items():
        if bad == "huge-int" and name in ("epsilon",):
            continue  # a huge epsilon is a valid (if useless) budget
        with pytest.raises(ValueError, match=name):
            call(value)


def test_tree_node_indices_are_bounded_counts():
    # nodes_ending_at(10**300) returned 1000 nodes of 301-digit integers; counts stop at 10^15
    from dpbounds.privacy import compose, nodes_ending_at

    with pytest.raises(ValueError, match=r"t must be an integer in \[1, 1000000000000000\], "
                                         r"got 1.00e\+300"):
        nodes_ending_at(10**300)
    with pytest.raises(ValueError, match="b must be an integer"):
        compose(1, 10**16)
    assert nodes_ending_at(8) == [(8, 8), (7, 8), (5, 8), (1, 8)]  # the leaf up (brute force)
