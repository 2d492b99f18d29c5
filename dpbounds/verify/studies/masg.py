r"""Verify study of DP-MASG (Kuru et al. Section 4.2: Theorem 4.3, Prop. 4.2, Remark 4.1).

DP-MASG is multi-stage DP-NAG: stage 1 takes :math:`n_1` steps of :math:`c/L`, stage
:math:`k\ge2` takes :math:`n_k=2^kC` steps of :math:`c\,2^{-2k}/L`, each with Nesterov's
momentum for its step, the momentum restarted at every stage change (:math:`x_{t-1}:=x_t`,
the reference code's ``NAG_LR.m``). On the verify problem ``quadratic`` every expectation is
exact, so the checks of this study share no helper with the algorithm:

* ``schedule``: the run's step sizes and momenta equal (33) and Nesterov's formula,
  recomputed here from the paper (:func:`masg_schedule_33`, not
  :func:`dpbounds.schedules.masg_schedule`);
* ``ledger`` / ``ledger_uniform``: the run's Laplace scales spend the claimed
  :math:`\varepsilon` exactly, :math:`\sum_t S_1/(n b_t)=\varepsilon` (pure DP, basic
  composition of (12) with full batches; two-sided: over- and under-noising both fail);
* ``allocation``: the optimal run's :math:`\sum_ta_{T,t}b_t^2` equals Prop. 4.2's optimum
  :math:`(S_1/(n\varepsilon))^2(\sum_ta_{T,t}^{1/3})^3` with the weights of (34) recomputed
  here (:func:`weights_34`);
* ``drawn`` / ``drawn_uniform``: the noise the run drew has the energy of its scales;
* ``subopt_exact`` / ``subopt_exact_uniform``: the measured :math:`F(x_T)-F^*` equals the
  exact expectation of the linear recursion of mean and covariance with the restarts
  (:func:`dpbounds.verify.exact.momentum_exact`, ``restarts=``), at the independent
  schedule and the independent optimal (or uniform) scales;
* the transcript's independent pure-DP re-accounting
  (:func:`~dpbounds.verify.studies._common.laplace_transcript_checks`).

The utility verdicts compare the measured error with the bound (29)/(34) at the run's own
horizon for both allocations (the bound's helpers compute the bound, which is what is
verified). The default point puts the horizon of Remark 4.1 past stage 1: at ``eps = 4``,
``N = 1000`` it is 92 / 36 / 8 steps for ``d = 2 / 8 / 32`` (three, two and one stage;
measured, quick grid); at DP-NAG's ``eps = 1``, ``N = 500`` it is 8, stage 1 alone, i.e.
DP-NAG itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds.bounds import registry
from dpbounds.verify import exact as ex
from dpbounds.verify.mutants import masg_restart, mutated, noise_tap, step_factor
from dpbounds.verify.problems import Instance
from dpbounds.verify.studies._common import (
    _LEDGER_RTOL,
    TheoremStudy,
    _check,
    _drawn_check,
    _eps_run,
    _nag_exprs,
    _plan,
    laplace_transcript_checks,
    register_study,
)

#: relative slack of the schedule check: float64 round-off of the two computations
_RTOL = 1e-9
#: relative slack of the allocation check: the algorithm's scales are rounded up so that the
#: ledger never overshoots (within 1e-6 of the target, as its calibrations)
_ALLOC_RTOL = 1e-6


def masg_schedule_33(mu: float, L: float, T: int, c: float = 1.0, p: float = 1.0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Steps, momenta and restart flags of the first ``T`` iterations of (33).

    VERBATIM (33) (Kuru et al., after Aybat et al. 2019): :math:`\alpha^{(1)}=1/L`,
    :math:`n_k=2^k\lceil\sqrt\kappa\ln(2^{p+2})\rceil`, :math:`\alpha^{(k)}=2^{-2k}/L`
    (:math:`k\ge2`), steps scaled by ``c`` (Section 5); :math:`n_1=\lceil2\sqrt\kappa
    \ln\sqrt\kappa\rceil` (at least 1) as the reference code ``DP_NAG_LR.m`` (the paper only
    asks :math:`n_1\ge1`); momentum :math:`(1-\sqrt{\mu\alpha})/(1+\sqrt{\mu\alpha})`
    (Theorem 4.1); a restart at the first step of every stage :math:`k\ge2` (``NAG_LR.m``).
    Written from the paper here, not through :mod:`dpbounds.schedules`."""
    kappa = L / mu
    n1 = max(1, math.ceil(2.0 * math.sqrt(kappa) * math.log(math.sqrt(kappa)) - 1e-12))
    C = math.ceil(math.sqrt(kappa) * math.log(2.0 ** (p + 2)) - 1e-12)
    alpha, restarts = np.empty(T), np.zeros(T, dtype=bool)
    k, end = 1, n1  # the stage of step t and the step its stage ends before
    for t in range(T):
        if t == end:  # a new stage k >= 2 opens here
            k += 1
            end += 2 ** k * C
            restarts[t] = True
        alpha[t] = c / L if k == 1 else c / (2.0 ** (2 * k) * L)
    s = np.sqrt(mu * alpha)
    return alpha, (1.0 - s) / (1.0 + s), restarts


def weights_34(alpha: np.ndarray, stage_of: np.ndarray, mu: float, L: float
               ) -> tuple[float, np.ndarray]:
    r"""VERBATIM (34)'s weights: :math:`a_{T,t}=2^{s_T-s_t}\prod_{i=t+1}^T(1-\sqrt{\mu
    \alpha_i})\,\alpha_t(1+\alpha_tL)` and :math:`a_{T,0}=2^{s_T-1}\prod_{i=1}^T(1-\sqrt{\mu
    \alpha_i})` (Theorem 4.3, one factor 2 per stage change); returns ``(a_0, a)``."""
    q = 1.0 - np.sqrt(mu * alpha)
    tail = np.append(np.cumprod(q[::-1])[::-1], 1.0)  # tail[t] = prod_{i >= t} q_i
    sT = int(stage_of[-1])
    a = 2.0 ** (sT - stage_of) * tail[1:] * alpha * (1.0 + alpha * L)
    return 2.0 ** (sT - 1) * float(tail[0]), a


def _stages(restarts: np.ndarray) -> np.ndarray:
    return 1 + np.cumsum(restarts.astype(int))


def _run_masg(point: dict, inst: Instance, trials: int, seed: Any, mutation: str | None,
              dry: bool = False) -> dict[str, Any]:
    from dpbounds.algorithms import dp_masg
    from dpbounds.bounds.strongly_convex.nesterov import error_weights
    from dpbounds.bounds.strongly_convex.noise_allocation import (
        optimal_noise_closed_form,
        uniform_noise,
    )
    from dpbounds.schedules import masg_schedule

    if inst.spec.kind != "quadratic":
        raise ValueError("the DP-MASG study needs a strongly convex problem: "
                         "problem='quadratic'")
    entry = registry.get("strongly_convex.masg")
    f: Any = inst.objective  # a QuadraticObjective (checked above)
    mu, L, n, d = f.strong_convexity, f.smoothness, f.n, int(point["d"])
    S1, eps = f.l1_sensitivity, float(point["eps"])
    prob = dict(mu=mu, L=L, d=d, N=n, eps=eps, S1=S1, R=inst.R_tune)
    hyper = entry.hyperparameters(prob)
    T, c = int(hyper["T"]), float(hyper.get("c", 1.0))
    if dry:
        bound = float(entry.value(dict(prob, R=inst.R_bound)))
        # one full gradient per step and trial of each of the two runs (2 x trials): the
        # quadratic's Qx - b never reads the N records (priced per record, a full
        # study's estimate read 3-5x its runs)
        return _plan(bound, inst.R, inst.R, T, T, 2 * trials, point, block=T)
    if inst.R_tune <= 0:  # --start 0: dp_nag's check said "initial_error must be > 0"
        raise ValueError("the start is the minimiser (F(x0) - F* = 0, --start 0): DP-MASG's "
                         "noise allocation weighs the start's error, F(x0) - F* > 0; give a "
                         "start > 0")
    common = dict(epsilon=_eps_run(point, mutation), steps=T, trials=trials, seed=seed,
                  x0=inst.x0, initial_error=inst.R_tune, trace=None,
                  c=c * step_factor(mutation), restart=masg_restart(mutation))
    runs, taps = {}, {}
    for alloc in ("optimal", "uniform"):
        with mutated(mutation, "dp_masg"), noise_tap() as taps[alloc]:
            runs[alloc] = dp_masg(f, allocation=alloc, **common)
    opt, uni = runs["optimal"], runs["uniform"]
    probe = dict(common, trials=2)
    checks = laplace_transcript_checks(
        lambda tr, m, k: dp_masg(f, allocation="optimal", transcript=tr, batch_size=m,
                                **dict(probe, trials=k)),
        mutation, "dp_masg", point, n=f.n)

    # the independent side: schedule (33), weights (34), Prop. 4.2's allocation, exact error
    alpha, beta, restarts = masg_schedule_33(mu, L, T, c)
    a0, a = weights_34(alpha, _stages(restarts), mu, L)
    w3 = np.cbrt(a)
    b_opt = S1 * w3.sum() / (n * eps * w3)          # eps_t = eps a_t^(1/3) / sum a^(1/3)
    b_uni = np.full(T, S1 * T / (n * eps))          # eps_t = eps / T
    lam = np.asarray(f.eigenvalues, dtype=float)
    err = np.asarray(inst.x0, dtype=float).ravel() - np.asarray(f.optimum.x, dtype=float).ravel()
    e0 = err if f.basis is None else np.asarray(f.basis).T @ err
    gap = max(float(np.max(np.abs(np.asarray(opt.params["step_sizes"]) - alpha) / alpha)),
              float(np.max(np.abs(np.asarray(opt.params["momenta"]) - beta))))
    checks["schedule"] = _check("exact", gap, 0.0, "(33) and Nesterov's momentum, written "
                                "from the paper (largest relative gap)", sd=0.0, rtol=_RTOL)
    measured = {}
    for sfx, res, tap, b_ind in (("", opt, taps["optimal"], b_opt),
                                 ("_uniform", uni, taps["uniform"], b_uni)):
        b_run = np.asarray(res.params["laplace_scales"], dtype=float)
        checks["ledger" + sfx] = _check(
            "ledger", float(np.sum(S1 / (n * b_run))), eps,
            "pure-DP basic composition of Kuru (12), full batches: sum S1/(n b_t)",
            rtol=_LEDGER_RTOL["laplace"])
        checks["drawn" + sfx] = _drawn_check(tap, d, 2.0 * b_run**2, laplace=True)
        m = np.asarray(f.suboptimality(res.x), dtype=float)
        measured["subopt" + sfx] = m
        value, _ = ex.momentum_exact(lam, e0, kind="nag", step_sizes=alpha, momenta=beta,
                                     laplace_scales=b_ind, restarts=restarts)
        checks["subopt_exact" + sfx] = _check(
            "exact", m, value, "linear recursion of mean and covariance with the stage "
            "restarts, at (33) and Prop. 4.2's scales (DERIVED)")
    b_run = np.asarray(opt.params["laplace_scales"], dtype=float)
    optimum = (S1 / (n * eps)) ** 2 * float(w3.sum()) ** 3
    checks["allocation"] = _check("exact", float(np.sum(a * b_run**2)), optimum,
                                  "Prop. 4.2's optimum of sum a_t b_t^2 with (34)'s weights "
                                  "(recomputed here)", sd=0.0, rtol=_ALLOC_RTOL)
    # the bound (34) at the run's own horizon, for each allocation (the theorem's side)
    w = error_weights(masg_schedule(mu, L, horizon=T, c=c), mu, L)
    n_opt, n_uni = optimal_noise_closed_form(w, S1, n, eps), uniform_noise(w, S1, n, n, eps)
    bound_opt = w.a0 * inst.R + d * n_opt.value
    bound_uni = w.a0 * inst.R + d * n_uni.value
    return dict(
        measured=measured,
        bound=dict(subopt=bound_opt, subopt_uniform=bound_uni),
        params=dict(T=T, c=c, S1=S1, mu=mu, L=L, R=inst.R, R_tune=inst.R_tune,
                    stages=int(_stages(restarts)[-1]), a0_34=a0,
                    simulated_ratio=float(measured["subopt_uniform"].mean()
                                          / measured["subopt"].mean()),
                    analytic_ratio=float(bound_uni / bound_opt), gradient_evaluations=T * n),
        trivial=inst.R, notes=[], violations=[], lower_bound=0.0, checks=checks,
        do_nothing=inst.R,
    )


register_study(TheoremStudy(
    theorem="strongly_convex.masg", algorithms=("dp_masg",),
    utility=("subopt",), components=("subopt", "subopt_uniform"),
    defaults={"d": ((2, 4, 8, 16, 32), (2, 8, 32)),
              "N": ((300, 1000, 3000, 10000), (300, 1000, 3000)),
              "eps": ((1.0, 2.0, 4.0, 8.0, 16.0), (1.0, 4.0, 16.0))},
    # eps = 4, N = 1000: Remark 4.1's horizon spans two or three stages at d = 2, 8 (92, 36
    # steps; eps = 1, N = 500 gives 8 steps, stage 1 alone: DP-NAG)
    fixed={"d": 8, "N": 1000, "eps": 4.0, "delta": 1e-5},
    unread=("delta",),  # pure eps-DP (Laplace): delta changes nothing
    quick_fixed={},
    run=_run_masg, component_exprs=_nag_exprs, trials=(3000, 1500), problems=("quadratic",),
    # vectorised over 1,500-3,000 trials: probed at 16, estimated at 0.2-50x the runs
    probe_trials=4096,
    notes="Kuru et al. Thm 4.3 + Prop. 4.2 at Remark 4.1's horizon (numeric bound); "
          "DP-MASG (schedule (33), momentum restarted at stage changes) with the optimal and "
          "the uniform Laplace allocation at that horizon; (33), (34)'s weights, Prop. 4.2's "
          "optimum and the exact error recomputed independently"), rank=65)
