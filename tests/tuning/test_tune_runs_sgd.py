"""``tune runs sgd``: DP-SGD tuned from the shell, by runs and privately (walkthrough of stop
78: private tuning of DP-SGD on your own data could not be done from the shell).

Oracles: the library called directly on the objective built by hand (wiring); dp_accounting's
RDP accountant for the Poisson-subsampled Gaussian runs (each run's epsilon, the tuning's
composed spend, and the private selection's epsilon through Papernot & Steinke's Theorem 2
written on dp_accounting's curve).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from dpbounds.algorithms import dp_sgd
from dpbounds.cli.tune_runs_cmd import build_problem
from dpbounds.privacy.rdp import DEFAULT_ORDERS as O
from dpbounds.tuning import select_privately, tune_by_runs
from dpbounds.tuning.private_selection import selection_rdp
from tests.tuning.test_by_runs import _cli
from tests.tuning.test_private_selection_rdp import _improved

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.rdp import rdp_privacy_accountant as rpa  # noqa: E402


def _poisson_curve(q: float, z: float, count: int) -> tuple[np.ndarray, Any]:
    acc = rpa.RdpAccountant(list(O))
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), count)
    return np.asarray(acc._rdp, dtype=float), acc


def _run_noise(n, d, seed, steps, batch):
    """z and q of the runs the shell makes (their calibration is checked against
    dp_accounting below, not trusted)."""
    f = build_problem("logistic", n, d, 0.02, None, seed)
    r = dp_sgd(f, epsilon=1.0, delta=1e-6, steps=steps, batch_size=batch, step_size=0.5,
               clip_threshold=1.0, sampling="poisson", public_n=n, noise="grid", seed=1)
    (mech, count), = r.privacy.ledger.entries
    return 1 / math.sqrt(2 * mech.rho), mech.sampling_rate, count


def test_private_poisson_selection_epsilon_against_dp_accounting():
    argv = ["tune", "runs", "sgd", "--delta", "1e-6", "--N", "2000", "--d", "5", "--private",
            "--loss-bound", "4", "--selection-delta", "1e-5", "--steps", "30", "--sampling",
            "poisson", "--trials-shape", "0", "--stop-probability", "0.2", "--search",
            "alpha=0.5,1", "--search", "C=1", "--seed", "4", "--json", "--quiet"]
    out = subprocess.run([sys.executable, "-m", "dpbounds", *argv], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    z, q, count = _run_noise(2000, 5, 4, 30, 2000 // 40)
    assert q == 50 / 2000 and count == 30
    run_curve, acc = _poisson_curve(q, z, count)
    # each run spends its (1, 1e-6) and no less than ~2% under it (calibration, independent)
    assert 0.98 <= acc.get_epsilon(1e-6) <= 1.0 + 1e-9
    score = np.minimum(O * 0.1 ** 2 / 2, 0.1)  # the score's pure eps 0.1 as RDP
    want = _improved(selection_rdp(run_curve + score, O, shape=0.0, stop_probability=0.2), O,
                     1e-5)
    # two-sided: the reference curve x (1 + 1e-3) and the discrete Gaussian's own term above
    assert want <= got["epsilon"] <= want * 1.01
    # negative control: the geometric law (shape 1) costs visibly more than the shell reports
    assert _improved(selection_rdp(run_curve + score, O, shape=1.0, stop_probability=0.2), O,
                     1e-5) > got["epsilon"] * 1.05
    assert got["delta"] > 1e-5 and got["selection_seed"] == 4


def test_private_selection_is_the_librarys(capsys):
    rc, out, _ = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--N", "800", "--d", "3",
                       "--private", "--loss-bound", "4", "--selection-delta", "1e-5",
                       "--steps", "20", "--search", "alpha=0.5,2", "--search", "C=0.3,1",
                       "--stop-probability", "0.3", "--seed", "3", "--json", "--quiet"], capsys)
    assert rc == 0
    got = json.loads(out)
    f = build_problem("logistic", 800, 3, 0.02, None, 3)
    twin = build_problem("logistic", 800, 3, 0.02, None, 4)
    lib = select_privately(dp_sgd, f, {"step_size": [0.5, 2.0], "clip_threshold": [0.3, 1.0]},
                           epsilon=1.0, score_epsilon=0.1, loss_bound=4.0,
                           stop_probability=0.3, target_delta=1e-5, shape=1.0, seed=3,
                           reference_objective=twin, delta=1e-6, steps=20, batch_size=20,
                           sampling="without_replacement")
    assert got["best"] == lib.best and got["x"] == lib.x.tolist()
    assert got["score"] == lib.score and got["epsilon"] == lib.epsilon


def test_without_a_seed_the_selection_noise_is_fresh(capsys):
    argv = ["tune", "runs", "sgd", "--delta", "1e-6", "--N", "400", "--d", "3", "--private",
            "--loss-bound", "4", "--steps", "5", "--search", "alpha=1", "--search", "C=1",
            "--selection-delta", "1e-5", "--trials-shape", "0", "--stop-probability", "0.9",
            "--quiet"]
    xs = []
    for _ in range(2):
        rc, out, _ = _cli([*argv, "--json"], capsys)
        assert rc == 0
        got = json.loads(out)
        assert got["selection_seed"] is None
        xs.append(got["x"])
    assert xs[0] != xs[1]  # one grid point, one trial: only the noise differs
    rc, out, _ = _cli(argv, capsys)
    assert "fresh entropy" in out.splitlines()[-1]
    seeded = [json.loads(_cli([*argv, "--seed", "5", "--json"], capsys)[1])["x"]
              for _ in range(2)]
    assert seeded[0] == seeded[1]
    rc, out, _ = _cli([*argv, "--seed", "5"], capsys)
    assert "anyone who knows it reproduces the noise" in out.splitlines()[-1]


def test_tuning_by_runs_spends_what_dp_accounting_composes(capsys):
    rc, out, _ = _cli(["tune", "runs", "sgd", "--delta", "1e-6", "--N", "2000", "--d", "5",
                       "--steps", "30", "--sampling", "poisson", "--search", "alpha=0.5,1",
                       "--search", "C=1", "--trials", "2", "--eval-trials", "2", "--seed", "4",
                       "--json", "--quiet"], capsys)
    assert rc == 0
    got = json.loads(out)
    f = build_problem("logistic", 2000, 5, 0.02, None, 4)
    lib = tune_by_runs(dp_sgd, f, {"step_size": [0.5, 1.0], "clip_threshold": [1.0]},
                       epsilon=1.0, trials=2, eval_trials=2, seed=4, delta=1e-6, steps=30,
                       batch_size=50, sampling="poisson", public_n=2000)
    assert got["best"] == lib.best
    assert got["runs"] == 2 * 2 + 2
    z, q, count = _run_noise(2000, 5, 4, 30, 50)
    _, acc = _poisson_curve(q, z, count * got["runs"])
    assert got["delta"] == 1e-6  # the runs' own delta (it was reported at 1e-5)
    want = acc.get_epsilon(got["delta"])
    assert want * (1 - 0.01) <= got["spent_epsilon"] <= want * 1.02


@pytest.mark.parametrize("argv, words", [
    (["sgd"], "sgd adds Gaussian noise: give its delta"),
    (["sgd", "--delta", "2"], r"--delta must lie in \(0, 1\)"),
    (["hb", "--delta", "1e-6"], "--delta is not read by hb"),
    (["hb", "--sampling", "poisson"], "--sampling is read by sgd only"),
    (["sgd", "--delta", "1e-6", "--batch-size", "30000"], r"a whole number in \[1, N = 20000\]"),
    (["sgd", "--delta", "1e-6", "--search", "m=0,4"], "m must list whole numbers >= 1"),
    (["sgd", "--delta", "1e-6", "--search", "m=4,20001"], r"a whole number in \[1, N"),
    (["sgd", "--delta", "1e-6", "--search", "C=0,1"], "clip_threshold must be > 0"),
    (["sgd", "--delta", "1e-6", "--clip-threshold", "1", "--search", "C=1,2"],
     "both searched"),
    (["sgd", "--delta", "1e-6", "--search", "beta=0.5"], "sgd takes none"),
    (["sgd", "--delta", "1e-6", "--private", "--loss-bound", "4"],
     "needs --selection-delta DELTA"),
])
def test_refusals(argv, words, capsys):
    rc, _, err = _cli(["tune", "runs", *argv, "--quiet"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    import re

    assert re.search(words, err), err


@pytest.mark.parametrize("algorithm, extra", [("hb", ["--search", "alpha=0.5", "--steps", "3"]),
                                              ("sgd", ["--delta", "1e-6", "--steps", "3"])])
def test_the_shells_reference_twin_is_other_data_of_the_same_public_shape(algorithm, extra,
                                                                          capsys, monkeypatch):
    """Mutant hunt 14 (A42 survived): the twin built with the private seed is the private
    data itself, and its reference run is then not composed: its data must differ, its n, d
    and declared radii must not."""
    import dpbounds.tuning as tuning

    seen = {}

    def spy(alg, f, grid, **kw):
        seen["f"], seen["ref"] = f, kw["reference_objective"]
        raise ValueError("stop here")

    monkeypatch.setattr(tuning, "select_privately", spy)
    rc, _, err = _cli(["tune", "runs", algorithm, "--N", "300", "--d", "3", "--private",
                       "--loss-bound", "4", "--selection-delta", "1e-5", "--seed", "2", *extra],
                      capsys)
    assert rc == 2 and "stop here" in err
    f, ref = seen["f"], seen["ref"]
    assert (ref.n, ref.d) == (f.n, f.d)
    assert (ref.l1_radius, ref.l2_radius) == (f.l1_radius, f.l2_radius)
    assert ref.radius_declared == f.radius_declared == {"l1_radius": True, "l2_radius": True}
    assert not np.array_equal(ref.features_np, f.features_np)
