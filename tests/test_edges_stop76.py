"""Edges of stop 76: the last slow input errors of ``bound``, ``tune bound`` and ``compare``.

Each early refusal is read from the catalog (``bound_reads``, ``bound_hyperparameters``,
``compared_classes``); the oracle is the library's own refusal with the early check switched
off (``tests/early_checks.py``), and the catalog's facts are checked against the library's
``Entry.unread`` at random problems (hypothesis).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbounds.cli import EXIT_USAGE, _catalog, bounds_cmd, main

#: typed problem flags the early checks may refuse (the bound reads them or not)
UNREAD = [
    (["bound", "yang.sgd", "--mu", "0.1"], "--mu is not read by nonconvex.clipped_sgd"),
    (["bound", "tran_cutkosky.alg1", "--m", "10"], "--m is not read by"),
    (["bound", "strongly_convex.nag", "--mu", "0.1", "--S1", "1", "--c2", "3"],
     "--c2 is not read by strongly_convex.nag"),
    (["bound", "convex.noisy_projected_sgd", "--tau0", "2", "--no-tune"], "--tau0 is not read"),
    (["tune", "bound", "nonconvex.clipped_sgd", "--over", "zz"],
     "'zz' is not a hyper-parameter of nonconvex.clipped_sgd (its hyper-parameters: C)"),
    (["tune", "bound", "yang.sgd", "--range", "q", "1", "2"], "'q' is not a hyper-parameter"),
    (["tune", "bound", "tran_cutkosky.alg2", "--over", "eta", "T"],
     "'T' is not a hyper-parameter of nonconvex.sensitivity_reduced_nsgd"),
    # an unread flag comes before an unknown name, as in the library
    (["tune", "bound", "strongly_convex.nag", "--mu", "0.1", "--S1", "1", "--c2", "3",
      "--over", "zz"], "--c2 is not read by strongly_convex.nag"),
    (["compare", "--mu", "0.02", "--S1", "1", "--c2", "3"],
     "--c2 is not read by any bound compared"),
    (["compare", "--m", "5"], "--m is not read by any bound compared for this nonconvex"),
]


def _static(monkeypatch: pytest.MonkeyPatch) -> None:
    # a test process has the registry imported (the early checks then leave it to the
    # library): read the catalog's file, as a fresh `dpbounds` process does
    monkeypatch.setattr(_catalog, "use_static", lambda kind: True)


@pytest.mark.parametrize("argv, words", UNREAD, ids=lambda a: " ".join(a) if isinstance(a, list)
                         else "")
def test_an_unread_flag_or_unknown_name_is_refused_early_in_the_librarys_words(
        argv, words, capsys, monkeypatch):
    # was: 0.9-1.2 CPU-s of the registry's imports (sympy, scipy) before the one line
    from tests.early_checks import assert_early_is_library

    _static(monkeypatch)
    assert_early_is_library(argv, capsys, monkeypatch,
                            [(bounds_cmd, "refuse_early", lambda *a, **k: None),
                             (bounds_cmd, "_refuse_nothing_compared", lambda *a: None)],
                            words)


def test_compare_without_any_applicable_bound_says_so_in_one_line(capsys, monkeypatch):
    # was: 1.25 CPU-s, then a table of n/a rows and "no bound applies (the reasons are above)"
    _static(monkeypatch)
    assert main(["compare", "--mu", "0.02"]) == EXIT_USAGE
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.strip() == (
        "dpbounds: error: no bound applies to this strongly convex problem: "
        "strongly_convex.heavy_ball_lmi, strongly_convex.masg, strongly_convex.nag need "
        "sensitivity S1 (--sensitivity, --S1)")
    # oracle: the library compares nothing there, for exactly that reason
    from dpbounds.bounds.compare import compare

    res = compare({"mu": 0.02}, tune=False, progress=False)
    assert res.best is None
    text = res.to_text()
    for name in ("heavy_ball_lmi", "masg", "nag"):
        assert f"strongly_convex.{name}: needs sensitivity S1" in text
    # with the early check off the library says the same in its own way (exit 2)
    monkeypatch.setattr(bounds_cmd, "_refuse_nothing_compared", lambda *a: None)
    assert main(["compare", "--mu", "0.02", "--no-tune", "--quiet"]) == EXIT_USAGE
    assert "no bound applies to this problem" in capsys.readouterr().err
    # control: one applicable bound and the library answers (exit 0)
    monkeypatch.undo()
    _static(monkeypatch)
    assert main(["compare", "--mu", "0.02", "--S1", "1", "--no-tune", "--quiet"]) == 0


def test_a_class_that_does_not_fit_leaves_the_name_check_to_the_library(capsys, monkeypatch):
    # the library refuses the class when it reads the bound's parameters (before the names)
    _static(monkeypatch)
    argv = ["tune", "bound", "strongly_convex.nag", "--mu", "0.1", "--S1", "1",
            "--problem-class", "nonconvex", "--over", "zz"]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "not a hyper-parameter" not in err and "smooth strongly convex" in err


# ---------------------------------------------- the catalog's facts against Entry.unread
_FLAGS = ("d", "N", "eps", "delta", "G", "L", "R", "tau0", "L1", "c2", "diam", "mu", "S1", "m",
          "max_horizon")


@st.composite
def _problems(draw):
    n = draw(st.integers(2, 10**6))
    L = draw(st.floats(0.1, 100.0))
    p = {"d": draw(st.integers(1, 10**5)), "N": n,
         # the default (eps, delta) or one other pair: the c2 fit costs 0.5 s per pair
         "eps": draw(st.sampled_from([1.0, 0.3])), "delta": 1e-5,
         "G": draw(st.floats(0.01, 10.0)), "L": L, "R": draw(st.floats(0.01, 10.0))}
    for k, strat in (("tau0", st.floats(0.1, 5.0)), ("L1", st.floats(0.0, 3.0)),
                     ("c2", st.floats(0.5, 5.0)), ("diam", st.floats(0.1, 5.0)),
                     ("mu", st.floats(1e-3, 1.0).map(lambda f: f * L)),
                     ("S1", st.floats(0.01, 5.0)), ("m", st.integers(1, n)),
                     ("max_horizon", st.integers(1, 2000))):
        if draw(st.booleans()):
            p[k] = draw(strat)
    return p


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_problems())
def test_the_catalogs_reads_are_the_librarys_unread_keys(problem):
    """Where a bound's required keys are given, its ``to_params`` runs (so ``Entry.unread``
    answers, and nothing the early check pre-empts is refused first) and, among the keys the
    CLI refuses, those it does not read are exactly those the catalog does not list."""
    from dpbounds.bounds import registry

    reads = _catalog.load()["constants"]["bound_reads"]
    builtin = {r["name"] for r in _catalog.load()["rows"]["bound"]}
    for e in registry.entries():
        if e.name not in builtin:
            continue
        if any(problem.get(k) is None for k in e.requires):
            continue
        p = {**registry.DEFAULT_PROBLEM, **problem}
        e.to_params(p)  # raises nothing at a valid problem
        # the keys the CLI may refuse (a trivial bound reads G, L, R, diam, L1 whatever the
        # bound reads: G is unread by Yang et al.'s bounds where tau0 is given, but not refused)
        keys = [k for k in _FLAGS if k in problem and k not in bounds_cmd._READ_BY_TRIVIAL]
        assert sorted(e.unread(problem, keys)) == sorted(k for k in keys
                                                         if k not in reads[e.name]), e.name


def test_the_catalogs_hyperparameters_are_the_searchs():
    """``bound_hyperparameters`` is what ``search_bound`` accepts: every listed name passes
    its check and a name outside the list is refused with the list."""
    from dpbounds.bounds import registry
    from dpbounds.tuning.bound_search import search_bound

    hyper = _catalog.load()["constants"]["bound_hyperparameters"]
    checked = 0
    for e in registry.entries():
        if e.name not in hyper or not hyper[e.name]:
            continue
        problem = {"mu": 0.1, "S1": 1.0} if e.requires else {}
        with pytest.raises(ValueError) as exc:
            search_bound(e, problem, over=["zz_not_a_name"], grid=2, refine=False)
        assert str(exc.value) == (f"'zz_not_a_name' is not a hyper-parameter of {e.name} (its "
                                  f"hyper-parameters: {', '.join(hyper[e.name])})")
        checked += 1
    assert checked >= 5


def test_a_computed_bounds_own_choices_are_not_searched_even_after_an_evaluation():
    # was: after one evaluation in the process, strongly_convex.heavy_ball_lmi accepted
    # over=["alpha"] (its computation's own choice, not an input: the search moved nothing);
    # in a fresh process the same call was refused
    from dpbounds.bounds import registry
    from dpbounds.tuning.bound_search import search_bound

    e = registry.get("strongly_convex.heavy_ball_lmi")
    problem = {"mu": 0.1, "S1": 1.0, "max_horizon": 50}
    e.value(problem)
    assert "alpha" in e.theorem.hyperparameters  # the computation has named its choices
    with pytest.raises(ValueError, match="'alpha' is not a hyper-parameter of "
                                         r"strongly_convex.heavy_ball_lmi \(its "
                                         r"hyper-parameters: c\)"):
        search_bound(e, problem, over=["alpha"], grid=2, refine=False)
    # control: its declared tunable name is searched
    assert search_bound(e, problem, over=["c"], grid=2, refine=False).choices


def test_the_early_refusals_import_no_heavy_library():
    # in a fresh process (the catalog's file stands for the registry): none of the heavy
    # imports that cost 0.9-1.2 CPU-s; measured 0.15-0.19 CPU-s each (numpy is imported)
    from tests.early_checks import heavy_imports

    heavy = ("scipy", "sympy", "cvxpy", "numba", "dp_accounting", "dpbounds.bounds.registry")
    argvs = [a for a, _ in UNREAD] + [["compare", "--mu", "0.02"]]
    for argv, (rc, mods) in zip(argvs, heavy_imports(argvs, heavy), strict=True):
        assert rc == EXIT_USAGE and mods == [], (argv, mods)
    # control: a command that computes the bound imports them
    assert heavy_imports([["bound", "yang.sgd", "--no-tune"]], heavy)[0][1] != []


# ------------------------------- verify's sensitivity row: the objective's declared worst case
@pytest.mark.parametrize("mechanism, order", [("gaussian", 2), ("laplace", 1)])
def test_an_unclipped_method_is_held_to_the_objectives_worst_case(mechanism, order):
    # was: only the data set's own neighbours (a walkthrough's half-sensitivity plug-in read
    # 0.74-0.77 and passed verify --vary N). Oracle: the quadratic's per-sample gradients differ
    # by the centred offsets, sup ||e_i - e_j|| <= 2 max ||e_i - mean e||, written out
    from types import SimpleNamespace

    import numpy as np

    from dpbounds import extend as ex
    from dpbounds.objectives import QuadraticObjective

    n = 40
    off = np.random.default_rng(0).standard_normal((n, 3))
    f = QuadraticObjective(np.linspace(1.0, 2.0, 3), offsets=off)
    centred = off - off.mean(axis=0)
    worst = 2 * np.linalg.norm(centred, ord=order, axis=1).max() / n
    res = SimpleNamespace(x=np.full((2, 3), 0.3))
    step = lambda x, grad, noise, p: x - 0.1 * (grad(x) + noise)  # noqa: E731
    for divide in (1.0, 1.5, 4.0):
        m = ex.Method(f"own_{divide}", step=step, mechanism=mechanism,
                      neighbouring="replace_one", sensitivity=worst / divide)
        row = ex._sensitivity_witness(m, f, None, res, worst / divide)
        assert row["values"][0] == pytest.approx(divide, rel=1e-12)
        assert "declared worst case" in row["oracle"]
    # control: the data set's own neighbours alone read less than the worst case here
    pairs = max(np.linalg.norm(centred[i] - centred[j], ord=order)
                for i in range(n) for j in range(n)) / n
    assert pairs < worst


def test_a_study_with_no_power_over_the_bound_is_inconclusive(monkeypatch):
    # was: verify ... --trials 2 said "a bound smaller by any factor would also pass" and
    # exited 0 (walkthrough of stop 76). Oracle: the status from the ratio rows' lower ends
    from types import SimpleNamespace

    from dpbounds.verify.study import ScalingResult

    def fake(lows):
        rows = [SimpleNamespace(case="subopt over N", claim="measured/bound <= 1", gating=True,
                                holds=True, vacuous=False, failed=False, powered=True,
                                predicted=1.0, ci=(lo, 0.5)) for lo in lows]
        return SimpleNamespace(verdicts=rows, utility=("subopt",), informative=(True,) * 3,
                               regime={})

    for lows, status in (([-0.01, 0.0, -0.3], "INCONCLUSIVE"), ([-0.01, 0.02, -0.3], "PASS")):
        r = fake(lows)
        r.undetected_factor = ScalingResult.undetected_factor.fget(r)
        r.holds = ScalingResult.holds.fget(r)
        r.inconclusive = ScalingResult.inconclusive.fget(r)
        assert ScalingResult.status.fget(r) == status, lows


def test_a_step_reading_a_constant_the_run_lacks_names_it():
    # was: a raw "KeyError: 'R'" from method.run (walkthrough of stop 76)
    import numpy as np

    from dpbounds import extend as ex
    from dpbounds.objectives import QuadraticObjective

    f = QuadraticObjective(np.linspace(1.0, 2.0, 3),
                           offsets=np.random.default_rng(0).standard_normal((20, 3)))
    m = ex.Method("reads_R", step=lambda x, grad, noise, p: x - p["R"] * (grad(x) + noise),
                  mechanism="gaussian", sensitivity=lambda f, p: f.l2_sensitivity / f.n)
    with pytest.raises(ValueError, match=r"reads_R: the step reads params\['R'\], which this "
                                         r"run does not give .*run\(\.\.\., R=\.\.\.\)"):
        m.run(f, epsilon=1.0, delta=1e-5, steps=3, seed=0)
    # control: given, it runs; a KeyError of the step's own (not a missing param) is its own
    assert m.run(f, epsilon=1.0, delta=1e-5, steps=3, seed=0, R=0.1).trace.shape[1] == 4
    bad = ex.Method("own_key", step=lambda x, grad, noise, p: {}["zz"] if p else x,
                    mechanism="gaussian", sensitivity=lambda f, p: f.l2_sensitivity / f.n)
    with pytest.raises(KeyError):
        bad.run(f, epsilon=1.0, delta=1e-5, steps=3, seed=0, zz=1.0)


SAMPLED = '''
from dpbounds import extend as ex
def step(x, grad, noise, p):
    return x - p["alpha"] * (grad(x) + noise)
m = ex.Method("sampled_{tag}", step=step, sampling="poisson", batch_size="B", clip=1.0{lin})
ex.audit_setting(m, params={{"alpha": 0.5, "B": 10}})
'''


@pytest.mark.parametrize("lin", ["", ", linear=ex.LinearMomentum(alpha='alpha', beta=0.0)"])
def test_a_sampled_method_without_a_theorem_is_pointed_to_tuning_by_runs(tmp_path, capsys,
                                                                         lin):
    # was: "nor a linear form (linear=LinearMomentum(...))"; with one declared, "samples
    # mini-batches, which the worst case over quadratics does not model" (walkthrough, stop 76)
    from tests.plugin_state import plugins_loaded

    tag = len(lin)
    plug = tmp_path / f"sampled_{tag}.py"
    plug.write_text(SAMPLED.format(tag=tag, lin=lin))
    with plugins_loaded([]):
        assert main(["--plugin", str(plug), "tune", f"sampled_{tag}", "--mu", "0.1", "--L", "1",
                     "--d", "4", "--N", "1000", "--eps", "1", "--quiet"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "samples mini-batches (the worst case of a run models full batches)" in err
    assert "dpbounds.tuning.tune_by_runs" in err.splitlines()[-1]
    assert "nor a linear form" not in err


def test_audit_and_calibrate_warn_at_a_delta_that_is_no_privacy(capsys):
    # was: audit at delta 0.99 printed "claimed eps = 0 ... consistent" without a word, and
    # calibrate at delta > 1/N too (fuzz round 9). Oracle: delta > 1/N (0.1 where N is
    # unknown), the threshold of dpbounds.privacy.limits, written out
    from pathlib import Path

    from tests.plugin_state import plugins_loaded

    assert main(["audit", "dp_gd_gaussian", "--quick", "--delta", "0.99", "--json"]) == 0
    assert "warning: delta=0.99 > 0.1 (n unknown)" in capsys.readouterr().err
    assert main(["audit", "dp_gd_gaussian", "--quick", "--delta", "0.05", "--json"]) == 0
    assert "warning" not in capsys.readouterr().err  # control: 0.05 < 0.1
    example = Path(__file__).parents[1] / "examples" / "dp_gd_smooth.py"
    with plugins_loaded([example]):
        argv = ["--plugin", str(example), "calibrate", "dp_gd_smooth", "--steps", "10",
                "--N", "100", "--G", "1", "--quiet"]
        assert main([*argv, "--delta", "0.02"]) == 0
        assert "warning: delta=0.02 > 1/n = 0.01" in capsys.readouterr().err
        assert main([*argv, "--delta", "0.005"]) == 0
        assert "warning" not in capsys.readouterr().err


def test_a_bound_that_overflows_names_the_bound_and_the_input():
    # was: "kamath.algorithm3_utility (BST14, average form): bound is not finite at these
    # parameters" for `bound kamath.bst14 --diam 1e300` (the theorem object, no input; fuzz 9)
    from dpbounds.bounds import registry

    e = registry.get("kamath.bst14")
    with pytest.raises(ValueError, match=r"^convex.noisy_projected_sgd: the bound overflows at "
                                         r"this problem \(diam = 1e\+300 is beyond"):
        e.value({"diam": 1e300})
    # control: a large but representable diameter evaluates (bound G diam sqrt(d)/(n eps) ...)
    assert math.isfinite(e.value({"diam": 1e100}))


# --------------------------------------------- privacy compose --from-dp-event (fuzz round 10)
@pytest.mark.parametrize("text, words", [
    ("noise_multiplier: 1:00", "must be a number, got '1:00'"),   # was read as 60
    ("noise_multiplier: 1_0", "must be a number, got '1_0'"),     # was 10
    ("noise_multiplier: 0x10", "must be a number, got '0x10'"),   # was 16
    # an explicit tag went to YAML 1.1's own constructors (review of stop 76)
    ("noise_multiplier: !!float 1:00", "'1:00' is not a number as JSON writes it"),
    ("noise_multiplier: !!int 0x10", "'0x10' is not a number as JSON writes it"),
])
def test_yaml_reads_numbers_as_json_writes_them(text, words, tmp_path, capsys):
    pytest.importorskip("yaml")
    f = tmp_path / "e.yaml"
    f.write_text(f"class_name: GaussianDpEvent\n{text}\n")
    assert main(["privacy", "compose", "--from-dp-event", str(f)]) == EXIT_USAGE
    assert words in capsys.readouterr().err


def test_yaml_reads_json_numbers_and_refuses_aliases(tmp_path, capsys):
    pytest.importorskip("yaml")
    import json

    # oracle: the same event written as JSON
    for value in ("1e1", "1.5", "2"):
        y, j = tmp_path / "e.yaml", tmp_path / "e.json"
        y.write_text(f"class_name: GaussianDpEvent\nnoise_multiplier: {value}\n")
        j.write_text(json.dumps({"class_name": "GaussianDpEvent",
                                 "noise_multiplier": float(value)}))
        assert main(["privacy", "compose", "--from-dp-event", str(y), "--json"]) == 0
        from_yaml = json.loads(capsys.readouterr().out)
        assert main(["privacy", "compose", "--from-dp-event", str(j), "--json"]) == 0
        from_json = json.loads(capsys.readouterr().out)
        eps = [[r.get("epsilon") for r in d["results"]] for d in (from_yaml, from_json)]
        assert eps[0] == eps[1] and None not in eps[0], value
    # a 640-byte file of nested aliases grew past 770 MB: refused at the first alias
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text('- &a {"class_name": "GaussianDpEvent", "noise_multiplier": 100.0}\n'
                    '- &b {"class_name": "ComposedDpEvent", "events": [*a, *a, *a]}\n')
    assert main(["privacy", "compose", "--from-dp-event", str(bomb)]) == EXIT_USAGE
    assert "an alias (*name)" in capsys.readouterr().err


def test_a_discrete_laplace_event_under_replace_one_is_refused():
    # was: read as pure eps = a s under replace_one, where dp_accounting defines the event
    # under add/remove only (a C-relative reading would make it 2 a s; fuzz round 10)
    import dp_accounting

    from dpbounds.privacy.events import from_dp_event

    ev = dp_accounting.dp_event.DiscreteLaplaceDpEvent(1.0, 1)
    with pytest.raises(ValueError, match="DiscreteLaplaceDpEvent under REPLACE_ONE"):
        from_dp_event(ev, neighbouring="replace_one")
    # control: under add/remove it is pure (a s)-DP, its largest privacy loss
    mech = from_dp_event(ev, neighbouring="add_remove")
    assert mech.epsilon == pytest.approx(1.0, rel=1e-12)


# --------------------------------------------------- results kept when standard output fails
def test_a_closed_stdout_is_an_output_error_not_an_internal_one():
    # was: every command with `>&-` exited 4 ("internal error: AttributeError: 'NoneType'
    # object has no attribute 'flush'") and verify lost its result (fuzz round 10)
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "dpbounds", "bound", "--list"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=120, close_fds=True,
                       preexec_fn=lambda: __import__("os").close(1))
    assert p.returncode == EXIT_USAGE
    assert p.stderr.strip() == ("dpbounds: error: could not write standard output (standard "
                                "output is closed)")


def test_tune_keeps_its_result_when_stdout_is_full(tmp_path, monkeypatch, capsys):
    # was: `tune hb ... > /dev/full` computed, then printed "could not write the output" and
    # the table was gone (verify and audit kept theirs). Oracle: the kept file holds the same
    # table a writable stdout prints
    import re
    import tempfile

    argv = ["tune", "runs", "gd", "--problem", "quadratic", "--N", "100", "--d", "3", "--mu",
            "0.1", "--search", "alpha=0.5,1", "--search", "T=3,6", "--trials", "3", "--quiet"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("builtins.print", lambda *a, file=None, **k: (
        full() if file is None else __import__("sys").stderr.write(" ".join(map(str, a)) + "\n")))
    assert main(argv) == EXIT_USAGE
    monkeypatch.undo()
    err = capsys.readouterr().err
    kept = re.search(r"the result is kept in (\S+)", err)
    assert kept, err
    with open(kept.group(1), encoding="utf-8") as fh:
        assert fh.read() == table


def test_a_theorem_written_with_plain_sympy_symbols_keeps_its_exponents():
    # was: sp.symbols("d N eps G") evaluated right but read "scaling: 1" (the notation's d is
    # a positive symbol, sympy's plain d another one; fuzz round 10). Oracle: the same
    # theorem written with ex.symbols, and the exponents of G sqrt(d) / (N eps) by hand
    import sympy as sp

    from dpbounds import extend as ex

    d, N, eps, G, delta = sp.symbols("d N eps G delta")
    plain = ex.theorem("nonconvex.plain_76", G * sp.sqrt(d * sp.log(1 / delta)) / (N * eps),
                       quantity="E||grad F||",
                       problem_class="nonconvex", register=False,
                       source=ex.Source("note", "Prop. 1", ex.DERIVED),
                       assumptions=[ex.Assumption("eps <= log(1/delta)",
                                                  eps <= sp.log(1 / delta))])
    d2, N2, eps2, G2 = ex.symbols("d N eps G")
    delta2 = ex.symbols("delta")[0]
    ours = ex.theorem("nonconvex.ours_76", G2 * sp.sqrt(d2 * sp.log(1 / delta2)) / (N2 * eps2),
                      quantity="E||grad F||", problem_class="nonconvex", register=False,
                      source=ex.Source("note", "Prop. 1", ex.DERIVED))
    s = plain.scaling()
    assert (s.powers["d"], s.powers["N"], s.powers["eps"]) == (
        sp.Rational(1, 2), -1, -1)
    assert dict(s.powers) == dict(ours.scaling().powers)
    # the assumption is checked on the notation's symbols too (eps = 20 > log(1e5))
    with pytest.raises(ValueError, match="eps <= log"):
        plain.value({"eps": 20.0, "delta": 1e-5})


TIMEVARY = '''
from dpbounds import extend as ex
def step(x, grad, noise, p, memory):
    prev = memory.get("prev", x)
    memory["prev"] = x
    t = memory.get("t", 0); memory["t"] = t + 1
    a = p["alpha"] if t < {when} else 3.0 * p["alpha"]
    return x + p["beta"] * (x - prev) - a * (grad(x) + noise)
m = ex.Method("timevary_{when}", step=step, mechanism="laplace", neighbouring="replace_one",
              sensitivity=lambda f, p: f.l1_sensitivity / f.n,
              linear=ex.LinearMomentum(alpha="alpha", beta="beta"))
ex.audit_setting(m, params={{"alpha": 0.5, "beta": 0.3}})
'''


def test_a_step_that_leaves_its_linear_form_after_step_8_is_caught(tmp_path, capsys):
    # was: check_linear ran 8 steps, and a step whose alpha triples from step 10 on was tuned
    # "within 0.0999% of the best" with a certified worst case of a run it does not make
    from tests.plugin_state import plugins_loaded

    argv = ["tune", "--mu", "0.1", "--L", "1", "--d", "4", "--N", "1000", "--eps", "1",
            "--S1", "1", "--R", "1", "--max-horizon", "30", "--quiet"]
    plug = tmp_path / "timevary_10.py"
    plug.write_text(TIMEVARY.format(when=10))
    with plugins_loaded([]):
        assert main(["--plugin", str(plug), argv[0], "timevary_10", *argv[1:]]) == EXIT_USAGE
    assert "does not follow its declared linear form" in capsys.readouterr().err
    # control: the same step without the change (it never reaches step 10^6) is tuned
    plug = tmp_path / "timevary_1000000.py"
    plug.write_text(TIMEVARY.format(when=10**6))
    with plugins_loaded([]):
        assert main(["--plugin", str(plug), argv[0], "timevary_1000000", *argv[1:]]) == 0


def test_a_sweep_cells_key_holds_the_normal_stream(monkeypatch):
    # was: a store written with NumPy's normals served its cells to DPBOUNDS_NORMALS=fast
    # (fuzz round 10); the default's keys are unchanged (stores of earlier stops stay valid)
    import numpy as np

    from dpbounds.sweep.cells import Cell, cell_key

    cell = Cell(np.linspace, {"num": 3})
    monkeypatch.delenv("DPBOUNDS_NORMALS", raising=False)
    default = cell_key(cell, "0.1.0", "")
    monkeypatch.setenv("DPBOUNDS_NORMALS", "numpy")
    assert cell_key(cell, "0.1.0", "") == default
    monkeypatch.setenv("DPBOUNDS_NORMALS", "fast")
    assert cell_key(cell, "0.1.0", "") != default


def test_two_theorems_of_one_name_in_one_plugin_are_refused(tmp_path, capsys):
    # was: the last registration silently won (`bound nonconvex.x` read 1e-4; fuzz round 10)
    from tests.plugin_state import plugins_loaded

    body = ('from dpbounds import extend as ex\n'
            'ex.theorem("nonconvex.dup_76", "d/N", quantity="q", problem_class="nonconvex", '
            'source=ex.Source("a", "b", ex.DERIVED))\n')
    plug = tmp_path / "dup_76.py"
    plug.write_text(body + body.split("\n", 1)[1].replace("d/N", "d/(1000*N)"))
    with plugins_loaded([]):
        assert main(["--plugin", str(plug), "bound", "nonconvex.dup_76"]) == EXIT_USAGE
    assert "two theorems are named 'nonconvex.dup_76' in one plug-in" in capsys.readouterr().err
    # control: one of them loads and evaluates (d/N at the default problem, d=100, N=1e5)
    plug.write_text(body)
    with plugins_loaded([]):
        assert main(["--plugin", str(plug), "bound", "nonconvex.dup_76", "--no-tune"]) == 0
    assert "0.001" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["bound", "yang.sgd", "--smallest", "N", "--target", "0.5", "--N", "5"],
     "--N is what --smallest N searches: leave it out"),
    (["bound", "yang.sgd", "--largest", "eps", "--target", "0.5", "--epsilon", "5"],
     "--epsilon is what --largest eps searches"),
    (["compare", "--mu", "0.1", "--problem-class", "nonconvex"],
     "--mu is not read by any bound compared for this nonconvex problem"),
])
def test_a_flag_that_was_silently_ignored_is_refused(argv, words, capsys, monkeypatch):
    # was: --N beside --smallest N ignored; mu printed in compare's problem line and read
    # nowhere where --problem-class set the class (fuzz round 10)
    _static(monkeypatch)
    assert main(argv) == EXIT_USAGE
    assert words in capsys.readouterr().err
    if argv[0] == "compare":  # the library's own check says the same with the early one off
        from tests.early_checks import assert_early_is_library

        assert_early_is_library(argv, capsys, monkeypatch,
                                [(bounds_cmd, "_refuse_nothing_compared", lambda *a: None)],
                                words)


def test_mu_still_sets_the_class_where_no_problem_class_does(capsys, monkeypatch):
    # control: `compare --mu 0.02 --S1 1` compares the strongly convex bounds (mu is read)
    _static(monkeypatch)
    assert main(["compare", "--mu", "0.02", "--S1", "1", "--no-tune", "--quiet"]) == 0
    assert "problem class: strongly_convex" in capsys.readouterr().out


def test_a_number_below_float64_and_a_delta_at_its_edge(capsys):
    # was: --delta 1e-400 "got 0.0"; --delta 5e-324 "delta must lie in (0, 1), got 0.0" (delta/T
    # underflowed inside the classic rows; fuzz round 10)
    with pytest.raises(SystemExit) as stop:  # argparse's own refusal
        main(["privacy", "--delta", "1e-400", "--epsilon", "1", "--steps", "10"])
    assert stop.value.code == EXIT_USAGE
    assert "'1e-400' is below the smallest float64" in capsys.readouterr().err
    assert main(["privacy", "--delta", "5e-324", "--epsilon", "1", "--steps", "10",
                 "--json"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)
    classic = [r for r in rows if r["accountant"].startswith("classic")]
    assert classic and all(r["noise"] is None for r in classic)  # n/a: delta / T is 0
    analytic = next(r for r in rows if r["accountant"] == "analytic Gaussian (exact)")
    assert analytic["noise"] > 0
    # control: a zero literal is still the range error it was
    assert main(["privacy", "--delta", "0", "--epsilon", "1", "--steps", "10"]) == EXIT_USAGE
    assert "delta must lie in (0.0, 1.0), got 0.0" in capsys.readouterr().err


def test_compose_reads_accountant_names_in_any_case_and_refuses_an_empty_curve_value(capsys):
    # was: --accountant RDP refused (other choices read any case); --curve 1,,2 read as 1,2; a
    # curve no accountant gives printed an eps column and nothing else (fuzz round 10)
    import json

    ev = ["privacy", "compose", "--event", "gaussian:z=1,steps=10"]
    assert main([*ev, "--accountant", "RDP", "--json"]) == 0
    upper = json.loads(capsys.readouterr().out)["results"][0]
    assert main([*ev, "--accountant", "rdp", "--json"]) == 0
    lower = json.loads(capsys.readouterr().out)["results"][0]
    assert upper["accountant"] == "rdp" and upper["epsilon"] == lower["epsilon"]
    assert main([*ev, "--curve", "1,,2"]) == EXIT_USAGE
    assert "--curve has an empty value, got '1,,2'" in capsys.readouterr().err
    assert main([*ev, "--accountant", "pure", "--curve", "1,2"]) == 0
    assert "delta(eps): no accountant asked for gives a curve" in capsys.readouterr().out


def test_path_and_help_wording(tmp_path, capsys):
    # was: "the folder 'f.py' does not exist" for a file; demo --json pointed to dpbounds --help
    f = tmp_path / "f.py"
    f.write_text("")
    assert main(["verify", "strongly_convex.nag", "--quick", "--plot",
                 str(f / "x.png")]) == EXIT_USAGE
    assert "is a file, not a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["demo", "--json"])
    assert "(see 'dpbounds demo --help')" in capsys.readouterr().err


def test_a_pld_composition_beyond_its_grid_cap_is_na_not_gigabytes(capsys):
    # was: gaussian:z=100,q=1e-6,steps=1e9 grew past 8 GB under the default accountants
    # (1e7 steps: 2.8 GB, 20 s); now the PLD row is n/a in a second and RDP answers
    import json

    from dpbounds.privacy._pld import MAX_FFT_POINTS

    assert main(["privacy", "compose", "--event", "gaussian:z=100,q=1e-6,steps=1e9",
                 "--json"]) == 0
    rows = {r["accountant"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert rows["pld"].get("epsilon") is None
    assert f"(at most {MAX_FFT_POINTS:,})" in rows["pld"]["reason"]
    assert 0 < rows["rdp"]["epsilon"] < 1e-3  # control: the RDP answer (5.93e-4)


@pytest.mark.parametrize("kwargs, words", [
    ({"constants": {"G": "abc"}}, "constants must map names to finite numbers, got 'G': 'abc'"),
    ({"constants": {"G": None}}, "constants must map names to finite numbers, got 'G': None"),
    ({"scaling": {"zz": 1}}, "scaling names 'zz', which the bound does not have"),
])
def test_theorem_inputs_are_checked_where_they_are_declared(kwargs, words):
    # was: a ValueError naming nothing, a TypeError, and an exponent of 0 for "zz" (fuzz 10)
    import sympy as sp

    from dpbounds import extend as ex

    d, N = ex.symbols("d N")
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        ex.theorem("nonconvex.in_76", sp.sqrt(d) / N, quantity="q", problem_class="nonconvex",
                   source=ex.Source("a", "b", ex.DERIVED), register=False, **kwargs)


def test_a_callable_bounds_parameters_are_checked_against_its_signature():
    # was: a raw TypeError at the first value() (fuzz round 10)
    from dpbounds import extend as ex

    src = ex.Source("a", "b", ex.DERIVED)
    with pytest.raises(ValueError, match="parameters names 'N', which the callable bound does "
                                         "not take"):
        ex.theorem("nonconvex.c_76", lambda d: d, parameters=("d", "N"), quantity="q",
                   problem_class="nonconvex", source=src, register=False)
    with pytest.raises(ValueError, match="the callable bound needs 'N'"):
        ex.theorem("nonconvex.c_76", lambda d, N: d / N, parameters=("d",), quantity="q",
                   problem_class="nonconvex", source=src, register=False)
    # control: matching names (and **kwargs) are accepted and evaluate
    e = ex.theorem("nonconvex.c_76", lambda d, N: d / N, parameters=("d", "N"), quantity="q",
                   problem_class="nonconvex", source=src, register=False)
    assert e.value({"d": 10, "N": 100}) == pytest.approx(0.1)
    ex.theorem("nonconvex.c_76", lambda **p: p["d"], parameters=("d",), quantity="q",
               problem_class="nonconvex", source=src, register=False)


def test_a_steps_own_key_error_is_not_taken_for_a_missing_param():
    # review of stop 76: a step's own `table["b"]` was reported as "the step reads params['b']"
    import numpy as np

    from dpbounds import extend as ex
    from dpbounds.objectives import QuadraticObjective

    f = QuadraticObjective(np.linspace(1.0, 2.0, 3),
                           offsets=np.random.default_rng(0).standard_normal((20, 3)))
    table = {"a": 0.1}
    m = ex.Method("own_table", step=lambda x, grad, noise, p: x - table["b"] * grad(x),
                  mechanism="gaussian", sensitivity=lambda f, p: f.l2_sensitivity / f.n)
    with pytest.raises(KeyError) as exc:
        m.run(f, epsilon=1.0, delta=1e-5, steps=2, seed=0)
    assert not isinstance(exc.value, ValueError) and exc.value.args == ("b",)


def test_sims_interrupted_exits_130_with_one_line(monkeypatch, capsys, tmp_path):
    # was: a KeyboardInterrupt traceback and a leaked-semaphore warning (fuzz round 10);
    # paper_figs already said it in one line
    import importlib

    sims_main = importlib.import_module("sims.__main__")

    def interrupted(self, cells, desc=""):
        raise KeyboardInterrupt

    monkeypatch.setattr(sims_main.SweepOptions, "run", interrupted)
    assert sims_main.main(["--only", sims_main.STUDIES[0], "--store", str(tmp_path)]) == 130
    err = capsys.readouterr().err
    assert "python -m sims: interrupted; finished cells are kept in" in err
    assert "Traceback" not in err


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    # was: XDG_CACHE_HOME=relative/dir made the cost cache under the current folder (fuzz 10);
    # the XDG base directory spec: a relative path is invalid and is to be ignored
    import os

    from dpbounds.cli._cost_cache import default_path

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert default_path() == tmp_path / ".cache" / "dpbounds" / "verify-costs.json"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "abs"))  # control: an absolute one
    assert default_path() == tmp_path / "abs" / "dpbounds" / "verify-costs.json"
    assert os.path.isabs(default_path())


def test_an_add_remove_method_is_held_to_two_g_over_n():
    # the add/remove branch of the objective's worst case: removing one record moves the mean
    # by |mean - g_i| / (n - 1) <= 2 G / n for per-sample gradients of norm <= G (oracle
    # written out with the Huber well's declared G; the code reads its l2_sensitivity)
    from types import SimpleNamespace

    import numpy as np

    from dpbounds import extend as ex
    from dpbounds.verify.problems import problem

    f = problem("huber_well").build(40, 3, seed=0).objective
    G, n = float(f.gradient_bound), int(f.n)
    assert np.isfinite(G)
    worst = 2 * G / n
    res = SimpleNamespace(x=np.full((2, 3), 0.3))
    step = lambda x, grad, noise, p: x - 0.1 * (grad(x) + noise)  # noqa: E731
    for divide in (1.0, 2.0):
        m = ex.Method(f"ar_{divide}", step=step, mechanism="gaussian",
                      neighbouring="add_remove", sensitivity=worst / divide)
        row = ex._sensitivity_witness(m, f, None, res, worst / divide)
        assert row["values"][0] == pytest.approx(divide, rel=1e-12)
