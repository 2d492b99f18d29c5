"""Tuning results and the CLI (tune hb / tune nag / rate hb)."""

import json

import numpy as np
import pytest

from dpbounds.cli import main
from dpbounds.tuning import heavy_ball_dp_bound, tune_heavy_ball, tune_nesterov

FIG3 = dict(mu=0.02, L=5.1033, d=20, n=10**5, epsilon=1.0, sensitivity=40.0)


def test_tuned_heavy_ball_beats_classical_choices():
    res = tune_heavy_ball(**FIG3, initial_gap=10.0, max_horizon=300, grid=12)
    assert res.tuned.bound <= res.classical.bound * (1 + 1e-12)
    assert res.tuned.bound <= res.paper_section5.bound * (1 + 1e-12)
    assert res.improvement >= 1.0
    # PEPit-style: the exactly computed error on a quadratic never exceeds the bound
    for c in (res.tuned, res.classical, res.paper_section5):
        assert c.computed <= c.bound
    # the bound at the tuned point is the grid minimum over T (recomputed independently)
    B = heavy_ball_dp_bound(res.tuned.alpha, res.tuned.beta, FIG3["mu"], FIG3["L"], d=20,
                            n=10**5, epsilon=1.0, sensitivity=40.0,
                            initial_distance_sq=2 * 10.0 / FIG3["mu"], max_horizon=300)[0]
    assert res.tuned.horizon == int(np.argmin(B)) + 1
    assert "Polyak" in res.table()


def test_tuned_nesterov_beats_uniform_budget():
    res = tune_nesterov(**FIG3, initial_gap=10.0, max_horizon=500, reference_horizons=(100,))
    rows = {r["label"]: r for r in res.rows()}
    assert rows["DP-NAG-opt at T=100"]["bound"] <= rows["DP-NAG uniform eps/T"]["bound"]
    assert rows["DP-NAG-opt (Remark 4.1 T)"]["bound"] <= rows["DP-NAG-opt at T=100"]["bound"]
    for r in res.rows():
        assert r["computed"] <= r["bound"]


def test_cli_rate_hb(capsys):
    assert main(["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rho_quadratic"] == pytest.approx(0.547722557, rel=1e-8)
    assert out["verified"] and out["rho_lmi"] >= out["rho_quadratic"]
    assert main(["rate", "hb", "--alpha", "1.9", "--beta", "0.9", "--mu", "0.1", "--L", "1"]) == 0
    assert "no certificate below rho = 1" in capsys.readouterr().out


def test_cli_tune_and_errors(capsys):
    args = ["--mu", "0.02", "--L", "5.1033", "--d", "20", "--n", "100000", "--eps", "1",
            "--sensitivity", "40", "--max-horizon", "200"]
    assert main(["tune", "nag", *args]) == 0
    assert "DP-NAG-opt" in capsys.readouterr().out
    assert main(["tune", "hb", *args[:-2], "--max-horizon", "100", "--eps", "-1"]) == 2
    assert "epsilon" in capsys.readouterr().err


def test_lmi_class_tuning_is_certified():
    from dpbounds.bounds.heavy_ball import heavy_ball_rate

    res = tune_heavy_ball(mu=0.5, L=1.0, d=2, n=10**4, epsilon=1.0, sensitivity=1.0,
                          initial_gap=1.0, max_horizon=150, grid=5,
                          function_class="smooth_strongly_convex")
    t = res.tuned
    assert np.isfinite(t.bound) and t.computed <= t.bound
    assert t.rate >= heavy_ball_rate(t.alpha, t.beta, 0.5, 1.0)
    assert res.setting["function_class"] == "smooth_strongly_convex"
