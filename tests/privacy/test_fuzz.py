"""Hypothesis fuzzing of the public privacy functions: for any input, either a ValueError that
names a parameter, or a finite, non-negative result. No NaN/inf leaks, no other exceptions, no
hang (every call runs under a 30 s alarm), no unbounded allocation from a huge integer.

A longer sweep of the same kind (every public function, ~60 random extreme calls each) is
described in the issue-8 report; these tests keep a fast share of it in CI."""

from __future__ import annotations

import contextlib
import logging
import math
import signal

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbounds import privacy as P
from dpbounds.privacy import accountants as A
from dpbounds.privacy import mechanisms as M

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
               "t", "a", "b", "epochs", "orders", "rdp", "epsilons", "weights", "method", "count",
               "accountant", "dataset_size", "sample_size", "noise", "pld", "rdp")


@contextlib.contextmanager
def _deadline(seconds: int = 30):
    """Fail (instead of hanging CI) if the block runs longer than ``seconds``."""
    def fail(*_):
        raise TimeoutError(f"call ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _check(fn, *args, **kw):
    try:
        with _deadline():
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


# ---- issue 8, item 9: huge integers, hangs, allocations, non-ValueError exceptions -------------

HUGE = [10**30, 1e30, 10**400]


@pytest.mark.parametrize("huge", HUGE)
@pytest.mark.parametrize("call,name", [
    (lambda k: A.RdpAccountant().compose(M.GaussianMechanism(1.0), k), "count"),
    (lambda k: A.PldAccountant().compose(M.SubsampledGaussianMechanism(1.0, 0.01), k), "count"),
    (lambda k: P.PrivacyLedger().record(M.GaussianMechanism(1.0), k), "count"),
    (lambda k: P.calibrate(lambda s: M.GaussianMechanism(s), 1.0, 1e-5, "pld", k), "count"),
    (lambda k: P.epsilon_for_noise_multiplier(1.0, 1e-5, 0.01, k), "steps"),
    (lambda k: P.noise_multiplier_for_epsilon(1.0, 1e-5, 0.01, k, accountant="pld"), "steps"),
    (lambda k: P.per_step_epsilon(1.0, k, 100, 10), "steps"),
    (lambda k: P.split_budget(1.0, k), "steps"),
    (lambda k: P.dyadic_nodes(k), "T"),
    (lambda k: P.max_nodes_per_sample(k, 2), "n"),
    (lambda k: P.max_nodes_per_sample(1000, k), "epochs"),
    (lambda k: P.amplify_without_replacement(1.0, 1, k), "n"),
    (lambda k: P.momentum_node_sensitivity(1.0, 0.1, k), "n"),
    (lambda k: P.tree_aggregation_epsilon(1.0, 1e-5, 1.0, k), "node_count"),
    (lambda k: M.TreeAggregationMechanism(1.0, 1.0, k), "node_count"),
    (lambda k: M.SubsampledLaplaceMechanism(1.0, 1.0, 1, k), "dataset_size"),
    (lambda k: P.privacy_table(dataset_size=k), "dataset_size"),
])
def test_huge_integers_are_refused_quickly(call, name, huge):
    # before: steps/count 1e30 hung or allocated terabytes; 10**400 raised OverflowError
    with _deadline(10), pytest.raises(ValueError, match=name):
        call(huge)


def test_max_nodes_per_sample_exact_is_bounded():
    # before: n = 1e8 with method="exact" ran for minutes (O(E N log T) with a slow inner loop)
    with _deadline(10):
        with pytest.raises(ValueError, match="epochs"):
            P.max_nodes_per_sample(10**8, 2, method="exact")
        with pytest.raises(ValueError, match="epochs"):
            P.max_nodes_per_sample(7, 10**5, method="exact")
        # auto falls back to the (valid, conservative) closed-form bound there
        assert P.max_nodes_per_sample(7, 10**5) == P.max_nodes_per_sample_bound(7, 10**5)
        assert P.max_nodes_per_sample(10**8, 1, method="exact") == (10**8).bit_length()


@pytest.mark.parametrize("z", [1e7, 1e9, 1e12])
def test_without_replacement_rdp_at_huge_noise(z):
    # before: "math domain error" for z >= 1e9 (log1p(-exp(-eps)) with exp(-eps) == 1;
    # dp_accounting has the same failure). Oracle: the order-2 term in mpmath, the smaller
    # of WBK19 Thm 27's q^2 min(4 (e^{2 rho} - 1), 2 e^{2 rho}) and the integer-moment
    # bound's q^2 [(1 - q)(2 e^{2 rho} - 2 e^rho) + q (e^{2 rho} - 1)] (issue 35),
    # rho = 1/(2 z^2); the package adds a 1e-11 relative margin
    q = 0.01
    with mpmath.workdps(50):
        r = 1 / (2 * mpmath.mpf(z) ** 2)
        thm27 = min(4 * mpmath.expm1(2 * r), 2 * mpmath.exp(2 * r))
        own = (1 - q) * 2 * mpmath.exp(r) * mpmath.expm1(r) + q * mpmath.expm1(2 * r)
        exact = mpmath.log1p(q**2 * min(thm27, own))
    got = float(P.without_replacement_gaussian_rdp(q, z, [2.0])[0])
    assert float(exact) <= got <= float(exact) * (1 + 2e-11)


@pytest.mark.parametrize("eps", [1e-4, 1e-6])
def test_without_replacement_calibration_at_tiny_epsilon(eps):
    # before: ValueError("math domain error") here, which also broke dp_sgd / dp_nsgd
    z = P.noise_multiplier_for_epsilon(eps, 1e-5, 0.01, 100, "without_replacement")
    assert math.isfinite(z)
    assert P.epsilon_for_noise_multiplier(z, 1e-5, 0.01, 100, "without_replacement") <= eps
    assert P.epsilon_for_noise_multiplier(z * 0.99, 1e-5, 0.01, 100,
                                          "without_replacement") > eps


_mechanisms = st.sampled_from([
    lambda x, y: M.GaussianMechanism(x, y),
    lambda x, y: M.LaplaceMechanism(x, y),
    lambda x, y: M.SubsampledGaussianMechanism(x, min(abs(y), 1.0)),
    lambda x, y: M.TreeAggregationMechanism(x, y, 7),
    lambda x, y: M.PureDpMechanism(x),
    lambda x, y: M.ZcdpMechanism(y),
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(make=_mechanisms, x=st.floats(1e-2, 1e2) | anyfloat, y=st.floats(1e-2, 1e2) | anyfloat,
       count=st.one_of(st.integers(0, 10**6), st.sampled_from([10**9, 10**15, 10**16])),
       name=st.sampled_from(["rdp", "zcdp", "pld", "pure"]),
       delta=st.floats(1e-12, 0.5) | anyfloat, eps=st.floats(0, 50) | anyfloat)
def test_accountants(make, x, y, count, name, delta, eps):
    # any mechanism, count and accountant: a ValueError naming a parameter, or finite results
    def run():
        acc = A.make_accountant(name)
        acc.compose(make(x, y), count)
        return [acc.get_epsilon(delta) if name != "pure" else acc.get_epsilon(), acc.get_delta(eps)]

    _check(run)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(["gauss", "sgm", "lap"]), eps=st.floats(1e-3, 1e3) | anyfloat,
       delta=st.floats(1e-12, 0.5) | anyfloat, name=st.sampled_from(["rdp", "pld", "zcdp"]),
       count=st.integers(1, 10**7) | st.sampled_from([10**9, 10**15]))
def test_calibrate(family, eps, delta, name, count):
    make = {"gauss": lambda s: M.GaussianMechanism(s),
            "sgm": lambda s: M.SubsampledGaussianMechanism(s, 0.01),
            "lap": lambda s: M.LaplaceMechanism(s)}[family]
    _check(P.calibrate, make, eps, delta, name, count, rtol=1e-3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anyfloat, anyfloat, anyfloat)
def test_gaussian_inversions(sigma, delta, sens):
    _check(P.gaussian_epsilon, sigma, delta, sens)
    _check(P.classic_gaussian_epsilon, sigma, delta, sens)


# --- issue 19, item 6: every public privacy function against malformed values ------------------
_GOOD = {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0, "sigma": 2.0, "scale": 1.0, "n": 100,
         "m": 10, "steps": 10, "count": 10, "rho": 0.1, "alpha": 0.5, "sampling_rate": 0.1,
         "noise_multiplier": 1.0, "orders": [2.0, 4.0], "rdp": [0.1, 0.2],
         "epsilons": [0.1, 0.2], "weights": [1.0, 2.0], "T": 10, "t": 3, "node_count": 4,
         "epochs": 2, "lipschitz": 1.0, "a": 1, "b": 4, "source": "add_remove",
         "target": "replace_one"}
_MALFORMED = {"bool": True, "nan": math.nan, "inf": math.inf, "empty-list": [], "text": "yes",
              "huge-int": 10**300, "negative": -1}


def _public_calls():
    import inspect

    for name in sorted(P.__all__):
        f = getattr(P, name)
        if not inspect.isfunction(f):
            continue
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        if all(r in _GOOD for r in required):
            yield name, f, {r: _GOOD[r] for r in required}, params


@pytest.mark.parametrize("bad", sorted(_MALFORMED))
def test_public_privacy_functions_refuse_or_stay_finite(bad):
    import inspect

    value = _MALFORMED[bad]
    checked = 0
    for name, f, base, params in _public_calls():
        for p in params:
            if p.default is not inspect.Parameter.empty and (
                    p.name not in _GOOD and not isinstance(p.default, int | float)):
                continue  # an option with a non-numeric default (a name, an enum)
            flag = p.annotation in (bool, "bool")
            kwargs = {**base, p.name: value}
            with _deadline(10):
                try:
                    out = f(**kwargs)
                except ValueError:
                    checked += 1
                    continue
            # accepted: never a flag as a number, never NaN
            assert not (bad == "bool" and not flag), f"{name}({p.name}=True) accepted"
            assert bad != "empty-list" or np.size(out) > 0 or name == "basic_composition", \
                f"{name}({p.name}=[]) returned an empty result"
            numeric = np.asarray(out, dtype=object).ravel()
            assert not any(isinstance(x, float) and math.isnan(x) for x in numeric), \
                f"{name}({p.name}={bad}) returned NaN"
    assert checked > 20  # the grid did reach the functions
