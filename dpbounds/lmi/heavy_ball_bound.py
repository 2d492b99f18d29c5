r"""The DP heavy-ball bound (23) of Kuru et al.'s Proposition 3.4, registered from here.

``strongly_convex.heavy_ball_lmi`` — all of :math:`\mathcal S_{\mu,L}`: the best certified of
Section 5's :math:`\alpha=c/L` (:math:`c\in\{1,0.1\}`) with
:math:`\beta=(1-\sqrt{\mu\alpha})/(1+\sqrt{\mu\alpha})`, and :math:`\alpha=1/L`,
:math:`\beta=0` (gradient descent: always certified), each with the bound (23) at its best
horizon :math:`T\le T_{\max}` from a verified LMI certificate
(:func:`dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound`, noise term re-derived,
**[DERIVED]**).

It lives in :mod:`dpbounds.lmi`, above :mod:`dpbounds.bounds` (``dpbounds._layers``): the
certificate needs the closed-form heavy-ball quantities of
:mod:`dpbounds.bounds.strongly_convex.heavy_ball_dp`, never the other way round. The bound
registry imports this module by name when it discovers its entries
(``dpbounds.bounds.registry.PROVIDERS``), so ``registry.names()`` lists it as before.

Example
-------
>>> from dpbounds.bounds.registry import get
>>> get("strongly_convex.heavy_ball_lmi").problem_class
'strongly_convex'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbounds.bounds.numeric import NumericBound
from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.strongly_convex.gradient_noise import (
    SOURCE_EQ20,
    check_noise_fits,
    dp_noise_level,
)
from dpbounds.bounds.strongly_convex.heavy_ball import SOURCE_BOUND_DERIVED, SOURCE_PROP34
from dpbounds.bounds.strongly_convex.heavy_ball_dp import (
    ASSUMPTION_DP,
    ASSUMPTION_MU,
    PARAMS,
    best_horizon,
    problem_params,
)
from dpbounds.bounds.theorem import Assumption
from dpbounds.schedules import nesterov_momentum

__all__ = ["RHO_OFFSETS", "LMIBoundCurves", "lmi_bound_curves"]


#: rates tried above the minimal certified one: a larger rho can come with a much smaller P
RHO_OFFSETS = (0.002, 0.01, 0.04, 0.15)

_RATE_TOL = 1e-6  # absolute and relative (to 1 - rho) accuracy of the minimal rate


class LMIBoundCurves:
    r"""The derived Prop. 3.4 bound of a few certified rates, as functions of the horizon.

    :math:`A\rho^{2T}+B(1-\rho^{2T})\,\mathbb E\lVert w_T\rVert^2` per certificate (``p``
    indexes them): the first term decreases and the second increases in :math:`T` (the noise
    grows with :math:`T`), which gives the lower bound ``lower(p, lo, hi)`` on an interval of
    horizons (what :func:`dpbounds.tuning.tune_heavy_ball`'s horizon search needs).
    """

    def __init__(self, A: Any, B: Any, rho: Any, noise: Any) -> None:
        self.A, self.B, self.rho, self.noise = (np.asarray(A), np.asarray(B), np.asarray(rho),
                                                noise)

    def _curve(self, p: np.ndarray, t_decay: np.ndarray, t_noise: np.ndarray) -> np.ndarray:
        with np.errstate(under="ignore", divide="ignore"):
            r2 = np.exp(2.0 * t_decay * np.log(self.rho[p]))
            r2n = np.exp(2.0 * t_noise * np.log(self.rho[p]))
        return self.A[p] * r2 + self.B[p] * (1.0 - r2n) * self.noise(t_noise)

    def values(self, p: np.ndarray, T: np.ndarray) -> np.ndarray:
        return self._curve(p, T, T)

    def lower(self, p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return self._curve(p, hi, lo)


def lmi_bound_curves(mu: float, L: float, alpha: float, beta: float, *,
                     initial_distance_sq: float, initial_gap: float, noise: Any,
                     lmi: Any = None) -> LMIBoundCurves | None:
    r"""Verified Prop. 3.4 certificates of heavy ball :math:`(\alpha,\beta)` at the rates
    :data:`RHO_OFFSETS` above the minimal one, as :class:`LMIBoundCurves` (``None`` without a
    certificate). ``noise(T)`` is :math:`\mathbb E\lVert w_T\rVert^2` (e.g.
    :func:`~dpbounds.bounds.strongly_convex.gradient_noise.dp_noise_level`); ``lmi`` a reusable
    :class:`~dpbounds.lmi.heavy_ball_lmi.HeavyBallLMI`.

    The coefficients come from :func:`dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound` itself
    (at :math:`T=0` and :math:`T=1`, the bound being affine in the noise), not from a copy of it.
    """
    # lazily: the registry imports this module to list the bounds, cvxpy is needed only here
    from dpbounds.lmi.heavy_ball_lmi import (
        LMICertificate,
        heavy_ball_lmi_bound,
        heavy_ball_lmi_certificate_at,
        heavy_ball_lmi_rate,
    )

    # the minimal rate to 1e-6 of 1 - rho: rho^(2T) amplifies an error in 1 - rho by
    # 2T(1 - rho) (~4 at the bound's best T), so a coarser rate makes the bound jitter by
    # ~0.1% between neighbouring (alpha, beta) and no search can then resolve its minimum
    base = heavy_ball_lmi_rate(mu, L, alpha, beta, tol=_RATE_TOL, rtol=_RATE_TOL, lmi=lmi,
                               polish=False)
    if not isinstance(base, LMICertificate):  # the certified results are LMICertificates
        return None
    A, B, rhos = [], [], []
    kw = dict(initial_distance_sq=initial_distance_sq, initial_gap=initial_gap)
    for off in RHO_OFFSETS:
        rho = base.rho + (1.0 - base.rho) * off
        cert = heavy_ball_lmi_certificate_at(mu, L, alpha, beta, rho, lmi=lmi,
                                             reference=base)
        if not (isinstance(cert, LMICertificate) and cert.verified):
            continue
        a = float(heavy_ball_lmi_bound(cert, 0, noise_second_moment=0.0, **kw))  # V(xi_0)/c
        coef = float(heavy_ball_lmi_bound(cert, 1, noise_second_moment=1.0, **kw)
                     - heavy_ball_lmi_bound(cert, 1, noise_second_moment=0.0, **kw))
        A.append(a)
        B.append(coef / (1.0 - rho * rho))
        rhos.append(rho)
    return LMIBoundCurves(A, B, rhos, noise) if rhos else None


def _lmi_candidates(mu: float, L: float) -> list[tuple[float, float]]:
    """Kuru et al.'s Section-5 DP-HB choices, alpha = c/L (c in {1, 0.1}, the paper's grid) with
    Nesterov's beta, and alpha = 1/L with beta = 0 (gradient descent, always certified)."""
    out = [(c / L, float(nesterov_momentum(c / L, mu))) for c in (1.0, 0.1)]
    return out + [(1.0 / L, 0.0)]


def _best_for(p: Mapping[str, Any], candidates: Any, lmi: Any = None
              ) -> tuple[float, dict[str, float]] | None:
    """The least bound (23) over ``candidates`` (alpha, beta), their certified rates and the
    horizons T <= max_horizon (``None`` where none is certified)."""
    mu = p["mu"]
    check_noise_fits(p["S1"], p["n"], p["m"], p["eps"], p["d"])
    T = np.arange(1, p["max_horizon"] + 1)
    noise = dp_noise_level(p["S1"], p["d"], p["n"], p["m"], p["eps"], T)
    best: tuple[float, dict[str, float]] | None = None
    for alpha, beta in candidates:
        curves = lmi_bound_curves(mu, p["L"], alpha, beta, initial_distance_sq=2.0 * p["E0"] / mu,
                                  initial_gap=p["E0"], noise=lambda t: noise[t.astype(int) - 1],
                                  lmi=lmi)
        if curves is None:
            continue
        for j, rho in enumerate(curves.rho):
            with np.errstate(over="ignore", invalid="ignore"):
                values = curves.values(np.full(T.size, j), T)
            value, horizon = best_horizon(values, "the Prop. 3.4 bound (23)")
            if best is None or value < best[0]:
                best = value, {"alpha": alpha, "beta": beta, "T": float(horizon),
                               "rho": float(rho)}
    return best


def _lmi(p: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
    """The best of :func:`_lmi_candidates` and of their certified rates, each with the derived
    bound (23) at the horizon minimising it."""
    best = _best_for(p, _lmi_candidates(p["mu"], p["L"]))
    if best is None:  # pragma: no cover - beta = 0 is gradient descent, always certified
        raise ValueError("no Prop. 3.4 certificate for any of the closed-form choices")
    return best


def _lmi_tuner(p: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
    r"""The step factor :math:`c\in[10^{-4},1]` of :math:`\alpha=c/L` with Nesterov's
    :math:`\beta` (Section 5's family) minimising the certified bound (23): a bounded search in
    :math:`\log c`, never worse than the closed-form choices (``compare``'s tuned column; the
    full :math:`(\alpha,\beta,T)` search is ``dpbounds tune hb --function-class
    smooth_strongly_convex``)."""
    from scipy.optimize import minimize_scalar

    from dpbounds.lmi.heavy_ball_lmi import HeavyBallLMI

    lmi = HeavyBallLMI()
    seen: dict[float, tuple[float, dict[str, float]] | None] = {}

    def at(z: float) -> tuple[float, dict[str, float]] | None:
        c = math.exp(min(z, 0.0))
        if c not in seen:
            a = c / p["L"]
            seen[c] = _best_for(p, [(a, float(nesterov_momentum(a, p["mu"])))], lmi)
        return seen[c]

    def f(z: float) -> float:
        got = at(z)
        return math.log(got[0]) if got is not None and got[0] > 0 else math.inf

    res = minimize_scalar(f, bounds=(math.log(1e-4), 0.0), method="bounded",
                          options={"xatol": 0.05, "maxiter": 20})
    found = [at(float(res.x)), _lmi(p)]
    return min((b for b in found if b is not None), key=lambda b: b[0])


_LMI = NumericBound(
    name="strongly_convex.heavy_ball_lmi (Proposition 3.4, best T)",
    quantity=r"\mathbb E[F(x_T)]-F^\ast",
    parameters=PARAMS,
    method="verified LMI certificate (22), bound (23) at the best horizon T <= max_horizon",
    evaluator=_lmi,
    tuner=_lmi_tuner,
    sources=(SOURCE_PROP34, SOURCE_BOUND_DERIVED, SOURCE_EQ20),
    assumptions=(Assumption("F mu-strongly convex and L-smooth"), ASSUMPTION_MU, ASSUMPTION_DP),
    description="the best certified of alpha = c/L with Nesterov's beta (Kuru et al.'s "
                "Section-5 DP-HB, c in {1, 0.1}) and alpha = 1/L, beta = 0; the noise term of "
                "(23) re-derived (alpha^2 P11/c + L alpha^2/2)",
)

register(Entry(
    name="strongly_convex.heavy_ball_lmi",
    title="DP heavy ball on all of S_mu,L, Section-5 steps, best T (Kuru et al. Prop 3.4)",
    problem_class="strongly_convex",
    theorem=_LMI,
    tuned=_LMI,
    to_params=problem_params,
    requires=("mu", "S1"),
    tunable={"c": (1e-4, 1.0)},
    crossovers=False,
    notes="LMI certificate verified exactly; E0 = R; tune with 'dpbounds tune hb "
          "--function-class smooth_strongly_convex'",
    algorithm="dpbounds.algorithms.dp_heavy_ball",
    test="tests/bounds/strongly_convex/test_heavy_ball_dp.py",
))
