"""Verify study of noisy projected SGD (Kamath Algorithm 3, BST14)."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import sympy as sp

from dpbounds.bounds import registry
from dpbounds.bounds.theorem import Bound
from dpbounds.verify.mutants import mutated, noise_tap
from dpbounds.verify.problems import Instance
from dpbounds.verify.studies._common import (
    _LEDGER_RTOL,
    TheoremStudy,
    _check,
    _drawn_check,
    _eps_run,
    _lipschitz,
    _plan,
    _trace_every,
    _violations,
    register_study,
)


def _run_erm(point: dict, inst: Instance, trials: int, seed: Any, mutation: str | None,
             dry: bool = False) -> dict[str, Any]:
    from dpbounds.algorithms import noisy_projected_sgd

    _lipschitz(inst)
    entry = registry.get("convex.noisy_projected_sgd")
    f = inst.objective
    radius = float(point["radius"])
    if inst.spec.start > radius:
        raise ValueError(f"start {inst.spec.start:g} must lie in the ball of radius {radius:g}")
    n = int(point["N"])  # = f.n (a dry plan may use a smaller sample)
    T = n * n  # the lecture's T = n^2 (an integer: no rounding)
    if mutation == "frozen":
        raise ValueError("mutation 'frozen' does not apply to noisy projected SGD (its step "
                         "is the lecture's, not a parameter)")
    p = dict(d=float(point["d"]), n=float(n), eps=float(point["eps"]),
             delta=float(point["delta"]), L=inst.G, diam=2 * radius)
    bound = float(entry.tuned.evaluate(ignore_extra=True, invalid="nan", **p))
    if dry:
        return _plan(bound, inst.G * 2 * radius, inst.R, T, T, trials, point, block=T)
    with mutated(mutation, "noisy_projected_sgd"), noise_tap() as tap:
        res = noisy_projected_sgd(f, epsilon=_eps_run(point, mutation), delta=point["delta"],
                                  radius=radius, steps=T, lipschitz=inst.G, trials=trials,
                                  seed=seed, x0=inst.x0, trace="suboptimality",
                                  trace_every=_trace_every(T, 100))
    s_run = float(res.params["sigma"])
    # Kamath Algorithm 3's sigma^2 = 32 L^2 n^2 log(n/delta) log(1/delta) / eps^2 (VERBATIM)
    dl, ep = float(point["delta"]), float(point["eps"])
    s_claim = math.sqrt(32 * inst.G**2 * n**2 * math.log(n / dl) * math.log(1 / dl)) / ep
    checks = dict(
        ledger=_check("ledger", s_run, s_claim, "Kamath Alg. 3 sigma (VERBATIM)",
                      rtol=_LEDGER_RTOL["tree"]),
        drawn=_drawn_check(tap, int(point["d"]), s_run**2, steps=T))
    trace = np.asarray(res.trace, dtype=float)
    return dict(
        measured=dict(excess_risk=np.asarray(f.suboptimality(res.x), dtype=float),
                      excess_avg=trace[:, 1:].mean(axis=1)),
        bound=dict(excess_risk=bound, excess_avg=bound),
        params=dict(T=T, sigma=float(res.params["sigma"]), radius=radius, R=inst.R,
                    gradient_evaluations=T),
        # the trivial bound of the excess risk on the ball: G * diameter
        trivial=inst.G * 2 * radius, notes=[], violations=_violations(cast(Bound, entry.tuned), p),
        lower_bound=0.0, checks=checks, do_nothing=inst.R,
    )


def _erm_exprs() -> dict[str, sp.Expr]:
    from dpbounds.bounds.convex import noisy_projected_sgd as npsgd

    e = npsgd.bst14_excess_risk_average.expr
    return {"excess_risk": e, "excess_avg": e}


register_study(TheoremStudy(
    theorem="convex.noisy_projected_sgd", algorithms=("noisy_projected_sgd",),
    utility=("excess_risk", "excess_avg"), components=("excess_risk", "excess_avg"),
    defaults={"d": ((2, 8, 32, 128), (2, 8, 32)),
              "N": ((25, 50, 100, 200), (25, 50, 100)),
              "eps": ((0.5, 1.0, 2.0, 4.0), (0.5, 1.0, 2.0, 4.0))},
    fixed={"d": 4, "N": 100, "eps": 1.0, "delta": 1e-5, "radius": 1.0},
    quick_fixed={"N": 50},
    run=_run_erm, component_exprs=_erm_exprs,
    # BST14's bound ~ sqrt(d) log(n/delta) / (n eps) (DERIVED average form): its first
    # informative n scales as 1/eps and the run's T = n^2 as 1/eps^2; at eps = 1 that is
    # n = 1.1e5, T = 1.3e10 (2 h CPU for 4 trials), at eps = 8 n = 1e4, T = 1e8
    informative_fixed={"eps": 8.0},
    notes="Kamath Algorithm 3 (BST14, VERBATIM noise, T = n^2) on the Huber well in the "
          "ball of radius 1; average-form excess risk (DERIVED from the sum form)"), rank=50)
