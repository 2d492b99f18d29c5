"""The box lower bounds behind the heavy-ball tuner's certificate (:mod:`dpbounds.tuning._certify`).

Each claim of the module docstring is checked against the independent oracle of
``hb_oracle.py`` (three-term recurrences, not the closed forms): a box's lower bound lies below
the bound at every point of a dense sample of the box (two-sided: it equals the bound on a
one-point box), and the reduction to alpha <= 2(1 + beta)/(mu + L) never drops a better point.
A negative control shows the dense check catches a "lower bound" that is not one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.tuning._certify import box_lower_bounds
from tests.tuning.hb_oracle import bound_table

TMAX = 60
problem = st.tuples(st.floats(0.0, 6.0), st.floats(-2.0, 1.0), st.sampled_from([1, 10, 200]),
                    st.sampled_from([None, 100]))


def setup(p):
    lk, le, d, m = p
    mu, L = 10.0 ** -lk, 1.0
    n = 10**4
    return dict(mu=mu, L=L, D=2.0 / mu, d=d, n=n, m=n if m is None else m, eps=10.0 ** le,
                S=1.0, Tmax=TMAX)


def dense_min(kw, t0, t1, b0, b1, k=13):
    t, b = np.meshgrid(np.linspace(t0, t1, k), np.linspace(b0, b1, k))
    t, b = t.ravel(), b.ravel()
    alpha = t * 2.0 * (1.0 + b) / (kw["mu"] + kw["L"])
    B = bound_table(alpha, b, kw["mu"], kw["L"], kw["d"], kw["n"], kw["m"], kw["eps"], kw["S"],
                    kw["D"], kw["Tmax"])
    return float(np.min(B))


@settings(max_examples=40, deadline=None)
@given(problem, st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 0.999),
       st.floats(0.0, 1.0))
def test_box_lower_bound_is_below_the_bound_on_the_box(p, ta, tb, ba, bw):
    kw = setup(p)
    t0, t1 = sorted((ta, tb))
    t0 = max(t0, 1e-6)
    t1 = max(t1, t0)
    b0 = ba
    b1 = b0 + bw * (0.999 - b0)
    lb = box_lower_bounds(t0, t1, b0, b1, **kw)[0]
    assert lb <= dense_min(kw, t0, t1, b0, b1) * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(problem, st.floats(1e-3, 1.0), st.floats(0.0, 0.99))
def test_box_lower_bound_of_a_point_is_the_bound(p, t, b):
    # two-sided: on a one-point box every monotonicity step is exact
    kw = setup(p)
    lb = box_lower_bounds(t, t, b, b, **kw)[0]
    v = dense_min(kw, t, t, b, b, k=1)
    assert lb == pytest.approx(v, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(problem, st.floats(1.0, 50.0), st.floats(0.0, 0.99))
def test_steps_beyond_alpha_star_are_never_better(p, factor, b):
    # the reduction: B(alpha, beta, T) >= B(alpha*(beta), beta, T) for alpha >= alpha*
    kw = setup(p)
    a_star = 2.0 * (1.0 + b) / (kw["mu"] + kw["L"])
    args = (kw["mu"], kw["L"], kw["d"], kw["n"], kw["m"], kw["eps"], kw["S"], kw["D"], TMAX)
    at_star = bound_table([a_star], [b], *args)
    beyond = bound_table([a_star * factor], [b], *args)
    assert np.all(beyond >= at_star * (1 - 1e-9))


def test_negative_control_a_value_at_the_centre_is_not_a_lower_bound():
    # the same dense check rejects the bound's value at the box centre posing as a lower bound
    kw = setup((2.0, 0.0, 10, None))
    t0, t1, b0, b1 = 0.2, 1.0, 0.0, 0.9
    tc, bc = 0.5 * (t0 + t1), 0.5 * (b0 + b1)
    fake = box_lower_bounds(tc, tc, bc, bc, **kw)[0]
    true_min = dense_min(kw, t0, t1, b0, b1)
    assert fake > true_min * (1 + 1e-3)
    assert box_lower_bounds(t0, t1, b0, b1, **kw)[0] <= true_min
    assert math.isfinite(fake)
