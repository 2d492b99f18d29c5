"""The ``dpbounds audit`` command: listing, JSON, exit status, bad input.

Oracle: the library call with the same arguments (the CLI must print exactly what
:func:`dpbounds.audit.audit` returns) and the registry for ``--list``.
"""

from __future__ import annotations

import json

import pytest

from dpbounds.audit import AUDITS, audit
from dpbounds.audit.registry import RELEASE_AUDITS
from dpbounds.cli import main


def test_list(capsys):
    assert main(["audit", "--list"]) == 0
    out = capsys.readouterr().out
    for name in AUDITS:
        assert name in out
    assert main(["audit", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    # every name `audit` accepts (issue 36: the release audits were accepted, not listed)
    assert [r["algorithm"] for r in rows] == [*AUDITS, *RELEASE_AUDITS]
    assert [r["algorithm"] for r in rows if r["in_all"]] == list(AUDITS)
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
    assert "dp_sgd (replace_one)" in out and "claimed eps" in out and "consistent" in out


def test_mutant_flag_is_flagged_with_exit_status_1(capsys):
    # output perturbation with sigma halved: caught already at 2000 runs per data set
    code = main(["audit", "output_perturbation", "--quick", "--mutant", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["mutant"] == "sigma/2" and out["violation"] is True and code == 1
    assert out["epsilon_lower"] > out["claimed_epsilon"]


@pytest.mark.parametrize("argv,match", [
    (["audit"], "ALGORITHM is required"),
    (["audit", "nope"], "unknown audit 'nope'"),
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


def _strict(text):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_json_is_strict_and_carries_the_new_fields(capsys):
    # a pure-DP audit has no mu_claim / epsilon_tight: null, not NaN
    assert main(["audit", "dp_gd_laplace", "--trials", "400", "--json"]) == 0
    out = _strict(capsys.readouterr().out)
    assert out["mu_claim"] is None and out["epsilon_tight"] is None
    for key in ("null_epsilon_lower", "epsilon_lower_reference", "mu_hat", "mu_low", "mu_high",
                "mu_gof_pvalue", "ratio", "cpu_seconds", "null_false_positive"):
        assert key in out, key
    assert out["null_epsilon_lower"] >= 0.0


def test_table_lists_every_result_with_its_notes():
    from dpbounds.cli.audit_cmd import table

    rows = [audit(n, trials=200, seed=1) for n in ("dp_gd_laplace", "dp_heavy_ball",
                                                   "output_perturbation")]
    text = table(rows)
    lines = text.splitlines()
    assert all(len(line) <= 160 for line in lines)
    assert sum(line.startswith(("dp_gd_laplace", "dp_heavy_ball", "output_perturbation"))
               for line in lines) == 3
    assert "identical numbers" in text and "null" in lines[0]
    # the Laplace methods share a transcript statistic: the same numbers, as the note says
    la, hb = (line.split(maxsplit=2)[2] for line in lines[2:4])
    assert la.split()[:6] == hb.split()[:6]


def test_memory_budget_refuses_a_giant_run_in_one_line(capsys):
    assert main(["audit", "dp_sgd", "--trials", "1e7"]) == 2
    err = capsys.readouterr().err
    assert "max_memory_gb" in err and "GB" in err and "Traceback" not in err


def test_progress_lines_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    import dpbounds.audit.runner as runner

    monkeypatch.setattr(runner, "LOG_EVERY_S", 0.0)
    runner.audit("dp_gd_gaussian", trials=2 * runner.CHUNK + 10, progress=True)
    err = capsys.readouterr().err
    assert "audit dp_gd_gaussian:" in err and "CPU to go" in err


def test_plan_prints_runs_per_estimator(capsys):
    assert main(["audit", "plan", "output_perturbation", "--target-ratio", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "plan: output_perturbation" in out and "runs / data set" in out
    assert "Gaussian, mu = mu_claim" in out
