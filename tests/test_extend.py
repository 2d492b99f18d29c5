"""The public extension API (:mod:`dpbounds.extend`, issue 33): theorems, methods, studies,
plug-ins, problem classes, and the package's own results re-expressed through it.

Oracles: closed forms written here with ``math`` (theorem values, the Gaussian and Laplace
noise scales), the package's own implementations (dp_gd's iterates and ledger, the registered
clipped-SGD and output-perturbation bounds: identical numbers), and the CLI run in fresh
subprocesses on the user files of ``examples/``. Each check has a control that must fail."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy as sp

from dpbounds import extend as ex

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _cli(*argv: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [e.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", "dpbounds", *argv], capture_output=True,
                          text=True, timeout=timeout, env=e, cwd=ROOT)


# ----------------------------------------------------------------------------- theorems
def test_sympy_theorem_value_scaling_and_provenance():
    d, N, eps, G, T = ex.symbols("d N eps G T")
    e = ex.theorem("toy_rate", G * (1 / T + T * sp.sqrt(d) / (N * eps)), quantity="q",
                   problem_class="nonconvex_smooth", hyperparameters={"T": sp.sqrt(N * eps)},
                   source=ex.Source("me", "Prop. 1", ex.DERIVED), register=False)
    assert e.name == "nonconvex.toy_rate" and e.problem_class == "nonconvex"
    p = dict(d=16.0, N=1e4, eps=0.5, G=2.0)
    t = math.sqrt(1e4 * 0.5)  # oracle: the formula by hand at the closed-form T
    assert e.value(p) == pytest.approx(2.0 * (1 / t + t * 4.0 / 5e3), rel=1e-12)
    assert e.hyperparameters(p) == {"T": pytest.approx(t, rel=1e-12)}
    assert str(e.scaling()) == "d^(1/2) N^(-1/2) eps^(-1/2)"
    assert str(e.tuned.provenance) == "DERIVED"
    assert e.value(dict(p, N=4e4)) != pytest.approx(e.value(p))  # control: N matters


def test_callable_theorem_and_bad_declarations():
    e = ex.theorem("convex.toy_callable", lambda d, N: math.sqrt(d) / N, parameters=("d", "N"),
                   quantity="q", problem_class="convex_lipschitz",
                   source=ex.Source("me", "eq. 2", ex.RECONSTRUCTED), register=False)
    assert e.value(dict(d=9.0, N=3.0)) == pytest.approx(1.0) and e.numeric
    with pytest.raises(ValueError, match="problem_class must be one of"):
        ex.theorem("x", sp.Integer(1), quantity="q", problem_class="smooth",
                   source=ex.Source("me", "1", ex.DERIVED), register=False)
    with pytest.raises(ValueError, match="source must be a Source"):
        ex.theorem("x", sp.Integer(1), quantity="q", problem_class="convex",
                   source="my paper", register=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parameters must name"):
        ex.theorem("x", lambda d: d, quantity="q", problem_class="convex",
                   source=ex.Source("me", "1", ex.DERIVED), register=False)


# ----------------------------------------------------------------------------- methods
def _quadratic():
    from dpbounds.objectives import QuadraticObjective

    return QuadraticObjective.random(4, 0.2, 1.0, n=50, offset_scale=0.1, seed=3)


def test_method_reproduces_dp_gd_bit_for_bit_with_its_ledger():
    """The step API is sufficient for Gaussian DP-GD: same iterates (same seed, same noise
    stream), same sigma, same ledger epsilon as :func:`dpbounds.algorithms.dp_gd`."""
    from dpbounds.algorithms import dp_gd

    f = _quadratic()
    m = ex.Method("gd", step=lambda x, grad, z, p: x - p["eta"] * (grad(x) + z),
                  mechanism="gaussian", sensitivity=lambda f, p: f.l2_sensitivity / f.n)
    kw = dict(epsilon=1.0, delta=1e-5, steps=30, trials=3, seed=7, x0=np.ones(4))
    new = m.run(f, eta=0.5, **kw)
    old = dp_gd(f, step_size=0.5, mechanism="gaussian", trace=None, **kw)
    assert np.array_equal(np.asarray(new.x), np.asarray(old.x))
    assert new.params["noise_scale"] == old.params["sigma"]
    assert new.ledger.epsilon == old.ledger.epsilon <= 1.0
    # oracle: sigma = Delta sqrt(T / (2 rho)), rho from the Bun-Steinke conversion
    lg = math.log(1e5)
    rho = (math.sqrt(lg + 1.0) - math.sqrt(lg)) ** 2
    sens = f.l2_sensitivity / f.n
    assert new.params["noise_scale"] == pytest.approx(sens * math.sqrt(30 / (2 * rho)),
                                                      rel=1e-6)
    other = m.run(f, eta=0.5, **dict(kw, seed=8))  # control: another seed, other iterates
    assert not np.array_equal(np.asarray(other.x), np.asarray(old.x))


def test_laplace_method_noise_and_pure_ledger():
    f = _quadratic()
    m = ex.Method("lap", step=lambda x, grad, z, p: x - 0.1 * (grad(x) + z),
                  mechanism="laplace", sensitivity=0.2)
    r = m.run(f, epsilon=2.0, steps=10, trials=2, seed=0)
    assert r.params["noise_scale"] == pytest.approx(0.2 * 10 / 2.0, rel=1e-6)  # b = S T/eps
    assert r.ledger.notion == "pure-DP" and r.ledger.epsilon <= 2.0
    with pytest.raises(ValueError, match="mechanism must be"):
        ex.Method("bad", step=lambda x, g, z, p: x, mechanism="poisson")
    with pytest.raises(ValueError, match="sensitivity must be positive"):
        ex.Method("bad", step=lambda x, g, z, p: x, sensitivity=0.0).run(
            f, epsilon=1.0, delta=1e-5, steps=2)


# ----------------------------------------------------------------------------- classes
def test_a_theorem_outside_its_class_is_refused_naming_both():
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import HuberWell, LogisticRegression

    A, y = kuru_synthetic(n=200, d=3, seed=0)
    logistic = LogisticRegression(A, y, l2=0.02, l1_radius=5.0)
    assert logistic.problem_class == "strongly_convex"
    assert HuberWell.random(20, 2, seed=0).problem_class == "convex"
    assert _quadratic().problem_class == "quadratic"
    with pytest.raises(ValueError, match="strongly_convex.heavy_ball holds for quadratic "
                                         "problems, but the objective LogisticRegression is "
                                         "strongly_convex"):
        ex.evaluate("strongly_convex.heavy_ball", logistic, eps=1.0, R=1.0)
    # the opt-in, and a theorem of the objective's class: no error
    assert ex.evaluate("strongly_convex.heavy_ball", logistic, eps=1.0, R=1.0,
                       allow_outside_class=True) > 0
    assert ex.evaluate("strongly_convex.nag", logistic, eps=1.0, R=1.0) > 0
    assert ex.evaluate("strongly_convex.heavy_ball", _quadratic(), eps=1.0, R=1.0) > 0


# ----------------------------------------------------------------------------- dogfood
def _clipped_sgd_public() -> Any:
    """Yang et al.'s clipped DP-SGD (Cor. 3.5 shape, DERIVED constants), written anew from
    the notation symbols with the public API only."""
    d, N, eps, delta, L0, L1, D_f, tau0, c2, C = ex.symbols(
        "d N eps delta L0 L1 D_f tau0 c2 C")
    nu = c2 * sp.sqrt(d * sp.log(1 / delta)) / (N * eps)
    q = 6 * sp.sqrt(2 * D_f * (L0 + L1 * C)) * nu

    def problem_map(p):  # the setting's symbols: tau0 = 2G, L0 = L, L1 = 0, D_f = R
        return dict(d=p["d"], N=p["N"], eps=p["eps"], delta=p["delta"], L0=p["L"],
                    L1=p.get("L1", 0.0), D_f=p["R"], tau0=2.0 * p["G"], c2=p["c2"])

    return ex.theorem("nonconvex.clipped_sgd_public", q + sp.sqrt(C * q),
                      quantity="min_t E||grad f(x_t)||", problem_class="nonconvex",
                      hyperparameters={"C": 3 * tau0}, problem_map=problem_map,
                      source=ex.Source("Yang et al.", "Corollary 3.5 shape", ex.DERIVED),
                      register=False)


def _output_perturbation_public() -> Any:
    """Output perturbation (Kamath's lecture; strongly convex regulariser) anew."""
    d, n, eps, delta, G, L, mu = ex.symbols("d n eps delta G L mu")
    sigma2 = 2 * sp.log(sp.Rational(5, 4) / delta) * (2 * G / (n * mu)) ** 2 / eps**2
    return ex.theorem("convex.output_perturbation_public", L * d * sigma2 / 2,
                      quantity="E F(theta) - F*", problem_class="convex",
                      problem_map=lambda p: dict(d=p["d"], n=p["N"], eps=p["eps"],
                                                 delta=p["delta"], G=p["G"], L=p["L"],
                                                 mu=p["mu"]),
                      scaling={"d": 1, "n": 1},
                      source=ex.Source("Kamath", "Lecture 13", ex.VERBATIM), register=False)


PROBLEMS = [dict(d=100.0, N=1e5, eps=0.8, delta=1e-5, G=1.0, L=1.0, R=1.0, mu=0.1, c2=1.3),
            dict(d=7.0, N=3e3, eps=0.3, delta=1e-8, G=2.0, L=5.0, R=0.2, mu=0.5, c2=0.7),
            dict(d=1e4, N=1e9, eps=0.9, delta=1e-3, G=0.5, L=0.1, R=40.0, mu=0.01, c2=2.0,
                 L1=0.5)]


@pytest.mark.parametrize("old_id,make", [("nonconvex.clipped_sgd", _clipped_sgd_public),
                                         ("convex.output_perturbation",
                                          _output_perturbation_public)])
@pytest.mark.parametrize("problem", PROBLEMS)
def test_dogfood_the_package_results_through_the_public_api(old_id, make, problem):
    from dpbounds.bounds import registry

    old, new = registry.get(old_id), make()
    a, b = old.value(problem), new.value(problem)
    assert b == pytest.approx(a, rel=1e-12), (a, b)
    assert str(new.scaling()) == str(old.scaling())
    # control: the comparison sees a 1% change of d (the bounds grow like d^(1/4) .. d)
    assert abs(new.value(dict(problem, d=problem["d"] * 1.01)) / a - 1) > 2e-3


# ----------------------------------------------------------------------------- plug-ins, CLI
def test_example_a_bound_and_verify_via_plugin_in_a_fresh_process():
    plug = str(EXAMPLES / "dp_gd_smooth.py")
    r = _cli("--plugin", plug, "bound", "--list")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("nonconvex.dp_gd_smooth"))
    assert f"[from plugin {EXAMPLES / 'dp_gd_smooth.py'}]" in line
    r = _cli("--plugin", plug, "bound", "nonconvex.dp_gd_smooth", "--N", "1e5")
    assert r.returncode == 0 and "label: DERIVED" in r.stdout, r.stderr
    assert "scaling: d^(1/4) N^(-1/2) eps^(-1/2)" in r.stdout
    r = _cli("--plugin", plug, "verify", "nonconvex.dp_gd_smooth", "--vary", "N", "--quick",
             "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "headline exponent of N (DERIVED)" in r.stdout and "VERBATIM" not in r.stdout
    # control: noise sqrt(2) too small (ledger unchanged) must fail the drawn-noise check
    r = _cli("--plugin", plug, "verify", "nonconvex.dp_gd_smooth", "--vary", "N", "--quick",
             "--quiet", "--mutation", "noise_sqrt2")
    assert r.returncode == 1 and "drawn over N" in r.stdout, r.stdout + r.stderr


def test_example_c_false_theorem_is_refuted_in_its_informative_regime():
    r = _cli("--plugin", str(EXAMPLES / "false_rate.py"), "verify", "nonconvex.too_fast_gd",
             "--vary", "N", "--quick", "--quiet", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    import json

    out = json.loads(r.stdout)
    ratio = next(v for v in out["verdicts"] if v["name"].startswith("grad_avg over N")
                 and "measured/bound" in v["name"])
    assert ratio["holds"] is False and ratio["measured"] > 2
    assert all(i["informative"] for i in out["informative"])


def test_plugin_errors_are_one_line_and_the_option_is_top_level(tmp_path):
    r = _cli("--plugin", str(tmp_path / "nope.py"), "bound", "--list")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"dpbounds: error: --plugin {tmp_path / 'nope.py'}: no such file"]
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('boom')\n")
    r = _cli("--plugin", str(bad), "bound", "--list")
    assert r.returncode == 2 and "failed to load: RuntimeError: boom" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _cli("bound", "nonconvex.dp_gd_smooth")  # control: without the plug-in it is unknown
    assert r.returncode == 2 and "unknown bound" in r.stderr


def test_entry_point_plugins_are_listed_with_their_origin(tmp_path):
    pkg = tmp_path / "my_dp_plugin.py"
    pkg.write_text(textwrap.dedent("""
        import sympy as sp
        from dpbounds import extend as ex
        d, N = ex.symbols("d N")
        ex.theorem("convex.from_entry_point", sp.sqrt(d) / N, quantity="q",
                   problem_class="convex", source=ex.Source("me", "1", ex.DERIVED))
    """))
    dist = tmp_path / "my_dp_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-dp-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[dpbounds.plugins]\nmine = my_dp_plugin\n")
    r = _cli("bound", "--list", env={"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert any(x.startswith("convex.from_entry_point") and
               "[from entry point mine (my_dp_plugin)]" in x for x in r.stdout.splitlines())


def test_audit_of_a_plugin_method_and_a_too_small_sensitivity_in_fresh_processes():
    """The white-box audit of example (a) is consistent (exit 0); its sigma/2 mutant and the
    method that declares half the replace-one sensitivity (examples/small_sensitivity.py) are
    refuted (exit 1) -- with the same lower bound: same seed, the same halved noise."""
    import re

    plug = str(EXAMPLES / "dp_gd_smooth.py")
    ok = _cli("--plugin", plug, "audit", "dp_gd_smooth", "--quick", "--quiet")
    assert ok.returncode == 0 and ok.stdout.rstrip().endswith("-> consistent"), ok.stdout
    r = _cli("--plugin", plug, "audit", "--list")
    assert f"[from plugin {EXAMPLES / 'dp_gd_smooth.py'}]" in r.stdout
    mutant = _cli("--plugin", plug, "audit", "dp_gd_smooth", "--quick", "--quiet",
                  "--mutant", "sigma/2")
    small = _cli("--plugin", str(EXAMPLES / "small_sensitivity.py"), "audit", "half_noise_gd",
                 "--quick", "--quiet")
    assert mutant.returncode == 1 and small.returncode == 1, mutant.stdout + small.stdout
    assert "VIOLATION" in small.stdout

    def lower(out: str) -> float:
        return float(re.search(r"eps >= ([0-9.]+) at 95%", out).group(1))

    assert lower(small.stdout) == lower(mutant.stdout) > 3.0 > lower(ok.stdout)


def test_a_study_outside_its_class_is_refused_and_the_opt_in_runs(tmp_path):
    plug = tmp_path / "quad_only.py"
    plug.write_text(textwrap.dedent("""
        import sympy as sp
        from dpbounds import extend as ex
        d, N, eps, R = ex.symbols("d N eps R")
        for name, opt_in in (("quad_gd", False), ("quad_gd_anyway", True)):
            thm = ex.theorem(name, R * sp.sqrt(d) / (N * eps), quantity="F(x_T) - F*",
                             problem_class="quadratic",
                             source=ex.Source("me", "1", ex.DERIVED),
                             hyperparameters={"T": sp.Integer(3), "eta": sp.Rational(1, 2)})
            m = ex.Method(name, step=lambda x, g, z, p: x - p["eta"] * (g(x) + z),
                          sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)
            ex.study(m, thm, measure="subopt", problems=("huber_well",),
                     allow_outside_class=opt_in)
    """))
    argv = ("--vary", "N", "--values", "100", "200", "--trials", "3", "--quiet")
    r = _cli("--plugin", str(plug), "verify", "quadratic.quad_gd", *argv)
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("theorem quadratic.quad_gd holds for quadratic problems, but the objective "
            "HuberWell is convex" in r.stderr), r.stderr
    r = _cli("--plugin", str(plug), "verify", "quadratic.quad_gd_anyway", *argv)
    # it runs (3 trials: the spread check cannot catch shared noise there, INCONCLUSIVE)
    assert r.returncode in (0, 1, 3) and "scaling over N" in r.stdout, r.stderr


def test_plugin_options_are_taken_before_the_command_only():
    from dpbounds.cli import _plugins_of

    assert _plugins_of(["--plugin", "a.py", "--plugin=b.py", "--quiet", "verify", "x",
                        "--plugin", "c.py"]) == (
        ["a.py", "b.py"], ["--quiet", "verify", "x", "--plugin", "c.py"])
    assert _plugins_of(["--plugin"]) == ([], ["--plugin"])  # argparse reports the value
    assert _plugins_of(["bound", "--list"]) == ([], ["bound", "--list"])


def test_example_b_published_rate_bound_and_verify_via_plugin_in_a_fresh_process():
    """Example (b), DP-GD on smooth strongly convex ERM (the d log(n)/(n^2 eps^2) rate's
    shape, constants DERIVED): the bound printed by the CLI equals the formula by hand at the
    closed-form T, its headline scaling is d N^-2 eps^-2, and the quick verify passes; the
    noise_sqrt2 mutant must fail the drawn-noise check."""
    import json

    plug = str(EXAMPLES / "dp_gd_strongly_convex.py")
    argv = ("--d", "8", "--N", "1e4", "--eps", "1", "--delta", "1e-5", "--R", "2",
            "--mu", "0.1", "--L", "1", "--S1", "0.5")
    r = _cli("--plugin", plug, "bound", "strongly_convex.dp_gd_linear", *argv, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # oracle: R e^(-mu T/L) + d S1^2 T/(4 mu N^2 rho), rho = eps^2/(8 log(1/delta)), at
    # T = (L/mu) log(1 + mu R/(L c)), c the per-step noise term -- written here with math
    rho = 1.0 / (8 * math.log(1e5))
    c = 8 * 0.25 / (4 * 0.1 * 1e8 * rho)
    t = 10 * math.log(1 + 0.1 * 2 / c)
    assert out["hyperparameters"]["T"] == pytest.approx(t, rel=1e-9)
    assert out["bound"] == pytest.approx(2 * math.exp(-0.1 * t) + c * t, rel=1e-9)
    assert out["bound"] != pytest.approx(2 * math.exp(-0.1 * t), rel=1e-3)  # control: floor
    r = _cli("--plugin", plug, "bound", "strongly_convex.dp_gd_linear", *argv)
    assert "scaling: d N^(-2) eps^(-2)" in r.stdout and "label: DERIVED" in r.stdout
    assert "Wang, Ye, Xu (2017)" in r.stdout
    r = _cli("--plugin", plug, "verify", "strongly_convex.dp_gd_linear", "--vary", "N",
             "--quick", "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "quadratic problem" in r.stdout and "headline exponent of N (DERIVED): -2" in r.stdout
    r = _cli("--plugin", plug, "verify", "strongly_convex.dp_gd_linear", "--vary", "N",
             "--quick", "--quiet", "--mutation", "noise_sqrt2")
    assert r.returncode == 1 and "drawn over N" in r.stdout, r.stdout + r.stderr


def test_a_plugin_study_declares_a_lower_plan():
    """``extend.study(..., lower_plan=f)`` carries ``f`` to the study the planner reads
    (``TheoremStudy.lower_plan``; the planner's use is tested in
    tests/verify/test_lower_plan.py); without one there is none."""
    thm = "nonconvex.clipped_sgd"  # a registered theorem; nothing is registered here
    m = ex.Method("lower_plan_toy_gd", step=lambda x, g, z, p: x - p["eta"] * (g(x) + z),
                  sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)

    def lower(point, inst, trials):
        return dict(bound=0.0, trivial=1.0, do_nothing=1.0)

    s = ex.study(m, thm, register=False, lower_plan=lower)
    assert s.lower_plan is lower
    assert ex.study(m, thm, register=False).lower_plan is None
    with pytest.raises(ValueError, match="lower_plan must be a callable"):
        ex.study(m, thm, register=False, lower_plan=0.5)  # type: ignore[arg-type]


def test_a_plugin_study_declares_is_informative():
    """``extend.study(..., is_informative=f)`` carries ``f`` to the study the planner reads
    (``TheoremStudy.is_informative``; its use and the built-in studies' are tested in
    tests/verify/test_lower_plan.py); without one there is none."""
    thm = "nonconvex.clipped_sgd"
    m = ex.Method("is_informative_toy_gd", step=lambda x, g, z, p: x - p["eta"] * (g(x) + z),
                  sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)

    def decide(point, inst, trials):
        return point["N"] > 100

    s = ex.study(m, thm, register=False, is_informative=decide)
    assert s.is_informative is decide
    assert ex.study(m, thm, register=False).is_informative is None
    with pytest.raises(ValueError, match="is_informative must be a callable"):
        ex.study(m, thm, register=False, is_informative=True)  # type: ignore[arg-type]


def test_a_plugin_study_declares_its_probe_trials():
    """``extend.study(..., probe_trials=k)`` carries ``k`` to the study the planner reads
    (``TheoremStudy.probe_trials``, through ``regimes.probe_trials``: the planner's use is
    tested in tests/verify/test_estimate_trials.py); 16 without; a count out of range is
    refused naming the parameter."""
    from dpbounds.verify import regimes

    thm = "nonconvex.clipped_sgd"
    m = ex.Method("probe_trials_toy_gd", step=lambda x, g, z, p: x - p["eta"] * (g(x) + z),
                  sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)
    s = ex.study(m, thm, register=False, probe_trials=2048)
    assert s.probe_trials == 2048 and regimes.probe_trials(s, 3000) == 2048
    assert regimes.probe_trials(ex.study(m, thm, register=False), 3000) == 16
    for bad in (0, 10**7, 2.5):
        with pytest.raises(ValueError, match="probe_trials"):
            ex.study(m, thm, register=False, probe_trials=bad)  # type: ignore[arg-type]
