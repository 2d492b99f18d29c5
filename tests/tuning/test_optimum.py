"""Issue 19 item 2: the heavy-ball tuner finds the optimum of the quadratic-class bound and
proves how near it is.

Oracle: a brute-force search written here from the formulas (three-term recurrence for the
transient envelope, not the closed forms the library uses): every horizon T <= Tmax at every
point of a 90 x 90 grid in (log alpha, -log(1 - beta)), then a 60 x 60 grid around the best
cell. The tuner must match it within 0.1%, its certified lower bound must lie below it and
within 0.1% of the tuned bound, and the tuner's own point must have the bound it reports
(recomputed here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.cli import main
from dpbounds.tuning import tune_heavy_ball
from tests.tuning.hb_oracle import oracle_values

TMAX = 120


def oracle_minimum(mu, L, d, n, m, eps, S, D):
    def grid(x0, x1, y0, y1, k):
        X, Y = np.meshgrid(np.linspace(x0, x1, k), np.linspace(y0, y1, k))
        v, _ = oracle_values(np.exp(X.ravel()), -np.expm1(-Y.ravel()), mu, L, d, n, m, eps, S, D)
        i = int(np.argmin(v))
        return float(v[i]), X.ravel()[i], Y.ravel()[i], X[0, 1] - X[0, 0], Y[1, 0] - Y[0, 0]

    v, x, y, hx, hy = grid(math.log(1e-3 / L), math.log(4 / L), 0.0, math.log(1e4), 90)
    v2, *_ = grid(x - hx, x + hx, max(y - hy, 0.0), y + hy, 60)
    # and the closed-form points: Polyak's, and alpha = 1/L, beta = 0 (exact in one step at
    # mu = L, a minimum no grid contains)
    q = math.sqrt(mu / L)
    special, _ = oracle_values([4 / (math.sqrt(mu) + math.sqrt(L)) ** 2, 1 / L],
                               [((1 - q) / (1 + q)) ** 2, 0.0], mu, L, d, n, m, eps, S, D)
    return min(v, v2, float(np.min(special)))


# (kappa, eps, d, n, m, S1): kappa 1..1e6, eps 0.01..10, with and without subsampling
PROBLEMS = [
    (1.0, 1.0, 10, 10**5, None, 1.0), (1.0, 0.01, 5, 10**4, None, 1.0),
    (3.0, 10.0, 50, 10**6, 1000, 2.0), (10.0, 0.1, 20, 10**5, None, 4.0),
    (10.0, 10.0, 2, 10**3, 100, 1.0), (30.0, 1.0, 100, 10**6, None, 1.0),
    (100.0, 0.01, 10, 10**6, None, 1.0), (100.0, 1.0, 20, 10**5, 500, 40.0),
    (255.14, 1.0, 20, 10**5, None, 40.0), (300.0, 0.3, 1, 10**4, None, 0.5),
    (1e3, 10.0, 10, 10**5, None, 1.0), (1e3, 0.1, 30, 10**6, 10**4, 2.0),
    (3e3, 1.0, 5, 10**5, None, 1.0), (1e4, 0.01, 10, 10**7, None, 1.0),
    (1e4, 3.0, 200, 10**6, None, 1.0), (3e4, 0.3, 10, 10**5, 10**3, 1.0),
    (1e5, 1.0, 10, 10**6, None, 1.0), (1e5, 10.0, 1000, 10**7, None, 10.0),
    (1e6, 0.03, 10, 10**6, None, 1.0), (1e6, 5.0, 50, 10**5, None, 1.0),
]


@pytest.mark.parametrize("kappa,eps,d,n,m,S", PROBLEMS)
def test_tuner_matches_the_brute_force_oracle(kappa, eps, d, n, m, S):
    L, E0 = 1.0, 1.0
    mu = L / kappa
    res = tune_heavy_ball(mu, L, objective="bound",
                          d=d, n=n, m=m, epsilon=eps, sensitivity=S, initial_gap=E0,
                          max_horizon=TMAX, grid=16)
    t = res.tuned
    mm = n if m is None else m
    D = 2 * E0 / mu
    oracle = oracle_minimum(mu, L, d, n, mm, eps, S, D)
    # the tuned point has the bound it reports (recomputed by the oracle's code)
    v, T = oracle_values([t.alpha], [t.beta], mu, L, d, n, mm, eps, S, D)
    assert v[0] == pytest.approx(t.bound, rel=1e-9) and T[0] == t.horizon
    assert t.bound <= oracle * (1 + 1e-3)  # within 0.1% of brute force (or better)
    # the certificate is a true lower bound (below the brute-force minimum) and the reported
    # gap is the bracket's width
    assert 0 < res.lower_bound <= oracle * (1 + 1e-12)
    assert t.bound == pytest.approx(res.lower_bound * (1 + res.certified_gap), rel=1e-12)
    # and it is tight: the tuned bound is proven within 0.1% of the optimum (issue 19)
    assert res.certified_gap <= 1e-3


def test_refining_the_search_does_not_make_it_worse():
    # issue 19: grids 12 / 30 / 60 gave 5.167 / 5.719 / 6.045 (finer was worse)
    kw = dict(d=20, n=10**5, epsilon=1, sensitivity=40, initial_gap=10, max_horizon=TMAX)
    runs = [tune_heavy_ball(0.02, 5.1028, objective="bound", grid=g, **kw) for g in (8, 16, 32)]
    vals = [r.tuned.bound for r in runs]
    assert max(vals) <= min(vals) * (1 + 1e-4), vals
    # every run's value lies in every run's certified bracket
    assert max(r.lower_bound for r in runs) <= min(vals)
    assert vals[2] <= vals[0] * (1 + 1e-4) and vals[2] <= vals[1] * (1 + 1e-4)


class _NoBracket:
    """Stands in for heavy ball's branch and bound, which ``tune hb`` (objective error) runs
    last and which feeds only the bracket's lower end: the momentum note checked below is the
    tuned row's (computed before it), and here the printed table is even the same (the
    method-independent bound is the larger; measured), at 2.6 instead of 8.5 s. The bracket
    is checked in ``test_certify_error.py`` and ``test_worst_case_tuning.py``."""

    lower = -math.inf


def test_gradient_descent_is_reported_with_its_reason(capsys, monkeypatch):
    import dpbounds.tuning.heavy_ball as hb

    # kappa = 1: momentum only adds noise; the best heavy ball is alpha = 1/L, beta = 0
    res = tune_heavy_ball(1.0, 1.0, objective="bound", d=10, n=10**5, epsilon=1.0, sensitivity=1.0,
                          initial_gap=1.0, max_horizon=TMAX, grid=12)
    assert res.tuned.beta == 0.0
    assert "beta >= 0 binds" in res.momentum_note and "plain gradient descent" in res.table()
    monkeypatch.setattr(hb, "certify_error_minimum", lambda *a, **k: _NoBracket())
    assert main(["tune", "hb", "--mu", "1", "--L", "1", "--d", "10", "--n", "1e5", "--eps", "1",
                 "--S1", "1", "--initial-gap", "1", "--max-horizon", str(TMAX)]) == 0
    assert "plain gradient descent" in capsys.readouterr().out
    # negative control: with momentum worth having (kappa = 100) nothing is said
    res = tune_heavy_ball(0.01, 1.0, objective="bound", d=10, n=10**5, epsilon=1.0, sensitivity=1.0,
                          initial_gap=1.0, max_horizon=TMAX, grid=12)
    assert res.tuned.beta > 0 and res.momentum_note == ""
