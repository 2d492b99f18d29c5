r"""Kuru et al.'s DP accelerated methods: DP-SHB, DP-NAG(-opt), DP-MASG(-opt).

All six Section-5 methods share one loop. Iteration :math:`t = 1, \dots, T` draws a
mini-batch :math:`B_t` of :math:`m` of the :math:`n` samples **without replacement** and
adds i.i.d. :math:`\mathrm{Laplace}(b_t)` noise (scale :math:`b_t`, variance :math:`2b_t^2`)
to the mini-batch mean gradient (eq. (8)):

* DP-SHB (9):   :math:`x_{t}=x_{t-1}-\alpha(\nabla F_{B_t}(x_{t-1})+\eta_t)+\beta(x_{t-1}-x_{t-2})`;
* DP-NAG (27):  :math:`z=(1+\beta)x_{t-1}-\beta x_{t-2}`,
  :math:`x_t=z-\alpha(\nabla F_{B_t}(z)+\eta_t)`;
* DP-GD:        either with :math:`\beta=0` (Section 5's DP-GD);
* DP-MASG:      DP-NAG with the multi-stage schedule (33), step :math:`\alpha^{(k)}` and
  :math:`\beta^{(k)}=(1-\sqrt{\mu\alpha^{(k)}})/(1+\sqrt{\mu\alpha^{(k)}})` in stage
  :math:`k`, momentum restarted at each stage change (as the reference code does;
  ``restart=False`` keeps it).

Privacy (pure :math:`\epsilon`-DP, replace-one, Kuru et al. Prop. 3.1): with per-iteration
budgets :math:`\epsilon_t` (:math:`\sum_t\epsilon_t=\epsilon`), the scale is the inversion of
eq. (11), :math:`b_t=S_1/(m\ln[1+\frac nm(e^{\epsilon_t}-1)])` — for the uniform budget
:math:`\epsilon/T` this is exactly eqs. (12)-(13), :math:`b=S_1/(m\epsilon_0)`. We use
(12)'s :math:`m` (not (27)'s :math:`n`, ``kuru_et_al.md`` §11 item 4). The ledger
recomputes each step's loss with eq. (11) from the scale actually used and composes by
basic composition (Thm A.2).

``-opt`` variants distribute the budget by Prop. 4.2, :math:`\epsilon_t\propto
a_{T,t}^{1/3}` with the weights of Thm 4.1 (29) (NAG) or Thm 4.3 (34) (MASG) — exact for
:math:`m=n`, the paper's heuristic for :math:`m<n` (Remark 4.2) — and, as in Section 5,
re-select the horizon :math:`T'\le T` minimising the bound (32) for an initial-error
guess :math:`E_0` (default 10, the paper's value), then run :math:`T'` iterations.

The step sizes follow Section 5: :math:`\alpha=c/L` and NAG's momentum
:math:`\beta=(1-\sqrt{\mu\alpha})/(1+\sqrt{\mu\alpha})` for DP-NAG **and** DP-HB (the
reference code uses NAG's formula for HB too, ``kuru_et_al.md`` §12.2 item 10). Unlike the
reference code, the Laplace noise is drawn with scale :math:`b_t` (its ``laprnd`` used
:math:`b_t` as the standard deviation, ``§12.2`` item 1), and the weights use
:math:`\alpha(1+\alpha L)` of (28), not the code's :math:`\frac\alpha2(1+\alpha L)` (item 6).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.algorithms._common import (
    PrivacyLedger,
    SimulationResult,
    TraceRecorder,
    check_batch_size,
    check_epsilon,
    make_streams,
)
from dpbounds.backend import backend_name
from dpbounds.privacy.laplace import (
    basic_composition,
    laplace_scales_for_budgets,
    split_budget,
    subsampled_laplace_epsilon,
)
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "DP_HB_SOURCE",
    "DP_MASG_SOURCE",
    "DP_NAG_SOURCE",
    "dp_heavy_ball",
    "dp_masg",
    "dp_masg_opt",
    "dp_nag",
    "dp_nag_opt",
    "laplace_momentum_method",
    "masg_schedule",
    "nag_error_weights",
    "masg_error_weights",
    "optimal_budgets",
    "select_horizon",
]

DP_HB_SOURCE = Source(KURU, "eq. (9), Proposition 3.1", Provenance.VERBATIM)
DP_NAG_SOURCE = Source(KURU, "eq. (27), Theorem 4.1, Proposition 4.2", Provenance.VERBATIM,
                       "Laplace scale S_1/(m eps_0) of (12), not (27)'s S_1/(n eps_0)")
DP_MASG_SOURCE = Source(KURU, "eq. (33), Theorem 4.3", Provenance.VERBATIM,
                        "momentum restart at stage changes as in the reference code")


# ---------------------------------------------------------------------------------------
# Schedules and weights.
# LOCAL FALLBACK: dpbounds/bounds/nesterov.py (MASG schedule (33), weights (29)/(34)) and
# dpbounds/bounds/noise_allocation.py (Prop. 4.2 / problem (30)) are written concurrently
# by another helper; these self-contained versions are used until they land.
# ---------------------------------------------------------------------------------------
def nag_error_weights(steps: int, step_size: float, mu: float, L: float
                      ) -> tuple[float, np.ndarray]:
    r"""Weights of Thm 4.1 (29): :math:`a_{T,0}=q^T`, :math:`a_{T,t}=q^{T-t}\alpha(1+\alpha L)`,
    :math:`q=1-\sqrt{\mu\alpha}`; returns ``(a_{T,0}, a[1..T])``."""
    T = check_int("steps", steps)
    q = 1.0 - math.sqrt(mu * step_size)
    k = np.arange(T - 1, -1, -1, dtype=float)  # T - t for t = 1..T
    a = np.exp(k * math.log(q)) * step_size * (1.0 + step_size * L) if q > 0 else \
        np.where(k == 0, step_size * (1.0 + step_size * L), 0.0)
    return float(q**T), a


def masg_schedule(steps: int, mu: float, L: float, *, c: float = 1.0, p: int = 1,
                  first_stage: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""The MASG schedule (33) truncated at ``steps`` iterations.

    Stage 1: ``first_stage`` iterations (default :math:`\lceil2\sqrt\kappa\ln\sqrt\kappa\rceil`,
    the reference code's Section-5 choice; (33) only requires :math:`n_1\ge1`) with step
    :math:`c/L`; stage :math:`k\ge2`: :math:`2^k\lceil\sqrt\kappa\ln 2^{p+2}\rceil` iterations
    with step :math:`c\,2^{-2k}/L`.

    Returns ``(step_sizes, stages)``, each of length ``steps`` (stage numbers from 1).
    """
    T = check_int("steps", steps)
    kappa = L / mu
    rk = math.sqrt(kappa)
    n1 = first_stage if first_stage is not None else max(1, math.ceil(2 * rk * math.log(rk)))
    n1 = check_int("first_stage", n1)
    C = math.ceil(rk * math.log(2.0 ** (p + 2)))
    stages = np.empty(T, dtype=int)
    alphas = np.empty(T)
    t, k = 0, 1
    while t < T:
        length = n1 if k == 1 else 2**k * C
        stop = min(T, t + length)
        stages[t:stop] = k
        alphas[t:stop] = c / L if k == 1 else c * 2.0 ** (-2 * k) / L
        t, k = stop, k + 1
    return alphas, stages


def masg_error_weights(step_sizes: np.ndarray, stages: np.ndarray, mu: float, L: float
                       ) -> tuple[float, np.ndarray]:
    r"""Weights of Thm 4.3 (34) for iterations ``1..T`` with the given per-iteration steps
    and stages (``s_0 = s_1``)."""
    alphas = np.asarray(step_sizes, dtype=float)
    s = np.asarray(stages)
    q = 1.0 - np.sqrt(mu * alphas)
    logq = np.log(np.maximum(q, 1e-300))
    # suffix sums: sum_{i=t+1}^{T} log q_i
    suffix = np.concatenate([np.cumsum(logq[::-1])[::-1][1:], [0.0]])
    sT = s[-1]
    a = 2.0 ** (sT - s) * np.exp(suffix) * alphas * (1.0 + alphas * L)
    a0 = 2.0 ** (sT - s[0]) * math.exp(float(np.sum(logq)))
    return a0, a


def optimal_budgets(weights: np.ndarray, epsilon: float) -> np.ndarray:
    r"""Prop. 4.2 (31): :math:`\epsilon_t=\epsilon\,a_{T,t}^{1/3}/\sum_j a_{T,j}^{1/3}`."""
    w = np.cbrt(np.asarray(weights, dtype=float))
    return split_budget(epsilon, weights=np.maximum(w, 1e-300))


def select_horizon(weights_for: Any, steps: int, *, epsilon: float, sensitivity: float,
                   n: int, d: int, initial_error: float) -> tuple[int, np.ndarray]:
    r"""Remark 4.1: the horizon :math:`T'\le T` minimising (32),
    :math:`a_{T',0}E_0+\frac{dS_1^2}{n^2\epsilon^2}(\sum_j a_{T',j}^{1/3})^3`.

    ``weights_for(T')`` returns ``(a_{T',0}, a_{T',1..T'})``. Returns ``(T', scores)``.
    """
    scores = np.empty(steps)
    const = d * sensitivity**2 / (n**2 * epsilon**2)
    for Tp in range(1, steps + 1):
        a0, a = weights_for(Tp)
        scores[Tp - 1] = a0 * initial_error + const * float(np.sum(np.cbrt(a))) ** 3
    return int(np.argmin(scores)) + 1, scores


# ---------------------------------------------------------------------------------------
# The shared loop
# ---------------------------------------------------------------------------------------
def laplace_momentum_method(
    objective: Any,
    *,
    kind: str,
    step_sizes: np.ndarray,
    momenta: np.ndarray,
    budgets: np.ndarray | None,
    epsilon: float,
    batch_size: int | None = None,
    restarts: np.ndarray | None = None,
    trials: int = 1,
    seed: Any = None,
    x0: Any = None,
    sensitivity: float | None = None,
    trace: str | None = "suboptimality",
    name: str = "",
    source: Source | None = None,
    params: dict | None = None,
) -> SimulationResult:
    """Run heavy ball (``kind="hb"``) or Nesterov (``kind="nag"``) with per-step steps,
    momenta and Laplace budgets ``budgets`` (``None`` with ``epsilon = inf``: no noise).

    Mini-batches come from the ``sampler`` stream (one ``subsample(n, m)`` per step when
    ``m < n``; the full data set when ``m = n``) and noise from the ``noise`` stream of
    :func:`~dpbounds.algorithms._common.make_streams`.
    """
    f = objective
    xp = f.xp
    T = len(step_sizes)
    n, d = f.n, f.d
    m = check_batch_size(batch_size, n)
    trials = check_int("trials", trials)
    S1 = f.l1_sensitivity if sensitivity is None else check_nonnegative("sensitivity",
                                                                         sensitivity)
    private = math.isfinite(epsilon)
    if private:
        if not math.isfinite(S1):
            raise ValueError("sensitivity must be finite for a private run: the objective has "
                             "no finite L1 sensitivity; pass sensitivity=")
        scales = laplace_scales_for_budgets(S1, budgets, n, m) if S1 > 0 else np.zeros(T)
    else:
        scales = np.zeros(T)
    sampler, noise = make_streams(seed, trials, xp)
    rec = TraceRecorder(f, trace)
    x = f.initial_state(trials, x0)
    x_prev = x
    restarts = np.zeros(T, dtype=bool) if restarts is None else np.asarray(restarts, bool)
    for t in range(T):
        alpha, beta = float(step_sizes[t]), float(momenta[t])
        if restarts[t]:
            x_prev = x
        idx = sampler.subsample(n, m) if m < n else None
        if kind == "nag" and beta != 0.0:
            point = x + beta * (x - x_prev)
        else:
            point = x
        if point is x and rec.needs_loss and idx is None:
            loss, g = f.loss_and_grad(x)  # one data pass for F(x_t) and the gradient
            rec.record(x, loss)
        else:
            rec.record(x)
            g = f.grad(point, idx)
        if scales[t] > 0:
            g = g + noise.laplace((d,), scales[t])
        x_new = point - alpha * g
        if kind == "hb" and beta != 0.0:
            x_new = x_new + beta * (x - x_prev)
        x_prev, x = x, x_new
    rec.record(x)

    if private:
        per_step = np.asarray(subsampled_laplace_epsilon(S1, np.maximum(scales, 1e-300), n, m),
                              dtype=float) if S1 > 0 else np.zeros(T)
        per_step = np.atleast_1d(per_step)
        spent = basic_composition(per_step)
        ledger = PrivacyLedger(
            "pure-DP", "replace-one", spent, 0.0, float(epsilon), 0.0, per_step,
            "eq. (11) per step (Laplace + subsampling w/o replacement), basic composition",
            events=(f"{T} x Laplace(b_t) on a mean of m={m} of n={n} gradients, S_1={S1:g}",),
        )
    else:
        ledger = PrivacyLedger.non_private(T)
    out_params = dict(params or {})
    out_params.update(steps=T, batch_size=m, n=n, d=d, sensitivity=S1,
                      laplace_scales=scales, step_sizes=np.asarray(step_sizes),
                      momenta=np.asarray(momenta), budgets=budgets, seed=seed)
    return SimulationResult(name or kind, x, rec.result(trials), rec.kind or "none", ledger,
                            out_params, source, backend_name(xp))


def _defaults(objective: Any, step_size: float | None, c: float, momentum: float | None
              ) -> tuple[float, float]:
    L, mu = objective.smoothness, objective.strong_convexity
    alpha = c / L if step_size is None else check_positive("step_size", step_size)
    if momentum is None:
        if mu <= 0:
            raise ValueError("momentum must be given for an objective with strong_convexity "
                             "<= 0 (the default (1-sqrt(mu a))/(1+sqrt(mu a)) needs mu > 0)")
        r = math.sqrt(min(1.0, mu * alpha))
        beta = (1.0 - r) / (1.0 + r)
    else:
        beta = float(momentum)
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    return alpha, beta


def _uniform(epsilon: float, T: int) -> np.ndarray | None:
    return split_budget(epsilon, steps=T) if math.isfinite(epsilon) else None


def dp_heavy_ball(objective: Any, *, epsilon: float, steps: int, step_size: float | None = None,
                  momentum: float | None = None, c: float = 1.0,
                  batch_size: int | None = None, budgets: Any = None, trials: int = 1,
                  seed: Any = None, x0: Any = None, sensitivity: float | None = None,
                  trace: str | None = "suboptimality") -> SimulationResult:
    r"""DP-SHB (Kuru et al. eq. (9)): heavy ball with Laplace-noised mini-batch gradients.

    Parameters
    ----------
    objective:
        An :class:`~dpbounds.objectives.Objective` with finite ``l1_sensitivity`` (or pass
        ``sensitivity``, the :math:`S_1` of eq. (10)).
    epsilon:
        Total pure-DP budget (replace-one); ``math.inf`` runs the non-private method.
    steps:
        Number of iterations :math:`T`.
    step_size, momentum:
        :math:`\alpha` (default ``c/L``) and :math:`\beta` (default
        :math:`(1-\sqrt{\mu\alpha})/(1+\sqrt{\mu\alpha})`, as Section 5 does for DP-HB).
    batch_size:
        :math:`m` (default ``n``), sampled without replacement each iteration.
    budgets:
        Optional per-iteration budgets :math:`\epsilon_t` (summing to at most ``epsilon``);
        default uniform :math:`\epsilon/T` (Prop. 3.1).
    trials, seed, x0:
        Independent runs in one batch, reproducible from ``seed``; start (default 0).
    trace:
        ``"suboptimality"`` (``F(x_t)-F*``), ``"loss"``, ``"grad_norm"`` or ``None``.

    Returns
    -------
    SimulationResult

    Example
    -------
    >>> import numpy as np
    >>> from dpbounds.data import kuru_synthetic
    >>> from dpbounds.objectives import LogisticRegression
    >>> from dpbounds.algorithms import dp_heavy_ball
    >>> A, y = kuru_synthetic(n=2000, d=5, seed=0)
    >>> f = LogisticRegression.kuru(A, y, lam=0.01, l1_radius=5.0)
    >>> r = dp_heavy_ball(f, epsilon=1.0, steps=50, batch_size=200, trials=4, seed=1)
    >>> r.trace.shape, r.ledger.epsilon <= 1.0
    ((4, 51), True)
    """
    epsilon = check_epsilon(epsilon)
    T = check_int("steps", steps)
    alpha, beta = _defaults(objective, step_size, c, momentum)
    eps_t = _budgets(budgets, epsilon, T)
    return laplace_momentum_method(
        objective, kind="hb", step_sizes=np.full(T, alpha), momenta=np.full(T, beta),
        budgets=eps_t, epsilon=epsilon, batch_size=batch_size, trials=trials, seed=seed,
        x0=x0, sensitivity=sensitivity, trace=trace, name="DP-SHB", source=DP_HB_SOURCE,
        params=dict(step_size=alpha, momentum=beta),
    )


def _budgets(budgets: Any, epsilon: float, T: int) -> np.ndarray | None:
    if budgets is None:
        return _uniform(epsilon, T)
    if not math.isfinite(epsilon):
        return None
    b = np.atleast_1d(check_positive("budgets", budgets)).astype(float)
    if b.shape != (T,):
        raise ValueError(f"budgets must have shape (steps,) = ({T},), got {b.shape}")
    if basic_composition(b) > epsilon:
        raise ValueError(f"budgets must sum to at most epsilon={epsilon}, got {b.sum()!r}")
    return b


def dp_nag(objective: Any, *, epsilon: float, steps: int, step_size: float | None = None,
           momentum: float | None = None, c: float = 1.0, batch_size: int | None = None,
           allocation: str = "uniform", horizon_reselection: bool = False,
           initial_error: float = 10.0, trials: int = 1, seed: Any = None, x0: Any = None,
           sensitivity: float | None = None, trace: str | None = "suboptimality"
           ) -> SimulationResult:
    r"""DP-NAG (Kuru et al. eq. (27)) with uniform or Prop.-4.2 optimal budgets.

    ``allocation="optimal"`` uses :math:`\epsilon_t\propto a_{T,t}^{1/3}` with the weights
    (29); ``horizon_reselection=True`` first picks :math:`T'\le T` minimising (32) with the
    initial-error guess ``initial_error`` (:math:`E_0`) and runs :math:`T'` iterations
    (Remark 4.1). :func:`dp_nag_opt` sets both, as Section 5's DP-NAG-opt.
    Other parameters as :func:`dp_heavy_ball`.
    """
    epsilon = check_epsilon(epsilon)
    T = check_int("steps", steps)
    alpha, beta = _defaults(objective, step_size, c, momentum)
    if allocation not in ("uniform", "optimal"):
        raise ValueError(f"allocation must be 'uniform' or 'optimal', got {allocation!r}")
    L, mu = objective.smoothness, objective.strong_convexity
    initial_error = check_positive("initial_error", initial_error)
    horizon = T
    if horizon_reselection and math.isfinite(epsilon):
        S1 = objective.l1_sensitivity if sensitivity is None else sensitivity
        horizon, _ = select_horizon(lambda Tp: nag_error_weights(Tp, alpha, mu, L), T,
                                    epsilon=epsilon, sensitivity=S1, n=objective.n,
                                    d=objective.d, initial_error=initial_error)
    eps_t = None
    if math.isfinite(epsilon):
        if allocation == "optimal":
            eps_t = optimal_budgets(nag_error_weights(horizon, alpha, mu, L)[1], epsilon)
        else:
            eps_t = _uniform(epsilon, horizon)
    name = "DP-NAG-opt" if allocation == "optimal" else "DP-NAG"
    return laplace_momentum_method(
        objective, kind="nag", step_sizes=np.full(horizon, alpha),
        momenta=np.full(horizon, beta), budgets=eps_t, epsilon=epsilon,
        batch_size=batch_size, trials=trials, seed=seed, x0=x0, sensitivity=sensitivity,
        trace=trace, name=name, source=DP_NAG_SOURCE,
        params=dict(step_size=alpha, momentum=beta, allocation=allocation,
                    horizon=horizon, requested_steps=T, initial_error=initial_error),
    )


def dp_nag_opt(objective: Any, **kwargs: Any) -> SimulationResult:
    """DP-NAG-opt: :func:`dp_nag` with Prop.-4.2 budgets and horizon re-selection (Sec. 5)."""
    kwargs.setdefault("allocation", "optimal")
    kwargs.setdefault("horizon_reselection", True)
    return dp_nag(objective, **kwargs)


def dp_masg(objective: Any, *, epsilon: float, steps: int, c: float = 1.0, p: int = 1,
            first_stage: int | None = None, restart: bool = True,
            batch_size: int | None = None, allocation: str = "uniform",
            horizon_reselection: bool = False, initial_error: float = 10.0, trials: int = 1,
            seed: Any = None, x0: Any = None, sensitivity: float | None = None,
            trace: str | None = "suboptimality") -> SimulationResult:
    r"""DP-MASG (Kuru et al. Section 4.2): multi-stage DP-NAG with the schedule (33).

    Stage steps are scaled by ``c`` (Section 5); ``restart`` resets the momentum at stage
    changes (reference code; the paper is silent). ``allocation="optimal"`` uses the
    weights (34) in Prop. 4.2; ``horizon_reselection`` as in :func:`dp_nag`.
    """
    epsilon = check_epsilon(epsilon)
    T = check_int("steps", steps)
    check_positive("c", c)
    p = check_int("p", p)
    if allocation not in ("uniform", "optimal"):
        raise ValueError(f"allocation must be 'uniform' or 'optimal', got {allocation!r}")
    L, mu = objective.smoothness, objective.strong_convexity
    if mu <= 0:
        raise ValueError("DP-MASG needs strong_convexity > 0")
    initial_error = check_positive("initial_error", initial_error)
    alphas, stages = masg_schedule(T, mu, L, c=c, p=p, first_stage=first_stage)

    def weights_for(Tp: int) -> tuple[float, np.ndarray]:
        return masg_error_weights(alphas[:Tp], stages[:Tp], mu, L)

    horizon = T
    if horizon_reselection and math.isfinite(epsilon):
        S1 = objective.l1_sensitivity if sensitivity is None else sensitivity
        horizon, _ = select_horizon(weights_for, T, epsilon=epsilon, sensitivity=S1,
                                    n=objective.n, d=objective.d, initial_error=initial_error)
    alphas, stages = alphas[:horizon], stages[:horizon]
    r = np.sqrt(np.minimum(1.0, mu * alphas))
    betas = (1.0 - r) / (1.0 + r)
    restarts = np.zeros(horizon, dtype=bool)
    if restart:
        restarts[1:] = stages[1:] != stages[:-1]
    eps_t = None
    if math.isfinite(epsilon):
        eps_t = (optimal_budgets(weights_for(horizon)[1], epsilon) if allocation == "optimal"
                 else _uniform(epsilon, horizon))
    name = "DP-MASG-opt" if allocation == "optimal" else "DP-MASG"
    return laplace_momentum_method(
        objective, kind="nag", step_sizes=alphas, momenta=betas, budgets=eps_t,
        epsilon=epsilon, batch_size=batch_size, restarts=restarts, trials=trials, seed=seed,
        x0=x0, sensitivity=sensitivity, trace=trace, name=name, source=DP_MASG_SOURCE,
        params=dict(c=c, p=p, stages=stages, allocation=allocation, horizon=horizon,
                    requested_steps=T, restart=restart, initial_error=initial_error),
    )


def dp_masg_opt(objective: Any, **kwargs: Any) -> SimulationResult:
    """DP-MASG-opt: :func:`dp_masg` with Prop.-4.2 budgets and horizon re-selection."""
    kwargs.setdefault("allocation", "optimal")
    kwargs.setdefault("horizon_reselection", True)
    return dp_masg(objective, **kwargs)

