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
    failed = [r for r in rows if not r.holds]
    assert not failed, f"{name}: failed verdicts\n{format_table(failed)}"
    for r in rows:
        assert math.isfinite(r.measured) and math.isfinite(r.predicted)
        assert r.claim in ("<= bound", "== exact", ">= quadratic")


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


def test_python_m_sims_runs_one_study(capsys: pytest.CaptureFixture[str]) -> None:
    from sims.__main__ import main

    assert main(["--only", "tree_noise"]) == 0
    assert "verdicts hold" in capsys.readouterr().out
