"""quadratic exact worst case <= noise-aware PEP <= heavy-ball LMI bound on random problems.

Three independent computations: ``quadratic_worst_case`` (scalar recursions over curvatures,
dpbounds.bounds), the PEP SDP (dpbounds.pep) and the Prop. 3.4 LMI certificate with its
noise-aware bound (dpbounds.lmi). The quadratics are a subclass of S_mu,L, so their exact
worst case (``value``, attained on an instance) is a lower bound; the LMI bound is proven from
the same interpolation inequalities and noise orthogonality, aggregated through a Lyapunov
function, so it is an upper bound on the PEP. Negative control: a PEP run with a quarter of the
noise falls below the quadratic worst case of the true noise (it bounds another problem).
"""

from __future__ import annotations

import numpy as np

from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case
from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_bound, heavy_ball_lmi_rate
from dpbounds.pep import FixedStepMethod, pep_worst_case


def test_quadratic_below_pep_below_lmi_on_random_problems():
    rng = np.random.default_rng(20261202)
    rows, with_lmi, control_below = [], 0, 0
    while len(rows) < 24:
        mu = float(rng.uniform(0.02, 0.5))
        L = float(rng.uniform(0.5, 2.0)) + mu
        alpha = float(rng.uniform(0.1, 1.5) / L)
        beta = float(rng.uniform(0.0, 0.8))
        T = int(rng.integers(1, 7))
        E0 = float(rng.uniform(0.2, 5.0))
        s2 = float(rng.uniform(0.0, 0.5) * E0)
        m = FixedStepMethod.heavy_ball(alpha, beta)
        pep = pep_worst_case(m, mu, L, T, initial_gap=E0, noise_variances=s2, certify=False)
        quad = quadratic_worst_case(mu, L, 1, alpha=alpha, beta=beta, steps=T, laplace_var=s2,
                                    initial_gap=E0)
        assert quad.value <= pep.value * (1 + 1e-6) + 1e-9, (mu, L, alpha, beta, T, E0, s2)
        cert = heavy_ball_lmi_rate(mu, L, alpha, beta)
        lmi = None
        if cert.certified:  # the LMI is feasible (rho < 1) only for some (alpha, beta)
            lmi = float(heavy_ball_lmi_bound(cert, T, initial_distance_sq=2 * E0 / mu,
                                             initial_gap=E0, noise_second_moment=s2))
            assert pep.value <= lmi * (1 + 1e-6), (mu, L, alpha, beta, T, E0, s2)
            with_lmi += 1
        low = pep_worst_case(m, mu, L, T, initial_gap=E0, noise_variances=s2 / 4,
                             certify=False).value
        control_below += low < quad.value * (1 - 1e-6)
        rows.append((quad.value / pep.value, None if lmi is None else pep.value / lmi))
    assert with_lmi >= 10
    # the negative control bites: the too-small noise gives a "bound" below a real worst case
    assert control_below >= 5
    # the sandwich is informative: the quadratic worst case reaches the PEP on some problems
    assert max(r[0] for r in rows) > 0.99


def test_long_horizon_sandwich_with_the_banded_relaxation():
    # T = 60: only the banded relaxation runs (the full PEP is out of reach); it is still an
    # upper bound, so it must sit between the quadratic worst case and the LMI bound
    rng = np.random.default_rng(60)
    done = 0
    while done < 4:
        mu = float(rng.uniform(0.05, 0.3))
        alpha, beta = float(rng.uniform(0.3, 1.0)), float(rng.uniform(0.1, 0.6))
        cert = heavy_ball_lmi_rate(mu, 1.0, alpha, beta)
        if not cert.certified:
            continue
        done += 1
        E0, s2 = 1.0, float(rng.uniform(0.001, 0.05))
        m = FixedStepMethod.heavy_ball(alpha, beta)
        pep = pep_worst_case(m, mu, 1.0, 60, initial_gap=E0, noise_variances=s2,
                             pairs="banded", window=2)
        quad = quadratic_worst_case(mu, 1.0, 1, alpha=alpha, beta=beta, steps=60,
                                    laplace_var=s2, initial_gap=E0)
        lmi = float(heavy_ball_lmi_bound(cert, 60, initial_distance_sq=2 * E0 / mu,
                                         initial_gap=E0, noise_second_moment=s2))
        assert quad.value <= pep.value * (1 + 1e-6) <= lmi * (1 + 2e-6), (mu, alpha, beta, s2)
        assert pep.certified_value is not None and pep.certified_value <= lmi * (1 + 1e-6)
