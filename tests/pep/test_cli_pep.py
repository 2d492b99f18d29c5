"""``dpbounds rate hb --steps T --pep``: the PEP worst case, its CPU time and certificate form.

Oracles: the printed certificate form recomputed from its own lambdas (lambda_0 E0 + sum_t
lambda_t s^2 = the certified value), the quadratic worst case below it, and a PEP solved with a
larger noise above it (the certificate holds for every noise: evaluating its lambdas at the
larger noise bounds that run). Negative controls: the refusals above the cap and without
--steps, one line each, no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

BASE = [sys.executable, "-m", "dpbounds", "rate", "hb", "--alpha", "0.5", "--beta", "0.3",
        "--mu", "0.1", "--L", "1", "--no-lmi", "--E0", "2", "--noise-second-moment", "0.01"]


def _main(capsys, *extra):
    """``dpbounds rate hb ...`` through ``dpbounds.cli.main`` in this process (nothing here is
    about a fresh interpreter; one import of the library for all: CI time): (status, stdout,
    stderr). An exception escaping main fails the test, as a traceback on stderr would."""
    from dpbounds.cli import main

    capsys.readouterr()
    try:
        rc = main([*BASE[3:], *extra])
    except SystemExit as exc:  # argparse refusing a value
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def _json(capsys, *extra):
    rc, out, err = _main(capsys, *extra, "--json")
    assert rc == 0, err
    return json.loads(out)["worst_case"]


@pytest.mark.parametrize("T,formulation", [(6, "exact PEP"), (40, "banded relaxation, window 2")])
def test_pep_flag_prints_value_cpu_and_certificate(T, formulation, capsys):
    wc = _json(capsys, "--steps", str(T), "--pep")
    pep = wc["pep"]
    assert pep["formulation"] == formulation
    assert 0 < pep["cpu_seconds"] < 60
    lam0, lam = pep["lambda_initial"], pep["lambda_noise"]
    assert len(lam) == T and min(lam) >= 0 and lam0 >= 0
    form = lam0 * 2.0 + sum(lam) * 0.01
    assert form == pytest.approx(pep["certified"], rel=1e-9)
    assert wc["quadratic"]["value"] <= pep["value"] * (1 + 1e-6) <= pep["certified"] * (1 + 1e-6)
    # the certificate is valid for every noise: at s^2 = 0.04 its form bounds that PEP too
    from dpbounds.pep import FixedStepMethod, pep_worst_case

    kw = {} if formulation == "exact PEP" else {"pairs": "banded", "window": 2}
    other = pep_worst_case(FixedStepMethod.heavy_ball(0.5, 0.3), 0.1, 1.0, T, initial_gap=2.0,
                           noise_variances=0.04, certify=False, **kw).value
    assert other <= (lam0 * 2.0 + sum(lam) * 0.04) * (1 + 1e-6)
    assert other > pep["certified"]  # control: the larger noise costs more


def test_text_output_names_the_certificate_form(capsys):
    rc, out, err = _main(capsys, "--steps", "5", "--pep")
    assert rc == 0, err
    assert "lambda_0 E0 + sum_t lambda_t s_t^2" in out and "CPU-s" in out


@pytest.mark.parametrize("extra,needle", [
    (["--steps", "201", "--pep"], "--steps must be <= 200"),
    (["--pep"], "--pep needs --steps"),
    (["--steps", "10", "--pep-window", "0"], "--pep-window must be"),
    # fuzz round 9: the flag typed is named, and a window wider than T is refused before
    # the solver ("Clarabel status NumericalError")
    (["--pep-window", "3"], "--pep-window needs --steps"),
    (["--steps", "10", "--pep", "--pep-window", "11"], "--pep-window must be an integer in "
                                                       "[1, T=10]"),
])
def test_refusals_are_one_line(extra, needle, capsys):
    rc, _, err = _main(capsys, *extra)
    assert rc == 2
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_beyond_the_sdp_resolution_is_refused_by_name():
    from dpbounds.pep import FixedStepMethod, lyapunov_bound, pep_worst_case

    m = FixedStepMethod.heavy_ball(0.5, 0.3)
    with pytest.raises(ValueError, match="noise_variances"):
        pep_worst_case(m, 0.1, 1.0, 5, initial_gap=1.0, noise_variances=1e30)
    with pytest.raises(ValueError, match="mu must be"):
        pep_worst_case(m, 1e-300, 1.0, 5, initial_gap=1.0, pairs="banded")
    with pytest.raises(ValueError, match="alpha"):
        lyapunov_bound(FixedStepMethod.heavy_ball(1e-300, 0.3), 0.1, 1.0, 5, initial_gap=1.0)
    # the CLI keeps its other lines and says why (before: 166 s, a solver panic, status 4)
    argv = [*BASE, "--steps", "10"]
    argv[argv.index("--noise-second-moment") + 1] = "1e30"
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "panicked" not in out.stderr
    assert out.stdout.count("not run: noise_variances must be") == 2
