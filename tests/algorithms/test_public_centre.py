"""The centred objectives' centre is a public parameter: a record's loss is its own.

QuadraticObjective, HuberWell and CoshCosineObjective used to centre their offsets over
whatever data set they were built from, so a neighbour D' = D + {z} moved every per-example
term. They now take ``centre=`` (default: the mean of the given offsets, the old numbers),
and a neighbour built with ``centre=f.centre`` moves one term. Oracles: the clipped sum
written out here from per-record gradients by hand (the closed forms of the three losses),
and a one-step DP-GD run through the public API whose released iterate, with the same seed
(so the same noise) on D and D', exposes the clipped sum; controls: the same pair rebuilt
without ``centre`` (the old construction) moves by 19 C, and an objective that declares
``centred_records`` is refused by the four clipping algorithms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import dp_gd, dp_nsgd, dp_sgd
from dpbounds.algorithms.dp_agd import dp_agd
from dpbounds.backend import to_numpy
from dpbounds.objectives import CoshCosineObjective, HuberWell, QuadraticObjective

C = 3.0
E = np.tile([[1.0], [-1.0]], (10, 1))        # D = {+-1} x 10
E2 = np.vstack([E, [[1000.0]]])               # D' = D + {1000}


def _clipped_sum(grads: np.ndarray, clip: float) -> np.ndarray:
    """sum_i g_i min(1, C / ||g_i||), by hand."""
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    return np.sum(grads * np.minimum(1.0, clip / np.maximum(norms, 1e-300)), axis=0)


def _quadratic_grads_by_hand(x: float, records: np.ndarray) -> np.ndarray:
    # f_i(x) = x^2 / 2 + r_i x (Q = 1, b = 0): grad x + r_i
    return x + records


def test_added_record_moves_the_clipped_sum_by_at_most_C_with_a_public_centre():
    """At x = 0 the records of D are e_i - 0 = +-1, so the clipped sum is 0; D' adds the
    record 1000 - 0, clipped to 3: the sum moves by exactly C = 3 (was 57 = 19 C when D'
    recomputed its centre, 1000/21). The objective's own clipped mean agrees with the hand
    sum on both."""
    q = QuadraticObjective([1.0], offsets=E)
    q2 = QuadraticObjective([1.0], offsets=E2, centre=q.centre)
    old = QuadraticObjective([1.0], offsets=E2)            # the recomputed centre
    assert q.centre.tolist() == [0.0] and old.centre[0] == pytest.approx(1000 / 21)
    x = np.zeros((1, 1))
    sums = {}
    for key, f, rec in (("D", q, E - q.centre), ("D'", q2, E2 - q.centre),
                        ("old D'", old, E2 - E2.mean(axis=0))):
        by_hand = _clipped_sum(_quadratic_grads_by_hand(0.0, rec), C)
        got = f.n * to_numpy(f.clipped_mean_grad(x, None, C))[0]
        np.testing.assert_allclose(got, by_hand, rtol=1e-12, atol=1e-9)
        sums[key] = by_hand
    move_new = float(np.linalg.norm(sums["D'"] - sums["D"]))
    move_old = float(np.linalg.norm(sums["old D'"] - sums["D"]))
    assert move_new == pytest.approx(C, rel=1e-12)          # at most C, attained
    assert move_old == pytest.approx(57.0, rel=1e-12) and move_old > 19 * C - 1e-9


def _one_step_sum(f, seed=3):
    """The clipped data sum that one-step Gaussian DP-GD (add/remove, public N) released,
    read back from the iterate: x1 = x0 - alpha (sum / N + noise)."""
    N, alpha = 50, 0.5
    r = dp_gd(f, epsilon=1.0, delta=1e-6, steps=1, step_size=alpha, mechanism="gaussian",
              clip_threshold=C, neighbouring="add_remove", public_n=N, seed=seed,
              x0=np.zeros(f.d), trace=None)
    return -to_numpy(r.x)[0] / alpha * N, r


def test_dp_gd_release_moves_by_at_most_C_between_public_centre_neighbours():
    """End to end through the public API: the same seed gives the same noise on D and D'
    (it depends on the public N only), so the released iterates differ by alpha/N times the
    clipped sums' difference: C with the public centre, 57 with the recomputed one."""
    q = QuadraticObjective([1.0], offsets=E)
    s_d, r = _one_step_sum(q)
    s_d2, r2 = _one_step_sum(QuadraticObjective([1.0], offsets=E2, centre=q.centre))
    s_old, _ = _one_step_sum(QuadraticObjective([1.0], offsets=E2))
    assert r.privacy.sensitivity == r2.privacy.sensitivity
    assert abs(s_d2[0] - s_d[0]) == pytest.approx(C, rel=1e-9)
    assert abs(s_old[0] - s_d[0]) == pytest.approx(57.0, rel=1e-9)


def _huber_grads_by_hand(x, records, G, L):
    z = x[None, :] - records
    s = np.linalg.norm(z, axis=1, keepdims=True)
    return G * z / np.maximum(s, G / L)


def _cosh_grads_by_hand(x, records, a, b):
    return (np.sinh(x) - a * b * np.sin(b * x))[None, :] + records


@pytest.mark.parametrize("kind", ["quadratic", "huber_well", "cosh_cosine"])
@pytest.mark.parametrize("relation", ["add", "remove", "replace"])
def test_every_centred_objective_moves_one_term(kind, relation):
    """d = 3, n = 30 random offsets; D' adds a far record, removes it or replaces a record by
    it (with the same centre). At random states the old records' gradients are unchanged bit for bit
    and the clipped sum moves by <= C (add/remove) or <= 2C (replace), against the hand
    formulas of each loss; with each data set centred on its own mean (control, the old
    construction) the sum moves by over 5 times the bound."""
    rng = np.random.default_rng(7)
    e0 = 0.4 * rng.standard_normal((30, 3))
    z = np.array([[30.0, -20.0, 10.0]])
    # add z to D; remove z from D = {z} + e0; replace D's first record by z
    e, e2 = {"add": (e0, np.vstack([e0, z])), "remove": (np.vstack([z, e0]), e0),
             "replace": (e0, np.vstack([z, e0[1:]]))}[relation]
    keep, keep2 = {"add": (slice(0, 30), slice(0, 30)), "remove": (slice(1, 31), slice(0, 30)),
                   "replace": (slice(1, 30), slice(1, 30))}[relation]
    bound = 2 * C if relation == "replace" else C
    make, by_hand = {
        "quadratic": (lambda o, **k: QuadraticObjective([1.0, 2.0, 0.5], offsets=o, **k),
                      lambda x, r: x * np.array([1.0, 2.0, 0.5]) + r),
        "huber_well": (lambda o, **k: HuberWell(o, G=4.0, L=1.0, **k),
                       lambda x, r: _huber_grads_by_hand(x, r, 4.0, 1.0)),
        "cosh_cosine": (lambda o, **k: CoshCosineObjective(3, offsets=o, **k),
                        lambda x, r: _cosh_grads_by_hand(x, r, 1.0, 2.0)),
    }[kind]
    f = make(e, centre=e0.mean(axis=0))   # a public centre (the Huber well takes z then)
    f2 = make(e2, centre=f.centre)
    # control: each data set centred on its own mean, as every construction did before (the
    # Huber well's default construction refuses a record this far out, hence centre=)
    old, old2 = make(e, centre=e.mean(axis=0)), make(e2, centre=e2.mean(axis=0))
    x = rng.standard_normal((4, 3)) * 0.5
    g, g2 = to_numpy(f.sample_grads(x)), to_numpy(f2.sample_grads(x))
    np.testing.assert_array_equal(g2[:, keep2], g[:, keep])
    worst_new = worst_old = 0.0
    for t in range(4):
        ref = _clipped_sum(by_hand(x[t], e - f.centre), C)
        new = _clipped_sum(by_hand(x[t], e2 - f.centre), C)
        np.testing.assert_allclose(_clipped_sum(g[t], C), ref, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(_clipped_sum(g2[t], C), new, rtol=1e-10, atol=1e-10)
        worst_new = max(worst_new, float(np.linalg.norm(new - ref)))
        moved = (_clipped_sum(to_numpy(old2.sample_grads(x))[t], C)
                 - _clipped_sum(to_numpy(old.sample_grads(x))[t], C))
        worst_old = max(worst_old, float(np.linalg.norm(moved)))
    assert worst_new <= bound + 1e-9
    assert worst_old > 5 * bound       # measured 30-35 for each kind and relation


@pytest.mark.parametrize("kind", ["quadratic", "huber_well", "huber_well_zone", "cosh_cosine"])
def test_neighbour_optimum_is_the_minimiser_of_its_own_data(kind):
    """With the same centre, D' = D + {z} is no longer zero-mean: the optimum moves. Oracle:
    the gradient of the objective vanishes there (two-sided: a nudge increases F), and the
    loss equals the mean of the per-record losses (closed forms)."""
    rng = np.random.default_rng(8)
    e = 0.3 * rng.standard_normal((20, 2))
    # huber_well_zone: every record within G/L of the mean record (closed form), else L-BFGS
    z = np.array([[0.3, -0.2]]) if kind == "huber_well_zone" else np.array([[2.0, -1.5]])
    f = {"quadratic": lambda o, **k: QuadraticObjective([1.0, 3.0], b=[0.5, 0.2], offsets=o, **k),
         "huber_well": lambda o, **k: HuberWell(o, G=1.0, L=1.0, **k),
         "huber_well_zone": lambda o, **k: HuberWell(o, G=4.0, L=1.0, **k),
         "cosh_cosine": lambda o, **k: CoshCosineObjective(2, offsets=o, **k)}[kind]
    base = f(e)
    g = f(np.vstack([e, z]), centre=base.centre)
    opt = g.optimum
    assert ("closed form" in opt.method) == (kind in ("quadratic", "huber_well_zone"))
    x = opt.x[None, :]
    assert float(np.linalg.norm(to_numpy(g.grad(x))[0])) < 1e-7
    np.testing.assert_allclose(to_numpy(g.loss(x)), to_numpy(g.sample_losses(x)).mean(axis=1),
                               rtol=1e-12)
    assert opt.value == pytest.approx(float(to_numpy(g.loss(x))[0]), rel=1e-12)
    for step in (np.array([[1e-3, 0.0]]), np.array([[0.0, -1e-3]])):
        assert float(to_numpy(g.loss(x + step))[0]) > opt.value
    assert not np.allclose(opt.x, base.optimum.x)   # control: the tilt moved it


def test_centre_is_validated():
    with pytest.raises(ValueError, match=r"centre must have shape \(2,\)"):
        QuadraticObjective([1.0, 2.0], offsets=np.zeros((3, 2)), centre=[0.0])
    with pytest.raises(ValueError, match="centre must be finite"):
        HuberWell(np.zeros((3, 2)), centre=[0.0, math.nan])


class _Recentring(QuadraticObjective):
    """A third-party objective that declares a centre recomputed from its data set."""

    centred_records = True


@pytest.mark.parametrize("run", [
    lambda f: dp_sgd(f, epsilon=1.0, delta=1e-6, steps=2, batch_size=4, step_size=0.1,
                     clip_threshold=1.0, seed=0),
    lambda f: dp_nsgd(f, epsilon=1.0, delta=1e-6, steps=2, batch_size=4, step_size=0.1,
                      regulariser=0.1, seed=0),
    lambda f: dp_gd(f, epsilon=1.0, delta=1e-6, steps=2, mechanism="gaussian",
                    clip_threshold=1.0, seed=0),
    lambda f: dp_agd(f, epsilon=1.0, delta=1e-6, splits=2, seed=0),
], ids=["dp_sgd", "dp_nsgd", "dp_gd", "dp_agd"])
def test_an_objective_declaring_centred_records_is_refused(run):
    f = _Recentring([1.0, 2.0], offsets=np.random.default_rng(0).standard_normal((8, 2)))
    with pytest.raises(ValueError, match=r"does not accept _Recentring .*centred_records.*"
                                         r"centre="):
        run(f)
    f.centred_records = False        # control: the same objective, records its own
    assert math.isfinite(run(f).ledger.epsilon)
