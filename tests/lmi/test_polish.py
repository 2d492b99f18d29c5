"""The polished certificate of (22) at a given rho: the direct Clarabel solve and its fallbacks.

Oracles: the polish SDP written again here from the printed blocks (cvxpy, Clarabel through
cvxpy: an independent formulation), and the float64 smallest eigenvalue of the assembled LMI
(:func:`dpbounds.lmi.heavy_ball_lmi.assemble_lmi`, which builds it from the printed blocks).
"""

import math

import numpy as np
import pytest

from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate
from dpbounds.lmi.heavy_ball_lmi import (
    HeavyBallLMI,
    LMICertificate,
    heavy_ball_lmi_bound,
    heavy_ball_lmi_certificate_at,
    lmi_blocks,
    rate_search,
)

# (kappa, alpha L, beta): well inside the certified region, where the SDP is well conditioned
POINTS = [(2.0, 0.5, 0.1), (10.0, 0.3, 0.4), (10.0, 1.0, 0.0), (50.0, 0.1, 0.7),
          (100.0, 0.05, 0.8), (5.0, 1.2, 0.2)]


def _rho(kappa, a, b):
    """Halfway between the quadratic rate and 1 (certified at every point of POINTS)."""
    return 0.5 * (1.0 + float(heavy_ball_rate(a, b, 1.0 / kappa, 1.0)))


def _polish_oracle(mu, L, alpha, beta, rho, need):
    """max c s.t. c0 X0 + c [X1 + (1 - rho^2) X2] - Phi(P) >= need I, P >= 0, c0, c >= 0,
    P11 + P22 + c0 + c = 1 -- the polish SDP from the printed blocks, in cvxpy."""
    import cvxpy as cp  # here: collecting this file must not cost cvxpy's import (~1 CPU-s)

    m = lmi_blocks(mu, L, alpha, beta)
    P = cp.Variable((2, 2), symmetric=True)
    c0, c = cp.Variable(nonneg=True), cp.Variable(nonneg=True)
    AB = np.hstack([m["A"], m["B"]])
    Phi = AB.T @ P @ AB - rho**2 * cp.bmat([[P, np.zeros((2, 1))],
                                             [np.zeros((1, 2)), np.zeros((1, 1))]])
    G = c0 * m["X0"] + c * (m["X1"] + (1 - rho**2) * m["X2"]) - Phi
    prob = cp.Problem(cp.Maximize(c), [0.5 * (G + G.T) >> need * np.eye(3), P >> 0,
                                       P[0, 0] + P[1, 1] + c0 + c == 1])
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(c.value)


@pytest.mark.parametrize("kappa, a, b", POINTS)
def test_direct_polish_solves_the_polish_sdp(kappa, a, b):
    mu, rho = 1.0 / kappa, _rho(kappa, a, b)
    lmi = HeavyBallLMI(backend="clarabel")
    lmi.set_point(mu, 1.0, a, b)
    t = lmi.probe(rho).t
    assert t > 1e-6  # well conditioned: the comparison below is about the formulation
    need = 0.5 * t
    sol = lmi.polish(rho, need)
    assert sol is not None
    assert sol["c"] == pytest.approx(_polish_oracle(mu, 1.0, a, b, rho, need), rel=1e-6, abs=1e-9)
    m = lmi_blocks(mu, 1.0, a, b)
    AB = np.hstack([m["A"], m["B"]])
    Phi = AB.T @ sol["P"] @ AB
    Phi[:2, :2] -= rho**2 * sol["P"]
    G = sol["c0"] * m["X0"] + sol["c"] * (m["X1"] + (1 - rho**2) * m["X2"]) - Phi
    assert np.linalg.eigvalsh(G)[0] >= need * (1 - 1e-6)  # the margin asked for, in float64
    assert np.linalg.eigvalsh(sol["P"])[0] >= -1e-10
    assert sol["P"][0, 0] + sol["P"][1, 1] + sol["c0"] + sol["c"] == pytest.approx(1.0, abs=1e-9)


class _FailingPolish(HeavyBallLMI):
    """A solver whose polished certificates fail below a margin (fraction of the maximum)."""

    def __init__(self, fail_below: float) -> None:
        super().__init__(backend="clarabel")
        self.fail_below, self.asked = fail_below, []

    def polish(self, rho, need):
        t = self.probe(rho).t
        self.asked.append(need / t)
        return None if need < self.fail_below * t * (1 - 1e-12) else super().polish(rho, need)


def _bound(cert):
    return float(heavy_ball_lmi_bound(cert, 50, initial_distance_sq=1.0, initial_gap=1.0,
                                      noise_second_moment=1e-3))


@pytest.mark.parametrize("kappa, a, b", POINTS[:3])
def test_a_failed_polish_is_retried_at_larger_margins_before_the_max_margin_point(kappa, a, b):
    mu, rho = 1.0 / kappa, _rho(kappa, a, b)
    certs = {}
    for fail_below in (0.0, 0.7, 2.0):  # none fails; 0.5 fails; every fraction fails
        lmi = _FailingPolish(fail_below)
        cert = heavy_ball_lmi_certificate_at(mu, 1.0, a, b, rho, lmi=lmi)
        assert isinstance(cert, LMICertificate) and cert.verified
        certs[fail_below] = (cert, lmi.asked)
    assert certs[0.0][1] == [pytest.approx(0.5)]
    assert certs[0.7][1] == [pytest.approx(0.5), pytest.approx(0.75)]
    assert certs[2.0][1] == [pytest.approx(f) for f in rate_search.POLISH_FRACTIONS]
    b_half, b_75, b_max = (_bound(certs[k][0]) for k in (0.0, 0.7, 2.0))
    # more margin, a worse bound; the max-margin point (the last resort) the worst of all
    assert b_half <= b_75 * (1 + 1e-9) and b_75 <= b_max * (1 + 1e-9)
    assert b_half < b_max  # the polish is worth something: a control for the two above
    assert math.isfinite(b_max)
