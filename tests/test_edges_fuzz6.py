"""Edges found in stop 72 (the sixth fuzz round and the session's own measurements).

Each test names what the command or function did before; the oracle is the library's own
refusal with the early check switched off, a closed form, or an independent computation.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from dpbounds.cli import EXIT_USAGE, main

HEAVY = ("scipy", "sympy", "cvxpy", "numba", "dp_accounting")


# --------------------------------------------- a bound's missing key, said before its imports
MISSING = [
    ["bound", "strongly_convex.heavy_ball", "--mu", "0.1"],
    ["bound", "strongly_convex.nag"],
    ["bound", "convex.output_perturbation", "--eps", "0.5"],
    ["bound", "strongly_convex.masg", "--S1", "1", "--smallest", "eps", "--target", "1e-3"],
    ["tune", "bound", "strongly_convex.heavy_ball", "--d", "10", "--N", "100", "--eps", "1"],
    ["tune", "bound", "convex.output_perturbation", "--over", "T"],
    # a typed flag the bound may not read, beside the missing key: the same refusal
    ["bound", "strongly_convex.heavy_ball_lmi", "--mu", "0.1", "--tau0", "2"],
]


@pytest.mark.parametrize("argv", MISSING, ids=lambda a: " ".join(a[:3]))
def test_a_missing_key_is_refused_early_as_the_library_refuses_it(argv, capsys, monkeypatch):
    # was: 0.9 CPU-s (bound) and 1.1 (tune bound) of the registry's imports before "needs S1"
    from dpbounds.cli import _ranges, bounds_cmd

    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    assert "does not apply to this problem: needs" in early
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    monkeypatch.setattr(bounds_cmd, "refuse_missing", lambda name, problem: None)
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early


def test_a_class_that_does_not_fit_is_left_to_the_library(capsys):
    # the library says the class first (a bound for strongly convex problems), not "needs mu"
    argv = ["bound", "strongly_convex.nag", "--S1", "1", "--problem-class", "nonconvex"]
    assert main(argv) == EXIT_USAGE
    assert "a bound for smooth strongly convex problems" in capsys.readouterr().err


def test_the_early_refusals_import_nothing_heavy():
    probe = ("import contextlib, io, json, sys\nfrom dpbounds.cli import main\nout = []\n"
             "for argv in json.loads(sys.argv[1]):\n"
             "    with contextlib.redirect_stderr(io.StringIO()), "
             "contextlib.redirect_stdout(io.StringIO()):\n"
             "        rc = main(argv)\n"
             "    out.append([rc, sorted(m for m in json.loads(sys.argv[2]) if m in "
             "sys.modules)])\nprint(json.dumps(out))")
    proc = subprocess.run([sys.executable, "-c", probe, json.dumps(MISSING),
                           json.dumps(HEAVY)], capture_output=True, text=True, timeout=300,
                          check=True)
    for argv, (rc, heavy) in zip(MISSING, json.loads(proc.stdout), strict=True):
        assert rc == EXIT_USAGE and heavy == [], (argv, heavy)
    # control: a command that needs the bound loads them (the probe sees imports)
    ok = subprocess.run([sys.executable, "-c", probe,
                         json.dumps([["bound", "nonconvex.clipped_sgd"]]), json.dumps(HEAVY)],
                        capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(ok.stdout)[0][1] != []


# ----------------------------------------------------- regime: "the smallest value is nan"
def test_regime_says_a_bound_does_not_apply_instead_of_nan():
    from dpbounds.bounds.compare import regime

    # was: "no eps in [1.000e-04, 11.51] brings strongly_convex.nag to the target 0.001: the
    # smallest value there is nan" (mu and S1 missing: every point of the scan was NaN)
    with pytest.raises(ValueError, match=r"strongly_convex.nag does not apply to this "
                                         r"problem: needs strong convexity mu"):
        regime("strongly_convex.nag", "eps", 1e-3, {})


def test_regime_names_the_assumption_that_fails_everywhere():
    from dpbounds.bounds import registry
    from dpbounds.bounds.compare import regime

    # output perturbation's classical Gaussian mechanism needs eps < 1; at eps = 1 no N helps
    with pytest.raises(ValueError) as info:
        regime("convex.output_perturbation", "N", 1e-3, {"mu": 0.1})
    msg = str(info.value)
    assert "not defined anywhere there" in msg and "eps < 1" in msg and "nan" not in msg
    # the oracle: the bound itself refuses one point of the range for that reason
    with pytest.raises(ValueError, match="eps < 1"):
        registry.get("convex.output_perturbation").value({"mu": 0.1, "N": 1e8})
    # control: below eps = 1 the same query is answered (a finite N)
    r = regime("convex.output_perturbation", "N", 1e-3, {"mu": 0.1, "eps": 0.5})
    assert 1 < r.value < 1e16


def test_regime_still_reports_the_smallest_finite_value():
    from dpbounds.bounds.compare import regime

    with pytest.raises(ValueError, match=r"the smallest value there is \d"):
        regime("strongly_convex.nag", "eps", 1e-300, {"mu": 0.1, "S1": 1.0})


# ------------------------------------------------------ verify --start 0, before the plan
@pytest.mark.parametrize("theorem", ["strongly_convex.nag", "strongly_convex.masg"])
def test_verify_start_at_the_minimiser_is_refused_before_planning(theorem, capsys,
                                                                   monkeypatch):
    # was: 2.8 CPU-s of imports and a dry plan, then the runs' refusal
    from dpbounds.cli import verify_cmd

    argv = ["verify", theorem, "--quick", "--start", "0", "--quiet"]
    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    assert "the start is the minimiser" in early
    monkeypatch.setattr(verify_cmd, "_START_WEIGHED", {})
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early


# ------------------------------------- drawn-noise / sampling rows: Bonferroni over the points
def _records(values, family=True):
    meta = dict(kind="transcript", exact=1.0, sd=None, rtol=0.0, oracle="level / p",
                energy=False)
    if family:
        meta["family"] = True
    return [{"checks": {"drawn_noise": meta}, "c:drawn_noise": [v], "params": {"d": i}}
            for i, v in enumerate(values)]


def test_a_test_row_is_held_to_alpha_over_the_points():
    from dpbounds.verify.study import _exact_verdicts

    # was: correct DP-SGD failed `verify yang.sgd --quick --seed 105` on drawn_noise 1.325
    # (one transcript of three at level / p = 1.325): each point was held to alpha
    (v,) = _exact_verdicts("s", "d", _records([1.325, 0.1, 0.2]))
    assert v.holds and v.measured == pytest.approx(1.325 / 3) and "Bonferroni" in v.oracle
    (v,) = _exact_verdicts("s", "d", _records([3.2, 0.1, 0.2]))  # below alpha / 3: fails
    assert not v.holds
    # a deterministic transcript row (no family) keeps its exact bound
    (v,) = _exact_verdicts("s", "d", _records([1.325, 0.1, 0.2], family=False))
    assert not v.holds


def test_the_study_level_false_failure_rate_is_alpha():
    # oracle: under the null each point's p is uniform, the row's value level / p; the
    # study fails with probability 1 - (1 - level / K)^K <= level (Bonferroni). Monte Carlo
    # through the verdict itself, 3 sigma of the binomial
    from dpbounds.verify.study import _exact_verdicts

    rng = np.random.default_rng(7)
    level, K, n = 0.05, 6, 4000
    fails = sum(not _exact_verdicts("s", "d", _records(level / rng.random(K)))[0].holds
                for _ in range(n))
    exact = 1 - (1 - level / K) ** K
    assert abs(fails / n - exact) <= 3 * np.sqrt(exact * (1 - exact) / n)
    # control: held to alpha at every point, the rate is K times higher
    fails_each = sum(not _exact_verdicts("s", "d", _records(level / rng.random(K),
                                                            family=False))[0].holds
                     for _ in range(n))
    assert fails_each / n > 4 * level
