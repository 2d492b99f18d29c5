"""Hypothesis fuzzing of the public privacy functions: for any input, either a ValueError that
names a parameter, or a finite, non-negative result. No NaN/inf leaks, no other exceptions."""

from __future__ import annotations

import logging
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbounds import privacy as P

logging.getLogger().setLevel(logging.ERROR)

anyfloat = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-1e6, 1e6),
    st.floats(1e-300, 1e-3),
    st.floats(1e3, 1e300),
    st.sampled_from([0.0, 1.0, -1.0, 0.5]),
)
anyint = st.one_of(st.integers(-5, 10**7), st.floats(-10.0, 1e4), st.sampled_from([1, 2, 3]))

PARAM_NAMES = ("sensitivity", "scale", "epsilon", "delta", "sigma", "n", "m", "steps", "rho",
               "alpha", "lipschitz", "node_count", "sampling_rate", "noise_multiplier", "T",
               "t", "a", "b", "epochs", "orders", "rdp", "epsilons", "weights", "method")


def _check(fn, *args, **kw):
    try:
        out = fn(*args, **kw)
    except ValueError as err:
        assert any(name in str(err) for name in PARAM_NAMES), str(err)
        return
    vals = np.atleast_1d(np.asarray(out if not isinstance(out, (list, tuple)) else
                                    [x for pair in out for x in np.atleast_1d(pair)],
                                    dtype=float))
    assert np.all(np.isfinite(vals)), (fn.__name__, args, out)
    assert np.all(vals >= 0), (fn.__name__, args, out)


FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(anyfloat, anyfloat, anyint, anyint)
def test_laplace_functions(x, y, n, m):
    _check(P.subsampled_laplace_epsilon, x, y, n, m)
    _check(P.laplace_scale_for_epsilon, x, y, n, m)
    _check(P.per_step_epsilon, x, n, n, m)
    _check(P.amplify_without_replacement, x, m, n)
    _check(P.deamplify_without_replacement, x, m, n)
    _check(P.laplace_epsilon, x, y)
    _check(P.laplace_variance, x)


@FAST
@given(anyfloat, anyfloat, anyfloat)
def test_gaussian_and_zcdp_functions(x, y, z):
    _check(P.gaussian_delta, x, y, z)
    _check(P.classic_gaussian_sigma, x, y, z)
    _check(P.gaussian_zcdp_rho, x, y)
    _check(P.gaussian_sigma_for_zcdp, x, y)
    _check(P.pure_dp_to_zcdp_rho, x)
    _check(P.zcdp_to_dp_epsilon, x, y)
    _check(P.zcdp_to_dp_epsilon, x, y, "tight")
    _check(P.dp_to_zcdp_rho, x, y)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(1e-4, 1e3) | anyfloat, st.floats(1e-15, 0.5) | anyfloat,
       st.floats(1e-3, 1e3) | anyfloat)
def test_calibrations(eps, delta, sens):
    _check(P.analytic_gaussian_sigma, eps, delta, sens)
    _check(P.tree_aggregation_sigma, eps, delta, sens, 12)
    _check(P.tree_aggregation_epsilon, eps, delta, sens, 12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(1e-2, 1e3) | anyfloat, st.floats(1e-12, 0.5) | anyfloat,
       st.floats(1e-5, 1.0) | anyfloat, st.integers(1, 10**6) | anyint)
def test_rdp_functions(z, delta, q, steps):
    _check(P.poisson_subsampled_gaussian_rdp, q, z, [1.5, 2.0, 64.0])
    _check(P.without_replacement_gaussian_rdp, q, z, [1.5, 2.0, 64.0])
    _check(P.gaussian_rdp, z, [2.0, 3.0])
    _check(P.epsilon_for_noise_multiplier, z, delta, q, steps)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(-3, 3000) | st.floats(-10.0, 1e4) | st.integers(10**6, 10**9),
       st.integers(-3, 30) | st.sampled_from([1.5, 0.0, float("nan")]), anyfloat)
def test_tree_functions(n, e, alpha):
    _check(P.max_nodes_per_sample, n, e)
    _check(P.max_nodes_per_sample_bound, n, e)
    _check(P.momentum_node_sensitivity, 1.0, alpha, n)
    if isinstance(n, int) and 1 <= n <= 5000:
        _check(lambda t: [len(P.dyadic_nodes(t))], n)
        _check(lambda t: [len(P.nodes_ending_at(t))], n)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(1e-3, 50.0), st.floats(-12.0, -2.0), st.integers(1, 10**6))
def test_noise_multiplier_finite_or_clear_error(eps, log10_delta, steps):
    try:
        z = P.noise_multiplier_for_epsilon(eps, 10**log10_delta, 0.01, steps)
    except ValueError as err:
        assert "out of reach" in str(err)
        return
    assert math.isfinite(z) and z > 0
