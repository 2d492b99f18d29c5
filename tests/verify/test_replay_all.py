"""The replay on neighbouring data for every transcript-recording algorithm (issue 34 item
3) and ``dpbounds audit ALG --replay``: correct code measures exactly its declared
sensitivity (DERIVED oracle: 2C per appearance at a binding clip), mutants exceed it or fail
the sampling tests, and the CLI exits 1 on them."""

from __future__ import annotations

import json

import pytest

from dpbounds.cli import main
from dpbounds.verify.replay import REPLAYS, replay

#: the oracle's ratio: 1 at a binding clip; DP-NSGD's g/(||g|| + r) at ||g|| = 2C = 2, r = 1
EXPECTED = {"dp_nsgd": 2.0 / 3.0}


@pytest.mark.parametrize("algorithm", REPLAYS)
def test_correct_algorithms_meet_their_declared_sensitivity(algorithm: str) -> None:
    ratio, flow, *sampling = replay(algorithm)
    assert ratio.measured == pytest.approx(EXPECTED.get(algorithm, 1.0), rel=1e-9)
    assert ratio.holds and flow.holds and all(v.holds for v in sampling)


@pytest.mark.parametrize("algorithm,mutation,row", [
    ("dp_sgd", "scaled_contribution", 0), ("dp_sgd", "skip_clipping", 0),
    ("dp_sgd", "cyclic_batches", 2), ("dp_nsgd", "cyclic_batches", 2),
    ("tree_momentum_nsgd", "unshuffled", 2), ("sensitivity_reduced_nsgd", "unshuffled", 2)])
def test_mutants_fail_the_replay(algorithm: str, mutation: str, row: int) -> None:
    """Negative controls: contributions above the clip move a release by twice its declared
    sensitivity (ratio 2); a cyclic or unshuffled order fails the sampling rows."""
    out = replay(algorithm, mutation=mutation)
    assert out[row].failed, out[row]
    if row == 0:
        assert out[0].measured == pytest.approx(2.0, rel=1e-9)


def test_audit_replay_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "dp_sgd", "--replay"]) == 0
    assert "-> yes" in capsys.readouterr().out
    assert main(["audit", "dp_sgd", "--replay", "--mutant", "scaled_contribution"]) == 1
    capsys.readouterr()
    assert main(["audit", "tree_momentum_nsgd", "--replay", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["holds"] for r in rows) and rows[0]["measured"] == pytest.approx(1.0)
    assert main(["audit", "dp_agd", "--replay"]) == 2  # no transcript: refused by name
    assert "for --replay" in capsys.readouterr().err
    assert main(["audit", "dp_sgd", "--replay", "--neighbouring", "add_remove"]) == 2
    assert main(["audit", "dp_sgd", "--replay", "--mutant", "sigma/2"]) == 2
