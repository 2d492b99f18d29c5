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

``-opt`` variants distribute the budget optimally for the weights of Thm 4.1 (29) (NAG) or
Thm 4.3 (34) (MASG): Prop. 4.2, :math:`\epsilon_t\propto a_{T,t}^{1/3}`, for :math:`m=n`, and
the numeric optimum of problem (30) for :math:`m<n` (``allocation="remark_4_2"`` uses (31)'s
budgets with :math:`m<n`, the paper's heuristic); and, as in Section 5, they re-select the
horizon :math:`T'\le T` minimising the bound (32) for an initial-error guess :math:`E_0`
(default 10, the paper's value), then run :math:`T'` iterations. Weights, schedule, allocation
and horizon come from :mod:`dpbounds.bounds.strongly_convex.nesterov` and
:mod:`dpbounds.bounds.strongly_convex.noise_allocation`.

The step sizes follow Section 5: :math:`\alpha=c/L` and NAG's momentum
:math:`\beta=(1-\sqrt{\mu\alpha})/(1+\sqrt{\mu\alpha})` for DP-NAG **and** DP-HB (the
reference code uses NAG's formula for HB too, ``kuru_et_al.md`` §12.2 item 10). Unlike the
reference code, the Laplace noise is drawn with scale :math:`b_t` (its ``laprnd`` used
:math:`b_t` as the standard deviation, ``§12.2`` item 1), and the weights use
:math:`\alpha(1+\alpha L)` of (28), not the code's :math:`\frac\alpha2(1+\alpha L)` (item 6).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_flag, check_nonnegative, check_positive
from dpbounds.algorithms._common import (
    SimulationResult,
    TraceRecorder,
    calibration_constant,
    check_batch_size,
    check_epsilon,
    check_noise_step,
    check_own_record_losses,
    check_steps,
    check_trials,
    default_step_size,
    gradient_parts,
    make_streams,
    progress,
    sensitivity_override,
)
from dpbounds.algorithms._grid import (
    GridStream,
    check_noise,
    float_down,
    float_sum_factor,
    grid_bits_for,
)
from dpbounds.algorithms._transcript import Transcript
from dpbounds.backend import TrialRandom, backend_name
from dpbounds.bounds.strongly_convex.nesterov import error_weights
from dpbounds.bounds.strongly_convex.noise_allocation import (
    MAX_HORIZON,
    Allocation,
    optimal_noise,
    optimal_noise_closed_form,
    remark_4_2_allocation,
    select_horizon,
    select_horizon_subsampled,
    uniform_noise,
)
from dpbounds.notation import notation_keywords
from dpbounds.objectives._base import ObjectiveProtocol
from dpbounds.privacy.calibrate import calibrate
from dpbounds.privacy.discrete import discrete_laplace_array
from dpbounds.privacy.laplace import basic_composition, laplace_scales_for_budgets, split_budget
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import (
    ComposedMechanism,
    Mechanism,
    Neighbouring,
    SubsampledLaplaceMechanism,
)
from dpbounds.privacy.run import RunPrivacy
from dpbounds.provenance import KURU, Provenance, Source
from dpbounds.schedules import Schedule, masg_schedule, nesterov_momentum, nesterov_schedule

__all__ = ["DP_HB_SOURCE", "DP_MASG_SOURCE", "DP_NAG_SOURCE", "dp_heavy_ball", "dp_masg",
           "dp_masg_opt", "dp_nag", "dp_nag_opt", "reselected_horizon"]

DP_HB_SOURCE = Source(KURU, "eq. (9), Proposition 3.1", Provenance.VERBATIM)
DP_NAG_SOURCE = Source(
    KURU, "eq. (27) with the Laplace scale of eq. (12), Theorem 4.1, Proposition 4.2",
    Provenance.RECONSTRUCTED,
    "recursion (27) verbatim; noise scale S_1/(m eps_0) of (12), not (27)'s printed "
    "S_1/(n eps_0) (they agree only for m = n): kuru_et_al.md §11 item 4",
)
DP_MASG_SOURCE = Source(KURU, "eq. (33), Theorem 4.3", Provenance.VERBATIM,
                        "momentum restart at stage changes as in the reference code")


# ---------------------------------------------------------------------------------------
# Budgets: the weights (29)/(34), the MASG schedule (33), Prop. 4.2 / problem (30) and the
# horizon rule of Remark 4.1 come from dpbounds.bounds.strongly_convex (nesterov, noise_allocation).
# ---------------------------------------------------------------------------------------
ALLOCATIONS = ("uniform", "optimal", "remark_4_2")
HORIZON_RULES = ("eq32", "subsampled")


#: smallest per-sample sensitivity share a run accepts (float64's normal range, with room:
#: below it the noise scale and the privacy loss are subnormal)
TINY_SENSITIVITY = 1e-290


def laplace_allocation(schedule: Schedule, objective: ObjectiveProtocol, *, epsilon: float, m: int,
                       allocation: str, sensitivity: float) -> Allocation:
    """Per-iteration budgets and Laplace scales for ``schedule``.

    ``"uniform"``: eqs. (12)-(13). ``"optimal"``: Prop. 4.2 (31) when ``m = n``, the numeric
    optimum of (30) when ``m < n``. ``"remark_4_2"``: the budgets of (31) used with ``m < n``
    (Remark 4.2's heuristic, what Section 5's reference code does).
    """
    n = objective.n
    if allocation == "uniform":
        # eqs. (12)-(13) need no error weights (they only set the allocation's bound value,
        # which the runs do not read): a step above 1/L, outside Theorems 4.1/4.3, still runs
        # with its uniform noise (it was refused: walkthrough of stop 74)
        return uniform_noise(np.ones(len(schedule.steps)), sensitivity, n, m, epsilon)
    w = error_weights(schedule, objective.strong_convexity, objective.smoothness)
    if allocation == "remark_4_2":
        return remark_4_2_allocation(w, sensitivity, n, m, epsilon)
    if m == n:
        return optimal_noise_closed_form(w, sensitivity, n, epsilon)
    return optimal_noise(w, sensitivity, n, m, epsilon)


def _horizon(objective: ObjectiveProtocol, *, method: str, rule: str, epsilon: float, m: int,
             sensitivity: float, steps: int, initial_error: float, alpha: float | None = None,
             c: float = 1.0, p: float = 1.0, first_stage: int | None = None) -> int:
    """Remark 4.1: the horizon T' <= T minimising (32) (``rule="eq32"``, Section 5's rule for
    every m) or the optimal bound with subsampling (``"subsampled"``, DERIVED).

    Both come from :mod:`dpbounds.bounds.strongly_convex.noise_allocation` (one implementation,
    O(T) for (32)), with this run's MASG schedule (``first_stage``) and step size.
    """
    f = objective
    if steps > MAX_HORIZON:
        raise ValueError(f"steps must be at most {MAX_HORIZON} with horizon re-selection (the "
                         f"search keeps the bound at every horizon), got {steps}")
    common: dict[str, Any] = dict(
        initial_error=initial_error, d=f.d, sensitivity=sensitivity, n=f.n,
        epsilon=epsilon, max_horizon=steps, alpha=alpha, method=method, c=c, p=p,
        first_stage_length=first_stage)
    if rule == "eq32" or m == f.n:
        return select_horizon(f.strong_convexity, f.smoothness, **common).horizon
    return select_horizon_subsampled(f.strong_convexity, f.smoothness, m=m, **common).horizon


@notation_keywords()
def reselected_horizon(objective: ObjectiveProtocol, *, method: str, epsilon: float, steps: int,
                       step_size: float | None = None, c: float = 1.0, p: float = 1.0,
                       first_stage: int | None = None, batch_size: int | None = None,
                       initial_error: float = 10.0, horizon_rule: str = "eq32",
                       sensitivity: float | None = None) -> int:
    """The horizon ``T' <= steps`` that ``dp_nag(..., horizon_reselection=True)``
    (``method="nag"``) or ``dp_masg(..., horizon_reselection=True)`` (``"masg"``) runs for these
    arguments, without running it (Kuru et al., Remark 4.1; ``step_size`` is DP-NAG's, ``p`` and
    ``first_stage`` DP-MASG's, the rest as in those functions, which call this one).

    Two requested ``steps`` with the same re-selected horizon give the same run, bit for bit
    (``steps`` enters only as the search's upper end): a sweep can run it once.
    ``steps`` itself when ``epsilon`` is infinite (no re-selection).

    Example
    -------
    >>> from dpbounds.data import kuru_synthetic
    >>> from dpbounds.objectives import LogisticRegression
    >>> ds = kuru_synthetic(n=2000, d=5, seed=0)
    >>> f = LogisticRegression.kuru(*ds, lam=0.01, paper_smoothness=True)
    >>> h = [reselected_horizon(f, method="nag", epsilon=1.0, steps=T) for T in (500, 1000)]
    >>> h[0] == h[1] < 500
    True
    """
    method = check_choice("method", method, ("nag", "masg"))
    epsilon = check_epsilon(epsilon)
    T = check_steps(steps)
    check_positive("c", c)
    horizon_rule = check_choice("horizon_rule", horizon_rule, HORIZON_RULES)
    initial_error = check_positive("initial_error", initial_error)
    m = check_batch_size(batch_size, objective.n)
    S1 = objective.l1_sensitivity if sensitivity is None else check_positive("sensitivity",
                                                                            sensitivity)
    if not math.isfinite(epsilon):
        return T
    if method == "nag":
        alpha = default_step_size(objective, step_size, c)
        return _horizon(objective, method="nag", rule=horizon_rule, epsilon=epsilon, m=m,
                        sensitivity=S1, steps=T, initial_error=initial_error, alpha=alpha)
    if objective.strong_convexity <= 0:
        raise ValueError("DP-MASG needs an objective with strong_convexity > 0")
    return _horizon(objective, method="masg", rule=horizon_rule, epsilon=epsilon, m=m,
                    sensitivity=S1, steps=T, initial_error=initial_error, c=c, p=p,
                    first_stage=first_stage)


# ---------------------------------------------------------------------------------------
# The shared loop
# ---------------------------------------------------------------------------------------
def _scale_factor(S1: float, scales: np.ndarray, n: int, m: int, epsilon: float) -> float:
    """Common factor (>= 1) on the allocation's Laplace scales that the pure-DP accountant
    certifies within ``epsilon`` for the whole run: the one calibration routine, with the
    allocation (factor 1) as its closed form; above 1 only to absorb round-off."""
    if not np.all(scales > 0):
        raise ValueError("the Laplace scales must be positive for a private run with a "
                         "positive sensitivity")

    def run(c: float) -> ComposedMechanism:
        return ComposedMechanism(tuple((SubsampledLaplaceMechanism.kuru(S1, c * float(b), n, m),
                                        1) for b in scales))

    return calibrate(run, epsilon, None, "pure", neighbouring=Neighbouring.REPLACE_ONE,
                     initial=1.0, closed_form=1.0)


def laplace_momentum_method(
    objective: ObjectiveProtocol,
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
    trace: str | None = "auto",
    name: str = "",
    source: Source | None = None,
    params: dict | None = None,
    scales: np.ndarray | None = None,
    noise: str = "float",
    transcript: Transcript | None = None,
) -> SimulationResult:
    """Run heavy ball (``kind="hb"``) or Nesterov (``kind="nag"``) with per-step steps,
    momenta and Laplace budgets ``budgets`` (``None`` with ``epsilon = inf``: no noise), or
    precomputed Laplace ``scales`` (the ledger recomputes every step's loss from them).

    Mini-batches come from the ``sampler`` stream (one ``subsample(n, m)`` per step when
    ``m < n``; the full data set when ``m = n``) and noise from the ``noise`` stream of
    :func:`~dpbounds.algorithms._common.make_streams`. ``noise="grid"`` releases each noisy
    gradient on a grid with exact discrete Laplace noise (:mod:`dpbounds.algorithms._grid`).

    ``transcript``: one release per step, the mini-batch mean (weight
    ``1/m``) plus Laplace noise of the step's scale (the draw's L1 norm is recorded too:
    :meth:`~dpbounds.algorithms._transcript.Transcript.drawn`; with ``noise="grid"`` the
    scale is the discrete Laplace's in value units, ``grid_bits`` is recorded and the drawn
    L1 norm is the integer noise's, in grid units); the declared bound is
    ``S_1/2`` and each
    step's recorded "norm" is half the largest L1 distance between a batch sample's gradient
    and the first one's (:math:`S_1` bounds differences of per-sample gradients, not the
    gradients: a replace-one move of the mean is at most ``2 * bound / m``).
    """
    f = objective
    xp = f.xp
    T = len(step_sizes)
    n, d = f.n, f.d
    m = check_batch_size(batch_size, n)
    trials = check_trials(trials)
    private = math.isfinite(epsilon)
    if sensitivity is not None:
        S1 = check_nonnegative("sensitivity", sensitivity)
    elif private:  # said where the objective took it from the data
        S1 = calibration_constant(f, "l1_sensitivity", name or "the run")
    else:
        S1 = f.l1_sensitivity
    if private:
        if not math.isfinite(S1):
            raise ValueError("sensitivity must be finite for a private run: the objective has "
                             "no finite L1 sensitivity; pass sensitivity=")
        if 0 < S1 / m < TINY_SENSITIVITY:
            # S1 = 1e-320: the per-sample share and the Laplace scale underflowed, the ledger
            # read eps 1.6e-322 for runs at eps 1 and the noise vanished in the sum (fuzz 15)
            raise ValueError(f"sensitivity / batch size = {S1 / m:.3g} is below "
                             f"{TINY_SENSITIVITY:g}, where float64 loses the noise and the "
                             "privacy loss; rescale the problem (gradients and sensitivity "
                             "by one factor)")
        if scales is None:
            scales = (laplace_scales_for_budgets(S1, budgets, n, m) if S1 > 0
                      else np.zeros(T))
        scales = np.asarray(scales, dtype=float)
        if scales.shape != (T,) or not np.all(np.isfinite(scales)):
            raise ValueError("the Laplace scales must be finite, one per step (an allocation "
                             "that gives a step no budget needs a shorter horizon)")
        if S1 > 0:
            scales = scales * _scale_factor(S1, scales, n, m, epsilon)
        check_noise_step(scales, step_sizes, epsilon)
    else:
        scales = np.zeros(T)
    noise = check_noise(noise, xp)
    sampler, stream = make_streams(seed, trials, xp)
    grid = None
    if noise == "grid" and private and S1 > 0:
        grid, mechanisms, scales = _laplace_grid(stream, S1, scales, n, m, d, epsilon, xp)
    else:
        stream = stream.prefetch(T)  # one draw per generator per block of steps (same bits)
        mechanisms = [SubsampledLaplaceMechanism.kuru(S1, float(b), n, m)
                      for b in (scales if private and S1 > 0 else ())]
    rec = TraceRecorder(f, trace)
    x = f.initial_state(trials, x0)
    x_prev = x
    restarts = np.zeros(T, dtype=bool) if restarts is None else np.asarray(restarts, bool)
    if transcript is not None:
        every = np.arange(T)
        transcript.begin(name or kind, trials=trials, steps=T, n=n, batch_size=m,
                         sampling="without_replacement" if m < n else "full",
                         sampling_rate=m / n, neighbouring="replace_one", bound=S1 / 2.0,
                         noise="laplace", grid_bits=None if grid is None else grid.grid_bits)
        transcript.releases(every, scales, (every, every, 1.0 / m))
    for t in progress(range(T), desc=name or kind):
        alpha, beta = float(step_sizes[t]), float(momenta[t])
        if restarts[t]:
            x_prev = x
        idx = sampler.subsample(n, m) if m < n else None
        if kind == "nag" and beta != 0.0:
            point = x + beta * (x - x_prev)
        else:
            point = x
        if grid is not None:  # the records' part alone is rounded and released (gradient_parts)
            rec.record_later(x)
            data, reg = gradient_parts(f, point, idx)  # reg: everything no record changes
        elif rec.needs_loss and idx is None:
            # one data pass for F(x_t) and the gradient (at the look-ahead point for NAG)
            loss, g = f.loss_and_grad(x, grad_at=None if point is x else point)
            rec.record(x, loss)
        else:
            # F(x_t) is recorded, never used by the update: evaluated with other steps' states
            # in one full-data pass (the same values; see TraceRecorder.record_later)
            rec.record_later(x)
            g = f.grad(point, idx)
        if transcript is not None:
            _record_step(transcript, f, t, point, idx)
        if grid is not None:
            if transcript is not None and grid.params[t] is not None:
                transcript.drawn(t, grid.noise(t))  # integer draws, grid units
            g = grid.release(t, data) + reg
        elif scales[t] > 0:
            xi = stream.laplace((d,), scales[t])
            if transcript is not None:
                transcript.drawn(t, xi)  # the noise added, for a check against the scale
            g = g + xi
        x_new = point - alpha * g
        if kind == "hb" and beta != 0.0:
            x_new = x_new + beta * (x - x_prev)
        x_prev, x = x, x_new
    rec.record_later(x)

    ledger = PrivacyLedger(Neighbouring.REPLACE_ONE)
    for mech in mechanisms:
        ledger.record(mech)
    privacy = RunPrivacy(ledger, float(epsilon), 0.0, "pure", S1,
                         description="eq. (11) per step (Laplace + subsampling without "
                                     "replacement), basic composition"
                                     + ("; discrete Laplace on a grid" if grid else ""))
    out_params = dict(params or {})
    if grid is not None:
        out_params.update(grid_bits=grid.grid_bits)
    out_params.update(steps=T, batch_size=m, n=n, d=d, sensitivity=S1, noise=noise,
                      laplace_scales=scales, step_sizes=np.asarray(step_sizes),
                      momenta=np.asarray(momenta), budgets=budgets, seed=seed)
    return SimulationResult(name or kind, x, rec.result(trials), rec.kind or "none", privacy,
                            out_params, source, backend_name(xp))


def _record_step(transcript: Transcript, f: ObjectiveProtocol, t: int, point: Any,
                 idx: Any) -> None:
    """Step ``t``'s batch and its L1 spread (see :func:`laplace_momentum_method`)."""
    xp = f.xp
    if idx is not None:
        transcript.batches(t, idx)
    g = f.sample_grads(point, idx)  # (trials, m, d), data terms only
    spread = xp.sum(xp.abs(g - g[:, :1, :]), axis=-1) / 2.0
    transcript.norms(t, spread, spread)
    if transcript.queries:
        transcript.query(t, xp.sum(g, axis=1))


def _laplace_grid(stream: TrialRandom, S1: float, scales: np.ndarray, n: int, m: int, d: int,
                  epsilon: float, xp: Any) -> tuple[GridStream, list[Mechanism], np.ndarray]:
    r"""The grid version of the Laplace steps: its stream, ledger entries and real scales.

    Step ``t``'s float scale :math:`b_t` (ε₀ = :math:`(S_1/m)/b_t`) becomes a discrete
    Laplace scale :math:`b^u_t = u\,c\,b_t/(S_1/m)` grid units (a multiple of 1/64, rounded
    up), :math:`u = \lfloor 2^j S_1/m\rfloor + d` the integer query's L1 sensitivity
    (DERIVED: :mod:`dpbounds.privacy.discrete`), so its pure ε₀ is :math:`u/b^u_t` (the pmf
    ratio of the discrete Laplace; Ghosh, Roughgarden & Sundararajan 2009), amplified by
    eq. (11) as the float step is (the amplification holds for any ε₀-DP step). The factor
    :math:`c \ge 1` is the package's one calibration (:func:`calibrate`, pure accountant) on
    the recorded grid mechanisms, so the ledger never exceeds ``epsilon``."""
    # exact (the float path's S1/m may round down), times the float query's error bound (a
    # mean of m terms; the componentwise summation bound holds in L1 as in L2)
    sens = Fraction(S1) / m * float_sum_factor(m, d)
    j = grid_bits_for(float(sens), d)
    units = math.floor(sens * Fraction(2) ** j) + d
    gamma = Fraction(2) ** -j
    unit_sens = float(units * gamma)  # exact: a dyadic below 2^53 units

    def grid_scale(b: float) -> Fraction:
        return Fraction(math.ceil(units * Fraction(b) / sens * 64), 64)

    def mechs(c: float) -> list[Mechanism]:
        return [SubsampledLaplaceMechanism(float_down(grid_scale(c * float(b)) * gamma),
                                           unit_sens, m, n) for b in scales]

    c = calibrate(lambda c: ComposedMechanism(tuple((mm, 1) for mm in mechs(c))), epsilon,
                  None, "pure", neighbouring=Neighbouring.REPLACE_ONE, initial=1.0)
    grid_scales = [grid_scale(c * float(b)) for b in scales]
    params: list[Hashable] = list(grid_scales)
    stream_out = GridStream(stream, j, params, discrete_laplace_array, d, xp)
    return stream_out, mechs(c), np.array([float(q * gamma) for q in grid_scales])


def _l1_sensitivity(objective: ObjectiveProtocol, sensitivity: Any, epsilon: float,
                    run: str) -> float:
    """``S_1``: a given ``sensitivity`` (> 0), else the objective's, with a warning where a
    private run's is taken from the data (:func:`~dpbounds.algorithms._common.
    calibration_constant`)."""
    if sensitivity is not None:
        return float(check_positive("sensitivity", sensitivity))
    if math.isfinite(epsilon):
        return calibration_constant(objective, "l1_sensitivity", run)
    return float(objective.l1_sensitivity)


def _defaults(objective: ObjectiveProtocol, step_size: float | None, c: float,
              momentum: float | None, run: str | None = None) -> tuple[float, float]:
    mu = objective.strong_convexity
    alpha = default_step_size(objective, step_size, c, run)
    if momentum is None:
        if mu <= 0:
            raise ValueError("momentum must be given for an objective with strong_convexity "
                             "<= 0 (the default (1-sqrt(mu a))/(1+sqrt(mu a)) needs mu > 0)")
        beta = float(nesterov_momentum(alpha, mu))
    else:
        beta = float(momentum)
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    return alpha, beta


def _uniform(epsilon: float, T: int) -> np.ndarray | None:
    return split_budget(epsilon, steps=T) if math.isfinite(epsilon) else None


@notation_keywords()
def dp_heavy_ball(objective: ObjectiveProtocol, *, epsilon: float, steps: int,
                  step_size: float | None = None, momentum: float | None = None, c: float = 1.0,
                  batch_size: int | None = None, budgets: Any = None, trials: int = 1,
                  seed: Any = None, x0: Any = None, sensitivity: float | None = None,
                  trace: str | None = "auto", noise: str = "float",
                  transcript: Transcript | None = None) -> SimulationResult:
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
    noise:
        ``"float"`` (float64 Laplace noise: for simulation; its released floats leak through
        their last bits) or ``"grid"`` (exact discrete Laplace on a grid, safe to release;
        :mod:`dpbounds.algorithms._grid`), accounted by its own ledger.
    transcript:
        ``None`` or a fresh :class:`~dpbounds.algorithms._transcript.Transcript` to fill with
        the run's batches, L1 spreads and Laplace releases (:func:`laplace_momentum_method`).

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
    check_own_record_losses(objective, "dp_heavy_ball", epsilon)
    T = check_steps(steps)
    alpha, beta = _defaults(objective, step_size, c, momentum,
                            "dp_heavy_ball" if math.isfinite(epsilon) else None)
    eps_t = _budgets(budgets, epsilon, T)
    if sensitivity is not None:  # 0 or -0.0 ran with no noise, eps 0 (fuzz round 9)
        sensitivity = sensitivity_override(sensitivity, objective, "l1_sensitivity")
    return laplace_momentum_method(
        objective, kind="hb", step_sizes=np.full(T, alpha), momenta=np.full(T, beta),
        budgets=eps_t, epsilon=epsilon, batch_size=batch_size, trials=trials, seed=seed,
        x0=x0, sensitivity=sensitivity, trace=trace, name="dp_heavy_ball", source=DP_HB_SOURCE,
        params=dict(step_size=alpha, momentum=beta), noise=noise, transcript=transcript,
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



def _given_budgets(budgets: Any, steps: int, epsilon: float, reselection: bool) -> np.ndarray:
    """``budgets`` checked: one positive finite per-step epsilon per step, summing to at most
    ``epsilon`` (pure DP composes by summation; the run's noise is scaled so that the ledger
    never overshoots ``epsilon`` whatever the rounding)."""
    if reselection:
        raise ValueError("budgets fix the horizon (one per step): leave horizon_reselection "
                         "off")
    try:
        b = None if isinstance(budgets, (str, bytes, Mapping)) else np.asarray(budgets,
                                                                               dtype=float)
    except (TypeError, ValueError):  # a mapping or ragged nesting (review of stop 74)
        b = None
    if b is None or b.ndim != 1 or b.size != steps:
        raise ValueError(f"budgets must hold one per-step epsilon for each of the {steps} "
                         f"steps, got {budgets!r:.80}")
    if not np.all(np.isfinite(b) & (b > 0)):
        raise ValueError("budgets must be positive and finite (a step with no budget needs a "
                         "shorter horizon)")
    total = float(np.sum(b))
    if math.isfinite(epsilon) and total > epsilon * (1.0 + 1e-9):
        raise ValueError(f"budgets sum to {total:.10g}, above epsilon = {epsilon:g}: their sum "
                         "is the run's epsilon (pure DP, basic composition)")
    if not math.isfinite(epsilon):
        raise ValueError("budgets need a finite epsilon (epsilon = inf runs without noise)")
    return b


@notation_keywords()
def dp_nag(objective: ObjectiveProtocol, *, epsilon: float, steps: int,
           step_size: float | None = None, momentum: float | None = None, c: float = 1.0,
           batch_size: int | None = None,
           allocation: str = "uniform", horizon_reselection: bool = False,
           horizon_rule: str = "eq32", initial_error: float = 10.0, trials: int = 1,
           seed: Any = None, x0: Any = None, sensitivity: float | None = None,
           trace: str | None = "auto", noise: str = "float",
           transcript: Transcript | None = None,
           budgets: Any = None) -> SimulationResult:
    r"""DP-NAG (Kuru et al. eq. (27)) with uniform or optimised per-iteration budgets.

    The Laplace scale is (12)'s :math:`S_1/(m\epsilon_0)`, not (27)'s printed
    :math:`S_1/(n\epsilon_0)` (``kuru_et_al.md`` §11 item 4), hence the RECONSTRUCTED label of
    :data:`DP_NAG_SOURCE`.

    ``allocation``: ``"uniform"`` (eqs. (12)-(13)), ``"optimal"`` (Prop. 4.2 (31) when
    ``m = n``, the numeric optimum of (30) when ``m < n``) or ``"remark_4_2"`` (the budgets of
    (31) also for ``m < n``, Section 5's heuristic). ``horizon_reselection=True`` first picks
    :math:`T'\le T` by Remark 4.1 (``horizon_rule="eq32"``: minimise (32) with the guess
    :math:`E_0` = ``initial_error``, as Section 5 does for every ``m``; ``"subsampled"``: the
    optimal bound with the subsampling term, DERIVED) and runs :math:`T'` iterations.
    ``initial_error`` must be a **public** bound on :math:`F(x_0)-F^*` (computed from the data it
    would leak through the horizon); its default 10 is the paper's guess for its own problems, and
    the horizon moves with it: a ridge logistic regression with :math:`F(x_0)-F^* = 0.054` was
    re-selected to :math:`T' = 36` under the default and :math:`T' = 6` given the gap, which ran 7x
    closer to the optimum (a walkthrough of stop 75; ``bench/tuned_on_ridge_logistic.py``).
    :func:`dp_nag_opt` sets ``allocation="optimal"`` and re-selection, as Section 5's DP-NAG-opt.
    ``budgets``: the per-step pure-DP budgets :math:`\epsilon_t` themselves (one per step, summing
    to at most ``epsilon``; ``allocation`` is then not read), e.g. a tuned allocation,
    ``dpbounds.tuning.tune_nesterov(...).choices[k].epsilons`` with ``steps`` its ``horizon``. The
    uniform allocation runs any step size (eqs. (12)-(13) need no error weights); the optimal ones
    need :math:`\alpha\le1/L` (their weights are Theorem 4.1's).
    Other parameters (``noise`` and ``transcript`` too) as :func:`dp_heavy_ball`.
    """
    epsilon = check_epsilon(epsilon)
    check_own_record_losses(objective, "dp_nag", epsilon)
    T = check_steps(steps)
    alpha, beta = _defaults(objective, step_size, c, momentum,
                            "dp_nag" if math.isfinite(epsilon) else None)
    allocation = check_choice("allocation", allocation, ALLOCATIONS)
    horizon_rule = check_choice("horizon_rule", horizon_rule, HORIZON_RULES)
    horizon_reselection = check_flag("horizon_reselection", horizon_reselection)
    initial_error = check_positive("initial_error", initial_error)
    m = check_batch_size(batch_size, objective.n)
    S1 = _l1_sensitivity(objective, sensitivity, epsilon, "dp_nag")
    horizon = T
    private = math.isfinite(epsilon)
    if horizon_reselection and private:
        horizon = reselected_horizon(objective, method="nag", epsilon=epsilon, steps=T,
                                     step_size=alpha, batch_size=m, initial_error=initial_error,
                                     horizon_rule=horizon_rule, sensitivity=S1)
    scales = given = None
    if budgets is not None:
        given = _given_budgets(budgets, T, epsilon, horizon_reselection)
        allocation = "given"
    elif private:
        alloc = laplace_allocation(nesterov_schedule(alpha, horizon), objective,
                                   epsilon=epsilon, m=m, allocation=allocation,
                                   sensitivity=S1)
        scales = alloc.scales
    name = "dp_nag"
    return laplace_momentum_method(
        objective, kind="nag", step_sizes=np.full(horizon, alpha),
        momenta=np.full(horizon, beta), budgets=given, scales=scales, epsilon=epsilon,
        batch_size=m, trials=trials, seed=seed, x0=x0, sensitivity=S1,
        trace=trace, name=name, source=DP_NAG_SOURCE,
        params=dict(step_size=alpha, momentum=beta, allocation=allocation,
                    horizon=horizon, requested_steps=T, initial_error=initial_error,
                    horizon_rule=horizon_rule if horizon_reselection else None),
        noise=noise, transcript=transcript,
    )


@notation_keywords()
def dp_nag_opt(objective: ObjectiveProtocol, **kwargs: Any) -> SimulationResult:
    """DP-NAG-opt: :func:`dp_nag` with optimal budgets and horizon re-selection (Sec. 5)."""
    kwargs.setdefault("allocation", "optimal")
    kwargs.setdefault("horizon_reselection", True)
    return replace(dp_nag(objective, **kwargs), algorithm="dp_nag_opt")


@notation_keywords()
def dp_masg(objective: ObjectiveProtocol, *, epsilon: float, steps: int, c: float = 1.0,
            p: float = 1.0, first_stage: int | None = None, restart: bool = True,
            batch_size: int | None = None, allocation: str = "uniform",
            horizon_reselection: bool = False, horizon_rule: str = "eq32",
            initial_error: float = 10.0, trials: int = 1, seed: Any = None, x0: Any = None,
            sensitivity: float | None = None, trace: str | None = "auto", noise: str = "float",
            transcript: Transcript | None = None, budgets: Any = None) -> SimulationResult:
    r"""DP-MASG (Kuru et al. Section 4.2): multi-stage DP-NAG with the schedule (33).

    Stage steps are scaled by ``c`` (Section 5): :math:`c/L` in stage 1 (length
    ``first_stage``, default :math:`\lceil2\sqrt\kappa\ln\sqrt\kappa\rceil`),
    :math:`c\,2^{-2k}/L` in stage :math:`k\ge2`; momentum :math:`\beta^{(k)}` of NAG's formula;
    ``restart`` resets the momentum at stage changes (reference code; the paper is silent).
    ``allocation``, ``budgets`` and ``horizon_reselection`` as in :func:`dp_nag`, with the
    weights (34) (``budgets``: e.g. ``tune_nesterov(...)``'s DP-MASG row's ``epsilons``, with
    ``steps`` its ``horizon``); ``noise`` and ``transcript`` as in :func:`dp_heavy_ball`.
    """
    epsilon = check_epsilon(epsilon)
    check_own_record_losses(objective, "dp_masg", epsilon)
    T = check_steps(steps)
    check_positive("c", c)
    allocation = check_choice("allocation", allocation, ALLOCATIONS)
    horizon_rule = check_choice("horizon_rule", horizon_rule, HORIZON_RULES)
    horizon_reselection = check_flag("horizon_reselection", horizon_reselection)
    restart = check_flag("restart", restart)
    # its step sizes 1/L and c/L: said where L is the data's
    L = (calibration_constant(objective, "smoothness", "dp_masg") if math.isfinite(epsilon)
         else objective.smoothness)
    mu = objective.strong_convexity
    if mu <= 0:
        raise ValueError("DP-MASG needs an objective with strong_convexity > 0")
    initial_error = check_positive("initial_error", initial_error)
    m = check_batch_size(batch_size, objective.n)
    S1 = _l1_sensitivity(objective, sensitivity, epsilon, "dp_masg")
    private = math.isfinite(epsilon)
    horizon = T
    if horizon_reselection and private:
        horizon = reselected_horizon(objective, method="masg", epsilon=epsilon, steps=T, c=c,
                                     p=p, first_stage=first_stage, batch_size=m,
                                     initial_error=initial_error, horizon_rule=horizon_rule,
                                     sensitivity=S1)
    sched = masg_schedule(mu, L, horizon=horizon, p=p, c=c, first_stage_length=first_stage)
    betas = sched.momenta(mu)
    restarts = np.zeros(horizon, dtype=bool)
    if restart:
        restarts[1:] = sched.stages[1:] != sched.stages[:-1]
    scales = given = None
    if budgets is not None:
        given = _given_budgets(budgets, T, epsilon, horizon_reselection)
        allocation = "given"
    elif private:
        scales = laplace_allocation(sched, objective, epsilon=epsilon, m=m,
                                    allocation=allocation, sensitivity=S1).scales
    name = "dp_masg"
    return laplace_momentum_method(
        objective, kind="nag", step_sizes=sched.steps, momenta=betas, budgets=given,
        scales=scales, epsilon=epsilon, batch_size=m, restarts=restarts, trials=trials,
        seed=seed, x0=x0, sensitivity=S1, trace=trace, name=name, source=DP_MASG_SOURCE,
        params=dict(c=c, p=p, stages=sched.stages, stage_lengths=sched.stage_lengths,
                    allocation=allocation, horizon=horizon, requested_steps=T,
                    restart=restart, initial_error=initial_error),
        noise=noise, transcript=transcript,
    )


@notation_keywords()
def dp_masg_opt(objective: ObjectiveProtocol, **kwargs: Any) -> SimulationResult:
    """DP-MASG-opt: :func:`dp_masg` with optimal budgets and horizon re-selection."""
    kwargs.setdefault("allocation", "optimal")
    kwargs.setdefault("horizon_reselection", True)
    return replace(dp_masg(objective, **kwargs), algorithm="dp_masg_opt")
