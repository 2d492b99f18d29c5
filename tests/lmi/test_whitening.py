"""Coordinates from a certificate (``_whitening``): the offset certificates' fallback and the
rate search's last rounds at L/mu >= 1e5.

Oracles: the congruence by hand (T'PT = I); the exact certificate check of (22)
(:func:`dpbounds.lmi.exact.certificate_holds`, rational arithmetic) on what is returned; the
proven bracket ``rho_lower <= rho* <= rho`` (exact Farkas and certificate checks), whose width
says how close to the minimal rate the solver certifies. The negative controls switch the new
step off: they record the failures it mends with the pinned solver (Clarabel, tolerance 1e-11).
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from dpbounds.bounds.strongly_convex.gradient_noise import dp_noise_level
from dpbounds.lmi.exact import certificate_holds, farkas_holds
from dpbounds.lmi.heavy_ball_bound import RHO_OFFSETS, lmi_bound_curves
from dpbounds.lmi.heavy_ball_lmi import (
    HeavyBallLMI,
    heavy_ball_lmi_certificate_at,
    heavy_ball_lmi_rate,
)
from dpbounds.lmi.heavy_ball_lmi import rate_search as rs
from dpbounds.lmi.heavy_ball_lmi.certificate import NoCertificate

# near the oracle's best point of bench problem 17 (L/mu = 1e6, 1 - rho ~ 1.2e-6): the tuner's
# lattice point (p, q) = (-3765, 16352)
MU, ALPHA, BETA = 1e-6, 3.469646313754689e-05, 0.999974477194723


def _lmi():
    return HeavyBallLMI(backend="clarabel")


def _rate():
    return heavy_ball_lmi_rate(MU, 1.0, ALPHA, BETA, tol=1e-6, rtol=1e-6, lmi=_lmi(),
                               polish=False)


def _bracket(c):
    return (c.rho - c.rho_lower) / (1.0 - c.rho_lower)


@pytest.mark.parametrize("point", [(1e-2, 1.0, 0.3, 0.5), (1e-4, 2.0, 0.01, 0.97),
                                   (MU, 1.0, ALPHA, BETA)])
def test_whitening_makes_the_reference_certificate_the_identity(point):
    c = heavy_ball_lmi_rate(*point, lmi=_lmi(), polish=False)
    assert c.verified
    T = rs._whitening(c)[:2, :2]
    # rounding grows with P's condition number (~1e9 at L/mu = 1e6)
    tol = max(1e-14 * np.linalg.cond(c.P), 1e-12)
    np.testing.assert_allclose(T.T @ (c.P / c.L) @ T, np.eye(2), atol=tol)


def test_minimal_rate_bracket_at_l_over_mu_1e6():
    c = _rate()
    assert c.verified and c.rho_lower > 0
    assert _bracket(c) < 1e-3  # measured 4.8e-5


def test_both_ends_of_the_merged_bracket_are_proven_exactly():
    # the rate and the lower end may come from different searches (_tighter): each is
    # re-checked here in exact arithmetic for the same (mu, L, alpha, beta)
    c = _rate()
    assert certificate_holds(MU, 1.0, ALPHA, BETA, c.rho, c.P, c.c0, c.c)
    assert c.farkas is not None and c.rho_lower < c.rho
    assert farkas_holds(MU, 1.0, ALPHA, BETA, c.rho_lower, c.farkas)


def test_tighter_keeps_each_proof_with_its_own_rate():
    good = _rate()
    worse = replace(good, rho=good.rho + 0.5 * (1 - good.rho), rho_lower=0.5,
                    lower_bound="quadratic rate", farkas=None, solves=3)
    for a, b in ((good, worse), (worse, good)):
        m = rs._tighter(a, b)
        assert (m.rho, m.rho_lower, m.lower_bound) == (good.rho, good.rho_lower,
                                                       good.lower_bound)
        assert m.farkas is good.farkas and m.solves == good.solves + 3
    # the lower end of one search and the rate of the other
    low = replace(worse, rho_lower=good.rho_lower, farkas=good.farkas,
                  lower_bound=good.lower_bound)
    high = replace(good, rho_lower=0.5, farkas=None, lower_bound="quadratic rate")
    m = rs._tighter(high, low)
    assert m.rho == good.rho and m.P is good.P
    assert m.rho_lower == good.rho_lower and m.farkas is good.farkas
    none = NoCertificate(MU, 1.0, ALPHA, BETA, "none", 0.5, 7)
    assert rs._tighter(none, good).rho == good.rho and rs._tighter(good, none).rho == good.rho
    assert not rs._tighter(none, none).certified


def test_negative_control_without_the_whitened_rounds_the_bracket_is_wide(monkeypatch):
    monkeypatch.setattr(rs, "_WHITEN_ROUNDS", 0)
    c = _rate()
    assert not c.certified or _bracket(c) >= 1e-3  # measured 1.2e-2


def _offset_rate(base):
    return base.rho + (1.0 - base.rho) * RHO_OFFSETS[0]


def test_reference_certifies_the_rate_just_above_the_minimal_one():
    base = _rate()
    rho = _offset_rate(base)
    c = heavy_ball_lmi_certificate_at(MU, 1.0, ALPHA, BETA, rho, lmi=_lmi(), reference=base)
    assert c.verified and c.rho == rho
    # the exact check again, independently of the object's flag
    assert certificate_holds(MU, 1.0, ALPHA, BETA, rho, c.P, c.c0, c.c)


def test_negative_control_without_reference_no_certificate_there():
    base = _rate()
    c = heavy_ball_lmi_certificate_at(MU, 1.0, ALPHA, BETA, _offset_rate(base), lmi=_lmi())
    assert not c.certified


def test_reference_is_not_used_where_the_usual_coordinates_certify():
    # Kuru et al.'s Section-5 point: the same certificate with and without a reference
    mu, L, a, b = 0.02, 5.1028, 0.1 / 5.1028, 0.9
    base = heavy_ball_lmi_rate(mu, L, a, b, lmi=_lmi(), polish=False)
    rho = base.rho + 0.01 * (1 - base.rho)
    c1 = heavy_ball_lmi_certificate_at(mu, L, a, b, rho, lmi=_lmi(), reference=base)
    c2 = heavy_ball_lmi_certificate_at(mu, L, a, b, rho, lmi=_lmi())
    assert c1.verified and c2.verified
    np.testing.assert_array_equal(c1.P, c2.P)
    assert c1.solves == c2.solves


def test_bound_curves_have_every_offset_certificate():
    def noise(T):
        return dp_noise_level(1.0, 10, 10**12, 10**12, 0.03, T)

    curves = lmi_bound_curves(MU, 1.0, ALPHA, BETA, initial_distance_sq=2.0 / MU,
                              initial_gap=1.0, noise=noise, lmi=_lmi())
    assert curves is not None and curves.rho.size == len(RHO_OFFSETS)
    assert np.all(np.isfinite(curves.A)) and np.all(curves.A > 0)


@pytest.mark.parametrize("ref", ["P", 1.0, "other point", "zero P", "nan P", "indefinite P"])
def test_reference_must_be_a_certificate_of_the_same_point(ref):
    if ref == "other point":
        ref = heavy_ball_lmi_rate(0.02, 5.1028, 0.1 / 5.1028, 0.9, lmi=_lmi(), polish=False)
    elif isinstance(ref, str) and ref.endswith(" P"):
        P = {"zero P": np.zeros((2, 2)), "nan P": np.full((2, 2), np.nan),
             "indefinite P": np.array([[1.0, 0.0], [0.0, -1.0]])}[ref]
        ref = replace(_rate(), P=P)
    with pytest.raises(ValueError, match="reference"):
        heavy_ball_lmi_certificate_at(MU, 1.0, ALPHA, BETA, 1 - 1e-6, lmi=_lmi(), reference=ref)


def test_reference_certificate_is_exact_at_every_offset():
    base = _rate()
    for off in RHO_OFFSETS:
        rho = base.rho + (1.0 - base.rho) * off
        c = heavy_ball_lmi_certificate_at(MU, 1.0, ALPHA, BETA, rho, lmi=_lmi(), reference=base)
        assert c.verified and math.isclose(c.rho, rho)
