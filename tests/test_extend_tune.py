"""``calibrate`` and ``tune`` for plug-ins (issue 33): :func:`dpbounds.extend.calibrate`,
:func:`dpbounds.extend.tune` (:mod:`dpbounds.tuning.bound_search`), ``dpbounds calibrate`` and
``dpbounds tune bound``.

Oracles: the Gaussian noise of zCDP in closed form (Bun-Steinke, written here with ``math``),
the Laplace scale ``Delta T / eps``, the run's own noise (one calibration), and for the search
the example (b) bound minimised by brute force over every integer horizon with numpy (the
bound written anew here) and its analytic minimiser. Controls: a grid without the refine, a
range that excludes the optimum, a wrong noise formula, bad inputs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpbounds import extend as ex
from tests.plugin_state import plugins_loaded

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module", autouse=True)
def _plugins():
    """Load examples (a) and (b) for this module only (then unloaded: later tests see the
    package's own results)."""
    with plugins_loaded([EXAMPLES / "dp_gd_smooth.py", EXAMPLES / "dp_gd_strongly_convex.py"]):
        yield


PROBLEM_B = dict(d=8.0, N=1e4, eps=1.0, delta=1e-5, R=2.0, mu=0.1, L=1.0, S1=0.5)


def _bound_b(T: np.ndarray, p: dict) -> np.ndarray:
    """Example (b)'s bound written anew: R e^(-mu T/L) + d S1^2 T / (4 mu N^2 rho)."""
    rho = p["eps"] ** 2 / (8 * math.log(1 / p["delta"]))
    c = p["d"] * p["S1"] ** 2 / (4 * p["mu"] * p["N"] ** 2 * rho)
    return p["R"] * np.exp(-p["mu"] * T / p["L"]) + c * T


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", "dpbounds", *argv], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)


# ----------------------------------------------------------------------------- calibrate
def test_calibrate_gaussian_matches_zcdp_closed_form_and_the_run():
    c = ex.calibrate("dp_gd_smooth", epsilon=1.0, delta=1e-5, steps=156,
                     problem=dict(N=1e4, G=1.0))
    sens = 2 * 1.0 / 1e4  # the example's declaration 2G/n, by hand
    lg = math.log(1e5)
    rho = (math.sqrt(lg + 1.0) - math.sqrt(lg)) ** 2
    assert c.sensitivity == pytest.approx(sens, rel=1e-15)
    assert c.noise_scale == pytest.approx(sens * math.sqrt(156 / (2 * rho)), rel=1e-6)
    assert c.epsilon_attained <= 1.0 and c.noise_multiplier == c.noise_scale / sens
    # one calibration: the run draws exactly this noise
    from dpbounds.objectives import HuberWell

    f = HuberWell.random(10_000, 3, seed=0)
    run = ex.method_named("dp_gd_smooth").run(f, epsilon=1.0, delta=1e-5, steps=156, trials=1,
                                              seed=0, eta=1.0, trace=None)
    assert run.params["noise_scale"] == ex.calibrate(
        "dp_gd_smooth", epsilon=1.0, delta=1e-5, steps=156, objective=f).noise_scale
    # control: the eps^2/(8 log(1/delta)) shortcut of the bound is not the calibration
    assert c.noise_scale != pytest.approx(sens * math.sqrt(156 * 4 * lg / 1.0), rel=1e-3)


def test_calibrate_laplace_and_bad_inputs():
    m = ex.Method("lap_toy", step=lambda x, g, z, p: x - 0.1 * (g(x) + z),
                  mechanism="laplace", sensitivity=lambda f, p: f.l1_sensitivity / f.n)
    c = ex.calibrate(m, epsilon=2.0, steps=10, problem=dict(N=100.0, S1=3.0))
    assert c.noise_scale == pytest.approx(0.03 * 10 / 2.0, rel=1e-6)  # b = Delta T / eps
    assert c.delta is None and c.epsilon_attained <= 2.0
    with pytest.raises(ValueError, match="reads the problem's l1_sensitivity: give S1"):
        ex.calibrate(m, epsilon=2.0, steps=10, problem=dict(N=100.0))
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        ex.calibrate("nope", epsilon=1.0, delta=1e-5, steps=3)
    with pytest.raises(ValueError, match="epsilon"):
        ex.calibrate(m, epsilon=-1.0, steps=10, sensitivity=1.0)


# ----------------------------------------------------------------------------- tune
def test_tuned_horizon_is_the_brute_force_integer_minimum():
    res = ex.tune("strongly_convex.dp_gd_linear", PROBLEM_B)
    Ts = np.arange(1, 200_001, dtype=float)  # every integer horizon up to 2e5
    vals = _bound_b(Ts, PROBLEM_B)
    best = int(Ts[np.argmin(vals)])
    assert res.tuned.hyperparameters == {"T": float(best)}
    assert res.tuned.bound == pytest.approx(float(vals.min()), rel=1e-12)
    # the analytic minimiser over real T, (L/mu) log(mu R / (L c)), is between its integers
    rho = 1 / (8 * math.log(1e5))
    c = 8 * 0.25 / (4 * 0.1 * 1e8 * rho)
    t_star = 10 * math.log(0.1 * 2 / c)
    assert math.floor(t_star) <= best <= math.ceil(t_star)
    # rows: closed form, grid, tuned; tuned never worse than the grid; each row's noise is the
    # method's calibration at its integer horizon
    assert [r.label for r in res.choices] == ["closed form", "grid", "tuned"]
    assert res.tuned.bound <= res.choices[1].bound
    cal = ex.calibrate("dp_gd_linear", epsilon=1.0, delta=1e-5, steps=best, problem=PROBLEM_B)
    assert res.tuned.extra == {"steps": float(best), "noise_scale": cal.noise_scale}


def test_negative_controls_of_the_search():
    from dpbounds.bounds import registry
    from dpbounds.tuning.bound_search import search_bound

    e = registry.get("strongly_convex.dp_gd_linear")
    optimum = float(_bound_b(np.arange(1, 2001, dtype=float), PROBLEM_B).min())
    # a coarse grid without the refine misses the optimum (the comparison above discriminates)
    coarse = search_bound(e, PROBLEM_B, grid=9, refine=False)
    assert coarse.tuned.bound > optimum * (1 + 1e-3)
    assert search_bound(e, PROBLEM_B, grid=9).tuned.bound == pytest.approx(optimum, rel=1e-12)
    # a range that excludes the optimum ends at its edge, above the optimum
    edge = search_bound(e, PROBLEM_B, ranges={"T": (1.0, 50.0)})
    assert edge.tuned.hyperparameters == {"T": 50.0} and edge.tuned.bound > optimum
    with pytest.raises(ValueError, match="range of T must satisfy 0 < low < high"):
        search_bound(e, PROBLEM_B, ranges={"T": (5.0, 2.0)})
    with pytest.raises(ValueError, match="over: 'eta' has no range"):
        search_bound(e, PROBLEM_B, over=["eta"])
    with pytest.raises(ValueError, match="grid"):
        search_bound(e, PROBLEM_B, grid=1)


def test_two_hyperparameters_match_a_dense_grid():
    """Several hyper-parameters: L-BFGS-B inside the best cell of the product grid; oracle:
    the analytic minimum of a / x + x + b / y + y (2 sqrt(a) + 2 sqrt(b) at sqrt(a), sqrt(b))."""
    a, b, x, y = ex.symbols("a b x_h y_h")
    e = ex.theorem("nonconvex.two_knobs", a / x + x + b / y + y, quantity="q",
                   problem_class="nonconvex", source=ex.Source("me", "1", ex.DERIVED),
                   tunable={"x_h": (1e-3, 1e3), "y_h": (1e-3, 1e3)}, register=False)
    from dpbounds.tuning.bound_search import search_bound

    res = search_bound(e, dict(a=7.0, b=0.3), grid=65)
    assert res.tuned.bound == pytest.approx(2 * math.sqrt(7) + 2 * math.sqrt(0.3), rel=1e-9)
    assert res.tuned.hyperparameters["x_h"] == pytest.approx(math.sqrt(7), rel=1e-4)
    assert res.tuned.bound < res.choices[0].bound  # the refine improves on the grid point


# ----------------------------------------------------------------------------- CLI
def test_cli_tune_bound_and_calibrate_in_fresh_processes():
    plug = str(EXAMPLES / "dp_gd_strongly_convex.py")
    flat = [w for k, v in PROBLEM_B.items() for w in (f"--{k}", repr(v))]
    r = _cli("--plugin", plug, "tune", "bound", "strongly_convex.dp_gd_linear", *flat, "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    api = ex.tune("strongly_convex.dp_gd_linear", PROBLEM_B)
    assert rows[-1]["label"] == "tuned" and rows[-1]["T"] == api.tuned.hyperparameters["T"]
    assert rows[-1]["bound"] == pytest.approx(api.tuned.bound, rel=1e-12)
    r = _cli("--plugin", plug, "tune", "bound", "strongly_convex.dp_gd_linear", *flat)
    assert "label: DERIVED" in r.stdout and "noise_scale" in r.stdout
    r = _cli("--plugin", plug, "calibrate", "dp_gd_linear", "--steps", "107", "--N", "1e4",
             "--S1", "0.5", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert set(got) == {"method", "mechanism", "neighbouring", "sensitivity", "steps",
                        "epsilon", "delta", "noise_scale", "epsilon_attained", "accountant",
                        "noise_multiplier"}
    assert got["sensitivity"] == 0.5 / 1e4 and got["epsilon_attained"] <= 1.0
    assert got["noise_scale"] == rows[-1]["noise_scale"]  # the same calibration, T = 107
    # errors: one line, exit 2
    r = _cli("--plugin", plug, "calibrate", "dp_gd_linear", "--steps", "107", "--N", "1e4")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "dpbounds: error: the method's sensitivity reads the problem's l1_sensitivity: "
        "give S1"]
    r = _cli("calibrate", "dp_gd_linear", "--steps", "5")  # control: without the plug-in
    assert r.returncode == 2 and "unknown method 'dp_gd_linear'" in r.stderr


def test_open_and_problem_dependent_ranges_and_a_second_method():
    """An open declared range (1e-300, inf) is searched in a 1e4 window around the closed
    form; a package bound whose range depends on the problem (clipped SGD's C) is searched
    too, and is never above the local tuner ``Entry.optimize`` (a second method)."""
    from dpbounds.bounds import registry
    from dpbounds.tuning.bound_search import search_bound

    a, x = ex.symbols("a x_open")
    e = ex.theorem("nonconvex.open_range", a / x + x, quantity="q", problem_class="nonconvex",
                   source=ex.Source("me", "1", ex.DERIVED), hyperparameters={"x_open": a},
                   tunable={"x_open": (1e-300, math.inf)}, register=False)
    res = search_bound(e, dict(a=9.0))
    assert res.ranges == {"x_open": (pytest.approx(9e-4), pytest.approx(9e4))}
    assert res.tuned.bound == pytest.approx(6.0, rel=1e-10)  # 2 sqrt(a) at x = 3
    assert res.choices[0].bound == pytest.approx(10.0)  # the closed form x = a: 1 + 9
    clipped = registry.get("nonconvex.clipped_sgd")
    problem = dict(d=100.0, N=1e5, eps=1.0, delta=1e-5, G=1.0, L=1.0, R=1.0)
    found = search_bound(clipped, problem)
    assert found.tuned.bound <= clipped.optimize(problem).value * (1 + 1e-9)
