"""The proven lower bound of the least worst-case error of a linear momentum method with a
fixed gamma (neither heavy ball nor Nesterov; :mod:`dpbounds.tuning._certify_momentum`,
issue #33).

Oracle: ``momentum_worst_oracle`` (written here from the method's (x, y) iteration, no code
shared with the module), the worst case per horizon on a grid of eigenvalues (a lower end of
the sup over lambda), itself checked against the library's exact ``quadratic_worst_case`` at
one point. Every box bound (per horizon interval) must be at most the oracle's worst case at
every sampled point of the box (corners, centre, random interior) and every horizon of the
interval, for gamma in {-0.3, 0.5, 1.5}: random boxes over the tuner's whole box (alpha L up to
4, where the mapped momentum beta - alpha lambda gamma is negative or above 1) and small boxes.

Negative controls: the bounds x1.2 are caught (the check is tight enough to see a 20% excess);
the momentum map with the wrong sign (beta + alpha lambda gamma) is caught. End to end: the
branch and bound's result is at most a dense minimum over (alpha, beta, T) and within 5% of
it; a plug-in with gamma = 0.5 reports it, far above the method-independent bound; gamma = 0
and gamma = beta never reach it.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpbounds.tuning._certify_momentum as cm
from dpbounds.tuning._certify_error import make_problem

sys.path.insert(0, str(Path(__file__).resolve().parent))
import momentum_worst_oracle as oracle  # noqa: E402
from box_samples import at_centre, exact_least_start, near_boxes, tiny_beta_cases  # noqa: E402

#: (mu, L, d, Tmax, noise scale s: ell(T) = 2 (s T)^2)
PROBLEMS = [
    (0.1, 1.0, 4, 40, 1e-3),
    (0.01, 1.0, 1, 60, 3e-4),
]


def _ell(s, T):
    return 2.0 * (s * np.asarray(T, dtype=float)) ** 2


def _boxes(L, rng, n, small):
    """Random boxes (al0, al1, b0, b1): alpha L in [0.05, 4], beta in [0, 0.99]; log-widths
    1e-3..0.5 (``small``: 1e-3..0.03, beta widths 3e-4..1e-2)."""
    out = []
    for _ in range(n):
        a = math.exp(rng.uniform(math.log(0.05), math.log(3.9))) / L
        b = rng.uniform(0.0, 0.99)
        if small:
            wa, wb = 10 ** rng.uniform(-3, -1.5), 10 ** rng.uniform(-3.5, -2)
        else:
            wa = math.exp(rng.uniform(math.log(1e-3), math.log(0.5)))
            wb = 10 ** rng.uniform(-3, -0.7)
        out.append((a * math.exp(-wa / 2), min(a * math.exp(wa / 2), 4.0 / L),
                    max(b - wb / 2, 0.0), min(b + wb / 2, 0.999)))
    return [np.array(v) for v in zip(*out)]


def _excess(prob, gamma, boxes, lam, d, s, rng, factor=1.0):
    """The largest ratio (box bound per interval) / (oracle at sampled points and horizons)."""
    al0, al1, b0, b1 = boxes
    Wb = cm.momentum_box_lower(prob, gamma, al0, al1, b0, b1, by_interval=True) * factor
    Tmax = int(prob.Thi[-1])
    ell = _ell(s, np.arange(1, Tmax + 1))
    worst = 0.0
    for i in range(al0.size):
        pts = [(al0[i], b0[i]), (al0[i], b1[i]), (al1[i], b0[i]), (al1[i], b1[i]),
               (0.5 * (al0[i] + al1[i]), 0.5 * (b0[i] + b1[i]))]
        pts += [(rng.uniform(al0[i], al1[i]), rng.uniform(b0[i], b1[i])) for _ in range(2)]
        W = np.min([oracle.worst(a, b, gamma, lam, Tmax, d, 1.0, ell) for a, b in pts], axis=0)
        for j, (t0, t1) in enumerate(zip(prob.Tlo, prob.Thi)):
            ref = float(np.min(W[t0 - 1:t1]))
            if Wb[i, j] > 0:
                worst = max(worst, Wb[i, j] / ref)
    return worst


def test_oracle_matches_the_exact_worst_case():
    from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case

    mu, L, d, T, a, b, g, var = 0.1, 1.0, 3, 17, 0.9, 0.55, 0.5, 3e-4
    lam = oracle.lambda_grid(mu, L, 4000)
    W = oracle.worst(a, b, g, lam, T, d, 1.0, np.full(T, var))[-1]
    wc = quadratic_worst_case(mu, L, d, alpha=a, beta=b, gamma=g, laplace_var=var, steps=T,
                              initial_gap=1.0)
    assert wc.value * (1 - 1e-6) <= W <= wc.upper * (1 + 1e-9)
    assert W == pytest.approx(wc.value, rel=1e-3)
    # control: another gamma at the same point is another value
    other = quadratic_worst_case(mu, L, d, alpha=a, beta=b, gamma=3 * g, laplace_var=var,
                                 steps=T, initial_gap=1.0)
    assert abs(other.value / W - 1) > 0.05


@pytest.mark.parametrize("gamma", [-0.3, 0.5, 1.5])
@pytest.mark.parametrize("mu, L, d, Tmax, s", PROBLEMS)
def test_box_bounds_never_exceed_the_dense_worst_case(mu, L, d, Tmax, s, gamma, monkeypatch):
    rng = np.random.default_rng(int(1 / mu) + int(10 * gamma))
    prob = make_problem(mu, L, d, Tmax, lambda T: _ell(s, T), 0.0, 1.0, None, any_noise=True)
    lam = oracle.lambda_grid(mu, L, 300)
    boxes = [np.concatenate(v) for v in zip(_boxes(L, rng, 6, False), _boxes(L, rng, 6, True))]
    assert _excess(prob, gamma, boxes, lam, d, s, rng) <= 1.0
    # the check sees a 20% excess: some box bound is within 1/1.2 of the oracle
    assert _excess(prob, gamma, boxes, lam, d, s, rng, factor=1.2) > 1.0
    # mutant: the momentum map with the wrong sign (beta + alpha lambda gamma) is caught
    real = cm.mapped_momentum
    monkeypatch.setattr(cm, "mapped_momentum", lambda g, *a: real(-g, *a))
    assert _excess(prob, gamma, boxes, lam, d, s, rng) > 1.0


@pytest.mark.parametrize("gamma, near, boxes", [(1.5, 0.85, 5000), (-0.3, 0.5, 3000)])
def test_branch_and_bound_below_and_near_a_dense_minimum(gamma, near, boxes):
    """Measured (2026-12-03): the lower end is 0.89 of the dense minimum at gamma = 1.5 (5000
    boxes; 0.94 at the default 8000) and 0.77 at gamma = -0.3 (3000 boxes), budgets cut to
    keep the test short (the weakest leaf is not cut to the incumbent within them; gamma < 0 is
    not tuned by the library: quadratic_worst_case needs gamma >= 0).
    The incumbent handed in is 1.05 times the dense minimum, so "below it" is a real check (the
    result is capped by the incumbent)."""
    mu, L, d, Tmax, s = 0.1, 1.0, 4, 30, 1e-3
    ell = _ell(s, np.arange(1, Tmax + 1))
    lam = oracle.lambda_grid(mu, L, 150)
    rng = np.random.default_rng(3)
    # a coarse grid, then a local refinement around its best point
    best, at = math.inf, (0.0, 0.0)
    for a in np.linspace(0.1, 3.9, 20) / L:
        for b in np.linspace(0.0, 0.95, 20):
            v = float(np.min(oracle.worst(a, b, gamma, lam, Tmax, d, 1.0, ell)))
            if v < best:
                best, at = v, (a, b)
    for _ in range(60):
        a = at[0] * math.exp(rng.normal(0, 0.05))
        b = min(max(at[1] + rng.normal(0, 0.02), 0.0), 0.999)
        v = float(np.min(oracle.worst(a, b, gamma, lam, Tmax, d, 1.0, ell)))
        if v < best and a <= 4.0 / L:
            best, at = v, (a, b)
    br = cm.certify_momentum_minimum(mu, L, d, Tmax, lambda T: _ell(s, T), 0.0, gamma=gamma,
                                     best=1.05 * best, initial_gap=1.0, any_noise=True,
                                     max_boxes=boxes)
    assert near * best < br.lower <= best
    # a slice (beta fixed at the dense optimum's): below the slice's dense minimum
    sl = min(float(np.min(oracle.worst(a, at[1], gamma, lam, Tmax, d, 1.0, ell)))
             for a in np.linspace(0.02, 3.99, 100) / L)
    br = cm.certify_momentum_minimum(mu, L, d, Tmax, lambda T: _ell(s, T), 0.0, gamma=gamma,
                                     best=2 * sl, initial_gap=1.0, any_noise=True, beta=at[1],
                                     max_boxes=400)
    assert br.lower <= sl
    with pytest.raises(ValueError, match="alpha must be in"):
        cm.certify_momentum_minimum(mu, L, d, Tmax, lambda T: _ell(s, T), 0.0, gamma=gamma,
                                    best=1.0, initial_gap=1.0, alpha=4.1 / L)


def test_small_boxes_near_the_tuned_point():
    """Where the branch and bound's weakest leaves sit (gamma = 1.5, L/mu = 100, around the
    tuned (0.906, 0.863, T = 34): the mode at L alternates and decays slowly, bounded by M2's
    real-root forms and M3's tail): below the oracle at every horizon; the bounds x1.05 are
    caught (measured: the median box bound is 0.95 of the oracle's least worst case)."""
    mu, L, d, Tmax, s = 0.01, 1.0, 4, 100, 1e-3
    rng = np.random.default_rng(7)
    prob = make_problem(mu, L, d, Tmax, lambda T: _ell(s, T), 0.0, 1.0, None, any_noise=True)
    lam = oracle.lambda_grid(mu, L, 300)
    boxes = near_boxes(rng, 0.906, 0.863, 6, 0.05, 0.02, (-4, -2), (-4, -2.5))
    assert _excess(prob, 1.5, boxes, lam, d, s, rng) <= 1.0
    assert _excess(prob, 1.5, boxes, lam, d, s, rng, factor=1.05) > 1.0


def test_closed_form_on_the_mapped_box_holds_and_raises_the_bound(monkeypatch):
    """Heavy ball's step 7 (the oscillating mode's closed form) on M0's heavy-ball box, near the
    tuned point of gamma = 0.5 at L/mu = 1e3 (1.878, 0.941): below the oracle at every horizon,
    and it raises the bound (measured: up to x1.037 per interval, x1.024 on a box's least);
    mutant: its start bound read at the box's centre
    is caught."""
    mu, L, d, Tmax, s = 1e-3, 1.0, 4, 100, 1e-3
    rng = np.random.default_rng(11)
    prob = make_problem(mu, L, d, Tmax, lambda T: _ell(s, T), 0.0, 1.0, None, any_noise=True)
    lam = oracle.lambda_grid(mu, L, 300)
    boxes = near_boxes(rng, 1.878, 0.941, 6, 0.05, 0.01, (-4, -2.5), (-4.5, -3))
    assert _excess(prob, 0.5, boxes, lam, d, s, rng) <= 1.0
    on = cm.momentum_box_lower(prob, 0.5, *boxes, by_interval=True)
    monkeypatch.setattr(cm, "_CLOSED_FORM", False)
    off = cm.momentum_box_lower(prob, 0.5, *boxes, by_interval=True)
    assert np.all(off <= on) and np.max(on / np.maximum(off, 1e-300)) > 1.02
    monkeypatch.setattr(cm, "_CLOSED_FORM", True)
    monkeypatch.setattr(cm, "_closed_form_start", at_centre(cm._closed_form_start))
    assert _excess(prob, 0.5, boxes, lam, d, s, rng) > 1.0



def _tiny_beta_violations() -> tuple[int, float]:
    """M4 on heavy-ball point boxes of tiny momentum against the exact start term."""
    bad, best = 0, 0.0
    for lam, al, b, T0, T1 in tiny_beta_cases(300, 77):
        prob = make_problem(lam / 2, 2 * lam, 1, T1, lambda T: np.zeros_like(T), 0.0, 1.0, None)
        prob = dataclasses.replace(prob, Tlo=np.array([T0]), Thi=np.array([T1]),
                                   ell=np.array([0.0]))
        v = [np.array([x]) for x in (al, al, b, b)]
        A = float(cm._phase_any(prob, lam, *v)[0, 0])
        exact = exact_least_start(1 + Fraction(b) - Fraction(al) * Fraction(lam), Fraction(b),
                                  T0, T1)
        bad += A > exact * (1 + 1e-12)
        best = max(best, A / exact)
    return bad, best


def test_phase_bound_holds_at_tiny_momentum():
    # (a fixed 1e-12 margin on cos theta: 26 of 600 such cases above the exact value, by up to
    # 1e-6 relative)
    bad, best = _tiny_beta_violations()
    assert bad == 0 and best > 0.999  # binds (measured: 0.9999999999)


def test_negative_control_phase_bound_fixed_margin_is_caught(monkeypatch):
    monkeypatch.setattr(cm, "_cos_pad", lambda al1, lam, s0: 0.0)
    assert _tiny_beta_violations()[0] > 0
