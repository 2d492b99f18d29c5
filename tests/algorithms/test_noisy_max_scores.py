"""DP-AGD's NoisyMax scores stay monotone with sensitivity C_obj for every objective.

Found by review (2026-12-02): ``clipped_loss`` clipped only from above, so an objective whose
per-example loss can be negative (a quadratic with a linear tilt per record) let one record
raise some scores and lower others, by an amount unbounded in x: the (u'/b)-DP argument of
report-noisy-max needs every score to move one way by at most C_obj. The oracle: the score
recomputed in NumPy from the per-example losses, each clipped to [0, C_obj]; the control: the
old clip from above only differs where losses are negative.
"""

from __future__ import annotations

import numpy as np

from dpbounds.objectives import QuadraticObjective


def _objective(offsets: np.ndarray) -> QuadraticObjective:
    lam = np.array([1.0, 0.5, 0.2])
    return QuadraticObjective(lam, b=lam * 0.3, offsets=offsets, offset_l1_radius=3.0)


def test_every_clipped_loss_lies_in_zero_c():
    rng = np.random.default_rng(3)
    f = _objective(rng.uniform(-1.0, 1.0, size=(40, 3)))
    x = rng.normal(scale=4.0, size=(64, 3))          # far from the optimum: losses of both signs
    C = 3.0
    per = f.sample_losses(x)
    assert np.min(per) < -1.0                         # the case the fix is for
    # the score is the sum of the records' clipped losses, each in [0, C]: one record moves
    # every score the same way by at most C (report-noisy-max's premise)
    np.testing.assert_allclose(f.n * f.clipped_loss(x, C), np.sum(np.clip(per, 0.0, C), axis=1),
                               rtol=1e-12)
    # control: clipped from above only (the old scores), a record's term is negative, so
    # removing it raises the score while a record of positive loss lowers another
    old = np.sum(np.minimum(per, C), axis=1)
    assert np.max(np.abs(old - f.n * f.clipped_loss(x, C))) > 1.0


def test_nonnegative_losses_are_unchanged():
    # logistic losses are >= 0: the lower clip is a no-op (the same bits as min(loss, C))
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(4)
    A = rng.normal(size=(50, 4))
    y = np.where(rng.random(50) < 0.5, -1.0, 1.0)
    f = LogisticRegression(A, y, l2=0.01)
    x = rng.normal(size=(5, 4))
    expect = np.mean(np.minimum(f.sample_losses(x), 0.7), axis=1)
    assert np.array_equal(f.clipped_loss(x, 0.7), expect)
