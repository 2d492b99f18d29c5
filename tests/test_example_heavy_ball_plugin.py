"""``examples/heavy_ball_plugin.py`` (issue 33): DP heavy ball declared through the public API
only. Its ``tune`` by the worst case, run as a user would (``dpbounds --plugin FILE tune``, a
fresh subprocess, no package edit), must give the built-in ``dpbounds tune hb``'s tuned row on
the same problem: the same (alpha, beta, T) and worst case (the plug-in's noise is its own
calibration, a bisection of the pure-DP accountant to 1e-6; the built-in's is Kuru et al.'s
closed form S1 T / (N eps)). Controls: the built-in's bound-tuned row (another point) fails
the same comparison, and the noise variance is the closed form's 2 b^2, not b^2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "heavy_ball_plugin.py"
ARGS = ["--mu", "0.1", "--L", "1", "--d", "4", "--N", "1000", "--S1", "1", "--R", "1",
        "--max-horizon", "10", "--json"]


def test_the_example_tunes_as_the_built_in_heavy_ball(capsys):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    r = subprocess.run([sys.executable, "-m", "dpbounds", "--plugin", str(EXAMPLE), "tune",
                        "heavy_ball_plugin", "--eps", "1", *ARGS], capture_output=True,
                       text=True, timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    plug = json.loads(r.stdout)
    from dpbounds.cli import main

    assert main(["tune", "hb", "--eps", "1", *ARGS]) in (0, None)
    built = json.loads(capsys.readouterr().out)
    p, b = plug[0], built[0]
    assert p["label"] == b["label"] == "tuned by worst-case error"
    assert (p["alpha"], p["beta"], p["horizon"]) == (b["alpha"], b["beta"], b["horizon"])
    assert p["gamma"] == 0.0 and p["T"] == float(b["horizon"])
    assert p["worst_case"] == pytest.approx(b["computed"], rel=2e-6)
    assert p["worst_case_upper"] == pytest.approx(b["worst_case_upper"], rel=2e-6)
    # the noise: Laplace scale b = S1 T / (N eps) (the built-in's noise_scale), variance 2 b^2
    scale = 1.0 * b["horizon"] / (1000 * 1.0)
    assert b["noise_scale"] == pytest.approx(scale, rel=1e-12)
    assert p["noise_variance"] == pytest.approx(2 * scale**2, rel=2e-6)
    assert abs(p["noise_variance"] / scale**2 - 1) > 0.5  # control: not b^2
    # the proven bracket is reported on the plug-in's row, and holds
    assert 0 < p["lower_bound"] <= p["worst_case"]
    # control: the comparison tells rows apart (the built-in's bound-tuned row is another)
    other = built[1]
    assert other["label"] == "tuned by bound (25)"
    assert (other["alpha"], other["beta"]) != (p["alpha"], p["beta"])
    assert other["computed"] != pytest.approx(p["worst_case"], rel=2e-6)
