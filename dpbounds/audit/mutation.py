"""Under-noised copies of the algorithms, for mutation testing of the audit.

:func:`scaled_noise` multiplies the scale of every noise draw the algorithms make (Gaussian,
Laplace and exponential draws of :class:`~dpbounds.backend.TrialRandom`) by a factor, while
everything else — calibration, ledger, mini-batches — stays as it is. A run inside
``scaled_noise(0.5)`` is the algorithm with its calibrated σ halved that still claims the
original ε: a copy the audit must flag. Sampling draws (uniform, permutations, subsets,
integers) are untouched, so the mutant sees the same mini-batches.

It patches the class for the duration of the ``with`` block, for the calling thread only
(:func:`dpbounds._patching.thread_patch`: other threads run the real algorithm meanwhile): a
testing tool, not something an algorithm should ever run under.

Example
-------
>>> from dpbounds.backend import TrialRandom
>>> from dpbounds.audit.mutation import scaled_noise
>>> with scaled_noise(0.5):
...     a = TrialRandom(0, 1).normal((), scale=2.0)
>>> b = TrialRandom(0, 1).normal((), scale=1.0)
>>> bool(a[0] == b[0])
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpbounds._patching import thread_patch
from dpbounds._validation import check_finite, did_you_mean
from dpbounds.backend import TrialRandom
from dpbounds.privacy import Neighbouring

__all__ = ["MUTANTS", "Mutant", "mutant_names", "scaled_noise"]


@contextmanager
def patched_method(owner: Any, name: str, make: Callable[[Any], Any], value: Any = None
                   ) -> Iterator[Any]:
    """Within the block ``owner.name`` is ``make(original)`` for the calling thread only
    (:func:`dpbounds._patching.thread_patch`; restored on exit); the block gets ``value``
    (e.g. the list a recording patch fills)."""
    with thread_patch(owner, name, make):
        yield value


_patched = patched_method


#: the largest noise factor a mutation takes (a million times the noise is private beyond any
#: audit's resolution; far larger ones overflow the statistics' products)
MAX_NOISE_FACTOR = 1e6


@contextmanager
def scaled_noise(factor: float) -> Iterator[None]:
    """Within the block, every noise scale passed to ``TrialRandom.normal``/``laplace``/
    ``exponential`` is multiplied by ``factor`` (``>= 0``; 1 changes nothing)."""
    factor = check_finite("noise_factor", factor)
    if not 0.0 <= factor <= MAX_NOISE_FACTOR:  # one range at both ends (fuzz round 7)
        # 1e300 overflowed the audit's statistics (products of releases), which then read
        # "consistent" with numpy's warnings leaking
        raise ValueError(f"noise_factor must lie in [0, {MAX_NOISE_FACTOR:g}], got {factor:g}")
    if factor == 1.0:
        yield
        return

    def make(original: Any) -> Any:
        def _scaled(self: TrialRandom, base: Any, scale: Any, ndim_extra: int) -> Any:
            return original(self, base, scale * factor, ndim_extra)
        return _scaled

    with _patched(TrialRandom, "_scaled", make):
        yield


@contextmanager
def shared_node_count_no_log() -> Iterator[None]:
    """Within the block the privacy helper's tree node count
    (:func:`dpbounds.privacy.tree.max_nodes_per_sample`, ``max_formed_node_load``) returns
    ``epochs``: one node per occurrence, its log T levels dropped -- a defect in a helper the
    algorithms and any check calling it share (the algorithms import it at call time).

    ``verify``'s ``shared_node_count_no_log`` mutant. Not in :data:`MUTANTS`: on the audit's
    pairs (one record, so ``E = T`` and one node per step) it changes nothing (measured: mu_hat
    1.43-1.49 against mu_claim 1.522 on tree_momentum_nsgd, _T3, _T8 and
    sensitivity_reduced_nsgd, --quick)."""
    from dpbounds.privacy import tree

    def make(inner: Any) -> Any:
        def no_log(n: Any, epochs: Any, method: str, formed: bool) -> int:
            inner(n, epochs, method, formed)  # its argument checks stay
            return max(1, int(epochs))
        return no_log

    with _patched(tree, "_node_count", make):
        yield


@contextmanager
def shared_node_sensitivity_half() -> Iterator[None]:
    """Within the block the privacy helper's momentum node sensitivity
    (:func:`dpbounds.privacy.tree.momentum_node_sensitivity`) returns half its value: both
    tree methods calibrate *and* account with it (their ledgers agree with the run), a defect
    in a helper the algorithms and any check calling it share (they import it at call time).

    ``verify``'s ``shared_node_sensitivity_half`` mutant (stop 71: Algorithm 2's quick study
    passed it, its ledger rows calling the same helper; the studies now take Delta from
    :func:`dpbounds.verify.tree_load.node_sensitivity_series`). Not in :data:`MUTANTS`: the
    tree audits already catch a halved sensitivity through their noise."""
    from dpbounds.privacy import tree

    def make(inner: Any) -> Any:
        def half(*args: Any, **kwargs: Any) -> float:
            return 0.5 * inner(*args, **kwargs)
        return half

    with _patched(tree, "momentum_node_sensitivity", make):
        yield


@contextmanager
def shared_laplace_half_sensitivity() -> Iterator[None]:
    """Within the block the privacy helper's subsampled Laplace step
    (:meth:`~dpbounds.privacy.mechanisms.SubsampledLaplaceMechanism.kuru`) is built with the
    mini-batch mean's L1 sensitivity read as ``S_1/(2m)`` (ledger and calibration both read
    it) and the Laplace momentum loop's common scale factor is halved (what that calibration
    gives without its ``>= 1`` floor): every Laplace scale halved, the run's ledger agreeing.

    ``verify``'s ``laplace_half_sensitivity`` mutant (a defect the algorithm and a check
    calling the helper share)."""
    import importlib

    from dpbounds.privacy.mechanisms import SubsampledLaplaceMechanism as Sub

    mod = importlib.import_module("dpbounds.algorithms.momentum")  # the module, not a function

    def make_kuru(inner: Any) -> Any:  # inner: the classmethod bound to Sub
        def kuru(cls: Any, sensitivity_function: float, scale: float, n: int, m: int) -> Any:
            return inner.__func__(cls, sensitivity_function / 2.0, scale, n, m)
        return classmethod(kuru)

    def make_factor(inner: Any) -> Any:
        def factor(*args: Any) -> float:
            return 0.5 * float(inner(*args))
        return factor

    with _patched(mod, "_scale_factor", make_factor), _patched(Sub, "kuru", make_kuru):
        yield


# ----------------------------------------------------------------------------------------
# the mutant zoo: copies of the algorithms with bugs that shipped in real code
# ----------------------------------------------------------------------------------------
def _scaled_laplace(factor: float) -> Any:
    """Within the block, only Laplace draws have their scale multiplied by ``factor``."""
    def make(original: Any) -> Any:
        def laplace(self: TrialRandom, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
            return original(self, shape, scale * factor, **kw)
        return laplace

    return _patched(TrialRandom, "laplace", make)


def _realised_batch(batch_size: int) -> Any:
    """Poisson DP-SGD/NSGD normalised by the realised batch size ``|B|`` instead of the
    expected ``B`` (the noise stays calibrated for ``B``): Opacus issue #571."""
    import importlib

    module = importlib.import_module("dpbounds.algorithms.dp_sgd")  # the module, not the function

    def make(original: Any) -> Any:
        def batch_sum(objective: Any, x: Any, sampler: Any, q: float, *args: Any) -> Any:
            seen: list[Any] = []  # the membership uniforms the original draws
            draw = sampler.uniform
            def uniform(*a: Any, **k: Any) -> Any:  # draw, and keep what was drawn
                seen.append(draw(*a, **k))
                return seen[-1]

            sampler.uniform = uniform
            try:
                total = original(objective, x, sampler, q, *args)
            finally:
                del sampler.uniform
            xp = objective.xp
            realised = xp.astype(xp.maximum(xp.sum(xp.astype(seen[0] < q, xp.int64), axis=1),
                                            1), total.dtype)
            return total * (batch_size / realised)[:, None]  # the caller divides by B
        return batch_sum

    return _patched(module, "_poisson_batch_sum", make)


def _within(context: Callable[..., Any], function: Callable[..., Any], *args: Any
            ) -> Callable[..., Any]:
    def run(objective: Any, **kwargs: Any) -> Any:
        with context(*args):
            return function(objective, **kwargs)
    run.__name__ = getattr(function, "__name__", "mutant")
    return run


@dataclass(frozen=True)
class Mutant:
    """A copy of an algorithm with one known bug; its ledger still claims the original ε.

    ``applies(spec, relation)`` says where the bug makes sense; ``make(spec, setting)``
    returns the setting to audit it in (usually unchanged) and the mutated function.
    """

    name: str
    description: str
    source: str
    applies: Callable[[Any, Neighbouring], bool]
    make: Callable[[Any, Any], tuple[Any, Callable[..., Any]]]


#: Audits whose noise is not drawn through TrialRandom (exact integer samplers): the
#: patches of this module cannot reach it, so no mutant applies.
_OWN_SAMPLER = ("dp_gd_laplace_grid",)


def _patchable(spec: Any, relation: Neighbouring) -> bool:
    return spec.name not in _OWN_SAMPLER


#: Audits whose pair is not a :class:`~dpbounds.audit.neighbours.LinearObjective` (Huber SVM
#: records): the data-dependent mutant reads the records' gradients, which they do not expose.
_NOT_LINEAR = ("dp_agd", "objective_perturbation")


def _data_dependent_applies(spec: Any, relation: Neighbouring) -> bool:
    return spec.delta > 0.0 and spec.name not in _NOT_LINEAR


def _is_laplace(spec: Any, relation: Neighbouring) -> bool:
    return spec.delta == 0.0 and _patchable(spec, relation)


def _half(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    return setting, _within(scaled_noise, spec.function, 0.5)


def _laplace_std(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    # laprnd(b) draws a Laplace of standard deviation b, i.e. scale b / sqrt(2)
    return setting, _within(_scaled_laplace, spec.function, 2.0 ** -0.5)


def _nsgd_sigma_r(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    # g / (||g|| + r) has norm < 1, so sensitivity 1 (replace-one 2); the patch used sigma * r
    kw = setting.kwargs  # the notation's name, or the deprecated alias a setting may still use
    return setting, _within(scaled_noise, spec.function, float(kw.get("regulariser", kw.get("r"))))


#: Public size and expected batch of the realised-batch mutant's audit: q = 1/2, and the one
#: record of D is a batch of 1 where 10 are expected (the bug scales its signal by 10).
REALISED_PUBLIC_N, REALISED_BATCH = 20, 10


def _realised(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    kwargs = dict(setting.kwargs, public_n=REALISED_PUBLIC_N, batch_size=REALISED_BATCH)
    new = replace(setting, kwargs=kwargs,
                  pair_description=setting.pair_description
                  + f"; public_n = {REALISED_PUBLIC_N}, batch {REALISED_BATCH} (q = 1/2)")
    return new, _within(_realised_batch, spec.function, REALISED_BATCH)


def _data_dependent(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    def run(objective: Any, **kwargs: Any) -> Any:
        # sigma scaled by the clipped batch sum's norm over its bound (floored at 5%: the
        # code under test guards a zero scale)
        c = np.asarray(objective.gradients, dtype=float)
        clip = float(kwargs.get("clip_threshold", kwargs.get("clip_norm", 1.0)))
        norms = np.linalg.norm(c, axis=1, keepdims=True)
        clipped = c * np.minimum(1.0, clip / np.maximum(norms, 1e-300))
        factor = max(0.05, float(np.linalg.norm(clipped.sum(axis=0))) / clip)
        with scaled_noise(factor):
            return spec.function(objective, **kwargs)
    return setting, run


#: The mutant zoo, by name.
MUTANTS: dict[str, Mutant] = {m.name: m for m in (
    Mutant("sigma/2", "every noise scale halved (Gaussian sigma / 2, Laplace scale / 2)",
           "synthetic", _patchable, _half),
    Mutant("nsgd_sigma_r", "DP-NSGD g/(||g||+r) with noise sigma * r instead of sigma "
           "(sensitivity taken as r)", "a public NSGD patch for Opacus",
           lambda spec, rel: spec.name == "dp_nsgd", _nsgd_sigma_r),
    Mutant("realised_batch", "Poisson sampling normalised by the realised batch size |B| "
           "instead of the expected B (noise calibrated for B)", "Opacus issue #571",
           lambda spec, rel: spec.name in ("dp_sgd", "dp_nsgd") and rel is Neighbouring.ADD_REMOVE,
           _realised),
    Mutant("replace_one_as_C", "replace-one calibrated for sensitivity C instead of 2C "
           "(noise halved)", "dp_accounting issue #378",
           lambda spec, rel: rel is Neighbouring.REPLACE_ONE and _patchable(spec, rel), _half),
    Mutant("laplace_std", "Laplace parameterised by its standard deviation (scale / sqrt 2)",
           "Kuru et al. reference code, laprnd", _is_laplace, _laplace_std),
    Mutant("data_dependent", "noise scale computed from the batch: sigma * ||clipped batch "
           "sum|| / C (zero when records cancel; floored at 5%)", "synthetic, a common bug",
           _data_dependent_applies, _data_dependent),
)}


@dataclass(frozen=True)
class AppliedMutant:
    """A mutant bound to one audit: its name, setting transform and function."""

    name: str
    new_setting: Any
    function: Callable[..., Any]


def mutant_names() -> tuple[str, ...]:
    """Names of :data:`MUTANTS`."""
    return tuple(MUTANTS)


def get_mutant(name: str, spec: Any, relation: Neighbouring, setting: Any) -> AppliedMutant:
    """The mutant ``name`` applied to ``spec`` under ``relation`` (``ValueError`` when the
    name is unknown or the bug does not apply to this algorithm)."""
    if name not in MUTANTS:
        raise ValueError(f"mutant must be one of {sorted(MUTANTS)}, got {name!r}"
                         f"{did_you_mean(name, MUTANTS)}")
    mut = MUTANTS[name]
    if not mut.applies(spec, relation):
        raise ValueError(f"mutant {name!r} does not apply to {spec.name} ({relation.value}): "
                         f"{mut.description}")
    new, function = mut.make(spec, setting)
    return AppliedMutant(name, new, function)


# ----------------------------------------------------------------------------------------
# reused noise: one draw per stream, added at every step (breaker2's "correlated" mutant)
# ----------------------------------------------------------------------------------------
@contextmanager
def reused_noise() -> Iterator[None]:
    """Within the block, each :class:`~dpbounds.backend.TrialRandom` stream draws its
    Gaussian / Laplace noise of a given shape once and returns that draw (times the scale
    asked for) at every later call; block draws (``normal_steps``) repeat the first step.

    Every draw keeps its marginal law, so each step alone is correctly noised; the steps'
    noises are identical, so the difference of two releases is noise free. Trial ``k``
    still depends only on its own stream. The cache lives for the block (one algorithm
    call), which keeps the streams alive so that their ids are not reused."""
    cache: dict[tuple[Any, ...], tuple[TrialRandom, Any]] = {}

    def once(kind: str) -> Callable[[Any], Any]:
        def make(original: Any) -> Any:
            def draw(self: TrialRandom, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
                shp = self._shape(shape)
                key = (id(self), kind, shp)
                if key not in cache:
                    cache[key] = (self, original(self, shape, 1.0, **kw))
                return self._scaled(cache[key][1], scale, len(shp))
            return draw
        return make

    steps_original = TrialRandom.normal_steps

    def steps_make(original: Any) -> Any:
        def normal_steps(self: TrialRandom, steps: int, shape: Any = (), scale: Any = 1.0
                         ) -> Any:
            shp = self._shape(shape)
            key = (id(self), "steps", shp)
            if key not in cache:
                cache[key] = (self, steps_original(self, 1, shape, 1.0))
            unit = cache[key][1]
            base = self.xp.broadcast_to(unit, (unit.shape[0], steps, *unit.shape[2:])) * 1.0
            s = np.asarray(scale, dtype=float)
            if s.ndim == 1:  # per-step scales
                s = s.reshape((1, steps) + (1,) * (base.ndim - 2))
                return base * self.xp.asarray(s)
            return self._scaled(base, scale, len(shp) + 1)
        return normal_steps

    with (_patched(TrialRandom, "normal", once("normal")),
          _patched(TrialRandom, "laplace", once("laplace")),
          _patched(TrialRandom, "normal_steps", steps_make)):
        yield


#: Audits of the reused-noise mutant: each gets a pair in which the differing record is
#: absent from some steps (two records, one per step; under add/remove Poisson sampling at
#: q = 1/2), so the released per-step quantities carry a signal that changes from step to
#: step. On the default pairs (one record, in
#: every step, a constant signal) the bug is *less* distinguishing than the real algorithm:
#: the transcript is one Gaussian release repeated, mu_claim / sqrt(T)-GDP.
REUSED_NOISE_AUDITS = ("dp_sgd", "dp_nsgd", "tree_momentum_nsgd_T3", "tree_momentum_nsgd_T8")


#: Public size of the add/remove reused-noise pair (batch 1: Poisson rate 1/2).
REUSED_PUBLIC_N = 2


def _reused_applies(spec: Any, relation: Neighbouring) -> bool:
    return spec.name in REUSED_NOISE_AUDITS and relation in spec.relations


def _two_record_pair(dim: int, radius: float, relation: Neighbouring) -> tuple[Any, Any]:
    """Replace-one: D = {+r e1, +r e1}, D' = {+r e1, -r e1} (the second record flipped);
    add/remove: D = {+r e1}, D' = {+r e1, -r e1}."""
    from dpbounds.audit.neighbours import LinearObjective

    c = np.zeros((2, dim))
    c[:, 0] = radius
    cp = c.copy()
    cp[1, 0] = -radius
    # the records' domain declared (norm r in both norms), as the other pairs do
    # (neighbours._domain): a plug-in's sensitivity that reads f.gradient_bound then gets the
    # pair's public bound, not each data set's largest record, and says nothing (the audit of
    # notebook 07 printed the data-derived warning twice)
    return (LinearObjective(c if relation is Neighbouring.REPLACE_ONE else c[:1],
                            l1_radius=radius, l2_radius=radius),
            LinearObjective(cp, l1_radius=radius, l2_radius=radius))


def _reused(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    radius = float(np.max(np.abs(setting.pair[0].gradients)))
    kwargs = dict(setting.kwargs)
    relation = (Neighbouring.ADD_REMOVE if "public_n" in kwargs
                else Neighbouring.REPLACE_ONE)
    text = "two records, one per step"
    pair_text = "D = {+r e1, +r e1}, D' = {+r e1, -r e1}"
    if "batch_size" in kwargs:  # one record per step (the setting's batch may be its n)
        kwargs["batch_size"] = 1
    if relation is Neighbouring.ADD_REMOVE:  # Poisson at q = B / public_n = 1/2
        kwargs["public_n"] = REUSED_PUBLIC_N
        text = f"Poisson sampling, public_n = {REUSED_PUBLIC_N}, batch 1"
        pair_text = "D = {+r e1}, D' = {+r e1, -r e1}"
    if "epochs" in kwargs:  # the white-box tree: n = 2, so T = 2 E; keep T >= the audit's
        kwargs["epochs"] = -(-int(kwargs["epochs"]) // 2)
        text += f", T = {2 * kwargs['epochs']}"
    scorers = tuple(setting.scorers or ("linear",))
    statistic = setting.statistic
    if "epochs" in kwargs:
        statistic = f"the tree's {2 * kwargs['epochs']} noisy nodes (white-box)"
    new = replace(setting, pair=_two_record_pair(setting.pair[0].gradients.shape[1], radius,
                                                 relation),
                  kwargs=kwargs, scorers=(*scorers, "increments"), statistic=statistic,
                  pair_description=f"{pair_text}, r = {radius:g} ({text}; the reused-noise "
                  "audit)")
    return new, _within(reused_noise, spec.function)


MUTANTS["reused_noise"] = Mutant(
    "reused_noise", "the noise drawn once and added again at every step (right marginal, "
    "identical across steps: step differences are noise free)",
    "breaker2's 'correlated' mutant (bench/adversary_results.md)", _reused_applies, _reused)


# ----------------------------------------------------------------------------------------
# issue 34 item 5: bugs that only pairs with n > 1, B > 1, a step size other than 1 and a
# canary in several coordinates can see (the batched audits of audit.settings.sgd)
# ----------------------------------------------------------------------------------------
def _scalar_step(setting: Any) -> float | None:
    step = setting.kwargs.get("step_size")
    return float(step) if isinstance(step, (int, float)) else None


def _sgd_family(spec: Any, relation: Neighbouring) -> bool:
    return spec.name in ("dp_sgd", "dp_nsgd", "dp_sgd_full_batch", "dp_nsgd_full_batch",
                         "dp_sgd_batched", "dp_nsgd_batched", "dp_sgd_batched_attaining",
                         "dp_sgd_d4", "dp_nsgd_d4")


def _gaussian_step_family(spec: Any, relation: Neighbouring) -> bool:
    """The DP-SGD family and Gaussian DP-GD's d = 4 pair (step size 3, d = 4): the mutants
    that need no sampler (the noise moved to the parameter, shared across the coordinates or
    across the runs)."""
    return _sgd_family(spec, relation) or spec.name == "dp_gd_gaussian_d4"


@contextmanager
def wrong_sampling_rate() -> Iterator[None]:
    """DP-SGD / DP-NSGD's accountant fed ``q = 1 / n`` (the batch size forgotten): the noise
    and the ledger are for ``1/n`` while the run samples at ``B/n`` (Poisson: the run's own
    rate is kept)."""
    import importlib

    module = importlib.import_module("dpbounds.algorithms.dp_sgd")  # the module, not the function

    def make(original: Any) -> Any:
        def noise(*args: Any, batch_size: int, n: int, **kw: Any) -> Any:
            out = original(*args, batch_size=1, n=n, **kw)
            return replace(out, sampling_rate=batch_size / n)  # the run still samples at B/n
        return noise

    with _patched(module, "noisy_sgd_noise", make):
        yield


def _wrong_rate(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    return setting, _within(wrong_sampling_rate, spec.function)


def _parameter_noise(spec: Any, setting: Any) -> tuple[Any, Callable[..., Any]]:
    # x - eta g - sigma z (noise added to the parameter, step size forgotten) has the law of
    # x - eta (g + (sigma / eta) z): the noise scaled by 1 / eta
    step = _scalar_step(setting)
    if step is None:
        raise ValueError(f"mutant 'parameter_noise' needs a scalar step size; {spec.name} has "
                         "none")
    return setting, _within(scaled_noise, spec.function, 1.0 / step)


@contextmanager
def coordinate_noise() -> Iterator[None]:
    """Within the block every Gaussian draw of :class:`~dpbounds.backend.TrialRandom` is one
    number per trial and step, repeated across the coordinates (``N(0, s^2)`` marginals, the
    coordinates identical: the noise lies on the diagonal ``(1, ..., 1)``)."""
    def first(out: Any) -> Any:  # the first coordinate's draw in every coordinate
        return out[..., :1] + 0.0 * out

    def make_normal(original: Any) -> Any:
        def normal(self: TrialRandom, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
            out = original(self, shape, scale, **kw)
            return out if out.ndim < 2 else first(out)
        return normal

    def make_steps(original: Any) -> Any:
        def normal_steps(self: TrialRandom, steps: int, shape: Any = (), scale: Any = 1.0
                         ) -> Any:
            out = original(self, steps, shape, scale)
            return out if out.ndim < 3 else first(out)
        return normal_steps

    with (_patched(TrialRandom, "normal", make_normal),
          _patched(TrialRandom, "normal_steps", make_steps)):
        yield


@contextmanager
def trial_noise() -> Iterator[None]:
    """Within the block every Gaussian draw of :class:`~dpbounds.backend.TrialRandom` is the
    first trial's, repeated for every trial (one noise realisation shared by all runs of a
    call; the sampling draws stay per trial)."""
    def share(out: Any) -> Any:
        return out if out.ndim == 0 else out[:1] + 0.0 * out

    def make_normal(original: Any) -> Any:
        def normal(self: TrialRandom, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
            return share(original(self, shape, scale, **kw))
        return normal

    def make_steps(original: Any) -> Any:
        def normal_steps(self: TrialRandom, steps: int, shape: Any = (), scale: Any = 1.0
                         ) -> Any:
            return share(original(self, steps, shape, scale))
        return normal_steps

    with (_patched(TrialRandom, "normal", make_normal),
          _patched(TrialRandom, "normal_steps", make_steps)):
        yield


MUTANTS.update({m.name: m for m in (
    Mutant("wrong_sampling_rate", "the accountant fed q = 1/n instead of B/n (the batch size "
           "forgotten): noise and ledger for 1/n, the run samples at B/n",
           "synthetic, a common bug", _sgd_family, _wrong_rate),
    Mutant("parameter_noise", "the noise added to the parameter after the step (x - eta g - "
           "sigma z): the step size forgotten on the noise (sigma / eta on the gradient)",
           "synthetic, a common bug", _gaussian_step_family, _parameter_noise),
    Mutant("coordinate_noise", "one Gaussian draw per step reused across the coordinates "
           "(right marginals; the noise on the diagonal)", "synthetic, a common bug",
           _gaussian_step_family, lambda spec, setting: (setting, _within(coordinate_noise,
                                                                spec.function))),
    Mutant("trial_noise", "one noise realisation reused across the runs (trials) of a call; "
           "the sampling stays per run", "synthetic, a seeding bug", _gaussian_step_family,
           lambda spec, setting: (setting, _within(trial_noise, spec.function))),
)})


# ----------------------------------------------------------------------------------------
# issue 34 item 5: the tree's node noise in d > 1 (the white-box tree_momentum_nsgd_T3_d4
# pair; on the d = 1 pairs of the tree audits both are the correct run bit for bit)
# ----------------------------------------------------------------------------------------
@contextmanager
def noise_norm_sigma() -> Iterator[None]:
    """Within the block every Gaussian draw of :class:`~dpbounds.backend.TrialRandom` with a
    coordinate axis of ``d > 1`` entries is divided by ``sqrt(d)``: ``sigma`` read as the
    noise vector's norm (``E ||z||^2 = sigma^2``) instead of the per-coordinate standard
    deviation. Draws of one coordinate are unchanged (``d = 1``: the correct run)."""
    def shrink(out: Any) -> Any:
        d = int(out.shape[-1])
        return out if d == 1 else out / math.sqrt(d)

    def make_normal(original: Any) -> Any:
        def normal(self: TrialRandom, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
            out = original(self, shape, scale, **kw)
            return out if out.ndim < 2 else shrink(out)
        return normal

    def make_steps(original: Any) -> Any:
        def normal_steps(self: TrialRandom, steps: int, shape: Any = (), scale: Any = 1.0
                         ) -> Any:
            out = original(self, steps, shape, scale)
            return out if out.ndim < 3 else shrink(out)
        return normal_steps

    with (_patched(TrialRandom, "normal", make_normal),
          _patched(TrialRandom, "normal_steps", make_steps)):
        yield


#: The tree audits (Tran & Cutkosky's Algorithms 1 and 2): their only Gaussian draws are
#: the node noises (one ``(trials, steps, d)`` block per run of steps: row t is the noise of
#: the node formed at step t), so a patch of the draws is a patch of the node noise.
_TREE_AUDITS = ("tree_momentum_nsgd", "sensitivity_reduced_nsgd", "tree_momentum_nsgd_T3",
                "tree_momentum_nsgd_T8", "tree_momentum_nsgd_T3_signs",
                "tree_momentum_nsgd_T3_d4")


def _tree_family(spec: Any, relation: Neighbouring) -> bool:
    return spec.name in _TREE_AUDITS


MUTANTS.update({m.name: m for m in (
    Mutant("node_noise_norm_sigma", "the tree's node noise divided by sqrt(d) (sigma read as "
           "the norm of the node's noise vector, not its per-coordinate std)",
           "synthetic, a common bug (bench/adversary_mutants_2.py's noise_norm_sigma)",
           _tree_family, lambda spec, setting: (setting, _within(noise_norm_sigma,
                                                                 spec.function))),
    Mutant("node_coordinate_noise", "one Gaussian draw per tree node shared by all its "
           "coordinates (right marginals; the node noise on the diagonal)",
           "synthetic, a common bug", _tree_family,
           lambda spec, setting: (setting, _within(coordinate_noise, spec.function))),
)})
