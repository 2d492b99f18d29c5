r"""DP-SGD with per-sample clipping (Abadi et al. 2016; Yang et al. eq. (2)).

.. math::

    x_{t+1} = x_t - \eta\Big(\frac1B\Big(\sum_{i\in S_t}\nabla\ell_i(x_t)
    \min\Big(1,\frac{C}{\lVert\nabla\ell_i(x_t)\rVert}\Big) + \sigma_{\text{sum}}\,\xi_t\Big)
    + \nabla R(x_t)\Big),\qquad \xi_t\sim N(0, I_d),

with the public regulariser :math:`R` added noise-free. Yang et al.'s eq. (2) is
RECONSTRUCTED (its seed lost the formula; the prose names Abadi et al.'s form); the noise is
on the **sum**, as Lemma 3.1's :math:`\sigma\propto B\sqrt{T\log(1/\delta)}/(N\epsilon)`
requires (``yang_et_al.md`` §3).

Sampling and neighbouring relation (explicit, see :mod:`dpbounds.privacy.rdp`):

* ``sampling="without_replacement"`` (Yang et al.'s choice): a uniform subset of exactly
  ``B`` samples per step, analysed under **replace-one**, where the clipped sum moves by up
  to :math:`2C`: :math:`\sigma_{\text{sum}} = z\cdot 2C`;
* ``sampling="poisson"`` (Abadi et al.): each sample joins with probability :math:`q=B/N`,
  analysed under **add/remove**: :math:`\sigma_{\text{sum}} = zC`, and the sum is divided by
  the expected batch size :math:`B = qN`. Under add/remove the dataset size is private, so
  :math:`N` is a declared public size ``public_n`` (required), never the actual ``n``: a rate
  computed from ``n`` would give the two neighbours different sampling rates and noise.

The noise multiplier :math:`z` is the smallest one whose RDP (or PLD)
:math:`\varepsilon` over ``steps`` steps is at most the target
(:func:`dpbounds.privacy.calibrate.calibrate` on the recorded
:class:`~dpbounds.privacy.mechanisms.SubsampledGaussianMechanism`, conservative); the run's
``result.privacy`` holds the ledger of ``steps`` such mechanisms. Yang et al.'s
noise multiplier :math:`\sigma` (noise std on the sum divided by :math:`C`) is
``params["sigma_over_clip"]``.

All the loop code is array-API (NumPy, CuPy, array-api-strict). Mini-batches come from
``sampler`` and noise from ``noise`` in ``sampler, noise = make_streams(seed, trials, xp)``,
so ``epsilon = inf`` reproduces the non-private run batch for batch.

Example
-------
>>> import numpy as np
>>> from dpbounds.objectives import LogisticRegression
>>> from dpbounds.algorithms.dp_sgd import dp_sgd
>>> rng = np.random.default_rng(0)
>>> A = rng.uniform(size=(500, 4)); y = np.sign(A @ np.array([1., -1, 1, -1]) + 1e-3)
>>> f = LogisticRegression(A, y, l2=1e-2)
>>> res = dp_sgd(f, epsilon=1.0, delta=1e-5, steps=200, batch_size=50, step_size=0.5,
...              clip_threshold=1.0, trials=4, seed=0)
>>> res.ledger.epsilon <= 1.0
True
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive, check_probability
from dpbounds.algorithms import _step_kernels as _kernels
from dpbounds.algorithms._common import (
    MAX_COMPILED_STEPS,
    MAX_STEPS,
    SimulationResult,
    TraceRecorder,
    check_batch_size,
    check_epsilon,
    check_noise_step,
    check_own_record_losses,
    check_steps,
    check_trials,
    make_streams,
    progress,
    public_normaliser,
)
from dpbounds.algorithms._grid import check_noise, gaussian_grid
from dpbounds.algorithms._transcript import Transcript
from dpbounds.backend import backend_name, is_numpy
from dpbounds.notation import notation_keywords
from dpbounds.objectives._base import ObjectiveProtocol
from dpbounds.privacy.calibrate import calibrate_result
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import Neighbouring, Sampling, SubsampledGaussianMechanism
from dpbounds.privacy.noise_calibration import NoiseCalibration
from dpbounds.privacy.run import RunPrivacy
from dpbounds.provenance import YANG, Provenance, Source

__all__ = ["DP_SGD_SOURCE", "dp_sgd"]

DP_SGD_SOURCE = Source(
    YANG,
    "eq. (2) (DP-SGD, Abadi et al. 2016 form) and Lemma 3.1",
    Provenance.RECONSTRUCTED,
    "per-sample clipping, Gaussian noise sigma*C on the sum; sigma calibrated by an "
    "RDP accountant (Lemma 3.1's constants c1, c2 are existential)",
)

#: Sampling schemes: fixed-size without replacement (replace-one) or Poisson (add/remove).
SAMPLING: tuple[str, ...] = ("without_replacement", "poisson")


def noisy_sgd_noise(
    epsilon: float,
    delta: float,
    *,
    n: int,
    batch_size: int,
    steps: int,
    contribution_bound: float,
    sampling: str = "without_replacement",
    accountant: str = "rdp",
) -> NoiseCalibration:
    r"""Noise of a subsampled-Gaussian SGD run for :math:`(\varepsilon,\delta)`.

    Parameters
    ----------
    n:
        The **public** dataset size of the sampling rate :math:`q = B/n` (under Poisson
        sampling, add/remove, a declared size, not the private actual one).
    contribution_bound:
        Bound on each sample's contribution to the noised sum: :math:`C` for clipping,
        ``1`` for normalisation :math:`g/(\lVert g\rVert+r)` (independent of ``r``).

    Returns
    -------
    NoiseCalibration
        One noise group: ``noise_std`` (:math:`z\cdot` sensitivity, on the sum),
        ``sensitivity`` of the sum under the relation of the sampling scheme (:math:`2C`
        replace-one, :math:`C` add/remove), ``noise_multiplier`` (:math:`z`),
        ``sampling_rate``, ``neighbouring``, ``epsilon_spent`` and ``mechanisms`` (one step's
        :class:`~dpbounds.privacy.mechanisms.SubsampledGaussianMechanism` times ``steps``;
        empty when non-private).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_probability("delta", delta)
    sampling = check_choice("sampling", sampling, SAMPLING)
    accountant = check_choice("accountant", accountant, ("rdp", "pld"))
    steps = check_steps(steps, maximum=MAX_COMPILED_STEPS)  # the run checks its own limit
    n = check_int("n", n, minimum=1)
    batch_size = check_batch_size(batch_size, n)
    bound = check_positive("contribution_bound", contribution_bound)
    relation = Sampling.coerce(sampling).natural_neighbouring
    sensitivity = (2.0 if relation is Neighbouring.REPLACE_ONE else 1.0) * bound
    q = batch_size / n
    if math.isinf(epsilon):
        return NoiseCalibration((0.0,), (sensitivity,), (), math.inf, delta, relation,
                                accountant, noise_multiplier=0.0, sampling_rate=q)
    sigma, spent = _calibrate(epsilon, delta, q, steps, sampling, accountant, sensitivity)
    return NoiseCalibration((sigma,), (sensitivity,),
                            ((_step_mechanism(sigma, q, sensitivity, sampling), steps),),
                            float(spent), delta, relation, accountant,
                            noise_multiplier=sigma / sensitivity, sampling_rate=q)


def _step_mechanism(sigma: float, q: float, sensitivity: float,
                    sampling: Sampling | str) -> SubsampledGaussianMechanism:
    """One step: Gaussian noise on a clipped per-example sum over a subsample."""
    return SubsampledGaussianMechanism(sigma, q, sensitivity, Sampling.coerce(sampling),
                                       per_example_sum=True)


@functools.lru_cache(maxsize=256)
def _calibrate(epsilon: float, delta: float, q: float, steps: int, sampling: str,
               accountant: str, sensitivity: float) -> tuple[float, float]:
    """(noise std on the sum, spent epsilon) by the one calibration routine; cached: it is a
    pure function of its arguments and the without-replacement one takes seconds."""
    relation = Sampling.coerce(sampling).natural_neighbouring
    sigma, spent = calibrate_result(
        lambda s: _step_mechanism(s, q, sensitivity, sampling), epsilon, delta, accountant,
        steps, neighbouring=relation, initial=sensitivity,
        rtol=1e-6 if accountant == "rdp" else 1e-4, round_up=True)
    return sigma, float(spent)


def _per_sample_map(xp: Any, g: Any, kind: str, param: float) -> Any:
    """Clip to ``param`` or normalise ``g/(||g|| + param)``, row-wise on the last axis."""
    norms = xp.linalg.vector_norm(g, axis=-1)
    if kind == "clip":
        factor = param / xp.maximum(norms, xp.asarray(param, dtype=norms.dtype))
    else:
        factor = 1.0 / (norms + param)
    return g * factor[..., None]


def poisson_members(objective: ObjectiveProtocol, sampler: Any, q: float) -> tuple[Any, Any]:
    """One Poisson subsample per trial: ``(idx, counts)``, sample ``i`` joining with
    probability ``q`` (one uniform per sample from ``sampler``).

    The samples with ``u_i < q`` are exactly the first ``count`` entries of ``argsort(u)``;
    ``idx`` holds the first ``max(counts)`` of them per trial (rows beyond a trial's count are
    not members: :func:`members_sum` gives them weight 0).
    """
    xp = objective.xp
    u = sampler.uniform((objective.n,))
    counts = xp.sum(xp.astype(u < q, xp.int64), axis=1)
    width = int(xp.max(counts))
    if is_numpy(xp) and 0 < width < objective.n // 4:
        # the same first `width` columns of the stable argsort without sorting all n: the
        # `width` smallest by a partition (O(n)), then those sorted by (u, index) (a full
        # sort of n = 1e4 per step was 60% of a Poisson step's CPU)
        un = np.asarray(u)
        part = np.argpartition(un, width - 1, axis=1)[:, :width]
        vals = np.take_along_axis(un, part, axis=1)
        # a tie across the partition's boundary (probability ~ n / 2^53) could pick another
        # index than the stable sort: then the full sort
        if np.all(np.sum(un <= vals.max(axis=1, keepdims=True), axis=1) == width):
            order = np.lexsort((part, vals), axis=1)
            return xp.asarray(np.take_along_axis(part, order, axis=1)), counts
    return xp.argsort(u, axis=1, stable=True)[:, :width], counts


def members_sum(objective: ObjectiveProtocol, x: Any, idx: Any, counts: Any, kind: str,
                param: float, transcript: Transcript | None = None, t: int = 0) -> Any:
    """Sum of the mapped per-sample gradients over a Poisson subsample
    (:func:`poisson_members`), ``(trials, d)``. With ``transcript``, step ``t``'s members and
    contribution norms are recorded."""
    xp = objective.xp
    width = int(idx.shape[1])
    if width == 0:
        if transcript is not None:
            transcript.members(t, np.zeros((x.shape[0], 0), dtype=np.int32), np.zeros(x.shape[0]))
            transcript.norms(t, np.zeros((x.shape[0], 0)), np.zeros((x.shape[0], 0)))
            if transcript.queries:
                transcript.query(t, np.zeros(x.shape))
        return xp.zeros_like(x)
    raw = objective.sample_grads(x, idx)
    mapped = _per_sample_map(xp, raw, kind, param)
    keep = xp.arange(width)[None, :] < counts[:, None]
    weights = xp.astype(keep, mapped.dtype)
    if transcript is not None:
        transcript.members(t, idx, counts)
        transcript.norms(t, xp.linalg.vector_norm(raw, axis=-1) * weights,
                         xp.linalg.vector_norm(mapped, axis=-1) * weights)
    total = xp.sum(mapped * weights[:, :, None], axis=1)
    if transcript is not None and transcript.queries:
        transcript.query(t, total)
    return total


def _poisson_batch_sum(objective: ObjectiveProtocol, x: Any, sampler: Any, q: float, kind: str,
                       param: float, transcript: Transcript | None = None, t: int = 0) -> Any:
    """Sum over a Poisson subsample of the mapped per-sample gradients, ``(trials, d)``
    (:func:`poisson_members` drawn from ``sampler``, then :func:`members_sum`)."""
    idx, counts = poisson_members(objective, sampler, q)
    return members_sum(objective, x, idx, counts, kind, param, transcript, t)


def _recorded_mean(objective: ObjectiveProtocol, x: Any, idx: Any, kind: str, param: float,
                   transcript: Transcript, t: int) -> Any:
    """The mapped mini-batch mean from the per-sample gradients, their norms recorded (the
    recording path: the objective's fused ``clipped_mean_grad`` exposes no per-sample norm;
    equal to it up to rounding)."""
    xp = objective.xp
    raw = objective.sample_grads(x, idx)
    mapped = _per_sample_map(xp, raw, kind, param)
    transcript.norms(t, xp.linalg.vector_norm(raw, axis=-1),
                     xp.linalg.vector_norm(mapped, axis=-1))
    if transcript.queries:
        transcript.query(t, xp.sum(mapped, axis=1))
    return xp.mean(mapped, axis=1)


def _noisy_sgd(
    objective: ObjectiveProtocol,
    *,
    kind: str,
    param: float,
    contribution_bound: float,
    epsilon: float,
    delta: float,
    steps: int,
    batch_size: int,
    step_size: float,
    trials: int,
    seed: Any,
    x0: Any,
    sampling: str,
    accountant: str,
    trace: str | None,
    trace_every: int,
    name: str,
    source: Source,
    public_n: int | None,
    noise_option: str = "float",
    transcript: Transcript | None = None,
) -> SimulationResult:
    """Shared loop of DP-SGD (``kind="clip"``) and DP-NSGD (``kind="normalize"``); with a
    ``transcript``, the NumPy path runs (the compiled loop records nothing)."""
    step_size = check_positive("step_size", step_size)
    check_own_record_losses(objective, name, check_epsilon(epsilon))
    fixed = sampling == "without_replacement"
    steps = check_steps(steps, maximum=_kernels.step_limit(objective) if fixed else MAX_STEPS)
    trials = check_trials(trials)
    trace_every = check_int("trace_every", trace_every, minimum=1)
    n = int(objective.n)
    relation = Sampling.coerce(sampling).natural_neighbouring
    n_rate = public_normaliser(public_n, n, relation)  # the n of the sampling rate B/n
    batch_size = check_batch_size(batch_size, n_rate)
    noise_kind = check_noise(noise_option, objective.xp)
    if noise_kind == "grid" and accountant != "rdp":
        raise ValueError("noise='grid' needs accountant='rdp' (the discrete Gaussian's "
                         "subsampling is accounted by RDP amplification bounds for any "
                         "mechanism; the PLD accountant reads only a scalar discrete Gaussian "
                         "of sigma <= 2^16 grid units, DiscreteGaussianMechanism, not the "
                         "d-dimensional grid release of a gradient)")
    x = objective.initial_state(trials, x0)  # validates x0 before the (slow) calibration
    noise = noisy_sgd_noise(epsilon, delta, n=n_rate, batch_size=batch_size, steps=steps,
                            contribution_bound=contribution_bound, sampling=sampling,
                            accountant=accountant)
    epsilon = check_epsilon(epsilon)
    xp = objective.xp
    d = objective.d
    if trace == "auto":
        trace = "suboptimality" if objective.convex else "grad_norm"
    recorder = TraceRecorder(objective, trace)
    sampler, noise_rng = make_streams(seed, trials, xp)
    std_mean = noise.sigma / batch_size  # noise on the sum, then averaged
    check_noise_step(std_mean, step_size, epsilon)
    grid, mechanisms = None, noise.mechanisms
    if noise_kind == "grid" and std_mean > 0:
        # the released mean moves by 2C/B (replace-one) or C/B (add/remove, Poisson: the sum
        # over the public expected batch B); recalibrated for the grid mechanism
        grid, entry, std_mean = gaussian_grid(
            noise_rng, noise.sensitivity[0] / batch_size, std_mean, d, steps, epsilon, delta,
            relation, xp, sampling_rate=float(batch_size / n_rate), sampling=sampling,
            # a Poisson batch holds up to n records
            summands=n if Sampling.coerce(sampling) is Sampling.POISSON else batch_size)
        mechanisms = ((entry, steps),)
    q = float(batch_size / n_rate if noise.sampling_rate is None else noise.sampling_rate)
    trace_steps = [0]
    recorder.record(x)
    # the compiled loop records the norms itself; the noiseless queries and the grid release
    # need the NumPy path
    kern = (_kernels.active(objective, x)
            if fixed and grid is None and (transcript is None or not transcript.queries)
            else None)
    if transcript is not None:
        every = np.arange(steps)
        transcript.begin(name, trials=trials, steps=steps, n=n, batch_size=batch_size,
                         sampling=sampling, sampling_rate=q, neighbouring=relation.value,
                         bound=contribution_bound,
                         grid_bits=None if grid is None else grid.grid_bits)
        # one release per step: the batch sum over B (expected B for Poisson) plus its noise
        transcript.releases(every, std_mean, (every, every, 1.0 / batch_size))
    if kern is not None:  # the compiled loop updates x in place (x0 may be a read-only view)
        x = np.array(x, dtype=np.float64, order="C", copy=True)
    work = np.empty((_kernels.WORK_ROWS, d))  # the compiled loop's scratch
    cut = trace_every if recorder.kind is not None else 0  # a compiled call ends at records
    block = _kernels.sample_block(batch_size)
    for c0 in progress(range(0, steps, block), desc=name):
        c1 = min(steps, c0 + block)
        # the block's mini-batches, drawn at once (both paths read the same ones)
        batches = sampler.subsample_steps(n, batch_size, c1 - c0) if fixed else None
        if transcript is not None and batches is not None:
            transcript.batches(c0, batches)
        for a, b in _kernels.chunks(c0, c1, _kernels.block_steps(d), cut):
            noises = (noise_rng.normal_steps(b - a, (d,), scale=std_mean)
                      if std_mean > 0 and grid is None else None)
            if transcript is not None and noises is not None:
                transcript.drawn_block(a, noises)  # what both paths add, steps a+1 .. b
            if kern is not None:
                norms = np.zeros((trials, b - a, 2) if transcript is not None else (1, 1, 2))
                _kernels.noisy_sgd_steps(*kern, batches, a - c0, _kernels.noise_or_none(noises),
                                         std_mean > 0, b - a, kind == "normalize", param,
                                         step_size, x, work, transcript is not None, norms)
                if transcript is not None:
                    transcript.norm_block(a, norms[:, :, 0], norms[:, :, 1])
            for s, t in enumerate(range(a + 1, b + 1) if kern is None else ()):
                if fixed:
                    assert batches is not None  # drawn above whenever fixed
                    idx = batches[:, t - c0 - 1, :]
                    if transcript is not None:
                        g = _recorded_mean(objective, x, idx, kind, param, transcript, t - 1)
                    elif kind == "clip":
                        g = objective.clipped_mean_grad(x, idx, param)
                    else:
                        g = objective.normalized_mean_grad(x, idx, param)
                else:
                    g = _poisson_batch_sum(objective, x, sampler, q, kind, param, transcript,
                                           t - 1) / batch_size
                if grid is not None:
                    if transcript is not None:
                        transcript.drawn(t - 1, grid.noise(t - 1))  # integer draws, grid units
                    g = grid.release(t - 1, g)
                elif noises is not None:
                    g = g + noises[:, s, :]
                x = x - step_size * (g + objective.regularizer_grad(x))
            due = list(range((a // trace_every + 1) * trace_every, b + 1, trace_every))
            if b == steps and b not in due:
                due.append(b)
            if due and recorder.kind is not None:  # at most the chunk's last step
                recorder.record(x)
                trace_steps.extend(due)
    ledger = PrivacyLedger(noise.neighbouring, mechanisms)
    privacy = RunPrivacy(ledger, epsilon, delta, accountant, noise.sensitivity[0],
                         description=f"{sampling.replace('_', ' ')} subsampled Gaussian x steps")
    return SimulationResult(
        algorithm=name, x=x, trace=recorder.result(trials), trace_kind=recorder.kind or "loss",
        privacy=privacy,
        params=dict(steps=steps, batch_size=batch_size, step_size=step_size,
                    sampling=sampling, sampling_rate=q, accountant=accountant,
                    public_n=n_rate, noise_multiplier=noise.noise_multiplier,
                    noise_std_sum=noise.sigma,
                    sensitivity_sum=noise.sensitivity[0],
                    sigma_over_clip=noise.sigma / contribution_bound,
                    noise=noise_kind,
                    **({"grid_bits": grid.grid_bits, "noise_std_mean": std_mean}
                       if grid is not None else {}),
                    trials=trials, trace_steps=trace_steps,
                    **({"clip_threshold": param} if kind == "clip"
                       else {"regulariser": param})),
        source=source, backend=backend_name(xp),
    )


@notation_keywords(clip_norm="clip_threshold")
def dp_sgd(
    objective: ObjectiveProtocol,
    *,
    epsilon: float,
    delta: float,
    steps: int,
    batch_size: int,
    step_size: float,
    clip_threshold: float,
    trials: int = 1,
    seed: Any = None,
    x0: Any = None,
    sampling: str = "without_replacement",
    accountant: str = "rdp",
    trace: str | None = "auto",
    trace_every: int = 1,
    public_n: int | None = None,
    noise: str = "float",
    transcript: Transcript | None = None,
) -> SimulationResult:
    r"""DP-SGD with per-sample clipping to ``clip_threshold`` (Yang et al. eq. (2), Abadi et al.).

    Parameters
    ----------
    objective:
        A :class:`dpbounds.objectives.Objective`.
    epsilon, delta:
        Target :math:`(\varepsilon,\delta)`; ``epsilon = inf`` runs clipped SGD without noise
        on the same mini-batches.
    steps, batch_size, step_size, clip_threshold:
        :math:`T`, :math:`B` (expected batch for Poisson), :math:`\eta`, :math:`C`.
    trials, seed, x0:
        Independent runs, seed, start point.
    sampling:
        ``"without_replacement"`` (replace-one) or ``"poisson"`` (add/remove).
    public_n:
        Required with ``sampling="poisson"``: the public dataset size :math:`N` of the
        sampling rate :math:`q = B/N` (the size itself is private under add/remove; see
        :func:`~dpbounds.algorithms._common.public_normaliser`). Without replacement it may
        only repeat ``n``.
    accountant:
        ``"rdp"`` or ``"pld"`` (either sampling: without replacement the PLD is the
        symmetric pair of :func:`dpbounds.privacy._pld.symmetrise`, below the RDP bound at
        moderate step counts (2.06 against 2.99 at q = 1/2, sigma / C = 3, 10 steps) but above
        it at large ones (26.1 against 24.2 at q = 0.01, z = 1.2, 10^5 steps): both are upper
        bounds, ``result.privacy.report()`` shows each; ``"rdp"`` stays the default, the bits
        of earlier runs).
    trace, trace_every:
        ``"auto"`` (suboptimality if convex, else grad_norm), ``"loss"``, ``"grad_norm"``,
        ``"suboptimality"`` or ``None``, at ``x_0`` and every ``trace_every`` steps
        (``params["trace_steps"]``).
    noise:
        ``"float"`` (float64 noise, for simulation; the released floats' last bits leak) or
        ``"grid"`` (safe to release: the noisy mean gradient is released on a grid with exact
        discrete Gaussian noise, :mod:`dpbounds.algorithms._grid`, recorded as a
        :class:`~dpbounds.privacy.mechanisms.SubsampledDiscreteGaussianMechanism` per step:
        without replacement by the RDP accountant (Wang, Balle & Kasiviswanathan 2019,
        Theorem 9, or the discrete Gaussian's own bound, whichever is smaller), Poisson also
        by the PLD accountant; the NumPy loop, not the compiled one).
    transcript:
        ``None`` (default) or a fresh :class:`~dpbounds.algorithms._transcript.Transcript` to
        fill with the batches, contribution norms and releases (the NumPy path runs).

    Returns
    -------
    SimulationResult
    """
    clip_norm = check_positive("clip_threshold", clip_threshold)
    sampling = check_choice("sampling", sampling, SAMPLING)
    return _noisy_sgd(
        objective, kind="clip", param=clip_norm, contribution_bound=clip_norm,
        epsilon=epsilon, delta=delta, steps=steps, batch_size=batch_size,
        step_size=step_size, trials=trials, seed=seed, x0=x0, sampling=sampling,
        accountant=accountant, trace=trace, trace_every=trace_every, name="dp_sgd",
        source=DP_SGD_SOURCE, public_n=public_n, noise_option=noise, transcript=transcript,
    )
