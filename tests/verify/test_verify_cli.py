"""``dpbounds verify``: the JSON schema the issue asks for, the exit status of a failing
mutant, the figure, --list, and bad input as one line with status 2."""

from __future__ import annotations

import json

import pytest

from dpbounds.cli import main

_ARGS = ["verify", "tran_cutkosky.alg1", "--vary", "d", "--values", "4", "16", "--N", "250",
         "--trials", "3", "--quiet"]


def test_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([*_ARGS, "--json"])
    doc = json.loads(capsys.readouterr().out)
    for key in ("theorem", "vary", "values", "measured", "bound", "slopes",
                "predicted_exponent", "bound_local_slope", "vacuous", "verdicts"):
        assert key in doc, key
    assert doc["theorem"] == "nonconvex.tree_momentum_nsgd" and doc["vary"] == "d"
    assert doc["values"] == [4.0, 16.0]
    for comp in ("grad_output", "grad_avg", "noise", "bias"):
        assert [set(p) for p in doc["measured"][comp]] == [{"mean", "ci_low", "ci_high"}] * 2
        assert set(doc["slopes"][comp]) == {"slope", "ci_low", "ci_high"}
    assert len(doc["bound"]) == len(doc["vacuous"]) == 2
    assert doc["predicted_exponent"] == 0.25
    assert all({"name", "holds"} <= set(v) for v in doc["verdicts"])
    assert rc == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[doc["status"]]
    assert doc["status"] == ("FAIL" if not doc["holds"] else
                             "INCONCLUSIVE" if doc["inconclusive"] else "PASS")


def test_mutant_fails_with_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["verify", "tran_cutkosky.alg1", "--vary", "d", "--values", "4", "16", "64",
               "--N", "250", "--trials", "3", "--mutation", "noise_d", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 1 and "SOME VERDICTS FAIL" in out and "NO" in out


def test_plot_and_text(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    fig = tmp_path / "v.png"
    main([*_ARGS, "--plot", str(fig)])
    out = capsys.readouterr().out
    assert fig.stat().st_size > 1000
    assert "vacuous" in out and "headline exponent" in out


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--list"]) == 0
    out = capsys.readouterr().out
    assert "tran_cutkosky.alg2" in out and "nonconvex.normalized_sgd" in out


@pytest.mark.parametrize("argv, text", [
    (["verify", "tran_cutkosky.alg1", "--values", "4"], "two grid values"),
    (["verify", "convex.output_perturbation"], "covered"),
    (["verify", "tran_cutkosky.alg1", "--vary", "x"], "invalid choice"),
    (["verify"], "THEOREM"),
    (["verify", "yang.nsgd", "--problem", "quadratic", "--quick"], "does not fit"),
    (["verify", "strongly_convex.nag", "--quick", "--problem", "far"], "does not fit"),
])
def test_bad_input_is_one_line(argv: list[str], text: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    try:
        rc = main([*argv, "--quiet"])
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err


@pytest.mark.parametrize("argv, text", [
    (["verify", "yang.nsgd", "--d", "1e300", "--quick"], "--d is swept by --vary d"),
    (["verify", "yang.nsgd", "--vary", "N", "--d", "1e300", "--quick"], "got 1e+300"),
    (["verify", "yang.nsgd", "--vary", "N", "--values", "50", "1e300", "--quick"],
     "got 1e+300"),
    (["verify", "yang.nsgd", "--trials", "100000", "--quick"], "memory budget"),
    (["verify", "yang.nsgd", "--quick", "--max-seconds", "nan"], "--max-seconds"),
])
def test_giant_or_overridden_input_is_refused(argv: list[str], text: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Flags a sweep overrides are refused, not ignored; large numbers in scientific
    notation (no 301-digit integers); a study above the memory budget is refused."""
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err and len(err) < 400


def test_progress_lines_in_logs(capsys: pytest.CaptureFixture[str]) -> None:
    """stderr is not a terminal under pytest: the regime, the estimate and a heartbeat."""
    from dpbounds.cli import verify_cmd

    beat = verify_cmd._Heartbeat("verify x", every=0.05)
    import time

    with beat:
        time.sleep(0.2)
    rc = main(["verify", "strongly_convex.heavy_ball", "--vary", "N", "--values", "300",
               "1000"])
    err = capsys.readouterr().err
    assert rc == 0
    assert "verify x: planning the grid" in err and "regime: user grid" in err
    assert "estimated cost" in err


def test_help_examples_pass_or_say_inconclusive(capsys: pytest.CaptureFixture[str]) -> None:
    """The first examples of ``verify --help``: Algorithm 1's quick grid is vacuous at every
    point, so correct code ends INCONCLUSIVE (exit 3, saying what would decide), never 0;
    DP-NAG's quick grid is informative and its energy checks powered: exit 0."""
    from dpbounds.cli import verify_cmd

    assert "tran_cutkosky.alg1 --vary d --quick        # vacuous grid: exit 3" in \
        verify_cmd.__doc__
    assert main(["verify", "tran_cutkosky.alg1", "--vary", "d", "--quick", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "no ratio or exact verdict failed" in out
    assert "INCONCLUSIVE (exit 3)" in out and "--grid informative" in out
    assert "strongly_convex.nag --vary N --quick" in verify_cmd.__doc__
    assert main(["verify", "strongly_convex.nag", "--vary", "N", "--quick", "--quiet"]) == 0
    assert "INCONCLUSIVE" not in capsys.readouterr().out


def test_the_estimate_and_the_count_start_at_the_same_cpu() -> None:
    """The heartbeat's count starts before planning; the runs' estimate alone left the
    planning out of the total it was compared with. After ``plan_done(runs)`` the total is
    the CPU used since the count started (oracle: ``time.process_time`` read around a busy
    loop here) plus ``runs``. Negative control: the runs' estimate alone (the old total)
    is below it by the planning's CPU."""
    import time

    from dpbounds.cli.verify_cmd import _Heartbeat

    beat = _Heartbeat("verify x")
    t0 = time.process_time()
    while time.process_time() - t0 < 0.3:  # "planning": 0.3 CPU-s
        pass
    burnt = time.process_time() - t0
    beat.plan_done(2.0)
    assert beat.planned and beat.total is not None
    assert burnt + 2.0 <= beat.total <= burnt + 2.0 + 0.2
    assert not beat.total <= 2.0 + 0.1  # the old total (runs only) misses the planning
    beat.plan_done(None)
    assert beat.total is None


def test_the_estimate_line_adds_what_was_spent() -> None:
    """The estimate line gives the command's whole CPU (spent so far + runs) and both parts;
    without ``spent`` it names the runs' CPU only (the old line, "1 s CPU" for a study whose
    command cost 11.5 CPU-s)."""
    from dpbounds.cli.verify_cmd import _regime_lines

    def line(reg: dict, spent: float | None = None) -> str:
        return next(x for x in _regime_lines(reg, spent) if x.startswith("estimated"))

    reg = dict(name="default grid", why="quick", estimated_total_seconds=1.2)
    assert line(reg, 10.4) == ("estimated cost: 12 s CPU in all (10 s spent on imports and "
                               "planning, 1.2 s for the runs)")
    assert line(reg) == "estimated cost: 1 s CPU"
    # the bootstrap after the runs (stop 65) is part of the total and said apart
    reg.update(estimated_total_seconds=9.0, estimated_analysis_seconds=3.0)
    assert line(reg, 10.0) == ("estimated cost: 19 s CPU in all (10 s spent on imports and "
                               "planning, 6.0 s for the runs, 3.0 s for the analysis)")
    assert line(reg) == "estimated cost: 9 s CPU (6.0 s for the runs, 3.0 s for the analysis)"
    reg.update(estimated_total_seconds=120.0, estimated_analysis_seconds=0.3)
    assert line(reg) == ("estimated cost: 2.0 min CPU (2.0 min for the runs, 0.3 s for the "
                         "analysis)")


def test_verify_freezes_its_imports_and_thaws_them_when_it_returns(monkeypatch) -> None:
    """``verify`` keeps its imported modules out of the collector's full scans while it plans
    and runs (``gc.freeze``: 0.1 CPU-s a full collection otherwise), and ``main`` moves them
    back when the command returns, whatever its status: an in-process caller (this test, a
    notebook) keeps a normal collector. Control: the frozen count is 0 outside the command."""
    import gc

    import dpbounds.verify as verify

    seen: list[int] = []

    def fake_study(*args: object, **kwargs: object) -> None:
        seen.append(gc.get_freeze_count())
        raise ValueError("stop here")

    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(verify, "scaling_study", fake_study)
    rc = main(["verify", "nonconvex.clipped_sgd", "--quick", "--quiet"])
    assert rc == 2 and seen and seen[0] > 10_000, seen
    assert gc.get_freeze_count() == 0


def test_verify_collects_before_it_freezes_and_leaves_a_callers_freeze_alone(monkeypatch):
    """Garbage alive when ``verify`` freezes is collected first (a frozen cycle would never
    be freed), and a caller that froze objects itself keeps them frozen after ``main`` (its
    freeze is not undone; nothing of ``verify``'s is added), also after an earlier ``main``
    that froze and thawed its own (an independent review's mutants: no collection before
    the freeze; the thaw's flag never reset)."""
    import gc
    import weakref

    import dpbounds.verify as verify

    class Node:
        pass

    seen: list[tuple[bool, int]] = []
    refs: list[weakref.ref] = []  # the last garbage cycle made

    def fake_study(*args: object, **kwargs: object) -> None:
        seen.append((refs[-1]() is None, gc.get_freeze_count()))
        raise ValueError("stop here")

    monkeypatch.setattr(verify, "scaling_study", fake_study)
    args = ["verify", "nonconvex.clipped_sgd", "--quick", "--quiet"]
    gc.disable()
    try:
        cycle = Node()
        cycle.self = cycle  # type: ignore[attr-defined]
        refs.append(weakref.ref(cycle))
        del cycle  # garbage that only a collection frees
        assert refs[-1]() is not None
        assert main(args) == 2 and seen[-1][0], seen  # collected before the freeze
        assert gc.get_freeze_count() == 0
        gc.freeze()  # the caller's own
        before = gc.get_freeze_count()
        # nothing added (frozen objects that die leave the count), the caller's not undone
        assert main(args) == 2 and 0 < seen[-1][1] <= before, seen
        assert 0 < gc.get_freeze_count() <= before
    finally:
        gc.unfreeze()
        gc.enable()
