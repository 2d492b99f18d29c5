"""Simulation studies (quick mode): every verdict compares a Monte Carlo estimate or an exact
computation of dpbounds' algorithms with an independent oracle (Lyapunov / covariance closed
forms, the bounds as separate formulas, a binary-expansion variance, the sheet's published toy
table) — the studies' verdicts must all hold, and the verdict logic must reject a wrong oracle.
"""

from __future__ import annotations

import importlib
import math

import pytest

from sims import STUDIES
from sims._verdict import Verdict, equal, format_table, upper


@pytest.fixture(scope="module", params=STUDIES)
def study_rows(request: pytest.FixtureRequest) -> tuple[str, list[Verdict]]:
    return request.param, importlib.import_module(f"sims.{request.param}").run(quick=True)


def test_study_verdicts_hold(study_rows: tuple[str, list[Verdict]]) -> None:
    name, rows = study_rows
    assert rows, f"{name} returned no verdicts"
    failed = [r for r in rows if r.failed]
    assert not failed, f"{name}: failed verdicts\n{format_table(failed)}"
    assert any(r.holds for r in rows), f"{name}: no verdict was checked (all vacuous)"
    for r in rows:
        assert math.isfinite(r.measured) and math.isfinite(r.predicted)
        assert r.claim in ("<= bound", "== exact", ">= quadratic")
        assert not (r.holds and r.vacuous)  # a vacuous verdict is never a pass


def test_heavy_ball_exact_is_tight_and_bound_is_loose() -> None:
    rows = importlib.import_module("sims.heavy_ball_stationary").run(quick=True)
    exact = [r for r in rows if r.claim == "== exact" and "E[F-F*]" in r.case]
    bound = [r for r in rows if r.claim == "<= bound"]
    # the Lyapunov closed form matches to a few percent; L*m overstates E[F-F*] by >= 2
    assert all(abs(r.ratio - 1) < 0.05 for r in exact)
    assert all(r.ratio < 0.5 + 0.05 for r in bound)


def test_nag_recursion_is_an_upper_bound_not_exact() -> None:
    rows = importlib.import_module("sims.nag_recursion").run(quick=True)
    assert all(r.ratio < 1 for r in rows if r.claim == "<= bound")
    assert all(abs(r.ratio - 1) < 0.06 for r in rows if r.claim == "== exact")


def test_tree_noise_sawtooth_follows_popcount() -> None:
    rows = importlib.import_module("sims.tree_noise").run(quick=True)
    var = {r.case: r.measured for r in rows if "variance" in r.case and "α=0.0" in r.case}
    # alpha = 0: variance = popcount(t) sigma^2, so t = 255 (8 bits) >> t = 256 (1 bit)
    v255 = next(v for c, v in var.items() if "t=255" in c)
    v256 = next(v for c, v in var.items() if "t=256" in c)
    assert 6 < v255 / v256 < 10


def test_verdicts_reject_a_wrong_oracle() -> None:
    assert not equal("s", "c", 1.0, 0.01, 1.2, "wrong").holds
    assert equal("s", "c", 1.0, 0.01, 1.04, "ok").holds
    assert not upper("s", "c", 1.0, 0.01, 0.5, "too small").holds
    assert upper("s", "c", 1.0, 0.01, 1.0, "ok").holds
    assert "NO" in format_table([upper("s", "c", 1.0, 0.01, 0.5, "x")])
    # a bound at least the trivial bound is flagged vacuous: neither a pass nor a failure
    v = upper("s", "c", 1.0, 0.0, 50.0, "vacuous bound", trivial=1.1)
    assert v.vacuous and not v.holds and not v.failed and v.status == "vacuous"


def test_tran_cutkosky_study_fails_for_a_do_nothing_algorithm() -> None:
    """The 0.1 study's verdicts held for an algorithm returning x0; the progress verdict of
    the new one does not (measured = ||grad F(x0)|| = 0.6 with no spread)."""
    rows = importlib.import_module("sims.tran_cutkosky_gradnorm").run(quick=True)
    progress = [r for r in rows if "start ||x0||=0.6" in r.case]
    assert len(progress) == 2 and all(r.holds for r in progress)
    assert all(not upper("s", "c", 0.6, 0.0, r.predicted, "do nothing").holds
               for r in progress)
    assert any(r.vacuous for r in rows)  # the DERIVED theorems are vacuous at N = 250


def test_python_m_sims_runs_one_study(capsys: pytest.CaptureFixture[str]) -> None:
    from sims.__main__ import main

    assert main(["--only", "tree_noise"]) == 0
    assert "verdicts hold" in capsys.readouterr().out
