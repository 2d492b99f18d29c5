r"""Replay on neighbouring data: the same seed on ``D`` and ``D'``, release by release.

dp-recorder's record-and-replay check (issue 34 item 3), for DP-SGD: run the algorithm on
``D`` and on a replace-one neighbour ``D'`` with the *same* seed -- the same mini-batches --
and every noise draw scaled to zero (:func:`dpbounds.audit.mutation.scaled_noise`), so that
each release is its noiseless part. On linear losses
(:class:`~dpbounds.audit.neighbours.LinearObjective`) a step's gradient does not depend on the
point, so the two runs' releases differ only through the changed record, whatever the
iterates did. The check, from the runs' query points alone (it shares no code with the
calibration):

* per step and trial, the noiseless released sum :math:`B(x_{t-1}-x_t)/\eta` (the clipped
  per-example sum; no regulariser) on ``D`` minus that on ``D'`` has norm at most the
  sensitivity the run declares (``params["sensitivity_sum"]``, what its noise is calibrated
  for);
* both runs take the same number of steps (no data-dependent control flow).

**Oracle [DERIVED].** The changed record is ``c_0`` in ``D`` and ``-c_0`` in ``D'`` with
:math:`\lVert c_0\rVert=2C`: both clip to norm ``C`` and point in opposite directions, so at
every step whose batch holds record 0 the difference is exactly :math:`2C`, the replace-one
sensitivity, and 0 elsewhere: a correct run measures the ratio 1 (to rounding), a run whose
contribution exceeds the clip (the ``scaled_contribution`` mutant) measures more.

Example
-------
>>> from dpbounds.verify.replay import replay_dp_sgd
>>> replay_dp_sgd(seed=0).holds                                           # doctest: +SKIP
True
"""

from __future__ import annotations

import math

import numpy as np

from dpbounds._validation import check_int, check_positive
from dpbounds.verify.verdicts import Verdict

__all__ = ["replay_dp_sgd"]

#: relative rounding slack of the replay's ratio (float64 sums of a few records)
RTOL = 1e-9


def _pair(n: int, d: int, clip: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(D, D')``: ``n`` records in ``d`` dimensions, norms spread over ``[0.5, 3] C`` (the
    clip binds on about 60% of them), record 0 of norm ``2C`` negated in ``D'``."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((n, d))
    c *= (clip * rng.uniform(0.5, 3.0, size=n) / np.linalg.norm(c, axis=1))[:, None]
    c[0] *= 2.0 * clip / np.linalg.norm(c[0])
    other = c.copy()
    other[0] = -c[0]
    return c, other


def replay_dp_sgd(*, n: int = 8, d: int = 3, batch_size: int = 4, steps: int = 20,
                  step_size: float = 0.5, clip: float = 1.0, epsilon: float = 1.0,
                  delta: float = 1e-5, trials: int = 4, seed: int = 0,
                  mutation: str | None = None) -> Verdict:
    """The replay verdict of DP-SGD (module docstring): holds when the largest noiseless
    release difference over the declared sensitivity is at most 1 (+ :data:`RTOL`) and both
    runs take ``steps`` steps.

    Parameters
    ----------
    n, d, batch_size, steps, step_size, clip, epsilon, delta, trials:
        The pair's size and dimension and the run's parameters (sampling without replacement).
    seed:
        Seed of the pair and of both runs (the same for ``D`` and ``D'``).
    mutation:
        ``None`` or a mutant of :data:`dpbounds.verify.MUTATIONS` that applies to DP-SGD.
    """
    from dpbounds.algorithms import dp_sgd
    from dpbounds.audit.mutation import scaled_noise
    from dpbounds.audit.neighbours import LinearObjective
    from dpbounds.verify.mutants import mutated

    n = check_int("n", n, minimum=2, maximum=10**5)
    d = check_int("d", d, minimum=1, maximum=10**4)
    batch_size = check_int("batch_size", batch_size, minimum=1, maximum=n)
    steps = check_int("steps", steps, minimum=1, maximum=10**5)
    clip = check_positive("clip", clip)
    step_size = check_positive("step_size", step_size)
    sums, counts, declared = [], [], math.nan
    for data in _pair(n, d, clip, seed):
        obj = LinearObjective(data).tapped()
        with mutated(mutation, "dp_sgd"), scaled_noise(0.0):
            res = dp_sgd(obj, epsilon=epsilon, delta=delta, steps=steps, batch_size=batch_size,
                         step_size=step_size, clip_threshold=clip, trials=trials, seed=seed,
                         x0=np.zeros(d), sampling="without_replacement", trace=None)
        declared = float(res.params["sensitivity_sum"])
        pts = [np.asarray(q, dtype=float) for q in obj.queries]
        counts.append(len(pts))
        xs = np.stack([*pts, np.asarray(res.x, dtype=float)])  # (steps + 1, trials, d)
        sums.append((xs[:-1] - xs[1:]) * batch_size / step_size)
    name = "replay dp_sgd" + (f" [mutant {mutation}]" if mutation else "")
    if counts[0] != counts[1] or counts[0] != steps:
        return Verdict(name, f"steps on D, D' = {counts}", "same control flow on D and D'",
                       float(counts[1]), 0.0, float(counts[0]), "replay", False)
    diff = np.linalg.norm(sums[0] - sums[1], axis=-1)  # (steps, trials)
    ratio = float(diff.max() / declared)
    return Verdict(name, f"release difference over declared sensitivity ({steps} steps x "
                         f"{trials} trials)", "noiseless release diff <= declared sensitivity",
                   ratio, 0.0, 1.0, "replay on D, D' with one seed (2C at every step holding "
                   "the record, DERIVED)", bool(ratio <= 1.0 + RTOL))
