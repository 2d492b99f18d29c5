"""``tune runs hb|nag|gd --sensitivity S1`` (walkthrough of stop 80: no flag declared a public
sensitivity, so a private selection on one's own data could not run).

Oracles: the shell's release is the library's ``select_privately(..., sensitivity=S1)`` bit
for bit; every run's ledger holds the Laplace scale calibrated to S1 (b = T S1 / (m eps),
written out), whatever the data; refusals name the flag.
"""

from __future__ import annotations

import json

import pytest

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.cli.tune_runs_cmd import build_problem
from dpbounds.tuning import select_privately
from tests.test_edges_stop79 import _cli

ARGV = ["tune", "runs", "hb", "--problem", "huber_well", "--N", "300", "--d", "3",
        "--private", "--search", "alpha=0.1,0.5", "--steps", "5", "--beta", "0.3",
        "--loss-bound", "4", "--stop-probability", "0.3", "--seed", "2", "--json", "--quiet"]


def test_a_private_selection_on_a_verification_problem_with_a_public_s1(capsys):
    rc, out, err = _cli([*ARGV, "--sensitivity", "2"], capsys)
    assert rc == 0, err
    got = json.loads(out)
    f = build_problem("huber_well", 300, 3, 0.02, None, 2)
    lib = select_privately(dp_heavy_ball, f, {"step_size": [0.1, 0.5]}, epsilon=1.0,
                           score_epsilon=0.1, loss_bound=4.0, stop_probability=0.3, seed=2,
                           steps=5, momentum=0.3, sensitivity=2.0, x0=None)
    assert got["best"] == lib.best and got["x"] == lib.x.tolist()
    assert got["epsilon"] == lib.epsilon
    # the runs' noise is the public S1's: b = T S1 / (n eps) per step, on the neighbours' data
    for seed in (2, 9):
        g = build_problem("huber_well", 300, 3, 0.02, None, seed)
        res = dp_heavy_ball(g, epsilon=1.0, steps=5, step_size=0.1, momentum=0.3, seed=0,
                            sensitivity=2.0)
        (mech, count), = res.privacy.ledger.entries
        assert count == 5 and mech.scale * 300 == pytest.approx(5 * 2.0 / 1.0, rel=1e-9)


@pytest.mark.parametrize("argv, words", [
    (ARGV, "or with --sensitivity S1, a public bound"),
    ([*ARGV, "--sensitivity", "0"], "--sensitivity must be a finite number > 0"),
    (["tune", "runs", "sgd", "--delta", "1e-6", "--sensitivity", "2"],
     "sgd's clip bounds its sensitivity"),
])
def test_refusals(argv, words, capsys):
    rc, _, err = _cli(argv, capsys)
    assert rc == 2 and words in err
