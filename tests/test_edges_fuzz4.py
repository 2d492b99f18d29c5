"""Edges found by the fourth fuzz (stop 70), each test failing before its fix. In-process
``main`` where no plug-in is loaded; plug-ins in fresh processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbounds", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


# ------------------------------------------- a dp_accounting event under replace-one
def _dpa_epsilon(event, relation: str, accountant: str, delta: float = 1e-5) -> float:
    """dp_accounting's own epsilon for ``event`` (the oracle)."""
    dpa = pytest.importorskip("dp_accounting")
    rel = getattr(dpa.NeighboringRelation, relation)
    if accountant == "pld":
        acc = dpa.pld.PLDAccountant(rel)
    else:
        acc = dpa.rdp.RdpAccountant(neighboring_relation=rel)
    return float(acc.compose(event).get_epsilon(delta))


def test_a_gaussian_event_under_replace_one_needs_its_accountant_named():
    # was: read as the RDP accountant's (over 2C) without a word: epsilon 4.7 where
    # dp_accounting's PLD accountant, for which the same event means noise over C, gives 10.0
    dpa = pytest.importorskip("dp_accounting")
    from dpbounds.privacy.composition import compose_events

    ev = dpa.GaussianDpEvent(1.0)
    with pytest.raises(ValueError, match="--dp-event-accountant rdp or pld"):
        compose_events(delta=1e-5, neighbouring="replace_one", dp_events=[ev])
    for reading in ("rdp", "pld"):  # each read as that accountant of dp_accounting's reads it
        out = compose_events(delta=1e-5, neighbouring="replace_one", dp_events=[ev],
                             accountants=(reading,), dp_event_accountant=reading)
        ours = out["results"][0]["epsilon"]
        theirs = _dpa_epsilon(ev, "REPLACE_ONE", reading)
        assert ours == pytest.approx(theirs, rel=2e-3), reading
    # the two readings are the two mechanisms: about 2x apart
    pld = compose_events(delta=1e-5, neighbouring="replace_one", dp_events=[ev],
                         accountants=("pld",), dp_event_accountant="pld")
    assert pld["results"][0]["epsilon"] > 2 * _dpa_epsilon(ev, "REPLACE_ONE", "rdp")
    # control: under add/remove the two readings are one, nothing to name
    out = compose_events(delta=1e-5, dp_events=[ev], accountants=("pld",))
    assert out["results"][0]["epsilon"] == pytest.approx(
        _dpa_epsilon(ev, "ADD_OR_REMOVE_ONE", "pld"), rel=2e-3)


def test_an_event_only_one_reading_takes_is_read_without_asking():
    # sampling without replacement is RDP-only (the PLD reading refuses it): no ambiguity
    dpa = pytest.importorskip("dp_accounting")
    from dpbounds.privacy.composition import compose_events

    ev = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(
        1000, 10, dpa.GaussianDpEvent(1.0)), 100)
    out = compose_events(delta=1e-5, neighbouring="replace_one", dp_events=[ev],
                         accountants=("rdp",))
    named = compose_events(delta=1e-5, neighbouring="replace_one", dp_events=[ev],
                           accountants=("rdp",), dp_event_accountant="rdp")
    ours = out["results"][0]["epsilon"]
    assert ours == named["results"][0]["epsilon"]
    # dpbounds' RDP of sampling without replacement is tighter than the bound dp_accounting
    # uses (Wang, Balle & Kasiviswanathan's), never above it
    theirs = _dpa_epsilon(ev, "REPLACE_ONE", "rdp")
    assert 0.8 * theirs <= ours <= theirs


def test_the_cli_names_the_reading(tmp_path):
    from dpbounds.cli import main

    path = tmp_path / "g.json"
    path.write_text(json.dumps({"class_name": "GaussianDpEvent", "noise_multiplier": 1}))
    assert main(["privacy", "compose", "--from-dp-event", str(path), "--neighbouring",
                 "replace_one", "--quiet"]) == 2
    assert main(["privacy", "compose", "--from-dp-event", str(path), "--neighbouring",
                 "replace_one", "--dp-event-accountant", "pld", "--quiet"]) == 0
    # an option with nothing to read is refused, not dropped
    assert main(["privacy", "compose", "--event", "gaussian:z=1", "--dp-event-accountant",
                 "pld", "--quiet"]) == 2


def test_an_accountant_named_twice_is_refused(capsys):
    from dpbounds.cli import main

    assert main(["privacy", "compose", "--event", "gaussian:z=1", "--accountant",
                 "rdp,rdp", "--quiet"]) == 2
    assert "more than once" in capsys.readouterr().err


# ------------------------------------------------------- rate hb: an uncertified PEP value
def test_an_uncertified_pep_value_is_not_printed_as_the_worst_case(capsys):
    # was: "8.31667e-06 (exact PEP)" above the certified Lyapunov upper bound 1.41e-06 (the
    # worst case lies below that bound, so the number was the solver's tolerance, not it)
    from dpbounds.cli import main

    args = ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1",
            "--steps", "16", "--quiet"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pep, lyap = out["worst_case"]["pep"], out["worst_case"]["lyapunov"]
    assert pep["value"] is None and pep["certified"] is None
    assert pep["solver_value"] > lyap["value"]  # what it printed before: above an upper bound
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "n/a: no exact certificate" in text and "x the PEP value" not in text


# ------------------------------------------------ a plug-in bound that is no bound on an error
_THM = '''
import sympy as sp
from dpbounds import extend as ex
d, N, eps, T = ex.symbols("d N eps T")
expr = {expr}
ex.theorem("nonconvex.weird", expr, quantity="q", problem_class="nonconvex",
           hyperparameters={{"T": N}}, tunable={{"T": (1, 1e6)}},
           source=ex.Source("me", "Prop 1", ex.DERIVED))
'''


@pytest.mark.parametrize("expr, why", [
    ("-sp.sqrt(d) / (N * eps) * T", "is negative"),  # won compare at -10, tuned to -100
    ("1 / (T - T)", "complex infinity"),  # KeyError: 'ComplexInfinity' (exit 4)
    ("sp.sqrt(-d * T) / N", "is complex"),  # TypeError float() of complex (exit 4)
    ("sp.nan * T", "undefined"),
])
def test_a_bound_that_cannot_bound_an_error_is_refused_when_declared(tmp_path, expr, why):
    path = tmp_path / "thm.py"
    path.write_text(_THM.format(expr=expr))
    r = _cli("--plugin", str(path), "bound", "nonconvex.weird", cwd=tmp_path)
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_bound_negative_at_some_point_is_outside_its_range_there():
    # sympy cannot tell the sign of (sqrt(d) - T)/N when made; where it is negative it is
    # refused (a scan reads NaN there), not returned as a bound, nor as a tuning's optimum;
    # a lemma (an inner product's bound) may be negative (the control)
    import math

    import numpy as np
    import sympy as sp

    from dpbounds.bounds.theorem import Lemma, Theorem, sym
    from dpbounds.provenance import Provenance, Source

    d, N, T = sym("d"), sym("N"), sym("T")
    src = (Source("me", "Prop 1", Provenance.DERIVED),)
    thm = Theorem("x.signed", "q", (sp.sqrt(d) - T) / N, src)
    with pytest.raises(ValueError, match="negative at these parameters"):
        thm.evaluate(d=100.0, N=10.0, T=20.0)
    assert thm.evaluate(d=100.0, N=10.0, T=5.0) == pytest.approx(0.5)
    grid = thm.evaluate(d=100.0, N=10.0, T=np.array([5.0, 20.0]), invalid="nan")
    assert grid[0] == pytest.approx(0.5) and math.isnan(grid[1])
    lemma = Lemma("x.inner", "q", (sp.sqrt(d) - T) / N, src)
    assert lemma.evaluate(d=100.0, N=10.0, T=20.0) == pytest.approx(-1.0)
