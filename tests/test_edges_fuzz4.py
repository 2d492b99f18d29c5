"""Edges found by the fourth fuzz (stop 70), each test failing before its fix. In-process
``main`` where no plug-in is loaded; plug-ins in fresh processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli_lazy import FUZZ4_ERRORS

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
    # sympy cannot tell the sign of (sqrt(d) - T)/N when made; registered (an Entry), where it
    # is negative it is refused (a scan reads NaN there), not returned as a bound, nor as a
    # tuning's optimum; a lemma (an inner product's bound) may be negative, tuned and composed
    # too (the controls: an independent review found tuned() and compose() refusing them)
    import math

    import numpy as np
    import sympy as sp

    from dpbounds.bounds.registry import Entry
    from dpbounds.bounds.theorem import Lemma, Theorem, sym
    from dpbounds.provenance import Provenance, Source

    d, N, T, L, eta, a, b, c = (sym(k) for k in ("d", "N", "T", "L", "eta", "a", "b", "c"))
    src = (Source("me", "Prop 1", Provenance.DERIVED),)
    thm = Theorem("x.signed", "q", (sp.sqrt(d) - T) / N, src)
    assert thm.evaluate(d=100.0, N=10.0, T=20.0) == pytest.approx(-1.0)  # not registered
    Entry("nonconvex.signed", "t", "nonconvex", thm, thm, lambda p: dict(p))
    with pytest.raises(ValueError, match="negative at these parameters"):
        thm.evaluate(d=100.0, N=10.0, T=20.0)
    assert thm.evaluate(d=100.0, N=10.0, T=5.0) == pytest.approx(0.5)
    grid = thm.evaluate(d=100.0, N=10.0, T=np.array([5.0, 20.0]), invalid="nan")
    assert grid[0] == pytest.approx(0.5) and math.isnan(grid[1])
    neg = Theorem("x.neg", "q", -sp.sqrt(d) / N, src)
    with pytest.raises(ValueError, match="is negative"):
        Entry("nonconvex.neg", "t", "nonconvex", neg, neg, lambda p: dict(p))
    lemma = Lemma("x.inner", "q", -eta * c / 2, src, hyperparameters={"eta": 1 / L})
    assert lemma.tuned().evaluate(c=1.0, L=2.0) == pytest.approx(-0.25)
    outer = Lemma("x.outer", "q", sym("x") - b, src)
    assert outer.compose("x.composed", {"x": Lemma("x.in", "q", a * c, src)}).evaluate(
        a=1.0, b=3.0, c=1.0) == pytest.approx(-2.0)


# ------------------------------------------------------ sweep store: damage in a write's way
def _store_damage(tmp_path: Path, damage) -> tuple:
    import shutil

    from dpbounds.sweep import run_sweep
    from tests.test_sweep_damage import cells, same

    reference = list(run_sweep(cells(), progress=False))
    folder = tmp_path / "store"
    first = run_sweep(cells(), store=folder, progress=False)
    files = sorted((folder / "cells").glob("*/*.json"), key=lambda p: p.stem)
    victim = next(p for p in files if p.stem == first.info[1].key)
    damage(victim, shutil)
    return folder, reference, same


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_a_cell_file_that_became_a_folder_is_moved_aside(tmp_path, suffix):
    # was: "counts as missing", recomputed, then a bare IsADirectoryError from os.replace
    # lost the result
    from dpbounds.sweep import run_sweep
    from tests.test_sweep_damage import cells

    def damage(victim, shutil):
        path = victim.with_suffix(suffix)
        path.unlink()
        (path / "inner").mkdir(parents=True)

    folder, reference, same = _store_damage(tmp_path, damage)
    again = run_sweep(cells(), store=folder, progress=False)
    assert (again.computed, again.reused) == (1, 3) and same(list(again), reference)
    third = run_sweep(cells(), store=folder, progress=False)
    assert (third.computed, third.reused) == (0, 4) and same(list(third), reference)
    assert len(list((folder / "cells").glob(f"*/*{suffix}.damaged-*"))) == 1


def test_a_function_folder_that_became_a_file_is_moved_aside(tmp_path):
    # was: a bare FileExistsError from mkdir after the first cell ran
    from dpbounds.sweep import run_sweep
    from tests.test_sweep_damage import cells

    def damage(victim, shutil):
        shutil.rmtree(victim.parent)
        victim.parent.write_text("not a folder")

    folder, reference, same = _store_damage(tmp_path, damage)
    again = run_sweep(cells(), store=folder, progress=False)
    assert (again.computed, again.reused) == (4, 0) and same(list(again), reference)
    third = run_sweep(cells(), store=folder, progress=False)
    assert (third.computed, third.reused) == (0, 4)


# ------------------------------------------------------------- public API: arrays for scalars
@pytest.mark.parametrize("call", [
    lambda P, np: P.without_replacement_gaussian_rdp(0.1, [1.0]),
    lambda P, np: P.subsampled_gaussian_rdp(0.01, [1.0]),
    lambda P, np: P.tree_aggregation_sigma(np.array([1.0, 2.0]), 1e-5, 1, 5),
    lambda P, np: P.noise_multiplier_for_epsilon([1.0], 1e-5, 0.01, 100),
    lambda P, np: P.epsilon_of(P.GaussianMechanism(sigma=1.0, sensitivity=1.0), [1e-5]),
])
def test_a_list_where_one_number_belongs_is_named(call):
    # was: TypeError "unhashable type" / "only 0-dimensional arrays can be converted"
    import numpy as np

    import dpbounds.privacy as P

    with pytest.raises(ValueError, match="must be one number"):
        call(P, np)


def test_a_zero_d_array_is_one_number():
    import numpy as np

    import dpbounds.privacy as P

    assert P.tree_aggregation_sigma(np.array(1.0), 1e-5, 1, 5) == \
        P.tree_aggregation_sigma(1.0, 1e-5, 1, 5)


# ------------------------------------------ a plug-in's sensitivity function returns no number
_SENS = '''
from dpbounds import extend as ex
m = ex.Method("m_sens", step=lambda x, grad, noise, p: x - 0.1 * (grad(x) + noise),
              mechanism="gaussian", neighbouring="replace_one",
              sensitivity=lambda f, p: {value})
ex.audit_setting(m, steps=5, params={{}})
'''


@pytest.mark.parametrize("value, ok", [("None", False), ("[1.0]", False), ("True", False),
                                       ("'1'", False), ("2.0", True),
                                       ("__import__('fractions').Fraction(1, 2)", True)])
def test_a_sensitivity_function_must_return_a_number(tmp_path, value, ok):
    # was: TypeError (exit 4) for None or a list; True and '1' were read as 1
    path = tmp_path / "sens.py"
    path.write_text(_SENS.format(value=value))
    r = _cli("--plugin", str(path), "calibrate", "m_sens", "--steps", "10", cwd=tmp_path)
    if ok:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 2 and "must return a positive, finite number" in r.stderr, \
            r.stderr


# ------------------------------------------- audit's input errors before the imports (#36)
@pytest.mark.parametrize("argv", [
    ["audit", "dp_gd_laplace", "--trials", "1e9"],
    ["audit", "dp_gd_laplace", "--noise-factor", "1e300"],
    ["audit", "dp_gd_laplace", "--mutant", "sigma2"],
    ["audit", "dp_gd_laplace", "--neighbouring", "add_remove"],
])
def test_an_early_audit_refusal_says_what_the_library_says(argv, capsys, monkeypatch):
    # 1.1-1.2 CPU-s each before (the library's imports first); the same line with the early
    # checks switched off (tests/test_cli_lazy.py: FUZZ4_ERRORS import nothing heavy)
    from dpbounds.cli import EXIT_USAGE, _ranges, audit_cmd, main

    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    monkeypatch.setattr(audit_cmd, "_early_checks", lambda args, known: None)
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early


def test_an_overflowing_noise_factor_is_refused_by_the_library():
    # was: `audit dp_gd_laplace --noise-factor 1e300`: numpy overflow warnings, then
    # "consistent" read from overflowed statistics
    from dpbounds.audit import audit
    from dpbounds.audit.mutation import scaled_noise

    with pytest.raises(ValueError, match=r"noise_factor must lie in \[0, 1e\+06\]"):
        audit("dp_gd_laplace", trials=200, noise_factor=1e300)
    with pytest.raises(ValueError, match="noise_factor"), scaled_noise(1e7):
        pass


# ------------------------------------------------ privacy table: one unreachable row, not all
def test_an_unreachable_row_reads_na_and_the_table_goes_on(capsys):
    # was: exit 2 "out of reach ... under this accountant" (no accountant named), no table
    from dpbounds.cli import main
    from dpbounds.privacy.table import privacy_table

    assert main(["privacy", "--epsilon", "1e-6", "--delta", "1e-300", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "n/a: Subsampled Gaussian, Poisson q=0.01 / RDP: epsilon=1e-06 is out of reach" in out
    rows = privacy_table(epsilon=1e-6, delta=1e-300)
    na = {(r["mechanism"].split(",")[0], r["accountant"]) for r in rows if r["noise"] is None}
    assert ("Subsampled Gaussian", "RDP") in na
    # the rows that can be calibrated still are: the full-batch Gaussian's RDP noise is at
    # least the exact (analytic) one, as everywhere (the analytic row is the oracle)
    full = {r["accountant"]: r["noise"] for r in rows if r["mechanism"] == "Gaussian, full batch"}
    assert full["RDP"] is not None and full["RDP"] >= full["analytic Gaussian (exact)"]


@pytest.mark.parametrize("doc, words", [
    # was: exit 0, every accountant n/a "count must be an integer in [1, ...]"
    ({"class_name": "SelfComposedDpEvent", "count": 0,
      "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1}}, "count must be"),
    # was: "sigma must be finite, got nan", naming neither the event nor its field
    ({"class_name": "GaussianDpEvent", "noise_multiplier": float("nan")},
     "noise_multiplier of GaussianDpEvent must be finite"),
])
def test_a_bad_event_file_is_an_input_error_naming_the_place(tmp_path, capsys, doc, words):
    from dpbounds.cli import main

    path = tmp_path / "e.json"
    path.write_text(json.dumps(doc))
    assert main(["privacy", "compose", "--from-dp-event", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert words in err and ("e.json" in err or "dp_event[0]" in err), err
    # dp_accounting refuses a count of 0 as well (the oracle of the convention)
    dpa = pytest.importorskip("dp_accounting")
    if "count" in doc:
        with pytest.raises(ValueError):
            dpa.rdp.RdpAccountant().compose(
                dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), 0))


@pytest.mark.parametrize("argv", [
    *[a for a in FUZZ4_ERRORS if a[0] in ("rate", "verify", "tune")],
    ["verify", "strongly_convex.nag", "--vary", "d", "--values", "1e9", "10"],
])
def test_an_early_refusal_is_the_librarys(argv, capsys, monkeypatch):
    # 1.2-1.8 CPU-s each before (the library's imports first); the same last line with the
    # early checks switched off (tests/test_cli_lazy.py: FUZZ4_ERRORS import nothing heavy)
    from dpbounds.cli import EXIT_USAGE, _catalog, _ranges, main, plugin_cmd

    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    monkeypatch.setattr(plugin_cmd, "_early_tune_checks", lambda *a: None)
    monkeypatch.setattr(_catalog, "names", lambda kind: None)
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early


def test_a_range_for_no_hyper_parameter_is_refused(capsys):
    # was: `tune bound nonconvex.clipped_sgd --range X 1 2` searched X (66,049 points) and
    # printed "X = 1 at the lower end"; a declared one is searched (the control)
    from dpbounds.cli import main

    argv = ["tune", "bound", "nonconvex.clipped_sgd", "--quiet"]
    assert main([*argv, "--range", "X", "1", "2"]) == 2
    assert "'X' is not a hyper-parameter of nonconvex.clipped_sgd" in capsys.readouterr().err
    assert main([*argv, "--range", "C", "1", "100", "--json"]) == 0


def test_a_laplace_plug_in_calibrates_at_any_sensitivity(tmp_path):
    # was: S1 = 1e300 "out of reach: even noise 1e+15 gives epsilon=100" (an absolute cap);
    # pure DP composes exactly: 100 releases at eps 1 need b = 100 S1 / N (the oracle)
    path = tmp_path / "p.py"
    path.write_text((ROOT / "examples" / "heavy_ball_plugin.py").read_text())
    for s1 in ("1e300", "1"):
        r = _cli("--plugin", str(path), "calibrate", "heavy_ball_plugin", "--steps", "100",
                 "--S1", s1, "--N", "1", "--json", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        b = doc["noise_scale"]
        assert b == pytest.approx(100 * float(s1), rel=1e-5) and b >= 100 * float(s1), doc


# ---------------------------------- --from-dp-event content errors before the imports (#36)
@pytest.mark.parametrize("doc", [
    {"class_name": "GausianDpEvent", "noise_multiplier": 1},  # a misspelt class
    {"class_name": "GaussianDpEvent", "noise_multiplier": 1, "sens": 2},  # a field it lacks
    {"class_name": "SelfComposedDpEvent", "count": 3, "event": {"class_name": "Foo"}},
    {"class_name": "ComposedDpEvent", "events": [{"class_name": "NoOpDpEvent", "x": 1}]},
    3,  # not an object
])
def test_an_event_file_is_checked_before_dp_accounting_in_its_words(tmp_path, capsys,
                                                                      monkeypatch, doc):
    # 1.0-1.2 CPU-s before (dp_accounting's import first); the same line with the catalog's
    # check switched off (the library's own, dpbounds.privacy.events.dp_event_from_json)
    from dpbounds.cli import main, privacy_compose

    path = tmp_path / "e.json"
    path.write_text(json.dumps(doc))
    argv = ["privacy", "compose", "--from-dp-event", str(path), "--quiet"]
    assert main(argv) == 2
    early = capsys.readouterr().err.strip()
    monkeypatch.setattr(privacy_compose, "_check_shape", lambda *a: None)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == early


def test_the_catalog_lists_dp_accountings_events():
    dpa = pytest.importorskip("dp_accounting")
    from dpbounds.cli import _catalog

    fields = _catalog.constant("dp_event_fields")
    assert fields["GaussianDpEvent"] == ["noise_multiplier"]
    assert set(fields) >= {"PoissonSampledDpEvent", "SelfComposedDpEvent", "ComposedDpEvent"}
    assert all(issubclass(getattr(dpa.dp_event, k), dpa.DpEvent) for k in fields)


def test_a_replay_mutant_is_not_refused_as_an_audit_mutant(tmp_path):
    # an independent review: the early --mutant check (audit mutants only) refused every
    # replay mutant in a fresh process; `audit dp_sgd --replay --mutant scaled_contribution`
    # is the help page's example of exit 1 (the mutant caught)
    r = _cli("audit", "dp_sgd", "--replay", "--mutant", "scaled_contribution", cwd=tmp_path)
    assert r.returncode == 1, r.stderr[-500:]
    r = _cli("audit", "dp_gd_laplace", "--mutant", "nosuch", cwd=tmp_path)  # control
    assert r.returncode == 2 and "mutant must be one of" in r.stderr


@pytest.mark.parametrize("argv", [
    # two errors at once: the early checks answer with the one the library answers first
    # (an independent review found these answered with the other)
    ["audit", "dp_gd_laplace", "--mutant", "nosuch", "--neighbouring", "add_remove"],
    ["audit", "dp_gd_laplace", "--noise-factor", "2e6", "--trials", "1e9"],
    ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1", "--steps",
     "2e7", "--pep"],
    ["verify", "strongly_convex.nag", "--vary", "N", "--values", "1.5"],
    ["verify", "strongly_convex.nag", "--vary", "N", "--values", "1000", "1000", "1.5"],
    ["tune", "bound", "nonconvex.clipped_sgd", "--over", "C", "C", "--grid-size", "1"],
])
def test_the_first_of_two_errors_is_the_librarys(argv, capsys, monkeypatch):
    from dpbounds.cli import EXIT_USAGE, _catalog, _ranges, audit_cmd, main, plugin_cmd

    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    monkeypatch.setattr(audit_cmd, "_early_checks", lambda args, known: None)
    monkeypatch.setattr(plugin_cmd, "_early_tune_checks", lambda *a: None)
    monkeypatch.setattr(_catalog, "names", lambda kind: None)
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early


def test_a_range_outside_over_is_not_checked_early(capsys):
    # an independent review: `--over eta --range alpha 0 1` was refused early; the search
    # checks the ranges of the names it searches only (exit 0 with the early check off)
    from dpbounds.cli import main

    assert main(["tune", "bound", "nonconvex.tree_momentum_nsgd", "--over", "eta", "--range",
                 "alpha", "0", "1", "--grid-size", "9", "--quiet", "--json"]) == 0


def test_a_constant_sensitivity_is_read_as_a_function_s_answer():
    # one reading for both (extend._positive_number): a sympy Float or a Fraction constant was
    # refused at declaration while a function returning it was read; True is refused by both
    from fractions import Fraction

    import sympy as sp

    from dpbounds import extend as ex

    def step(x, grad, noise, p):  # noqa: ANN001, ANN202
        return x - 0.1 * (grad(x) + noise)

    for value in (sp.Float(0.5), Fraction(1, 2), 0.5):
        m = ex.Method("m_const", step=step, mechanism="gaussian", sensitivity=value)
        assert m.release_sensitivity(None, {}) == 0.5
    for value in (True, "1", [1.0], float("nan"), -1.0):
        with pytest.raises(ValueError, match="sensitivity must be positive and finite"):
            ex.Method("m_const", step=step, mechanism="gaussian", sensitivity=value)


def test_a_pep_progress_that_is_no_function_is_refused_before_the_solve():
    # it would have raised a TypeError after the first SDP solve (a minute at T = 20)
    from dpbounds.pep import FixedStepMethod, pep_worst_case

    for pairs in ("all", "banded"):
        with pytest.raises(ValueError, match="progress must be a function"):
            pep_worst_case(FixedStepMethod.heavy_ball(0.5, 0.3), 0.5, 1.0, 3,
                           initial_gap=1.0, pairs=pairs, progress="yes")
    seen: list[str] = []  # control: a function is called once per solve
    pep_worst_case(FixedStepMethod.heavy_ball(0.5, 0.3), 0.5, 1.0, 3, initial_gap=1.0,
                   progress=seen.append)
    assert seen[0] == "worst case" and 1 <= len(seen) <= 4
