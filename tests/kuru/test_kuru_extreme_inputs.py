"""Extreme budgets: a finite, correct value up to the float64 limit, a clear ValueError beyond.

Oracle: with equal weights ``a_t = 1`` Proposition 4.2 gives
``sum_t a_t b_t^2 = (S_1/(n eps))^2 T^3`` in closed form, evaluated here in log-space by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.bounds.noise_allocation import (
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
    lambda e: tune_heavy_ball(0.1, 1.0, d=10, n=N, epsilon=e, sensitivity=1.0,
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
      "--sensitivity", "1", "--c", "-1"], "c must be > 0 (valid range (0, inf)), got -1.0"),
])
def test_cli_bad_values_name_the_option(argv, message, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"dpbounds: error: {message}"
