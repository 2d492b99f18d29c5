"""The tree studies' node sensitivity, computed apart from the ledger's helper (stop 71).

Both momentum algorithms calibrate their noise with
:func:`dpbounds.privacy.tree.momentum_node_sensitivity` (a closed form). Their studies took the
expected sigma from the same helper, so a sensitivity halved there halved the run's sigma and
the claim's together and every row of Algorithm 2's quick study passed. The studies now take
Delta from :func:`dpbounds.verify.tree_load.node_sensitivity_series` (a product form of the
geometric series), itself checked here against enumeration of every placement."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.cli import main
from dpbounds.verify.tree_load import node_sensitivity_brute_force, node_sensitivity_series


@settings(max_examples=300, deadline=None)
@given(G=st.floats(0.0, 1e6), alpha=st.floats(1e-9, 1.0, exclude_min=True),
       n=st.integers(1, 10**9))
def test_the_series_is_the_ledgers_closed_form(G, alpha, n):
    from dpbounds.privacy.tree import momentum_node_sensitivity

    ours = node_sensitivity_series(G, alpha, n)
    theirs = momentum_node_sensitivity(G, alpha, n)
    # two methods for one number: the product's rounding grows with the log of its terms
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(("n", "epochs"), [(1, 1), (1, 6), (2, 3), (3, 4), (4, 5), (6, 3)])
@pytest.mark.parametrize("alpha", [0.05, 0.3, 0.5, 0.9, 1.0])
def test_no_placement_beats_the_series_and_the_worst_is_its_partial_sum(n, epochs, alpha):
    worst = node_sensitivity_brute_force(2.0, alpha, n, epochs)
    series = node_sensitivity_series(2.0, alpha, n)
    assert worst <= series * (1 + 1e-12)
    # the enumeration's worst placement is the derivation's: the latest occurrence at the
    # node's end, each earlier one (k-1) N + 1 steps older, E - 1 of them
    r = (1 - alpha) ** n
    partial = 2 * 2.0 * (alpha + alpha * (1 - alpha) * sum(r**k for k in range(epochs - 1)))
    assert worst == pytest.approx(partial, rel=1e-12)
    # control: a bound without the earlier epochs (alpha alone) is beaten from two epochs on
    if epochs >= 2 and alpha < 1:
        assert worst > 2 * 2.0 * alpha * (1 + 1e-9)


def test_the_series_refuses_what_has_no_sensitivity():
    for bad in (dict(lipschitz=-1.0, alpha=0.5, steps_per_epoch=2),
                dict(lipschitz=math.nan, alpha=0.5, steps_per_epoch=2),
                dict(lipschitz=1.0, alpha=0.0, steps_per_epoch=2),
                dict(lipschitz=1.0, alpha=1.5, steps_per_epoch=2),
                dict(lipschitz=1.0, alpha=0.5, steps_per_epoch=0),
                dict(lipschitz=1.0, alpha=0.5, steps_per_epoch=2.5),  # was read as 2
                dict(lipschitz=True, alpha=0.5, steps_per_epoch=2),
                dict(lipschitz=1.0, alpha=math.nan, steps_per_epoch=2)):
        with pytest.raises(ValueError):
            node_sensitivity_series(**bad)


@pytest.mark.parametrize("study", ["nonconvex.sensitivity_reduced_nsgd",
                                   "nonconvex.tree_momentum_nsgd"])
def test_a_sensitivity_halved_in_the_shared_helper_fails_the_ledger(study, monkeypatch, capsys):
    from dpbounds.privacy import tree

    # control first: the study's ledger rows hold on correct code
    assert main(["verify", study, "--quick", "--seed", "3"]) in (0, 3)
    rows = [ln for ln in capsys.readouterr().out.splitlines()
            if ln.startswith(study) and " ledger" in ln]
    assert rows and all(" yes " in ln for ln in rows)
    original = tree.momentum_node_sensitivity
    monkeypatch.setattr(tree, "momentum_node_sensitivity",
                        lambda *a, **k: 0.5 * original(*a, **k))
    assert main(["verify", study, "--quick", "--seed", "3"]) == 1
    rows = [ln for ln in capsys.readouterr().out.splitlines()
            if ln.startswith(study) and " ledger " in ln]
    assert rows and all(" NO " in ln for ln in rows)
