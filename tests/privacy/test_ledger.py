"""PrivacyLedger: the ledger's report equals direct composition in each accountant, and the
Lee & Kifer budget arithmetic (closed form) for a DP-AGD-like spend."""

from __future__ import annotations

import logging
import math

import pytest

from dpbounds.privacy import accountants as A
from dpbounds.privacy import mechanisms as M
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.zcdp import dp_to_zcdp_rho

logging.getLogger().setLevel(logging.ERROR)


def test_ledger_matches_direct_composition():
    led = PrivacyLedger()
    g = M.GaussianMechanism(10.0, 1.0)
    led.record(g, 30)
    led.record(g, 20)  # merged with the previous entry
    led.record(M.PureDpMechanism(0.05), 10)
    assert led.entries == ((g, 50), (M.PureDpMechanism(0.05), 10)) and len(led) == 60
    for name in ("rdp", "zcdp", "pld"):
        direct = A.make_accountant(name).compose(g, 50).compose(M.PureDpMechanism(0.05), 10)
        assert led.epsilon(1e-6, name) == pytest.approx(direct.get_epsilon(1e-6), rel=1e-12)
    rep = led.report(1e-6)
    assert rep["pure"] is None and rep["pld"] <= rep["rdp"] <= rep["zcdp"]


def test_lee_kifer_budget_ledger():
    # spend rho from eq. (5) in gradient (rho_ng) and NoisyMax (eps_nmax) pieces
    eps_tot, delta = 0.4, 1e-8
    rho = dp_to_zcdp_rho(eps_tot, delta)
    eps_nmax = eps_tot / 120
    rho_nmax = eps_nmax**2 / 2
    rho_ng = eps_nmax**2 / (4 * math.log(1.25 / delta))
    rounds = int(rho // (rho_nmax + rho_ng))
    led = PrivacyLedger()
    c_grad = 3.0
    sigma = c_grad / math.sqrt(2 * rho_ng)
    led.record(M.GaussianMechanism(sigma, c_grad), rounds)
    led.record(M.PureDpMechanism(eps_nmax), rounds)
    assert led.accountant("zcdp").rho == pytest.approx(rounds * (rho_ng + rho_nmax), rel=1e-12)
    assert led.epsilon(delta, "zcdp") <= eps_tot
    assert round(rho / (rho_nmax + rho_ng)) == 377  # lee_kifer.md §8 table, eps_tot = 0.4


def test_ledger_inputs():
    led = PrivacyLedger("replace_one")
    with pytest.raises(ValueError, match="mechanism"):
        led.record("gaussian")
    with pytest.raises(ValueError, match="count"):
        led.record(M.GaussianMechanism(1.0), -1)
    led.record(M.SubsampledLaplaceMechanism(1.0, 0.1, 10, 100), 5)
    assert led.epsilon(None, "pure") == pytest.approx(
        5 * math.log1p(0.1 * math.expm1(0.1)), rel=1e-14)
