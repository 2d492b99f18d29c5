r"""Where a bound says something, what it costs to go there, and the theorem's own path.

A utility bound is **informative** at a point when it is below both the trivial bound (``G``
for a gradient norm) and what an algorithm that does not move achieves (the start's value,
e.g. :math:`\lVert\nabla F(x_0)\rVert`). :func:`plan_grid` chooses a study's grid:

* ``"informative"`` (the full study's default): the study's *scale knob* (``N``; for Yang et
  al. also ``T``, whose corollary takes :math:`T\to\infty`) is raised on a geometric lattice
  until every grid point is informative, choosing the cheapest such setting; a sweep over
  ``N`` starts where the bound first drops below the floor and spans a factor 10;
* ``"path"``: a sweep over ``N``, ``d`` or ``eps`` where the bound's local log-log slope is
  within ``0.1`` of the paper's headline exponent (the regime in which the headline describes
  the bound) and every point is informative;
* ``"default grid"``: today's small grids (``--quick`` or ``--small-grid``), labelled
  vacuous where they are.

Costs come from dry plans (:meth:`~dpbounds.verify.theorems.TheoremStudy.plan_point`: the
tuned bound and the gradient evaluations of every point, no run) times a measured cost per
gradient evaluation (:func:`seconds_per_evaluation`: a short probe run of the same algorithm),
so the same planner runs more points once the per-step loop is faster. A grid over the
budget ``max_seconds`` (CPU) is narrowed (span 10, 4, 2, 1.5) and, for default trial counts,
run with fewer trials (16, 8, 4); what still does not fit loses its most expensive points,
with their estimates, unless ``allow_expensive``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds._progress import duration
from dpbounds.verify.costs import finite_number
from dpbounds.verify.problems import VerifyProblem
from dpbounds.verify.theorems import TheoremStudy

__all__ = ["MIN_TRIALS", "GridPlan", "cost_over_d", "dry_plan", "measured_fit", "plan_grid",
           "remembered_cost_over_d", "seconds_per_evaluation"]

#: largest ``N`` (and ``T``) the planner considers
_N_MAX = 10**6
_T_LATTICE = (10**4, 10**5, 10**6, 10**7)
_SLOPE_TOL = 0.1


@dataclass(frozen=True)
class GridPlan:
    """A chosen grid: values of the swept variable, the other fixed values, and why."""

    regime: str
    why: str
    values: tuple[float, ...]
    fixed: Mapping[str, float]
    bounds: tuple[float, ...] = ()
    floors: tuple[float, ...] = ()
    seconds: tuple[float, ...] = ()
    skipped: tuple[str, ...] = ()
    local_slopes: tuple[float, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(name=self.regime, why=self.why, values=list(self.values),
                    fixed=dict(self.fixed), bounds=list(self.bounds), floors=list(self.floors),
                    estimated_seconds=list(self.seconds), skipped=list(self.skipped),
                    local_slopes=list(self.local_slopes), **dict(self.extra))


#: a dry plan of a Lipschitz problem builds at most this many samples (its R and start
#: gradient are those of the full sample to sampling error; N itself enters exactly)
_PLAN_SAMPLES = 4096


def dry_plan(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float], trials: int
          ) -> dict[str, Any]:
    return dict(_cached_plan(study.theorem, spec, tuple(sorted(point.items())), trials))


@functools.lru_cache(maxsize=4096)
def _cached_plan(theorem: str, spec: VerifyProblem, point: tuple, trials: int
                 ) -> tuple[tuple[str, Any], ...]:
    from dpbounds.verify.theorems import get_study

    pt = dict(point)
    return tuple(get_study(theorem).plan_point(pt, _plan_instance(spec, pt), trials).items())


def _plan_instance(spec: VerifyProblem, point: Mapping[str, float]) -> Any:
    """The instance a dry (or lower) plan of ``point`` reads: ``N`` capped at
    ``_PLAN_SAMPLES`` but for a quadratic, whose constants are its samples' exactly."""
    n = int(point["N"])
    if spec.kind != "quadratic":
        n = min(n, _PLAN_SAMPLES)
    elif n > _PLAN_SAMPLES:  # a quadratic's N x d samples: built each time, never kept
        return spec.build(n, int(point["d"]), seed=(0, 0))
    return _built(spec, n, int(point["d"]))


@functools.lru_cache(maxsize=8)
def _built(spec: VerifyProblem, n: int, d: int) -> Any:
    """``spec.build(n, d, seed=(0, 0))``, the last few kept: a scan asks the lower plan and
    then ``is_informative`` at the same point, and each built it (522 builds, 0.9 of
    ``clipped_sgd --vary d``'s 2.9 CPU-s of planning from a cost cache). Few, and only up
    to 4,096 samples (a quadratic's larger instances are not kept): at ``d = 128`` one holds
    4 MiB. Its start is read-only (a plan only reads it)."""
    inst = spec.build(n, d, seed=(0, 0))
    inst.x0.flags.writeable = False
    return inst


def certainly_vacuous(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
                      trials: int) -> bool:
    """Whether the study's :attr:`~dpbounds.verify.studies._common.TheoremStudy.lower_plan`
    (a cheap plan whose bound is at most the dry plan's) is already vacuous at ``point``:
    then so is the point, and its dry plan is not needed. ``False`` without one."""
    if getattr(study, "lower_plan", None) is None:
        return False
    return not _informative(dict(_cached_hook(study.theorem, "lower_plan", spec,
                                              tuple(sorted(point.items())), trials)))


#: the fields of a dry plan that the cost model and the memory budget read
COST_FIELDS = ("steps", "gradient_evaluations", "memory_bytes", "trace_samples")


def cost_plan(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
              trials: int) -> dict[str, Any]:
    """The fields of ``point``'s dry plan that the cost model and the memory budget read
    (:data:`COST_FIELDS`, those it has), from the study's
    :attr:`~dpbounds.verify.studies._common.TheoremStudy.lower_plan` where it declares one
    that states them all (a lower plan that states one states the dry plan's value: part of
    its contract, checked by machine in ``tests/verify/test_lower_plan.py``), else from the
    dry plan. Yang et al.'s memory checks of candidate grids calibrated the claimed noise at
    each point (~26 dry plans, 1 of the 2.2 CPU-s of ``clipped_sgd --vary eps``'s planning
    from a cost cache) for numbers the noise does not change."""
    if getattr(study, "lower_plan", None) is not None:
        low = dict(_cached_hook(study.theorem, "lower_plan", spec,
                                tuple(sorted(point.items())), trials))
        if all(k in low for k in COST_FIELDS):
            return {k: low[k] for k in COST_FIELDS}
    plan = dry_plan(study, spec, point, trials)
    return {k: plan[k] for k in COST_FIELDS if k in plan}


def informative(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
                trials: int) -> bool:
    """Whether the dry plan of ``point`` is informative (:func:`_informative`): ``False``
    where the lower plan is already vacuous (:func:`certainly_vacuous`), else the study's
    :attr:`~dpbounds.verify.studies._common.TheoremStudy.is_informative` where it declares
    one (the same answer, computed faster), else the dry plan's."""
    if certainly_vacuous(study, spec, point, trials):
        return False
    if getattr(study, "is_informative", None) is None:
        return _informative(dry_plan(study, spec, point, trials))
    return _cached_hook(study.theorem, "is_informative", spec, tuple(sorted(point.items())),
                        trials)


@functools.lru_cache(maxsize=8192)
def _cached_hook(theorem: str, hook: str, spec: VerifyProblem, point: tuple, trials: int
                 ) -> Any:
    """The study's planning ``hook`` at ``point``, on the dry plan's instance: for
    ``"lower_plan"`` the plan's items (a tuple: cached values are never edited), for
    ``"is_informative"`` its answer."""
    from dpbounds.verify.theorems import get_study

    pt = dict(point)
    fn = getattr(get_study(theorem), hook)
    assert fn is not None  # asked only of studies that declare the hook
    out = fn(pt, _plan_instance(spec, pt), trials)
    return tuple(dict(out).items()) if hook == "lower_plan" else bool(out)


#: samples of the instance :func:`trace_seconds` times: per sample and trial a full-sample
#: gradient costs 1.0-1.4x what it costs at N = 16,384-56,230 (the safe side), and its
#: temporaries (16 trials, d = 32: 17 MB) stay small (at N = 16,384 the first call's fresh
#: memory cost 0.2-0.6 CPU-s of system time on a VM, 1.3 of a study's planning seconds)
_TRACE_PROBE_SAMPLES = 4096


#: the :class:`~dpbounds.verify.costs.CostMemo` of the plan being made (:func:`remembering`)
_MEMO: contextvars.ContextVar[Any] = contextvars.ContextVar("cost_memo", default=None)


@contextlib.contextmanager
def remembering(memo: Any) -> Any:
    """Within the block, :func:`trace_seconds` reads and keeps its timings in ``memo`` (a
    :class:`~dpbounds.verify.costs.CostMemo`, or ``None``: timed)."""
    from dpbounds.verify.costs import CostMemo

    if memo is not None and not isinstance(memo, CostMemo):
        raise ValueError(f"memo must be a CostMemo or None, got {type(memo).__name__}")
    token = _MEMO.set(memo)
    try:
        yield memo
    finally:
        _MEMO.reset(token)


def cpu_seconds(run: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """CPU seconds (``time.process_time``) of ``run(*args, **kwargs)``, timed with Python's
    cyclic garbage collector paused (its state restored after). What every cost probe is
    timed with: a full collection over the imported libraries' objects takes up to 0.09
    CPU-s on a 2-core Zen 4 host, and one landing in both timings of BST14's 6 ms first
    probe priced its quick points 3.6x their runs in about half the processes (stop 66). The
    collections a grid point's run pays are few against its own cost, and the command line
    freezes the imported objects (:func:`gc.freeze`), which makes each one cheap."""
    with _GC_LOCK:  # the collector is the process's: timings on several threads share it
        if _GC_PAUSE[0] == 0:
            _GC_PAUSE[1] = gc.isenabled()
            gc.disable()
        _GC_PAUSE[0] += 1
    try:
        t0 = time.process_time()
        run(*args, **kwargs)
        return time.process_time() - t0
    finally:
        with _GC_LOCK:
            _GC_PAUSE[0] -= 1
            if _GC_PAUSE[0] == 0 and _GC_PAUSE[1]:
                gc.enable()


#: :func:`cpu_seconds`' timings in progress and whether the collector was on before the
#: first (two separate steps each, else a thread ending between another's check and pause
#: left the collector off for good: an independent review)
_GC_LOCK = threading.Lock()
_GC_PAUSE: list[Any] = [0, False]


def trace_seconds(spec: VerifyProblem, d: int, trials: int) -> float:
    """CPU seconds per sample and trial of a recorded iterate's full-sample gradient norm
    (what a plan's ``trace_samples`` counts), timed on an instance of
    :data:`_TRACE_PROBE_SAMPLES` samples at ``d`` (best of 2 after a first call; cached per
    ``(spec, d, trials)``; read from and kept in the memo of :func:`remembering`, so a plan
    from a memo prices its points as the plan that made it did)."""
    d, trials = int(d), int(min(trials, 16))
    memo = _MEMO.get()
    parts = None if memo is None else memo_parts(None, spec, d=d, trials=trials)
    if parts is None:
        return _trace_seconds(spec, d, trials)
    key = memo.key("trace_seconds", **parts)
    hit = memo.get(key, lambda v: float(v) if finite_number(v) and v > 0 else None)
    if hit is not None:
        return hit
    secs = _trace_seconds(spec, d, trials)
    memo.put(key, secs, what=dict(kind="trace_seconds", problem=spec.kind, d=d, trials=trials))
    return secs


@functools.lru_cache(maxsize=256)
def _trace_seconds(spec: VerifyProblem, d: int, trials: int) -> float:
    inst = spec.build(_TRACE_PROBE_SAMPLES, d, seed=0)
    x = np.tile(np.asarray(inst.x0, dtype=float).ravel(), (trials, 1))
    inst.objective.grad_norm(x)  # first call: any lazy set-up
    best = math.inf
    for _ in range(2):
        best = min(best, cpu_seconds(inst.objective.grad_norm, x))
    return max(best, 1e-12) / (_TRACE_PROBE_SAMPLES * trials)


#: the bootstrap timed by :func:`bootstrap_seconds`: replicates and points, at the study's
#: trials up to the last (at 4,096 trials 1.6e6 resampled values, ~8 ms). Timed at 200
#: trials, the rate read 0.7x what 1,500-3,000 trials cost a value (an independent review)
_BOOTSTRAP_PROBE = (100, 4, 4096)


def bootstrap_seconds(study: TheoremStudy | None, spec: VerifyProblem | None,
                      trials: int) -> float:
    """CPU seconds per resampled value of the analysis after a study's runs of ``trials``
    trials (:func:`dpbounds.verify.statistics.bootstrap_slope`, ``replicates x points x
    trials`` values per component), timed on synthetic data of as many trials (at most
    4,096; best of 3 after a first call; once per process and size). Read from and kept in
    the memo of :func:`remembering` under the study's and problem's key
    (:func:`memo_parts`; counted among the plan's fits, as :func:`trace_seconds`), so a plan
    from a memo prices its analysis as the plan that made it did."""
    size = max(2, min(int(trials), _BOOTSTRAP_PROBE[2]))
    memo = _MEMO.get()
    parts = None if memo is None or spec is None else memo_parts(
        study, spec, probe=[*_BOOTSTRAP_PROBE[:2], size])
    if parts is None:
        return _bootstrap_seconds(size)
    key = memo.key("bootstrap_seconds", **parts)
    hit = memo.get(key, lambda v: float(v) if finite_number(v) and v > 0 else None)
    if hit is not None:
        return hit
    secs = _bootstrap_seconds(size)
    memo.put(key, secs, what=dict(kind="bootstrap_seconds", trials=size,
                                  theorem=None if study is None else study.theorem))
    return secs


@functools.lru_cache(maxsize=8)
def _bootstrap_seconds(trials: int) -> float:
    from dpbounds.verify.statistics import bootstrap_slope

    replicates, points = _BOOTSTRAP_PROBE[:2]
    rng = np.random.default_rng(0)
    samples = [rng.uniform(1.0, 2.0, trials) for _ in range(points)]
    xs = [2.0 ** j for j in range(points)]
    bootstrap_slope(xs, samples, replicates=replicates)  # first call: lazy imports, pages
    best = math.inf
    for _ in range(3):
        best = min(best, cpu_seconds(bootstrap_slope, xs, samples, replicates=replicates))
    return max(best, 1e-12) / (replicates * points * trials)


def analysis_seconds(study: TheoremStudy, spec: VerifyProblem, points: int, trials: int,
                     replicates: int) -> float:
    """The cost model's CPU seconds of the analysis after a study's runs: each of its
    components' bootstrapped slope over ``points`` grid points of ``trials`` trials (left
    out of the estimate until stop 65: 0.3 of ``strongly_convex.nag --vary N``'s 0.5
    CPU-s, 3,000 trials, estimated at 0.1). Not part of the ``--max-seconds`` budget,
    which the runs' estimate fits: reported apart (``estimated_analysis_seconds``)."""
    return float(bootstrap_seconds(study, spec, trials) * replicates * points * trials
                 * len(study.components))


def point_seconds(spec: VerifyProblem, plan: Mapping[str, Any], point: Mapping[str, Any],
                  trials: int, cost: Sequence[float], factor: tuple[float, float] = (1.0, 1.0)
                  ) -> float:
    """The cost model's CPU seconds of one point: the fixed cost ``cost[2]`` (where given),
    ``cost[0]`` per step and ``cost[1]`` per gradient evaluation (scaled by ``factor``), and
    the trace's full-sample gradients (``plan["trace_samples"]`` at :func:`trace_seconds`
    each)."""
    secs = (float(cost[2]) if len(cost) > 2 else 0.0) \
        + cost[0] * factor[0] * float(plan["steps"]) \
        + cost[1] * factor[1] * float(plan["gradient_evaluations"])
    samples = float(plan.get("trace_samples", 0.0))
    if samples > 0:
        secs += samples * trace_seconds(spec, int(point["d"]), trials)
    return secs


#: a probe run stops growing once it costs this much CPU (seconds); at most _PROBE_MAX probes
_PROBE_SECONDS = 0.3
_PROBE_MAX = 7
#: the largest planned memory (``memory_bytes`` of its dry plan) of a grown cost probe: a
#: probe that would hold more is not run, the fit keeps the probes before it, and a planned
#: grid's memory estimate counts this much for its probes. ``yang.nsgd --vary N``'s full study
#: grew its probes to T = 204,800 steps (92 MiB of transcript planned, the process 72 MiB
#: larger) because each run's fixed cost (0.47 CPU-s) hides the per-step part, and peaked at
#: twice its estimate (174 MiB above its imports, 85 estimated; bench/bench_plan_memory.md).
#: Not lower: at 32 MiB its 8-trial probes stopped at T = 12,800, where the fixed cost still
#: dominates, and priced a 1e7-step point 25% high (independent review)
PROBE_MAX_BYTES = 128.0 * 2**20


def seconds_per_evaluation(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
                           trials: int = 4) -> tuple[float, float]:
    """Cost model ``seconds = a * steps + b * evaluations`` (marginal CPU seconds; evaluations
    over all trials) of the study's algorithm with ``trials`` trials; ``(a, b)``, each floored
    at ``1e-9``.

    Probe runs grow (``N = 32, 96, 288, ...``; for Yang et al. ``T`` from 200 by
    :func:`_t_growth`'s factor, 2x to 16x)
    until one costs at least ``_PROBE_SECONDS`` of CPU, and ``c + a * steps + b * evaluations``
    is fitted to them by non-negative least squares. The fixed cost ``c`` of a run
    (calibration, compilation dispatch, traces) is left out of ``(a, b)``: fitted without it,
    tiny probes charged it to their few steps and over-estimated a long compiled run by
    three orders of magnitude (21.8 h estimated for a 3e7-step Algorithm 2 point that costs
    minutes).

    Every probe runs twice and ``(a, b)`` are fitted to the faster run of each: the
    second run finds the per-process caches warm (compilation; a point's calibration and
    re-accounting, cached by its parameters), and timing noise on a loaded host only adds
    time. Before, only the first probe ran twice, so it alone was timed warm and every larger
    probe paid its point's re-accounting (~0.7 CPU-s for Yang et al.'s, in mpmath): the fit
    read that as a per-step cost, and the 1e7-step grid of ``yang.nsgd --vary N`` was
    estimated at 1471 CPU-s (a probe fit of the same host read 2.1e-4 and 1.2e-4 s per step
    on two calls) where it ran in 889, so the default 900 s budget fell back to the vacuous
    default grid.
    """
    a, b, _ = _probe_fit(study, spec, point, trials)
    return a, b


#: range of the factor by which a probe's ``T`` grows from one probe to the next
_T_GROWTH = (2.0, 16.0)
#: the most a probe's ``T`` grows once two warm probes bound the per-step cost
#: (:func:`_per_step_share`)
_T_GROWTH_MEASURED = 64.0
#: the timing noise a warm probe's CPU time is allowed (a share of the fastest warm probe's):
#: the per-step bound of two probes adds it, so a fastest probe read this much slow (a loaded
#: host) still bounds the per-step cost from above. Yang et al.'s warm runs vary by 4-6%
#: (0.075-0.078 CPU-s, five repeats); at 0.25 the third probe of a 0.08 + 2e-6 T cost landed
#: at 0.22 CPU-s, short of the stop rule, and a fourth ran
_PROBE_NOISE = 0.15


def _t_growth(dt: float, floor: float, shown_most: float | None = None) -> float:
    """The factor by which a probe's ``T`` grows to the next, from the last probe's warm CPU
    seconds ``dt`` (and the fastest warm probe so far, ``floor``), within :data:`_T_GROWTH`
    (up to :data:`_T_GROWTH_MEASURED` with ``shown_most``).

    If the time over ``floor`` is per step (``shown = dt - floor``, used where it is over a
    tenth of ``floor``), the whole next probe, ``floor + factor * shown``, lands at 1.2 times
    the stop rule's ``max(_PROBE_SECONDS, 3 floor)``. The factor is never more than would
    make the next probe cost ``3 * _PROBE_SECONDS`` if ``shown_most`` of ``dt`` were per
    step (all of ``dt`` without it: one probe bounds nothing better; with two,
    :func:`_per_step_share` bounds it), except at its floor of 2: a probe of ``dt`` over
    ``1.5 * _PROBE_SECONDS`` still doubles (the stop rule ends the growth there).

    Before, ``T`` grew 4x a probe: Yang et al.'s probes ran at 200, 800 and 3,200 steps
    where the fixed cost (0.08 CPU-s warm) hid the per-step one, each paying its own
    calibration and re-accounting cold (0.37-0.45 CPU-s), and the last probe went 4x past
    its target (``clipped_sgd``'s T = 51,200 after 12,800). Grown up to 16x by ``dt`` alone,
    the second probe (T ~ 2,700) still showed nothing and a fourth probe ran; bounded by two
    probes, the third is the last."""
    most = dt if shown_most is None else min(max(shown_most, 1e-9), dt)
    safe = (3.0 * _PROBE_SECONDS - (dt - most)) / max(most, 1e-9)
    shown = dt - floor
    aim = ((1.2 * max(_PROBE_SECONDS, 3.0 * floor) - floor) / shown if shown > 0.1 * floor
           else math.inf)
    top = _T_GROWTH[1] if shown_most is None else _T_GROWTH_MEASURED
    return float(min(max(min(safe, aim), _T_GROWTH[0]), top))


def _per_step_share(dt: float, t: int, earlier: Sequence[tuple[int, float]]) -> float | None:
    """An upper bound on the per-step part of a warm probe of ``t`` steps and ``dt`` CPU
    seconds, from the fastest earlier warm probe ``(t0, dt0)`` of fewer steps in
    ``earlier``: a run costs ``c + a T`` (``a >= 0``), so ``a <= (dt - dt0 + noise) /
    (t - t0)``, where ``noise`` = :data:`_PROBE_NOISE` of the faster of the two (``dt0`` read
    that much slow still bounds ``a``); returned times ``t``. ``None`` without such a probe.

    The bound holds under those two assumptions only. Where they fail (a cost superlinear in
    ``T``; the earlier probe read more than 15% slow on a loaded host), the next probe can
    cost more than :func:`_t_growth`'s 3 targets: an independent review's fakes read 3.2x
    (``c = 0.05``, ``a = 2e-5``, the first probe read 50% slow) and 4.5x (cost ``T^1.5``)
    the target, against 1.6x and 3.1x when ``T`` grew by the last run alone. Only
    performance is at stake (the fit, and so the estimate, still comes from measured runs);
    the built-in studies with a ``T`` (Yang et al.'s) cost ``c + a T`` to within 10% from
    ``T = 3e4`` to ``1e6``."""
    prior = [(t0, d0) for t0, d0 in earlier if t0 < t]
    if not prior:
        return None
    t0, d0 = min(prior, key=lambda p: p[1])
    noise = _PROBE_NOISE * min(d0, dt)
    return (max(dt - d0, 0.0) + noise) * t / (t - t0)


def _next_t(t: int, growth: float, memory: float, largest: Mapping[str, float] | None,
            first: bool, per_step_bytes: float | None = None) -> int | None:
    """The next probe's ``T`` from a probe of ``t`` steps that plans ``memory`` bytes:
    ``t * growth``, less where it would plan over :data:`PROBE_MAX_BYTES` (a plan's memory is
    at most proportional to its ``T``: ``a + b T`` with ``a >= 0``; with ``per_step_bytes``,
    the ``b`` read from two probes' plans, the line through them; never below 2x), and at
    most ``largest``'s ``T`` (the last probe is the largest point itself). ``None`` where no
    probe fits below ``largest`` (the probes stop there); the second probe (``first``: from
    the first) is kept anyway, at the largest point or at ``2 t``, for the fit's second row.
    Before the growth was 4x a probe and the second probe could be 4x past ``largest``; with
    growth up to 16x it could be 11x past, and the third probe, which the memory cap does
    not stop, up to 256x the first (an independent review)."""
    if memory > 0:
        room = PROBE_MAX_BYTES / memory
        if per_step_bytes is not None:  # a + b T: the fixed part a does not grow with T
            room = 1.0 + (PROBE_MAX_BYTES - memory) / (t * per_step_bytes) \
                if per_step_bytes > 0 else math.inf
        growth = max(_T_GROWTH[0], min(growth, room))
    nxt = int(t * growth)  # down: a probe at the memory cap stays within it
    cap = None if largest is None or "T" not in largest else int(largest["T"])
    if cap is None or nxt <= cap:
        return nxt
    if cap > t and (first or 2 * t <= cap):
        return cap
    return 2 * t if first else None


def _probe_fit(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
               trials: int, largest: Mapping[str, float] | None = None,
               stopped: list[str] | None = None, sizes: list[int] | None = None,
               *, target: int | None = None) -> tuple[float, float, float]:
    """``(a, b, c)`` of :func:`seconds_per_evaluation`'s fit, the fixed cost ``c`` of a run
    included (``>= 0``).

    ``largest``: the largest point that will run (its ``N``, ``T``). Probes never grow past
    it: a probe the size of a grid point costs what the point costs, so probing a small
    (``--quick``) grid up to 0.3 CPU-s a probe cost 3 to 20 times its runs (measured:
    Algorithm 2's quick study spent 36.7 CPU-s estimating 1.8 CPU-s of runs). Two probe
    sizes then suffice: the points lie inside the probed range, where the fit interpolates.

    ``c`` is the warm fit's plus the median excess of a probe's first (cold) run over its
    second, the first probe's excluded (it pays compilation once per process): a grid point
    runs once, with its own calibration and re-accounting. A probe after the first two whose
    cold run costs at least ``_PROBE_SECONDS`` is timed once: its cold run less that median
    excess is its warm time, unless that reads below the probe before's (then it runs
    again, as the first two and smaller ones do). Its second run was
    0.34-0.35 CPU-s of a 2.1-2.4 CPU-s fit of Yang et al.'s studies. What its cold run paid
    beyond the excess before (fresh memory for its larger arrays: 0.33-0.36 against 0.25)
    is then counted per step, as a grid point's single, cold run pays it.

    ``stopped`` (a list) gets ``"largest"`` when the probes stopped at ``largest``'s size
    (the fit then holds for points up to it), else ``"time"`` or ``"memory"``.

    ``sizes`` (a list) gets each probe's size (its ``T``, else its ``N``) as it runs: points
    of that size were run in this process, their calibration and re-accounting kept
    (:func:`cost_over_d` probes there warm).

    ``target``: the trials the priced points run. Where it is above ``trials``, one probe
    also runs at ``min(target, 4 * trials)`` trials (:func:`_trials_rows`), so the fit
    tells a step's per-trial part (``b``, scaled to the points' trials through their
    evaluations) from its fixed part (``a``). At one trial count the two grow together:
    the tree studies' 16-trial fits put all of it in ``a`` and priced their 150-trial
    ``--quick --vary N`` and ``--vary eps`` grids at 0.21-0.34 of their runs (stop 66).
    """
    from scipy.optimize import nnls

    rows: list[tuple[float, ...]] = []
    secs: list[float] = []
    cold: list[float] = []
    warm: list[tuple[int, float]] = []  # (T, warm CPU seconds) of the T probes so far
    planned: list[tuple[int, float]] = []  # (T, planned bytes) of the T probes so far
    probes: list[tuple[dict[str, float], Any]] = []  # the probes run, and their instances
    # small first (BST14 runs n^2 steps), but never below the batch: a probe of 32 samples
    # at --batch-size 100 failed ("sampling_rate must lie in [0.0, 1.0], got 3.125")
    n, t = max(32, int(point.get("B", 1))), 200
    why = "time"
    for k in range(_PROBE_MAX):
        probe = dict(point, N=n)
        if "T" in probe:
            probe["T"] = t
        inst = spec.build(n, int(probe["d"]), seed=0)
        pl = study.plan_point(probe, inst, trials)
        if "T" in probe and planned:
            # grown by the line through two plans' memory (the second probe: by memory taken
            # as proportional to T): a plan above it (memory growing faster than T) is brought
            # back to the cap before it runs, halving T down to twice the last probe's
            while float(pl.get("memory_bytes", 0.0)) > PROBE_MAX_BYTES \
                    and t > 2 * planned[-1][0]:
                t = max(2 * planned[-1][0], t // 2)
                probe["T"] = t
                pl = study.plan_point(probe, inst, trials)
        if k >= 3 and float(pl.get("memory_bytes", 0.0)) > PROBE_MAX_BYTES:
            why = "memory"
            break  # three probes fit; a larger one would hold more than a probe may
        if sizes is not None:
            sizes.append(int(_size(probe) or 0))
        probes.append((dict(probe), inst))
        runs: list[float] = []
        once = False
        for _ in range(2):
            runs.append(cpu_seconds(study.run_point, probe, inst, trials, 0, None))
            if k >= 2 and cold and len(runs) == 1 and runs[0] >= _PROBE_SECONDS and (
                    runs[0] - float(np.median(cold)) >= secs[-1]):
                # from the third probe on, a run of at least the target is timed once: its
                # warm time is its cold run less the cold excess measured before
                # (calibration and re-accounting), where that is at least the last probe's
                # (a larger probe costs no less). The second runs cost 0.34-0.35 of a Yang
                # et al. fit's 2.1-2.4 CPU-s, and 0.96 of sensitivity_reduced_nsgd's 3.8
                # (whose probes have no cold excess); a smaller run's second costs little,
                # and the excess's timing noise is a large part of it
                # (strongly_convex.nag's quick estimate read 0.45-3.3 of its runs, 1.03-1.32
                # with the second runs)
                runs, once = [runs[0] - float(np.median(cold))], True
                break
        dt = min(runs)
        if k > 0 and not once:  # (a probe timed once measured no excess of its own)
            cold.append(max(runs[0] - dt, 0.0))
        secs.append(dt)
        rows.append((1.0, float(pl["steps"]), float(pl["gradient_evaluations"])))
        if k >= 2 and _probes_stop(dt, secs, rows[-1][1], rows[-2][1]):
            break
        if "T" in probe:
            memory = float(pl.get("memory_bytes", 0.0))
            per_byte = None
            if planned and t > planned[-1][0]:
                per_byte = max(memory - planned[-1][1], 0.0) / (t - planned[-1][0])
            shown_most = _per_step_share(dt, t, warm)
            warm.append((t, dt))
            planned.append((t, memory))
            t_next = _next_t(t, _t_growth(dt, min(secs), shown_most), memory, largest,
                             k == 0, per_byte)
            if t_next is None:
                why = "largest"
                break  # the next probe would be larger than any point that runs
            t = t_next
        else:
            if largest is not None and k >= 1 and 3 * n > largest["N"]:
                why = "largest"
                break  # the next probe would be larger than any point that runs
            n *= 3
    if target is not None and int(target) > trials:
        extra = _trials_rows(study, spec, probes, list(secs), trials, int(target))
        if len(extra) >= 2:
            rows = [(*r, 0.0) for r in rows] + [r for r, _ in extra]
        else:
            # one size only (even the second probe is too dear at more trials): four
            # unknowns, three constraints, and nnls put the cost per evaluation into the
            # per-trial term (0.09x at 2,000 trials in an independent review); without the
            # per-trial column the rows price it per evaluation (high, the safe side)
            rows += [r[:3] for r, _ in extra]
        secs += [dt for _, dt in extra]
    a_mat = np.array(rows)
    # columns of very different size: fit on a common scale (a column of zeros, a study
    # whose plan counts no evaluations, kept at 1: it divided by 0 and the fit was NaN)
    scale = np.where(a_mat.max(axis=0) > 0, a_mat.max(axis=0), 1.0)
    coef, _ = nnls(a_mat / scale, np.array(secs))
    coef = coef / scale
    a, b = float(coef[1]), float(coef[2])
    per_trial = float(coef[3]) if len(coef) > 3 else 0.0  # each trial beyond ``trials``
    if a <= 0 and b <= 0:  # pragma: no cover - all time in the fixed cost
        a = secs[-1] / rows[-1][1]
    c = max(float(coef[0]), 0.0) + (float(np.median(cold)) if cold else 0.0)
    if target is not None and int(target) > trials:
        c += per_trial * (int(target) - trials)
    if stopped is not None:
        stopped.append(why)
    return max(a, 1e-9), max(b, 1e-9), c


def _trials_rows(study: TheoremStudy, spec: VerifyProblem,
                 probes: Sequence[tuple[Mapping[str, float], Any]],
                 warm: Sequence[float], trials: int, target: int
                 ) -> list[tuple[tuple[float, float, float, float], float]]:
    """:func:`_probe_fit`'s rows ``(1, steps, evaluations, extra trials)``, each with its CPU
    seconds, of probes run again at ``min(target, 4 * trials)`` trials: the smallest probe
    and the largest whose warm time ``warm[k]`` at ``trials``, scaled in proportion to the
    trials (the most a run's cost can grow), is at most ``_PROBE_SECONDS`` (one row where
    they are the same probe; the smallest may cost more). Each is timed once, on the
    instance its probe ran on (its set-up paid: the probes' first runs cost 1-2 ms more
    than their second).

    Two sizes, because a run pays per trial as well as per step and trial
    (Algorithm 2's study re-accounts and tests each trial's transcript: 0.7 ms a trial at
    ``N = 32``): one size cannot tell the two apart, and its per-evaluation cost read 4x
    the ``N = 250`` points' (their ``--quick --vary eps`` estimate read 2.4x the runs)."""
    more = min(int(target), 4 * int(trials))
    scale = more / float(trials)
    big = max([j for j in range(len(probes)) if warm[j] * scale <= _PROBE_SECONDS],
              default=0)
    out: list[tuple[tuple[float, float, float, float], float]] = []
    for k in dict.fromkeys((0, big)):
        probe, inst = dict(probes[k][0]), probes[k][1]
        pl = study.plan_point(probe, inst, more)
        out.append(((1.0, float(pl["steps"]), float(pl["gradient_evaluations"]),
                     float(more - trials)),
                    cpu_seconds(study.run_point, probe, inst, more, 0, None)))
    return out


def _probes_stop(dt: float, secs: Sequence[float], steps: float, steps_before: float) -> bool:
    """Whether :func:`_probe_fit`'s third or a later probe, ``dt`` CPU seconds warm for
    ``steps`` (the probe before: ``steps_before``; ``secs``: the warm times so far), is its
    last (by time)."""
    shows = 3.0 * min(secs)
    # the variable part must show: a probe at the level of the fixed cost (a study's
    # one-step clipping probe, calibration) fits noise, which a long run multiplies
    # (Algorithm 1 priced 77x too high once its study gained a 0.3 CPU-s probe)
    if dt >= max(_PROBE_SECONDS, shows):
        return True
    # a probe whose variable part shows (3x the smallest) at a third of the target stops
    # where the next one would cost over 3x the target: BST14's steps grow 9x a rung
    # (n^2 of them), and its 4-trial fit ran N = 2592 twice at 2.1 CPU-s each after
    # N = 864 had cost 0.24 (4.75 of a fallback's 8.5 CPU-s of planning)
    return dt >= max(_PROBE_SECONDS / 3.0, shows) and (
        dt * steps / max(steps_before, 1.0) > 3.0 * _PROBE_SECONDS)


def _size(point: Mapping[str, Any] | None) -> float | None:
    """What a probe grows: ``T`` where the point has one, else ``N``."""
    if point is None:
        return None
    return float(point["T"]) if "T" in point else float(point["N"])


def _largest(points: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The largest ``N`` and ``T`` (where given) among ``points``: the size a probe may reach."""
    out = {"N": max(float(p["N"]) for p in points)}
    if any("T" in p for p in points):
        out["T"] = max(float(p.get("T", 0)) for p in points)
    return out


def _code_modules(study: TheoremStudy | None, spec: VerifyProblem) -> list[str | None]:
    """The modules whose code a probe of ``study`` on ``spec`` runs beyond the package's own:
    the study's run function (through ``functools.partial``; for a plug-in's study, built by
    :func:`dpbounds.extend.study`, its method's step and sensitivity), and a declared problem
    kind's ``build``."""
    from dpbounds.verify.problems import KIND_REGISTRY

    mods: list[str | None] = []
    if study is not None:
        run: Any = study.run
        while isinstance(run, functools.partial):
            run = run.func
        method = getattr(run, "method", None)  # dpbounds.extend's runner of a plug-in
        if method is not None:
            mods += [getattr(getattr(method, name, None), "__module__", None)
                     for name in ("step", "sensitivity") if getattr(method, name, None)]
        else:
            mods.append(getattr(run, "__module__", None) or type(run).__module__)
    kind = KIND_REGISTRY.entries.get(spec.kind)
    if kind is not None:
        mods.append(getattr(kind.build, "__module__", None))
    return mods


def memo_parts(study: TheoremStudy | None, spec: VerifyProblem, **parts: Any
               ) -> dict[str, Any] | None:
    """``parts`` with what names the code a probe runs, for a
    :class:`~dpbounds.verify.costs.CostMemo` key (which adds the host, the package's code
    stamp and the versions): the study and the problem, and where either is a plug-in's
    the loaded plug-ins' digests (:func:`dpbounds.extend.plugin_digests`, taken as each was
    loaded; :func:`dpbounds._discovery.plugin_code`). ``None`` where some of that code is
    neither the package's nor a loaded plug-in's (a study defined in a notebook): nothing
    names it, so it is probed every time."""
    from dpbounds._discovery import plugin_code

    prefixes, digests = plugin_code()  # set by dpbounds.extend, which loads the plug-ins
    plugin = False
    for mod in _code_modules(study, spec):
        if not isinstance(mod, str):
            return None
        if mod == "dpbounds" or (mod.startswith("dpbounds.") and mod != "dpbounds.extend"):
            continue
        if not any(mod == p.rstrip(".") or mod.startswith(p) for p in prefixes):
            return None
        plugin = True
    return dict(parts, theorem=None if study is None else study.theorem,
                problem=spec.as_dict(), plugins=dict(digests) if plugin else None)


def _memo_parts(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, Any],
                trials: int, largest: Mapping[str, float] | None, target: int | None = None
                ) -> dict[str, Any] | None:
    """What a probe's answer depends on (:func:`memo_parts`; ``target`` where a fit's
    :func:`_trials_rows` ran)."""
    extra = {} if target is None or int(target) <= int(trials) else dict(target=int(target))
    return memo_parts(study, spec, point=dict(point), trials=int(trials),
                      largest=None if largest is None else dict(largest), **extra)


def _remembered_fit(value: Any) -> tuple[tuple[float, float, float], str | None] | None:
    """A memo's ``(a, b, c)`` (three finite numbers, ``a, b > 0`` and ``c >= 0``: what
    :func:`_probe_fit` returns) and why its probes stopped (``None``, ``"time"``,
    ``"memory"`` or ``"largest"``); ``None`` for anything else (then probed again)."""
    fit = value.get("fit") if isinstance(value, Mapping) else None
    why = value.get("stopped") if isinstance(value, Mapping) else None
    if not (isinstance(fit, list) and len(fit) == 3 and all(finite_number(x) for x in fit)
            and why in (None, "time", "memory", "largest")):
        return None
    a, b, c = (float(x) for x in fit)
    return ((a, b, c), why) if a > 0 and b > 0 and c >= 0 else None


def measured_fit(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
                 trials: int, largest: Mapping[str, float] | None = None, memo: Any = None,
                 stopped: list[str] | None = None, sizes: list[int] | None = None,
                 *, target: int | None = None) -> tuple[float, float, float]:
    """:func:`_probe_fit`'s ``(a, b, c)`` (and its ``stopped`` reason), read from ``memo`` (a
    :class:`~dpbounds.verify.costs.CostMemo`) where it holds the fit of the same arguments on
    this host and code, else probed and remembered there. ``memo=None``: probed.
    ``sizes`` and ``target``: as :func:`_probe_fit`'s (nothing added to ``sizes`` for a fit
    read from ``memo``)."""
    if target is not None and (isinstance(target, bool) or not isinstance(
            target, (int, np.integer)) or target < 1):
        raise ValueError(f"target must be None or a positive integer (the trials the priced "
                         f"points run), got {target!r}")
    key = None
    parts = None if memo is None else _memo_parts(study, spec, point, trials, largest, target)
    if parts is not None:
        key = memo.key("probe_fit", **parts)
        hit = memo.get(key, _remembered_fit)
        if hit is not None:
            fit, why = hit
            if stopped is not None and why is not None:
                stopped.append(why)
            return fit
    why_now: list[str] = []
    fit = _probe_fit(study, spec, point, trials, largest, why_now, sizes, target=target)
    if stopped is not None:
        stopped.extend(why_now)
    if key is not None:
        memo.put(key, dict(fit=[float(x) for x in fit],
                           stopped=why_now[0] if why_now else None),
                 what=dict(kind="probe_fit", theorem=study.theorem, problem=spec.kind,
                           point=dict(point), trials=int(trials)))
    return fit


def probe_trials(study: TheoremStudy, trials: int) -> int:
    """The trials a cost probe of ``study``'s runs of ``trials`` trials runs with: at most
    the study's :attr:`~dpbounds.verify.studies._common.TheoremStudy.probe_trials` (16
    unless it declares more); the fit's per-evaluation cost is scaled in proportion to the
    trials asked.

    Why a study may declare more. At one trial count a probe's steps and evaluations grow
    together, so the fit cannot tell a step's fixed part from its per-trial part, and
    scaling it by the trials holds only where the per-trial part dominates. It does for
    Yang et al.'s and the tree studies (16-trial probes priced ``clipped_sgd --trials 2000``
    at 1.1x its runs, the tree studies' 150-trial quick points at 0.5-1.1x, and 150-trial
    probes at 1.0-3.9x); it does not for the strongly convex studies (1,500-3,000 trials,
    vectorised over them: 0.2-50x at 16; 0.7-1.2 per point at their own trials, stop 65).
    Declared per study, not by the trials asked: a user's ``--trials 10000`` of
    ``clipped_sgd`` probed at its own trials planned in 25.6 CPU-s where 16-trial probes
    take 2.3 (an independent review)."""
    return min(int(trials), int(getattr(study, "probe_trials", 16)))


class ProbeCosts:
    """The cost ``(a, b, c)`` of :func:`_probe_fit` per trial count, its probes grown only up
    to the largest point that the planner prices (``largest=``; ``sized`` tells
    :func:`plan_grid` it takes one).

    A fit whose probes stopped at that size holds for points up to it; a later, larger grid
    is probed again. Before, the probes grew until a run cost 0.3 CPU-s whatever the grid:
    ``strongly_convex.nag --vary N`` probed up to ``N = 23,328`` for a grid up to ``N = 110``
    (its runs estimated at 0.04 CPU-s), and ``cost_over_d`` (the same rule) spent 8.7 of
    ``strongly_convex.masg --vary d``'s 9.8 CPU-s of planning for 10 CPU-s of runs.

    The probes run at :func:`probe_trials`' count."""

    sized = True

    def __init__(self, study: TheoremStudy, spec: VerifyProblem, fixed: Mapping[str, float],
                 memo: Any = None) -> None:
        self.study, self.spec, self.fixed = study, spec, dict(fixed)
        self.fits: dict[int, tuple[tuple[float, float, float], float | None]] = {}
        #: a :class:`~dpbounds.verify.costs.CostMemo` the fits are read from and kept in
        self.memo = memo
        #: the sizes (``T``, else ``N``) its probes ran in this process (:func:`cost_over_d`'s
        #: ``warm``)
        self.sizes: list[int] = []

    def __call__(self, trials: int, largest: Mapping[str, float] | None = None
                 ) -> tuple[float, float, float]:
        size = _size(largest)
        hit = self.fits.get(trials)
        if hit is not None and (hit[1] is None or (size is not None and size <= hit[1])):
            return hit[0]
        why: list[str] = []
        fit = measured_fit(self.study, self.spec, self.fixed, probe_trials(self.study, trials),
                           largest, self.memo, why, self.sizes, target=trials)
        self.fits[trials] = (fit, size if why == ["largest"] else None)
        return fit


#: the per-step cost's power of ``d`` is clamped to this range: a step of a first-order
#: method touches O(d) numbers, so a larger power is a probe's timing noise (two probes of
#: ~0.3 CPU-s on a loaded 2-core host read 2.3 between d = 4 and 64 where a quiet one read
#: 0.89), which extrapolated over the grid would price a point 10x too high
_D_POWER = (0.0, 1.0)


def _timed_run(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
               trials: int) -> tuple[float, float]:
    """(CPU seconds, steps) of one run of ``point`` (a probe of :func:`cost_over_d`)."""
    n, d = int(point["N"]), int(point["d"])
    inst = spec.build(n, d, seed=0)
    steps = float(study.plan_point(point, inst, trials)["steps"])
    return cpu_seconds(study.run_point, point, inst, trials, 0, None), max(steps, 1.0)


def cost_over_d(study: TheoremStudy, spec: VerifyProblem, fixed: Mapping[str, float],
                values: Sequence[float], trials: int = 4,
                largest: Mapping[str, float] | None = None,
                fit: Sequence[float] | None = None, warm: Sequence[int] = ()
                ) -> Callable[[Mapping[str, Any]], tuple[float, float]]:
    """How the cost per step grows with ``d``: a factor ``(fa, fb)`` (per step, per
    evaluation) of a point relative to the fixed point's ``d``.

    One probe size is grown at the grid's largest ``d`` until a run costs
    ``2 * _PROBE_SECONDS`` (or costs ``_PROBE_SECONDS`` and the next probe's steps would
    take it over three times the target: ``clipped_sgd``'s T = 12,800 at d = 128 ran 0.55
    CPU-s, its next 1.9); the same probe then runs at the smallest and the largest ``d``,
    alternately, twice each, and the power ``p`` of ``d`` is read from the fastest CPU time per
    step at each end (timing noise on a loaded host only adds time, and alternating spreads it
    over both ends), clamped to :data:`_D_POWER`; both factors are ``(d / d_0)^p``. Before,
    a sweep over ``d`` was costed at the fixed point's ``d`` only: BST14 over ``d = 2..8``
    ran 1242 CPU-s against 888 estimated, because its ``d = 8`` point costs twice its
    ``d = 2`` point; and two separate probe fits, one per end, read powers from 0.9 to 2.3
    for the same study on a loaded host.

    ``largest``: the largest point that will run (its ``N``, ``T``); the probe never grows
    past it (as in :func:`_probe_fit`), and the factor's ``capped_at`` is then that size
    (else ``None``): ``strongly_convex.masg --vary d`` grew its probe to ``N = 23,328`` for
    a grid at ``N = 500`` and spent 8.7 CPU-s there, most of its planning.

    ``fit``: the cost ``(a, b, ...)`` per step and evaluation at the fixed point's ``d`` and
    ``trials`` (:func:`_probe_fit`'s, or a bound above it), where the planner has it. The
    growth then starts at the largest probe that the fit, at power 1 (the most
    :data:`_D_POWER` allows), prices at most ``2 * _PROBE_SECONDS`` at the grid's largest
    ``d``, not at the smallest, and the first run is not repeated (the fit's probes paid the
    compilation); the last grown run is one of the largest ``d``'s two timings. Before,
    ``clipped_sgd --vary d`` grew five probes at ``d = 128`` (1.7 CPU-s) and timed both
    ends four times (1.6).

    ``warm``: sizes (``T``, else ``N``) at which the fixed point already ran in this process
    (:class:`ProbeCosts`' ``sizes``: its calibration and re-accounting are kept, and do not
    depend on ``d``). With ``fit``, the probe is then the largest of them that the fit prices
    at most ``2 * _PROBE_SECONDS`` at the largest ``d`` (at power 1), provided that price is
    at least ``_PROBE_SECONDS / 2`` (:func:`_warm_probe`; else the probe grows as without
    ``warm``); nothing is grown, and each end is timed twice, the smaller ``d`` first (not
    alternately: see below): every run is warm. Before, ``clipped_sgd --vary d`` grew its
    probe to ``T = 3200``, a size no probe had run, and its first run there paid 0.35 CPU-s
    of calibration and re-accounting (1.06 CPU-s in all; warm at ``T = 2620``: 0.64-0.73).
    """
    ds = sorted({int(v) for v in values})
    d0 = int(fixed["d"])
    if len(ds) < 2:
        return lambda p: (1.0, 1.0)
    if fit is not None and not (len(fit) >= 2 and all(
            isinstance(x, (int, float, np.floating, np.integer)) and math.isfinite(float(x))
            and float(x) >= 0 for x in fit[:2])):
        raise ValueError("fit must be None or (a, b, ...) with a and b finite and >= 0 "
                         f"(seconds per step and per evaluation), got {fit!r}")
    if isinstance(warm, (str, bytes)) or not all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x > 0
            for x in warm):
        raise ValueError("warm must be a sequence of positive integer sizes (T, else N, of "
                         f"probes already run), got {warm!r}")
    lo, hi = ds[0], ds[-1]
    n, t = 32, 200
    k0 = 0
    at_warm = None if fit is None else _warm_probe(study, spec, fixed, hi, d0, trials, largest,
                                                    fit, warm)
    if fit is not None and at_warm is None:
        # skip the rungs that the fit prices well below the target at the largest d
        scale = max(hi / d0, 1.0)
        for k in range(1, _PROBE_MAX):
            n2, t2 = (n, 4 * t) if "T" in fixed else (3 * n, t)
            nxt = dict(fixed, N=n2, d=hi, **({"T": t2} if "T" in fixed else {}))
            if largest is not None and (t2 > largest.get("T", 0) if "T" in fixed
                                        else n2 > largest["N"]):
                break
            if _planned_bytes(study, spec, nxt, trials) > PROBE_MAX_BYTES:
                break
            pl = cost_plan(study, spec, nxt, trials)  # the steps run at the largest d
            if scale * (float(fit[0]) * float(pl["steps"]) + float(fit[1]) * float(
                    pl["gradient_evaluations"])) > 2 * _PROBE_SECONDS:
                break
            n, t, k0 = n2, t2, k
    probe = dict(fixed)
    capped: float | None = None
    last = math.inf
    if at_warm is not None:
        probe, capped = at_warm
    for k in range(k0, _PROBE_MAX if at_warm is None else k0):
        grown = dict(fixed, N=n, d=hi)
        if "T" in grown:
            grown["T"] = t
        if k > k0 and _planned_bytes(study, spec, grown, trials) > PROBE_MAX_BYTES:
            break  # the previous probe is timed at both ends (see PROBE_MAX_BYTES)
        probe = grown
        runs = 2 if k == 0 and fit is None else 1  # the first run pays compilation
        timed = [_timed_run(study, spec, probe, trials) for _ in range(runs)]
        dt = min(sec for sec, _ in timed)
        last = min(sec / steps for sec, steps in timed)
        if dt >= 2 * _PROBE_SECONDS and k >= 1:
            break
        # half the target reached, and the next probe would cost over 3x it (by its steps):
        # clipped_sgd's T = 12,800 at d = 128 ran 0.55 CPU-s, its next 1.9
        if k >= 1 and dt >= _PROBE_SECONDS:
            nxt = dict(probe, **({"T": 4 * t} if "T" in probe else {"N": 3 * n}))
            grow = (float(cost_plan(study, spec, nxt, trials)["steps"])
                    / max(float(cost_plan(study, spec, probe, trials)["steps"]), 1.0))
            if grow * dt > 6 * _PROBE_SECONDS:
                break
        if largest is not None and k >= 1 and (
                4 * t > largest.get("T", 0) if "T" in probe else 3 * n > largest["N"]):
            capped = _size(largest)
            break  # the next probe would be larger than any point that runs
        if "T" in probe:
            t *= 4
        else:
            n *= 3
    per_step: dict[int, float] = {lo: math.inf, hi: math.inf}
    ends: tuple[int, ...] = (lo, hi, lo, hi)
    if at_warm is not None:
        # each end's runs together, the smaller d first: after a run at a large d, BLAS's
        # threads still spin and the next run's process CPU time reads their wait (a d = 2
        # run of clipped_sgd: 0.13-0.16 CPU-s after one at d = 128, 0.07 after one at d = 2)
        ends = (lo, lo, hi, hi)
    elif fit is not None and math.isfinite(last):
        per_step[hi], ends = last, (lo, hi, lo)
    for d in ends:
        sec, steps = _timed_run(study, spec, dict(probe, d=d), trials)
        per_step[d] = min(per_step[d], sec / steps)
    power = math.log(per_step[hi] / per_step[lo]) / math.log(hi / lo)
    power = min(max(power, _D_POWER[0]), _D_POWER[1])
    return _power_factor(d0, power, capped)


def _warm_probe(study: TheoremStudy, spec: VerifyProblem, fixed: Mapping[str, float], hi: int,
                d0: int, trials: int, largest: Mapping[str, float] | None,
                fit: Sequence[float], warm: Sequence[int]
                ) -> tuple[dict[str, float], float | None] | None:
    """:func:`cost_over_d`'s probe at the largest ``d`` among the ``warm`` sizes (the largest
    that ``fit`` prices at most ``2 * _PROBE_SECONDS`` there, at power 1, within the memory a
    probe may hold and not past ``largest``) and its ``capped_at`` (``largest``'s size where
    a larger warm size was passed over for it, else ``None``); ``None`` if none qualifies,
    or if the one that does is priced below ``_PROBE_SECONDS / 2`` (too small to show the
    per-step cost over the fixed one: the power read from it is lower, 0.20 against the
    grown probe's 0.39 on a fake whose true power is 1, in an independent review; the probe
    then grows as without ``warm``)."""
    has_t = "T" in fixed
    scale = max(hi / d0, 1.0)
    limited = False
    for size in sorted({int(x) for x in warm if x > 0}, reverse=True):
        if largest is not None and size > (largest.get("T", 0) if has_t else largest["N"]):
            limited = True
            continue
        # the probes' point of that size (_probe_fit's: N = 32 where T grows)
        cand = dict(fixed, d=hi, **({"N": 32, "T": size} if has_t else {"N": size}))
        if _planned_bytes(study, spec, cand, trials) > PROBE_MAX_BYTES:
            continue
        pl = cost_plan(study, spec, cand, trials)
        price = scale * (float(fit[0]) * float(pl["steps"]) + float(fit[1]) * float(
            pl["gradient_evaluations"]))
        if price <= 2 * _PROBE_SECONDS:
            return (cand, _size(largest) if limited else None) \
                if price >= _PROBE_SECONDS / 2 else None
    return None


def _power_factor(d0: int, power: float, capped: float | None
                  ) -> Callable[[Mapping[str, Any]], tuple[float, float]]:
    """:func:`cost_over_d`'s factor ``(d / d0)^power`` (both entries), with its ``powers``
    and ``capped_at``."""
    def factor(p: Mapping[str, Any]) -> tuple[float, float]:
        f = (float(p.get("d", d0)) / d0) ** power
        return f, f

    factor.powers = (power, power)  # type: ignore[attr-defined]  # reported in the regime
    factor.capped_at = capped  # type: ignore[attr-defined]
    return factor


def _remembered_power(value: Any) -> tuple[float, float | None] | None:
    """A memo's power of ``d`` (in :data:`_D_POWER`) and its ``capped_at`` (``None`` or a
    positive size); ``None`` for anything else (then probed again)."""
    if not isinstance(value, Mapping):
        return None
    power: Any = value.get("power")
    capped: Any = value.get("capped")
    if not (finite_number(power) and _D_POWER[0] <= power <= _D_POWER[1]
            and (capped is None or (finite_number(capped) and capped > 0))):
        return None
    return float(power), None if capped is None else float(capped)


def remembered_cost_over_d(memo: Any, study: TheoremStudy, spec: VerifyProblem,
                           fixed: Mapping[str, float], values: Sequence[float],
                           trials: int = 4, largest: Mapping[str, float] | None = None,
                           fit: Sequence[float] | None = None, warm: Sequence[int] = ()
                           ) -> Callable[[Mapping[str, Any]], tuple[float, float]]:
    """:func:`cost_over_d`, its power of ``d`` read from ``memo`` (a
    :class:`~dpbounds.verify.costs.CostMemo`) where it holds the probe of the same arguments
    (the grid's two ends) on this host and code, else probed and remembered there (``fit``
    and ``warm``: as :func:`cost_over_d`'s; they only set where the probes run)."""
    ds = sorted({int(v) for v in values})
    parts = None if memo is None else _memo_parts(study, spec, fixed, trials, largest)
    if parts is None or len(ds) < 2:
        return cost_over_d(study, spec, fixed, values, trials, largest=largest, fit=fit,
                           warm=warm)
    key = memo.key("power_of_d", ends=[ds[0], ds[-1]], **parts)
    hit = memo.get(key, _remembered_power)
    if hit is not None:
        return _power_factor(int(fixed["d"]), *hit)
    factor = cost_over_d(study, spec, fixed, values, trials, largest=largest, fit=fit,
                         warm=warm)
    powers = getattr(factor, "powers", None)
    if powers:
        cap = getattr(factor, "capped_at", None)
        memo.put(key, dict(power=float(powers[0]), capped=None if cap is None else float(cap)),
                 what=dict(kind="power_of_d", theorem=study.theorem, problem=spec.kind,
                           point=dict(fixed), ends=[ds[0], ds[-1]], trials=int(trials)))
    return factor


#: :func:`d_factor`'s probe: the smallest probe size whose variable part the fit at the
#: largest ``d`` prices at least this (CPU seconds) at the point's own ``d``
_FACTOR_SECONDS = 0.1


def d_factor(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
             trials: int, fit: Sequence[float], largest: Mapping[str, float],
             memo: Any = None) -> float:
    """The factor (at most 1) on the cost per step and evaluation of ``fit`` (``(a, b, c)``,
    measured at a larger ``d`` than ``point``'s, at ``trials`` trials) at ``point``'s ``d``.

    One run, at ``trials`` trials, of a probe shaped as :func:`_probe_fit`'s (``N = 32``
    and ``T`` from 200 where the point has a ``T``, else ``N`` from 32; grown 4x or 3x a
    rung, never past ``largest``) at ``point``'s ``d``: the smallest rung whose variable
    part ``fit`` prices at least :data:`_FACTOR_SECONDS` (a run of 0.1-0.2 CPU-s), else the
    largest. The factor is its run less the fixed cost ``c`` over that price, clamped to
    ``[0.01, 1]`` (a smaller ``d`` costs no more a step). Read from and kept in ``memo`` (a
    :class:`~dpbounds.verify.costs.CostMemo`) as the fits are.

    The probe's size is chosen by the fit's price, not by a timed run: a fit that prices
    the runs far too low would grow it up to ``largest`` (the largest grid point, which
    the study runs anyway). The fit is measured at the largest ``d``, where a step costs
    the most, so at a smaller ``d`` it prices high, not low.

    Why: a quick grid over ``d`` was priced at its largest ``d`` (the safe side).
    Algorithm 1's and 2's ``--quick --vary d`` estimates read 3.7-3.8x their runs once their
    fits told the per-trial cost from the per-step one (stop 66), DP-MASG's 2.0-2.7x (its
    ``d = 2`` point costs 0.3 of a step at ``d = 32``)."""
    parts = None if memo is None else memo_parts(
        study, spec, point=dict(point), trials=int(trials), largest=dict(largest),
        fit=[float(x) for x in fit[:3]])
    key = None if parts is None else memo.key("d_factor", **parts)
    if key is not None:
        hit = memo.get(key, lambda v: float(v) if finite_number(v) and 0 < v <= 1 else None)
        if hit is not None:
            return hit
    a, b, c = (float(x) for x in fit[:3])
    has_t = "T" in point
    n, t = 32, 200
    probe, var = None, 0.0
    for k in range(_PROBE_MAX):
        cand = dict(point, N=n, **({"T": t} if has_t else {}))
        if k and (t > largest.get("T", 0) if has_t else n > largest["N"]):
            break
        if k and _planned_bytes(study, spec, cand, trials) > PROBE_MAX_BYTES:
            break
        pl = cost_plan(study, spec, cand, trials)
        probe, var = cand, a * float(pl["steps"]) + b * float(pl["gradient_evaluations"])
        if var >= _FACTOR_SECONDS:
            break
        if has_t:
            t *= 4
        else:
            n *= 3
    assert probe is not None
    sec, _ = _timed_run(study, spec, probe, trials)
    factor = min(max((sec - c) / max(var, 1e-12), 0.01), 1.0)
    if key is not None:
        memo.put(key, factor, what=dict(kind="d_factor", theorem=study.theorem,
                                        problem=spec.kind, point=dict(point),
                                        trials=int(trials)))
    return factor


def _planned_bytes(study: TheoremStudy, spec: VerifyProblem, point: Mapping[str, float],
                   trials: int) -> float:
    """The dry plan's ``memory_bytes`` of ``point`` (0 where a plan does not say;
    :func:`cost_plan`)."""
    return float(cost_plan(study, spec, point, trials).get("memory_bytes", 0.0))


def _informative(p: Mapping[str, Any]) -> bool:
    b = p["bound"]
    return bool(math.isfinite(b) and b < min(p["trivial"], p["do_nothing"]))


def _lattice(lo: float, hi: float, per_decade: int = 10) -> list[int]:
    k = np.arange(math.floor(per_decade * math.log10(lo)),
                  math.ceil(per_decade * math.log10(hi)) + 1)
    return sorted({int(round(10 ** (x / per_decade))) for x in k})


def _knobs(study: TheoremStudy, fixed: Mapping[str, float]) -> list[dict[str, float]]:
    """Settings of the scale knobs other than ``N``: ``T`` for Yang et al., else none."""
    if "T" in study.fixed:
        return [dict(T=t) for t in _T_LATTICE if t >= int(fixed.get("T", 0))]
    return [{}]


#: budget fitting of an informative grid over ``N``: (span, points), widest first
_SPANS = ((10.0, 4), (4.0, 4), (2.0, 3), (1.5, 2))
#: fewest trials per point the planner goes down to (Student-t intervals stay exact)
MIN_TRIALS = 4


def plan_grid(study: TheoremStudy, spec: VerifyProblem, var: str, fixed: Mapping[str, float],
              values: Sequence[float] | None, trials: int, *, path: bool = False,
              cost: tuple[float, ...] | None = None, max_seconds: float = 900.0,
              allow_expensive: bool = False, user_fixed: Sequence[str] = (),
              reduce_trials: bool = False,
              cost_for: Callable[[int], tuple[float, ...]] | None = None,
              cost_factor: Callable[[Mapping[str, Any]], tuple[float, float]] | None = None,
              fits_memory: Callable[[Sequence[Mapping[str, Any]], int], bool] | None = None,
              too_large: list[str] | None = None
              ) -> GridPlan | None:
    """The informative (or path) grid of a full study; ``None`` when none is found below
    ``N = 1e6`` (the caller then runs the default grid, labelled).

    ``fixed``: the study's fixed values; ``values``: the default grid of ``var`` (kept for
    ``d`` and ``eps``); ``user_fixed``: keys the user set (never changed).
    ``cost``: the ``(a, b)`` of :func:`seconds_per_evaluation` at ``trials`` trials
    (default: measured now), or ``(a, b, c)`` with the fixed cost ``c`` of a run that every
    point pays once (its calibration, probes and checks; :func:`_probe_fit`'s ``c``, which
    ``verify``'s planner passes: without it a 4-point grid of 1e6-step runs was priced at
    0.46 of what it ran).

    Budget fitting (unless ``allow_expensive``): when the grid of four points from the
    first informative ``N`` to ten times it costs more than ``max_seconds``, the span is
    narrowed (factor 10, 4, 2, 1.5; 4, 4, 3, 2 points) and, with ``reduce_trials``, the
    trials lowered (``trials``, 8, :data:`MIN_TRIALS`; each count's cost measured by
    ``cost_for(trials)``, default :func:`seconds_per_evaluation`, and scaled per point by
    ``cost_factor(point)`` where given, e.g. :func:`cost_over_d`), the widest span first:
    the slope needs the span, the ratio and exact verdicts stay honest with fewer trials
    (Student-t intervals, exact standard deviations). The plan's ``extra["trials"]`` is the
    count to run. What still does not fit loses its most expensive points.

    ``fits_memory(points, trials)``: whether a grid fits the memory budget; a setting of the
    knobs whose grid does not, even at the fewest trials, is not planned (``too_large`` gets
    one line for it), and budget fitting keeps only grids that fit. Before, the planner chose
    ``yang.nsgd --vary N``'s T = 1e7 grid (4.12 GiB at 4 trials) and the study then refused
    it against the default 4 GiB budget, after 42 CPU-s of planning.
    """
    if cost_for is None:
        cost_for = ProbeCosts(study, spec, fixed)
        if cost is not None:
            cost_for.fits[trials] = (cost, None)  # type: ignore[assignment]
    # the cost is measured (probe runs, seconds of CPU) only where a grid that fits the memory
    # budget is priced: a study whose every grid is refused for memory runs no probe
    given_cost = cost

    # a study with settings of T (Yang et al.'s) compares its knobs' cheapest grids by their
    # cost: priced with one fit, as before (fits sized to each knob, compared across knobs,
    # chose another T in an independent review's case, and probed each larger knob again)
    knobbed = "T" in study.fixed and "T" not in user_fixed

    def cost_at(t: int, points: Sequence[Mapping[str, Any]]) -> tuple[float, ...]:
        # a sized cost (ProbeCosts) probes only up to the grid it prices
        assert cost_for is not None
        if getattr(cost_for, "sized", False) and not knobbed:
            return cost_for(t, largest=_largest(points))  # type: ignore[call-arg]
        return cost_for(t)

    def base_cost(points: Sequence[Mapping[str, Any]]) -> tuple[float, ...]:
        return given_cost if given_cost is not None else cost_at(trials, points)
    def most_trials(points: Sequence[Mapping[str, Any]]) -> int:
        # the most trials (of _fit's counts) whose grid fits the memory budget; the asked
        # trials where none does or none is checked (a given cost is the asked trials')
        if fits_memory is None or given_cost is not None or not reduce_trials:
            return trials
        counts = sorted({t for t in (trials, 8, MIN_TRIALS) if MIN_TRIALS <= t <= trials},
                        reverse=True)
        return next((t for t in counts if fits_memory(points, t)), trials)
    headline = study.headline_exponent(var)
    best: tuple[float, GridPlan] | None = None
    candidates: list[tuple[dict[str, Any], tuple[float, ...], str, int | None]] = []
    n_free = "N" not in user_fixed and var != "N"
    for knob in _knobs(study, fixed) if "T" not in user_fixed else [{}]:
        base = dict(fixed, **knob)
        cut_note = ""
        n0: int | None = None
        if var == "N":
            # Yang et al.'s plans calibrate an RDP accountant each: a coarser lattice
            lattice = _lattice(max(10.0, float(fixed.get("B", 1)) * 2), _N_MAX,
                               4 if knob else 5)
            def plan_at(n: int, base: dict[str, Any] = base) -> Mapping[str, Any]:
                return dry_plan(study, spec, dict(base, N=n), trials)

            def informative_n(n: int, base: dict[str, Any] = base) -> bool:
                return informative(study, spec, dict(base, N=n), trials)
            n0 = _n_start(lattice, plan_at, path, headline, informative=informative_n)
            if n0 is None:
                continue
            if not knob and not path:  # refine: 20 per decade below the coarse point
                fine = [n for n in _lattice(n0 / 10 ** 0.2, n0, 20) if n < n0]
                for n in fine:
                    if informative(study, spec, dict(base, N=n), trials):
                        n0 = n
                        break
            vals = _span(n0, *_SPANS[0])
        else:
            vals = tuple(float(v) for v in (values or ()))
            if path:
                pv = _path_values(study, spec, var, base, trials, headline)
                if pv is None:
                    continue
                vals = pv
            ns = [int(base["N"])]
            if n_free:
                ns = [n for n in _lattice(float(base["N"]), _N_MAX, 4) if n >= base["N"]]
            seen: dict[tuple[int, float], bool] = {}
            # how often each value was found vacuous: a window's values are asked the
            # hardest first (the same answer, fewer calibrations: the largest d or the
            # smallest eps is vacuous at the most N, and was asked last)
            vacuous: dict[float, int] = {}

            def informative_at(n: int, v: float, seen: dict[tuple[int, float], bool] = seen,
                               base: dict[str, Any] = base,
                               vacuous: dict[float, int] = vacuous) -> bool:
                if (n, v) not in seen:
                    pt = dict(base, N=n, **{var: v})
                    seen[n, v] = informative(study, spec, pt, trials)
                    if not seen[n, v]:
                        vacuous[v] = vacuous.get(v, 0) + 1
                return seen[n, v]

            def hardest_first(cut: Sequence[float],
                              vacuous: dict[float, int] = vacuous) -> list[float]:
                return sorted(cut, key=lambda u: -vacuous.get(u, 0))
            # the whole grid first, then its widest windows: the regime answers "up to
            # which d (from which eps) is this bound informative"; the widest informative
            # window within the budget wins, else the cheapest informative one (its most
            # expensive points are dropped below: an informative pair beats the vacuous
            # default grid)
            found: list[tuple[tuple[float, ...], int]] = []
            price: list[float] = []
            cheapest = False
            over_memory = False
            for cut in _grid_cuts(vals, path):
                n_ok = next((n for n in ns if all(informative_at(n, v)
                                                  for v in hardest_first(cut))), None)
                if n_ok is None:
                    continue
                t_min = min(trials, MIN_TRIALS) if reduce_trials else trials  # see _fit
                if fits_memory is not None and not fits_memory(
                        [dict(base, N=n_ok, **{var: v}) for v in cut], t_min):
                    over_memory = True
                    continue  # a narrower window may fit; this one is never run (not priced)
                found.append((cut, n_ok))
                if allow_expensive:
                    break  # the widest informative window runs, whatever it costs
                # priced at the asked trials first: when that fits the budget the fewest
                # trials' price (a second probe fit, ~5 CPU-s for Yang et al.'s) is not
                # needed; where timing noise prices the fewest trials higher, this keeps the
                # wider window. A window over the memory budget at the asked trials is priced
                # at the most trials that fit (those that would run) unless the asked trials'
                # fit is already there (its price bounds the fewer trials'): before,
                # normalized_sgd's T = 1e7 windows were priced by a 16-trial probe fit
                # (4.5 CPU-s) that nothing ran, and then by a 4-trial one
                pts = [dict(base, N=n_ok, **{var: v}) for v in cut]
                t_first = most_trials(pts)
                if t_first != trials and trials in getattr(cost_for, "fits", {}):
                    t_first = trials
                p_all = sum(_costed(study, spec, var, dict(base, N=n_ok), cut, t_first,
                                    base_cost(pts) if t_first == trials
                                    else cost_at(t_first, pts), "", "", {},
                                    cost_factor).seconds)
                if p_all <= max_seconds:
                    price.append(p_all)
                    break
                price.append(p_all if t_min == t_first else sum(_costed(
                    study, spec, var, dict(base, N=n_ok), cut, t_min, cost_at(t_min, pts),
                    "", "", {}, cost_factor).seconds))
                if price[-1] <= max_seconds:
                    break
            else:
                if found:
                    found, cheapest = [found[int(np.argmin(price))]], True
            if not found:
                if over_memory and too_large is not None:
                    too_large.append(_knob_label(knob))
                continue
            cut, chosen = found[-1]
            if len(cut) < len(vals):
                over = len(found) > 1
                cut_note = (f"; {var} grid cut to [{cut[0]:g}, {cut[-1]:g}] " + (
                    "(the cheapest informative window; every one is over the budget)"
                    if cheapest else "(a wider window is " + (
                        "over the budget" if over and not over_memory else
                        "over the time or memory budget" if over else
                        "over the memory budget" if over_memory else
                        f"vacuous somewhere at every N <= {_N_MAX:g}") + ")"))
            vals = cut
            base["N"] = chosen
        if fits_memory is not None:
            t_least = min(trials, MIN_TRIALS) if reduce_trials else trials
            if not fits_memory([dict(base, **{var: v}) for v in vals], t_least):
                if too_large is not None:
                    too_large.append(_knob_label(knob))
                continue
        why = ("planned: bound below min(trivial, do-nothing) at every point"
               + (f"; local slope within {_SLOPE_TOL} of the headline exponent {headline:g}"
                  if path and headline is not None else "")
               + f"; {', '.join(f'{k}={v:g}' for k, v in knob.items())}"
               * bool(knob) + cut_note)
        candidates.append((base, vals, why, n0))
    # the settings of the knobs are compared by their price at the asked trials; a single
    # one is priced at the most trials whose grid fits the memory budget (what _fit below
    # runs): the asked trials' price of a grid over the memory budget is never used, and it
    # cost a probe fit of its own (4.3 of normalized_sgd --vary N's 7.8 CPU-s of planning)
    for base, vals, why, n0 in candidates:
        pts = [dict(base, **{var: v}) for v in vals]
        t_plan = trials if len(candidates) > 1 else most_trials(pts)
        plan = _costed(study, spec, var, base, vals, t_plan,
                       base_cost(pts) if t_plan == trials else cost_at(t_plan, pts),
                       "path" if path else "informative", why, dict(first_informative=n0),
                       cost_factor)
        total = sum(plan.seconds)
        if best is None or total < best[0]:
            best = (total, plan)
    if best is None:
        return None
    plan = best[1]
    inform = all(b < f for b, f in zip(plan.bounds, plan.floors))
    if (not allow_expensive and sum(plan.seconds) > max_seconds) or not inform:
        plan = _fit(study, spec, var, plan, trials, max_seconds, reduce_trials, cost_at,
                    allow_expensive, cost_factor, fits_memory)
    elif fits_memory is not None and not fits_memory(
            [dict(plan.fixed, **{var: v}) for v in plan.values], trials):
        plan = _fit(study, spec, var, plan, trials, max_seconds, reduce_trials, cost_at,
                    allow_expensive, cost_factor, fits_memory)
    # a plan _fit handed back unchanged is checked at the asked trials, as before it was
    # priced at the trials that fit (a vacuous one then falls back, as it did)
    if fits_memory is not None and not fits_memory(
            [dict(plan.fixed, **{var: v}) for v in plan.values],
            trials if plan is best[1] else int(plan.extra.get("trials", trials))):
        if too_large is not None:  # no span or trial count brought it within the budget
            too_large.append(plan.why.split("; ")[1] if "; " in plan.why else plan.why)
        return None
    # drop the most expensive points until the rest fits the budget
    keep = sorted(range(len(plan.values)), key=lambda i: plan.seconds[i])
    while not allow_expensive and keep and sum(plan.seconds[i] for i in keep) > max_seconds:
        keep.pop()
    keep.sort()
    skipped = tuple(f"{var}={plan.values[i]:g}: estimated {duration(plan.seconds[i])}"
                    for i in range(len(plan.values)) if i not in keep)
    return GridPlan(plan.regime, plan.why, tuple(plan.values[i] for i in keep), plan.fixed,
                    tuple(plan.bounds[i] for i in keep), tuple(plan.floors[i] for i in keep),
                    tuple(plan.seconds[i] for i in keep), skipped,
                    plan.local_slopes, dict(plan.extra, full_values=list(plan.values),
                                            full_estimated_seconds=list(plan.seconds)))


def _grid_cuts(vals: Sequence[float], path: bool) -> list[tuple[float, ...]]:
    """``vals``, then (not on a path) the contiguous windows of ``vals`` refined to a ratio
    of 2, widest first (the smaller values first among equals), down to :data:`_MIN_CUT`
    values: the grids an informative plan over ``d`` or ``eps`` may run."""
    vals = tuple(vals)
    if path or len(vals) < 2:
        return [vals]
    # windows of the grid refined to ratio 2 (integers stay integers)
    lo, hi = float(vals[0]), float(vals[-1])
    fine = [lo]
    while lo > 0 and fine[-1] * 2.0 < hi * (1 - 1e-9):
        fine.append(fine[-1] * 2.0)
    dense = tuple(sorted(set(fine) | {hi}))
    cuts = [dense[i:i + m] for m in range(len(dense) - 1, _MIN_CUT - 1, -1)
            for i in range(len(dense) - m + 1)]
    return [vals] + cuts


#: fewest grid values a cut grid keeps (a slope needs a span)
_MIN_CUT = 3


def _knob_label(knob: Mapping[str, float]) -> str:
    """How a refused setting of the knobs is named in the memory fallback's reason."""
    return ", ".join(f"{k}={v:g}" for k, v in knob.items()) or "the informative grid"


def _span(n0: int, span: float, points: int) -> tuple[float, ...]:
    """``points`` values of ``N`` from ``n0`` to ``span * n0``, geometric."""
    return tuple(float(int(round(n0 * span ** (k / (points - 1))))) for k in range(points))


def _costed(study: TheoremStudy, spec: VerifyProblem, var: str, base: Mapping[str, float],
            vals: Sequence[float], trials: int, cost: tuple[float, ...], regime: str,
            why: str, extra: Mapping[str, Any],
            factor: Callable[[Mapping[str, Any]], tuple[float, float]] | None = None
            ) -> GridPlan:
    """The plan of ``vals`` with its bounds, floors and estimated CPU seconds (the cost per
    step and per evaluation scaled per point by ``factor(point)`` where given; a third entry
    of ``cost``, the probes' fixed cost ``c`` of a run, added once per point)."""
    fixed = float(cost[2]) if len(cost) > 2 else 0.0
    pts = [dict(base, **{var: v}) for v in vals]
    for p in pts:
        for key in ("d", "N", "T", "B"):
            if key in p:
                p[key] = int(p[key])
    plans = [dry_plan(study, spec, p, trials) for p in pts]
    fs = [factor(p) if factor is not None else (1.0, 1.0) for p in pts]
    secs = tuple(point_seconds(spec, pl, p, trials, cost, f)
                 for pl, p, f in zip(plans, pts, fs, strict=True))
    bnd = tuple(float(pl["bound"]) for pl in plans)
    floor = tuple(float(min(pl["trivial"], pl["do_nothing"])) for pl in plans)
    slopes = tuple(float(np.log(bnd[i + 1] / bnd[i]) / np.log(vals[i + 1] / vals[i]))
                   for i in range(len(vals) - 1))
    return GridPlan(regime, why, tuple(float(v) for v in vals),
                    {k: v for k, v in base.items() if k != var}, bnd, floor, secs, (), slopes,
                    dict(extra, seconds_per_step=cost[0], seconds_per_evaluation=cost[1],
                         fixed_seconds_per_point=fixed, trials=trials,
                         **({"trace_seconds_per_sample": [
                             trace_seconds(spec, int(p["d"]), trials) for p in pts]}
                            if any("trace_samples" in pl for pl in plans) else {}),
                         **({"cost_power_of_d": list(getattr(factor, "powers", ()))}
                            if factor is not None else {})))


def _fit(study: TheoremStudy, spec: VerifyProblem, var: str, plan: GridPlan, trials: int,
         max_seconds: float, reduce_trials: bool,
         cost_at: Callable[[int, Sequence[Mapping[str, Any]]], tuple[float, ...]],
         allow_expensive: bool = False,
         factor: Callable[[Mapping[str, Any]], tuple[float, float]] | None = None,
         fits_memory: Callable[[Sequence[Mapping[str, Any]], int], bool] | None = None
         ) -> GridPlan:
    """The widest span (then the most trials) whose grid fits ``max_seconds``; the
    narrowest, fewest-trial grid when none does (every candidate informative at every
    point; the bound need not fall monotonically, e.g. Yang et al.'s at a fixed ``T``)."""
    n0 = plan.extra.get("first_informative")
    spans = [(s, k) for s, k in _SPANS] if var == "N" and n0 else [(None, None)]
    counts = sorted({t for t in (trials, 8, MIN_TRIALS) if MIN_TRIALS <= t <= trials},
                    reverse=True) if reduce_trials else [trials]
    base = dict(plan.fixed)
    last = plan
    for span, k in spans:
        vals = plan.values if span is None else _span(int(n0 or 0), span, int(k or 0))
        for t in counts:
            if fits_memory is not None and not fits_memory(
                    [dict(base, **{var: v}) for v in vals], t):
                continue  # over the memory budget: fewer trials, or a narrower span
            why = plan.why + (f"; narrowed to a factor {span:g}" if span not in (None, 10.0)
                              else "") + (f"; {t} trials to fit the budget" if t != trials
                                          else "")
            cand = _costed(study, spec, var, base, vals, t,
                           cost_at(t, [dict(base, **{var: v}) for v in vals]), plan.regime, why,
                           {k2: v for k2, v in plan.extra.items()
                            if k2 not in ("seconds_per_step", "seconds_per_evaluation",
                                          "trials", "cost_power_of_d")}, factor)
            if all(_informative(dict(bound=b, trivial=f, do_nothing=f))
                   for b, f in zip(cand.bounds, cand.floors)):
                last = cand
                if sum(cand.seconds) <= max_seconds or allow_expensive:
                    return cand
    return last


def _n_start(ns: Sequence[int], plan_at: Callable[[int], Mapping[str, Any]], path: bool,
             headline: float | None, informative: Callable[[int], bool] | None = None
             ) -> int | None:
    """The first informative ``N`` of the lattice ``ns`` (path: whose local slope to the next
    lattice point is within tolerance of the headline, too) whose factor-10 grid stays below
    ``10 * N_MAX``; ``None`` if there is none.

    ``plan_at(n)`` (a dry plan) is asked for in lattice order and only as far as the answer
    needs (path: one point beyond). Before, every lattice point up to ``N = 1e6`` was planned
    first: ``strongly_convex.nag --vary N`` built quadratic instances of up to 1e6 samples
    (1.3 of its 1.9 CPU-s of planning) for a grid that starts at ``N = 11``, and Yang et
    al.'s ``--vary N`` calibrated the noise at every ``N`` above the first informative one.
    ``informative(n)``: whether ``plan_at(n)`` is informative (:func:`informative`: the same
    answer, from a cheap lower plan or the study's ``is_informative``; the dry plan is then
    asked for only on a path, for its slope)."""
    cache: dict[int, Mapping[str, Any]] = {}

    def plan(i: int) -> Mapping[str, Any]:
        if i not in cache:
            cache[i] = plan_at(ns[i])
        return cache[i]

    for i, n in enumerate(ns):
        if not (informative(n) if informative is not None else _informative(plan(i))):
            continue
        if path:
            if headline is None or i + 1 >= len(ns):
                return None
            with np.errstate(divide="ignore", invalid="ignore"):  # a zero bound: inf, as before
                ratio = np.float64(plan(i + 1)["bound"]) / np.float64(plan(i)["bound"])
            s = math.log(ratio) / math.log(ns[i + 1] / n)
            if abs(s - headline) > _SLOPE_TOL:
                continue
        grid = [int(round(n * 10 ** (k / 3))) for k in range(4)]
        if grid[-1] > _N_MAX * 10:
            return None
        return grid[0]
    return None


def _path_values(study: TheoremStudy, spec: VerifyProblem, var: str,
                 base: Mapping[str, float], trials: int, headline: float | None
                 ) -> tuple[float, ...] | None:
    """A factor-10 window of ``var`` (``d`` or ``eps``) where the bound's local slope is within
    tolerance of the headline exponent (at the base point's ``N``)."""
    if headline is None:
        return None
    lat = (_lattice(1, 1024, 3) if var == "d" else [10 ** (k / 4) for k in range(-4, 9)])
    vals = sorted({float(v) for v in lat})
    b = [dry_plan(study, spec, dict(base, **{var: int(v) if var == "d" else v}), trials)["bound"]
         for v in vals]
    for i in range(len(vals) - 1):
        s = math.log(b[i + 1] / b[i]) / math.log(vals[i + 1] / vals[i])
        if abs(s - headline) <= _SLOPE_TOL:
            v0 = vals[i]
            out = [v0 * 10 ** (k / 3) for k in range(4)]
            return tuple(float(round(v)) if var == "d" else v for v in out)
    return None
