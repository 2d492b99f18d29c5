"""Edges found in stop 79 (walkthrough, fuzz round 13): each test fails before its fix."""

from __future__ import annotations

import pytest

from dpbounds.verify.verdicts import equal, format_table, upper


def test_verdict_table_puts_long_oracles_in_notes_and_says_what_its_ci_is():
    # walkthrough of stop 78/79: the oracle column padded every row to ~450 characters, and
    # a 95% CI that missed the prediction was marked "yes" without a word
    long = "x" * 300
    rows = [upper("s", "c", 0.5, 0.01, 1.0, "short oracle"),
            equal("s", "d", 0.59, 0.05, 0.73, long),
            equal("s", "e", 1.0, 0.05, 1.0, long)]
    text = format_table(rows)
    lines = text.splitlines()
    assert max(len(x) for x in lines) < 200 and all(x == x.rstrip() for x in lines)
    assert "short oracle" in lines[2] and lines[3].endswith("[1]") and lines[4].endswith("[1]")
    assert text.count("[1] " + "x" * 20) == 1  # the text once, in full, as a note
    assert "".join(x.strip() for x in text.split("[1] ")[1].splitlines()) == long
    assert "each verdict tests its claim at 5 standard errors" in text.replace("\n", " ")
    assert format_table([]).count("\n") == 1  # head and rule only


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
