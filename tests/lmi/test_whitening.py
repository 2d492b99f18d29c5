"""Coordinates from a certificate (``_whitening``): the offset certificates' fallback and the
rate search's last rounds at L/mu >= 1e5.

Oracles: the congruence by hand (T'PT = I); the exact certificate check of (22)
(:func:`dpbounds.lmi.exact.certificate_holds`, rational arithmetic) on what is returned; the
proven bracket ``rho_lower <= rho* <= rho`` (exact Farkas and certificate checks), whose width
says how close to the minimal rate the solver certifies. The negative controls switch the new
step off: they record the failures it mends with the pinned solver (Clarabel, tolerance 1e-11).
"""

import math

import numpy as np
import pytest

from dpbounds.bounds.strongly_convex.gradient_noise import dp_noise_level
from dpbounds.lmi.exact import certificate_holds
from dpbounds.lmi.heavy_ball_bound import RHO_OFFSETS, lmi_bound_curves
from dpbounds.lmi.heavy_ball_lmi import (
    HeavyBallLMI,
    heavy_ball_lmi_certificate_at,
    heavy_ball_lmi_rate,
)
from dpbounds.lmi.heavy_ball_lmi import rate_search as rs

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


@pytest.mark.parametrize("ref", ["P", 1.0, "other point"])
def test_reference_must_be_a_certificate_of_the_same_point(ref):
    if ref == "other point":
        ref = heavy_ball_lmi_rate(0.02, 5.1028, 0.1 / 5.1028, 0.9, lmi=_lmi(), polish=False)
    with pytest.raises(ValueError, match="reference"):
        heavy_ball_lmi_certificate_at(MU, 1.0, ALPHA, BETA, 1 - 1e-6, lmi=_lmi(), reference=ref)


def test_reference_certificate_is_exact_at_every_offset():
    base = _rate()
    for off in RHO_OFFSETS:
        rho = base.rho + (1.0 - base.rho) * off
        c = heavy_ball_lmi_certificate_at(MU, 1.0, ALPHA, BETA, rho, lmi=_lmi(), reference=base)
        assert c.verified and math.isclose(c.rho, rho)
