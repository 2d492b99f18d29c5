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

**Every transcript-recording algorithm** (:func:`replay`, ``dpbounds audit ALG --replay``):
the same pair, both runs with a :class:`~dpbounds.algorithms._transcript.Transcript` that
records each step's noiseless query (the sum of its mapped contributions). Per release ``r``
the measured difference is :math:`\lVert\sum_t w_{r,t}(q_t(D)-q_t(D'))\rVert` and the
declared sensitivity of the changed record :math:`2\sum_{t:\,0\in S_t}|w_{r,t}|\,b_t`
(``b_t`` the contribution bound the run declares, the weights those the run records); a
release the record does not enter must not move at all. The control flow must not depend
on the data: the same number of steps, the same batches (the same indices at every step) on
``D`` and ``D'``. Oracle [DERIVED]: on the pair each release the record enters moves by
exactly its declared sensitivity when the clip binds at every step (ratio 1; Algorithm 2's
later epochs mix in a lag difference that a linear loss makes 0, ratio below 1 there).

**Add/remove** (``neighbouring="add_remove"``; DP-SGD and DP-NSGD with Poisson sampling,
the Gaussian DP-GD, each with the public ``n``): ``D'`` holds record 0 as a *null* record,
whose contribution is exactly 0 (a zero row of the linear loss), so that ``n`` and with it
every draw of the sampler stay the same on ``D`` and ``D'`` (a true removal shifts the
sampler's stream and no release could be compared). For a release of sums with a public
normaliser this is the removal itself: the released sums differ by the record's
contribution alone. The declared sensitivity per appearance is ``b_t`` (not ``2 b_t``), and
the record's clipped contribution has norm ``C`` at every step holding it (ratio 1). Not
seen this way: a normaliser that counts the realised batch (the null record still counts).

Example
-------
>>> from dpbounds.verify.replay import replay, replay_dp_sgd
>>> replay_dp_sgd(seed=0).holds                                           # doctest: +SKIP
True
>>> [v.holds for v in replay("tree_momentum_nsgd")]                        # doctest: +SKIP
[True, True]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_positive
from dpbounds.verify.verdicts import Verdict

__all__ = ["ADD_REMOVE_REPLAYS", "REPLAYS", "STUDY_REPLAYS", "replay", "replay_dp_sgd",
           "study_replay"]

#: relative rounding slack of the replay's ratio (float64 sums of a few records)
RTOL = 1e-9


def _pair(n: int, d: int, clip: float, seed: int, relation: str = "replace_one"
          ) -> tuple[np.ndarray, np.ndarray]:
    """``(D, D')``: ``n`` records in ``d`` dimensions, norms spread over ``[0.5, 3] C`` (the
    clip binds on about 60% of them), record 0 of norm ``2C`` negated in ``D'``
    (replace-one) or a null record there (add/remove: zero contribution, same ``n``)."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((n, d))
    c *= (clip * rng.uniform(0.5, 3.0, size=n) / np.linalg.norm(c, axis=1))[:, None]
    c[0] *= 2.0 * clip / np.linalg.norm(c[0])
    other = c.copy()
    other[0] = -c[0] if relation == "replace_one" else 0.0
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


#: the algorithms :func:`replay` runs (the audit names of ``dpbounds audit --replay``)
REPLAYS: tuple[str, ...] = ("dp_sgd", "dp_nsgd", "dp_gd_gaussian", "tree_momentum_nsgd",
                            "sensitivity_reduced_nsgd")
#: those with an add/remove claim (Poisson sampling, or the full batch with a public ``n``)
ADD_REMOVE_REPLAYS: tuple[str, ...] = ("dp_sgd", "dp_nsgd", "dp_gd_gaussian")
#: the neighbouring relations a replay compares
RELATIONS: tuple[str, ...] = ("replace_one", "add_remove")


def _replay_run(algorithm: str, data: np.ndarray, *, steps: int, batch_size: int, clip: float,
                epsilon: float, delta: float, trials: int, seed: int,
                relation: str = "replace_one", objective: Any = None,
                keep: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run on ``data`` with a query-recording transcript (noiseless under the caller's
    ``scaled_noise(0)``); its dictionary. ``objective``: the linear objective to run (a
    tapped one); ``keep["x"]``: the final iterates."""
    from dpbounds.algorithms import (
        dp_gd,
        dp_nsgd,
        dp_sgd,
        sensitivity_reduced_nsgd,
        tree_momentum_nsgd,
    )
    from dpbounds.algorithms._transcript import Transcript
    from dpbounds.audit.neighbours import LinearObjective

    obj = LinearObjective(data) if objective is None else objective
    x0 = np.zeros(data.shape[1])
    tr = Transcript(queries=True)
    common = dict(epsilon=epsilon, delta=delta, trials=trials, seed=seed, x0=x0, trace=None,
                  transcript=tr)
    add_remove = relation == "add_remove"
    if algorithm in ("dp_sgd", "dp_nsgd"):
        kw = dict(common, steps=steps, batch_size=batch_size, step_size=STEP_SIZE,
                  sampling="poisson" if add_remove else "without_replacement",
                  **({"public_n": data.shape[0]} if add_remove else {}))
        if algorithm == "dp_sgd":
            res = dp_sgd(obj, clip_threshold=clip, **kw)
        else:
            res = dp_nsgd(obj, regulariser=clip, **kw)
    elif algorithm == "dp_gd_gaussian":
        res = dp_gd(obj, steps=steps, step_size=STEP_SIZE, mechanism="gaussian",
                    clip_threshold=clip, neighbouring=relation,
                    **({"public_n": data.shape[0]} if add_remove else {}), **common)
    else:
        alg = (tree_momentum_nsgd if algorithm == "tree_momentum_nsgd"
               else sensitivity_reduced_nsgd)
        epochs = max(2, -(-steps // (data.shape[0] // batch_size)))
        res = alg(obj, epochs=epochs, step_size=0.05, batch_size=batch_size,
                  clip_threshold=clip, **common)
    if keep is not None:
        keep["x"] = np.asarray(res.x, dtype=float)
    return tr.as_dict()


def replay(algorithm: str, *, n: int = 8, d: int = 3, batch_size: int = 2, steps: int = 24,
           clip: float = 1.0, epsilon: float = 1.0, delta: float = 1e-5, trials: int = 3,
           seed: int = 0, mutation: str | None = None,
           neighbouring: str = "replace_one") -> list[Verdict]:
    """The replay verdicts of ``algorithm`` (one of :data:`REPLAYS`; module docstring): the
    largest release difference over its declared sensitivity (at most 1 + :data:`RTOL`), the
    same control flow on ``D`` and ``D'``, and the declared sampling tested on the batches
    of ``D`` (:func:`dpbounds.verify.sampling.sampling_verdicts`).

    Parameters
    ----------
    algorithm:
        One of :data:`REPLAYS`.
    n, d, batch_size, steps, clip, epsilon, delta, trials:
        The pair (``n`` records in ``d`` dimensions, the clip binding on most) and the runs'
        parameters (the tree methods run ``ceil(steps / (n // batch_size))`` epochs, at least
        2; DP-GD the full batch; DP-NSGD takes ``clip`` as its regulariser ``r``).
    seed:
        Seed of the pair and of both runs (the same for ``D`` and ``D'``).
    mutation:
        ``None`` or a mutant of :data:`dpbounds.verify.MUTATIONS` that applies to it.
    neighbouring:
        ``"replace_one"`` or ``"add_remove"`` (one of :data:`ADD_REMOVE_REPLAYS`: Poisson
        sampling or the full batch, public ``n``; ``D'`` holds a null record, see the module).
    """
    from dpbounds._validation import check_choice
    from dpbounds.audit.mutation import scaled_noise
    from dpbounds.verify.mutants import mutated

    if algorithm not in REPLAYS:
        raise ValueError(f"algorithm must be one of {REPLAYS} for the replay, got "
                         f"{algorithm!r}")
    relation = check_choice("neighbouring", str(getattr(neighbouring, "value", neighbouring))
                            .replace("-", "_").replace("/", "_"), RELATIONS)
    if relation == "add_remove" and algorithm not in ADD_REMOVE_REPLAYS:
        raise ValueError(f"neighbouring 'add_remove' applies to {ADD_REMOVE_REPLAYS} (an "
                         f"add/remove claim), not {algorithm!r} (replace-one only)")
    if relation == "add_remove" and mutation == "cyclic_batches":
        # it replaces the without-replacement batches; under add/remove DP-SGD and DP-NSGD
        # sample by Poisson, so the replay ran the correct code and passed (fuzz round 5)
        raise ValueError("mutation 'cyclic_batches' does not apply under neighbouring "
                         "'add_remove': it replaces the batches sampled without replacement, "
                         "and DP-SGD / DP-NSGD sample by Poisson there")
    n = check_int("n", n, minimum=2, maximum=10**4)
    d = check_int("d", d, minimum=1, maximum=10**3)
    batch_size = check_int("batch_size", batch_size, minimum=1, maximum=n)
    steps = check_int("steps", steps, minimum=1, maximum=10**5)
    clip = check_positive("clip", clip)
    trials = check_int("trials", trials, minimum=1, maximum=10**3)
    runs = []
    for data in _pair(n, d, clip, seed, relation):
        inner = "dp_gd" if algorithm == "dp_gd_gaussian" else algorithm
        with mutated(mutation, inner), scaled_noise(0.0):
            runs.append(_replay_run(algorithm, data, steps=steps, batch_size=batch_size,
                                    clip=clip, epsilon=epsilon, delta=delta, trials=trials,
                                    seed=seed, relation=relation))
    a, b = runs
    name = (f"replay {algorithm}" + (" (add/remove)" if relation == "add_remove" else "")
            + (f" [mutant {mutation}]" if mutation else ""))
    same = a["steps"] == b["steps"] and (
        (a["indices"] is None and b["indices"] is None)
        or (a["indices"] is not None and b["indices"] is not None
            and np.array_equal(a["indices"], b["indices"])))
    flow = Verdict(name, f"steps {a['steps']} / {b['steps']}, batches "
                         f"{'identical' if same else 'differ'} on D / D'",
                   "same control flow on D and D'", float(same), 0.0, 1.0,
                   "the two transcripts' step counts and indices", bool(same))
    if not same:
        return [flow]
    ratio = _release_ratio(a, b, 2.0 if relation == "replace_one" else 1.0)
    from dpbounds.verify.sampling import sampling_verdicts

    used: list[Verdict] = []
    if algorithm in USED_NOISE:
        data = _pair(n, d, clip, seed, relation)[0]
        inner = "dp_gd" if algorithm == "dp_gd_gaussian" else algorithm
        with mutated(mutation, inner):
            used = used_noise_verdicts(*_noisy_run(algorithm, data, steps=steps,
                                                   batch_size=batch_size, clip=clip,
                                                   epsilon=epsilon, delta=delta,
                                                   trials=max(trials, USED_NOISE_TRIALS),
                                                   seed=seed, relation=relation),
                                       name=name)
    return [Verdict(name, f"largest release difference over its declared sensitivity "
                          f"({a['release_std'].size} releases x {trials} trials)",
                    "noiseless release diff <= declared sensitivity", ratio, 0.0, 1.0,
                    "replay on D, D' with one seed (DERIVED: 2 C (replace-one) or C "
                    "(add/remove) per appearance at a binding clip)",
                    bool(ratio <= 1.0 + RTOL)), flow,
            *sampling_verdicts(a, name=name), *used]


#: the algorithms whose update is ``x_{t+1} = x_t - eta * release_t`` (plain steps, no
#: momentum, no projection): the noise each step *used* is read off its iterates
USED_NOISE: tuple[str, ...] = ("dp_sgd", "dp_nsgd", "dp_gd_gaussian")
#: trials of the used-noise run (its tests' power: 24 steps x 16 trials = 384 releases)
USED_NOISE_TRIALS = 16
#: the replay's step size (the noiseless runs' and the used-noise run's)
STEP_SIZE = 0.5


def _noisy_run(algorithm: str, data: np.ndarray, *, steps: int, batch_size: int, clip: float,
               epsilon: float, delta: float, trials: int, seed: int, relation: str
               ) -> tuple[dict[str, Any], np.ndarray]:
    """One run with its noise on ``data``: the transcript (queries recorded) and the iterates
    ``(trials, steps + 1, d)`` at which it queried, read off a tapped linear objective."""
    from dpbounds.audit.neighbours import LinearObjective

    obj = LinearObjective(data).tapped()
    out: dict[str, Any] = {}
    tr = _replay_run(algorithm, data, steps=steps, batch_size=batch_size, clip=clip,
                     epsilon=epsilon, delta=delta, trials=trials, seed=seed,
                     relation=relation, objective=obj, keep=out)
    points = [np.asarray(q, dtype=float) for q in obj.queries] + [out["x"]]
    return tr, np.stack(points, axis=1)


def used_noise_verdicts(tr: dict[str, Any], iterates: np.ndarray, *, name: str = "used"
                        ) -> list[Verdict]:
    r"""The noise each release *used*, read off the iterates, against the declared law.

    For a plain step :math:`x_{t+1}=x_t-\eta\,\mathrm{release}_t` (DP-SGD, DP-NSGD, DP-GD:
    no momentum, no projection) the release is :math:`(x_t-x_{t+1})/\eta` and its noise
    :math:`\xi_r=\mathrm{release}_r-\sum_t w_{r,t}q_t` with the noiseless queries
    :math:`q_t` and weights the transcript records [DERIVED, the update rule]. These are held
    to :math:`N(0, s_r^2 I_d)` by :func:`dpbounds.verify.drawn_noise.drawn_noise_verdicts`
    (scale, tails, law, lag-1 independence). The draws' own record (``noise_drawn``) is what
    the generator returned; this is what the step added: noise drawn right but added at two
    steps (the pairs reuse of an adversary's mutant: every difference of two steps
    noiseless), or dropped at every other step, passed every check that read the draws.
    Their power against a 10 % change of the scale is reported, not required (as the drawn
    noise's in a study: the defects they are for move the statistics by far more; a study
    that runs the replay must not turn INCONCLUSIVE on it)."""
    from dpbounds.verify.drawn_noise import drawn_noise_verdicts

    q = tr.get("query")
    if q is None:
        raise ValueError("tr must be a transcript that recorded its queries "
                         "(Transcript(queries=True))")
    q = np.asarray(q, dtype=float)
    iterates = np.asarray(iterates, dtype=float)
    if iterates.shape != (q.shape[0], q.shape[1] + 1, q.shape[2]):
        raise ValueError(f"iterates must have shape (trials, steps + 1, d) = "
                         f"{(q.shape[0], q.shape[1] + 1, q.shape[2])}, got {iterates.shape}")
    if not np.all(np.isfinite(iterates)):
        raise ValueError("iterates must be finite")
    released = (iterates[:, :-1] - iterates[:, 1:]) / STEP_SIZE  # (trials, steps, d)
    r, t, w = (np.asarray(tr[k]) for k in ("weight_release", "weight_step", "weight"))
    std = np.asarray(tr["release_std"], dtype=float)
    import scipy.sparse as sp

    # release r's noiseless part, sum_t w_{r,t} q_t (the transcript's COO weights), per trial
    W = sp.csr_matrix((w, (r, t)), shape=(std.size, q.shape[1]))
    expected = np.stack([W @ q[k] for k in range(q.shape[0])])  # (trials, releases, d)
    at = np.asarray(tr["release_step"], dtype=np.int64)  # each release's step
    xi = released[:, at] - expected
    stat = np.abs(xi).sum(-1) if str(tr["noise"]) == "laplace" else np.einsum("trd,trd->tr",
                                                                               xi, xi)
    rows = drawn_noise_verdicts({"noise": tr["noise"], "noise_dim": q.shape[2],
                                 "noise_drawn": stat, "release_std": std},
                                name=f"{name} (used noise)")
    return [Verdict(v.study, v.case.replace("drawn noise", "used noise (from the iterates)"),
                    v.claim, v.measured, v.se, v.predicted, v.oracle + "; the noise each "
                    "step added, read off its iterates (x_t - x_{t+1}) / eta minus its "
                    "noiseless query", v.holds, powered=True, needs="",
                    power=v.power) for v in rows]


def _release_ratio(a: dict[str, Any], b: dict[str, Any], factor: float = 2.0) -> float:
    """Largest ``||release_r(D) - release_r(D')|| / declared_r`` over releases and trials
    (``inf`` when a release the changed record does not enter moves); ``factor`` the
    relation's factor on the contribution bound (2 replace-one, 1 add/remove)."""
    import scipy.sparse as sp

    r, t, w = (np.asarray(a[k]) for k in ("weight_release", "weight_step", "weight"))
    n_rel, steps = int(np.asarray(a["release_std"]).size), int(a["steps"])
    W = sp.csr_matrix((w, (r, t)), shape=(n_rel, steps))
    Wabs = sp.csr_matrix((np.abs(w) * np.asarray(a["bound"])[t], (r, t)), shape=(n_rel, steps))
    worst = 0.0
    for k in range(a["query"].shape[0]):
        diff = np.linalg.norm(W @ (a["query"][k] - b["query"][k]), axis=-1)  # (R,)
        if a["indices"] is None:
            holds0 = np.ones(steps)
        else:
            holds0 = (np.asarray(a["indices"][k]) == 0).any(axis=-1).astype(float)
        declared = factor * (Wabs @ holds0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(declared > 0, diff / declared, np.where(diff > 0, np.inf, 0.0))
        worst = max(worst, float(ratio.max()))
    return worst


#: the replay of each verify study's algorithm (theorem id -> :data:`REPLAYS` name)
STUDY_REPLAYS: dict[str, str] = {
    "nonconvex.clipped_sgd": "dp_sgd", "nonconvex.normalized_sgd": "dp_nsgd",
    "nonconvex.tree_momentum_nsgd": "tree_momentum_nsgd",
    "nonconvex.sensitivity_reduced_nsgd": "sensitivity_reduced_nsgd"}
#: mutants that change what a noiseless replay sees (the others scale noise or step sizes,
#: which the replay sets to zero or does not use: it replays the correct code for them)
REPLAY_MUTATIONS: tuple[str, ...] = ("scaled_contribution", "skip_clipping", "cyclic_batches",
                                     "unshuffled")


def study_replay(theorem: str, mutation: str | None = None, seed: int = 0) -> list[Verdict]:
    """The replay rows of the verify study of ``theorem`` (none when its algorithm records no
    transcript), on the study's mutant when it is one the replay can see."""
    algorithm = STUDY_REPLAYS.get(theorem)
    if algorithm is None:
        return []
    return replay(algorithm, seed=seed,
                  mutation=mutation if mutation in REPLAY_MUTATIONS else None)
