"""The proven lower bound of heavy ball's least worst-case error
(:mod:`dpbounds.tuning._certify_error`).

The oracle is written here, independently of the module and of the tuner's search: the second
moments of DP heavy ball on each eigenvalue of a grid (which holds mu, 2 mu, 4 mu and L, the
eigenvalues the box bounds use), propagated step by step, combined into the worst case of
:mod:`dpbounds.bounds.strongly_convex.quadratic_worst_case` at every horizon. The grid's
maximum is a lower end of the true sup over lambda, so ``box bound <= oracle`` at every
sampled point is a sufficient check of ``box bound <= W``. Unstable points are evaluated
(a finite horizon has a finite error) rather than skipped. Negative control: the point bound of
a box's upper corner used as the box's bound is caught by the same check.

Step 5 (the sweep of the phase of an oscillating mode) takes the sup over an interval of
eigenvalues, whose peak a coarse grid can miss by a few percent (measured: a box bound 3% below
the worst case on a 40,000-point grid sat above the 101-point grid's value); a point that is
below its box's bound on the coarse grid is evaluated again on 300, then 3,000 more eigenvalues
(geometric, uniform and cosine-spaced), and only then counts. Step 5 is also checked per
horizon (each interval's bound against every horizon in it) on boxes where the modes
oscillate; negative controls there: the bound x1.2, and the amplitude without the sweep.

Step 2's stationary-minus-complex-tail bound is checked on its own against the noise term
computed by the impulse response at points and eigenvalues of each box and eigenvalue range
(and from below within 2% on tiny boxes); mutants: it x1.2, and the stationary value without
the tail. Step 5' (each piece of the oscillating interval paired with the noise over that
piece) is checked per horizon on boxes near the kappa 1e3, d = 1 optimum, where it raises the
bound by a third; mutant: each piece paired with the noise at the top of the interval.
The negative swing of step 1'' (a start bound at some eigenvalue of [mu, 4 mu]) is paired with
the noise bound over that range: checked per horizon where the noise at mu alone is bounded
tightly; mutant: the pairing with the noise at mu.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpbounds.tuning._certify_error as ce
from dpbounds.bounds.strongly_convex.gradient_noise import laplace_scale_at_horizon
from dpbounds.tuning._certify_error import (
    box_lower_bounds,
    certify_error_minimum,
    make_problem,
)
from dpbounds.tuning._lmi_lower import linear_method_lower_bound
from dpbounds.tuning._quadratic import sampling_variance_of_instance

# (mu, L, d, n, m, eps, S, E0): kappa 1..1e6, eps 0.01..10, d 1..1e3, with and without sampling
PROBLEMS = [
    (1.0, 1.0, 5, 10**4, 10**4, 1.0, 1.0, 1.0),
    (0.1, 1.0, 20, 10**5, 10**5, 0.01, 1.0, 5.0),
    (0.02, 5.1, 20, 10**5, 10**5, 1.0, 40.0, 10.0),
    (1e-3, 1.0, 100, 10**5, 10**4, 0.1, 1.0, 5.0),
    (1e-3, 1.0, 1, 10**4, 10**4, 10.0, 1.0, 1.0),
    (1e-4, 1.0, 1000, 10**6, 10**5, 1.0, 1.0, 2.0),
    (1e-6, 1.0, 10, 10**5, 10**5, 10.0, 1.0, 1.0),
    (1e-2, 1.0, 3, 10**3, 10**2, 0.3, 2.0, 0.5),
]


def _setup(p, Tmax):
    mu, L, d, n, m, eps, S, E0 = p

    def lap(T):
        b = np.asarray(laplace_scale_at_horizon(np.asarray(T, dtype=float), S, n, m, eps))
        with np.errstate(over="ignore"):
            return 2.0 * b * b

    return dict(mu=mu, L=L, d=d, Tmax=Tmax, laplace_var=lap,
                smp=sampling_variance_of_instance(S, n, m)), E0


def _fine_lambdas(mu, L, size):
    """Geometric, uniform and cosine-spaced points of [mu, L] (``size`` each): the cosine
    spacing clusters at both ends, where the modes are near critical damping."""
    k = np.arange(size)
    cos = 0.5 * (L + mu) + 0.5 * (L - mu) * np.cos(k * math.pi / max(size - 1, 1))
    return np.concatenate([np.geomspace(mu, L, size), np.linspace(mu, L, size), cos])


def oracle_min_over_T(alpha, beta, mu, L, d, Tmax, lap, smp, E0=None, D=None, fine=0,
                      by_T=False):
    """min over 1 <= T <= Tmax of the worst case on a lambda grid, per point (step by step).
    ``fine``: also ``fine`` geometric, uniform and cosine-spaced eigenvalues each (the grid's
    maximum is a lower end of the sup over lambda; the box bounds of step 5 take the sup over an
    interval of eigenvalues, which a coarse grid can miss by a few percent)."""
    extra = _fine_lambdas(mu, L, fine) if fine else []
    lam = np.unique(np.concatenate([np.geomspace(mu, L, 97), [mu, L], extra,
                                    [x for x in (2 * mu, 4 * mu) if x <= L]]))[None, :]
    al, be = np.asarray(alpha, float)[:, None], np.asarray(beta, float)[:, None]
    a = 1.0 + be - al * lam
    w = E0 if E0 is not None else 0.5 * D * lam
    e, ep = np.ones_like(a), np.ones_like(a)
    s00, s01, s11 = np.zeros_like(a), np.zeros_like(a), np.zeros_like(a)
    ells = lap(np.arange(1, Tmax + 1, dtype=float))
    best = np.full(al.shape[0], np.inf)
    every = np.empty((al.shape[0], Tmax))
    with np.errstate(over="ignore", invalid="ignore"):
        for T in range(1, Tmax + 1):
            e, ep = a * e - be * ep, e
            s00, s01, s11 = (a * a * s00 - 2 * a * be * s01 + be * be * s11 + al * al,
                             a * s00 - be * s01, s00)
            U, A, ell = 0.5 * lam * s00, w * e * e, ells[T - 1]
            mU = np.max(U, axis=1)
            W = np.max(A + (ell + smp) * U, axis=1) + (d - 1) * ell * mU
            if d >= 2:
                W = np.maximum(W, np.max(A + ell * U, axis=1) + (smp + (d - 1) * ell) * mU)
            every[:, T - 1] = np.where(np.isnan(W), np.inf, W)
            best = np.minimum(best, every[:, T - 1])
    return every if by_T else best


def _random_boxes(rng, mu, L, k):
    x0 = rng.uniform(math.log(1e-4 / L), math.log(4.5 / L), k)
    x1 = x0 + rng.choice([1e-3, 0.05, 0.5, 2.0], k) * rng.uniform(0, 1, k)
    y0 = rng.uniform(0.0, 9.0, k)
    y1 = y0 + rng.choice([1e-3, 0.05, 0.5, 2.0], k) * rng.uniform(0, 1, k)
    al0, al1 = np.exp(x0), np.exp(x1)
    b0, b1 = -np.expm1(-y0), -np.expm1(-y1)
    al0[:3] = 0.0   # tails: alpha from 0, beta up to 1
    b1[3:6] = 1.0
    b0[6:9] = 0.0
    return al0, al1, b0, b1


def _violations(bound_fn, p, Tmax, seed, D=None, refine=None):
    """Points of random boxes where the box bound is above the oracle (relative 1e-9); at most
    ``refine`` suspects (all if None) are checked on the fine grid, and only those count."""
    kw, E0 = _setup(p, Tmax)
    if D is not None:
        E0 = None
    rng = np.random.default_rng(seed)
    al0, al1, b0, b1 = _random_boxes(rng, kw["mu"], kw["L"], 24)
    lb = bound_fn(kw, E0, D, al0, al1, b0, b1)
    # points: the corners and random interior points of each box
    k = 12
    u, v = rng.uniform(0, 1, (al0.size, k)), rng.uniform(0, 1, (al0.size, k))
    u[:, :2], v[:, :2] = [0.0, 1.0], [0.0, 1.0]
    al = al0[:, None] + u * (al1 - al0)[:, None]
    be = np.minimum(b0[:, None] + v * (b1 - b0)[:, None], 1.0 - 1e-12)
    al = np.maximum(al, 1e-300)
    return _count_refined(lb, al, be, kw, Tmax, E0, D, refine), int(np.sum(lb > 0))


def _count_refined(lb, al, be, kw, Tmax, E0, D, refine=None):
    """Points (rows: boxes with bound ``lb``) below their box's bound: on the coarse grid, and
    the suspects (at most ``refine``) again on a fine grid (still a lower end of the worst
    case: only a grid that misses the peak is replaced); suspects not refined do not count."""
    lbs = np.broadcast_to(lb[:, None], al.shape)
    W = oracle_min_over_T(al.ravel(), be.ravel(), kw["mu"], kw["L"], kw["d"], Tmax,
                          kw["laplace_var"], kw["smp"], E0, D)
    sus = np.flatnonzero(lbs.ravel() > W * (1 + 1e-9))[:refine]
    for fine in (100, 1000):  # 300, then 3000 more eigenvalues, where still needed
        if sus.size == 0:
            return 0
        Wf = oracle_min_over_T(al.ravel()[sus], be.ravel()[sus], kw["mu"], kw["L"], kw["d"],
                               Tmax, kw["laplace_var"], kw["smp"], E0, D, fine=fine)
        sus = sus[lbs.ravel()[sus] > Wf * (1 + 1e-9)]
    return int(sus.size)


def _ours(kw, E0, D, al0, al1, b0, b1):
    prob = make_problem(kw["mu"], kw["L"], kw["d"], kw["Tmax"], kw["laplace_var"], kw["smp"],
                        E0, D)
    return box_lower_bounds(prob, al0, al1, b0, b1)


def _corner(kw, E0, D, al0, al1, b0, b1):
    # a plausible bug: the (point) bound of the box's upper corner used for the whole box
    return _ours(kw, E0, D, al1, al1, np.minimum(b1, 1 - 1e-12), np.minimum(b1, 1 - 1e-12))


@pytest.mark.parametrize("i", range(len(PROBLEMS)))
def test_box_bound_is_below_the_worst_case_in_the_box(i):
    bad, nonzero = _violations(_ours, PROBLEMS[i], 150, seed=i)
    assert bad == 0
    assert nonzero >= 6  # the check is not vacuous: most boxes have a positive bound


def test_box_bound_distance_form():
    for i in (2, 3):
        assert _violations(_ours, PROBLEMS[i], 150, seed=10 + i, D=2.0)[0] == 0


def test_negative_control_the_corner_value_is_caught():
    caught = [_violations(_corner, PROBLEMS[i], 150, seed=i, refine=4)[0]
              for i in range(len(PROBLEMS))]
    assert sum(c > 0 for c in caught) >= 6


def test_box_bound_is_tight_at_a_point():
    # two-sided: on a one-point box the bound is not far below the oracle near an optimum
    p = PROBLEMS[3]
    kw, E0 = _setup(p, 150)
    a, b = np.array([1.301]), np.array([0.9411])
    W = oracle_min_over_T(a, b, kw["mu"], kw["L"], kw["d"], 150, kw["laplace_var"],
                          kw["smp"], E0)[0]
    lb = _ours(kw, E0, None, a, a, b, b)[0]
    assert 0.9 * W <= lb <= W


def test_global_lower_bound_is_below_a_run_and_mostly_above_the_method_independent():
    Tmax = 150
    tighter: list[bool] = []
    rows = []
    for p in PROBLEMS:
        kw, E0 = _setup(p, Tmax)
        mu, L, d, n, m, eps, S, _ = p
        # an incumbent: the best point of a coarse grid (its oracle value is <= its true W, so
        # lower <= it is a sufficient check of lower <= min W)
        X, Y = np.meshgrid(np.linspace(math.log(1e-3 / L), math.log(3.9 / L), 16),
                           np.linspace(0.0, 6.0, 10))
        al, be = np.exp(X.ravel()), -np.expm1(-Y.ravel())
        best = float(np.min(oracle_min_over_T(al, be, mu, L, d, Tmax, kw["laplace_var"],
                                              kw["smp"], E0)))
        br = certify_error_minimum(**kw, best=best, initial_gap=E0, max_boxes=3000)
        mi = linear_method_lower_bound(mu, L, d, n, m, eps, S, 2 * E0 / mu, E0, Tmax)
        rows.append((best, br.lower, mi))
        assert 0 < br.lower <= best
        tighter.append(br.lower > mi)
    # heavy ball's own bound is the tighter one on the problem and the m < n one (with
    # this small box budget; bench/worst_case_bracket.py has the tuner's full-budget numbers)
    assert tighter[3] and tighter[7], rows



def _oscillating_violations(p, Tmax, seed, k_boxes=24, k_pts=16, refine=None):
    """Step 5 per horizon: boxes where the modes oscillate (beta near 1, alpha L up to 4), each
    horizon interval's bound against the oracle at every horizon of the interval, at the corners
    and random points of each box. Returns (violations, boxes where step 5 binds); at most
    ``refine`` suspect points (all if None) are checked on the fine grid, and only those count."""
    kw, E0 = _setup(p, Tmax)
    mu, L = kw["mu"], kw["L"]
    rng = np.random.default_rng(seed)
    y0 = rng.uniform(1.0, 9.0, k_boxes)
    y1 = y0 + rng.choice([1e-3, 0.02, 0.2], k_boxes)
    b0, b1 = -np.expm1(-y0), -np.expm1(-y1)
    x0 = np.log(rng.uniform(0.05, 1.0, k_boxes) * (1 + np.sqrt(b0)) ** 2 / L)
    x1 = x0 + rng.choice([1e-3, 0.02, 0.2], k_boxes)
    al0, al1 = np.exp(x0), np.exp(x1)
    prob = make_problem(mu, L, kw["d"], Tmax, kw["laplace_var"], kw["smp"], E0, None)
    lb = ce._box_lower(prob, al0, al1, b0, b1, by_interval=True)
    la, lb_ = ce._oscillating_interval(prob, al0, al1, b0)
    step5 = ce._start_oscillating_lower(prob, al0, al1, b0, b1, la, lb_)
    binds = int(np.sum(np.max(step5 >= 0.5 * lb, axis=1) & (np.max(step5, axis=1) > 0)))
    u, v = rng.uniform(0, 1, (k_boxes, k_pts)), rng.uniform(0, 1, (k_boxes, k_pts))
    u[:, :2], v[:, :2] = [0.0, 1.0], [0.0, 1.0]
    al = (al0[:, None] + u * (al1 - al0)[:, None]).ravel()
    be = (b0[:, None] + v * (b1 - b0)[:, None]).ravel()
    # the bound is within a few percent of the sup over lambda here: the first grid has 300
    # more eigenvalues (the 101-point one put 30% of the points below their bound)
    W = oracle_min_over_T(al, be, mu, L, kw["d"], Tmax, kw["laplace_var"], kw["smp"], E0,
                          by_T=True, fine=100)
    col = np.searchsorted(prob.Thi, np.arange(1, Tmax + 1))  # the interval of each horizon
    bound = np.repeat(lb, k_pts, axis=0)[:, col]
    sus = np.argwhere(bound > W * (1 + 1e-9))
    if sus.size == 0:
        return 0, binds
    rows = np.unique(sus[:, 0])[:refine]
    Wf = oracle_min_over_T(al[rows], be[rows], mu, L, kw["d"], Tmax, kw["laplace_var"],
                           kw["smp"], E0, fine=1000, by_T=True)
    return int(np.sum(bound[rows] > Wf * (1 + 1e-9))), binds


OSC = (1, 2, 3, 6)  # kappa >= 10: the oscillating interval of eigenvalues is not one point


@pytest.mark.parametrize("i", OSC)
def test_oscillating_start_bound_holds_at_every_horizon(i):
    bad, binds = _oscillating_violations(PROBLEMS[i], 120, seed=100 + i)
    assert bad == 0
    assert binds >= 3  # step 5 sets the bound on some boxes: the check is not vacuous


def _mutant(monkeypatch, kind):
    orig = ce._oscillating_pieces

    def inflated(prob, al0, al1, b0, b1, la, lb):
        return [(1.2 * v, lo, hi) for v, lo, hi in orig(prob, al0, al1, b0, b1, la, lb)]

    def no_sweep(prob, al0, al1, b0, b1, la, lb):
        # a plausible bug: the full amplitude without the phase sweep (so at a fixed
        # eigenvalue, where cos(T theta - phi) may be near 0)
        amp2 = np.exp(prob.Thi[None, :] * np.log(b0)[:, None])
        return [(np.where((lb > la)[:, None], prob.w_mu * amp2, 0.0), lo, hi)
                for _, lo, hi in orig(prob, al0, al1, b0, b1, la, lb)]

    monkeypatch.setattr(ce, "_oscillating_pieces", inflated if kind == "x1.2" else no_sweep)


@pytest.mark.parametrize("kind", ["x1.2", "no sweep"])
def test_negative_control_oscillating_mutants_are_caught(monkeypatch, kind):
    _mutant(monkeypatch, kind)
    caught = [_oscillating_violations(PROBLEMS[i], 120, seed=100 + i, refine=3)[0]
              for i in OSC[:3]]
    assert sum(c > 0 for c in caught) >= 2, caught


# --- step 2, stationary minus the tail of complex roots, and step 5' (each piece of the
# oscillating interval paired with the noise bound over that piece) ---------------------------

def _complex_boxes(rng, k_boxes):
    """Boxes and eigenvalue ranges where every point has complex roots (beta near 1, a well
    inside (-2 sqrt(beta), 2 sqrt(beta)))."""
    y0 = rng.uniform(1.0, 4.0, k_boxes)
    b0 = -np.expm1(-y0)
    b1 = -np.expm1(-(y0 + rng.choice([1e-3, 1e-2], k_boxes)))
    lo = rng.uniform(0.2, 0.8, k_boxes)
    hi = lo * (1.0 + rng.choice([0.0, 1e-3, 0.05], k_boxes))
    # alpha lambda between (1 - sqrt(beta))^2 and (1 + sqrt(beta))^2, away from both ends
    c = rng.uniform(0.15, 0.85, k_boxes)
    al0 = ((1 - np.sqrt(b0)) ** 2 + c * 4 * np.sqrt(b0)) / hi
    al1 = al0 * (1.0 + rng.choice([1e-3, 1e-2], k_boxes))
    return al0, al1, b0, b1, lo, hi


def _noise_oracle(al, be, lam, K):
    """U_k(lambda) = lambda / 2 alpha^2 sum_{j<k} h_j^2, k = 1..K, per point (rows) and
    eigenvalue (columns of ``lam``), by the impulse response step by step; shape (P, L, K)."""
    a = 1.0 + be[:, None] - al[:, None] * lam[None, :]
    h, hp = np.ones_like(a), np.zeros_like(a)
    acc = np.zeros_like(a)
    out = np.empty(a.shape + (K,))
    for k in range(K):
        acc = acc + h * h
        out[:, :, k] = 0.5 * lam[None, :] * al[:, None] ** 2 * acc
        h, hp = (1.0 + be[:, None] - al[:, None] * lam[None, :]) * h - be[:, None] * hp, h
    return out


def _tail_check(seed=7, k_boxes=30, K=200):
    """(points and k where step 2's bound over a box and eigenvalue range exceeds the oracle,
    the bounds, the boxes)."""
    rng = np.random.default_rng(seed)
    al0, al1, b0, b1, lo, hi = _complex_boxes(rng, k_boxes)
    ks = np.arange(1, K + 1)
    bound = ce._sum_sq_lower(lo, al0, al1, b0, b1, ks, lam_hi=hi)
    bad = 0
    for i in range(k_boxes):
        u, v = rng.uniform(0, 1, 10), rng.uniform(0, 1, 10)
        u[:4], v[:4] = [0, 0, 1, 1], [0, 1, 0, 1]
        al, be = al0[i] + u * (al1[i] - al0[i]), b0[i] + v * (b1[i] - b0[i])
        lam = np.unique(np.concatenate([np.linspace(lo[i], hi[i], 9), [lo[i], hi[i]]]))
        orc = _noise_oracle(al, be, lam, K).min(axis=(0, 1))
        bad += int(np.sum(bound[i] > orc * (1 + 1e-9)))
    return bad, bound, (al0, al1, b0, b1, lo, hi, ks)


def test_complex_tail_noise_bound_holds_and_binds(monkeypatch):
    bad, bound, (al0, al1, b0, b1, lo, hi, ks) = _tail_check()
    assert bad == 0
    # not vacuous: without the new bound, step 2 is lower (by more than 5%) on most boxes at
    # some k (measured: 27 of 30 boxes, up to a factor 1.6)
    monkeypatch.setattr(ce, "_complex_tail_lower", lambda *a: 0.0)
    old = ce._sum_sq_lower(lo, al0, al1, b0, b1, ks, lam_hi=hi)
    assert np.sum(np.any(bound > 1.05 * old, axis=1)) >= 20


def test_complex_tail_noise_bound_is_tight_near_stationarity():
    # two-sided: on tiny boxes at k = 200 the tail is small, and the bound is within 2% of the
    # least U on the box (oracle) from below
    rng = np.random.default_rng(11)
    al0, al1, b0, b1, lo, hi = _complex_boxes(rng, 12)
    al1, b1, hi = al0 * (1 + 1e-6), b0 + 1e-6 * (1 - b0), lo * (1 + 1e-6)
    K = 200
    bound = ce._sum_sq_lower(lo, al0, al1, b0, b1, np.array([K]), lam_hi=hi)[:, 0]
    orc = np.array([_noise_oracle(np.array([al0[i], al1[i]]), np.array([b0[i], b1[i]]),
                                  np.array([lo[i], hi[i]]), K)[:, :, -1].min()
                    for i in range(12)])
    assert np.all(bound <= orc) and np.all(bound >= 0.98 * orc), bound / orc


@pytest.mark.parametrize("kind", ["x1.2", "no tail"])
def test_negative_control_complex_tail_mutants_are_caught(monkeypatch, kind):
    orig = ce._complex_tail_lower

    def inflated(*a):
        return 1.2 * orig(*a)

    def no_tail(u_inf, *a):  # a plausible bug: the stationary value as a bound at finite k
        return np.broadcast_to(u_inf, np.shape(orig(u_inf, *a)))

    monkeypatch.setattr(ce, "_complex_tail_lower", inflated if kind == "x1.2" else no_tail)
    assert _tail_check(k_boxes=12, K=120)[0] > 0


def _pairing_check():
    """Step 5' on three small boxes near the optimum of the kappa 1e3, d = 1 problem (where
    the start of a near-critical mode sets the bound): (points and horizons where the box bound
    exceeds the oracle, the largest raise of a box's bound by step 5')."""
    p = PROBLEMS[4]
    kw, E0 = _setup(p, 200)
    prob = make_problem(kw["mu"], kw["L"], kw["d"], 200, kw["laplace_var"], kw["smp"], E0, None)
    al0, b0 = np.array([1.1522834, 1.25496, 1.178]), np.array([0.93851, 0.93281, 0.93485])
    al1, b1 = al0 * (1 + 1e-3), b0 + 1e-3 * (1 - b0)
    with_ = ce._box_lower(prob, al0, al1, b0, b1, by_interval=True)
    without = ce._box_lower(prob, al0, al1, b0, b1, by_interval=True, need=0.0)
    assert np.all(with_ >= without)
    raise_ = float(np.max(np.min(with_, axis=1) / np.min(without, axis=1)))
    # the oracle per horizon at the corners and random points of these boxes
    rng = np.random.default_rng(3)
    u, v = rng.uniform(0, 1, (3, 6)), rng.uniform(0, 1, (3, 6))
    u[:, :2], v[:, :2] = [0.0, 1.0], [0.0, 1.0]
    al = (al0[:, None] + u * (al1 - al0)[:, None]).ravel()
    be = (b0[:, None] + v * (b1 - b0)[:, None]).ravel()
    W = oracle_min_over_T(al, be, kw["mu"], kw["L"], 1, 200, kw["laplace_var"], kw["smp"], E0,
                          by_T=True, fine=300)
    col = np.searchsorted(prob.Thi, np.arange(1, 201))  # the interval of each horizon
    return int(np.sum(np.repeat(with_, 6, axis=0)[:, col] > W * (1 + 1e-9))), raise_


def test_piecewise_pairing_holds_and_binds():
    bad, raise_ = _pairing_check()
    assert bad == 0
    assert raise_ > 1.2  # measured 1.33: step 5' sets the bound of the first box


def test_negative_control_piecewise_pairing_mutant_is_caught(monkeypatch):
    # a plausible bug: each piece's start paired with the noise at the top of the oscillating
    # interval (lambda* is somewhere in the piece, not at lambda_b)
    orig = ce._oscillating_pieces

    def top(prob, al0, al1, b0, b1, la, lb):
        return [(v, np.maximum(lo, lb * (1 - 1e-6)), np.maximum(hi, lb))
                for v, lo, hi in orig(prob, al0, al1, b0, b1, la, lb)]

    monkeypatch.setattr(ce, "_oscillating_pieces", top)
    assert _pairing_check()[0] > 0


# --- step 2, monotone Chebyshev terms (near critical damping, at one eigenvalue) --------------

def _critical_boxes(rng, k_boxes):
    """Boxes at one eigenvalue lam where a = 1 + beta - alpha lam is near 2 sqrt(beta) (slow
    modes near critical damping, on both sides)."""
    y0 = rng.uniform(1.0, 4.0, k_boxes)
    b0 = -np.expm1(-y0)
    b1 = -np.expm1(-(y0 + rng.choice([1e-3, 1e-2], k_boxes)))
    lam = rng.uniform(1e-3, 1.0, k_boxes)
    # alpha lam = (1 - sqrt(beta))^2 is critical damping: real roots below, complex above
    al0 = (1.0 - np.sqrt(b0)) ** 2 * rng.uniform(0.3, 4.0, k_boxes) / lam
    al1 = al0 * (1.0 + rng.choice([1e-4, 1e-3], k_boxes))
    return al0, al1, b0, b1, lam


def _cheb_check(seed=5, k_boxes=30, K=150):
    """(points and k where step 2 at one eigenvalue exceeds the oracle, the bounds, boxes)."""
    rng = np.random.default_rng(seed)
    al0, al1, b0, b1, lam = _critical_boxes(rng, k_boxes)
    ks = np.arange(1, K + 1)
    bad = 0
    bounds = np.array([ce._sum_sq_lower(lam[i], al0[i:i + 1], al1[i:i + 1], b0[i:i + 1],
                                        b1[i:i + 1], ks)[0] for i in range(k_boxes)])
    for i in range(k_boxes):
        u, v = rng.uniform(0, 1, 10), rng.uniform(0, 1, 10)
        u[:4], v[:4] = [0, 0, 1, 1], [0, 1, 0, 1]
        al, be = al0[i] + u * (al1[i] - al0[i]), b0[i] + v * (b1[i] - b0[i])
        orc = _noise_oracle(al, be, np.array([lam[i]]), K).min(axis=(0, 1))
        bad += int(np.sum(bounds[i] > orc * (1 + 1e-9)))
    return bad, bounds, (al0, al1, b0, b1, lam, ks)


def test_monotone_chebyshev_noise_bound_holds_and_binds(monkeypatch):
    bad, bounds, (al0, al1, b0, b1, lam, ks) = _cheb_check()
    assert bad == 0
    # not vacuous: without it step 2 is lower by more than 20% on most boxes at some k
    # (measured: 29 of 30, up to a factor 10)
    monkeypatch.setattr(ce, "_monotone_chebyshev_sums", lambda c, b, k: np.zeros((c.size,
                                                                                   len(k))))
    old = np.array([ce._sum_sq_lower(lam[i], al0[i:i + 1], al1[i:i + 1], b0[i:i + 1],
                                     b1[i:i + 1], ks)[0] for i in range(lam.size)])
    assert np.sum(np.any(bounds > 1.2 * old, axis=1)) >= 15


def test_monotone_chebyshev_noise_bound_is_tight_on_a_point():
    # two-sided: on a one-point box with real roots (c >= 1: every term counts) the bound is
    # the noise term itself up to rounding
    al, be, lam, K = 0.05, 0.81, 0.1, 80
    a = 1 + be - al * lam
    assert a >= 2 * math.sqrt(be)
    bound = ce._sum_sq_lower(lam, np.array([al]), np.array([al]), np.array([be]),
                             np.array([be]), np.arange(1, K + 1))[0]
    orc = _noise_oracle(np.array([al]), np.array([be]), np.array([lam]), K)[0, 0]
    assert np.all(bound <= orc * (1 + 1e-12)) and np.all(bound >= orc * (1 - 1e-9))


@pytest.mark.parametrize("kind", ["x1.2", "beta_1"])
def test_negative_control_monotone_chebyshev_mutants_are_caught(monkeypatch, kind):
    orig = ce._monotone_chebyshev_sums

    def inflated(c, b0, k):
        return 1.2 * orig(c, b0, k)

    def beta_1(c, b0, k):  # a plausible bug: the decay at the box's largest beta
        return orig(c, b0 + 1e-2 * (1 - b0), k)

    monkeypatch.setattr(ce, "_monotone_chebyshev_sums", inflated if kind == "x1.2" else beta_1)
    assert _cheb_check(k_boxes=12)[0] > 0


def test_negative_swing_is_paired_with_the_noise_at_its_eigenvalues():
    # step 1'' bounds the start term at some eigenvalue of [mu, 4 mu], so it is paired with a
    # noise bound over that range, not the (tighter) one at mu alone: here, where the noise at
    # mu is bounded within 0.2% (monotone Chebyshev terms), the box bound stays below the
    # oracle at every horizon (the wrong pairing put it 0.5% above at 128 points)
    assert _oscillating_violations(PROBLEMS[7], 300, seed=81)[0] == 0


def test_negative_control_swing_paired_with_the_noise_at_mu_is_caught(monkeypatch):
    orig = ce._sum_sq_lower

    def at_mu(lam, al0, al1, b0, b1, k, lam_hi=None):
        # the bug: the noise bound at mu alone used for the start term at mu 2^(i/2)
        if lam_hi is not None and np.all(np.asarray(lam) == PROBLEMS[7][0]):
            return orig(float(np.ravel(lam)[0]), al0, al1, b0, b1, k)
        return orig(lam, al0, al1, b0, b1, k, lam_hi=lam_hi)

    monkeypatch.setattr(ce, "_sum_sq_lower", at_mu)
    assert _oscillating_violations(PROBLEMS[7], 300, seed=81, refine=3)[0] > 0


# --- step 6: an instance at one eigenvalue, by Taylor's formula on the box --------------------

#: (problem, Tmax, a point near its least worst case): L/mu = 4 (peak at 1.25 mu, T = 9) and
#: Fig. 3 (L/mu = 255, T = 64)
_INSTANCE_CASES = [((0.25, 1.0, 10, 10**4, 10**4, 0.3, 1.0, 1.0), 40, 1.0188, 0.2726),
                   (PROBLEMS[2], 90, 0.2532, 0.8753)]


def _instance_check(case, seed, k_boxes=8, k_pts=6, fine=700):
    """(points and horizons where the per-interval box bound with step 6 at every interval
    exceeds the dense oracle, the bound with step 6 / without it at each box's weakest
    interval)."""
    p, Tmax, a_c, b_c = case
    kw, E0 = _setup(p, Tmax)
    prob = make_problem(kw["mu"], kw["L"], kw["d"], Tmax, kw["laplace_var"], kw["smp"], E0,
                        None)
    rng = np.random.default_rng(seed)
    al0 = a_c * (1.0 + rng.uniform(-0.05, 0.05, k_boxes))
    al1 = al0 * (1.0 + rng.choice([1e-4, 1e-3, 1e-2], k_boxes))
    b0 = b_c * (1.0 + rng.uniform(-0.02, 0.02, k_boxes))
    if b_c > 0.95:  # near 1: 1 - beta perturbed (beta stays below 1)
        b0 = 1.0 - (1.0 - b_c) * (1.0 + rng.uniform(-0.02, 0.02, k_boxes))
    b1 = b0 + (1.0 - b0) * rng.choice([1e-4, 1e-3, 1e-2], k_boxes)
    with_6 = ce._box_lower(prob, al0, al1, b0, b1, by_interval=True, need=1e300)
    without = ce._box_lower(prob, al0, al1, b0, b1, by_interval=True)
    u, v = rng.uniform(0, 1, (k_boxes, k_pts)), rng.uniform(0, 1, (k_boxes, k_pts))
    u[:, :4], v[:, :4] = [0, 0, 1, 1], [0, 1, 0, 1]
    al = (al0[:, None] + u * (al1 - al0)[:, None]).ravel()
    be = (b0[:, None] + v * (b1 - b0)[:, None]).ravel()
    orc = oracle_min_over_T(al, be, kw["mu"], kw["L"], kw["d"], Tmax, kw["laplace_var"],
                            kw["smp"], E0, fine=fine, by_T=True).reshape(k_boxes, k_pts, Tmax)
    bad = 0
    for c, (t0, t1) in enumerate(zip(prob.Tlo, prob.Thi)):
        low = orc[:, :, t0 - 1:t1].min(axis=(1, 2))  # least over the box's points and interval
        bad += int(np.sum(with_6[:, c] > low * (1 + 1e-9)))
    with np.errstate(divide="ignore", invalid="ignore"):
        raise_ = np.where(without > 0, with_6 / without, 1.0)
    return bad, raise_, with_6, orc


@pytest.fixture
def every_interval(monkeypatch):
    # step 6 at every horizon interval of each box (not only the weakest two near the
    # threshold): all checked
    monkeypatch.setattr(ce, "_INSTANCE_ROUNDS", 10**6)
    monkeypatch.setattr(ce, "_INSTANCE_WITHIN", math.inf)
    monkeypatch.setattr(ce, "_INSTANCE_CAP", False)


@pytest.mark.parametrize("k", range(len(_INSTANCE_CASES)))
def test_instance_bound_holds_at_every_horizon_and_binds(every_interval, k):
    bad, raise_, with_6, orc = _instance_check(_INSTANCE_CASES[k], seed=60 + k)
    assert bad == 0
    # not vacuous: the bounds rise (measured: up to x1.18 at L/mu = 4, x1.19 at Fig. 3, per
    # box and interval)
    assert np.max(raise_) > 1.1
    if k == 0:
        # and tight: a box's bound within 1% of the dense worst case on it (measured: 0.02%),
        # so a bound 2% too large is seen (next test)
        ratio = with_6.min(axis=1) / orc.min(axis=(1, 2))
        assert np.max(ratio) > 0.99


@pytest.mark.parametrize("kind", ["no remainder", "x1.02"])
def test_negative_control_instance_mutants_are_caught(every_interval, monkeypatch, kind):
    if kind == "no remainder":  # a plausible bug: the first-order term alone
        monkeypatch.setattr(ce, "_taylor_spread", lambda lam1, da, db, v_a, v_b, *m: (
            lam1 * np.abs(v_a) * da + np.abs(v_a + v_b) * db) * 0.0)
        case = _INSTANCE_CASES[1]
    else:
        orig = ce._instance_cells
        monkeypatch.setattr(ce, "_instance_cells", lambda *a: tuple(
            1.02 * v for v in orig(*a)))
        case = _INSTANCE_CASES[0]
    assert _instance_check(case, seed=60 + _INSTANCE_CASES.index(case))[0] > 0


# --- step 8: start and noise bounded together (and step 6's complex-root majorants) ---------

#: (problem, Tmax, a point near its least worst case, eigenvalues of the oracle's fine grid):
#: L/mu = 1e3, d = 1 (T* ~ 180-200, peaks near L) and L/mu = 100, m < n (d = 3: the start at mu
#: with the noise at L). The second oracle's grid is finer: the bounds there are within 3e-7
#: of the worst case, and 700 eigenvalues miss the peak by more (measured: 2.6e-7 - 6e-6)
_JOINT_CASES = [(PROBLEMS[4], 200, 1.2, 0.934, 700), (PROBLEMS[7], 20, 1.0, 0.862, 20000)]


def _joint_check(k):
    p, Tmax, a_c, b_c, fine = _JOINT_CASES[k]
    return _instance_check((p, Tmax, a_c, b_c), seed=90 + k, fine=fine)


@pytest.mark.parametrize("k", [0, 1])
def test_joint_bound_holds_at_every_horizon_and_binds(every_interval, monkeypatch, k):
    bad, _, with8, orc = _joint_check(k)
    assert bad == 0
    monkeypatch.setattr(ce, "_JOINT", False)
    monkeypatch.setattr(ce, "_INSTANCE_SECOND", False)
    _, _, without, _ = _joint_check(k)
    least = orc.min(axis=(1, 2))
    # tight (measured: the best box at 0.9996 / 1.0000 of the dense worst case on it) ...
    assert np.max(with8.min(axis=1) / least) > 0.999
    # ... and above steps 0-7 alone (measured: +0.5% and +1.5% on two boxes at L/mu = 1e3,
    # +1-2% on every box at m < n)
    assert np.sum(with8.min(axis=1) > 1.004 * without.min(axis=1)) >= 2


@pytest.mark.parametrize("k, kind", [(0, "no remainder"), (1, "no remainder"),
                                     (0, "no 1/sin^k")])
def test_negative_control_joint_mutants_are_caught(every_interval, monkeypatch, k, kind):
    if kind == "no remainder":  # the linear part alone (measured: 246 and 34 violations)
        orig = ce._joint_lower

        def linear_only(w, e, De, Be, re, lam1, ac, da, db, terms):
            terms = [(kk, dict(nz, rho=0.0 * nz["rho"], var=0.0 * nz["var"]))
                     for kk, nz in terms]
            return orig(w, e, De, Be, 0.0 * re, lam1, ac, da, db, terms)

        monkeypatch.setattr(ce, "_joint_lower", linear_only)
    else:  # the complex-root majorant without its 1 / sin^k (measured: 1 violation)
        orig_init = ce._Majorants.__init__

        def init(self, *a):
            orig_init(self, *a)
            self.inv_sk = [np.where(np.isfinite(v), 1.0, v) for v in self.inv_sk]

        monkeypatch.setattr(ce._Majorants, "__init__", init)
    assert _joint_check(k)[0] > 0


def _third_order_check(spread3=None) -> tuple[int, np.ndarray, np.ndarray]:
    """Step 6's start bound per cell against the start term evaluated (by its own recursion,
    here) on a 9 x 9 grid of each box at the cell's eigenvalue: boxes of relative width
    1e-3..1e-1 near Fig. 3's optimum, horizons 20..250. (violations, bound / grid minimum,
    the bound)."""
    kw, E0 = _setup(PROBLEMS[2], 300)
    prob = make_problem(kw["mu"], kw["L"], kw["d"], 300, kw["laplace_var"], kw["smp"], E0, None)
    a_c, b_c = 0.2532, 0.8753
    boxes = [(a_c, a_c * (1 + wa), b_c, b_c + (1 - b_c) * wb)
             for wa in (1e-3, 1e-2, 3e-2, 1e-1) for wb in (1e-3, 1e-2, 1e-1)]
    al0, al1, b0, b1 = (np.array(v) for v in zip(*boxes))
    cols = [int(np.flatnonzero((prob.Tlo <= T) & (prob.Thi >= T))[0])
            for T in (20, 40, 64, 90, 150, 250)]
    rr = np.repeat(np.arange(len(boxes)), len(cols))
    cc = np.tile(cols, len(boxes))
    lam: list = []
    A6, _ = ce._instance_cells(prob, al0, al1, b0, b1, rr, cc, lam_out=lam)
    g = np.linspace(0.0, 1.0, 9)
    grid_min = np.empty(rr.size)
    for i, (r, c) in enumerate(zip(rr, cc)):
        A, B = np.meshgrid(al0[r] + g * (al1[r] - al0[r]), b0[r] + g * (b1[r] - b0[r]))
        a = 1.0 + B - A * lam[0][i]
        e, ep, least = np.ones_like(a), np.ones_like(a), np.inf
        for t in range(1, int(prob.Thi[c]) + 1):
            e, ep = a * e - B * ep, e
            if t >= prob.Tlo[c]:
                least = min(least, float(np.min(e * e)))
        grid_min[i] = E0 * least
    return int(np.sum(A6 > grid_min * (1 + 1e-9))), A6 / grid_min, A6


def test_third_order_spread_holds_on_wide_boxes_and_binds(monkeypatch):
    bad, ratio, with3 = _third_order_check()
    assert bad == 0
    # tight somewhere (measured: 0.99985 of the grid's least value) ...
    assert np.max(ratio) > 0.99
    # ... and above the second-order majorants alone on some cells (measured: 16 of 72 by
    # more than 1%)
    monkeypatch.setattr(ce, "_taylor3_spread", lambda *a: np.inf)
    _, _, second = _third_order_check()
    assert np.sum(with3 > 1.01 * second) >= 8


def test_negative_control_third_order_spread_halved_is_caught(monkeypatch):
    # (measured: leaving out only the cubic remainder, or only the centre's second
    # derivatives, is NOT caught on these boxes: the first-order term bounded at both ends
    # absorbs it there; the remainder is still what makes the bound a proof)
    orig = ce._taylor3_spread
    monkeypatch.setattr(ce, "_taylor3_spread", lambda *a: 0.5 * orig(*a))
    assert _third_order_check()[0] > 0


@pytest.mark.parametrize("Tmax, near", [(1000, 64), (300, 181), (90, 80), (5000, 256), (1000, 1)])
def test_horizon_window_partitions_every_horizon_with_singles_around_near(Tmax, near):
    win = ce.horizon_window(near, Tmax)
    lo, hi = ce.horizon_intervals(Tmax, 64, 32, win)
    # a partition of 1..Tmax: every horizon in exactly one interval, in order
    assert lo[0] == 1 and hi[-1] == Tmax and np.all(lo[1:] == hi[:-1] + 1) and np.all(hi >= lo)
    single = set(lo[lo == hi].tolist())
    # single around near (near / sqrt 2 .. near * sqrt 2, within 1..Tmax) and up to 64
    want = range(max(1, int(near / math.sqrt(2))), min(Tmax, math.ceil(near * math.sqrt(2))) + 1)
    assert set(want) <= single and set(range(1, min(64, Tmax) + 1)) <= single
    # elsewhere the coarse widths (at most T / 32), as without the window
    assert np.all(hi - lo + 1 <= np.maximum(1, lo // 32))
    plain = ce.horizon_intervals(Tmax, 64, 32)
    assert lo.size >= plain[0].size
    # without ``near`` there is no window, and past _WINDOW_TMAX neither
    assert ce.horizon_window(None, Tmax) is None
    assert ce.horizon_window(ce._WINDOW_TMAX + 1, 2 * ce._WINDOW_TMAX) is None


# --- step 7: the closed form at one eigenvalue --------------------------------------------

def _closed_form_cases(n, seed):
    """Random boxes (relative widths 1e-5..1e-1 in alpha, 1e-4..0.3 of 1 - beta) with an
    eigenvalue at which the whole box has complex roots (mostly near critical damping, where
    the start term is largest), and horizon intervals up to ~2500."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        a_c, b_c = 10 ** rng.uniform(-1, 0.5), 1 - 10 ** rng.uniform(-3.5, -0.3)
        wa, wb = 10 ** rng.uniform(-5, -1), (1 - b_c) * 10 ** rng.uniform(-4, -0.5)
        al0, al1, b0, b1 = a_c * (1 - wa), a_c * (1 + wa), b_c - wb, min(b_c + wb, 1 - 1e-5)
        lo, hi = (1 - math.sqrt(b0)) ** 2 / al0, (1 + math.sqrt(b0)) ** 2 / al1
        if not lo < hi:
            continue
        lam = lo * (hi / lo) ** rng.uniform(0, 0.3) if rng.uniform() < 0.7 else \
            rng.uniform(lo, hi)
        T0 = int(10 ** rng.uniform(0, 3.4))
        T1 = T0 + (0 if rng.uniform() < 0.5 else int(rng.integers(0, T0 // 16 + 1)))
        out.append((lam, al0, al1, b0, b1, T0, T1))
    return out


def _grid_least(lam, al0, al1, b0, b1, T0, T1, g=17):
    """(least start term p_t^2 over t in [T0, T1], least U_T0 = lam/2 alpha^2 sum_{j<T0} h_j^2)
    over a g x g grid of the box (corners included), by the recursions (written here)."""
    A, B = np.meshgrid(np.linspace(al0, al1, g), np.linspace(b0, b1, g))
    a = 1.0 + B - A * lam
    e, ep, h, hp, S = np.ones_like(a), np.ones_like(a), np.ones_like(a), np.zeros_like(a), \
        np.zeros_like(a)
    least, U = np.inf, None
    for t in range(1, T1 + 1):
        S = S + h * h
        h, hp = a * h - B * hp, h
        e, ep = a * e - B * ep, e
        if t == T0:
            U = float(np.min(0.5 * lam * A * A * S))
        if t >= T0:
            least = min(least, float(np.min(e * e)))
    return least, U


def _closed_form_check(start=None, sums=None, n=60, seed=70):
    """(violations of the start bound, of the noise bound, their ratios to the grid's least
    values) on :func:`_closed_form_cases`; ``start`` / ``sums`` replace the bounds (mutants)."""
    start = start or (lambda lam, a0, a1, b0, b1, T0, T1: ce._closed_form_start(
        make_problem(1e-6, 1.0, 1, 2, lambda T: np.zeros_like(T), 0.0, 1.0, None),
        lam, a0, a1, b0, b1, T0, T1))
    sums = sums or ce._closed_form_sum_sq
    bad_a = bad_u = 0
    ra, ru = [], []
    for lam, al0, al1, b0, b1, T0, T1 in _closed_form_cases(n, seed):
        v = [np.array([x]) for x in (lam, al0, al1, b0, b1)]
        A = float(start(*v, np.array([T0]), np.array([T1]))[0, 0])
        U = float(sums(*v, np.array([T0]))[0, 0])
        least, Ug = _grid_least(lam, al0, al1, b0, b1, T0, T1)
        bad_a += A > least * (1 + 1e-9)
        bad_u += U > Ug * (1 + 1e-9)
        ra.append(A / least if least > 0 else 1.0)
        ru.append(U / Ug)
    return bad_a, bad_u, np.array(ra), np.array(ru)


def test_closed_form_bounds_hold_on_boxes_and_bind():
    bad_a, bad_u, ra, ru = _closed_form_check()
    assert bad_a == 0 and bad_u == 0
    # tight: measured (400 cases, 41 x 41 grids) medians 0.947 / 0.972, best 0.99998 / 0.99998
    assert np.median(ra) > 0.5 and np.max(ra) > 0.999
    assert np.median(ru) > 0.8 and np.max(ru) > 0.999


@pytest.mark.parametrize("kind", ["centre", "x1.02 start", "x1.02 noise"])
def test_negative_control_closed_form_mutants_are_caught(kind):
    def centre(f):  # a plausible bug: the box's centre value used as the box's bound
        def g(lam, a0, a1, b0, b1, *T):
            ac, bc = 0.5 * (a0 + a1), 0.5 * (b0 + b1)
            return f(lam, ac, ac, bc, bc, *T)
        return g

    prob = make_problem(1e-6, 1.0, 1, 2, lambda T: np.zeros_like(T), 0.0, 1.0, None)

    def start(*a):
        return ce._closed_form_start(prob, *a)
    if kind == "centre":
        bad_a, bad_u, _, _ = _closed_form_check(centre(start), centre(ce._closed_form_sum_sq))
        assert bad_a > 0 and bad_u > 0
    elif kind == "x1.02 start":
        assert _closed_form_check(start=lambda *a: 1.02 * start(*a))[0] > 0
    else:
        assert _closed_form_check(sums=lambda *a: 1.02 * ce._closed_form_sum_sq(*a))[1] > 0


#: L/mu = 1e5 (bench/worst_case_bracket.md), boxes near its tuned point, horizons to 1400
_CLOSED_CASE = ((1e-5, 1.0, 10, 10**6, 10**6, 1.0, 1.0, 1.0), 1400, 1.3924, 0.99328)


def test_closed_form_step_holds_at_every_horizon_and_binds(monkeypatch):
    # step 6 off (it is not run above T = 256 anyway): the raise is step 7's
    monkeypatch.setattr(ce, "_INSTANCE_ROUNDS", 0)
    bad, raise_, with_7, orc = _instance_check(_CLOSED_CASE, seed=71, k_boxes=6, k_pts=5)
    assert bad == 0
    # binds (not vacuous): measured up to x1.022 on these boxes (widths up to 1% and 5% from
    # the optimum; on the branch and bound's leaves the start bound rose by ~25%)
    assert np.max(raise_) > 1.01


def test_negative_control_closed_form_step_x1_05_is_caught(monkeypatch):
    monkeypatch.setattr(ce, "_INSTANCE_ROUNDS", 0)
    orig = ce._closed_form_start
    monkeypatch.setattr(ce, "_closed_form_start", lambda *a: 1.05 * orig(*a))
    assert _instance_check(_CLOSED_CASE, seed=71, k_boxes=6, k_pts=5)[0] > 0


def _tiny_beta_check(n=300, seed=77):
    """Step 7's start bound on point boxes with tiny momentum (beta 1e-17..1e-6: cos theta's
    numerator cancels, alpha lam ~ 1, and is divided by 2 sqrt(beta)) against e_T by the
    recursion in exact rational arithmetic (tests/tuning/box_samples.py). (violations, bound /
    exact)."""
    from fractions import Fraction

    from tests.tuning.box_samples import exact_least_start, tiny_beta_cases

    prob = make_problem(1e-6, 1.0, 1, 2, lambda T: np.zeros_like(T), 0.0, 1.0, None)
    bad, ratio = 0, []
    for lam, al, b, T0, T1 in tiny_beta_cases(n, seed):
        v = [np.array([x]) for x in (lam, al, al, b, b)]
        A = float(ce._closed_form_start(prob, *v, np.array([T0]), np.array([T1]))[0, 0])
        exact = exact_least_start(1 + Fraction(b) - Fraction(al) * Fraction(lam), Fraction(b),
                                  T0, T1)
        bad += A > exact * (1 + 1e-12)
        if A > 0:
            ratio.append(A / exact)
    return bad, np.array(ratio)


def test_closed_form_start_holds_at_tiny_beta():
    # (before the fix: the rounding of cos theta padded by 8u only; the first case's bound was
    # 1.76 times the exact start term)
    bad, ratio = _tiny_beta_check()
    assert bad == 0
    assert ratio.size > 100 and np.max(ratio) > 0.999  # binds (measured: 0.999999998)


def test_negative_control_closed_form_cos_pad_8u_is_caught(monkeypatch):
    monkeypatch.setattr(ce, "_cos_pad", lambda al1, lam, s0: 8.0 * ce._U)
    assert _tiny_beta_check()[0] > 0


def test_far_unstable_boxes_give_a_finite_bound():
    # a start gap near the float range on far-unstable boxes: the start bound at L overflowed
    # to +inf there (438 of the cells below before the clip); the worst case itself is past the
    # float range, so the largest float is still below it
    kw, _ = _setup(PROBLEMS[6], 1000)
    al0 = np.array([3.0, 3.5, 100.0, 1e6])
    b0 = np.array([0.0, 0.5, 0.9, 0.0])
    prob = make_problem(kw["mu"], kw["L"], kw["d"], 1000, kw["laplace_var"], kw["smp"], 1e300,
                        None)
    W = ce._box_lower(prob, al0, 1.01 * al0, b0, b0 + 0.01, by_interval=True)
    assert np.all(np.isfinite(W)) and np.max(W) > 1e307
    # control: at alpha = 3 / L, beta = 0 the start term alone is E0 * 2^(2T) from T = 512 on
    # (past the float range), and the bound's interval there is at its cap
    col = int(np.flatnonzero(prob.Tlo >= 600)[0])
    assert W[0, col] == np.finfo(float).max * (1.0 - ce._SAFETY)
