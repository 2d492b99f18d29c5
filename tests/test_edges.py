"""The edges of issue 36 item 5, one test each (each failed before its fix):

* output paths (``verify --plot``, ``--store``) are checked before any work, and the result is
  printed before the figure is written (a late I/O error loses nothing);
* ``rate hb`` prints an extreme rho in scientific notation (it printed 300 digits);
* a mistyped name gets "did you mean" (difflib), not the whole list;
* ``audit plan --help`` has its own page; ``audit --list`` and the relation spelling agree
  with what ``audit`` accepts;
* ``docs/getting_started.md`` gives the README's test command.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest

from dpbounds.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]

_QUICK = ["verify", "tran_cutkosky.alg1", "--vary", "d", "--values", "4", "16", "--N", "250",
          "--trials", "3", "--quiet"]


class _Ran(Exception):
    pass


@pytest.fixture
def no_study(monkeypatch):
    """``scaling_study`` replaced by a probe that records the call and stops the command."""
    import dpbounds.verify

    calls: list[str] = []

    def probe(*args, **kwargs):
        calls.append(args[0])
        raise ValueError("probe: the study was started")

    monkeypatch.setattr(dpbounds.verify, "scaling_study", probe)
    return calls


@pytest.mark.parametrize("flags, words", [
    (["--plot", "/nonexistent/dir/x.png"], ["--plot", "does not exist"]),
    (["--plot", "{tmp}/x.unknownext"], ["--plot", "unknown figure format"]),
    (["--plot", "{tmp}"], ["--plot", "is a folder"]),
    (["--plot", "{tmp}/x.png/"], ["--plot", "is a folder"]),  # fuzz 8: Path drops the '/'
    (["--store", "/proc/x"], ["--store", "cannot create"]),
    (["--store", "{tmp}/file"], ["--store", "not a folder"]),
])
def test_output_paths_are_checked_before_the_study(flags, words, tmp_path, no_study, capsys):
    (tmp_path / "file").write_text("x")
    argv = [*_QUICK, *(f.format(tmp=tmp_path) for f in flags)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("dpbounds: error: ")
    assert all(w in err for w in words), err
    assert no_study == []  # before: the whole study ran first
    # control: a writable path gets as far as the study
    assert main([*_QUICK, "--plot", str(tmp_path / "ok.png"), "--store",
                 str(tmp_path / "store")]) == 2
    assert no_study == ["tran_cutkosky.alg1"] and "probe" in capsys.readouterr().err


def test_a_late_io_error_loses_no_result(monkeypatch, tmp_path, capsys):
    """The figure fails after the study (disk full): the JSON is on stdout, complete, and the
    error is one line; the status is the study's own (this quick study is INCONCLUSIVE, 3; a
    passing one gives 2) (before: 'internal error', status 1, no result)."""
    from dpbounds.cli import verify_cmd

    def full(res, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(verify_cmd, "plot_result", full)
    rc = main([*_QUICK, "--json", "--plot", str(tmp_path / "v.png")])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["theorem"] == "nonconvex.tree_momentum_nsgd" and len(doc["values"]) == 2
    assert rc == 3 and "No space left on device" in err and "result above is complete" in err
    assert len(err.strip().splitlines()) == 1


def test_internal_errors_have_their_own_exit_status(monkeypatch, capsys):
    """4: never a command's own status (1 is a failed verdict, 3 an inconclusive one)."""
    from dpbounds.cli import EXIT_INTERNAL, verify_cmd

    def bug(args):
        raise KeyError("bug")

    monkeypatch.setattr(verify_cmd, "run", bug)
    assert main(["verify", "--list"]) == EXIT_INTERNAL == 4
    assert "internal error" in capsys.readouterr().err


def test_rate_prints_extreme_rates_in_scientific_notation(capsys):
    alpha, beta, mu, L = 0.5, 0.3, 1e-300, 1e300
    assert main(["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "1e-300", "--L",
                 "1e300", "--no-lmi"]) == 0
    out = capsys.readouterr().out
    rhos = re.findall(r"rho = (\S+)", out)
    assert len(rhos) == 2 and all(len(r) <= 16 for r in rhos), rhos  # before: 302 characters
    # oracle: the largest root of z^2 - (1 + beta - alpha lambda) z + beta at lambda = L
    # (the heavy-ball iteration matrix on the eigenvalue that dominates)
    want = np.abs(np.roots([1.0, -(1.0 + beta - alpha * L), beta])).max()
    assert float(rhos[0]) == pytest.approx(want, rel=1e-9)
    assert mu < L
    # control: an ordinary rate keeps its nine decimals
    main(["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1",
          "--no-lmi"])
    assert "rho = 0.547722558" in capsys.readouterr().out


@pytest.mark.parametrize("argv, want", [
    (["verify", "tran_cutkosky.alg3", "--quick"], "'tran_cutkosky.alg2'"),
    (["bound", "nonconvex.clipped_sdg"], "'nonconvex.clipped_sgd'"),
    (["audit", "dp_sgf"], "'dp_sgd'"),
    (["audit", "plan", "dp_foo"], None),  # nothing close: no suggestion, and no list
])
def test_an_unknown_name_gets_did_you_mean(argv, want, capsys):
    from dpbounds.audit.registry import AUDITS, RELEASE_AUDITS

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err) < 250 and "dp_gd_laplace_grid" not in err, err
    assert want is None or ("did you mean" in err and want in err), err
    # control: the list it printed before was longer than the whole message is now
    assert len(str(sorted({**AUDITS, **RELEASE_AUDITS}))) > 250


def test_the_static_name_check_gives_the_librarys_message():
    """The CLI checks names from the catalog before importing the registries; the message is
    the one the library gives."""
    from dpbounds._discovery import unknown_name
    from dpbounds.audit.runner import _spec
    from dpbounds.cli import _catalog

    static = _catalog.load()["rows"]["audit"]
    with pytest.raises(ValueError) as exc:
        _spec("dp_sgf")
    assert str(exc.value) == unknown_name("audit", "dp_sgf", [r["algorithm"] for r in static],
                                          "dpbounds audit --list")


def _options(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {s: a.dest for a in parser._actions for s in a.option_strings}


def _audit_parser() -> argparse.ArgumentParser:
    return next(a for a in build_parser("audit")._actions
                if isinstance(a, argparse._SubParsersAction)).choices["audit"]


def test_audit_plan_has_its_own_help_page(capsys):
    for argv, head in ((["audit", "plan", "--help"], "usage: dpbounds audit plan ALGORITHM"),
                       (["audit", "--help"], "usage: dpbounds audit [")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        assert capsys.readouterr().out.startswith(head), argv  # before: both the audit page
    # every option of the plan page is the audit parser's (with the same destination)
    from dpbounds.cli import audit_cmd

    plan = audit_cmd._plan_page(("add_remove", "replace_one"))
    full = _options(_audit_parser())
    assert {k: v for k, v in _options(plan).items() if k not in ("-h", "--help")}.items() \
        <= full.items()


def test_audit_list_shows_every_name_audit_accepts_with_the_flags_spelling(capsys):
    from dpbounds.audit.registry import AUDITS, RELEASE_AUDITS
    from dpbounds.privacy import Neighbouring

    main(["audit", "--list"])
    listed = capsys.readouterr().out
    for name in (*AUDITS, *RELEASE_AUDITS):  # before: dp_gd_laplace_grid was missing
        assert re.search(rf"^{re.escape(name)}\*?\s", listed, re.M), name
    main(["audit", "--list-mutants"])
    text = listed + capsys.readouterr().out
    values = {m.value for m in Neighbouring}
    main(["audit", "--list", "--json"])
    assert {r for row in json.loads(capsys.readouterr().out) for r in row["relations"]} == values
    main(["audit", "--list-mutants", "--json"])
    labels = {a.rsplit(" (", 1)[1].rstrip(")") for row in json.loads(capsys.readouterr().out)
              for a in row["applies_to"]}
    assert labels == values  # before: 'replace-one', 'add/remove'
    assert not re.search(r"\((add/remove|replace-one)\)|(add/remove|replace-one),", text)
    choices = {a.dest: a.choices for a in _audit_parser()._actions}["neighbouring"]
    assert set(choices) == values  # control: the legacy spellings are not the flag's choices
    assert not {m.legacy for m in Neighbouring} & set(choices)


def test_getting_started_gives_the_readmes_test_command():
    def command(path: Path) -> list[str]:
        return [line.strip() for line in path.read_text().splitlines()
                if line.startswith("python3 -m venv") and "pytest" in line]

    readme = command(ROOT / "README.md")
    assert len(readme) == 1 and "mypy" in readme[0]
    assert command(ROOT / "docs" / "getting_started.md") == readme


def test_the_progress_line_compares_cpu_with_the_cpu_estimate(capsys):
    """The study's estimate is CPU time; the heartbeat compared wall time with it ("14.6 min
    of an estimated 6.6 min CPU" on a loaded machine). A run that waits (wall passes, no CPU)
    must report about 0 s of CPU against the estimate, and the wall time beside it."""
    import time

    from dpbounds.cli.verify_cmd import _Heartbeat

    beat = _Heartbeat("verify x", every=0.05)
    beat.total, beat.planned = 600.0, True
    with beat:
        time.sleep(2.2)  # waiting: CPU stays near 0 while 2 s of wall time pass
    lines = capsys.readouterr().err.strip().splitlines()
    last = lines[-1]
    assert last.startswith("verify x: running, ") and "of an estimated 10.0 min CPU" in last
    cpu, wall = re.search(r"running, (\d+) s CPU of .* \((\d+) s wall\)", last).groups()
    assert int(cpu) == 0 and int(wall) == 2, last  # before: "running, 2 s of an estimated..."
