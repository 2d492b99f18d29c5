"""The privacy table and the ``dpbounds privacy`` command.

Every row's noise is re-checked by a route independent of the one that produced it: the exact
analytic Gaussian profile, dp_accounting's RDP accountant, closed forms for the classic
Gaussian, advanced composition and Laplace rows.
"""

from __future__ import annotations

import json
import logging
import math

import mpmath
import numpy as np
import pytest

from dpbounds.cli import main
from dpbounds.privacy.gaussian import gaussian_epsilon
from dpbounds.privacy.table import advanced_composition_epsilon, privacy_table

logging.getLogger().setLevel(logging.ERROR)

EPS, DELTA, SENS, STEPS, Q, N = 2.0, 1e-6, 1.5, 200, 0.02, 5000


@pytest.fixture(scope="module")
def rows():
    return privacy_table(EPS, DELTA, SENS, STEPS, Q, "add_remove", sigma=3.0, scale=40.0,
                         dataset_size=N)


def _find(rows, mechanism, accountant):
    hits = [r for r in rows if r["mechanism"].startswith(mechanism)
            and r["accountant"].startswith(accountant)]
    assert len(hits) == 1, (mechanism, accountant)
    return hits[0]


def test_gaussian_full_batch_rows_within_budget(rows):
    for acc in ("analytic", "zCDP (Lemma", "zCDP (tight", "RDP", "classic + basic",
                "classic + advanced"):
        r = _find(rows, "Gaussian, full batch", acc)
        exact = gaussian_epsilon(r["noise"] / math.sqrt(STEPS), DELTA, SENS)
        assert exact <= EPS * (1 + 1e-9), acc
    exact_row = _find(rows, "Gaussian, full batch", "analytic")
    assert gaussian_epsilon(exact_row["noise"] / math.sqrt(STEPS), DELTA, SENS) == pytest.approx(
        EPS, rel=1e-6)
    # ordering: exact <= tight conversions <= Lemma 3.8 <= advanced <= basic composition
    s = {a: _find(rows, "Gaussian, full batch", a)["noise"] for a in
         ("analytic", "RDP", "zCDP (tight", "zCDP (Lemma", "classic + advanced",
          "classic + basic")}
    assert s["analytic"] <= s["RDP"] <= s["zCDP (Lemma"] <= s["classic + advanced"] <= (
        s["classic + basic"])
    assert s["zCDP (tight"] == pytest.approx(s["RDP"], rel=1e-4)


def test_classic_rows_closed_form(rows):
    basic = _find(rows, "Gaussian, full batch", "classic + basic")
    e0 = EPS / STEPS
    assert basic["noise"] == pytest.approx(
        SENS * math.sqrt(2 * math.log(1.25 * STEPS / DELTA)) / e0, rel=1e-12)
    adv = _find(rows, "Gaussian, full batch", "classic + advanced")
    e0 = SENS * math.sqrt(2 * math.log(1.25 * 2 * STEPS / DELTA)) / adv["noise"]
    assert advanced_composition_epsilon(e0, STEPS, DELTA / 2) == pytest.approx(EPS, rel=1e-9)


def test_subsampled_rows_against_dp_accounting(rows):
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    r = _find(rows, "Subsampled Gaussian, Poisson", "RDP")
    acc = ref.RdpAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(Q, dpa.GaussianDpEvent(r["noise_multiplier"])), STEPS)
    assert acc.get_epsilon(DELTA) <= EPS * 1.01  # dp_accounting's fractional orders are looser
    pld = _find(rows, "Subsampled Gaussian, Poisson", "PLD")
    assert pld["noise"] <= r["noise"]
    w = _find(rows, "Subsampled Gaussian, w/o", "RDP")
    assert w["neighbouring"] == "replace_one" and w["noise_multiplier"] == pytest.approx(
        w["noise"] / (2 * SENS))
    # without replacement: the tests' own oracle (Theorem 27 termwise with issue 35's
    # integer-moment bound), composed and converted by dp_accounting: the row is calibrated
    from tests.privacy.wor_moment_oracle import wor_rdp

    orders = np.concatenate([np.linspace(1.25, 10.0, 36), np.arange(11.0, 257.0)])
    curve = STEPS * wor_rdp(Q, w["noise_multiplier"], orders)
    oracle = ref.compute_epsilon(orders, curve, DELTA)[0]
    assert EPS * 0.97 <= oracle <= EPS * 1.01
    # dp_accounting's Theorem 27 alone reads that noise above the target (what issue 35 gained)
    m = round(Q * N)
    acc = ref.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SampledWithoutReplacementDpEvent(
        N, m, dpa.GaussianDpEvent(w["noise_multiplier"])), STEPS)
    assert acc.get_epsilon(DELTA) > EPS * 1.1


def test_laplace_rows(rows):
    full = _find(rows, "Laplace, full batch", "pure")
    assert full["noise"] == pytest.approx(SENS * STEPS / EPS)
    with mpmath.workdps(50):  # exact basic composition never exceeds the target
        assert STEPS * mpmath.mpf(SENS) / mpmath.mpf(full["noise"]) <= EPS
    assert full["epsilon_at_given_noise"] == pytest.approx(STEPS * SENS / 40.0)
    sub = _find(rows, "Laplace, w/o", "pure")
    m = round(Q * N)
    # Oracle: eq. (11) of Kuru et al. in 50-digit mpmath (not the library's log-space code).
    # On the average the scale is b/m and the per-sample L1 bound 2*SENS (replace-one).
    with mpmath.workdps(50):
        S, b = mpmath.mpf(2 * SENS), mpmath.mpf(sub["noise"]) / m
        per_step = mpmath.log((mpmath.exp(S / (b * m)) - 1) * mpmath.mpf(m) / N + 1)
        total = STEPS * per_step
    assert total <= EPS
    assert float(total) == pytest.approx(EPS, rel=1e-9)


def test_given_noise_column(rows):
    r = _find(rows, "Gaussian, full batch", "analytic")
    assert r["epsilon_at_given_noise"] == pytest.approx(
        gaussian_epsilon(3.0 / math.sqrt(STEPS), DELTA, SENS))
    tree = _find(rows, "Tree aggregation", "RDP")
    assert tree["epsilon_at_given_noise"] > 0


def test_cli_default_prints_table(capsys):
    assert main(["privacy", "--steps", "100"]) == 0
    out = capsys.readouterr().out
    assert "analytic Gaussian" in out and "PLD" in out and "Laplace" in out
    assert out.count("\n") >= 15


def test_cli_json_and_given(capsys):
    assert main(["privacy", "--steps", "50", "--sigma", "5", "--scale", "100",
                 "--neighbouring", "replace_one", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all("noise" in r for r in data) and any(r["epsilon_at_given_noise"] for r in data)


@pytest.mark.parametrize("argv,name", [
    (["privacy", "--epsilon", "0"], "epsilon"),
    (["privacy", "--delta", "1.5"], "delta"),
    (["privacy", "--sensitivity", "-1"], "sensitivity"),
    (["privacy", "--sampling-rate", "2"], "sampling_rate"),
    (["privacy", "--steps", "0"], "steps"),
])
def test_cli_bad_input(argv, name, capsys):
    assert main(argv) == 2
    assert name in capsys.readouterr().err


@pytest.mark.parametrize("argv,name", [
    (["--epsilon", "1e300"], "epsilon"),  # used to overflow in math.expm1 (advanced comp.)
    (["--epsilon", "1e-300"], "epsilon"),
    (["--epsilon", "inf"], "epsilon"),
    (["--sensitivity", "1e300"], "sensitivity"),
    (["--sensitivity", "1e-300"], "sensitivity"),
    (["--sigma", "1e300"], "sigma"),
    (["--scale", "1e-300"], "scale"),
    (["--sampling-rate", "1e-300"], "sampling_rate"),
    (["--steps", "1000000000000"], "steps"),
])
def test_cli_extreme_input_is_one_line_error(argv, name, capsys):
    assert main(["privacy", "--steps", "20", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("dpbounds: error:") and name in err


def test_cli_delta_below_pld_resolution_marks_the_row(capsys):
    # valid input; only the PLD row is out of reach (its grid cannot resolve delta = 1e-300):
    # that row says so, every other row is still computed
    assert main(["privacy", "--steps", "20", "--delta", "1e-300", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    pld = _find(rows, "Subsampled Gaussian, Poisson", "PLD")
    assert pld["noise"] is None and "delta" in pld["note"]
    assert all(r["noise"] is not None for r in rows if r is not pld
               and not r["accountant"].startswith("classic"))


@pytest.mark.parametrize("argv", [
    ["--sigma", "1e-100", "--scale", "1e-100"],
    ["--sigma", "1e100", "--scale", "1e100"],
    ["--sensitivity", "1e100", "--sigma", "1e-100", "--scale", "1e-100"],
])
def test_cli_extreme_but_valid_input_prints_finite_table(argv, capsys):
    assert main(["privacy", "--steps", "20", "--json", *argv]) == 0
    rows = json.loads(capsys.readouterr().out)
    values = [r[k] for r in rows for k in ("noise", "noise_multiplier", "epsilon_at_given_noise")]
    assert all(v is None or math.isfinite(v) for v in values)
    assert all(r["noise"] is None or r["noise"] > 0 for r in rows)


def test_advanced_composition_out_of_range():
    with pytest.raises(ValueError, match="out of floating-point range"):
        advanced_composition_epsilon(1e300, 10, 1e-5)
    # just below the overflow of expm1 the bound is an ordinary (huge) float
    assert math.isfinite(advanced_composition_epsilon(700.0, 1, 0.5))


def test_progress_is_reported_once_per_row():
    from dpbounds.privacy.table import TABLE_ROWS

    labels = []
    rows = privacy_table(1.0, 1e-5, 1.0, 10, 0.1, progress=labels.append)
    assert len(rows) == len(labels) == TABLE_ROWS
    assert labels[0].startswith("Gaussian, full batch") and "Laplace" in labels[-1]
