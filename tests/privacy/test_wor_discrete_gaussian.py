"""The discrete Gaussian without replacement (replace-one) has its own RDP bound (issue 35).

Oracle: the exact Rényi divergences, both directions, of the pair M_k = (1 - q) P + q Q_k
that WBK19's coupling reduces sampling without replacement to, for P, Q_1, Q_2 discrete
Gaussians N_Z(mu, s^2 I) centred at integer points 0, mu_1, mu_2 with |mu_1|, |mu_2|,
|mu_1 - mu_2| <= u (every such configuration in 2-D for small u; summed in float64 log-space
by code of this file only). ``without_replacement_discrete_gaussian_rdp(q, u^2 / (2 s^2))``
must never be below them. Controls that must fail: the bound at rho / 2, and a configuration
outside the constraint (|mu_1 - mu_2| > u) exceeds the bound (the constraint is load-bearing).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpbounds.privacy.rdp import (
    without_replacement_discrete_gaussian_rdp,
    without_replacement_zcdp_rdp,
)


def _log_lattice(s: float, half: int) -> np.ndarray:
    x = np.arange(-half, half + 1, dtype=float)
    lw = -x * x / (2 * s * s)
    lw -= np.log(np.exp(lw).sum())
    return lw[:, None] + lw[None, :]


def _shifted(lp: np.ndarray, mu: tuple[int, int]) -> np.ndarray:
    out = np.full_like(lp, -np.inf)
    a, b = mu
    src = lp[max(0, -a): lp.shape[0] - max(0, a), max(0, -b): lp.shape[1] - max(0, b)]
    out[max(0, a): max(0, a) + src.shape[0], max(0, b): max(0, b) + src.shape[1]] = src
    return out


def _exact(q: float, s: float, mu1: tuple[int, int], mu2: tuple[int, int],
           alpha: int) -> float:
    """max(D_alpha(M1 || M2), D_alpha(M2 || M1)) on Z^2 (truncated at 14 s + 20: the mass
    dropped is below e^-98)."""
    lp = _log_lattice(s, int(14 * s) + 20)
    m1 = np.logaddexp(math.log1p(-q) + lp, math.log(q) + _shifted(lp, mu1))
    m2 = np.logaddexp(math.log1p(-q) + lp, math.log(q) + _shifted(lp, mu2))
    d12 = np.logaddexp.reduce((alpha * m1 + (1 - alpha) * m2).ravel()) / (alpha - 1)
    d21 = np.logaddexp.reduce((alpha * m2 + (1 - alpha) * m1).ravel()) / (alpha - 1)
    return float(max(d12, d21))


def _configurations(u: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    pts = [(a, b) for a in range(-u, u + 1) for b in range(-u, u + 1) if a * a + b * b <= u * u]
    return [(m1, m2) for m1 in pts for m2 in pts
            if m1 > m2 and (m1[0] - m2[0]) ** 2 + (m1[1] - m2[1]) ** 2 <= u * u]


@pytest.mark.parametrize("u,s,q", [(2, 1.5, 0.02), (2, 1.5, 0.3), (3, 4.0, 0.05)])
def test_never_below_the_exact_divergences(u: int, s: float, q: float) -> None:
    orders = (2, 3, 8)
    bound = without_replacement_discrete_gaussian_rdp(q, u * u / (2 * s * s),
                                                      np.array(orders, dtype=float))
    worst = min(b / _exact(q, s, m1, m2, a) for m1, m2 in _configurations(u)
                for a, b in zip(orders, bound))
    assert worst >= 1.0, worst


def test_tight_at_the_replace_one_pair_and_far_below_theorem_9() -> None:
    """mu_1 = -mu_2 = (1, 0) (u = 2: the replaced record at the batch's centre, the two
    values opposite), s = 6, q = 0.01: within 16% of the exact divergence at orders 2-8 (9%
    at order 2: the bound's supremum over configurations is 2 e^{2 rho} - 2 e^rho); Theorem 9
    alone (the grid's bound until issue 35) is over 4x above it (two-sided: an over-noised
    bound fails)."""
    s, q, rho = 6.0, 0.01, 4 / 72
    orders = (2, 4, 8)
    exact = np.array([_exact(q, s, (1, 0), (-1, 0), a) for a in orders])
    got = without_replacement_discrete_gaussian_rdp(q, rho, np.array(orders, dtype=float))
    assert np.all(got >= exact) and np.all(got <= 1.16 * exact), got / exact
    assert np.all(without_replacement_zcdp_rdp(q, rho, np.array(orders, dtype=float))
                  > 4 * exact)


def test_the_exact_check_catches_a_halved_rho_and_a_violated_constraint() -> None:
    s, q, u = 1.5, 0.3, 2
    half = without_replacement_discrete_gaussian_rdp(q, u * u / (4 * s * s), np.array([2.0, 8.0]))
    assert any(b < _exact(q, s, m1, m2, a) for m1, m2 in _configurations(u)
               for a, b in zip((2, 8), half))
    full = without_replacement_discrete_gaussian_rdp(q, u * u / (2 * s * s), np.array([2.0]))
    assert full[0] < _exact(q, s, (2, 0), (-2, 0), 2)  # |mu_1 - mu_2| = 4 > u


@pytest.mark.parametrize("q,rho", [(0.01, 1e-4), (0.05, 0.02), (0.3, 1.0)])
def test_order_two_closed_form(q: float, rho: float) -> None:
    """At order 2 the bound is 1 + q^2 [(1 - q)(2 e^{2 rho} - 2 e^rho) + q (e^{2 rho} - 1)]
    (mpmath), or Theorem 9 / the cap where smaller."""
    with mp.workdps(40):
        q_, r = mp.mpf(q), mp.mpf(rho)
        own = float(mp.log(1 + q_**2 * ((1 - q_) * (2 * mp.exp(2 * r) - 2 * mp.exp(r))
                                        + q_ * mp.expm1(2 * r))))
    generic = float(without_replacement_zcdp_rdp(q, rho, np.array([2.0]))[0])
    got = float(without_replacement_discrete_gaussian_rdp(q, rho, np.array([2.0]))[0])
    want = min(own, generic, 2 * rho)
    assert want <= got <= want * (1 + 1e-9)


def test_order_256_uses_its_forward_differences() -> None:
    """At rho -> 0 the bound's log A tends to its leading term C(alpha, 2) q^2 2 rho (the
    higher terms are O(rho^2)); at alpha = 256 (q = 0.9, rho = 1e-10) the 256th forward
    difference was left out (an off-by-one found by an independent review) and the generic
    moment bound gave log A = 148.9."""
    from dpbounds.privacy.rdp import _wor_discrete_gaussian_log_a

    q, rho, a = 0.9, 1e-10, 256
    got = float(_wor_discrete_gaussian_log_a(q, rho, np.array([float(a)]))[0])
    lead = math.comb(a, 2) * q * q * 2 * rho
    assert lead <= got <= 1.01 * lead
