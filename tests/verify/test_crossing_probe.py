"""The crossing probe: ``verify --quick`` ran a bound without its dimension factor on a grid
that stopped before the measurement crossed it, and passed it (walkthrough of stop 78).

Oracle: a bound whose Gaussian term drops d (the walkthrough's plug-in, made wrong on purpose)
must fail at one real point past the grid; the same bound with d must not; a study whose
ratio does not grow runs no probe. Each in a fresh process, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

PLUGIN = '''
import os
import sympy as sp
from dpbounds import extend as ex

d, N, eps, delta, G, L, R, T = ex.symbols("d N eps delta G L R T")
rho = eps**2 / (8 * sp.log(1 / delta))
dd = 1 if os.environ.get("PROBE_MODE") == "no_d" else d
expr = sp.sqrt(2 * L * R / sp.sqrt(T)
               + 2 * dd * G**2 * sp.sqrt(T) * (1 + sp.log(T)) / (N**2 * rho))
bound = ex.theorem(
    "nonconvex.probe_decay", expr, quantity="min_{t<T} E||grad F(x_t)||",
    problem_class="nonconvex_smooth",
    hyperparameters={"T": N**2 * rho * L * R / (dd * G**2), "eta0": 1 / L},
    tunable={"T": (1, 1e6)},
    source=ex.Source("test", "Prop. 1", ex.DERIVED, "descent lemma, decaying step"),
    assumptions=["F is L-smooth, per-sample gradients of norm <= G"],
    title="DP-GD with decaying step")


def step(x, grad, noise, p, memory):
    t = memory.get("t", 0)
    memory["t"] = t + 1
    return x - p["eta0"] / (t + 1) ** 0.5 * (grad(x) + noise)


method = ex.Method("probe_decay", step=step, mechanism="gaussian", neighbouring="replace_one",
                   sensitivity=lambda f, p: 2.0 * f.gradient_bound / f.n)
ex.study(method, bound, measure="grad_min")
'''


def _verify(tmp_path, mode, *extra):
    import os

    path = tmp_path / "probe_plugin.py"
    path.write_text(PLUGIN)
    env = dict(os.environ, PROBE_MODE=mode)
    out = subprocess.run([sys.executable, "-m", "dpbounds", "--plugin", str(path), "verify",
                          "nonconvex.probe_decay", "--vary", "d", "--quick", "--quiet",
                          "--json", *extra], capture_output=True, text=True, env=env,
                         timeout=600)
    return out.returncode, out


def _probe_rows(out):
    got = json.loads(out.stdout)
    rows = [v for v in got["verdicts"] if "crossing probe" in v["name"]]
    return got, rows


def test_a_bound_without_d_fails_at_the_probe_past_the_grid(tmp_path):
    rc, out = _verify(tmp_path, "no_d")
    assert rc == 1, out.stderr
    got, rows = _probe_rows(out)
    # every grid point passes: without the probe the study exited 0
    grid = [v for v in got["verdicts"] if v["name"].startswith("grad_min over d")
            and "measured/bound" in v["name"]]
    assert grid and all(v["holds"] for v in grid)
    (row,) = rows
    assert not row["holds"] and row["interval"][0] > 1.0
    assert "crossing probe" in got["regime"]["crossing_probe"]


def test_the_bound_with_d_passes_its_probe(tmp_path):
    # at N = 2000 the probe (d ~ 200) is informative: the correct bound passes a real check
    # there, not a vacuous one (at the default N = 400 the probe's bound is vacuous)
    rc, out = _verify(tmp_path, "ok", "--N", "2000")
    assert rc == 0, out.stdout[-2000:] + out.stderr
    _, rows = _probe_rows(out)
    (row,) = rows
    assert row["holds"] and row["status"] != "vacuous" and row["interval"][1] < 1.0


def test_the_bound_with_d_passes_its_probe_over_n_too(tmp_path):
    # over N the ratio grows towards small N: the probe runs below the grid
    rc, out = _verify(tmp_path, "ok", "--vary", "N")
    assert rc == 0, out.stderr
    _, rows = _probe_rows(out)
    assert all(v["holds"] or v["status"] == "vacuous" for v in rows)


def _fake(slope, lo, hi, local, ratio):
    """A grid's result as the probe reads it: measured means at ``ratio`` of the bound."""
    from types import SimpleNamespace

    import numpy as np

    from dpbounds.verify.statistics import MeanCI, SlopeCI

    values = (2.0, 8.0, 32.0)
    bound = np.array([1.0, 1.0, 1.0])
    res = SimpleNamespace(
        values=values, slopes={"u": SlopeCI(slope, lo, hi, 0.95, 100)},
        bound_local_slopes={"u": (local, local)}, vacuous=(False,) * 3,
        measured={"u": [MeanCI(ratio, ratio, ratio, 0.0, 6)] * 3}, bound={"u": bound})
    return SimpleNamespace(utility=("u",), theorem="t"), res


def _probe(study, res):
    from dpbounds.verify.study import _crossing_probe

    return _crossing_probe(study, None, "d", res, {"d": 2}, [], None, 6, (0, 3), 1.0, 0.95,
                           None, 2.0**30, False)


def test_no_probe_where_the_ratio_does_not_grow_significantly():
    # survivor M36 of the review: the probe fired on the interval's upper end (no evidence)
    study, res = _fake(1.0, 0.9, 1.1, 1.0, 0.5)
    assert _probe(study, res) is None


def test_a_crossing_beyond_the_reach_is_said_and_not_run():
    # survivor M38: a probe past 8x the grid ran; growth 0.06 from ratio 0.5 crosses at
    # 32 x 2^(1/0.06), far beyond
    study, res = _fake(0.06, 0.05, 0.07, 0.0, 0.5)
    verdict, note = _probe(study, res)
    assert verdict is None and "not probed" in note and "past 8x" in note
