"""Re-accounting a Gaussian grid run counts the rounding's extra move (issue 34).

A grid run releases round(2^j v) + Z: a move of L2 size x changes the integer query by less
than 2^j x + sqrt(d), so every release a sample touches moves by up to sqrt(d) 2^-j more in
value units. Until this, the Gaussian re-accounting read a grid transcript as a float one
(under-counting by ~2^-16 relative). Oracle: the same transcript with ``grid_bits`` removed
(the float reading) must re-account strictly lower, by a relative amount of the order of
sqrt(d) 2^-j over the declared sensitivity (the elasticity of eps in the sensitivity is
between 0.5 and 5 in these regimes).
"""

from __future__ import annotations

import math

import pytest

from dpbounds.algorithms import dp_sgd, tree_momentum_nsgd
from dpbounds.algorithms._transcript import Transcript
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.verify.reaccount import reaccount


@pytest.fixture(scope="module")
def logistic() -> LogisticRegression:
    A, y = kuru_synthetic(n=500, d=4, seed=0)
    return LogisticRegression(A, y, l2=0.02, l1_radius=5.0)


@pytest.mark.parametrize("name,kw,sens", [
    ("dp_sgd", dict(steps=30, batch_size=50, step_size=0.5, clip_threshold=1.0), 2 / 50),
    ("dp_sgd", dict(steps=30, batch_size=50, step_size=0.5, clip_threshold=1.0,
                    sampling="poisson", public_n=500), 1 / 50),
    ("tree_momentum_nsgd", dict(epochs=2, step_size=0.1, clip_threshold=1.0), None),
])
def test_grid_rounding_is_counted(logistic, name, kw, sens) -> None:
    tr = Transcript()
    fn = dp_sgd if name == "dp_sgd" else tree_momentum_nsgd
    fn(logistic, epsilon=1.0, delta=1e-6, trials=2, seed=0, noise="grid", trace=None,
       transcript=tr, **kw)
    d = tr.as_dict()
    grid = reaccount(d, epsilon=1.0, delta=1e-6)
    as_float = reaccount({k: v for k, v in d.items() if k != "grid_bits"}, epsilon=1.0,
                         delta=1e-6)
    assert grid.holds and grid.epsilon <= 1.0
    rise = grid.epsilon / as_float.epsilon - 1.0
    assert rise > 0  # the float reading under-counts (the control)
    if sens is not None:
        rel = math.sqrt(logistic.d) * 2.0 ** -int(d["grid_bits"]) / sens
        assert 0.5 * rel <= rise <= 5 * rel, (rise, rel)
    else:
        assert rise < 1e-3
