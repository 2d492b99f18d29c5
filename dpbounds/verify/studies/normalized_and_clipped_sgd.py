"""Verify studies of DP normalized SGD and DP clipped SGD (Yang et al., Theorems 3.2 and 3.4)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from dpbounds.bounds import registry
from dpbounds.verify.mutants import mutated, noise_tap, step_factor
from dpbounds.verify.problems import Instance
from dpbounds.verify.studies._common import (
    _LEDGER_RTOL,
    _STEP_SHARE,
    _TINY,
    _YANG_DEFAULTS,
    TheoremStudy,
    _check,
    _drawn_check,
    _eps_run,
    _lipschitz,
    _plan,
    _trace_every,
    _violations,
    huber_sample_grads,
    register_study,
)


def _yang_prob(point: Mapping[str, float], inst: Instance, R: float) -> dict[str, float]:
    _lipschitz(inst)
    return dict(d=float(point["d"]), N=float(point["N"]), eps=float(point["eps"]),
                delta=float(point["delta"]), G=inst.G, L=inst.L, R=R)


#: the claimed noise multipliers calibrated so far, by ``(eps, delta, q, T)``
_MULTIPLIERS: dict[tuple[float, float, float, int], float] = {}
_MULTIPLIERS_MAX = 4096


def _claimed_multiplier(eps: float, delta: float, q: float, T: int) -> float:
    """The RDP noise multiplier of the claimed ``(eps, delta)`` (sampling without replacement
    at rate ``q``, ``T`` steps), once per parameters: a plan over ``d`` asked for the same
    one at every ``d`` (376 calibrations, 56 of the 128 CPU-s of a full ``clipped_sgd --vary
    d`` study)."""
    from dpbounds.privacy.calibrate import noise_multiplier_for_epsilon

    key = (eps, delta, q, T)
    if key not in _MULTIPLIERS:
        _remember(key, float(noise_multiplier_for_epsilon(eps, delta, q, T,
                                                          sampling="without_replacement")))
    return _MULTIPLIERS[key]


def _remember(key: tuple[float, float, float, int], z: float) -> None:
    if len(_MULTIPLIERS) >= _MULTIPLIERS_MAX:
        _MULTIPLIERS.clear()
    _MULTIPLIERS[key] = z


def _yang_tuned(kind: str, point: Mapping[str, float], inst: Instance
                ) -> tuple[dict[str, Any], dict[str, float], Any, float]:
    """``(p, hyperparameters, bound_of, sigma_lemma31)``: the theorem's parameters, the tuned
    ``r`` or ``C`` and ``eta`` (tuned with the theorem's own noise ``sigma_lemma31``, Lemma
    3.1 with ``c2`` fitted), and ``bound_of(sigma)``, the bound at the noise std the run adds
    (the dry plan's at the claimed noise, the lower plan's at 0)."""
    from dpbounds.bounds.nonconvex import clipped_sgd as cs
    from dpbounds.bounds.nonconvex import generalized_smoothness as gs
    from dpbounds.bounds.nonconvex import normalized_sgd as ns

    entry = registry.get("nonconvex.normalized_sgd" if kind == "nsgd"
                         else "nonconvex.clipped_sgd")
    T, B = int(point["T"]), int(point["B"])
    p = entry.params(_yang_prob(point, inst, inst.R_tune))
    tau0, L0, c2 = p["tau0"], p["L0"], p["c2"]
    sigma_thm = float(gs.lemma31_sigma.evaluate(c2=c2, B=B, T=T, delta=p["delta"], N=p["N"],
                                                eps=p["eps"]))
    V = 1 + sigma_thm**2 * p["d"] / B**2
    if kind == "nsgd":
        r = float(entry.hyperparameters(_yang_prob(point, inst, inst.R_tune))["r"])
        eta = math.sqrt(2 * p["D_f"] / (L0 * V * T))

        def bound_of(sigma: float) -> float:
            Q = float(ns.nsgd_descent.evaluate(B=B, D_f=inst.R_bound, L0=L0, T=T, d=p["d"],
                                               eta=eta, sigma=max(sigma, _TINY)))
            return float(ns.inversion_nsgd.evaluate(Q=Q, a=_TINY, r=r, tau0=tau0))
        return p, dict(r=r, eta=eta), bound_of, sigma_thm
    C = 3 * tau0
    eta = math.sqrt(2 * p["D_f"] / (L0 * C**2 * V * T))

    def sgd_bound_of(sigma: float) -> float:
        Q = float(cs.sgd_descent.evaluate(B=B, C=C, D_f=inst.R_bound, L0=L0, L1=_TINY, T=T,
                                          d=p["d"], eta=eta, sigma=max(sigma, _TINY)))
        return float(cs.inversion_sgd.evaluate(Q=Q, C=C))
    return p, dict(C=C, eta=eta), sgd_bound_of, sigma_thm


def _multiplier_key(point: Mapping[str, float], p: Mapping[str, float]
                    ) -> tuple[float, float, float, int]:
    return (float(p["eps"]), float(p["delta"]), int(point["B"]) / p["N"], int(point["T"]))


def _run_yang(kind: str, point: dict, inst: Instance, trials: int, seed: Any,
              mutation: str | None, dry: bool = False, noise_free: bool = False
              ) -> dict[str, Any]:
    from dpbounds.algorithms import dp_nsgd, dp_sgd
    from dpbounds.algorithms._transcript import Transcript
    from dpbounds.bounds.nonconvex import clipped_sgd as cs
    from dpbounds.bounds.nonconvex import normalized_sgd as ns

    T, B = int(point["T"]), int(point["B"])
    p, hp, bound_of, sigma_thm = _yang_tuned(kind, point, inst)
    c2 = p["c2"]
    # the noise a correct run adds for the CLAIMED (eps, delta): the RDP accountant of
    # dp_nsgd / dp_sgd (sampling without replacement, replace-one sensitivity 2 per unit
    # contribution); the bound uses it, so a run that adds other noise cannot move its bound
    sigma_claim = 0.0 if noise_free else 2.0 * _claimed_multiplier(*_multiplier_key(point, p))
    bound = bound_of(sigma_claim)
    every = _trace_every(T, 100)
    if dry:  # records: x_0, every multiple of `every`, and x_T where T is not one
        return _plan(bound, inst.G, inst.start_grad_norm, T, T * B, trials, point,
                     block=T, transcript="steps", batch=B, trace_records=-(-T // every) + 1,
                     extra_bytes=_clip_probe_bytes(B, int(point["d"]), int(point["N"])))
    # after the dry plan's return: the planner's dry plans need no scipy.stats (1.3 of the
    # 1.5 CPU-s a quick study spent planning before its first run)
    from dpbounds.verify.reaccount import transcript_checks

    eta = hp["eta"]
    f = inst.objective
    common = dict(epsilon=_eps_run(point, mutation), delta=point["delta"], steps=T,
                  batch_size=B, trials=trials, seed=seed, x0=inst.x0, trace="grad_norm",
                  trace_every=every, transcript=Transcript())
    notes: list[str] = []
    d = int(point["d"])
    if kind == "nsgd":
        r = hp["r"]
        with mutated(mutation, "dp_nsgd", r), noise_tap() as tap:
            res = dp_nsgd(f, step_size=eta * step_factor(mutation), regulariser=r, **common)
        viol = _violations(ns.nsgd_corollary, dict(p, r=r))
        clip_check, clip_params = _clip_probe(point, inst, eta, seed, mutation, "nsgd", r)
    else:
        C = hp["C"]
        with mutated(mutation, "dp_sgd"), noise_tap() as tap:
            res = dp_sgd(f, step_size=eta * step_factor(mutation), clip_threshold=C,
                         **common)
        viol = _violations(cs.sgd_corollary, dict(p, C=C))
        clip_check, clip_params = _clip_probe(point, inst, eta, seed, mutation)
    sigma = float(res.params["sigma_over_clip"])
    trace = np.asarray(res.trace, dtype=float)
    std_run = float(res.params["noise_std_sum"]) / B  # noise on the batch mean
    bound_c = 1.0 if kind == "nsgd" else C  # contribution bound: |g/(|g|+r)| < 1, |clip_C| <= C
    checks = dict(
        ledger=_check("ledger", float(res.params["noise_std_sum"]), sigma_claim * bound_c,
                      "RDP sigma for the claimed eps (without replacement, replace-one)",
                      rtol=min(_LEDGER_RTOL["rdp"], _STEP_SHARE / T)),
        drawn=_drawn_check(tap, d, std_run**2, steps=T),
        **transcript_checks(common["transcript"].as_dict(), epsilon=point["eps"],
                            delta=point["delta"]))
    checks["clip_exact" if kind == "sgd" else "normalise_exact"] = clip_check
    checks["probe_spread"] = clip_params.pop("spread")
    checks.update({f"probe_{k}": v for k, v in clip_params.pop("transcript").items()})
    hp.update(clip_params)
    return dict(
        # min over t >= 1 (>= the theorem's min over t >= 0: a stricter check, and not the
        # trivial 0 of a start at the minimiser)
        measured=dict(grad_min=trace[:, 1:].min(axis=1), grad_avg=trace[:, :-1].mean(axis=1)),
        bound=dict(grad_min=bound, grad_avg=bound),
        params=dict(hp, T=T, B=B, sigma=sigma, sigma_claimed=sigma_claim,
                    sigma_lemma31=sigma_thm, c2=c2, R=inst.R,
                    R_tune=inst.R_tune, gradient_evaluations=T * B),
        trivial=inst.G, notes=notes, violations=viol, lower_bound=0.0, checks=checks,
        do_nothing=inst.start_grad_norm,
    )


#: trials of the clipping probe (its standard error ~ 1.3 / sqrt(4000) = 0.02 at eps = 0.25)
_CLIP_TRIALS = 4000


def _clip_probe_bytes(batch: int, d: int, n: int) -> float:
    """What :func:`_clip_probe` holds beside the run's transcript (bytes): its one step of
    ``_CLIP_TRIALS`` trials (~80 bytes a trial and batch index: the indices, norms and
    per-sample gradients; ~32 a trial and coordinate), the whole sample's per-sample
    gradients three times (raw, mapped, norms: ``24 N d``) and 8 MiB of the rest. Measured
    by ``tracemalloc`` (stop 60): B = 256 held 78-90 MiB at d = 2-256 (this: 87-109), B = 1
    held 116 MiB at d = 1024 (125), 148 MiB at N = 1e5, d = 64 (163); an independent review
    found it missing from the plan."""
    return float(_CLIP_TRIALS * (80 * batch + 32 * d) + 24 * n * d + 8 * 2**20)


#: fraction of the samples whose gradient the probe's threshold must clip (issue 34 item 4)
CLIP_BINDING_MIN = 0.3


def _probe_seed(seed: Any) -> Any:
    return (*seed, 1) if isinstance(seed, tuple) else (seed, 1)


def _lower_plan(kind: str, point: dict, inst: Instance, trials: int) -> dict[str, Any]:
    """The dry plan with no privacy noise in the bound (``sigma = 0``; no calibration): its
    bound is at most the dry plan's, with the same trivial and do-nothing values (DERIVED:
    both bounds are non-decreasing in the noise, ``V = 1 + sigma^2 d / B^2`` enters the
    descent lemma's ``Q`` with a positive factor and each inversion is increasing in ``Q``;
    the step size ``eta`` and ``r`` are tuned with the theorem's noise, not this one)."""
    return _run_yang(kind, point, inst, trials, 0, None, dry=True, noise_free=True)


#: relative margin of a decision from a bracket of the noise (bound evaluations round)
_DECIDE_MARGIN = 1e-9


def _is_informative(kind: str, point: dict, inst: Instance, trials: int) -> bool:
    """Whether the dry plan's bound is informative (finite, below ``min(trivial,
    do_nothing)``), decided from a bracket of the claimed noise where possible: the same
    answer as the dry plan's, most of its calibration skipped.

    The bound is non-decreasing in the noise (see :func:`_lower_plan`), and
    :func:`~dpbounds.privacy.calibrate.noise_multiplier_bracket` runs the dry plan's own
    calibration only until its bracket ``[lo, hi]`` (which holds the calibrated multiplier)
    settles the answer: the bound at ``hi`` below the floor (informative there, so at the
    calibrated noise) or at ``lo`` above it (vacuous), each by a relative margin of
    :data:`_DECIDE_MARGIN`. Otherwise the calibration runs to the end and its multiplier is
    the dry plan's (DERIVED; checked against the dry plan in
    ``tests/verify/test_lower_plan.py``). The planner asks this of every point it scans
    (~0.09 CPU-s a calibration, ~13 accountant evaluations; a point far from the floor
    settles after the first bracket, 3-5 of them, while one near it, where Illinois steps
    approach from one side, may run all of them).

    A search that runs to its end leaves the calibrated multiplier itself (the same search as
    :func:`_claimed_multiplier`'s, bit for bit), which is kept for the dry plan and the run;
    a settled bracket is never kept."""
    from dpbounds.privacy.calibrate import noise_multiplier_bracket

    p, _, bound_of, _ = _yang_tuned(kind, point, inst)
    floor = min(float(inst.G), float(inst.start_grad_norm))  # the plan's trivial, do-nothing
    key = _multiplier_key(point, p)
    if key in _MULTIPLIERS:
        return _below(bound_of(2.0 * _MULTIPLIERS[key]), floor)
    seen: dict[float, float] = {}

    def bound(z: float) -> float:
        if z not in seen:
            seen[z] = bound_of(2.0 * z)
        return seen[z]

    def informative(lo: float, hi: float) -> bool:
        b_lo, b_hi = bound(lo), bound(hi)
        return math.isfinite(b_lo) and math.isfinite(b_hi) and \
            b_hi < floor * (1.0 - _DECIDE_MARGIN)

    def vacuous(lo: float) -> bool:
        return bound(lo) >= floor * (1.0 + _DECIDE_MARGIN)  # inf included, NaN not

    lo, hi = noise_multiplier_bracket(*key, sampling="without_replacement",
                                      settled=lambda lo, hi: vacuous(lo) or informative(lo, hi))
    if lo == hi:  # the calibration ran to its end: its multiplier, for the dry plan too
        _remember(key, lo)
        return _below(bound_of(2.0 * lo), floor)
    return not vacuous(lo)


def _below(bound: float, floor: float) -> bool:
    """The planner's test of a dry plan's bound (``regimes._informative``)."""
    return bool(math.isfinite(bound) and bound < floor)


def _clip_probe(point: Mapping[str, float], inst: Instance, eta: float, seed: Any,
                mutation: str | None, kind: str = "sgd", r: float = 1.0
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    r"""A two-sided check that DP-SGD clips (DP-NSGD normalises): one step where it binds.

    The study's own threshold ``C = 3 tau0`` never binds on these problems (every per-sample
    gradient has norm ``<= G < C``), so a DP-SGD that skips clipping would pass every other
    check. Here DP-SGD runs one step from the study's start with the threshold
    ``C_p = median / 2`` of the per-sample gradient norms there (more than half the samples
    clipped; the fraction, ``clip_binding_fraction``, is reported and must be
    ``>= CLIP_BINDING_MIN``) and ``_CLIP_TRIALS`` trials; per trial,
    :math:`(x_0-x_1)/\eta` projected on the unit vector ``u`` from the unclipped to the clipped
    mean gradient must have mean :math:`u^\top\bar g_{C_p}(x_0)`, the clipped mean over the
    whole sample (a uniform batch without replacement is unbiased; the noise has mean 0),
    computed here from the Huber well's definition
    :math:`\nabla f_i=G z_i/\max(\lVert z_i\rVert, G/L)`, :math:`z_i=x_0-e_i` in NumPy (not
    the objective's code). Skipping the clipping moves the mean by ``clip_gap`` (reported with
    its ratio to the standard error). The probe's transcript is re-accounted too
    (``transcript``: its checks; the clip binds here, so a contribution above the clip shows).

    DP-NSGD (``kind="nsgd"``): the same step with the study's ``r``; the map
    :math:`g/(\lVert g\rVert+r)` acts on every sample (binding fraction 1), its exact mean
    :math:`\frac1N\sum_i g_i/(\lVert g_i\rVert+r)` [DERIVED, the definition], and ``u``
    from the raw to the normalised mean gradient.
    """
    from dpbounds.algorithms import dp_nsgd, dp_sgd
    from dpbounds.algorithms._transcript import Transcript
    from dpbounds.verify.reaccount import transcript_checks

    f = inst.objective
    x0 = np.asarray(inst.x0, dtype=float).ravel()
    g = huber_sample_grads(f.offsets_np, inst.G, inst.L, x0)
    gn = np.linalg.norm(g, axis=1)
    if kind == "sgd":
        c_p = 0.5 * float(np.median(gn))
        g_map = g * np.minimum(1.0, c_p / np.maximum(gn, 1e-300))[:, None]
        binding = float(np.mean(gn > c_p))
    else:
        c_p = r
        g_map = g / (gn + r)[:, None]
        binding = float(np.mean(gn > 0))
    g_clip = g_map.mean(axis=0)
    diff = g_clip - g.mean(axis=0)
    gap = float(np.linalg.norm(diff))
    u = diff / gap if gap > 0 else np.eye(x0.size)[0]
    common = dict(epsilon=_eps_run(point, mutation), delta=point["delta"], steps=1,
                  batch_size=int(point["B"]), step_size=eta * step_factor(mutation),
                  trials=_CLIP_TRIALS, seed=_probe_seed(seed), x0=x0, trace=None,
                  transcript=(record := Transcript()))
    with mutated(mutation, "dp_sgd" if kind == "sgd" else "dp_nsgd", r):
        if kind == "sgd":
            res = dp_sgd(f, clip_threshold=c_p, **common)
        else:
            res = dp_nsgd(f, regulariser=r, **common)
    step = (x0[None, :] - np.asarray(res.x, dtype=float)) / eta
    vals = step @ u
    se = float(vals.std(ddof=1) / math.sqrt(vals.size))
    what, step_kind = (("clipped mean gradient", "DP-SGD step at a binding threshold")
                       if kind == "sgd" else ("mean of g/(|g|+r)", "DP-NSGD step"))
    check = _check("exact", vals, float(g_clip @ u), f"{what} at x0 (NumPy, Huber well's "
                   f"definition), one {step_kind}")
    # the step's spread: the mean above cannot see noise that is drawn but not added (an
    # adversary's mutant added it to the first coordinate only and passed every verify row;
    # the drawn rows read what was drawn). Per trial Q = ||step - mean||^2, whose expectation
    # is the batch mean's sampling variance (a uniform batch of B of N without replacement:
    # (N - B) / (B (N - 1)) times the population's, computed here from the mapped gradients)
    # plus d times the declared noise variance on the mean [DERIVED]
    B, N = int(point["B"]), g_map.shape[0]
    pop = float(np.mean(np.sum((g_map - g_clip) ** 2, axis=1)))
    sampling = pop * (N - B) / (B * (N - 1)) if N > 1 else 0.0
    noise_mean = float(res.params["noise_std_sum"]) / B
    spread = _check("exact", np.sum((step - g_clip) ** 2, axis=1),
                    sampling + x0.size * noise_mean**2,
                    "E||step - mean||^2 = the batch's sampling variance (NumPy) + d x the "
                    "declared noise variance on the mean (DERIVED)")
    prefix = "clip" if kind == "sgd" else "normalise"
    return check, {"spread": spread, "spread_sampling_variance": sampling,
                   "spread_noise_variance": x0.size * noise_mean**2,
                   f"{prefix}_probe_threshold": c_p, f"{prefix}_gap": gap,
                   f"{prefix}_gap_over_se": gap / se if se > 0 else math.inf,
                   f"{prefix}_binding_fraction": binding,
                   # one step: no sampling test has power against a cyclic order here;
                   # the run's own "sampling" check tests the same sampler with power
                   "transcript": transcript_checks(record.as_dict(), epsilon=point["eps"],
                                                   delta=point["delta"], power_needed=None)}


def _yang_exprs(kind: str) -> dict[str, sp.Expr]:
    from dpbounds.bounds.nonconvex import clipped_sgd as cs
    from dpbounds.bounds.nonconvex import normalized_sgd as ns

    e = ns.nsgd_corollary.expr if kind == "nsgd" else cs.sgd_corollary.expr
    return {"grad_min": e, "grad_avg": e}


register_study(TheoremStudy(
    theorem="nonconvex.normalized_sgd", algorithms=("dp_nsgd",),
    utility=("grad_min", "grad_avg"), components=("grad_min", "grad_avg"),
    defaults=_YANG_DEFAULTS,
    fixed={"d": 8, "N": 100, "eps": 0.5, "delta": 1e-5, "T": 2000, "B": 1},
    quick_fixed={"T": 1000},
    run=functools.partial(_run_yang, "nsgd"),
    component_exprs=functools.partial(_yang_exprs, "nsgd"),
    lower_plan=functools.partial(_lower_plan, "nsgd"),
    is_informative=functools.partial(_is_informative, "nsgd"),
    notes="Theorem 3.2 shape (DERIVED) at the run's T, B, r, eta and the accountant's "
          "sigma; r from Corollary 3.3's choice"), rank=30)
register_study(TheoremStudy(
    theorem="nonconvex.clipped_sgd", algorithms=("dp_sgd",),
    utility=("grad_min", "grad_avg"), components=("grad_min", "grad_avg"),
    defaults=_YANG_DEFAULTS,
    fixed={"d": 8, "N": 100, "eps": 0.5, "delta": 1e-5, "T": 2000, "B": 1},
    quick_fixed={"T": 1000},
    run=functools.partial(_run_yang, "sgd"),
    component_exprs=functools.partial(_yang_exprs, "sgd"),
    lower_plan=functools.partial(_lower_plan, "sgd"),
    is_informative=functools.partial(_is_informative, "sgd"),
    notes="Theorem 3.4 shape (DERIVED) at the run's T, B, C = 3 tau0, eta and the "
          "accountant's sigma"), rank=40)
