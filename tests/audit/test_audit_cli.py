"""The ``dpbounds audit`` command: listing, JSON, exit status, bad input.

Oracle: the library call with the same arguments (the CLI must print exactly what
:func:`dpbounds.audit.audit` returns) and the registry for ``--list``.
"""

from __future__ import annotations

import json

import pytest

from dpbounds.audit import AUDITS, audit
from dpbounds.cli import main


def test_list(capsys):
    assert main(["audit", "--list"]) == 0
    out = capsys.readouterr().out
    for name in AUDITS:
        assert name in out
    assert main(["audit", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["algorithm"] for r in rows] == list(AUDITS)
    assert {"relations", "epsilon", "delta", "mutant_noise_factor"} <= set(rows[0])


def test_json_matches_the_library(capsys):
    code = main(["audit", "dp_gd_laplace", "--trials", "400", "--seed", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    lib = audit("dp_gd_laplace", trials=400, seed=2)
    for key in ("algorithm", "claimed_epsilon", "delta", "epsilon_lower", "confidence",
                "trials", "statistic"):
        assert out[key] == getattr(lib, key), key
    assert code == (1 if lib.violation else 0) == 0


def test_text_output_and_relation_flag(capsys):
    assert main(["audit", "dp_sgd", "--neighbouring", "replace_one", "--trials", "1e3"]) == 0
    out = capsys.readouterr().out
    assert "dp_sgd (replace-one)" in out and "claimed eps" in out and "consistent" in out


def test_mutant_flag_is_flagged_with_exit_status_1(capsys):
    # output perturbation with sigma halved: caught already at 2000 runs per data set
    code = main(["audit", "output_perturbation", "--quick", "--mutant", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["mutant"] == "sigma/2" and out["violation"] is True and code == 1
    assert out["epsilon_lower"] > out["claimed_epsilon"]


@pytest.mark.parametrize("argv,match", [
    (["audit"], "ALGORITHM is required"),
    (["audit", "nope"], "algorithm must be one of"),
    (["audit", "dp_gd_laplace", "--neighbouring", "add/remove"], "neighbouring"),
    (["audit", "dp_sgd", "--confidence", "2"], "confidence"),
])
def test_bad_input_is_one_line(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def test_bad_trials_rejected_by_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "dp_sgd", "--trials", "1.5"])
    assert exc.value.code == 2
    assert "whole number" in capsys.readouterr().err
