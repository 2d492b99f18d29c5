"""Edges found at stop 83 (each test fails before its fix)."""

from __future__ import annotations

import pytest


def test_python_reader_checks_the_written_for_note():
    """``dp_event_from_json`` read the note and dropped it, so a PLD-written replace-one file
    read by the RDP accountant in Python was 2.4x low in epsilon with no word (the CLI
    refused it since stop 82). Oracle: the direct composition of the same mechanism."""
    from dpbounds.privacy.events import (
        dp_event_from_json,
        dp_event_note,
        dp_event_to_json,
        ledger_from_dp_event,
        to_dp_event,
    )
    from dpbounds.privacy.ledger import PrivacyLedger
    from dpbounds.privacy.mechanisms import GaussianMechanism

    mech = GaussianMechanism(2.0)
    direct = PrivacyLedger("replace_one")
    for _ in range(10):
        direct.record(mech)
    want = direct.epsilon(1e-5)
    event = to_dp_event((mech, 10), "replace_one", accountant="pld")
    data = dp_event_to_json(event, {"accountant": "pld", "neighbouring": "replace-one"})
    note = dp_event_note(data)
    assert note == {"accountant": "pld", "neighbouring": "replace_one"}
    read = dp_event_from_json(data, accountant="pld", neighbouring="replace_one")
    got = ledger_from_dp_event(read, note["neighbouring"], accountant=note["accountant"])
    assert got.epsilon(1e-5) == pytest.approx(want, rel=1e-9)
    # the control the check exists for: the other accountant reads it 2x low
    wrong = ledger_from_dp_event(read, "replace_one", accountant="rdp").epsilon(1e-5)
    assert wrong < 0.5 * want
    with pytest.raises(ValueError, match="written for dp_accounting's pld accountant"):
        dp_event_from_json(data, accountant="rdp")
    with pytest.raises(ValueError, match="written under replace_one"):
        dp_event_from_json(data, neighbouring="add_remove")
    # no note (an older export, dp_accounting's own file): nothing to check, None
    plain = dp_event_to_json(event)
    assert dp_event_note(plain) is None
    assert dp_event_from_json(plain, accountant="rdp") == event
    for bad in ({"accountant": "prv"}, {"accountant": "rdp", "x": 1}, "pld"):
        with pytest.raises(ValueError, match="written_for must be"):
            dp_event_note({**plain, "written_for": bad})


@pytest.mark.parametrize("given", [False, True])
def test_tune_says_when_E0_is_the_default(given, capsys):
    """``tune nag`` / ``tune hb`` with no ``--E0`` tuned for E0 = 10, Kuru et al.'s guess for
    Fig. 3's data, without saying so (walkthrough of stop 81); the tuned run depends on it."""
    from dpbounds.cli import main

    argv = ["tune", "nag", "--mu", "0.02", "--L", "5.1", "--d", "20", "--n", "100000",
            "--eps", "1", "--S1", "40", "--max-horizon", "5"] + (["--R", "10"] if given else [])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert ("E0 = 10 is the default" in out) is (not given)
    assert "inputs read as public" in out


def test_selection_planners_refuse_wrong_types_with_value_errors():
    """fuzz 15: ``plan_selection`` with a scalar grid axis and ``costlier_points`` with
    ``keys=5`` raised TypeError from ``len()`` / iteration, not a ValueError naming them."""
    from dpbounds.algorithms import dp_sgd
    from dpbounds.tuning.private_selection import costlier_points
    from dpbounds.tuning.selection_budget import plan_selection

    with pytest.raises(ValueError, match=r"grid\['step_size'\] must be a non-empty sequence"):
        plan_selection(None, None, {"step_size": 0.1}, total_epsilon=1.0, score_epsilon=0.1,
                       loss_bound=1.0)
    with pytest.raises(ValueError, match="keys must be a list of grid names"):
        costlier_points(dp_sgd, None, {"steps": [5, 50]}, epsilon=1.0, keys=5)


def test_risk_target_calibrates_the_first_event_only_when_the_next_is_identical():
    """fuzz 17: the ledger merged two identical events into one entry and --risk-target
    re-noised both, printing eps 4.6 where the composition it lists spends 18.5. Oracle: the
    same two events listed directly, the first at the calibrated z."""
    from dpbounds.privacy.composition import compose_events

    twice = ["gaussian:z=1,steps=10", "gaussian:z=1,steps=10"]
    out = compose_events(twice, risk_target=(0.95, 0.05), accountants=["rdp", "pld"],
                         delta=1e-5)
    z = out["risk_target"]["z"]
    direct = compose_events([f"gaussian:z={z!r},steps=10", "gaussian:z=1,steps=10"],
                            accountants=["rdp", "pld"], tradeoff=[0.05], delta=1e-5)
    for got, want in zip(out["results"], direct["results"]):
        assert got["epsilon"] == pytest.approx(want["epsilon"], rel=1e-12)
    assert direct["tradeoff"]["pessimistic"][0] <= 0.95
    assert out["risk_target"]["tpr_attained"] == pytest.approx(
        direct["tradeoff"]["pessimistic"][0], abs=1e-9)
    # a target the second event alone exceeds cannot be met by the first's noise: said so
    with pytest.raises(ValueError, match="events after the first alone allow tpr"):
        compose_events(twice, risk_target=(0.1, 0.01), delta=1e-5)


def _probe_method(**kw):
    from dpbounds import extend as ex

    def step(x, grad, noise, p, memory):
        return x - 0.1 * (grad(x) + noise)

    return ex.Method("below_own_probe", step=step, mechanism="gaussian",
                     neighbouring="replace_one", **kw)


def test_a_plugin_sensitivity_below_its_release_s_own_says_so():
    """fuzz 17: ``clip=1`` with ``sensitivity=1e-6`` ran 66,667x under-noised without a word,
    where the built-ins warn of a sensitivity below the objective's own. Oracle: the clipped
    mean's 2 C / n and the mean gradient's 2 G / n of unit rows (G = 1: |psi'| <= 1)."""
    import warnings

    import numpy as np

    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (30, 3))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    f = LogisticRegression(A, np.sign(A @ np.ones(3)), l2=0.1, l1_radius=3 ** 0.5,
                           l2_radius=1.0)
    own = 2 * 1.0 / 30
    cases = [(dict(clip=1.0, sensitivity=1e-6), "2 clip / n"), (dict(sensitivity=0.9 * own),
             "l2_sensitivity / n"), (dict(sensitivity=own), None), (dict(clip=1.0), None),
             (dict(), None)]
    for kw, words in cases:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            _probe_method(**kw).run(f, epsilon=1.0, delta=1e-5, steps=2, seed=0)
        below = [str(w.message) for w in said if "is below" in str(w.message)]
        if words is None:
            assert below == [], (kw, below)
        else:
            assert len(below) == 1 and words in below[0], (kw, below)
            shown = float(below[0].split(" = ")[1].split(":")[0])
            assert shown == pytest.approx(own, rel=1e-5)
