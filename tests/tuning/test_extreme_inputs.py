"""Extreme budgets: a finite, correct value up to the float64 limit, a clear ValueError beyond.

Oracle: with equal weights ``a_t = 1`` Proposition 4.2 gives
``sum_t a_t b_t^2 = (S_1/(n eps))^2 T^3`` in closed form, evaluated here in log-space by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.bounds.strongly_convex.noise_allocation import (
    optimal_noise,
    optimal_noise_closed_form,
    remark_4_2_allocation,
    select_horizon,
    uniform_noise,
)
from dpbounds.cli import main
from dpbounds.tuning import tune_heavy_ball, tune_nesterov

S, N, T = 40.0, 100_000, 5


def _log_closed_form(eps: float) -> float:
    return 2.0 * (math.log(S) - math.log(N) - math.log(eps)) + 3.0 * math.log(T)


@pytest.mark.parametrize("eps", [1.0, 1e-100, 4.4e-153])
def test_closed_form_is_exact_up_to_the_float_limit(eps):
    al = optimal_noise_closed_form(np.ones(T), S, N, eps)
    expected = _log_closed_form(eps)
    assert al.log_value == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert math.isfinite(al.value)
    assert al.value == pytest.approx(math.exp(expected), rel=1e-10)
    assert al.total_epsilon <= eps


@pytest.mark.parametrize("call", [
    lambda e: optimal_noise_closed_form(np.ones(T), S, N, e),
    lambda e: optimal_noise(np.ones(T), S, N, 1000, e),
    lambda e: remark_4_2_allocation(np.ones(T), S, N, 1000, e),
    lambda e: uniform_noise(np.ones(T), S, N, 1000, e),
    lambda e: select_horizon(0.1, 1.0, initial_error=10.0, d=10, sensitivity=S, n=N,
                             epsilon=e, max_horizon=50),
    lambda e: tune_nesterov(0.1, 1.0, d=10, n=N, epsilon=e, sensitivity=1.0, initial_gap=10.0,
                            max_horizon=50, reference_horizons=(20,)),
    lambda e: tune_heavy_ball(0.1, 1.0, objective="bound", d=10, n=N, epsilon=e, sensitivity=1.0,
                              initial_gap=10.0, max_horizon=50, grid=5),
])
@pytest.mark.parametrize("eps", [1e-300, 5e-324])
def test_tiny_epsilon_raises_value_error_naming_epsilon(call, eps):
    with pytest.raises(ValueError, match=r"epsilon=.* too small"):
        call(eps)


def test_value_just_beyond_float_range_raises():
    # (S/(n eps))^2 T^3 = exp(710) > 1.8e308: just outside, no inf and no OverflowError
    eps = math.exp(-(710.0 - 2.0 * (math.log(S) - math.log(N)) - 3.0 * math.log(T)) / 2.0)
    with pytest.raises(ValueError, match="epsilon"):
        optimal_noise_closed_form(np.ones(T), S, N, eps)
    # and just inside: finite, equal to the oracle
    al = optimal_noise_closed_form(np.ones(T), S, N, eps * 1.2)
    assert al.value == pytest.approx(math.exp(_log_closed_form(eps * 1.2)), rel=1e-10)


@pytest.mark.parametrize("method", ["nag", "hb"])
def test_cli_tiny_epsilon_exits_2_with_one_line(method, capsys):
    args = ["tune", method, "--mu", "0.1", "--L", "1", "--d", "10", "--n", "100000",
            "--eps", "1e-300", "--sensitivity", "1", "--max-horizon", "50"]
    assert main(args) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert cap.out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith("dpbounds: error: epsilon=1e-300")
    assert "Traceback" not in err


def test_cli_beta_message_shows_the_typed_value(capsys):
    assert main(["rate", "hb", "--alpha", "0.1", "--beta", "1.5", "--mu", "0.1", "--L", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "dpbounds: error: beta must lie in [0, 1), got 1.5"


@pytest.mark.parametrize(("argv", "message"), [
    (["rate", "hb", "--alpha", "0.1", "--beta", "-0.5", "--mu", "0.1", "--L", "1"],
     "beta must lie in [0, 1), got -0.5"),
    (["tune", "nag", "--mu", "0.1", "--L", "1", "--d", "10", "--n", "100", "--eps", "1",
      "--sensitivity", "1", "--c", "-1"],
     "c must lie in (0, 1] (Theorems 4.1/4.3 need the step c/L <= 1/L), got -1.0"),
])
def test_cli_bad_values_name_the_option(argv, message, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"dpbounds: error: {message}"


# ----------------------------------------------------------------------------- the CLI as a whole
_TUNE = ["--mu", "0.02", "--L", "5.1", "--d", "20", "--n", "100000", "--eps", "1",
         "--sensitivity", "40", "--max-horizon", "60"]


@pytest.mark.parametrize("n", ["1e5", "100000.0", "100000", "1E5"])
def test_integer_flags_accept_integral_float_notation(n, capsys):
    args = [*_TUNE]
    args[args.index("--n") + 1] = n
    assert main(["tune", "nag", *args, "--json"]) == 0
    assert '"DP-NAG-opt (Remark 4.1 T)"' in capsys.readouterr().out


@pytest.mark.parametrize(("value", "message"), [
    ("1.5", "argument --n: expected an integer, got '1.5'"),
    ("1e400", "argument --n: '1e400' is out of range (beyond 1.8e308)"),
    ("nan", "argument --n: expected a finite integer, got 'nan'"),
    ("ten", "argument --n: expected an integer, got 'ten'"),
])
def test_integer_flags_refuse_non_integers_naming_the_flag(value, message, capsys):
    args = [*_TUNE]
    args[args.index("--n") + 1] = value
    with pytest.raises(SystemExit) as exc:
        main(["tune", "nag", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert f"error: {message} (see 'dpbounds tune nag --help')" == err.split("dpbounds: ", 1)[1]
    assert len(err.splitlines()) == 1  # one line, as every CLI error


def test_no_prefix_abbreviation_of_flags(capsys):
    """`bound NAME --n` used to be read as `--no-tune` (argparse prefix matching). `--n` is now
    an alias of --dataset-size in every command (the notation table), so the prefix checked is
    `--no`."""
    with pytest.raises(SystemExit) as exc:
        main(["bound", "tran_cutkosky.alg1", "--no"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --no" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tune", "nag", *_TUNE, "--sens", "40"])


def _parsers(parser):
    import argparse

    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_flag_and_output_column_is_documented():
    from dpbounds.cli import build_parser

    for p in _parsers(build_parser()):
        for action in p._actions:
            if action.option_strings and action.dest not in ("help", "version"):
                text = (action.help or "").replace("(default", "")
                assert len(text.split()) >= 2, f"{p.prog} {action.option_strings} has no help"
    subs = {p.prog: p for p in _parsers(build_parser())}
    legends = {
        "dpbounds tune hb": ("choice", "alpha", "beta", " T ", "rho", "bound", "computed", "b_T"),
        "dpbounds tune nag": ("choice", " T ", "allocation", "bound", "computed"),
        "dpbounds compare": ("closed form", "tuned", "gradients", "scaling", "label"),
        "dpbounds bound": ("bound", "closed form", "tuned", "gradients", "scaling", "label"),
        "dpbounds rate hb": ("quadratic rate", "eq. (26)", "LMI"),
    }
    for prog, columns in legends.items():
        epilog = subs[prog].epilog or ""
        for col in columns:
            assert f"  {col.strip()} " in epilog, f"{prog}: column {col!r} has no legend"


def test_broken_pipe_is_quiet():
    """`dpbounds ... --json | head` printed a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(__import__("pathlib").Path(__file__).parents[2]))
    proc = subprocess.Popen([sys.executable, "-m", "dpbounds", "rate", "hb", "--alpha", "0.5",
                             "--beta", "0.3", "--mu", "0.5", "--L", "1", "--no-lmi", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the reader is gone before the first write
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize(("exc", "status", "start"), [
    (RuntimeError("boom"), 4, "dpbounds: internal error: RuntimeError: boom (this is a bug; "
                               "rerun with --debug for the traceback)"),
    (OverflowError("math range error"), 2, "dpbounds: error: math range error"),
    (MemoryError(), 2, "dpbounds: error: out of memory"),
])
def test_no_traceback_reaches_the_user_but_debug_shows_it(exc, status, start, monkeypatch,
                                                          capsys):
    from dpbounds.cli import heavy_ball_cmd

    def fail(args):
        raise exc

    monkeypatch.setattr(heavy_ball_cmd, "_rate_hb", fail)
    argv = ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1"]
    assert main(argv) == status
    err = capsys.readouterr().err.strip()
    assert err.startswith(start) and len(err.splitlines()) == 1
    # --debug adds the traceback and keeps the status (an uncaught exception's 1 would read
    # as a failed verdict)
    assert main([*argv, "--debug"]) == status
    err = capsys.readouterr().err
    assert "Traceback" in err and type(exc).__name__ in err
    assert err.strip().splitlines()[-1].startswith(start)


# A fast version of the CLI fuzz (the full one: every flag of every sub-command with 12 bad and
# extreme values, see the closing report): each call ends with status 0 or 2, one clean line on
# stderr, no traceback, and no hang: within 90 s wall (a hang guard, not a speed test: the
# zero-noise tune at eps = 1e30 runs its branch and bound to the box budget, ~20 CPU-s, and a
# loaded parallel run stretches wall time 2-3x).
_FUZZ = {
    ("tune", "nag"): [*_TUNE, "--m", "1000", "--c", "1"],
    ("tune", "hb"): [*_TUNE],
    ("rate", "hb"): ["--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1", "--no-lmi"],
    ("bound", "yang.sgd"): ["--no-tune", "--c2", "6.5", "--N", "1e5", "--G", "1", "--eps", "1"],
    ("compare",): ["--no-tune", "--c2", "6.5", "--N", "1e5", "--d", "100", "--delta", "1e-5"],
}
_BAD = ("0", "-1", "nan", "inf", "1e30", "1e-300", "abc", "1e400")


def _fuzz_cases():
    for cmd, base in _FUZZ.items():
        flags = [base[i] for i in range(len(base) - 1) if base[i].startswith("--")
                 and not base[i + 1].startswith("--")]
        for flag in flags:
            yield pytest.param(cmd, base, flag, id=f"{' '.join(cmd)} {flag}")


@pytest.mark.parametrize(("cmd", "base", "flag"), list(_fuzz_cases()))
def test_cli_fuzz_bad_and_extreme_values(cmd, base, flag, capsys):
    import signal
    import time

    def timeout(*_):
        raise TimeoutError("over 90 s")

    old = signal.signal(signal.SIGALRM, timeout)
    try:
        for value in _BAD:
            argv = [*cmd, *base]
            argv[argv.index(flag) + 1] = value
            signal.alarm(90)
            start = time.perf_counter()
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse: a value that does not parse
                status = exc.code
            finally:
                signal.alarm(0)
            err = capsys.readouterr().err
            assert status in (0, 2), (argv, err)
            assert "Traceback" not in err and "internal error" not in err, (argv, err)
            assert time.perf_counter() - start < 90
            if status == 2:
                assert err.strip().splitlines()[-1].split(": error: ", 1)[1], (argv, err)
    finally:
        signal.signal(signal.SIGALRM, old)
