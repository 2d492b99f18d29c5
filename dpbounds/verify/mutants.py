r"""Mutants (negative controls) and the noise tap of the scaling studies.

A mutant is a correct algorithm with one defect of a kind real bugs take, applied from outside
the algorithm (wrapping its arguments, or patching :class:`~dpbounds.backend.TrialRandom` as
:func:`dpbounds.audit.mutation.scaled_noise` does), while the study keeps the *claimed*
:math:`(\varepsilon,\delta)` and the correct hyper-parameters for its bounds and exact values:

* ``noise_d`` — runs with :math:`\varepsilon/\sqrt d` (noise :math:`\sqrt d` too large; the
  ledger says so);
* ``noise_sqrt2`` — every noise draw :math:`\sqrt2` too small, calibration and ledger
  unchanged (the tree noise of the issue; it applies to every algorithm);
* ``frozen`` — the step size times :math:`10^{-9}` (an algorithm that does not move);
* ``nsgd_noise_r`` — DP-NSGD adds noise :math:`\sigma r` instead of :math:`\sigma` although each
  contribution :math:`g/(\lVert g\rVert+r)` has norm :math:`<1` (sensitivity 1, not ``r``);
  it applies to Yang et al.'s NSGD study only;
* ``node_count_minus_1`` — Algorithm 1 charges one formed node too few
  (:func:`~dpbounds.algorithms.tree_momentum.algorithm_1_node_count` minus one: sigma
  :math:`\sqrt{(K-1)/K}` too small, ledger consistent with it); Tran & Cutkosky Algorithm 1
  only;
* ``shared_node_count_no_log`` — the shared privacy helper's node count
  (:func:`dpbounds.privacy.tree.max_nodes_per_sample` and ``max_formed_node_load``) drops its
  :math:`\log T` levels and charges one node per epoch: a defect in code the algorithm *and*
  a check calling the helper share; both tree studies recompute the count independently
  (:mod:`dpbounds.verify.tree_load`); Tran & Cutkosky Algorithms 1 and 2;
* ``shared_node_sensitivity_half`` — the shared privacy helper's node sensitivity
  (:func:`dpbounds.privacy.tree.momentum_node_sensitivity`) returns half its value: both
  sigmas halve and the run's ledger agrees; both tree studies take Delta from their own
  series (:func:`dpbounds.verify.tree_load.node_sensitivity_series`); Tran & Cutkosky
  Algorithms 1 and 2;
* ``steps_off_by_one`` — DP-SGD / DP-NSGD calibrate their noise for ``T - 1`` steps and run
  ``T`` (sigma too small by ~1/(2T): caught by the ledger's tolerance below one step's
  share); Yang et al.'s studies only;
* ``scaled_contribution`` — DP-SGD's clipped per-example contribution scaled by 2 after
  clipping, its noise still for norm ``C`` (sensitivity twice the declared; it makes the
  utility *better*): caught by the replay on neighbouring data
  (:mod:`dpbounds.verify.replay`); DP-SGD only;
* ``skip_clipping`` — no per-sample clipping: DP-SGD and Algorithm 1 without their clip,
  DP-NSGD without its normalisation (the raw gradient is the contribution; the noise still
  calibrated for the clip threshold or the unit bound); caught by the studies' clipping
  probes, one step where the clip binds on most samples (``clip_exact``, ``normalise_exact``);
  Yang et al.'s two studies and Tran & Cutkosky Algorithms 1 and 2 (Algorithm 2 without
  either of its clips).
* ``cyclic_batches`` — DP-SGD / DP-NSGD take the batches of a fixed cyclic order and account
  them as sampled without replacement (:func:`dpbounds.verify.sampling.cyclic_batches`):
  caught by the transcript's sampling tests (:mod:`dpbounds.verify.reaccount`); Yang et al.'s
  studies only;
* ``unshuffled`` — Algorithms 1 and 2 take the data in stored order instead of a uniform
  permutation (:func:`dpbounds.verify.sampling.unshuffled`): caught by the same tests.
* ``laplace_half_sensitivity`` — the Laplace methods (DP heavy ball, DP-NAG, DP-MASG, the
  Laplace DP-GD) calibrate *and* account with the mini-batch mean's L1 sensitivity read as
  :math:`S_1/(2m)` (a defect in the shared privacy helper): every Laplace scale is halved and
  the run's own ledger agrees with it; caught by the transcript's independent pure-DP
  re-accounting (:func:`dpbounds.verify.reaccount.laplace_epsilon`, about twice the claim)
  and by the studies' ledger checks against Kuru (12).
* ``masg_no_restart`` — DP-MASG keeps its momentum across the stage changes instead of
  restarting it (``restart=False``; the paper is silent, the reference code restarts): the
  same noise and ledger, other dynamics; caught by the DP-MASG study's exact expected error
  (measured on the quadratic, 1500 trials: 2 to 110 standard errors off, T = 36-204; correct
  runs within 1.5); DP-MASG only.

:func:`noise_tap` records what the run *drew*: the energy :math:`\sum\xi^2` of every noise draw
(Gaussian, Laplace) per trial, compared by the studies with the energy the ledger's noise
implies (a two-sided ``== exact`` verdict with the exact variance of a sum of squares).
:func:`permutation_tap` hands every permutation the run draws to a callback (the tree studies
count each sample's realised node load from them, :class:`~dpbounds.verify.tree_load.
RealisedLoad`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dpbounds._patching import thread_patch
from dpbounds.audit.mutation import (
    scaled_noise,
    shared_laplace_half_sensitivity,
    shared_node_count_no_log,
    shared_node_sensitivity_half,
)
from dpbounds.backend import TrialRandom, to_numpy

__all__ = ["MUTATIONS", "masg_restart", "mutated", "noise_tap", "permutation_tap",
           "step_factor"]

#: mutants a study can run (see the module docstring)
MUTATIONS: tuple[str, ...] = ("noise_d", "noise_sqrt2", "frozen", "nsgd_noise_r",
                              "node_count_minus_1", "skip_clipping", "shared_node_count_no_log",
                              "shared_node_sensitivity_half", "steps_off_by_one",
                              "scaled_contribution", "cyclic_batches", "unshuffled",
                              "laplace_half_sensitivity", "masg_no_restart")
#: The algorithms each algorithm-specific mutation patches (a mutation not listed applies to
#: every study). Declared, so that a study refuses a mutation before it plans or imports
#: anything (``verify tran_cutkosky.alg1 --mutation masg_no_restart`` planned for 4.2 CPU-s
#: before its one-line error; fuzz round 8), and checked against :func:`mutated` by machine
#: (``tests/test_edges_stop74.py``).
MUTATION_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "nsgd_noise_r": ("dp_nsgd",),
    "node_count_minus_1": ("tree_momentum_nsgd",),
    "shared_node_count_no_log": ("tree_momentum_nsgd", "sensitivity_reduced_nsgd"),
    "shared_node_sensitivity_half": ("tree_momentum_nsgd", "sensitivity_reduced_nsgd"),
    "steps_off_by_one": ("dp_sgd", "dp_nsgd"),
    "scaled_contribution": ("dp_sgd",),
    "cyclic_batches": ("dp_sgd", "dp_nsgd"),
    "unshuffled": ("tree_momentum_nsgd", "sensitivity_reduced_nsgd"),
    "laplace_half_sensitivity": ("dp_heavy_ball", "dp_nag", "dp_masg", "dp_gd"),
    "masg_no_restart": ("dp_masg",),
    "skip_clipping": ("dp_sgd", "dp_nsgd", "tree_momentum_nsgd", "sensitivity_reduced_nsgd"),
}


def mutation_refusal(mutation: str | None, algorithms: tuple[str, ...]) -> str | None:
    """Why ``mutation`` cannot run on a study whose runs use ``algorithms`` (none of them is
    one it patches), or ``None``."""
    fits = MUTATION_ALGORITHMS.get(mutation or "")
    if fits is None or not algorithms or any(a in fits for a in algorithms):
        return None
    return (f"mutation {mutation!r} does not apply to {' or '.join(algorithms)} (it patches "
            f"{', '.join(fits)})")


#: the step-size factor of the ``frozen`` mutant
FROZEN = 1e-9
#: the clip threshold of the ``skip_clipping`` mutant (no gradient reaches it)
_NO_CLIP = 1e300


def eps_run(point: dict, mutation: str | None) -> float:
    """The epsilon the (possibly mutated) algorithm is run with."""
    eps = float(point["eps"])
    return eps / math.sqrt(float(point["d"])) if mutation == "noise_d" else eps


def step_factor(mutation: str | None) -> float:
    """Factor on the algorithm's step size."""
    return FROZEN if mutation == "frozen" else 1.0


def masg_restart(mutation: str | None) -> bool:
    """DP-MASG's ``restart`` (``False`` under ``masg_no_restart``)."""
    return mutation != "masg_no_restart"


@contextlib.contextmanager
def mutated(mutation: str | None, algorithm: str, r: float | None = None) -> Iterator[None]:
    """The noise-scaling part of ``mutation`` around a call of ``algorithm``."""
    if mutation == "noise_sqrt2":
        with scaled_noise(1.0 / math.sqrt(2.0)):
            yield
    elif mutation == "nsgd_noise_r":
        if algorithm != "dp_nsgd":
            raise ValueError(f"mutation 'nsgd_noise_r' does not apply to {algorithm} (it is "
                             "DP-NSGD's: study nonconvex.normalized_sgd)")
        if r is None:
            raise ValueError("the nsgd_noise_r mutant needs r")
        with scaled_noise(r):
            yield
    elif mutation == "node_count_minus_1":
        if algorithm != "tree_momentum_nsgd":
            raise ValueError(f"mutation 'node_count_minus_1' does not apply to {algorithm} (it "
                             "is Algorithm 1's: study nonconvex.tree_momentum_nsgd)")
        with _node_count_minus_1():
            yield
    elif mutation == "shared_node_count_no_log":
        if algorithm not in ("tree_momentum_nsgd", "sensitivity_reduced_nsgd"):
            raise ValueError(f"mutation 'shared_node_count_no_log' does not apply to {algorithm} "
                             "(it is the tree methods': Algorithms 1 and 2)")
        with shared_node_count_no_log():
            yield
    elif mutation == "shared_node_sensitivity_half":
        if algorithm not in ("tree_momentum_nsgd", "sensitivity_reduced_nsgd"):
            raise ValueError(f"mutation 'shared_node_sensitivity_half' does not apply to "
                             f"{algorithm} (it is the tree methods': Algorithms 1 and 2)")
        with shared_node_sensitivity_half():
            yield
    elif mutation == "steps_off_by_one":
        if algorithm not in ("dp_sgd", "dp_nsgd"):
            raise ValueError(f"mutation 'steps_off_by_one' does not apply to {algorithm} (it "
                             "is DP-SGD's and DP-NSGD's: study nonconvex.clipped_sgd or "
                             "nonconvex.normalized_sgd)")
        with _steps_off_by_one():
            yield
    elif mutation == "scaled_contribution":
        if algorithm != "dp_sgd":
            raise ValueError(f"mutation 'scaled_contribution' does not apply to {algorithm} "
                             "(it is DP-SGD's: study nonconvex.clipped_sgd)")
        with _skip_clipping(scale=2.0):
            yield
    elif mutation in ("cyclic_batches", "unshuffled"):
        from dpbounds.verify import sampling

        fits = (("dp_sgd", "dp_nsgd") if mutation == "cyclic_batches"
                else ("tree_momentum_nsgd", "sensitivity_reduced_nsgd"))
        if algorithm not in fits:
            raise ValueError(f"mutation {mutation!r} does not apply to {algorithm} (it is "
                             f"{' and '.join(fits)}'s)")
        with getattr(sampling, mutation)():
            yield
    elif mutation == "laplace_half_sensitivity":
        if algorithm not in LAPLACE_METHODS:
            raise ValueError(f"mutation 'laplace_half_sensitivity' does not apply to {algorithm} "
                             f"(it is the Laplace methods': {', '.join(LAPLACE_METHODS)})")
        with shared_laplace_half_sensitivity():
            yield
    elif mutation == "masg_no_restart":
        if algorithm != "dp_masg":
            raise ValueError(f"mutation 'masg_no_restart' does not apply to {algorithm} (it is "
                             "DP-MASG's: study strongly_convex.masg)")
        yield  # the study passes restart=False (masg_restart)
    elif mutation == "skip_clipping":
        if algorithm not in ("dp_sgd", "dp_nsgd", "tree_momentum_nsgd",
                             "sensitivity_reduced_nsgd"):
            raise ValueError(f"mutation 'skip_clipping' does not apply to {algorithm} (it is "
                             "the clipped or normalised methods': study nonconvex.clipped_sgd, "
                             "nonconvex.normalized_sgd, nonconvex.tree_momentum_nsgd or "
                             "nonconvex.sensitivity_reduced_nsgd)")
        with _skip_clipping():
            yield
    else:
        yield


#: the algorithms of the Laplace momentum loop (``laplace_half_sensitivity`` applies to them)
LAPLACE_METHODS = ("dp_heavy_ball", "dp_nag", "dp_masg", "dp_gd")


@contextlib.contextmanager
def _node_count_minus_1() -> Iterator[None]:
    from dpbounds.algorithms import tree_momentum as tm

    def make(inner: Any) -> Any:
        def fewer(steps_per_epoch: int, epochs: int, method: str = "auto") -> int:
            return max(1, inner(steps_per_epoch, epochs, method) - 1)
        return fewer

    with thread_patch(tm, "algorithm_1_node_count", make):
        yield


@contextlib.contextmanager
def _steps_off_by_one() -> Iterator[None]:
    """DP-SGD / DP-NSGD's calibration accounts ``steps - 1`` steps (their shared
    ``_calibrate``, looked up at call time)."""
    import importlib

    mod = importlib.import_module("dpbounds.algorithms.dp_sgd")  # the module, not the function

    def make(inner: Any) -> Any:
        def fewer(epsilon: float, delta: float, q: float, steps: int, *args: Any) -> Any:
            return inner(epsilon, delta, q, max(1, steps - 1), *args)
        return fewer

    with thread_patch(mod, "_calibrate", make):
        yield


@contextlib.contextmanager
def _skip_clipping(scale: float | None = None) -> Iterator[None]:
    """Clipping to an infinite threshold on both of DP-SGD's paths (the compiled loops are
    switched off, so that the NumPy path, whose clipping is patched, runs), DP-NSGD's
    normalisation left out (the raw gradient is the contribution) and Algorithm 1's
    per-sample clipping (``Objective.clipped_mean_grad``) dropped; with ``scale``, clipping
    kept and the clipped contributions multiplied by ``scale`` instead."""
    import importlib

    from dpbounds.algorithms import _step_kernels as kernels

    mod = importlib.import_module("dpbounds.algorithms.dp_sgd")  # the module, not the function
    tm = importlib.import_module("dpbounds.algorithms.tree_momentum")
    from dpbounds.objectives import Objective

    clip = Objective.clipped_mean_grad  # as this thread sees it before the patches

    def no_clip_map(inner: Any) -> Any:
        def per_sample_map(xp: Any, g: Any, kind: str, param: float) -> Any:
            if scale is not None:
                return inner(xp, g, kind, param) * (scale if kind == "clip" else 1.0)
            return inner(xp, g, "clip", _NO_CLIP)  # the raw gradient, whatever the kind
        return per_sample_map

    def no_norm(inner: Any) -> Any:
        def normalized_mean_grad(self: Any, x: Any, idx: Any, r: float) -> Any:
            if scale is not None:
                return inner(self, x, idx, r)
            return clip(self, x, idx, _NO_CLIP)  # the raw gradient
        return normalized_mean_grad

    def no_clip_rows(inner: Any) -> Any:  # Algorithm 2's two clips
        def clip_rows(xp: Any, g: Any, bound: float) -> Any:
            if scale is not None:
                return scale * inner(xp, g, bound)
            return inner(xp, g, _NO_CLIP)
        return clip_rows

    def no_clip(inner: Any) -> Any:
        def clipped_mean_grad(self: Any, x: Any, idx: Any, clip: float, *args: Any,
                              **kw: Any) -> Any:
            if scale is not None:
                return scale * inner(self, x, idx, clip, *args, **kw)
            return inner(self, x, idx, _NO_CLIP, *args, **kw)
        return clipped_mean_grad

    def no_kernels(inner: Any) -> Any:
        return lambda objective, x: None

    # patched for the calling thread only (other threads run the real algorithm meanwhile)
    with (thread_patch(mod, "_per_sample_map", no_clip_map),
          thread_patch(Objective, "clipped_mean_grad", no_clip),
          thread_patch(Objective, "normalized_mean_grad", no_norm),
          thread_patch(kernels, "active", no_kernels),
          thread_patch(tm, "_clip_rows", no_clip_rows)):
        yield


class NoiseTap:
    """Per-trial energy and count of the noise draws made inside :func:`noise_tap`."""

    def __init__(self) -> None:
        self.energy: np.ndarray | None = None
        self.draws = 0

    def add(self, value: Any) -> None:
        v = np.asarray(to_numpy(value), dtype=float)
        if v.ndim == 0:
            return
        e = (v.reshape(v.shape[0], -1) ** 2).sum(axis=1)
        self.energy = e if self.energy is None else self.energy + e
        self.draws += int(v[0].size)


@contextlib.contextmanager
def permutation_tap(callback: Callable[[np.ndarray], None]) -> Iterator[None]:
    """Hand every ``TrialRandom.permutation`` draw (``(trials, n)``) to ``callback``."""
    def make(inner: Any) -> Any:
        def permutation(self: TrialRandom, n: int) -> Any:
            out = inner(self, n)
            callback(np.asarray(to_numpy(out)))
            return out
        return permutation

    with thread_patch(TrialRandom, "permutation", make):  # this thread's draws only
        yield


@contextlib.contextmanager
def noise_tap() -> Iterator[NoiseTap]:
    """Record every scaled draw of :class:`~dpbounds.backend.TrialRandom` (enter it *inside*
    a mutant's block, so that the tap sees what the mutant draws)."""
    tap = NoiseTap()

    def make(inner: Any) -> Any:
        def _scaled(self: TrialRandom, base: Any, scale: Any, ndim_extra: int) -> Any:
            out = inner(self, base, scale, ndim_extra)
            tap.add(out)
            return out
        return _scaled

    with thread_patch(TrialRandom, "_scaled", make):  # this thread's draws only
        yield tap
