"""The edges an independent fuzz of the CLI found (stop 67), one test each (each failed before
its fix):

* ``--debug`` printed the traceback of an input error and exited 1 (a failed verdict's status)
  instead of 2;
* a plug-in that calls ``sys.exit`` while loading set the command's status (0: nothing ran and
  it "succeeded"; 3: INCONCLUSIVE; a string: 1, FAIL) with no message;
* ``privacy compose --plot FILE`` wrote the figure before printing the table: a full disk lost
  the table and was reported as an internal error (4); a full standard output was too;
* ``compare --problem-class convex`` stopped at the crossover scan of a bound that does not
  apply (output perturbation without mu) instead of listing it as n/a;
* ``compare --crossover-variable eps`` ran for more than 5 minutes with no output: Yang et
  al.'s constant c2 is fitted per eps (an RDP calibration) and its cache of 64 was refitted
  for every pair of bounds; the scans now report progress;
* ``rate hb ... --steps 100000`` printed the quadratic worst case as ``[0, nan]``
  (``0 * inf``), and ``--R 1e300`` the Lyapunov bound as ``inf (rho = nan)``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpbounds.cli import EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[1]


def _cli(*argv: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "dpbounds", *argv], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=300)


@pytest.mark.parametrize("argv", [["privacy", "--steps", "0"], ["bound", "yang.sgdd"]])
def test_debug_shows_the_traceback_and_keeps_the_input_errors_status(argv, capsys):
    assert main(argv) == EXIT_USAGE
    plain = capsys.readouterr().err
    assert main(["--debug", *argv]) == EXIT_USAGE == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "Traceback" not in plain
    assert err.strip().splitlines()[-1] == plain.strip().splitlines()[-1]


@pytest.mark.parametrize("body", ["import sys; sys.exit(0)", "import sys; sys.exit(3)",
                                  "raise SystemExit('bye')"])
def test_a_plugin_that_exits_while_loading_is_an_input_error(body, tmp_path):
    plug = tmp_path / "p.py"  # in a fresh process: no plug-in state reaches other tests
    plug.write_text(body + "\n")
    r = _cli("--plugin", str(plug), "privacy", "--epsilon", "1")
    assert r.returncode == 2, r.stderr
    assert "exited while loading" in r.stderr and str(plug) in r.stderr


def test_a_plugin_path_that_is_a_directory_says_so(tmp_path, capsys):
    assert main(["--plugin", str(tmp_path), "privacy"]) == 2
    assert "a directory, not a file" in capsys.readouterr().err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_disk_under_the_figure_loses_no_table(tmp_path):
    full = tmp_path / "full.png"
    full.symlink_to("/dev/full")
    r = _cli("privacy", "compose", "--event", "gaussian:z=1", "--curve", "1", "--plot",
             str(full))
    assert r.returncode == 2, r.stderr
    assert "epsilon" in r.stdout and "delta(eps):" in r.stdout  # the table, complete
    assert "could not be written" in r.stderr and "internal error" not in r.stderr
    # control: a writable path gets the figure, status 0
    ok = _cli("privacy", "compose", "--event", "gaussian:z=1", "--curve", "1", "--plot",
              str(tmp_path / "ok.png"))
    assert ok.returncode == 0 and (tmp_path / "ok.png").stat().st_size > 1000


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_standard_output_is_an_io_error_not_a_bug():
    with open("/dev/full", "w") as sink:
        r = _cli("privacy", "--epsilon", "1", stdout=sink.fileno())
    assert r.returncode == 2, r.stderr
    assert "could not write" in r.stderr and "internal error" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_compare_lists_a_bound_that_does_not_apply_instead_of_stopping():
    from dpbounds.bounds.compare import compare

    res = compare(problem_class="convex", tune=False)
    rows = {r.name: r for r in res.rows}
    assert not rows["convex.output_perturbation"].applicable
    assert "mu" in rows["convex.output_perturbation"].not_applicable
    assert rows["convex.noisy_projected_sgd"].applicable


def test_a_crossover_scan_reports_its_progress_and_finds_the_same_crossings():
    from dpbounds.bounds.compare import crossover

    seen: list[int] = []
    a, b = "nonconvex.sensitivity_reduced_nsgd", "nonconvex.tree_momentum_nsgd"
    with_bar = crossover(a, b, "N", points=130, progress=seen.append)
    assert sum(seen) == 130 and len(seen) == 7  # chunks of 20
    assert with_bar == crossover(a, b, "N", points=130)
    assert with_bar  # they cross along N (the control that the scan found something)


def test_yang_constant_is_fitted_once_per_eps():
    """Every pair of bounds in a scan along eps reads the same 100 fits (maxsize None)."""
    from dpbounds.bounds.nonconvex import generalized_smoothness as gs

    assert gs._fitted_c2.cache_info().maxsize is None


def test_the_quadratic_worst_case_has_no_nan_upper_end():
    from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case

    wc = quadratic_worst_case(0.1, 1.0, 1, alpha=1.0, beta=0.5, steps=100_000,
                              laplace_var=0.0, initial_gap=1.0)
    assert wc.value == 0.0 and wc.upper == np.inf  # underflowed; no certified upper end
    ok = quadratic_worst_case(0.1, 1.0, 1, alpha=1.0, beta=0.5, steps=100, laplace_var=0.0,
                              initial_gap=1.0)
    assert 0 < ok.value <= ok.upper < 1.1 * ok.value  # the control: a certified bracket


def test_the_lyapunov_bound_is_homogeneous_in_the_start_and_the_noise():
    """The bound is linear in (E0, s^2) jointly (its objective is): at E0 = 1e300 it is 1e300
    times the bound at E0 = 1 (it read inf with rho = nan), and at (7, 0.3) seven times the
    bound at (1, 0.3 / 7)."""
    from dpbounds.pep import FixedStepMethod
    from dpbounds.pep.lyapunov import lyapunov_bound

    hb = FixedStepMethod.heavy_ball(1.0, 0.5)
    one = lyapunov_bound(hb, 0.1, 1.0, 10, initial_gap=1.0)
    huge = lyapunov_bound(hb, 0.1, 1.0, 10, initial_gap=1e300)
    assert np.isfinite(huge.value) and huge.value == pytest.approx(1e300 * one.value, rel=1e-9)
    a = lyapunov_bound(hb, 0.1, 1.0, 10, initial_gap=7.0, noise_variance=0.3)
    b = lyapunov_bound(hb, 0.1, 1.0, 10, initial_gap=1.0, noise_variance=0.3 / 7.0)
    assert a.value == pytest.approx(7.0 * b.value, rel=1e-9)
    assert a.value > 7.0 * one.value  # the control: the noise counts
    # an independent lower end: the exact worst case on 1-d quadratics (a subclass) of the
    # same heavy ball from the same start; the Lyapunov bound covers the whole class
    from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case

    for E0, bound in ((1.0, one.value), (1e300, huge.value)):
        wc = quadratic_worst_case(0.1, 1.0, 1, alpha=1.0, beta=0.5, steps=10, laplace_var=0.0,
                                  initial_gap=E0)
        assert wc.value <= bound < 1e3 * wc.value, (E0, wc.value, bound)


def test_rate_prints_no_nan_or_inf_as_a_result(capsys):
    main(["rate", "hb", "--alpha", "1", "--beta", "0.5", "--mu", "0.1", "--L", "1", "--steps",
          "100000", "--no-lmi"])
    out = capsys.readouterr().out
    assert "nan" not in out and "no upper end" in out
    main(["rate", "hb", "--alpha", "1", "--beta", "0.5", "--mu", "0.1", "--L", "1", "--steps",
          "10", "--R", "1e300", "--no-lmi"])
    out = capsys.readouterr().out
    assert "nan" not in out and " inf " not in out and "e+299" in out


@pytest.mark.parametrize("argv, want", [
    (["privacy", "compose", "--event", "gausian:z=1"], "'gaussian'"),
    (["privacy", "compose", "--event", "gaussian:z=1", "--accountant", "rdpp"], "'rdp'"),
    (["privacy", "compose", "--event", "gaussian:z=1", "--curve", "tradoff"], "'tradeoff'"),
    (["audit", "dp_nag", "--mutant", "sigma/3"], "'sigma/2'"),
])
def test_a_mistyped_choice_gets_did_you_mean(argv, want, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"did you mean {want}?" in err, err


def test_check_choice_suggests_only_a_close_name():
    from dpbounds._validation import check_choice

    with pytest.raises(ValueError, match="did you mean 'pld'"):
        check_choice("accountant", "pldd", ("rdp", "pld"))
    with pytest.raises(ValueError) as info:  # nothing close: no suggestion
        check_choice("accountant", "xyz", ("rdp", "pld"))
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize("argv, flag", [
    (["verify", "strongly_convex.nag", "--vary", "N", "--quick", "--plot", ""], "--plot"),
    (["verify", "strongly_convex.nag", "--vary", "N", "--quick", "--store", ""], "--store"),
    (["privacy", "compose", "--event", "gaussian:z=1", "--accountant", ""], "--accountant"),
])
def test_an_empty_selection_is_an_input_error_not_a_silent_default(argv, flag, capsys):
    """`--plot ''` and `--store ''` were skipped as if absent (exit 0), `--accountant ''`
    printed an empty table (exit 0)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert flag in err and "empty" in err or "no accountant" in err, err


def test_tune_bound_says_n_a_for_a_closed_form_that_is_not_finite_and_flags_range_edges():
    """`tune bound tran_cutkosky.alg1 --d 1e30` printed the closed form's bound as inf and
    the tuned point (at the lower end of every range) without a word."""
    from dpbounds.bounds import registry
    from dpbounds.bounds.problem import DEFAULT_PROBLEM
    from dpbounds.tuning.bound_search import search_bound

    entry = registry.get("tran_cutkosky.alg1")
    res = search_bound(entry, dict(DEFAULT_PROBLEM, d=1e30), grid=12)
    closed = res.choices[0]
    assert closed.label == "closed form" and not np.isfinite(closed.bound)
    text = res.table()
    assert " inf " not in text and "n/a" in text
    assert any("closed form n/a" in n for n in res.notes)
    assert any("lower end" in n for n in res.notes)
    # the control: at the default problem the closed form is finite and no note is made
    ok = search_bound(entry, dict(DEFAULT_PROBLEM), grid=12)
    assert np.isfinite(ok.choices[0].bound) and not any("closed form" in n for n in ok.notes)


@pytest.mark.parametrize("argv, want", [
    (["verify", "strongly_convex.nag", "--vary", "N", "--quick", "--steps", "10"],
     "--steps does not apply to strongly_convex.nag"),  # was: fixed: unknown parameter ['T']
    (["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "1", "--L", "10", "--steps",
      "10", "--noise-second-moment", "-1"], "(--noise-second-moment)"),  # was: laplace_var
    (["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--strong-convexity", "-1", "--L",
      "10"], "(--strong-convexity)"),
])
def test_an_input_error_names_the_flag_the_user_typed(argv, want, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert want in err and len(err.strip().splitlines()) == 1, err


def test_an_overflow_from_an_ill_conditioned_problem_does_not_blame_epsilon_alone(capsys):
    """`tune hb --mu 1e-300 --L 1 ...` said only 'epsilon=1.0 is too small'."""
    argv = ["tune", "hb", "--mu", "1e-300", "--L", "1", "--d", "10", "--N", "1000", "--eps",
            "1", "--S1", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "better-conditioned problem (mu / L = 1e-300" in err, err


def test_a_regime_along_eps_scans_100_points_and_finds_the_same_answer():
    """`bound yang.sgd --smallest eps` took 113 s with no output (256 fits of c2, 0.05-2
    CPU-s each): the eps scan has 100 points (20 a decade) and a progress bar. On a bound
    without a fitted constant the answer is the same as at 256 points (the bisection after
    the scan sets its precision)."""
    from dpbounds.bounds.compare import regime

    r100 = regime("tran_cutkosky.alg2", "eps", 1.0, d=4, N=1e6)
    r256 = regime("tran_cutkosky.alg2", "eps", 1.0, d=4, N=1e6, points=256)
    assert "100 log-spaced points" in r100.checked and "256" in r256.checked
    assert r100.value == pytest.approx(r256.value, rel=1e-9)
    n = regime("tran_cutkosky.alg2", "N", 1.0, d=4, eps=8)
    assert "256 log-spaced points" in n.checked  # other variables keep 256


@pytest.mark.parametrize("argv, want", [
    (["audit", "dp_sgd", "--trials", "100"], "expected a whole number >= 200"),  # said >= 1
    (["audit", "dp_sgd", "--seed", "-1"], "expected a whole number >= 0"),  # said >= 1
    (["bound", "yang.sgd", "--max-horizon", "0"], "must be an integer in [1, 1e+07]"),
    (["compare", "--m", "0"], "must be an integer in [1, inf]"),  # both said (0, inf)
    (["bound", "yang.sgd", "--target", "0.5"], "--target needs --smallest VAR"),  # ignored
])
def test_a_refusal_states_the_range_the_command_really_takes(argv, want, capsys):
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own refusal (a flag's type)
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and want in err, err


def test_a_rate_next_to_one_is_not_printed_as_one(capsys):
    """beta = 0.999999999 was echoed as "beta = 1" and its rate as 1.000000000."""
    main(["rate", "hb", "--alpha", "0.5", "--beta", "0.999999999", "--mu", "0.1", "--L", "1",
          "--no-lmi"])
    out = capsys.readouterr().out
    assert "beta = 0.999999999" in out and "rho = 1 - 5e-10" in out


def test_a_start_at_the_minimiser_or_beyond_float_range_is_refused_in_words(capsys):
    """`verify ... --start 1e300` printed a NumPy warning and 'initial_error must be finite,
    got nan'; `--start 0` (documented: at the minimiser) failed on DP-NAG's round-off
    'initial_error must be >= 0, got -8.9e-16'."""
    base = ["verify", "strongly_convex.nag", "--vary", "N", "--quick", "--start"]
    assert main([*base, "1e300"]) == 2
    err = capsys.readouterr().err
    assert "start must lie in [0, 1e+06], got 1e+300" in err and "Warning" not in err
    assert main([*base, "0"]) == 2
    err = capsys.readouterr().err
    assert "the start is the minimiser" in err and "e-16" not in err


def test_the_quadratic_problem_at_start_zero_has_no_negative_gap():
    from dpbounds.verify import problem

    inst = problem("quadratic", start=0.0).build(50, 3, seed=0)
    assert inst.R == 0.0  # F(x0) - F* >= 0 (its round-off read -8.9e-16)
    assert problem("quadratic", start=1.0).build(50, 3, seed=0).R > 0  # the control


def test_accountant_refusals_at_extreme_inputs_say_what_and_whose(capsys):
    """z = 1e300: the RDP row said "sensitivity/noise is too large" (it is tiny); q = 1e-300:
    the PLD row printed dp_accounting's internal "a must be greater than b" alone."""
    main(["privacy", "compose", "--event", "gaussian:z=1e300"])
    out = capsys.readouterr().out
    assert "too large" not in out and "too far from 1 for float64" in out
    main(["privacy", "compose", "--event", "gaussian:z=1,q=1e-300"])
    out = capsys.readouterr().out
    assert "dp_accounting cannot discretise" in out and "'rdp' accountant" in out


def test_a_declared_problem_checks_its_constants():
    """`calibrate dp_sgd_poisson ... --d 0 --G -1 --mu nan` ran (exit 0) and --N 1e300
    printed q = 50/1000...0 with 300 digits. (In fresh processes: a plug-in loaded in the
    test process would reach the other tests and their spawned workers.)"""
    plug = str(ROOT / "examples" / "dp_sgd_poisson.py")
    base = ["--plugin", plug, "calibrate", "dp_sgd_poisson", "--steps", "200",
            "--batch-size", "50"]
    r = _cli(*base, "--N", "1000", "--d", "0")
    assert r.returncode == 2 and "d must be an integer in [1, " in r.stderr, r.stderr
    r = _cli(*base, "--N", "1000", "--G", "-1")
    assert r.returncode == 2 and "G must be > 0" in r.stderr, r.stderr
    r = _cli(*base, "--N", "1e300")
    assert r.returncode == 2 and "N must be an integer in [1, " in r.stderr
    assert len(r.stderr) < 200, r.stderr
    r = _cli(*base, "--N", "1000")  # the control
    assert r.returncode == 0 and "q = 50/1000" in r.stdout, r.stderr


def test_noise_both_says_when_an_algorithm_has_no_grid_run(capsys):
    """`audit objective_perturbation --noise both` audited float noise only, silently."""
    main(["audit", "objective_perturbation", "--noise", "both", "--quick", "--quiet"])
    err = capsys.readouterr().err
    assert "has no grid noise option" in err, err


def test_the_privacy_table_says_why_a_row_is_n_a(capsys):
    """`privacy --delta 1e-300` printed a bare n/a in the PLD row (the reason was in --json
    only)."""
    main(["privacy", "--delta", "1e-300"])
    out = capsys.readouterr().out
    assert "n/a: Subsampled Gaussian, Poisson q=0.01 / PLD" in out and "delta=1e-300" in out
    main(["privacy"])  # the control: no row is n/a at the defaults
    assert "\nn/a: " not in capsys.readouterr().out


def test_rate_options_that_need_steps_are_not_ignored_without_them(capsys):
    base = ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.1", "--L", "1"]
    assert main([*base, "--noise-second-moment", "0.1", "--no-lmi"]) == 2
    assert "--noise-second-moment needs --steps T" in capsys.readouterr().err
    assert main([*base, "--R", "5", "--no-lmi"]) == 2
    assert "--R needs --steps T" in capsys.readouterr().err
    assert main([*base, "--no-lmi"]) == 0  # the control: the defaults alone run


def test_a_step_factor_that_underflows_the_noise_weights_is_refused_by_name(capsys):
    """`tune nag ... --c 1e-300` said "weights must be > 0 ..., got array([0.])"."""
    argv = ["tune", "nag", "--mu", "0.1", "--L", "1", "--d", "10", "--N", "1000", "--eps", "1",
            "--S1", "1", "--c", "1e-300"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "c must be at least 1e-100" in err and "array" not in err, err


@pytest.mark.parametrize("grid", [["--path"], ["--grid", "informative"]])
def test_quick_and_a_planned_grid_are_refused_together(grid, capsys):
    """`verify ... --quick --path` ran the quick grid and ignored --path."""
    assert main(["verify", "strongly_convex.nag", "--vary", "N", "--quick", *grid]) == 2
    assert "--quick runs today's small grid" in capsys.readouterr().err


def test_a_stray_value_after_privacy_is_explained(capsys):
    """`privacy --mu 1` read "argument [compose]: invalid choice: '1' (choose from 'compose')"."""
    try:
        rc = main(["privacy", "--mu", "1"])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and "unexpected argument '1'" in err and "invalid choice" not in err, err


def test_a_pld_refusal_names_whose_check_it_was():
    """dp_accounting's own ValueError is attributed to it; one from this package's PLD code
    (`_pld.symmetrise`, ...) is not (the control)."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    from dpbounds.privacy.accountants.pld_accountant import _whose

    try:
        pldlib.from_gaussian_mechanism(-1.0)
    except ValueError as err:
        assert _whose(err) == "dp_accounting"
    else:  # pragma: no cover
        raise AssertionError("dp_accounting accepted a negative standard deviation")
    try:
        raise ValueError("ours")
    except ValueError as err:
        assert _whose(err) == "the PLD accountant"
