"""``PrivacyLedger.report`` says why each ``None`` is one (walkthrough of stop 78).

Oracle: each accountant built directly (``make_accountant``) and fed the same mechanism; its
own error must be the reason given, its own epsilon the value given.
"""

from __future__ import annotations

import pytest

from dpbounds.privacy import PrivacyLedger
from dpbounds.privacy.accountants import UnsupportedMechanismError, make_accountant
from dpbounds.privacy.ledger import LedgerReport
from dpbounds.privacy.mechanisms import GaussianMechanism, LaplaceMechanism

NAMES = ("rdp", "zcdp", "pld", "pure", "basic")


def _direct(name: str, relation: str, mechanism, count: int, delta: float):
    acc = make_accountant(name, relation)
    try:
        acc.compose(mechanism, count)
        return acc.get_epsilon(None if name == "pure" else delta), None
    except (UnsupportedMechanismError, ValueError) as err:
        return None, " ".join(str(err).split())


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
@pytest.mark.parametrize("mechanism", [GaussianMechanism(sigma=3.0, neighbouring="replace_one"),
                                       LaplaceMechanism(scale=2.0, neighbouring="replace_one"),
                                       GaussianMechanism(sigma=3.0)])
def test_each_none_has_the_accountants_own_reason(relation, mechanism):
    ledger = PrivacyLedger(relation)
    ledger.record(mechanism, 4)
    report = ledger.report(1e-6)
    assert isinstance(report, dict) and isinstance(report, LedgerReport)
    assert set(report) == set(NAMES)
    for name in NAMES:
        value, reason = _direct(name, relation, mechanism, 4, 1e-6)
        if reason is None:
            assert report[name] == pytest.approx(value, rel=1e-12)
            assert name not in report.reasons
        else:
            assert report[name] is None
            assert report.reasons[name].startswith(reason)
    assert (set(report.reasons) == {k for k, v in report.items() if v is None})


def test_the_default_relation_is_named_where_it_is_the_cause():
    """Replace-one Gaussian in the default (add/remove) ledger: every accountant gives None,
    and the report says the ledger is add/remove by default and how to account instead; in
    a replace-one ledger the same mechanism has an epsilon (negative control)."""
    mech = GaussianMechanism(sigma=3.0, neighbouring="replace_one")
    default = PrivacyLedger()
    default.record(mech, 4)
    report = default.report(1e-6)
    assert all(v is None for v in report.values())
    for name in ("rdp", "zcdp", "pld"):
        assert "PrivacyLedger('replace_one')" in report.reasons[name]
    text = repr(report)
    assert "add/remove, the default" in text and ".reasons" in text
    right = PrivacyLedger("replace_one")
    right.record(mech, 4)
    fixed = right.report(1e-6)
    assert fixed["rdp"] is not None and "rdp" not in fixed.reasons
    assert "PrivacyLedger('replace_one')" not in repr(fixed)


def test_a_full_report_reads_as_a_plain_dict():
    ledger = PrivacyLedger()
    ledger.record(GaussianMechanism(sigma=3.0), 4)
    report = ledger.report(1e-6, ["rdp", "pld"])
    assert repr(report) == repr(dict(report)) and report.reasons == {}
