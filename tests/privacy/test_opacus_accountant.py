"""The Opacus-interface accountant and ``PrivacyLedger.from_opacus`` (issue 35, item 2).

Oracles: Opacus's history rule written out here (a step with the last step's pair extends it,
as ``opacus.accountants.RDPAccountant.step``), and dp_accounting's PLD accountant on the same
steps as ``PoissonSampledDpEvent``s (independent of dpbounds; rel 1e-3 plus two grid
intervals). Negative controls: a 10% smaller noise multiplier is outside that tolerance; the
histories Opacus's accountants would silently account wrongly (noise 0, rate > 1) are refused.
The Opacus integration (register, PrivacyEngine on a tiny model) needs Opacus and torch and
skips cleanly without them.
"""

from __future__ import annotations

import logging

import pytest

from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.opacus_accountant import DpboundsAccountant, register_with_opacus

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)
STEPS = [(1.1, 0.01)] * 300 + [(0.9, 0.02)] * 100 + [(1.1, 0.01)] * 200


def _opacus_history(steps):
    """Opacus's rule, written out: consecutive equal (noise, rate) pairs share one entry."""
    out: list[list] = []
    for z, q in steps:
        if out and out[-1][0] == z and out[-1][1] == q:
            out[-1][2] += 1
        else:
            out.append([z, q, 1])
    return [tuple(e) for e in out]


def _reference(steps, scale=1.0):
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    for z, q, n in _opacus_history(steps):
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z * scale)), n)
    return acc.get_epsilon(1e-5)


def test_history_and_epsilon_match_opacus_rule_and_dp_accounting():
    acc = DpboundsAccountant()
    for z, q in STEPS:
        acc.step(noise_multiplier=z, sample_rate=q)
    assert acc.history == _opacus_history(STEPS) == [(1.1, 0.01, 300), (0.9, 0.02, 100),
                                                      (1.1, 0.01, 200)]
    assert len(acc) == 600
    eps, ref = acc.get_epsilon(1e-5), _reference(STEPS)
    assert acc.last_accountant == "pld" and acc.last_fallback is None
    assert abs(eps - ref) <= 1e-3 * ref + 2e-4, (eps, ref)
    lo, hi = acc.epsilon_bracket(1e-5)
    assert lo <= ref * (1 + 1e-9) and hi == pytest.approx(eps, rel=1e-12)
    assert eps == PrivacyLedger.from_opacus(acc).epsilon(1e-5, "pld")
    wrong = _reference(STEPS, scale=0.9)  # negative control
    assert abs(eps - wrong) > 1e-3 * ref + 2e-4
    rdp = DpboundsAccountant("rdp")
    rdp.load_state_dict(acc.state_dict())
    assert rdp.get_epsilon(1e-5) >= eps and rdp.last_accountant == "rdp"


def test_fallback_to_rdp_is_reported():
    acc = DpboundsAccountant()
    acc.load_state_dict({"history": [(1.1, 0.01, 2 * 10**9)], "mechanism": "dpbounds"})
    eps = acc.get_epsilon(1e-5)
    assert acc.last_accountant == "rdp" and "1e+09" in acc.last_fallback
    assert eps == PrivacyLedger.from_opacus(acc.history).epsilon(1e-5, "rdp")


@pytest.mark.parametrize(("history", "match"), [
    ([(0.0, 0.01, 10)], "0 is no privacy"),
    ([(float("nan"), 0.01, 10)], "noise_multiplier"),
    ([(1.0, 0.0, 10)], "sample_rate"),
    ([(1.0, 1.5, 10)], "sample_rate"),
    ([(1.0, 0.01, 0)], "num_steps"),
    ([(1.0, 0.01)], "noise_multiplier, sample_rate, num_steps"),
    ({"steps": []}, "history"),
    ("1.0,0.01,10", "history must be a list"),
])
def test_histories_that_cannot_be_accounted_are_refused(history, match):
    with pytest.raises(ValueError, match=match):
        PrivacyLedger.from_opacus(history)


def test_step_and_load_refuse_and_keep_the_history():
    acc = DpboundsAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(ValueError, match="noise_multiplier"):
        acc.step(noise_multiplier=0.0, sample_rate=0.1)
    with pytest.raises(ValueError, match="cannot be loaded"):
        acc.load_state_dict({"history": [], "mechanism": "rdp"})
    assert acc.history == [(1.0, 0.1, 1)]
    assert PrivacyLedger.from_opacus({"history": [(1.0, 1.0, 3)]}).entries[0][1] == 3


def test_opacus_training_loop_prints_the_ledger_epsilon():
    torch = pytest.importorskip("torch")
    opacus = pytest.importorskip("opacus")
    cls = register_with_opacus("dpbounds")
    model = torch.nn.Linear(4, 1)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    engine = opacus.PrivacyEngine(accountant="dpbounds")
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=loader, noise_multiplier=1.1, max_grad_norm=1.0)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    assert isinstance(engine.accountant, cls)
    eps = engine.get_epsilon(1e-5)
    assert eps == PrivacyLedger.from_opacus(engine.accountant).epsilon(1e-5, "pld")
