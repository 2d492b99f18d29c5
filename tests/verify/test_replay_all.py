"""The replay on neighbouring data for every transcript-recording algorithm (issue 34 item
3) and ``dpbounds audit ALG --replay``: correct code measures exactly its declared
sensitivity (DERIVED oracle: 2C per appearance at a binding clip), mutants exceed it or fail
the sampling tests, and the CLI exits 1 on them."""

from __future__ import annotations

import json

import pytest

from dpbounds.cli import main
from dpbounds.verify.replay import ADD_REMOVE_REPLAYS, REPLAYS, replay

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
    assert main(["audit", "tree_momentum_nsgd", "--replay", "--neighbouring", "add_remove"]) == 2
    assert "add_remove" in capsys.readouterr().err  # replace-one only: refused by name
    assert main(["audit", "dp_sgd", "--replay", "--neighbouring", "add/remove"]) == 0
    assert main(["audit", "dp_sgd", "--replay", "--neighbouring", "add/remove", "--mutant",
                 "skip_clipping"]) == 1
    assert main(["audit", "dp_sgd", "--replay", "--mutant", "sigma/2"]) == 2


@pytest.mark.parametrize("algorithm", ADD_REMOVE_REPLAYS)
def test_add_remove_replay(algorithm: str) -> None:
    """Add/remove with a null record in D' (same n, same draws): the release moves by the
    record's clipped contribution, C at a binding clip against the declared C (ratio 1; DP-NSGD
    2C/(2C + r) = 2/3), DP-SGD and DP-NSGD under Poisson sampling (their sampling rows hold);
    negative controls: without clipping the ratio is 2C/C = 2, and a replace-one reading of
    the same pair (declared 2C) halves the measured ratio (the relation enters the verdict)."""
    ratio, flow, *sampling = replay(algorithm, neighbouring="add_remove", seed=3)
    assert ratio.measured == pytest.approx(EXPECTED.get(algorithm, 1.0), rel=1e-9)
    assert ratio.holds and flow.holds and all(v.holds for v in sampling)
    if algorithm != "dp_gd_gaussian":
        assert any("Poisson" in v.case for v in sampling)
        bad = replay(algorithm, neighbouring="add_remove", seed=3, mutation="skip_clipping")
        assert bad[0].failed and bad[0].measured == pytest.approx(2.0, rel=1e-9)
    from dpbounds.audit.mutation import scaled_noise
    from dpbounds.verify import replay as rp

    runs = []
    for data in rp._pair(8, 3, 1.0, 3, "add_remove"):
        with scaled_noise(0.0):
            runs.append(rp._replay_run(algorithm, data, steps=24, batch_size=2, clip=1.0,
                                       epsilon=1.0, delta=1e-5, trials=3, seed=3,
                                       relation="add_remove"))
    assert rp._release_ratio(*runs, factor=2.0) == pytest.approx(
        EXPECTED.get(algorithm, 1.0) / 2, rel=1e-9)
