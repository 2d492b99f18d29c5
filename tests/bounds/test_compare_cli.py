"""Comparison API and the ``dpbounds bound`` / ``dpbounds compare`` commands."""

from __future__ import annotations

import json

import pytest

from dpbounds.bounds import registry
from dpbounds.bounds.compare import compare, compare_table
from dpbounds.cli import main


def test_compare_names_the_smallest_bound(problem):
    c = compare(problem, tune=True, crossovers=False)
    assert {r.name for r in c.rows} == set(registry.names("non-convex"))
    assert c.best == min(c.rows, key=lambda r: r.value).name
    for r in c.rows:
        if r.tuned_value is not None:
            assert r.tuned_value <= r.value * (1 + 1e-9)
    text = c.to_text()
    assert "best (closed-form choices)" in text and "DERIVED" in text


def test_compare_table_is_plain_data(problem):
    data = compare_table(problem, tune=False)
    json.dumps(data)
    assert data["best"] in {r["name"] for r in data["rows"]}
    assert any(c["better"] == "tran_cutkosky.alg2" and c["worse"] == "tran_cutkosky.alg1"
               for c in data["crossovers"])


def test_registry_rejects_unknown_names():
    with pytest.raises(ValueError, match="valid names"):
        registry.get("nope")


def test_cli_bound(capsys):
    assert main(["bound", "tran_cutkosky.alg1", "--d", "100", "--N", "1e5", "--eps", "1",
                 "--delta", "1e-5", "--no-tune"]) == 0
    out = capsys.readouterr().out
    assert "d^(1/4) N^(-1/2) eps^(-1/2)" in out and "closed form" in out
    assert main(["bound", "--list"]) == 0
    assert "tran_cutkosky.alg2" in capsys.readouterr().out


def test_cli_bad_input_is_one_clear_line(capsys):
    assert main(["bound", "tran_cutkosky.alg1", "--d", "-3"]) == 2
    assert "d must be > 0" in capsys.readouterr().err
    assert main(["bound", "nope"]) == 2


def test_cli_compare_defaults(capsys):
    assert main(["compare", "--no-tune", "--c2", "6.5"]) == 0
    out = capsys.readouterr().out
    assert "best" in out and "crossover: tran_cutkosky.alg2 beats tran_cutkosky.alg1" in out


def test_vacuous_bounds_are_flagged_against_the_trivial_bound_G():
    # ||grad F|| <= G holds for every G-Lipschitz loss: a bound above G certifies nothing.
    small = compare(dict(d=100, N=1e5, eps=1.0, delta=1e-5, G=1, L=1, R=1))
    for row in small.rows:
        best = min(v for v in (row.value, row.tuned_value) if v is not None)
        assert (row.name in small.vacuous) == (best >= 1.0)
    # with 10^4 times more data every bound drops below G (all rates decay in N)
    large = compare(dict(d=100, N=1e9, eps=1.0, delta=1e-5, G=1, L=1, R=1))
    assert large.vacuous == []
    assert "vacuous" in small.to_text() and "vacuous" in small.to_dict()
