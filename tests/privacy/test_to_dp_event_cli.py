"""``privacy compose --to-dp-event FILE``: the composition written as one dp_accounting
DpEvent (walkthrough of stop 79: no shell command wrote one).

Oracles: dp_accounting's own RDP and PLD accountants on the written event (an external
library), against the table's epsilons; the file read back by ``--from-dp-event``.
"""

from __future__ import annotations

import json

import pytest

dp_accounting = pytest.importorskip("dp_accounting")

from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

from dpbounds.privacy.events import dp_event_from_json  # noqa: E402


def _cli(argv, capsys):
    from dpbounds.cli import main

    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _table(out):
    return {r["accountant"]: r["epsilon"] for r in json.loads(out)["results"]}


@pytest.mark.parametrize("relation, reader, events", [
    ("add_remove", "rdp", ["gaussian:z=1.1,steps=300,q=0.01", "laplace:b=4"]),
    ("add_remove", "pld", ["gaussian:z=1.1,steps=300,q=0.01", "laplace:b=4"]),
    ("replace_one", "rdp", ["gaussian:sigma=8,sens=2,steps=20"]),
    ("replace_one", "pld", ["gaussian:sigma=8,sens=2,steps=20"]),
])
def test_the_written_event_reads_the_tables_epsilon_in_dp_accounting(relation, reader, events,
                                                                     tmp_path, capsys):
    path = tmp_path / "ev.json"
    argv = ["privacy", "compose", *[a for e in events for a in ("--event", e)],
            "--neighbouring", relation, "--to-dp-event", str(path), "--json", "--quiet",
            *(["--dp-event-accountant", reader] if relation == "replace_one" else [])]
    rc, out, err = _cli(argv, capsys)
    assert rc == 0, err
    ours = _table(out)[reader]
    event = dp_event_from_json(json.loads(path.read_text()))
    nb = (dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE if relation == "add_remove"
          else dp_accounting.NeighboringRelation.REPLACE_ONE)
    if reader == "rdp":
        acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=nb)
    else:
        acc = pld_privacy_accountant.PLDAccountant(nb, value_discretization_interval=1e-4)
    theirs = acc.compose(event).get_epsilon(1e-5)
    # the same mechanisms: within the accountants' own differences (orders, discretisation)
    assert theirs == pytest.approx(ours, rel=0.03)
    rc, back, _ = _cli(["privacy", "compose", "--from-dp-event", str(path), "--neighbouring",
                        relation, "--json", "--quiet",
                        *(["--dp-event-accountant", reader] if relation == "replace_one"
                          else [])], capsys)
    assert rc == 0 and _table(back)[reader] == pytest.approx(ours, rel=1e-6)


def test_a_mechanism_without_an_event_is_said_after_the_table(tmp_path, capsys):
    path = tmp_path / "ev.json"
    rc, out, err = _cli(["privacy", "compose", "--event", "pure:eps=1", "--to-dp-event",
                         str(path), "--quiet"], capsys)
    assert rc == 2 and "accountant" in out  # the table first
    assert "PureDpMechanism has no dp_accounting event" in err and not path.exists()


@pytest.mark.parametrize("target, words", [
    ("{tmp}/missing/ev.json", "does not exist"),
    ("{tmp}/ev.txt", "ending in .json"),
    ("{tmp}", "is a folder"),
    ("", "is empty"),
])
def test_paths_are_checked_before_any_work(target, words, tmp_path, capsys):
    rc, out, err = _cli(["privacy", "compose", "--event", "gaussian:z=1", "--to-dp-event",
                         target.format(tmp=tmp_path), "--quiet"], capsys)
    assert rc == 2 and out == "" and words in err


def test_a_runs_result_exports_its_ledger_and_the_summary_says_where_it_is():
    """Walkthrough of stop 79: to_dp_event(result.ledger) (the spend summary) failed without
    naming result.privacy.ledger. The result and its privacy export the same event as the
    ledger; dp_accounting reads it at most at the run's epsilon (oracle: its RDP accountant)."""
    from dpbounds.algorithms import dp_gd
    from dpbounds.cli.tune_runs_cmd import build_problem
    from dpbounds.privacy.events import to_dp_event

    f = build_problem("logistic", 200, 3, 0.02, None, 0)
    r = dp_gd(f, epsilon=1.0, steps=5, step_size=0.5, seed=0, mechanism="gaussian",
              delta=1e-6)
    want = to_dp_event(r.privacy.ledger)
    assert to_dp_event(r) == want and to_dp_event(r.privacy) == want
    acc = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    # dpbounds calibrates by zCDP (conservative): dp_accounting reads at most 1, not far below
    assert 0.7 <= acc.compose(want).get_epsilon(1e-6) <= 1.0
    with pytest.raises(ValueError, match="result.privacy.ledger"):
        to_dp_event(r.ledger)


def test_the_shell_says_how_dp_accounting_reads_the_written_file(tmp_path, capsys):
    """Walkthrough of stop 79: without replacement dp_accounting reads ~1.6x what dpbounds
    does, and nothing said so at export. The line's number is dp_accounting's own reading of
    the file (oracle: its RDP accountant on it here)."""
    import re

    path = tmp_path / "wor.json"
    rc, out, err = _cli(["privacy", "compose", "--event",
                         "gaussian:z=2.29,q=0.025,sampling=wor,steps=200", "--neighbouring",
                         "replace_one", "--dp-event-accountant", "rdp", "--to-dp-event",
                         str(path), "--quiet"], capsys)
    assert rc == 0, err
    said = float(re.search(r"rdp accountant reads at eps = ([0-9.e+-]+)", out).group(1))
    acc = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    theirs = acc.compose(dp_event_from_json(json.loads(path.read_text()))).get_epsilon(1e-5)
    assert said == pytest.approx(theirs, rel=1e-5)
    ours = float(re.search(r"dpbounds' rdp: ([0-9.e+-]+)", out).group(1))
    assert theirs > 1.3 * ours  # the looser reading, said at once
