"""The LMI tuner's lattice search on functions whose minimum is known in closed form.

The bound the tuner minimises has creases (two smooth pieces meeting in a V, where the minimal
rate switches between two constraints) and narrow curved valleys. These synthetic objectives
reproduce both shapes; their minimiser is known exactly, so the search is checked against it,
and the search without its valley phase is the negative control.
"""

from __future__ import annotations

import math

import pytest

import dpbounds.tuning.heavy_ball as hb

N = hb._LMI_LATTICE
P_STAR = 6000  # the minimiser lies on the crease q = 0.77 p + 1000, at p = P_STAR


def crease(p: int, q: int) -> float:
    """Across the crease a V of slope 2e-3 per cell; along it a parabola, 1 at its minimum."""
    return 1.0 + ((p - P_STAR) / N) ** 2 + 2e-3 * abs(q - 0.77 * p - 1000.0)


def crease_min() -> float:
    return min(crease(P_STAR + k, q) for k in range(-3, 4)
               for q in range(round(0.77 * P_STAR) + 990, round(0.77 * P_STAR) + 1010))


# the tolerance, 0.1%: on the lattice the crease passes between cells, so the exact
# minimum 1 is met only where 0.77 p is an integer (measured: 1.00012 at p = 5948)
REL = 1e-3


@pytest.mark.parametrize("grid", [3, 17])
def test_the_search_follows_a_crease_to_its_minimum(grid):
    v, p, q, n = hb._lmi_search(crease, grid=grid)
    assert crease_min() == 1.0
    assert v <= 1.0 + REL, (v, p, q)
    assert n < 2000


@pytest.mark.parametrize("grid", [3, 17])
def test_negative_control_compass_moves_stall_on_the_crease(grid):
    # measured 1.041 (grid 3) and 1.0049 (grid 17)
    v, p, q, _ = hb._lmi_search(crease, grid=grid, valleys=False)
    assert v > 1.0 + 3 * REL, (v, p, q)


def test_crease_walk_alone_from_a_far_point_on_the_crease():
    cache: dict[tuple[int, int], float] = {}

    def F(p, q):
        p, q = min(max(p, 0), N), min(max(q, 0), N)
        cache.setdefault((p, q), crease(p, q))
        return cache[(p, q)], p, q

    p0 = 1500
    q0 = round(0.77 * p0 + 1000)
    v, p, q, polls = hb._crease_walk(F, p0, q0, F(p0, q0)[0])
    assert v <= 1.0 + REL and polls <= 700
    assert F(p0, q0)[0] > 1.2


def valley(p: int, q: int) -> float:
    """A smooth, narrow, straight valley along q = 2000 + 0.5 p (Rosenbrock-like ratio 1e4)."""
    u, w = (p - 7000) / N, (q - 2000 - 0.5 * p) / N
    return 1.0 + u * u + 1e4 * w * w


def test_the_search_follows_a_smooth_valley():
    v, p, q, _ = hb._lmi_search(valley, grid=3)
    assert v == pytest.approx(1.0, abs=1e-5), (v, p, q)
    assert math.isfinite(v)


# ----------------------------------------------------------------------------- the box
def test_box_grows_with_the_condition_number_only_where_it_binds():
    # kappa <= 100: the former box exactly; kappa = 1e6: beta to 1 - 5e-5, alpha L from 5e-5
    assert hb._lmi_beta_max(1e-2, 1.0) == hb._LMI_BETA_MAX == 0.995
    assert hb._lmi_alpha_min(1e-2, 1.0) == hb._LMI_ALPHA_L[0] == 1e-3
    assert hb._lmi_beta_max(1e-6, 1.0) == pytest.approx(1 - 5e-5, rel=1e-15)
    assert hb._lmi_alpha_min(1e-6, 1.0) == pytest.approx(5e-5, rel=1e-12)
    # scale invariance: the box in alpha L and beta depends on mu / L only
    assert hb._lmi_beta_max(1e-4, 100.0) == hb._lmi_beta_max(1e-6, 1.0)
    x0, wx, wy = hb._lmi_box(100.0, 1e-4)
    assert math.exp(x0) * 100.0 == pytest.approx(5e-5, rel=1e-12)
    assert math.exp(x0 + wx) * 100.0 == pytest.approx(1.5, rel=1e-12)
    assert -math.expm1(-wy) == pytest.approx(1 - 5e-5, rel=1e-12)


def _choice(alpha, beta):
    return hb.HeavyBallChoice("tuned", alpha, beta, 10, 0.9, 1.0, 0.5, 0.1)


def test_box_edge_is_named_and_printed():
    mu, L = 1e-6, 1.0
    top = hb._lmi_beta_max(mu, L)
    assert hb._box_edge(_choice(1e-3, 0.5), mu, L) == ""
    assert "beta" in hb._box_edge(_choice(1e-3, top), mu, L)
    assert "smallest" in hb._box_edge(_choice(hb._lmi_alpha_min(mu, L), 0.5), mu, L)
    assert "largest" in hb._box_edge(_choice(1.5 / L, 0.5), mu, L)
    c = _choice(1e-3, top)
    res = hb.HeavyBallTuning(c, c, c, {"mu": mu, "L": L, "initial_gap": 1.0,
                                       "max_horizon": 10}, box_edge=hb._box_edge(c, mu, L))
    assert "on the edge of the search box" in res.table()
    assert "on the edge" not in hb.HeavyBallTuning(c, c, c, {"mu": mu, "L": L,
                                                            "initial_gap": 1.0,
                                                            "max_horizon": 10}).table()
