"""Edges of the fifth round (stop 71), each test failing before its fix: the fourth fuzz's
leftovers and what the fifth fuzz found. In-process ``main`` where no plug-in is loaded."""

from __future__ import annotations

import math

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


# --------------------------------------- a plug-in step that drops or scales its noise
def _probe_share(step, memory: bool = False) -> float:
    """The post-processing share a white-box tap measures on a 3-step run of ``step``."""
    import numpy as np

    from dpbounds import extend as ex
    from dpbounds.objectives import QuadraticObjective

    f = QuadraticObjective(np.linspace(1.0, 2.0, 4),
                           offsets=np.random.default_rng(0).standard_normal((10, 4)))
    m = ex.Method("probe_me", step=step, mechanism="gaussian", sensitivity=0.1)
    with ex._release_tap() as tap:
        m.run(f, epsilon=1.0, delta=1e-5, steps=3, trials=4, seed=0, params={"eta": 0.1})
    return tap.post_processing


def test_the_release_probe_reads_what_the_step_does_with_its_noise():
    import numpy as np

    # the oracle: for x - eta (g + c z) - k g the shifted pair (g + D, z - D) moves the output
    # by (eta (1 - c) + k) |D| against (eta + k) |D| for the gradient's shift alone
    cases = {
        "correct": (lambda x, g, z, p: x - p["eta"] * (g(x) + z), 0.0),
        "dropped": (lambda x, g, z, p: x - p["eta"] * g(x) + 0.0 * z, 1.0),
        "halved": (lambda x, g, z, p: x - p["eta"] * (g(x) + 0.5 * z), 0.5),
        # a second, unnoised query at the release's point gets the release's shift (stop
        # 72): (eta + k) |D| for the shift alone, k |D| for the same release
        "second query": (lambda x, g, z, p: x - p["eta"] * (g(x) + z) - 0.01 * g(x),
                         0.01 / (0.1 + 0.01)),
    }
    for name, (step, share) in cases.items():
        assert _probe_share(step) == pytest.approx(share, abs=1e-9), name
    # post-processing of the release, however nonlinear or far from the origin, reads 0
    for step in (lambda x, g, z, p: x - p["eta"] * np.clip(g(x) + z, -1.0, 1.0),
                 lambda x, g, z, p: (x + 1e9) - p["eta"] * (g(x) + z) - 1e9,
                 lambda x, g, z, p: x - 1e-12 * (g(x) + z)):
        assert _probe_share(step) == 0.0

    def momentum(x, g, z, p, memory):  # a step with memory: copied for each probe call
        v = 0.5 * memory.get("v", 0.0 * x) - p["eta"] * (g(x) + z)
        memory["v"] = v
        return x + v

    assert _probe_share(momentum) == 0.0

    def raw_momentum(x, g, z, p, memory):  # the review's: noiseless gradients remembered
        m = 0.5 * memory.get("m", 0.0 * x) + g(x)
        memory["m"] = m
        return x - p["eta"] * (m + z)

    # each output is a function of its release, the memory handed on is not: its share is
    # the memory's move, 1 (the gradient's shift carried whole)
    assert _probe_share(raw_momentum) == pytest.approx(1.0, abs=1e-9)

    def in_place(x, g, z, p):  # updates its argument: the probe works on copies
        x -= p["eta"] * (g(x) + z)
        return x

    assert _probe_share(in_place) == 0.0


def test_the_probe_leaves_the_run_as_it_is():
    # the review's in-place step: the probe's own calls changed the run's numbers (grad_avg
    # 0.4452 -> 0.4829); a verify run probes, an unprobed run does not: the same iterates
    import numpy as np

    from dpbounds import extend as ex
    from dpbounds.objectives import QuadraticObjective

    f = QuadraticObjective(np.linspace(1.0, 2.0, 4),
                           offsets=np.random.default_rng(0).standard_normal((10, 4)))

    def in_place(x, g, z, p, memory):
        memory["t"] = memory.get("t", 0) + 1
        x -= p["eta"] * (g(x) + z)
        return x

    m = ex.Method("in_place_probe", step=in_place, mechanism="gaussian", sensitivity=0.1)
    kw = dict(epsilon=1.0, delta=1e-5, steps=20, trials=3, seed=4, params={"eta": 0.1})
    plain = m.run(f, **kw).x_numpy()
    with ex._post_processing_probe() as probe:
        probed = m.run(f, **kw).x_numpy()
    assert np.array_equal(plain, probed) and probe.post_processing == 0.0


PLUGIN = '''
import sympy as sp
from dpbounds import extend as ex
d, N, eps, delta, G, L, R, T = ex.symbols("d N eps delta G L R T")
rho = eps**2 / (8 * sp.log(1 / delta))
bound = ex.theorem(
    "nonconvex.{name}", sp.sqrt(2 * L * R / T + 2 * d * G**2 * T / (N**2 * rho)),
    quantity="q", problem_class="nonconvex_smooth",
    hyperparameters={{"T": N * sp.sqrt(L * R * rho / d) / G, "eta": 1 / L}},
    source=ex.Source("a test", "P", ex.DERIVED))
method = ex.Method("{name}", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + {c} * noise),
                   mechanism="gaussian", neighbouring="replace_one",
                   sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)
ex.study(method, bound, measure="grad_avg")
ex.audit_setting(method, steps=5, params={{"eta": 1.0}})
'''


@pytest.mark.parametrize(("c", "status"), [("0.0", 1), ("0.5", 1), ("1.0", 0)])
def test_audit_and_verify_fail_a_plugin_step_that_drops_or_scales_its_noise(tmp_path, c, status):
    # was: the audit read the releases dpbounds formed (query + drawn noise) and verify the
    # drawn noise, so x - eta (grad(x) + 0 * noise) read the correct method's numbers, bit for
    # bit, and both exited 0
    import subprocess
    import sys

    name = {"0.0": "dropped_gd", "0.5": "halved_gd", "1.0": "correct_gd"}[c]
    plugin = tmp_path / f"{name}.py"
    plugin.write_text(PLUGIN.format(name=name, c=c))
    run = [sys.executable, "-m", "dpbounds", "--plugin", str(plugin)]
    audit = subprocess.run([*run, "audit", name, "--quick", "--quiet"], capture_output=True,
                           text=True, timeout=600)
    assert audit.returncode == status, audit.stdout + audit.stderr
    assert ("is not a function of its release" in audit.stdout) == (status == 1)
    verify = subprocess.run([*run, "verify", f"nonconvex.{name}", "--vary", "N", "--quick"],
                            capture_output=True, text=True, timeout=600)
    assert verify.returncode == (1 if status else 0), verify.stdout + verify.stderr
    row = next(ln for ln in verify.stdout.splitlines() if "post_processing over N" in ln)
    assert (" NO " in row) == (status == 1), row


# ------------------------------------------ tune bound over DP-NAG's / DP-MASG's step factor
@pytest.mark.parametrize("method", ["nag", "masg"])
def test_tune_bound_reads_the_step_factor_it_searches(method):
    # was: the evaluator never read c, so every grid point held the c = 1 bound (`--range c
    # 1e-12 1` printed 1.18e-5 "at c = 1e-12", where the bound there is 24x larger)
    import numpy as np

    from dpbounds.bounds import registry
    from dpbounds.bounds.strongly_convex.nesterov_dp import dp_accelerated_bound
    from dpbounds.extend import tune

    problem = dict(mu=0.01, S1=10.0, d=100, eps=0.5, N=1000)
    entry = registry.get(f"strongly_convex.{method}")
    p = entry.params(problem)
    # the oracle: the paper's computation at each c of a dense scan, not through the search
    cs = np.geomspace(1e-3, 1.0, 400)
    scan = []
    for c in cs:
        try:
            scan.append(dp_accelerated_bound(p, method, float(c))[0])
        except ValueError:
            scan.append(np.inf)
    assert scan[0] != scan[-1]  # control: the bound moves with c here
    res = tune(f"strongly_convex.{method}", problem)
    tuned = next(r for r in res.choices if r.label == "tuned")
    c = tuned.hyperparameters["c"]
    assert tuned.bound == pytest.approx(dp_accelerated_bound(p, method, c)[0], rel=1e-12)
    assert tuned.bound <= min(scan) * (1 + 1e-3)
    # each grid value is the bound at its own c
    assert entry.theorem.evaluate(ignore_extra=True, c=1e-3, **p) == pytest.approx(scan[0])


def test_an_edge_where_the_bound_ends_is_not_called_the_search_ranges():
    from dpbounds.extend import tune

    res = tune("strongly_convex.nag", dict(mu=0.1, S1=1.0), ranges={"c": (1e-12, 1.0)})
    text = "\n".join(res.notes)
    assert "c = 1 is at the upper end of where the bound is defined" in text
    assert "widen it" not in text
    # control: an edge inside the bound's domain still says so
    res = tune("strongly_convex.nag", dict(mu=0.01, S1=10.0, d=100, eps=0.5, N=1000),
               ranges={"c": (1e-3, 0.2)})
    assert "widen it" in "\n".join(res.notes)


# ------------------------------------------------ a plug-in's callable bound out of range
@pytest.mark.parametrize(("value", "words"), [
    (-1.0, "below 0, but it bounds an error"), (complex(1, 1), "a complex number"),
    (float("nan"), "it is not defined there"), ("abc", "not a real number"),
    (None, "not a real number"), (True, "not a real number"), ([1.0, 2.0], "not a real number"),
    ("mpc", "a complex number")])
def test_a_callable_bound_that_returns_no_bound_is_refused_by_name(value, words):
    # was: -1 won `compare` ("best: nonconvex.callable_b"), a complex number stopped
    # `bound` and `compare` with an internal error, NaN printed "bound: nan" with exit 0
    from dpbounds import extend as ex

    if value == "mpc":  # mpmath.sqrt(-2): its real part 0 was read as the bound (the review)
        value = pytest.importorskip("mpmath").sqrt(-2)
    entry = ex.theorem("nonconvex.cb_fuzz5", lambda d, N, eps: value,
                       parameters=("d", "N", "eps"), quantity="q", problem_class="nonconvex",
                       source=ex.Source("a test", "P", ex.DERIVED), register=False)
    with pytest.raises(ValueError, match=words) as exc:
        entry.value({"d": 10, "N": 100, "eps": 1.0})
    assert "nonconvex.cb_fuzz5" in str(exc.value)
    # invalid there: NaN in a scan, not a number that wins
    assert math.isnan(entry.theorem.evaluate(d=10, N=100, eps=1.0, invalid="nan"))


def test_a_callable_bound_that_is_a_number_is_read_as_it_is():
    import numpy as np

    from dpbounds import extend as ex

    for v, want in ((0.25, 0.25), (np.float32(0.5), 0.5), (complex(2, 0), 2.0),
                    (float("inf"), float("inf")), (0, 0.0)):
        entry = ex.theorem("nonconvex.cb_ok_fuzz5", lambda d, N, eps, v=v: v,
                           parameters=("d", "N", "eps"), quantity="q",
                           problem_class="nonconvex",
                           source=ex.Source("a test", "P", ex.DERIVED), register=False)
        assert entry.value({"d": 10, "N": 100, "eps": 1.0}) == want


# ---------------------------------------------------- a replay mutant that cannot act
def test_the_cyclic_batches_replay_is_refused_under_add_remove():
    # was: under add/remove DP-SGD samples by Poisson, the mutant (which replaces the
    # without-replacement batches) changed nothing, and every row read "yes", exit 0
    from dpbounds.verify.replay import replay

    with pytest.raises(ValueError, match="does not apply under neighbouring 'add_remove'"):
        replay("dp_sgd", mutation="cyclic_batches", neighbouring="add_remove")
    assert main(["audit", "dp_sgd", "--replay", "--mutant", "cyclic_batches",
                 "--neighbouring", "add_remove", "--quiet"]) == 2
    # control: under replace-one it is caught (exit 1)
    verdicts = replay("dp_sgd", mutation="cyclic_batches")
    assert any(v.failed for v in verdicts)


# ---------------------------------------------------- malformed fields of a dp_event file
@pytest.mark.parametrize(("doc", "words"), [
    ({"class_name": "ComposedDpEvent", "events": {"class_name": "NoOpDpEvent"}},
     "events of ComposedDpEvent must be a list of events"),
    ({"class_name": "SingleEpochTreeAggregationDpEvent", "noise_multiplier": 2,
      "step_counts": None}, "must be a whole number or a list of them"),
    ({"class_name": "SingleEpochTreeAggregationDpEvent", "noise_multiplier": 2,
      "step_counts": 1023.5}, "must be a whole number or a list of them"),
    ({"class_name": "SingleEpochTreeAggregationDpEvent", "noise_multiplier": 2,
      "step_counts": "1023"}, "must be a whole number or a list of them"),
    ({"class_name": "SingleEpochTreeAggregationDpEvent", "noise_multiplier": 2,
      "step_counts": [[3]]}, "must be a whole number or a list of them"),
    ({"class_name": "SingleEpochTreeAggregationDpEvent", "noise_multiplier": 2,
      "step_counts": [True]}, "must be a whole number or a list of them"),
    ({"class_name": "SingleEpochTreeAggregationDpEvent", "noise_multiplier": 2,
      "step_counts": 1e300}, "must be an integer in"),
])
def test_a_malformed_dp_event_field_is_named_not_an_internal_error(tmp_path, capsys, doc, words):
    # was: exit 4 ("internal error: TypeError: 'float' object is not iterable"), and
    # step_counts true read as one step
    import json

    pytest.importorskip("dp_accounting")
    path = tmp_path / "event.json"
    path.write_text(json.dumps(doc))
    assert main(["privacy", "compose", "--from-dp-event", str(path)]) == 2
    assert words in capsys.readouterr().err
    # control: the same event, well formed, composes
    good = dict(doc, step_counts=[1023]) if "step_counts" in doc else {
        "class_name": "ComposedDpEvent", "events": [{"class_name": "NoOpDpEvent"},
                                                     {"class_name": "GaussianDpEvent",
                                                      "noise_multiplier": 2.0}]}
    path.write_text(json.dumps(good))
    assert main(["privacy", "compose", "--from-dp-event", str(path)]) == 0


# --------------------------------------------------------- runs that ignore their seed
def test_an_audit_whose_runs_ignore_their_seed_fails(monkeypatch):
    # was: an adversary's mutant seeding the noise from the data (the output a deterministic
    # function of the data) passed every audit of the Laplace momentum methods ("consistent",
    # the same eps >= 1.675 at every --seed)
    import numpy as np

    from dpbounds.algorithms import momentum
    from dpbounds.audit import audit

    good = audit("dp_heavy_ball", trials=2000, seed=0)
    assert not good.seed_ignored and good.status == "PASS"  # control
    inner = momentum.make_streams
    monkeypatch.setattr(momentum, "make_streams",
                        lambda seed, trials, xp: inner(np.random.SeedSequence(7), trials, xp))
    bad = audit("dp_heavy_ball", trials=2000, seed=0)
    assert bad.seed_ignored and bad.status == "FAIL"
    assert "identical, bit for bit" in str(bad)


# ------------------------------------------------------ a cell file that never ends
@pytest.mark.parametrize("what", ["dev_zero", "fifo", "huge"])
def test_a_cell_file_that_is_no_regular_file_counts_as_damaged(tmp_path, what, caplog):
    # was: a cell JSON replaced by a link to /dev/zero was read until the process was killed
    # for memory (exit 137, nothing printed), and a pipe in its place blocked the run
    import os

    from dpbounds.sweep import store as st

    store = st.ResultStore(tmp_path / "s")
    store.put({"key": "k", "function": "m:f"}, {"loss": 0.5})
    cell = next((tmp_path / "s" / "cells").glob("*/k.json"))
    assert [m["key"] for m in store.entries()] == ["k"]  # control: the written cell reads
    cell.unlink()
    if what == "dev_zero":
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero here")
        cell.symlink_to("/dev/zero")
    elif what == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no named pipes here")
        os.mkfifo(cell)
    else:
        with open(cell, "wb") as fh:  # sparse: st_size above the cap, no disk used
            fh.truncate(st.MAX_CELL_BYTES + 1)
    with caplog.at_level("WARNING", logger="dpbounds.sweep"):
        assert list(store.entries()) == []
    assert "ignoring the damaged cell file" in caplog.text


# --------------------------------------- a mutant that does not apply, before the imports
INAPPLICABLE = (
    ["audit", "dp_gd_gaussian", "--quick", "--mutant", "laplace_std"],
    ["audit", "dp_gd_gaussian", "--quick", "--neighbouring", "add_remove", "--mutant",
     "realised_batch"],
    ["audit", "dp_nag", "--quick", "--mutant", "nsgd_sigma_r"],
)


@pytest.mark.parametrize("argv", INAPPLICABLE, ids=lambda a: " ".join(a[1:]))
def test_an_inapplicable_audit_mutant_is_refused_early_in_the_librarys_words(argv, capsys,
                                                                            monkeypatch):
    # 1.4-1.5 CPU-s each before (the library's imports first; fuzz round 5)
    from dpbounds.cli import audit_cmd

    early = _early_then_library(argv, capsys, monkeypatch,
                                lambda: monkeypatch.setattr(audit_cmd, "_early_checks",
                                                            lambda args, known: None))
    assert "does not apply to" in early


def _early_then_library(argv, capsys, monkeypatch, switch_off=lambda: None) -> str:
    """The refusal of ``argv`` (exit 2) said early, which must equal the library's last line
    with the early checks switched off (``dpbounds.cli._ranges.check`` and ``switch_off``)."""
    from dpbounds.cli import EXIT_USAGE, _ranges

    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    switch_off()
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early
    return early


# ----------------------------------------- a plug-in's theorem without every bound module
def test_a_plugin_theorem_imports_the_bound_modules_only_to_refuse_a_reused_id(tmp_path):
    # the CLI knows the built-in ids from its catalog: `--plugin F bound --help` imported every
    # bound module (0.3 CPU-s) to check a new id against them
    import subprocess
    import sys

    fresh = tmp_path / "fresh.py"
    fresh.write_text(PLUGIN.format(name="fresh_gd", c="1.0"))
    probe = ("import sys\nfrom dpbounds.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    print('exit', e.code)\n"
             "print('loaded', 'dpbounds.bounds.nonconvex.sensitivity_reduced' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe, "--plugin", str(fresh), "bound",
                          "--help"], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().endswith("loaded False"), out.stdout + out.stderr
    # a lookup still finds every bound, the plug-in's among them
    listed = subprocess.run([sys.executable, "-m", "dpbounds", "--plugin", str(fresh), "bound",
                             "--list"], capture_output=True, text=True, timeout=300)
    assert "nonconvex.fresh_gd" in listed.stdout and "nonconvex.clipped_sgd" in listed.stdout
    # control: a reused built-in id is refused when the plug-in loads, as before
    reused = tmp_path / "reused.py"
    reused.write_text(PLUGIN.format(name="clipped_sgd", c="1.0").split("method =")[0])
    out = subprocess.run([sys.executable, "-m", "dpbounds", "--plugin", str(reused), "bound",
                          "--help"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "is registered twice" in out.stderr, out.stderr


def test_a_verify_probe_accepts_a_step_without_a_gradient_query():
    # the review's: a step that skips the gradient every other step stopped verify with "the
    # step released no gradient query", a check of the audit's white-box releases only
    import numpy as np

    from dpbounds import extend as ex
    from dpbounds.objectives import QuadraticObjective

    f = QuadraticObjective(np.linspace(1.0, 2.0, 4),
                           offsets=np.random.default_rng(0).standard_normal((10, 4)))

    def sometimes(x, g, z, p, memory):
        memory["t"] = memory.get("t", 0) + 1
        return x - p["eta"] * (z if memory["t"] % 2 else g(x) + z)

    m = ex.Method("sometimes_probe", step=sometimes, mechanism="gaussian", sensitivity=0.1)
    kw = dict(epsilon=1.0, delta=1e-5, steps=8, trials=2, seed=0, params={"eta": 0.1})
    with ex._post_processing_probe() as probe:
        m.run(f, **kw)
    assert probe.post_processing == 0.0
    with pytest.raises(ValueError, match="released no gradient query"), ex._release_tap():
        m.run(f, **kw)  # control: the audit's tap needs a release every step


@pytest.mark.parametrize("argv", [
    ["verify", "strongly_convex.nag", "--vary", "N", "--quick", "--values", "100.5", "200"],
    ["verify", "strongly_convex.nag", "--vary", "d", "--quick", "--values", "4", "8.5"]],
    ids=["N", "d"])
def test_a_fractional_count_in_values_is_refused_early_in_the_studys_words(argv, capsys,
                                                                          monkeypatch):
    # 2.0 CPU-s before (the study's imports first; fuzz round 5)
    assert "must be integers" in _early_then_library(argv, capsys, monkeypatch)
    # control: whole counts written with a decimal point are read as the counts they are
    monkeypatch.undo()
    whole = {"N": ["100.0", "200"], "d": ["4.0", "8"]}[argv[3]]
    assert main([*argv[:-2], *whole]) in (0, 3)
