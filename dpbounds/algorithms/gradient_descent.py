r"""DP gradient descent: the Laplace (pure DP) and Gaussian (zCDP) variants.

``mechanism="laplace"`` is Kuru et al.'s Section-5 DP-GD: DP-NAG with :math:`\beta=0`, i.e.
:math:`x_{t}=x_{t-1}-\alpha(\nabla F_{B_t}(x_{t-1})+\eta_t)` with
:math:`\eta_{t,i}\sim\mathrm{Laplace}(b)`, :math:`b=S_1/(m\epsilon_0)` (eqs. (12)-(13)),
mini-batches of size :math:`m` without replacement, pure :math:`\epsilon`-DP (replace-one).

``mechanism="gaussian"`` is full-batch noisy gradient descent with per-sample clipping,
the baseline of Lee & Kifer's Table 1: :math:`x_t=x_{t-1}-\alpha(\bar g_t+\nabla R+Z_t)`,
:math:`\bar g_t=\frac1n\sum_i\mathrm{clip}_C(\nabla\ell_i)`, :math:`Z_t\sim N(0,\sigma^2I)`.
The budget is split evenly in zCDP: :math:`\rho=\rho(\epsilon,\delta)` by Lee & Kifer eq. (5),
:math:`\rho_t=\rho/T`, :math:`\sigma=\Delta/\sqrt{2\rho_t}` (Lemma 3.6) with
:math:`\Delta=2C/n` (replace-one, where ``n`` is public). Under add/remove the size of the
data set is private, so the query is the clipped **sum** divided by a declared public
normaliser :math:`N` (``public_n``): :math:`\bar g_t=\frac1N\sum_{i\in D}\mathrm{clip}_C
(\nabla\ell_i)`, :math:`\Delta=C/N`, and :math:`\sigma` depends on public quantities only
(see :func:`gaussian_gd_sensitivity` and :func:`~dpbounds.algorithms._common.public_normaliser`;
dividing by the actual size moved the mean by up to :math:`2C/(n+1)` and gave the two
neighbours different noise). Without ``clip_threshold`` the objective's ``l2_sensitivity`` (a
bound on ``||∇ℓ(x;y)-∇ℓ(x;y')||``) replaces ``2C`` under replace-one, and its
``gradient_bound`` (``sup ||∇ℓ(x;y)||``) replaces ``C`` under add/remove; an infinite bound
raises ``ValueError``.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from dpbounds._validation import check_choice, check_positive, check_probability
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
    public_normaliser,
    sensitivity_override,
)
from dpbounds.algorithms._grid import check_noise, gaussian_grid
from dpbounds.algorithms._transcript import Transcript
from dpbounds.algorithms.momentum import TINY_SENSITIVITY, laplace_momentum_method
from dpbounds.backend import backend_name
from dpbounds.notation import notation_keywords
from dpbounds.objectives._base import ObjectiveProtocol
from dpbounds.privacy.accountants import ZcdpAccountant
from dpbounds.privacy.calibrate import calibrate
from dpbounds.privacy.laplace import split_budget
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import GaussianMechanism, Neighbouring
from dpbounds.privacy.run import RunPrivacy
from dpbounds.provenance import KURU, LEE_KIFER, Provenance, Source

__all__ = ["DP_GD_GAUSSIAN_SOURCE", "DP_GD_LAPLACE_SOURCE", "dp_gd"]

DP_GD_LAPLACE_SOURCE = Source(KURU, "Section 5 (DP-GD = DP-NAG with beta = 0), eqs. (12)-(13)",
                              Provenance.VERBATIM)
DP_GD_GAUSSIAN_SOURCE = Source(LEE_KIFER, "Table 1 (noisy GD), Lemmas 3.5-3.6, eq. (5)",
                               Provenance.VERBATIM, "even zCDP split over T steps")


@notation_keywords(clip_norm="clip_threshold")
def dp_gd(objective: ObjectiveProtocol, *, epsilon: float, steps: int,
          step_size: float | None = None, c: float = 1.0, mechanism: str = "laplace",
          delta: float | None = None,
          batch_size: int | None = None, clip_threshold: float | None = None,
          neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE, trials: int = 1,
          seed: Any = None,
          x0: Any = None, sensitivity: float | None = None,
          trace: str | None = "auto", public_n: int | None = None, noise: str = "float",
          transcript: Transcript | None = None) -> SimulationResult:
    r"""Differentially private gradient descent.

    Parameters
    ----------
    objective:
        An :class:`~dpbounds.objectives.Objective`.
    epsilon:
        Total budget; ``math.inf`` gives plain (mini-batch) gradient descent.
    steps:
        Iterations :math:`T`.
    step_size:
        :math:`\alpha` (default ``c / L``).
    mechanism:
        ``"laplace"`` (pure DP, Kuru et al.; any ``batch_size``) or ``"gaussian"``
        (zCDP → ``(epsilon, delta)``; full batch only).
    delta:
        Required for ``"gaussian"``.
    batch_size:
        Laplace only: mini-batch size ``m`` (without replacement), default ``n``.
    clip_threshold:
        Gaussian only: per-sample clipping threshold ``C`` (``clip_norm`` is a deprecated
        alias).
    neighbouring:
        Gaussian only: ``"replace-one"`` (``Δ = 2C/n``) or ``"add/remove"`` (``Δ = C/N``
        with ``N = public_n``). Without ``clip_threshold``, add/remove needs a finite
        ``objective.gradient_bound`` (``Δ = G/N``). The Laplace variant is replace-one
        (Kuru et al.).
    public_n:
        Required under add/remove: the public normaliser ``N`` (a declared dataset size or a
        public bound on it). The released gradient is the clipped sum over the actual data
        divided by ``N``, and the noise depends on ``N`` only, never on the private size.
        Under replace-one it may only repeat ``n``.
    trials, seed, x0, sensitivity, trace:
        As in :func:`~dpbounds.algorithms.momentum.dp_heavy_ball`; ``sensitivity`` overrides the
        objective's ``l1_sensitivity`` (Laplace) or, Gaussian without clipping, the per-sample
        bound (``l2_sensitivity`` for replace-one, ``gradient_bound`` for add/remove; the
        noised mean's sensitivity is it divided by ``n``).
    noise:
        ``"float"`` (float64 noise, for simulation: the released floats' last bits leak the
        gradient) or ``"grid"`` (safe to release: each noisy gradient is
        :math:`2^{-j}(\operatorname{round}(2^j g) + Z)` with exact discrete Laplace or
        discrete Gaussian :math:`Z`; :mod:`dpbounds.algorithms._grid`). The grid Gaussian is
        recorded as its zCDP guarantee (a :class:`~dpbounds.privacy.ZcdpMechanism` per step,
        Canonne, Kamath & Steinke 2020), calibrated by the same routine to the same target.
    transcript:
        ``None`` or a fresh :class:`~dpbounds.algorithms._transcript.Transcript` to fill with
        the per-step contribution norms and releases (Gaussian, full batch: every sample
        enters every step's release with weight ``1/N``, and each draw's sum of squares is
        recorded; Laplace: as :func:`~dpbounds.algorithms.momentum.laplace_momentum_method`
        records it).

    Example
    -------
    >>> from dpbounds.data import kuru_synthetic
    >>> from dpbounds.objectives import LogisticRegression
    >>> A, y = kuru_synthetic(n=1000, d=5, seed=0)
    >>> f = LogisticRegression(A, y, l2=0.02, l1_radius=5.0)
    >>> r = dp_gd(f, epsilon=1.0, delta=1e-6, mechanism="gaussian", clip_threshold=1.0,
    ...           steps=20, trials=3, seed=0)
    >>> r.ledger.notion, r.ledger.epsilon <= 1.0
    ('zCDP', True)
    """
    epsilon = check_epsilon(epsilon)
    check_own_record_losses(objective, "dp_gd", epsilon)
    T = check_steps(steps)
    trials = check_trials(trials)
    mechanism = check_choice("mechanism", mechanism, ("laplace", "gaussian"))
    neighbouring = Neighbouring.coerce(neighbouring)
    alpha = default_step_size(objective, step_size, c,
                              "dp_gd" if math.isfinite(epsilon) else None)
    if mechanism == "laplace":
        if clip_threshold is not None:
            raise ValueError("clip_threshold applies to mechanism='gaussian' only")
        if neighbouring is not Neighbouring.REPLACE_ONE:
            raise ValueError("the Laplace DP-GD of Kuru et al. is replace-one only")
        public_normaliser(public_n, objective.n, neighbouring)
        budgets = split_budget(epsilon, steps=T) if math.isfinite(epsilon) else None
        if sensitivity is not None:  # 0 or -0.0 ran with no noise, eps 0 (fuzz round 9)
            sensitivity = sensitivity_override(sensitivity, objective, "l1_sensitivity")
        return laplace_momentum_method(
            objective, kind="hb", step_sizes=np.full(T, alpha), momenta=np.zeros(T),
            budgets=budgets, epsilon=epsilon, batch_size=batch_size, trials=trials, seed=seed,
            x0=x0, sensitivity=sensitivity, trace=trace, name="dp_gd",
            source=DP_GD_LAPLACE_SOURCE, params=dict(step_size=alpha, mechanism="laplace"),
            noise=noise, transcript=transcript,
        )
    return _gaussian_gd(objective, epsilon, delta, T, alpha, batch_size, clip_threshold,
                        neighbouring, trials, seed, x0, sensitivity, trace, public_n,
                        check_noise(noise, objective.xp), transcript)


@notation_keywords(clip_norm="clip_threshold")
def gaussian_gd_sensitivity(objective: ObjectiveProtocol,
                            neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                            clip_threshold: float | None = None,
                            sensitivity: float | None = None,
                            public_n: int | None = None) -> float:
    r"""L2 sensitivity :math:`\Delta` of the gradient query that Gaussian DP-GD noises.

    The query is :math:`q(D)=\frac1N\sum_{i\in D}g_i(x)+\nabla R(x)` with a **public**
    denominator :math:`N` (:math:`g_i=\nabla\ell_i` or its clipped version; ``R`` is
    data-free): :math:`N=n` under replace-one (the size is public there), :math:`N=`
    ``public_n`` under add/remove (the size is private; see
    :func:`~dpbounds.algorithms._common.public_normaliser`).

    * ``"replace-one"``: one :math:`g_i` is swapped, :math:`\Delta = \sup\lVert g(x;y)-
      g(x;y')\rVert/n`: ``2 * clip_threshold / n``, else ``sensitivity`` or the objective's
      ``l2_sensitivity`` (a bound on that difference) over ``n``.
    * ``"add/remove"``: one :math:`g_i` is added or dropped, :math:`\Delta=\sup\lVert g(x;y)
      \rVert/N`: ``clip_threshold / N``, else ``sensitivity`` or the objective's
      ``gradient_bound`` :math:`G` (a bound on the per-sample **norm**) over ``N``. The
      replace-one difference bound is not a norm bound (a quadratic's per-sample gradients
      differ by a bounded offset but are unbounded), so it is never halved into one.

    A private DP-GD run calibrating to the objective's bound warns where the objective took it
    from the data (an undeclared radius:
    :class:`~dpbounds.privacy.limits.DataDerivedCalibrationWarning`).

    Raises
    ------
    ValueError
        When the bound is infinite: pass ``clip_threshold`` (or a finite ``sensitivity``); under
        add/remove without ``public_n``.

    Example
    -------
    >>> from dpbounds.objectives import QuadraticObjective
    >>> q = QuadraticObjective([1.0, 2.0], offsets=[[0.5, 0.0], [-0.5, 0.0]])
    >>> gaussian_gd_sensitivity(q, "replace-one")     # 2 sup||e|| / n
    0.5
    >>> gaussian_gd_sensitivity(q, "add/remove", clip_threshold=1.0, public_n=4)   # C / N
    0.25
    """
    return _gaussian_gd_sensitivity(objective, neighbouring, clip_threshold, sensitivity,
                                    public_n, None)


def _gaussian_gd_sensitivity(objective: ObjectiveProtocol, neighbouring: Neighbouring | str,
                             clip_threshold: float | None, sensitivity: float | None,
                             public_n: int | None, run: str | None) -> float:
    """:func:`gaussian_gd_sensitivity`; ``run`` names a private run, which warns where the
    objective's bound is the data's."""
    neighbouring = Neighbouring.coerce(neighbouring)
    n = public_normaliser(public_n, objective.n, neighbouring)
    if clip_threshold is not None:
        clip_threshold = check_positive("clip_threshold", clip_threshold)
        return (2.0 if neighbouring is Neighbouring.REPLACE_ONE else 1.0) * clip_threshold / n
    if sensitivity is not None:
        bound = check_positive("sensitivity", sensitivity)
        if bound / n < TINY_SENSITIVITY:  # the share and the noise leave the normal range
            raise ValueError(f"sensitivity / n = {bound / n:.3g} is below "
                             f"{TINY_SENSITIVITY:g}, where "
                             "float64 loses the noise and the privacy loss; rescale the "
                             "problem (gradients and sensitivity by one factor)")
    else:  # a private run (``run``, its name) says where the objective read it from the data
        what = ("l2_sensitivity" if neighbouring is Neighbouring.REPLACE_ONE
                else "gradient_bound")
        bound = (float(getattr(objective, what)) if run is None
                 else calibration_constant(objective, what, run))
    if not math.isfinite(bound):
        replace_one = neighbouring is Neighbouring.REPLACE_ONE
        what = ("l2_sensitivity (sup ||∇ℓ(x;y) - ∇ℓ(x;y')||)" if replace_one
                else "gradient_bound (sup ||∇ℓ(x;y)||, needed for add/remove)")
        raise ValueError(f"the objective's {what} is infinite: pass clip_threshold (per-sample "
                         "clipping) or a finite sensitivity for neighbouring="
                         f"{neighbouring.value!r}")
    return bound / n


def _gaussian_gd(f: ObjectiveProtocol, epsilon: float, delta: float | None, T: int, alpha: float,
                 batch_size: Any, clip_threshold: float | None, neighbouring: Neighbouring | str,
                 trials: int,
                 seed: Any, x0: Any, sensitivity: float | None, trace: str | None,
                 public_n: int | None, noise: str = "float",
                 transcript: Transcript | None = None) -> SimulationResult:
    xp = f.xp
    if check_batch_size(batch_size, f.n) != f.n:
        raise ValueError("batch_size must be None or n for mechanism='gaussian' (full batch); "
                         "use dpbounds.algorithms.dp_sgd for subsampled Gaussian noise")
    delta_2 = _gaussian_gd_sensitivity(f, neighbouring, clip_threshold, sensitivity, public_n,
                                       "dp_gd" if math.isfinite(epsilon) else None)
    nb = Neighbouring.coerce(neighbouring)
    n_pub = public_normaliser(public_n, f.n, neighbouring)
    # the objective returns means over the actual data; n / N turns them into sum / N
    to_public = f.n / n_pub
    if clip_threshold is not None:
        clip_threshold = check_positive("clip_threshold", clip_threshold)
    private = math.isfinite(epsilon)
    if private:
        if delta is None:
            raise ValueError("delta must be given for mechanism='gaussian'")
        delta = check_probability("delta", delta)
        # zCDP (Lemma 3.5 composition, Lemma 3.8 conversion); closed form as the fast path
        sigma = calibrate(lambda s: GaussianMechanism(s, delta_2, nb), epsilon, delta,
                          ZcdpAccountant(nb, "standard"), T)
        check_noise_step(sigma, alpha, epsilon)
    else:
        sigma = 0.0
    _, stream = make_streams(seed, trials, xp)
    grid = None
    if noise == "grid" and sigma > 0:
        grid, step_mechanism, sigma = gaussian_grid(stream, delta_2, sigma, f.d, T, epsilon,
                                                    cast(float, delta), nb, xp, summands=f.n)
    else:
        stream = stream.prefetch(T)  # one draw per generator per block of steps (same bits)
        step_mechanism = GaussianMechanism(sigma, delta_2, nb) if private else None
    rec = TraceRecorder(f, trace)
    x = f.initial_state(trials, x0)
    if transcript is not None:
        every = np.arange(T)
        transcript.begin("dp_gd", trials=trials, steps=T, n=f.n, batch_size=f.n,
                         sampling="full", sampling_rate=1.0, neighbouring=nb.value,
                         # the per-sample bound the noise assumes: Delta = k * bound / N
                         bound=delta_2 * n_pub / (2.0 if nb is Neighbouring.REPLACE_ONE
                                                  else 1.0),
                         grid_bits=None if grid is None else grid.grid_bits)
        # one release per step: the (clipped) data sum over N plus its noise
        transcript.releases(every, sigma, (every, every, 1.0 / n_pub))
    for t in progress(range(T), desc="DP-GD (Gaussian)"):
        if transcript is not None:
            rec.record(x)
            raw = f.sample_grads(x)
            norms = xp.linalg.vector_norm(raw, axis=-1)
            if clip_threshold is not None:
                # the clip, from the per-sample gradients (the fused objective call exposes
                # no per-sample norm); equal to clipped_mean_grad up to rounding
                factor = clip_threshold / xp.maximum(norms, xp.asarray(clip_threshold,
                                                                        dtype=norms.dtype))
                raw = raw * factor[..., None]
            mapped = xp.linalg.vector_norm(raw, axis=-1)
            transcript.norms(t, norms, mapped)
            if transcript.queries:
                transcript.query(t, xp.sum(raw, axis=1))
            data, reg = to_public * xp.mean(raw, axis=1), f.regularizer_grad(x)
            g = data + reg
            if grid is not None and clip_threshold is None:
                # unclipped per-sample gradients may share a large part: round the records'
                # part alone (gradient_parts); clipped ones are bounded terms
                records, rest = gradient_parts(f, x)
                data, reg = to_public * records, to_public * (rest - reg) + reg
        elif grid is not None:  # the records' part alone is rounded and released (gradient_parts)
            rec.record(x)
            if clip_threshold is None:  # the records' part alone is rounded (gradient_parts)
                records, rest = gradient_parts(f, x)
                reg = f.regularizer_grad(x)
                data, reg = to_public * records, to_public * (rest - reg) + reg
            else:  # clipped per-sample terms: bounded, the whole mean is rounded
                data = to_public * f.clipped_mean_grad(x, None, clip_threshold)
                reg = f.regularizer_grad(x)
        elif clip_threshold is None:
            if rec.needs_loss:
                loss, g = f.loss_and_grad(x)
                rec.record(x, loss)
            else:
                rec.record(x)
                g = f.grad(x)
            if to_public != 1.0:
                reg = f.regularizer_grad(x)
                g = to_public * (g - reg) + reg
        else:
            rec.record(x)
            g = to_public * f.clipped_mean_grad(x, None, clip_threshold) + f.regularizer_grad(x)
        if grid is not None:
            if transcript is not None:
                transcript.drawn(t, grid.noise(t))  # integer draws, grid units
            g = grid.release(t, data) + reg
        elif sigma > 0:
            xi = stream.normal((f.d,), sigma)
            if transcript is not None:
                transcript.drawn(t, xi)  # the noise added, for a check against sigma
            g = g + xi
        x = x - alpha * g
    rec.record(x)
    ledger = PrivacyLedger(nb)
    if step_mechanism is not None:
        ledger.record(step_mechanism, T)
    target_delta = delta if private and delta is not None else 0.0  # delta checked if private
    privacy = RunPrivacy(ledger, epsilon, target_delta, "zcdp", delta_2,
                         {"conversion": "standard"},
                         description=f"Gaussian on a gradient sum / {n_pub} per step")
    params = dict(step_size=alpha, mechanism="gaussian", sigma=sigma, sensitivity=delta_2,
                  clip_threshold=clip_threshold, steps=T, seed=seed, normaliser=n_pub,
                  noise=noise)
    if grid is not None:
        params.update(grid_bits=grid.grid_bits)
    return SimulationResult("dp_gd", x, rec.result(trials), rec.kind or "none",
                            privacy, params, DP_GD_GAUSSIAN_SOURCE, backend_name(xp))
