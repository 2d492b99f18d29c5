"""The shipped monotonicity checks (``dpbounds/bounds/theorem/monotone_checks.json``).

Oracle: the checker itself, re-run from scratch on every shipped key (the same inputs parsed
back from the key), must give the shipped status and argument; and the table must be complete
(importing every bound module in a fresh process runs no check outside it) and trusted only on
an exact key match (control: a decreasing bound that is not in the table is still refused).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpbounds.bounds.theorem import check_monotone, sym
from dpbounds.bounds.theorem import monotonicity as mono


def _doc() -> dict:
    doc = json.loads(mono.SHIPPED_CHECKS.read_text(encoding="utf-8"))
    written, now = json.loads(doc["fingerprint"]), json.loads(mono.checker_fingerprint())
    if written[1] != now[1]:  # only sympy's version differs: the table is ignored here
        pytest.skip(f"table written under sympy {written[1]}, sympy {now[1]} installed")
    assert written == now, ("the checker changed since the table was written: regenerate "
                            "with python -m dpbounds.bounds.theorem.monotonicity --write")
    return doc


def _table() -> dict[str, list[str]]:
    return _doc()["checks"]


def test_every_shipped_check_reruns_to_the_same_result() -> None:
    table = _table()
    assert len(table) >= 10
    for key, (status, how) in table.items():
        outer, x, rels, domain, regime = mono.parse_key(key)
        assert mono.check_key(outer, x, rels, domain, regime) == key  # the key round-trips
        result = mono._check.__wrapped__(outer, x, rels, domain, regime)
        assert not isinstance(result, str), (key, result)
        assert (result[0], result[1]) == (status, how), key


def test_the_table_covers_every_bound_module() -> None:
    """A fresh process importing every bound module records the checks it runs: exactly the
    table's keys (a changed bound whose table was not rewritten fails here)."""
    code = ("import os, json; os.environ['DPBOUNDS_RECORD_MONOTONE'] = '1'\n"
            + mono._RECORD_SCRIPT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    recorded = json.loads(out.strip().splitlines()[-1])
    assert recorded == _table(), \
        "regenerate: python -m dpbounds.bounds.theorem.monotonicity --write"


def test_a_check_outside_the_table_still_runs() -> None:
    """Control: the table is read only on an exact key; a decreasing bound is refused."""
    x, r = sym("x"), sym("r")
    with pytest.raises(ValueError, match="not non-decreasing"):
        check_monotone(r / (1 + x), "x", outer_name="F")


def test_a_table_hit_agrees_with_a_fresh_check_after_a_checker_change(monkeypatch) -> None:
    """The reviewer's reproducer (was a strict xfail): after an edit that no longer treats T as
    a count, the fresh checker refuses a shipped composition, and so must ``check_monotone``
    (the fingerprint no longer matches: the table is ignored)."""
    table = _table()
    key = next(k for k, v in table.items() if "T = p_T + 1 (a count)" in v[1])
    outer, x, rels, domain, regime = mono.parse_key(key)
    monkeypatch.setattr(mono, "COUNT_SYMBOLS",
                        frozenset(s for s in mono.COUNT_SYMBOLS if s != "T"))
    fresh = mono._check.__wrapped__(outer, x, rels, domain, regime)
    assert isinstance(fresh, str)  # control: the checker itself now refuses it
    mono._check.cache_clear()
    with pytest.raises(ValueError, match="not non-decreasing"):
        mono.check_monotone(outer, x.name, outer_name="F", relations=rels,
                            domain=dict(domain), regime=regime)
    mono._check.cache_clear()


def test_the_table_is_used_when_the_fingerprint_matches() -> None:
    """Control for the above: unchanged, the same key is a hit (no sympy proof re-run)."""
    table = _table()
    key = next(k for k, v in table.items() if "T = p_T + 1 (a count)" in v[1])
    outer, x, rels, domain, regime = mono.parse_key(key)
    assert key in mono._shipped_checks()
    m = mono.check_monotone(outer, x.name, outer_name="F", relations=rels,
                            domain=dict(domain), regime=regime)
    assert (m.status, m.how) == tuple(table[key])


def test_a_placeholder_with_other_assumptions_is_refused() -> None:
    """The reviewer's finding: a plain sympy Symbol('x') is not sym('x') and differentiated to
    0 ("proven"); it is now refused, and sym('x') itself still composes."""
    import sympy as sp

    with pytest.raises(ValueError, match="not dpbounds' sym"):
        check_monotone(-sp.Symbol("x"), "x", outer_name="F")
    assert check_monotone(2 * sym("x"), "x", outer_name="F").status == "proven"
