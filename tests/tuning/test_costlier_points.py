"""``costlier_points``: the grid points a Rényi selection never chooses (fuzz round 14: a
searched ``T=5,50`` chose T = 5 every time, silently).

Oracle: each point's run made here on the public twin, its ledger read by dpbounds' RDP
accountant on the default orders, compared with grid point 0's at every order (the
selection's own rule, ``curve > ceiling``, written out); controls: a grid of step sizes and
clips (one noise multiplier) has none, and the CLI says so before the selection.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.algorithms import dp_sgd
from dpbounds.cli.tune_runs_cmd import build_problem
from dpbounds.privacy.accountants import RdpAccountant
from dpbounds.privacy.rdp import DEFAULT_ORDERS
from dpbounds.tuning import costlier_points
from dpbounds.tuning.private_selection import CURVE_SLACK

TWIN = build_problem("logistic", 500, 3, 0.02, None, 1)
FIXED = dict(delta=1e-6, batch_size=25, step_size=0.5, clip_threshold=1.0)


def _curve(**kw):
    res = dp_sgd(TWIN, epsilon=1.0, trials=1, seed=0, noise="grid", **{**FIXED, **kw})
    acc = RdpAccountant(res.privacy.ledger.neighbouring, DEFAULT_ORDERS)
    for m, c in res.privacy.ledger.entries:
        acc.compose(m, c)
    return np.asarray(acc.rdp)


@pytest.mark.parametrize("steps", [[5, 50], [50, 5], [5, 20, 50]])
def test_the_points_above_point_zeros_curve_are_named(steps):
    ceiling = _curve(steps=steps[0]) * (1 + CURVE_SLACK)
    want = [{"steps": t} for t in steps[1:] if np.any(_curve(steps=t) > ceiling)]
    got = costlier_points(dp_sgd, TWIN, {"steps": steps}, epsilon=1.0,
                          **{k: v for k, v in FIXED.items()})
    assert got == want and want  # T = 5 and T = 50 cross: each is above the other somewhere


def test_a_grid_of_one_noise_multiplier_has_none():
    grid = {"step_size": [0.25, 1.0], "clip_threshold": [0.3, 1.0]}
    fixed = {k: v for k, v in FIXED.items() if k not in grid}
    assert costlier_points(dp_sgd, TWIN, grid, epsilon=1.0, steps=10, **fixed) == []


def test_the_shell_warns_before_the_selection(capsys):
    from tests.test_edges_stop79 import _cli

    argv = ["tune", "runs", "sgd", "--n", "2000", "--d", "3", "--search", "alpha=0.5",
            "--search", "C=1", "--delta", "1e-6", "--private", "--loss-bound", "1",
            "--stop-probability", "0.3", "--selection-delta", "1e-6", "--seed", "5", "--quiet"]
    rc, out, err = _cli([*argv, "--search", "T=5,50"], capsys)
    assert rc == 0 and "steps=50 spend(s) more than grid point 0 (steps=5)" in err
    rc, out, err = _cli([*argv, "--search", "T=5"], capsys)  # control
    assert rc == 0 and "spend(s) more" not in err


@pytest.mark.parametrize("grid, words", [({"steps": []}, "non-empty sequence"),
                                         ("steps", "grid must map"),
                                         ({"steps": [5, float("nan")]}, "must be finite")])
def test_a_bad_grid_is_refused_by_name(grid, words):
    with pytest.raises(ValueError, match=words):
        costlier_points(dp_sgd, TWIN, grid, epsilon=1.0, **FIXED)
