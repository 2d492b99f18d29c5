"""Edges left by fuzz round 13, fixed in stop 80: each test fails before its fix."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.test_edges_stop79 import _cli


def test_one_ulp_below_one_is_not_printed_as_one(capsys):
    from dpbounds._numfmt import shown

    beta = 1 - 2.0**-53
    assert shown(beta) == "0.9999999999999999" and float(shown(beta)) == beta
    assert shown(1 + 2.0**-52) == "1.0000000000000002"
    assert shown(0.9999999) == "0.9999999" and shown(1.0) == "1"  # controls
    rc, out, _ = _cli(["rate", "hb", "--alpha", "0.1", "--mu", "1", "--L", "10", "--beta",
                       repr(beta), "--no-lmi"], capsys)
    assert rc == 0 and "beta = 0.9999999999999999," in out.splitlines()[0]


@pytest.mark.parametrize("method", ["hb", "nag"])
def test_a_noise_below_float64s_range_is_said(method, capsys):
    # before: a table of zeros (every worst case underflowed) without a word
    base = ["--mu", "1", "--L", "10", "--d", "10", "--n", "1000", "--eps", "1", "--quiet"]
    rc, out, err = _cli(["tune", method, *base, "--S1", "1e-300"], capsys)
    assert rc == 0 and "DP noise term 2 d b^2 is exp(-1392.37) even at T = 1" in out
    assert "k^2" in out
    rc, out, err = _cli(["tune", method, *base, "--S1", "1e-100"], capsys)  # control
    assert rc == 0 and "below float64's range" not in out


def test_the_rescaling_the_refusal_suggests_leaves_the_tuning_unchanged():
    # its claim, checked: S_1 -> k S_1 and E0 -> k^2 E0 multiply every worst case by k^2
    from dpbounds.tuning import tune_heavy_ball

    kw = dict(d=10, n=1000, epsilon=1.0, max_horizon=200)
    a = tune_heavy_ball(1.0, 10.0, sensitivity=1.0, initial_gap=10.0, **kw).rows()[0]
    b = tune_heavy_ball(1.0, 10.0, sensitivity=1e-3, initial_gap=1e-5, **kw).rows()[0]
    assert (a["alpha"], a["beta"], a["horizon"]) == pytest.approx(
        (b["alpha"], b["beta"], b["horizon"]), rel=1e-6)
    key = next(k for k in a if "worst" in k and isinstance(a[k], float))
    assert b[key] == pytest.approx(a[key] * 1e-6, rel=1e-6)
    # and just above the floor it still answers (control)
    tune_heavy_ball(1.0, 10.0, sensitivity=1e-150, initial_gap=1e-290, **kw)


def test_audit_plan_at_a_claim_of_zero_says_why(capsys):
    # before: "target must be > 0 (valid range (0, inf)), got 0.0" (an internal name)
    rc, _, err = _cli(["audit", "plan", "dp_sgd", "--eps", "1e-20", "--quiet"], capsys)
    assert rc == 2 and "claimed epsilon at delta = 0.05 is 0" in err and "target" not in err


def test_calibrate_suggests_a_close_name_and_where_built_ins_are_calibrated(capsys):
    from tests.plugin_state import plugins_loaded

    rc, _, err = _cli(["calibrate", "dp_sgd", "--steps", "10"], capsys)
    assert rc == 2 and "dpbounds privacy --steps T" in err
    examples = Path(__file__).resolve().parents[1] / "examples"
    with plugins_loaded([examples / "dp_gd_smooth.py"]):
        from dpbounds import extend

        known = sorted(extend._METHODS)
        assert known, "the example plug-in registers a method"
        name = known[0]
        with pytest.raises(ValueError, match=f"did you mean '{name}'"):
            extend.method_named(name[:-1] + ("x" if name[-1] != "x" else "y"))
        with pytest.raises(ValueError) as exc:  # control: nothing close, no suggestion
            extend.method_named("qqqqqqqqqqqq")
        assert "did you mean" not in str(exc.value)


@pytest.mark.parametrize("theorem", ["strongly_convex.nag", "strongly_convex.masg",
                                     "strongly_convex.heavy_ball"])
def test_verify_refuses_delta_for_a_pure_study(theorem, capsys):
    # before: accepted and ignored (fuzz round 13)
    rc, out, err = _cli(["verify", theorem, "--quick", "--delta", "1e-9", "--quiet"], capsys)
    assert rc == 2 and "its runs are pure eps-DP" in err and out == ""


def test_a_pure_studys_runs_do_not_read_delta():
    # the refusal's claim, checked: the same seed at two deltas measures bit for bit the same
    from dpbounds.verify import scaling_study

    kw = dict(vary={"N": (200.0, 400.0)}, trials=8, seed=3, quick=True)
    a = scaling_study("strongly_convex.nag", fixed={"delta": 1e-5}, **kw)
    b = scaling_study("strongly_convex.nag", fixed={"delta": 1e-12}, **kw)
    for c in a.components:
        np.testing.assert_array_equal(a.trials[c], b.trials[c])
        np.testing.assert_array_equal(a.bound[c], b.bound[c])
    # control: a study that reads delta measures something else at another delta
    kw = dict(vary={"N": (100.0, 200.0)}, trials=4, seed=3, quick=True)
    c1 = scaling_study("nonconvex.clipped_sgd", fixed={"delta": 1e-5, "T": 50}, **kw)
    c2 = scaling_study("nonconvex.clipped_sgd", fixed={"delta": 1e-12, "T": 50}, **kw)
    u = c1.utility[0]
    assert not np.array_equal(c1.trials[u], c2.trials[u]) and math.isfinite(
        float(np.mean(c1.trials[u])))


def test_tune_runs_flags_a_run_delta_above_one_over_n(capsys):
    # fuzz round 14: every run at delta 0.5 (n = 500) without a word
    argv = ["tune", "runs", "sgd", "--n", "500", "--d", "3", "--trials", "2", "--search",
            "alpha=0.5", "--search", "C=1", "--steps", "5", "--quiet"]
    rc, out, err = _cli([*argv, "--delta", "0.5"], capsys)
    assert rc == 0 and "delta=0.5 > 1/n = 0.002" in err and "no privacy" in err
    rc, out, err = _cli([*argv, "--delta", "1e-6"], capsys)  # control
    assert rc == 0 and "warning" not in err
