"""The Opacus-interface accountant and ``PrivacyLedger.from_opacus`` (issue 35, item 2).

Oracles: Opacus's history rule written out here (a step with the last step's pair extends it,
as ``opacus.accountants.RDPAccountant.step``), and dp_accounting's PLD accountant on the same
steps as ``PoissonSampledDpEvent``s (independent of dpbounds; rel 1e-3 plus two 1e-3 grid
intervals; the 1e-3 grid is within 3e-4 of the 1e-4 one here, at a tenth of the CPU).
Negative controls: a 10% smaller noise multiplier is outside that tolerance; the histories
Opacus's accountants would silently account wrongly (noise 0, rate > 1) are refused.
The Opacus integration (register, a real DP-SGD loop on a tiny model, checkpoint) needs Opacus
and torch (the ``opacus`` extra; CI installs it) and skips cleanly without them; there Opacus's
own PRV accountant (its certified interval) and RDP accountant are further oracles.
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


def _dpa_epsilon(history, scale=1.0, delta=1e-5):
    """dp_accounting's PLD (pessimistic, grid 1e-3) on (noise_multiplier, sample_rate, steps),
    the noise multipliers times ``scale``."""
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    for z, q, n in history:
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z * scale)), n)
    return acc.get_epsilon(delta)


def test_history_and_epsilon_match_opacus_rule_and_dp_accounting():
    acc = DpboundsAccountant()
    for z, q in STEPS:
        acc.step(noise_multiplier=z, sample_rate=q)
    assert acc.history == _opacus_history(STEPS) == [(1.1, 0.01, 300), (0.9, 0.02, 100),
                                                      (1.1, 0.01, 200)]
    assert len(acc) == 600
    eps, ref = acc.get_epsilon(1e-5), _dpa_epsilon(acc.history)
    assert acc.last_accountant == "pld" and acc.last_fallback is None
    assert abs(eps - ref) <= 1e-3 * ref + 2e-3, (eps, ref)
    lo, hi = acc.epsilon_bracket(1e-5)
    assert lo <= ref * (1 + 1e-9) and hi == pytest.approx(eps, rel=1e-12)
    assert eps == PrivacyLedger.from_opacus(acc).epsilon(1e-5, "pld")
    wrong = _dpa_epsilon(acc.history, scale=0.9)  # negative control
    assert abs(eps - wrong) > 1e-3 * ref + 2e-3
    rdp = DpboundsAccountant("rdp")
    rdp.load_state_dict(acc.state_dict())
    assert rdp.get_epsilon(1e-5) >= eps and rdp.last_accountant == "rdp"


def test_the_optimizer_hook_accounts_accumulated_steps_at_their_rate():
    # mutant hunt 7: the hook with `sample_rate=sample_rate` (accumulation ignored) passed
    # every check (the Opacus test trains without accumulation): with K backward passes per
    # optimiser step, a step samples at K q, as Opacus's own IAccountant hook says. Oracle:
    # dp_accounting's PLD at rate K q; control: the rate-q reading is far below it.
    from types import SimpleNamespace

    acc = DpboundsAccountant()
    hook = acc.get_optimizer_hook_fn(sample_rate=0.01)
    optim = SimpleNamespace(noise_multiplier=1.1, accumulated_iterations=4)
    for _ in range(200):
        hook(optim)
    assert acc.history == [(1.1, 0.04, 200)]
    eps, ref = acc.get_epsilon(1e-5), _dpa_epsilon([(1.1, 0.04, 200)])
    assert abs(eps - ref) <= 1e-3 * ref + 2e-3, (eps, ref)
    assert _dpa_epsilon([(1.1, 0.01, 200)]) < 0.5 * eps


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


@pytest.mark.filterwarnings("ignore:Secure RNG turned off:UserWarning")
@pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")
def test_opacus_training_loop_prints_the_ledger_epsilon(tmp_path):
    """A real Opacus DP-SGD loop (Poisson sampling, rate 8/64; 16 steps at noise 1.1, then 8
    at 0.9) through the registered accountant. What ``PrivacyEngine.get_epsilon`` returns is
    the ledger's epsilon to the bit, within dp_accounting's PLD tolerance (rel 1e-3 plus two
    1e-3 grid intervals) and inside the certified interval of Opacus's own PRV accountant
    (Gopi et al., eps_error 0.01) on the same history, and below Opacus's RDP accountant's.
    Measured (Opacus 1.6.0, torch 2.13.0+cpu, seed 0): ours 4.726745, dp_accounting 4.726750,
    PRV [4.716368, 4.737119] (estimate 4.726744), RDP 5.497631. Negative controls: the history
    with one step fewer (4.678071) or 10% less noise (about 5.8) is outside both checks.
    """
    torch = pytest.importorskip("torch")
    opacus = pytest.importorskip("opacus", minversion="1.6")  # register_accountant
    from opacus.accountants import create_accountant
    from opacus.data_loader import DPDataLoader

    register_with_opacus("dpbounds")
    cls = register_with_opacus("dpbounds")  # again: a dpbounds accountant's name is replaced
    assert type(create_accountant("dpbounds")) is cls
    with pytest.raises(ValueError, match="already registered"):
        register_with_opacus("rdp")  # Opacus's own accountants are never overwritten
    assert type(create_accountant("rdp")).__name__ == "RDPAccountant"

    torch.manual_seed(0)
    torch.set_num_threads(1)  # a 4-parameter model: no thread pool next to pytest -n auto
    model = torch.nn.Linear(4, 1)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    engine = opacus.PrivacyEngine(accountant="dpbounds")
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(data, batch_size=8), noise_multiplier=1.1,
        max_grad_norm=1.0, poisson_sampling=True)
    assert isinstance(loader, DPDataLoader) and loader.sample_rate == 8 / 64
    for epoch in range(3):
        if epoch == 2:
            opt.noise_multiplier = 0.9
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    acc = engine.accountant
    assert type(acc) is cls
    assert acc.history == [(1.1, 0.125, 16), (0.9, 0.125, 8)] and len(acc) == 24

    eps = engine.get_epsilon(1e-5)
    assert acc.last_accountant == "pld" and acc.last_fallback is None
    assert eps == PrivacyLedger.from_opacus(acc).epsilon(1e-5, "pld")

    ref = _dpa_epsilon(acc.history)
    tol = 1e-3 * ref + 2e-3
    assert abs(eps - ref) <= tol, (eps, ref)
    prv = create_accountant("prv")
    prv.history = list(acc.history)
    lo, _, hi = prv._get_dprv(eps_error=0.01, delta_error=1e-8).compute_epsilon(1e-5, 1e-8, 0.01)
    assert lo <= eps <= hi, (lo, eps, hi)
    rdp = create_accountant("rdp")
    rdp.history = list(acc.history)
    assert eps <= rdp.get_epsilon(1e-5)
    for wrong in ([(1.1, 0.125, 15), (0.9, 0.125, 8)], [(0.99, 0.125, 16), (0.81, 0.125, 8)]):
        w = _dpa_epsilon(wrong)  # negative controls: what a misrecorded history would give
        assert abs(eps - w) > tol and not lo <= w <= hi, (wrong, w)

    path = tmp_path / "checkpoint.pt"  # Opacus's checkpoint: our state_dict round trip
    engine.save_checkpoint(path=path, module=model, optimizer=opt)
    engine2 = opacus.PrivacyEngine(accountant="dpbounds")
    engine2.load_checkpoint(path=path, module=model, optimizer=opt)
    assert type(engine2.accountant) is cls and engine2.accountant.history == acc.history
