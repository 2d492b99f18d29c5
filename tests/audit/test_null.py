"""Null control: the audit's estimator, run on D = D', certifies ε > 0 at most as often as
its confidence allows.

Oracle: under D = D' every event has TPR = FPR, so a valid (1 - α) lower bound exceeds 0
with probability at most α = 1 - confidence. Each estimator (every fitted statistic, and
the default that picks the best of them) is run on >= 200 independent null samples of
synthetic features (Gaussian, Laplace, and an atomic one with many exact ties, which
breaks estimators that compare round-off); the false-positive rate, with its
Clopper–Pearson interval, must be <= α. Negative control: the same selection evaluated on
the runs it was selected on (no held-out split) must exceed α — the test can fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.audit import audit
from dpbounds.audit.statistics import (
    epsilon_from_counts,
    false_positive_rate,
    fit_scorers,
    held_out_bound,
    select_threshold,
)

ALPHA = 0.05
NULLS = 200
RUNS = 300  # per side: half select, half evaluate


def _null_features(rng: np.random.Generator, kind: str, k: int) -> tuple[np.ndarray, ...]:
    if kind == "gaussian":
        draw = lambda: rng.normal(size=(RUNS, k))  # noqa: E731
    elif kind == "laplace":
        draw = lambda: rng.laplace(size=(RUNS, k))  # noqa: E731
    else:  # atomic: a handful of values, exact ties everywhere
        draw = lambda: rng.integers(-2, 3, size=(RUNS, k)).astype(float) / 3.0  # noqa: E731
    return draw(), draw()


ESTIMATORS = [("identity", 1), ("linear", 4), ("gaussian-lr", 4), ("laplace-lr", 4),
              ("low-bits", 2), ("increments", 4), (None, 4)]  # None: the default (value stats)


def _scorer(name, f_d, f_p):
    if name is None:
        return None
    half = f_d.shape[0] // 2
    return name, fit_scorers(f_d[:half], f_p[:half], () if name == "identity" else (name,))[name]


@pytest.mark.parametrize("name,k", ESTIMATORS)
def test_null_false_positive_rate_is_at_most_alpha(name, k):
    rng = np.random.default_rng(20)
    lowers = []
    for i in range(NULLS):
        f_d, f_p = _null_features(rng, ("gaussian", "laplace", "atomic")[i % 3], k)
        r = held_out_bound(f_d, f_p, 0.0, 1 - ALPHA, scorer=_scorer(name, f_d, f_p))
        lowers.append(r.bound.lower)
    rate, lo, hi = false_positive_rate(np.array(lowers))
    # the rate itself, and its upper Clopper–Pearson end (0 of 200: 0.018)
    assert rate <= ALPHA and hi <= ALPHA, (name, rate, lo, hi)


def test_negative_control_without_held_out_split_exceeds_alpha():
    # selecting the threshold on the runs it is evaluated on: the max over ~800 tests
    rng = np.random.default_rng(21)
    lowers = []
    for i in range(NULLS):
        s_d, s_p = (v[:, 0] for v in _null_features(rng, ("gaussian", "laplace")[i % 2], 1))
        test = select_threshold(s_d, s_p, 0.0, 1 - ALPHA)
        lowers.append(epsilon_from_counts(int(test.event(s_p).sum()),
                                          int(test.event(s_d).sum()), RUNS, 0.0,
                                          1 - ALPHA).lower)
    rate, lo, hi = false_positive_rate(np.array(lowers))
    assert lo > ALPHA, (rate, lo, hi)


def test_every_audit_reports_its_null_control():
    r = audit("dp_gd_gaussian", trials=400, seed=1)
    assert r.null_epsilon_lower >= 0.0 and "null (D = D)" in str(r)
    assert r.to_dict()["null_false_positive"] is (r.null_epsilon_lower > 0.0)
    # the null runs are a third, independent set: a different seed, a different null
    assert r.null_epsilon_lower <= r.claimed_epsilon
