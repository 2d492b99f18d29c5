"""Edges of the fifth round (stop 71), each test failing before its fix: the fourth fuzz's
leftovers and what the fifth fuzz found. In-process ``main`` where no plug-in is loaded."""

from __future__ import annotations

import pytest

from dpbounds.cli import main

# --------------------------------------------------- numbers in digits other than ASCII ones
UNICODE_NUMBERS = (
    (["verify", "strongly_convex.nag", "--quick", "--seed", "\u0661"], "--seed", "\u0661"),
    (["rate", "hb", "--alpha", "\uff10.5", "--beta", "0.3", "--mu", "1", "--L", "2"],
     "--alpha", "\uff10.5"),
    (["bound", "kuru.hb", "--N", "\u0661\u0660\u0660"], "--N", "\u0661\u0660\u0660"),
    (["verify", "strongly_convex.nag", "--vary", "d", "--values", "1", "\u0663"], "--values",
     "\u0663"),
    (["tune", "hb", "--m", "\u0663"], "--m", "\u0663"),
)


@pytest.mark.parametrize(("argv", "flag", "text"), UNICODE_NUMBERS,
                         ids=[a[0] + " " + a[-2] for a, _, _ in UNICODE_NUMBERS])
def test_a_number_in_non_ascii_digits_is_refused_by_name(argv, flag, text, capsys):
    # was: Python's int/float read every Unicode decimal digit, so `--seed ١` ran seed 1 and
    # `--alpha ０.5` computed the rate at alpha = 0.5
    assert float(text) == float(text.translate({c: ord("0") + i for i, c in enumerate(
        range(0x0660, 0x066A))}).translate({c: ord("0") + i for i, c in enumerate(
            range(0xFF10, 0xFF1A))}))  # the oracle: Python reads it as that number
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "ASCII digits" in err and flag in err and repr(text) in err


def test_a_non_ascii_name_that_is_no_number_is_still_read(tmp_path, capsys):
    # control: only numbers are refused; a path or a name with other characters passes on
    assert main(["verify", "strongly_convex.n\u00e4g", "--quick"]) == 2  # refused as a name
    err = capsys.readouterr().err
    assert "ASCII" not in err and "did you mean 'strongly_convex.nag'" in err
    store = tmp_path / "r\u00e9sultats"
    assert main(["verify", "strongly_convex.nag", "--quick", "--store", str(store)]) == 0
    assert store.is_dir()


# ------------------------------------------------------- an audit far above its noise
def test_an_audit_whose_rate_is_zero_says_it_has_no_point_estimate(capsys):
    # was: "estimate inf" printed as if it were a number read from the runs
    from dpbounds.audit.statistics import epsilon_from_counts

    # the oracle: with no run on D in the event, ln(TPR / FPR) divides by 0
    assert epsilon_from_counts(100, 0, 100, 0.0, 0.95).estimate == float("inf")
    assert main(["audit", "dp_gd_laplace", "--epsilon", "50", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "no point estimate: a rate it divides by is 0" in out and "estimate inf" not in out
    # control: near its claim the audit reads a finite estimate and prints it
    assert main(["audit", "dp_gd_laplace", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "], estimate " in out and "no point estimate" not in out


# ------------------------------------------------- the store's JSON and non-finite values
def test_the_store_says_how_it_writes_non_finite_values(tmp_path):
    # was: NaN / Infinity tokens written without a word; strict JSON readers refuse them
    import json
    import math

    from dpbounds.sweep.store import ResultStore

    store = ResultStore(tmp_path / "s")
    store.put({"key": "k", "function": "m:f"}, {"loss": math.nan, "best": math.inf})
    text = next((tmp_path / "s" / "cells").glob("*/k.json")).read_text()
    assert "NaN" in text and "Infinity" in text  # what the note is about
    with pytest.raises(ValueError):  # a strict reader refuses the tokens
        json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    values = json.loads(text)["values"]  # Python reads them back as the same floats
    assert math.isnan(values["loss"]) and values["best"] == math.inf
    fmt = (tmp_path / "s" / "FORMAT.md").read_text()
    assert "NaN" in fmt and "strict JSON readers refuse" in fmt
