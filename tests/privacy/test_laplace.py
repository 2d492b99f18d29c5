"""Laplace mechanism + amplification without replacement (Kuru et al. eqs. (11)-(13), App. A).

Oracles: closed forms evaluated in exact rational/mpmath arithmetic, the algebraic identities of
Prop. 3.1's proof, dp_accounting's PLD accountant for the m = n case (pure Laplace composition),
and a Monte Carlo check of the variance 2 b^2.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.privacy import laplace as lp

mp.mp.dps = 50


def _eq11_mp(S, b, n, m):
    return float(mp.log((mp.e ** (mp.mpf(S) / (mp.mpf(b) * m)) - 1) * mp.mpf(m) / n + 1))


@pytest.mark.parametrize(
    "S,b,n,m",
    [(1.0, 0.01, 100, 10), (2.0, 1e-4, 60000, 50), (1e-9, 3.0, 10**6, 1), (5.0, 0.2, 7, 7),
     (1.0, 1e-5, 1000, 100)],
)
def test_eq11_matches_high_precision(S, b, n, m):
    got = lp.subsampled_laplace_epsilon(S, b, n, m)
    assert got == pytest.approx(_eq11_mp(S, b, n, m), rel=1e-13)


def test_eq11_full_batch_is_S_over_bn():
    S, b, n = 3.0, 0.7, 250
    assert lp.subsampled_laplace_epsilon(S, b, n, n) == pytest.approx(S / (b * n), rel=1e-15)


def test_prop31_identity():
    # eps(S, b_t, n, m) with b_t = S/(m eps_0), eps_0 from (13), equals eps/T (Prop 3.1 proof)
    eps, T, n, m, S = 2.0, 500, 10_000, 64, 4.0
    eps0 = lp.per_step_epsilon(eps, T, n, m)
    b = S / (m * eps0)
    assert lp.subsampled_laplace_epsilon(S, b, n, m) == pytest.approx(eps / T, rel=1e-12)
    # same b as the derived inversion
    assert lp.laplace_scale_for_epsilon(S, eps / T, n, m) == pytest.approx(b, rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    eps=st.floats(1e-9, 1e4),
    n=st.integers(1, 10**7),
    frac=st.floats(0.0, 1.0),
    S=st.floats(1e-6, 1e6),
)
def test_scale_never_overshoots(eps, n, frac, S):
    m = max(1, int(round(frac * n)))
    b = lp.laplace_scale_for_epsilon(S, eps, n, m)
    assert np.isfinite(b) and b > 0
    got = lp.subsampled_laplace_epsilon(S, b, n, m)
    assert got <= eps
    assert got == pytest.approx(eps, rel=1e-9)


@settings(max_examples=150, deadline=None)
@given(eps=st.floats(0.0, 1e5), n=st.integers(1, 10**9), frac=st.floats(0.0, 1.0))
def test_amplification_roundtrip_and_monotone(eps, n, frac):
    m = max(1, int(round(frac * n)))
    amp = lp.amplify_without_replacement(eps, m, n)
    assert np.isfinite(amp) and 0.0 <= amp <= eps * (1 + 1e-15)
    back = lp.deamplify_without_replacement(amp, m, n)
    assert back == pytest.approx(eps, rel=1e-9, abs=1e-300)


def test_amplification_against_mpmath_and_small_eps_limit():
    for eps, m, n in [(0.5, 3, 10), (30.0, 1, 100), (1e-12, 5, 1000)]:
        ref = float(mp.log(1 + mp.mpf(m) / n * (mp.e ** mp.mpf(eps) - 1)))
        assert lp.amplify_without_replacement(eps, m, n) == pytest.approx(ref, rel=1e-13)
    # Kuru et al. Remark 4.2: small eps -> (m/n) eps
    assert lp.amplify_without_replacement(1e-8, 10, 1000) == pytest.approx(1e-10, rel=1e-7)


def test_vectorised():
    eps = np.array([0.1, 1.0, 10.0])
    b = lp.laplace_scale_for_epsilon(1.0, eps, 100, 10)
    assert b.shape == (3,)
    np.testing.assert_allclose(lp.subsampled_laplace_epsilon(1.0, b, 100, 10), eps, rtol=1e-12)


def test_split_budget_and_basic_composition():
    shares = lp.split_budget(1.0, 7)
    assert shares.size == 7 and lp.basic_composition(shares) <= 1.0
    w = np.arange(1, 11) ** (1 / 3)
    shares = lp.split_budget(3.0, weights=w)
    np.testing.assert_allclose(shares / shares[0], w / w[0], rtol=1e-12)
    assert lp.basic_composition(shares) <= 3.0


def test_full_batch_composition_matches_dp_accounting_pld():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    S, n, T, eps = 2.0, 100, 20, 1.0
    shares = lp.split_budget(eps, weights=np.linspace(1.0, 2.0, T))
    b = lp.laplace_scales_for_budgets(S, shares, n, n)
    # Laplace with scale b on a query of L1 sensitivity S/n is pure (S/(n b))-DP under either
    # relation; dp_accounting takes noise_multiplier = scale / sensitivity (add/remove only)
    acc = pld_privacy_accountant.PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dpa.ComposedDpEvent([dpa.LaplaceDpEvent(bt * n / S) for bt in b]))
    total = lp.basic_composition(shares)
    assert total == pytest.approx(eps, rel=1e-12) and total <= eps
    # basic composition is a valid pure-DP bound: the PLD's delta there vanishes ...
    assert acc.get_delta(total * (1 + 1e-3)) < 1e-12
    # ... and it is not vacuous: a slightly smaller epsilon has positive delta
    assert acc.get_delta(0.5 * total) > 0


def test_laplace_variance_monte_carlo():
    rng = np.random.default_rng(0)
    b = 0.7
    x = rng.laplace(0.0, b, size=400_000)
    v = lp.laplace_variance(b)
    # var of sample variance: (mu4 - sigma^4)/N with mu4 = 24 b^4
    se = math.sqrt((24 * b**4 - v**2) / x.size)
    assert abs(x.var() - v) < 5 * se


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: lp.subsampled_laplace_epsilon(-1.0, 1.0, 10, 5), "sensitivity"),
        (lambda: lp.subsampled_laplace_epsilon(1.0, 0.0, 10, 5), "scale"),
        (lambda: lp.subsampled_laplace_epsilon(1.0, 1.0, 10, 11), "m"),
        (lambda: lp.laplace_scale_for_epsilon(1.0, 0.0, 10, 5), "epsilon"),
        (lambda: lp.laplace_scale_for_epsilon(1.0, float("nan"), 10, 5), "epsilon"),
        (lambda: lp.per_step_epsilon(1.0, 2.5, 10, 5), "steps"),
        (lambda: lp.amplify_without_replacement(-1.0, 1, 2), "epsilon"),
        (lambda: lp.deamplify_without_replacement(1.0, 0, 2), "m"),
        (lambda: lp.split_budget(1.0), "steps"),
        (lambda: lp.laplace_variance(-2.0), "scale"),
    ],
)
def test_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
