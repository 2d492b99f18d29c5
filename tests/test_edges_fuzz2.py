"""Edges a second independent fuzz of the CLI and the API found (stop 68), each test failing
before its fix. In-process ``main`` where no plug-in is loaded; plug-ins in fresh processes
(``_cli``), so their registrations reach no other test."""

from __future__ import annotations

import json

import pytest

from dpbounds.cli import EXIT_USAGE, main


def _nested(levels: int) -> str:
    text = '{"class_name": "GaussianDpEvent", "noise_multiplier": 1}'
    for _ in range(levels):
        text = '{"class_name": "SelfComposedDpEvent", "count": 1, "event": ' + text + "}"
    return text


def _self_composed(count: object) -> dict:
    return {"class_name": "SelfComposedDpEvent", "count": count,
            "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1}}


# ------------------------------------------------------------------ dp_accounting events
def test_a_fractional_count_is_refused_not_truncated(tmp_path, capsys):
    # 2.5 runs were accounted as 2 (exit 0, the count-2 epsilon): an under-count
    path = tmp_path / "e.json"
    path.write_text(json.dumps(_self_composed(2.5)))
    assert main(["privacy", "compose", "--from-dp-event", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "count must be a whole number in [1, 1e+15], got 2.5" in err and str(path) in err


def test_an_integral_float_count_is_read_as_that_count(tmp_path, capsys):
    # control: 2.0 is two runs, the same epsilon as the integer 2
    outs = []
    for count in (2.0, 2, 3):
        path = tmp_path / f"e{count}.json"
        path.write_text(json.dumps(_self_composed(count)))
        assert main(["privacy", "compose", "--from-dp-event", str(path),
                     "--accountant", "rdp"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] != outs[2]


def test_the_api_refuses_a_fractional_count_too():
    import dp_accounting

    from dpbounds.privacy.events import from_dp_event, ledger_from_dp_event

    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(1.0), 2.5)
    for read in (from_dp_event, ledger_from_dp_event):
        with pytest.raises(ValueError, match="count of SelfComposedDpEvent must be an integer"):
            read(event)


@pytest.mark.parametrize("levels", [600, 3000])
def test_a_deeply_nested_event_file_is_an_input_error(levels, tmp_path, capsys):
    # was "internal error: RecursionError ... (this is a bug)", exit 4
    path = tmp_path / "deep.json"
    path.write_text(_nested(levels))
    assert main(["privacy", "compose", "--from-dp-event", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "nested too deeply" in err and str(path) in err and "internal" not in err


def test_a_deeply_nested_event_object_is_a_value_error():
    import dp_accounting

    from dpbounds.privacy.events import ledger_from_dp_event

    event = dp_accounting.GaussianDpEvent(1.0)
    for _ in range(5000):
        event = dp_accounting.SelfComposedDpEvent(event, 1)
    with pytest.raises(ValueError, match="nested too deeply"):
        ledger_from_dp_event(event)


# ------------------------------------------------------------------ verify's memory budget
def test_given_values_too_large_to_build_are_refused_before_any_probe(capsys):
    # was: the first probe built a 100,000 x 100,000 basis (killed at 22 GB)
    import time

    t0 = time.process_time()
    code = main(["verify", "strongly_convex.nag", "--quick", "--cost-cache", "off", "--vary", "d",
                 "--values", "100000", "50000", "--max-memory-gb", "1"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "--max-memory-gb" in err and "d = 100000" in err
    assert time.process_time() - t0 < 30  # refused, not planned


def test_instance_bytes_of_the_quadratic_by_hand():
    from dpbounds.verify.problems import problem
    from dpbounds.verify.study import _instance_bytes

    assert _instance_bytes(problem("quadratic"), {"N": 500, "d": 1000}) == 8.0 * (
        3 * 1000**2 + 2 * 500 * 1000)
    assert _instance_bytes(problem("huber_well"), {"N": 500, "d": 1000}) == 8.0 * 2 * 500 * 1000


# ------------------------------------------------------------------ audits of NaN releases
def test_an_audit_of_non_finite_releases_is_refused_not_consistent(tmp_path):
    # was: "eps >= 0.000 (test interval [0.000, -0.048]) -> consistent", exit 0
    from tests.test_edges_fuzz import _cli

    plug = tmp_path / "nan_step.py"
    plug.write_text(
        "from dpbounds import extend as ex\n"
        "method = ex.Method('nan_step', step=lambda x, grad, noise, p: "
        "(x - p['eta'] * (grad(x) + noise)) * float('nan'), mechanism='gaussian', "
        "neighbouring='replace-one', sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)\n"
        "ex.audit_setting(method, steps=3, params={'eta': 1.0})\n")
    r = _cli("--plugin", str(plug), "audit", "nan_step", "--quick")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "not finite" in r.stderr and "consistent" not in r.stdout
    # control: the same plug-in without the NaN audits normally
    plug.write_text(plug.read_text().replace(" * float('nan')", ""))
    r = _cli("--plugin", str(plug), "audit", "nan_step", "--quick")
    assert r.returncode == 0 and "consistent" in r.stdout, r.stderr


# ------------------------------------------------------------------ tuners without noise
@pytest.mark.parametrize("method", ["nag", "hb"])
def test_tuners_at_an_astronomical_budget_answer(method, capsys):
    # eps = 1e300: no noise, and the worst cases at T = 1000 underflow to 0. Was: tune nag
    # "internal error: ZeroDivisionError" (exit 4); tune hb "error: math range error"
    code = main(["--quiet", "tune", method, "--mu", "0.1", "--L", "1", "--d", "10", "--N", "1000",
                 "--S1", "1", "--eps", "1e300"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "tuned by worst case" in out or "tuned by worst-case error" in out
    assert "nan" not in out.replace("nan_", "")


# ------------------------------------------------------------------ small refusals
def test_two_methods_of_one_name_in_a_plugin_are_refused(tmp_path):
    # was: loaded; calibrate used the first (Gaussian), audit the second (Laplace)
    from tests.test_edges_fuzz import _cli

    method = ("ex.Method('dup', step=lambda x, grad, noise, p: x - p['eta'] * (grad(x) + noise), "
              "mechanism='{}', neighbouring='replace-one', "
              "sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)")
    plug = tmp_path / "dup.py"
    plug.write_text("from dpbounds import extend as ex\n"
                    f"a = {method.format('gaussian')}\nb = {method.format('laplace')}\n"
                    "ex.audit_setting(a, steps=3, params={'eta': 1.0})\n"
                    "ex.audit_setting(b, steps=3, params={'eta': 1.0})\n")
    r = _cli("--plugin", str(plug), "audit", "--list")
    assert r.returncode == 2 and "two different Methods are named 'dup'" in r.stderr
    # control: one Method registered twice (a study and an audit) loads
    r = _cli("--plugin", "examples/dp_gd_smooth.py", "audit", "--list")
    assert r.returncode == 0 and "dp_gd_smooth" in r.stdout, r.stderr


def test_mechanism_fields_are_single_numbers():
    import numpy as np

    from dpbounds.privacy.mechanisms import GaussianMechanism, LaplaceMechanism

    with pytest.raises(ValueError, match="sigma of GaussianMechanism must be a single number"):
        GaussianMechanism(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="scale of LaplaceMechanism must be a single number"):
        LaplaceMechanism(np.ones(3))
    m = GaussianMechanism(np.array(2.0))  # control: a 0-d array is a number
    assert m.sigma == 2.0 and type(m.sigma) is float


def test_an_empty_order_grid_is_refused():
    from dpbounds.privacy.accountants import RdpAccountant

    with pytest.raises(ValueError, match="non-empty"):
        RdpAccountant(orders=[])


def test_tune_nesterov_methods_are_checked():
    from dpbounds.tuning.nesterov import tune_nesterov

    kw = dict(mu=0.1, L=1.0, d=2, n=100, epsilon=1.0, sensitivity=1.0, initial_gap=1.0,
              max_horizon=20)
    with pytest.raises(ValueError, match="at least one"):
        tune_nesterov(methods=(), **kw)
    one = tune_nesterov(methods="nag", **kw)  # a name, not its letters
    assert {c.label.split()[0].removesuffix("-opt") for c in one.choices} == {"DP-NAG"}


def test_audit_plan_target_ratio_above_one_is_refused(capsys):
    assert main(["audit", "plan", "dp_nag", "--target-ratio", "1.5"]) == EXIT_USAGE
    assert "(0, 1]" in capsys.readouterr().err


def test_compose_time_budget_past_the_timer_is_refused(capsys):
    # was: "error: timestamp too large to convert to C _PyTime_t"
    assert main(["privacy", "compose", "--time-budget", "1e300", "--event",
                 "gaussian:z=1,steps=10"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "time_budget must lie in" in err and "_PyTime_t" not in err


def test_an_exception_in_plugin_code_names_the_plugin(tmp_path):
    # was: "internal error: RuntimeError: boom (this is a bug ...)", exit 4
    from tests.test_edges_fuzz import _cli

    plug = tmp_path / "boom.py"
    plug.write_text(
        "from dpbounds import extend as ex\n"
        "def sens(f, p):\n"
        "    raise RuntimeError('boom')\n"
        "method = ex.Method('boom_m', step=lambda x, grad, noise, p: "
        "x - p['eta'] * (grad(x) + noise), mechanism='gaussian', "
        "neighbouring='replace-one', sensitivity=sens)\n"
        "ex.audit_setting(method, steps=3, params={'eta': 1.0})\n")
    r = _cli("--plugin", str(plug), "calibrate", "boom_m", "--steps", "10", "--N", "100")
    assert r.returncode == 2, r.stderr
    assert f"error in plug-in {plug.resolve()}, line 3 (in sens)" in r.stderr
    assert "this is a bug" not in r.stderr


def test_an_internal_error_without_plugins_is_still_internal(monkeypatch, capsys):
    # control: an exception raised by dpbounds' own code keeps exit 4 and its wording
    import dpbounds.cli.privacy_cmd as privacy_cmd

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("ours")

    monkeypatch.setattr(privacy_cmd, "run", broken)
    code = main(["privacy", "--epsilon", "1"])
    err = capsys.readouterr().err
    assert code == 4 and "internal error: RuntimeError: ours" in err and "plug-in" not in err


def test_an_example_plugin_runs_as_a_script():
    # _register_method read a fixed stack depth: "call stack is not deep enough" there
    import subprocess
    import sys

    from tests.test_edges_fuzz import ROOT

    r = subprocess.run([sys.executable, str(ROOT / "examples" / "dp_sgd_poisson.py")],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "ledgers equal: True" in r.stdout


def test_rate_hb_at_zero_steps(capsys):
    # the in-place path read v[0] of an empty schedule: "internal error: IndexError"
    assert main(["rate", "hb", "--alpha", "0.5", "--beta", "0.2", "--mu", "0.1", "--L", "1",
                 "--steps", "0"]) == 0
    assert "[1, 1" in capsys.readouterr().out  # F(x_0) - F* <= 1 is the worst case at T = 0


# ------------------------------------------------------------------ audit options not read
@pytest.mark.parametrize("argv, says", [
    (["dp_sgd", "--replay", "--noise-factor", "3"], "--noise-factor is not read with --replay"),
    (["dp_sgd", "--replay", "--plan"], "--plan is not read with --replay"),
    (["dp_nag", "--plan", "--trials", "5000"], "--trials is not read with --plan"),
    (["dp_nag", "--plan", "--low-bits"], "--low-bits is not read with --plan"),
    (["dp_nag", "--quick", "--trials", "500"], "not both"),
    (["dp_nag", "--list"], "take no ALGORITHM"),
    (["dp_nag", "--quick", "--target-ratio", "0.5"], "--target-ratio is read by --plan only"),
])
def test_audit_options_a_mode_does_not_read_are_refused(argv, says, capsys):
    # each was accepted and dropped (the same output as without it)
    assert main(["audit", *argv]) == EXIT_USAGE
    assert says in capsys.readouterr().err


def test_audit_options_a_mode_reads_are_accepted(capsys):
    # control: the replay's own options, and --confidence with --plan's pilot (not run here)
    assert main(["audit", "dp_sgd", "--replay", "--seed", "2", "--json"]) == 0
    capsys.readouterr()
    from dpbounds.cli.audit_cmd import _READ_BY

    assert "--plan" in _READ_BY["confidence"][1] and "audit" in _READ_BY["confidence"][1]


# ------------------------------------------------------------------ did you mean
@pytest.mark.parametrize("argv, near", [
    (["verify", "strongly_convex.nag", "--problem", "quadratc"], "did you mean 'quadratic'?"),
    (["tune", "hbb"], "did you mean 'hb'?"),
])
def test_argparse_choices_suggest_the_near_one(argv, near, capsys):
    with pytest.raises(SystemExit) as exit_:  # argparse's own exit
        main(argv)
    assert exit_.value.code == EXIT_USAGE
    assert near in capsys.readouterr().err


def test_a_far_choice_suggests_nothing(capsys):
    # control: nothing close, no suggestion
    with pytest.raises(SystemExit) as exit_:
        main(["verify", "strongly_convex.nag", "--problem", "zzzzzz"])
    assert exit_.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "invalid choice" in err and "did you mean" not in err


def test_a_confidence_near_one_is_not_printed_as_100_percent():
    from dpbounds.audit.runner import _percent

    assert [_percent(x) for x in (0.95, 0.9999, 0.5, 1 - 1e-9)] == [
        "95%", "99.99%", "50%", "99.9999999%"]
