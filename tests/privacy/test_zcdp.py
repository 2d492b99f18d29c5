"""zCDP (Lee & Kifer Lemmas 3.5-3.8, eq. (5)).

Oracles: dp_accounting's RdpAccountant with ZCDpEvent (its own RDP->DP conversion), the
published Lee & Kifer derived budget table (theory sheet §8), mpmath root-finding of eq. (5),
and the exact Gaussian privacy profile (a Gaussian is rho-zCDP, so any zCDP conversion must be
at least its exact epsilon).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.privacy import gaussian as g
from dpbounds.privacy import zcdp as z


@pytest.mark.parametrize(
    "eps_tot,rho_sheet", [(0.05, 3.388e-5), (0.1, 1.353e-4), (0.4, 2.148e-3), (1.6, 3.331e-2)]
)
def test_lee_kifer_budget_table(eps_tot, rho_sheet):
    # lee_kifer.md §8: rho from (5) at delta = 1e-8 (4 significant digits published)
    rho = z.dp_to_zcdp_rho(eps_tot, 1e-8)
    assert rho == pytest.approx(rho_sheet, rel=6e-4)
    # rho_nmax = eps_nmax^2 / 2 with eps_nmax = eps_tot / 120 (Lemma 3.7)
    assert z.pure_dp_to_zcdp_rho(eps_tot / 120) == pytest.approx((eps_tot / 120) ** 2 / 2)


def test_eq5_against_mpmath_root():
    mp.mp.dps = 40
    for eps, delta in [(0.05, 1e-8), (1.0, 1e-5), (30.0, 1e-12)]:
        L = mp.log(1 / mp.mpf(delta))
        root = mp.findroot(lambda r, L=L, eps=eps: r + 2 * mp.sqrt(r * L) - eps, eps**2 / (4 * L))
        assert z.dp_to_zcdp_rho(eps, delta) == pytest.approx(float(root), rel=1e-13)
        assert z.zcdp_to_dp_epsilon(z.dp_to_zcdp_rho(eps, delta), delta) <= eps


def test_tight_conversion_matches_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_acc

    orders = np.concatenate([np.linspace(1.011, 20, 4000), np.geomspace(20, 1e5, 4000)])
    worst = 0.0
    for rho in [1e-5, 1e-3, 0.05, 1.0, 10.0]:
        for delta in [1e-3, 1e-6, 1e-10]:
            acc = rdp_acc.RdpAccountant(list(orders))
            acc.compose(dpa.ZCDpEvent(rho))
            ref = acc.get_epsilon(delta)
            ours = z.zcdp_to_dp_epsilon(rho, delta, method="tight")
            assert ours <= ref * (1 + 1e-9) + 1e-12  # continuous optimum <= grid optimum
            if ref > 1e-6:
                worst = max(worst, abs(ours - ref) / ref)
            assert ours <= z.zcdp_to_dp_epsilon(rho, delta)  # tighter than Lemma 3.8
    assert worst < 1e-4


def test_conversions_dominate_exact_gaussian():
    # the Gaussian with sigma is rho-zCDP; its exact epsilon can only be smaller
    for sigma in [0.5, 2.0, 10.0]:
        rho = z.gaussian_zcdp_rho(sigma, 1.0)
        for delta in [1e-3, 1e-8]:
            exact = g.gaussian_epsilon(sigma, delta, 1.0)
            assert exact <= z.zcdp_to_dp_epsilon(rho, delta, "tight") + 1e-12
            assert z.zcdp_to_dp_epsilon(rho, delta, "tight") <= z.zcdp_to_dp_epsilon(rho, delta)


def test_gaussian_rho_roundtrip_and_composition():
    s = z.gaussian_sigma_for_zcdp(0.02, 3.0)
    assert s == pytest.approx(3.0 / math.sqrt(0.04), rel=1e-14)
    assert z.gaussian_zcdp_rho(s, 3.0) <= 0.02
    assert z.compose_zcdp([0.1, 0.2, 0.3]) == pytest.approx(0.6)


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(1e-3, 50.0), log10_delta=st.floats(-12.0, -2.0),
       method=st.sampled_from(["standard", "tight"]))
def test_dp_to_zcdp_never_overshoots(eps, log10_delta, method):
    delta = 10.0**log10_delta
    rho = z.dp_to_zcdp_rho(eps, delta, method=method)
    assert np.isfinite(rho) and rho > 0
    e = z.zcdp_to_dp_epsilon(rho, delta, method=method)
    assert e <= eps and e == pytest.approx(eps, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(rho=st.floats(0.0, 1e6), log10_delta=st.floats(-300.0, -1e-3))
def test_conversion_finite(rho, log10_delta):
    delta = 10.0**log10_delta
    for method in ("standard", "tight"):
        e = z.zcdp_to_dp_epsilon(rho, delta, method)
        assert np.isfinite(e) and e >= 0


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: z.dp_to_zcdp_rho(0.0, 1e-5), "epsilon"),
        (lambda: z.dp_to_zcdp_rho(1.0, 1.0), "delta"),
        (lambda: z.zcdp_to_dp_epsilon(-1.0, 1e-5), "rho"),
        (lambda: z.zcdp_to_dp_epsilon(1.0, 1e-5, "exact"), "method"),
        (lambda: z.gaussian_zcdp_rho(1.0, -1.0), "sensitivity"),
        (lambda: z.gaussian_sigma_for_zcdp(0.0), "rho"),
        (lambda: z.pure_dp_to_zcdp_rho(float("nan")), "epsilon"),
    ],
)
def test_invalid_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_dp_to_zcdp_standard_never_overshoots_by_an_ulp():
    # found by hypothesis: the 2-ulp margin was not enough, Lemma 3.8 gave eps + 1 ulp
    eps, delta = 24.38894409236296, 1e-12
    rho = z.dp_to_zcdp_rho(eps, delta)
    with mp.workdps(50):  # oracle: Lemma 3.8 on the exact real rho
        r = mp.mpf(rho)
        assert r + 2 * mp.sqrt(r * mp.log(1 / mp.mpf(delta))) <= eps
    assert z.zcdp_to_dp_epsilon(rho, delta) <= eps
