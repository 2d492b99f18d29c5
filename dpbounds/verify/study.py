r"""Scaling studies: tune → run → bound at the run's own parameters → slopes with CIs → verdicts.

:func:`scaling_study` sweeps one variable (``d``, ``N`` or ``eps``) of a registered theorem
(:mod:`dpbounds.verify.theorems` says how each one is run), one sweep cell per grid point
(:mod:`dpbounds.sweep`: progress bar, optional store for resume), and returns a frozen
:class:`ScalingResult`:

* per-trial measurements of every component (``trials`` array per component, points × trials);
* per-point means with Student-t confidence intervals;
* log–log slopes of the means with bootstrap intervals (:mod:`dpbounds.verify.statistics`);
* the bound of every component at each run's own parameters, its least-squares slope on the
  same grid (``bound_slope``) and its segment slopes (``bound_local_slopes``);
* the predicted exponents: the paper's headline exponent (:meth:`exponents`, the registry's
  scaling) and each component's exponent along the swept path (the other variables fixed);
* ``vacuous`` per point (the theorem's bound ``>= G``, the trivial bound of a gradient norm);
* verdicts that can fail (:mod:`dpbounds.verify.verdicts`).

Seeds: grid point ``j`` uses ``(seed, j)`` for its data set and its runs; trial ``k`` of point
``j`` depends only on ``(seed, j, k)``.

Example
-------
>>> from dpbounds.verify import scaling_study
>>> res = scaling_study("tran_cutkosky.alg1", vary={"N": [250, 500]}, trials=3,
...                     replicates=200)                                   # doctest: +SKIP
>>> res.slopes["noise"].slope < 0                                         # doctest: +SKIP
True
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive
from dpbounds.bounds.theorem import Scaling
from dpbounds.provenance import exponent_label
from dpbounds.verify.costs import CostMemo
from dpbounds.verify.problems import VerifyProblem, problem
from dpbounds.verify.replay import study_replay
from dpbounds.verify.statistics import (
    MeanCI,
    SlopeCI,
    bootstrap_slope,
    local_slopes,
    loglog_slope,
    mean_ci,
)
from dpbounds.verify.theorems import MUTATIONS, TheoremStudy, get_study
from dpbounds.verify.verdicts import Verdict, Z, energy_power, ratio_at_most, slope_at_most

__all__ = ["VARIABLES", "ScalingResult", "scaling_study"]

#: components measured as F(x) - F* (a study's suboptimality, excess risk): each gets the
#: sign verdict of :func:`_sign_verdicts`
SUBOPTIMALITY: frozenset[str] = frozenset({"subopt", "subopt_uniform", "excess_risk",
                                          "excess_avg"})
#: round-off allowed below 0, relative to max(1, |F*|) (the declared problems' build check's)
SIGN_RTOL = 1e-9

#: variables a study may sweep
VARIABLES: tuple[str, ...] = ("d", "N", "eps")
_INTEGER_VARS = ("d", "N", "T", "B")


def _cell(theorem: str, problem: Mapping[str, Any], point: Mapping[str, float],
          mutation: str | None, trials: int, seed: Any) -> dict[str, Any]:
    """One grid point (a sweep cell): flat record of arrays and JSON values."""
    study = get_study(theorem)
    spec = VerifyProblem(**problem)
    inst = spec.build(int(point["N"]), int(point["d"]), seed=seed)
    out = study.run_point(point, inst, trials, seed, mutation)
    rec: dict[str, Any] = {f"m:{k}": np.asarray(v, dtype=float)
                           for k, v in out["measured"].items()}
    rec.update({f"b:{k}": float(v) for k, v in out["bound"].items()})
    rec["params"] = {k: (float(v) if isinstance(v, float) else v)
                     for k, v in out["params"].items()}
    rec["notes"] = list(out["notes"])
    if any(c in SUBOPTIMALITY for c in study.components):
        # the F* every F(x) - F* of this point used (the sign verdict names it)
        opt = inst.objective.optimum
        rec["f_star"] = float(opt.value)
        rec["f_star_how"] = str(opt.method)
    rec["violations"] = list(out["violations"])
    rec["trivial"] = float(out["trivial"])
    rec["do_nothing"] = float(out["do_nothing"])
    rec["lower_bound"] = float(out["lower_bound"])
    checks = out.get("checks", {})
    rec.update({f"c:{k}": np.asarray(c["values"], dtype=float) for k, c in checks.items()})
    rec["checks"] = {k: {m: c[m] for m in ("kind", "exact", "sd", "rtol", "oracle")}
                     | {"energy": bool(c.get("energy", False))}
                     | {m: c[m] for m in ("power", "power_needed", "needs", "k4", "family")
                        if m in c}
                     for k, c in checks.items()}
    return rec


@dataclass(frozen=True)
class ScalingResult:
    """The outcome of :func:`scaling_study` (frozen; arrays are read-only copies)."""

    theorem: str
    vary: str
    values: tuple[float, ...]
    problem: VerifyProblem
    fixed: Mapping[str, float]
    components: tuple[str, ...]
    utility: tuple[str, ...]
    trials: Mapping[str, np.ndarray]
    measured: Mapping[str, tuple[MeanCI, ...]]
    bound: Mapping[str, np.ndarray]
    trivial: np.ndarray
    do_nothing: np.ndarray
    vacuous: tuple[bool, ...]
    slopes: Mapping[str, SlopeCI]
    bound_slope: Mapping[str, float]
    bound_local_slopes: Mapping[str, tuple[float, ...]]
    headline_exponent: float | None
    path_exponents: Mapping[str, float | None]
    params: tuple[Mapping[str, Any], ...]
    notes: tuple[tuple[str, ...], ...]
    violations: tuple[tuple[str, ...], ...]
    lower_bound: np.ndarray
    verdicts: tuple[Verdict, ...]
    mutation: str | None = None
    seconds: float = 0.0
    level: float = 0.95
    regime: Mapping[str, Any] = field(default_factory=dict)

    @property
    def informative(self) -> tuple[bool, ...]:
        """Per point: the theorem's bound is below both the trivial bound and what an
        algorithm that does not move achieves (the start's value)."""
        b = self.bound[self.utility[0]]
        return tuple(bool(x < t and x < z) for x, t, z in zip(b, self.trivial,
                                                              self.do_nothing))

    def exponents(self) -> Scaling | None:
        """The theorem's headline scaling (:meth:`dpbounds.bounds.registry.Entry.scaling`)."""
        return get_study(self.theorem).entry.scaling()

    @property
    def holds(self) -> bool:
        """No checked verdict failed (vacuous verdicts are not passes, nor failures)."""
        return not any(v.failed for v in self.verdicts)

    @property
    def inconclusive(self) -> tuple[str, ...]:
        """Why the study shows less than it claims, each with what would decide it (empty
        when it shows both what it checks): no utility point informative (every utility
        verdict vacuous: an algorithm that does not move passes), or a noise-energy exact
        check that cannot resolve a 10 % change (:func:`~dpbounds.verify.verdicts.
        energy_power`)."""
        out = []
        if not any(self.informative):
            vacuous = (f"the bound of {self.utility[0]} is vacuous at every point (>= the "
                       "trivial bound or the start's value): no utility claim was tested, an "
                       "algorithm that does not move passes; ")
            if str(self.regime.get("why", "")).startswith(("no informative grid found",
                                                            "no path grid found")):
                # the advice below sent the user back to the search that had just failed
                # (walkthrough of stop 74)
                out.append(vacuous + "the planner found no N <= 1e6 where it is informative: "
                           "this bound shows nothing on this problem (a tighter bound, or "
                           "another --problem, could)")
            else:
                out.append(vacuous + f"decided on an informative grid: dpbounds verify "
                           f"{self.theorem} --vary N --grid informative (planned from the "
                           "bound)")
        elif math.isinf(self.undetected_factor):
            # a walkthrough's --trials 2 passed (exit 0) with "a bound smaller by any factor
            # would also pass": the ratio rows held only because their intervals were wide
            out.append(f"no informative point bounds {self.utility[0]}/bound away from 0 (every "
                       "lower 95% end of measured/bound is at or below 0): the runs cannot tell "
                       "this bound from one smaller by any factor, so its constants were not "
                       "tested; decided with more trials (--trials) or at points where the "
                       "error is larger than its noise")
        out += [f"{v.case}: {v.needs}" for v in self.verdicts
                if v.gating and not v.powered and not v.failed]
        return tuple(out)

    @property
    def status(self) -> str:
        """``"FAIL"`` (a gating verdict fails: exit 1), ``"INCONCLUSIVE"`` (none fails, but
        :attr:`inconclusive` lists what was not shown: exit 3) or ``"PASS"`` (exit 0)."""
        if not self.holds:
            return "FAIL"
        return "INCONCLUSIVE" if self.inconclusive else "PASS"

    @property
    def undetected_factor(self) -> float:
        """How far the bound could be too small and this study still pass: the smallest
        ``k / (lower end of measured/bound)`` over the checked ``measured/bound <= k`` rows
        of the utility component (a bound divided by more than this would fail one; by
        less, every one passes; ``inf`` when a lower end is at or below 0). 1
        where the bound is met with no room; ``nan`` where no ratio row was checked. A PASS
        at 30 shows the bound holds here, not that its constants are right within 30x."""
        rows = [v for v in self.verdicts
                if v.case.startswith(f"{self.utility[0]} over ")
                and v.claim.startswith("measured/bound <=") and v.gating and v.holds
                and not v.vacuous]
        out = [v.predicted / v.ci[0] if v.ci[0] > 0.0 else math.inf for v in rows]
        return max(1.0, min(out)) if out else math.nan

    def ratio_range(self, component: str) -> tuple[float, float]:
        """Smallest and largest ``measured mean / bound`` over the grid."""
        r = np.array([m.mean for m in self.measured[component]]) / self.bound[component]
        return float(np.min(r)), float(np.max(r))

    def to_json(self) -> dict[str, Any]:
        """The JSON document of ``dpbounds verify --json`` (see ``docs/verify.md``)."""
        u = self.utility[0]
        return _clean({
            "theorem": self.theorem,
            "vary": self.vary,
            "regime": dict(self.regime),
            "values": list(self.values),
            "problem": self.problem.as_dict(),
            "fixed": dict(self.fixed),
            "mutation": self.mutation,
            "utility": u,
            "measured": {c: [m.as_dict() for m in self.measured[c]] for c in self.components},
            "bound": [float(b) for b in self.bound[u]],
            "bound_components": {c: [float(b) for b in self.bound[c]]
                                 for c in self.components},
            "trivial_bound": [float(t) for t in self.trivial],
            "do_nothing": [float(t) for t in self.do_nothing],
            "informative": [
                {"informative": i, "below_trivial": bool(b < t), "below_do_nothing":
                 bool(b < z)} for i, b, t, z in zip(self.informative, self.bound[u],
                                                    self.trivial, self.do_nothing)],
            "slopes": {c: self.slopes[c].as_dict() for c in self.components},
            "predicted_exponent": self.headline_exponent,
            "path_exponents": dict(self.path_exponents),
            "bound_local_slope": self.bound_slope[u],
            "bound_slopes": dict(self.bound_slope),
            "bound_local_slopes": {c: list(v) for c, v in self.bound_local_slopes.items()},
            "ratio_range": {c: list(self.ratio_range(c)) for c in self.components},
            "undetected_factor": self.undetected_factor,
            "vacuous": list(self.vacuous),
            "params": [dict(p) for p in self.params],
            "notes": [list(n) for n in self.notes],
            "violations": [list(v) for v in self.violations],
            "verdicts": [{"name": f"{v.case}: {v.claim}", "holds": v.holds,
                          "status": v.status, "gating": v.gating, "powered": v.powered,
                          "power": v.power, "needs": v.needs, "measured": v.measured,
                          "predicted": v.predicted, "oracle": v.oracle,
                          "interval": list(v.ci)}
                         for v in self.verdicts],
            "holds": self.holds,
            "status": self.status,
            "inconclusive": list(self.inconclusive),
            "seconds": self.seconds,
        })


def _clean(obj: Any) -> Any:
    """JSON-safe copy: NumPy scalars to Python, non-finite floats to ``None``."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj


#: largest values a study accepts (each enters an array size, a step count or a calibration)
_LIMITS = {"d": (1, 10**5), "N": (2, 10**9), "T": (1, 10**9), "B": (1, 10**9),
           "eps": (1e-6, 1e3), "delta": (1e-300, 0.5), "radius": (1e-6, 1e6),
           # the start's distance from the minimiser (0: at it); 1e300 overflowed the initial
           # error L start^2 / 2 into a NumPy warning and "initial_error ... got nan"
           "start": (0.0, 1e6)}


def _check_value(name: str, v: float) -> float:
    lo, hi = _LIMITS.get(name, (0.0, math.inf))
    if not (math.isfinite(v) and lo <= v <= hi):
        raise ValueError(f"{name} must lie in [{lo:.3g}, {hi:.3g}], got {v:.6g}")
    if name in _INTEGER_VARS and v != int(v):
        raise ValueError(f"values of {name} must be integers, got {v:.6g}")
    return v


def _grid(study: TheoremStudy, vary: Mapping[str, Sequence[float] | None] | None, quick: bool
          ) -> tuple[str, tuple[float, ...], bool]:
    """``(variable, sorted values, whether the values were given)``."""
    if vary is None:
        vary = {"d": None}
    if len(vary) != 1:
        raise ValueError(f"vary must name exactly one variable of {VARIABLES}, got {list(vary)}")
    ((var, values),) = vary.items()
    var = check_choice("vary", var, VARIABLES)
    given = values is not None
    if values is None:
        values = study.defaults[var][1 if quick else 0]
    vals = [float(v) for v in values]
    if len(vals) < 2:
        raise ValueError("values must hold at least two grid values for a slope")
    for v in vals:
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"values must be positive and finite, got {v:.6g}")
        _check_value(var, v)
    if len(set(vals)) != len(vals):
        raise ValueError("values must be distinct")
    return var, tuple(sorted(vals)), given


def scaling_study(
    theorem: str,
    problem_spec: VerifyProblem | str | None = None,
    vary: Mapping[str, Sequence[float] | None] | None = None,
    fixed: Mapping[str, float] | None = None,
    *,
    start: float | None = None,
    trials: int | None = None,
    seed: int = 0,
    quick: bool = False,
    mutation: str | None = None,
    k: float = 1.0,
    level: float = 0.95,
    replicates: int = 2000,
    store: Any = None,
    progress: bool = False,
    grid: str = "auto",
    max_seconds: float = 900.0,
    allow_expensive: bool = False,
    max_memory: float = 4 * 2.0**30,
    allow_large: bool = False,
    estimate: bool = False,
    on_plan: Any = None,
    executor: Any = None,
    costs: CostMemo | None = None,
) -> ScalingResult:
    """Run a scaling study of a registered theorem against its algorithm.

    Parameters
    ----------
    theorem:
        Registry id or alias (``tran_cutkosky.alg1``, ``nonconvex.normalized_sgd``, ...); the
        covered ones are :data:`dpbounds.verify.theorems.STUDIES`.
    problem_spec:
        A :class:`~dpbounds.verify.problems.VerifyProblem` or a preset name
        (:data:`~dpbounds.verify.problems.PROBLEMS`); default ``"quadratic"`` for the strongly
        convex bounds, else ``"huber_well"``.
    vary:
        ``{variable: values}`` with one variable of :data:`VARIABLES`; ``values=None`` (or
        ``vary=None``: ``d``) takes the study's default grid (``quick`` picks the short one).
    fixed:
        Values of the other point parameters (``d``, ``N``, ``eps``, ``delta``; ``T``, ``B``
        for Yang et al.), over the study's defaults.
    start:
        Distance of the start from the minimiser (overrides the problem's).
    trials:
        Runs per grid point (default 16, quick 6). A planned informative grid may lower
        the default (to 8 or 4) to fit ``max_seconds``, never a count given here.
    seed:
        Point ``j`` uses ``(seed, j)``.
    quick:
        Short default grid and fewer trials (each quick study is under a minute on 2 cores).
    mutation:
        ``None`` or ``"noise_d"`` (a negative control: noise too large by ``sqrt(d)``).
    k:
        Factor of the ``measured/bound <= k`` verdicts.
    level, replicates:
        Confidence level of every interval and bootstrap replicates of the slopes.
    store:
        Optional :class:`~dpbounds.sweep.ResultStore` or folder: finished points are kept and
        a re-run resumes.
    progress:
        Show the sweep's progress bar (on a terminal).
    grid:
        ``"auto"`` (full study without values: the informative grid when affordable, else the
        default grid, labelled), ``"informative"``, ``"path"`` (the theorem's path: the
        bound's local slope within 0.1 of the headline exponent) or ``"small"`` (today's
        default grids); see :mod:`dpbounds.verify.regimes`. Given ``values`` win.
    max_seconds, allow_expensive:
        CPU budget of a planned grid (the most expensive points are skipped, with their
        estimates, unless ``allow_expensive``).
    max_memory, allow_large:
        A study whose estimated memory exceeds ``max_memory`` bytes is refused
        (``ValueError``) unless ``allow_large``.
    estimate:
        Measure the cost model (two probe runs) and record the estimated CPU seconds in
        ``regime`` even for a default or given grid.
    on_plan:
        Called with the ``regime`` dict before the grid runs (the CLI prints it).
    executor:
        Where the grid points run (:func:`~dpbounds.sweep.run_sweep`'s ``executor``):
        ``None`` (default) this process; :class:`~dpbounds.sweep.LocalProcesses` spawned
        worker processes, which load the plug-ins loaded here before a point runs. Each point's
        seed is ``(seed, j)`` wherever it runs, so the result is the same on any executor
        (threads of one process, a ``ThreadPoolExecutor``, run one point at a time: a
        point's checks patch process-wide state).
    costs:
        A :class:`~dpbounds.verify.costs.CostMemo`: the planner's cost-model fits are read
        from it where it holds them (this host, this code) and the new ones kept in it, so
        a later plan skips their probe runs (``regime["cost_fits"]`` counts both for this
        plan; a study or problem defined outside the package and its loaded plug-ins is
        probed every time). ``None`` (default): every fit is probed. ``dpbounds verify``
        keeps one in a file (``--cost-cache``).
    """
    from dpbounds.sweep import Cell, SweepError, run_sweep

    study = get_study(theorem)
    if problem_spec is None:  # the first problem the study fits (quadratic, huber_well ...)
        problem_spec = study.problems[0]
    spec = problem(problem_spec) if isinstance(problem_spec, str) else problem_spec
    if not isinstance(spec, VerifyProblem):
        raise ValueError("problem must be a VerifyProblem or one of its preset names")
    if spec.kind not in study.fitting_problems():
        raise ValueError(f"problem {spec.kind!r} does not fit {study.theorem}; valid: "
                         f"{', '.join(study.fitting_problems())}")
    if start is not None:
        spec = VerifyProblem(**{**spec.as_dict(), "start": _check_value("start", float(start))})
    if mutation is not None:
        check_choice("mutation", mutation, MUTATIONS)
        from dpbounds.verify.mutants import mutation_refusal

        why = mutation_refusal(mutation, study.algorithms)  # before planning (4.2 CPU-s)
        if why is not None:
            raise ValueError(why)
    if costs is not None and not isinstance(costs, CostMemo):
        raise ValueError(f"costs must be a CostMemo or None, got {type(costs).__name__}")
    grid = check_choice("grid", grid, ("auto", "informative", "path", "small"))
    var, values, given = _grid(study, vary, quick)
    trials_given = trials is not None
    trials = study.trials[1 if quick else 0] if trials is None else trials
    trials = check_int("trials", trials, minimum=2, maximum=10**6)
    seed = check_int("seed", seed, minimum=0)
    k = check_positive("k", k)
    fixed = dict(fixed or {})
    if var in fixed:
        raise ValueError(f"fixed: {var} is the swept variable (vary={var!r}); give its grid as "
                         f"values, not a fixed {var}={fixed[var]:.6g}")
    pts_fixed = dict(study.fixed)
    if quick:
        pts_fixed.update(study.quick_fixed)
    unknown = set(fixed) - set(study.fixed)
    if unknown:
        raise ValueError(f"fixed: unknown parameter(s) {sorted(unknown)}; valid: "
                         f"{sorted(study.fixed)}")
    for key, v in fixed.items():
        _check_value(key, float(v))
    pts_fixed.update(fixed)
    for v in values if (given or quick or grid == "small") else ():
        # a batch larger than a point's data set of a grid that runs as it is (before any
        # probe; it surfaced as "sampling_rate must lie in [0.0, 1.0], got 1.5625" from inside
        # a run); a planned grid starts its N at 2B
        pt = _point(pts_fixed, var, v)
        if "B" in pt and "N" in pt and pt["B"] > pt["N"]:
            raise ValueError(f"the batch size B = {pt['B']} exceeds N = {pt['N']} at the grid "
                             f"point {var} = {v:g}; give B <= N (--batch-size)")
    if given and not allow_large:  # before any probe builds an instance
        _check_instance_memory(spec, [_point(pts_fixed, var, v) for v in values], max_memory)
    if costs is not None:
        costs.reset_counts()  # cost_fits counts this plan's
    from dpbounds.verify import regimes
    from dpbounds.verify.regimes import remembering

    with remembering(costs):
        regime, values, pts_fixed = _choose_grid(
            study, spec, var, values, given, pts_fixed, trials, quick, grid, max_seconds,
            allow_expensive, sorted(fixed), reduce_trials=not trials_given,
            max_memory=max_memory, allow_large=allow_large, costs=costs)
        # the planner may lower the default trials to fit the budget (never the user's)
        trials = int(regime.get("trials", trials))
        points = [_point(pts_fixed, var, v) for v in values]
        _check_memory(study, spec, points, trials, max_memory, allow_large, regime,
                      workers=_processes_here(executor))
        if (estimate or regime.get("fallback")) and "estimated_total_seconds" not in regime:
            _estimate(study, spec, points, trials, regime, costs)
        if "estimated_total_seconds" in regime:
            # the bootstrap after the runs, counted in the command's estimate (its rate read
            # from and kept in the memo of the enclosing block)
            after = regimes.analysis_seconds(study, spec, len(points), trials, replicates)
            regime["estimated_analysis_seconds"] = after
            regime["estimated_total_seconds"] = float(regime["estimated_total_seconds"]) + after
    if costs is not None:
        regime["cost_fits"] = dict(remembered=costs.hits, probed=costs.misses)
    if "estimated_total_seconds" in regime:
        # the analysis's symbolic exponents (sympy, cached per process) computed here, where
        # the command counts its planning, not left unpriced after the runs: 0.16 of
        # normalized_sgd's 0.22 CPU-s of analysis, estimated at 0.01 (stop 66)
        study.headline_exponent(var)
        study.path_exponents(var)
    if on_plan is not None:
        on_plan(regime)
    cells = [Cell(_cell, dict(theorem=study.theorem, problem=spec.as_dict(), point=p,
                              mutation=mutation), trials=trials, seed=(seed, j),
                  cost=float(p["N"]))
             for j, p in enumerate(points)]
    t0 = time.perf_counter()
    try:
        records = run_sweep(cells, store=store, progress="auto" if progress else "off",
                            desc=f"verify {study.theorem} over {var}", executor=executor)
    except SweepError as exc:
        # a bad value met inside a cell (e.g. an epsilon too small to simulate) is bad input
        for cell, tb in exc.failures:
            last = str(tb).strip().splitlines()[-1] if str(tb).strip() else ""
            if last.startswith("ValueError: "):
                point = cell.params.get("point") if hasattr(cell, "params") else None
                raise ValueError(f"{last[len('ValueError: '):]} (at {point})") from None
        raise
    seconds = time.perf_counter() - t0
    shown = {key: v for key, v in pts_fixed.items() if key != var}
    res = _analyse(study, spec, var, values, shown, records, mutation, k, level,
                   replicates, seed, seconds)
    probe = _crossing_probe(study, spec, var, res, pts_fixed, records, mutation, trials,
                            (seed, len(points)), k, level, store, max_memory, allow_large)
    if probe is not None:
        verdict, note = probe
        res = replace(res, verdicts=res.verdicts + ((verdict,) if verdict else ()))
        regime = dict(regime, crossing_probe=note)
    inf = res.informative
    regime = dict(regime, informative_points=int(sum(inf)), points=len(inf))
    if regime["name"] != "informative" and regime["name"] != "path":
        regime["label"] = (f"{regime['name']}: informative at {sum(inf)} of {len(inf)} points"
                           + (" (vacuous: no algorithm can contradict it there)"
                              if not any(inf) else ""))
    else:
        regime["label"] = (f"{regime['name']}: informative at {sum(inf)} of {len(inf)} points"
                           # the plan's line said "at every point" from its dry run: the
                           # runs' own bound and start value decide (a walkthrough read the
                           # two lines as a contradiction)
                           + (" (the plan's dry run predicted every point; the runs' own "
                              "bound and start value decide)" if sum(inf) < len(inf) else ""))
    return replace(res, regime=regime)


#: the crossing probe runs at most this factor past the grid's end
PROBE_REACH = 8.0
#: ... where the grid's measured/bound trend, extrapolated, reaches this multiple of k
PROBE_RATIO = 2.0


def bound_slope(values: Any, bound: Any) -> float:
    """The bound's log-log slope over the grid, exactly 0 where it is 0 up to rounding (a
    bound flat in the varied quantity read -4e-17, a ratio of -3.7e16 against the measured
    slope: fuzz round 13)."""
    v = loglog_slope(values, bound)
    return 0.0 if abs(v) < 1e-9 else v


def _crossing_probe(study: TheoremStudy, spec: VerifyProblem, var: str, res: ScalingResult,
                    pts_fixed: Mapping[str, Any], records: Sequence[Mapping[str, Any]],
                    mutation: str | None, trials: int, seed: tuple[int, int], k: float,
                    level: float, store: Any, max_memory: float, allow_large: bool
                    ) -> tuple[Verdict | None, str] | None:
    """One real point past the grid where the measured/bound ratio, growing significantly
    along it, is extrapolated to cross ``k``, and its gating ``measured/bound <= k`` verdict.

    A bound that leaves out a dimension factor (``d`` dropped from a Gaussian term) sits
    below the measurement only where the grid stops: its ratio climbed 0.013 -> 0.805 over
    ``d`` = 2..32 and ``verify --quick`` passed it (walkthrough of stop 78); the slope rows
    saw it but are diagnostics (a correct bound's slope also differs from its measurement's
    on a short grid). The probe is a measurement, not an extrapolation: a correct bound
    passes it as it passes every grid point. ``None`` where the ratio does not grow
    significantly (the bootstrap interval of the measured slope, less the bound's local slope
    at the grid's end, excludes 0) or the study has no finite, informative bound there.
    The probe runs where the extrapolated ratio reaches :data:`PROBE_RATIO` ``k``, capped at
    :data:`PROBE_REACH` times the grid's end (not run where the crossing itself lies beyond)."""
    from dpbounds.sweep import Cell, SweepError, run_sweep

    u = study.utility[0]
    values = np.asarray(res.values, dtype=float)
    slope = res.slopes[u]
    local = res.bound_local_slopes.get(u, ())
    if values.size < 2 or not local or not math.isfinite(slope.slope) or any(res.vacuous):
        return None
    means = np.array([m.mean for m in res.measured[u]])
    b = res.bound[u]
    if np.any(means <= 0) or np.any(b <= 0):
        return None
    up = slope.ci_low - local[-1] > 0  # grows towards large values of var
    down = slope.ci_high - local[0] < 0  # grows towards small ones (eps)
    if up == down:
        return None
    j = -1 if up else 0
    growth = slope.slope - (local[-1] if up else local[0])
    r = means[j] / (k * b[j])
    if r >= 1:  # already above at the grid's end: the grid's own verdict fails
        return None
    cross = values[j] * (1.0 / r) ** (1.0 / growth)
    factor = abs(math.log(cross / values[j]))
    if factor > math.log(PROBE_REACH):
        return None, (f"the measured/bound ratio grows along {var} (slope "
                      f"{growth:+.3g}) and is extrapolated to cross {k:g} at {var} = "
                      f"{cross:.3g}, past {PROBE_REACH:g}x the grid's end: not probed")
    # where the extrapolated ratio reaches PROBE_RATIO k: a trend that slows past the grid
    # (a measurement saturating) still crosses there (the walkthrough's bound without d read
    # 0.96 at its extrapolated crossing d = 43, 1.7 at d = 128)
    aim = (PROBE_RATIO / r) ** (1.0 / abs(growth))
    v = values[j] * (min(PROBE_REACH, aim) if up else 1.0 / min(PROBE_REACH, aim))
    if var in _INTEGER_VARS:
        v = float(max(1, math.ceil(v)) if up else max(1, math.floor(v)))
    point = _point(pts_fixed, var, v)
    where = f"{var} = {v:g} (ratio {r:.3g} at the grid's end, extrapolated to cross at {cross:.3g})"
    try:
        if not allow_large:
            _check_instance_memory(spec, [point], max_memory)
        rec = run_sweep([Cell(_cell, dict(theorem=study.theorem, problem=spec.as_dict(),
                                          point=point, mutation=mutation),
                              trials=trials, seed=seed, cost=float(point["N"]))],
                        store=store, progress="off", desc="crossing probe")[0]
    except (ValueError, SweepError) as exc:
        why = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        return None, f"crossing probe at {where} not run: {why}"
    row = np.asarray(rec[f"m:{u}"], dtype=float)
    bound = float(rec[f"b:{u}"])
    floor = min(float(rec["trivial"]), float(rec.get("do_nothing", math.inf)))
    if not (np.all(np.isfinite(row)) and math.isfinite(bound) and bound > 0):
        return None, f"crossing probe at {where}: no finite measurement or bound"
    name = study.theorem + (f" [mutant {mutation}]" if mutation else "")
    verdict = ratio_at_most(name, f"{u} at the crossing probe {var} = {v:g}",
                            [mean_ci(row, level)], np.array([bound]),
                            f"bound at the probe's parameters (grid ratio extrapolated to "
                            f"cross {k:g} at {var} = {cross:.3g})", k=k,
                            trivial=[floor] if u in study.utility else None)
    return verdict, f"crossing probe at {where}"


def _analyse(study: TheoremStudy, spec: VerifyProblem, var: str, values: tuple[float, ...],
             fixed: Mapping[str, float], records: Sequence[Mapping[str, Any]],
             mutation: str | None, k: float, level: float, replicates: int, seed: int,
             seconds: float) -> ScalingResult:
    comps = study.components
    data = {c: np.stack([np.asarray(r[f"m:{c}"], dtype=float) for r in records])
            for c in comps}
    measured = {c: tuple(mean_ci(row, level) for row in data[c]) for c in comps}
    bound = {c: np.array([float(r[f"b:{c}"]) for r in records]) for c in comps}
    trivial = np.array([float(r["trivial"]) for r in records])
    do_nothing = np.array([float(r.get("do_nothing", math.inf)) for r in records])
    u = study.utility[0]
    vacuous = tuple(bool(b >= t) for b, t in zip(bound[u], trivial))
    # a utility bound says something only below what a do-nothing run achieves, too
    floor = np.minimum(trivial, do_nothing)
    # a log fit needs positive trials; a component with a trial <= 0 (an F(x) - F* below 0:
    # a wrong F*, which its sign verdict reports) gets a NaN slope, shown as a diagnostic
    slopes = {c: (bootstrap_slope(values, list(data[c]), replicates=replicates, level=level,
                                  seed=seed) if np.all(data[c] > 0)
                  else SlopeCI(math.nan, math.nan, math.nan, level, 0)) for c in comps}
    finite = {c: bool(np.all(np.isfinite(bound[c]) & (bound[c] > 0))) for c in comps}
    bslope = {c: (bound_slope(values, bound[c]) if finite[c] else math.nan) for c in comps}
    blocal = {c: (tuple(local_slopes(values, bound[c])) if finite[c] else ()) for c in comps}
    headline = study.headline_exponent(var)
    path = study.path_exponents(var)
    name = study.theorem + (f" [mutant {mutation}]" if mutation else "")
    verdicts: list[Verdict] = []
    shapes: list[Verdict] = []  # slope comparisons: diagnostics, never gating
    for c in comps:
        if finite[c]:
            verdicts.append(ratio_at_most(
                name, f"{c} over {var}", measured[c], bound[c], "bound at the run's parameters",
                k=k, trivial=floor if c in study.utility else None))
            shapes.append(slope_at_most(name, f"{c} over {var}", slopes[c], bslope[c],
                                        "bound on the same grid",
                                        claim="slope <= bound's grid slope + CI"))
        if path.get(c) is not None:
            shapes.append(slope_at_most(name, f"{c} over {var}", slopes[c], float(path[c] or 0.0),
                                        f"tuned bound, {var} -> oo, others fixed",
                                        claim="slope <= path exponent + CI"))
    if headline is not None:
        label = exponent_label((study.entry.scaling_bound or study.entry.tuned).sources)
        shapes.append(slope_at_most(name, f"{u} over {var}", slopes[u], headline,
                                    ("paper's exponent (VERBATIM)" if label.startswith("paper")
                                     else f"theorem's exponent ({label})"),
                                    claim="slope <= headline exponent + CI"))
    verdicts += _sign_verdicts(name, var, comps, data, records)
    verdicts += _exact_verdicts(name, var, records)
    verdicts += study_replay(study.theorem, mutation, seed)  # issue 34: D vs D', one seed
    verdicts += [replace(v, gating=False) for v in shapes]
    lower = np.array([float(r["lower_bound"]) for r in records])
    if np.any(lower > 0) and "grad_avg" in comps:
        # the hard instance: the measured time average must not beat the lower bound
        lo_ok = all(m.ci_high >= lb for m, lb in zip(measured["grad_avg"], lower))
        verdicts.append(Verdict(name, f"grad_avg over {var}",
                                ">= hard-instance lower bound", float(np.min(
                                    [m.mean for m in measured["grad_avg"]] / lower)),
                                0.0, 1.0, "G min(1, (D - G/L)/(eta T))", bool(lo_ok)))
    ro = {c: np.asarray(data[c]).copy() for c in comps}
    for a in ro.values():
        a.flags.writeable = False
    for a in bound.values():
        a.flags.writeable = False
    return ScalingResult(
        theorem=study.theorem, vary=var, values=values, problem=spec, fixed=dict(fixed),
        components=comps, utility=study.utility, trials=ro, measured=measured, bound=bound,
        trivial=trivial, do_nothing=do_nothing, vacuous=vacuous, slopes=slopes, bound_slope=bslope,
        bound_local_slopes=blocal, headline_exponent=headline, path_exponents=path,
        params=tuple(r["params"] for r in records),
        notes=tuple(tuple(r["notes"]) for r in records),
        violations=tuple(tuple(r["violations"]) for r in records), lower_bound=lower,
        verdicts=tuple(verdicts), mutation=mutation, seconds=seconds, level=level)


def _sign_verdicts(name: str, var: str, comps: Sequence[str], data: Mapping[str, np.ndarray],
                   records: Sequence[Mapping[str, Any]]) -> list[Verdict]:
    """A suboptimality :math:`F(x)-F^*` is never negative when :math:`F^*` is the minimum, so
    a mean significantly below 0 refutes the :math:`F^*` the study used (a declared
    :math:`F^*` above the minimum: the ratio verdict alone would only see a smaller error).

    One-sided z-test per grid point: it fails when ``mean + Z se < -SIGN_RTOL max(1, |F*|)``
    (``se`` the sample's; the tolerance is round-off: with the true minimum every trial is
    ``>= 0``, so correct code cannot fail it whatever the seed). The row shows the point of
    smallest ``(mean + Z se)``, with its :math:`F^*`. Records without ``f_star`` (a store
    written before this verdict) give no row."""
    out: list[Verdict] = []
    if not all("f_star" in r for r in records):
        return out
    for c in comps:
        if c not in SUBOPTIMALITY:
            continue
        worst: tuple[float, float, float, Mapping[str, Any]] | None = None
        holds = True
        for row, r in zip(data[c], records):
            v = np.asarray(row, dtype=float)
            mean = float(v.mean())
            se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
            tol = SIGN_RTOL * max(1.0, abs(float(r["f_star"])))
            score = mean + Z * se
            holds &= bool(score >= -tol)
            if worst is None or score < worst[0]:
                worst = (score, mean, se, r)
        assert worst is not None
        _, mean, se, r = worst
        oracle = (f"F* = {float(r['f_star']):.10g} ({r.get('f_star_how', '')})"
                  + ("" if holds else ": F(x) - F* < 0 means this F* is above the minimum "
                     "(a wrong F*)"))
        out.append(Verdict(name, f"{c}_sign over {var}", "F(x) - F* >= 0 (F* the minimum)",
                           mean, se, 0.0, oracle, holds))
    return out


#: the one-sided check kinds (the largest value is shown and compared with ``exact``)
_ONE_SIDED = ("cover", "transcript", "release", "sensitivity")

_CLAIMS = {"exact": "== exact (two-sided)", "ledger": "run's noise == claimed eps's",
           "drawn": "drawn noise == run's declared",
           "cover": "realised privacy <= claimed (every trial)",
           "transcript": "transcript re-accounted <= claimed",
           "release": "output a function of grad + noise",
           "sensitivity": "release move to a neighbour <= declared sensitivity"}


def _exact_verdicts(name: str, var: str, records: Sequence[Mapping[str, Any]]
                    ) -> list[Verdict]:
    """One two-sided verdict per check: it holds when, at every grid point,
    ``|mean - exact| <= Z se + rtol |exact|`` (``se`` exact when the check gives the per-trial
    standard deviation, else the sample's). The row shows the worst point."""
    out = []
    for key, meta in records[0].get("checks", {}).items():
        worst: tuple[float, float, float, float] | None = None
        holds = True
        need = 0  # trials an energy check needs to resolve a 10% change at every point
        unreachable = False  # its tolerance alone is wider than the change: no count does
        power: float | None = None  # a test's power against its named defect: the weakest
        decide = ""  # point's, and what would raise it there to the check's power_needed
        powered_at = True
        few = 0  # trials a sample-sd check needs (its t-quantile within SAMPLE_Z_POWER x Z)
        for r in records:
            m = r["checks"][key]
            vals = np.asarray(r[f"c:{key}"], dtype=float)
            mean = float(vals.mean())
            z = Z
            if m["sd"] is not None:
                se = m["sd"] / math.sqrt(vals.size)
            else:
                se = float(vals.std(ddof=1) / math.sqrt(vals.size)) if vals.size > 1 else 0.0
                if vals.size > 1 and m["kind"] not in _ONE_SIDED:
                    # the sample's sd: Student's t at the normal Z's two-sided level (at 2
                    # trials 5 sample SEs were exceeded by correct code 1 time in 8, and
                    # strongly_convex.heavy_ball --trials 2 failed 6 of 20 seeds)
                    z = sample_z(vals.size - 1)
                    if z > SAMPLE_Z_POWER * Z:
                        few = max(few, _trials_for_sample_z())
            ex = float(m["exact"])
            if m.get("power") is not None and (power is None or m["power"] < power):
                power, at = float(m["power"]), r.get("params", {}).get(var)
                decide = (f"at {var} = {at:.6g}: " if isinstance(at, (int, float)) else ""
                          ) + m["needs"]
                powered_at = m.get("power_needed") is None or power >= m["power_needed"]
            if m["kind"] in _ONE_SIDED:  # one-sided: the largest shown
                mean, se = float(vals.max()), 0.0
                # a test's level over its p-value (the drawn noise's) at each of the K grid
                # points: Bonferroni, each at alpha / K, so the study's chance of failing
                # correct code is alpha, not K alpha (1 in 26 to 1 in 114 correct DP-SGD
                # studies failed a drawn-noise row at K = 6-24)
                mean = mean / len(records) if m.get("family") else mean
                ok = bool(mean <= ex * (1.0 + m["rtol"]))
                score = mean / ex if ex > 0 else math.inf
                holds &= ok
                if worst is None or score > worst[0]:
                    worst = (score, mean, se, ex)
                continue
            slack = z * se + m["rtol"] * abs(ex)
            if m.get("energy"):
                _, n = energy_power(se, ex, m["rtol"], vals.size)
                unreachable |= n == 0
                need = max(need, n)
            # an exact value that is not finite shows nothing: |v - inf| <= inf held for every
            # v (a review of stop 81: a schedule's closed form overflowed and passed a run
            # under-noised 2x)
            ok = (bool(abs(mean - ex) <= slack) if math.isfinite(mean) and math.isfinite(ex)
                  else False)
            holds &= ok
            score = abs(mean - ex) / slack if slack > 0 else (0.0 if mean == ex else math.inf)
            if worst is None or score > worst[0]:
                worst = (score, mean, se, ex)
        assert worst is not None
        _, mean, se, ex = worst
        trials = int(np.asarray(records[0][f"c:{key}"]).size)
        powered = not unreachable and need <= trials
        needs = "" if powered else (
            f"cannot resolve a 10% change of the noise energy at {trials} trials; "
            + ("no trial count would (its tolerance is wider)" if unreachable
               else f"--trials {need} would"))
        if not powered_at:
            # a test that could not have failed on its named defect shows nothing either way
            powered, needs = False, decide
        elif few > trials and powered:
            powered, needs = False, (
                f"{trials} trials leave its sample standard deviation too loose (Student's t "
                f"at the {Z:g}-sigma level is {sample_z(trials - 1):.3g} standard errors); "
                f"--trials {few} would")
        oracle = meta["oracle"] + (f"; each of the {len(records)} points at alpha / "
                                   f"{len(records)} (Bonferroni)"
                                   if meta.get("family") and len(records) > 1 else "")
        out.append(Verdict(name, f"{key} over {var}", _CLAIMS.get(meta["kind"], "== exact"),
                           mean, se, ex, oracle, holds, powered=powered,
                           needs=needs, power=power))
        if meta["kind"] == "drawn" and meta["sd"] is not None:
            spread = _spread_verdict(name, key, var, records)
            if spread is not None:
                out.append(spread)
    return out


#: a two-sided check whose standard error is its sample's counts as shown (powered) where
#: Student's t at :data:`Z`'s level is at most this many times ``Z`` (from 33 trials on). At
#: 2x (13 trials, t = 9.6) DP-MASG without its restarts (``masg_no_restart``: 2.4x the exact
#: value at 13 trials) passed a powered row that 5 SEs had failed (an independent review)
SAMPLE_Z_POWER = 1.25


@functools.cache
def sample_z(df: int) -> float:
    """Student's t quantile with ``df`` degrees of freedom at the two-sided tail probability
    of :data:`Z` normal standard errors (5.7e-7): the slack, in sample standard errors, of a
    two-sided check whose standard deviation is estimated from ``df + 1`` trials (5.03 at
    ``df = 1000``, 11.2 at 10, 1321 at 2)."""
    from scipy import stats

    return float(stats.t.isf(stats.norm.sf(Z), df))


@functools.cache
def _trials_for_sample_z() -> int:
    """The fewest trials at which :func:`sample_z` is within :data:`SAMPLE_Z_POWER` x ``Z``."""
    n = 2
    while sample_z(n - 1) > SAMPLE_Z_POWER * Z:
        n += 1
    return n


#: lower-tail level of the spread check (a correct run fails it with probability <= 1e-6)
SPREAD_LEVEL = 1e-6
#: the spread check is powered where its floor is at least this fraction of the declared
#: spread: trials whose energies spread less than that (shared or nearly shared noise) fail.
#: 0.01: the quick grids' 6 trials of near-normal energies (floor 0.08) catch shared noise
SPREAD_POWER = 0.01


def _kurtosis_term(n: int, sd: float, k4: float) -> float:
    """``k4 / (sd^4 n)``, the fourth cumulant's part of ``Var(s^2 / sd^2)`` (as
    ``(k4 / sd^2) / sd^2``: ``sd^4`` underflows at ``sd = 1e-200``; ``k4 < 0``, which no sum of
    squares has, counts as 0)."""
    return max(k4, 0.0) / (sd * sd) / (sd * sd) / n


def _spread_floor(points: Sequence[tuple[int, float, float]]) -> tuple[float, int]:
    """``(floor, df)`` of the pooled statistic ``sum (n - 1) s^2 / sd^2`` over ``points``
    (``(n, sd, k4)`` each: trials, the energy's sd and fourth cumulant under the declared
    noise): the :data:`SPREAD_LEVEL` quantile of the scaled chi-square with the statistic's
    mean ``df = sum (n - 1)`` and variance ``sum (n - 1)^2 (2 / (n - 1) + k4 / (sd^4 n))``
    (the sample variance's exact variance; Satterthwaite's ``nu = 2 df^2 / variance``)."""
    from scipy import stats

    df, var = 0, 0.0
    for n, sd, k4 in points:
        c = n - 1
        df += c
        var += c * c * (2.0 / c + _kurtosis_term(n, sd, k4))
    nu = 2.0 * df * df / var
    return float(df * stats.chi2.ppf(SPREAD_LEVEL, nu) / nu), df


def _spread_verdict(name: str, key: str, var: str, records: Sequence[Mapping[str, Any]]
                    ) -> Verdict | None:
    """Independent trials: the per-trial noise energies must spread as the declared noise
    implies. The pooled ``sum (n - 1) s^2 / sd^2`` has mean ``df = sum (n - 1)``; the check
    fails below the :data:`SPREAD_LEVEL` quantile of the scaled chi-square with its mean and
    exact variance (:func:`_spread_floor`, from each point's fourth cumulant ``k4`` of the
    energy, which the drawn check declares) -- trials that share their noise (identical
    energies, ``s^2 = 0``) or are otherwise tied. One-sided: too much spread is the mean
    check's business.

    Why not the plain chi-square law with ``df`` degrees of freedom (the check before
    stop 67): that law holds for normal energies only. A trial's energy of few squares is
    heavy-tailed (a Laplace square's excess kurtosis is 85), its sample variance far more
    spread, and correct code failed: the strongly convex studies at ``--dimension 1`` or 2 in
    about 1 of 5 runs (an independent review: 7 of ~36 runs; a simulation of 3 points of 1500
    trials of one Laplace square fails the plain law's 1e-3 floor in 34 % of studies). The
    moment-matched law is exact for normal energies and conservative for the heavy-tailed
    ones: simulated at most the nominal rate at 1e-3..1e-5 over Gaussian and Laplace
    energies of 1-64 squares and 6-1500 trials (this stop's bench, and an independent review
    over 228 configurations, unequal variances and trial counts included: at most +0.9
    binomial s.e.); ``tests/verify/test_spread_verdict.py`` checks it at a level raised to
    1e-2. What it cannot see: trials that share their noise in pairs (the spread is then
    unchanged) and a spread too large (one-sided).

    ``powered`` is False where the floor is below :data:`SPREAD_POWER` of ``df`` (a
    heavy-tailed energy with too few trials: the check could not catch shared noise), with
    the trial count that would reach it. ``None`` with fewer than 3 trials per point, or a
    drawn check that does not declare ``k4``."""
    pts, stat = [], 0.0
    for r in records:
        vals = np.asarray(r[f"c:{key}"], dtype=float)
        meta = r["checks"][key]
        sd, k4 = meta["sd"], meta.get("k4")
        if (vals.size < 3 or not sd or not math.isfinite(float(sd)) or k4 is None
                or not math.isfinite(float(k4)) or not np.all(np.isfinite(vals))):
            return None
        stat += float(vals.var(ddof=1)) * (vals.size - 1) / (sd * sd)
        pts.append((int(vals.size), float(sd), float(k4)))
    floor, df = _spread_floor(pts)
    powered = floor >= SPREAD_POWER * df
    needs = ""
    if not powered:
        def enough(n: int) -> bool:
            f, m = _spread_floor([(n, sd, k4) for _, sd, k4 in pts])
            return f >= SPREAD_POWER * m

        lo, hi = max(n for n, _, _ in pts), 2 * max(n for n, _, _ in pts)
        while hi < 10**9 and not enough(hi):
            lo, hi = hi, 2 * hi
        while hi - lo > max(1, lo // 100):  # to 1 %: the trials that reach the power
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if enough(mid) else (mid, hi)
        needs = (f"cannot catch shared noise at {min(n for n, _, _ in pts)} trials (floor "
                 f"{floor / df:.3g} of the declared spread); --trials {hi} would")
    return Verdict(name, f"{key}_spread over {var}",
                   "trials' noise independent (spread >= its 1e-6 quantile)",
                   stat / df, math.sqrt(sum((n - 1) ** 2 * (2.0 / (n - 1)
                                                            + _kurtosis_term(n, sd, k4))
                                            for n, sd, k4 in pts)) / df, 1.0,
                   "moment-matched chi-square law of the sample variance at the declared sd "
                   "and fourth cumulant", stat >= floor, powered=powered, needs=needs)


def _choose_grid(study: TheoremStudy, spec: VerifyProblem, var: str,
                 values: tuple[float, ...], given: bool, fixed: dict[str, Any], trials: int,
                 quick: bool, grid: str, max_seconds: float, allow_expensive: bool,
                 user_fixed: Sequence[str], reduce_trials: bool = False,
                 max_memory: float = 4 * 2.0**30, allow_large: bool = False,
                 costs: CostMemo | None = None
                 ) -> tuple[dict[str, Any], tuple[float, ...], dict[str, Any]]:
    """The regime (a JSON-able dict), the grid values and the fixed values to run (a planned
    grid within ``max_memory`` unless ``allow_large``; the cost model's fits read from and
    kept in ``costs`` where given)."""
    from dpbounds.verify import regimes

    if given:
        regime: dict[str, Any] = dict(name="user grid", why="values given by the user")
    elif quick or grid == "small":
        regime = dict(name="default grid", why="today's small grid (--quick or --grid small)")
    else:
        original = fixed
        over = {k: v for k, v in study.informative_fixed.items()
                if k not in user_fixed and k != var}
        fixed = dict(fixed, **over)
        # the cost probes (runs of growing size, seconds of CPU) run on first use: only where
        # the planner prices a grid that fits the memory budget (the tree studies' informative
        # grids need 0.3-26 TB: 4.7 of their 9 CPU-s went to probes for a refused grid)
        # (a, b, c): per step, per evaluation, and the fixed cost every point pays once; the
        # probes grow only up to the largest point priced
        cost_for = regimes.ProbeCosts(study, spec, fixed, memo=costs)
        knobbed = "T" in study.fixed and "T" not in user_fixed
        over_d: list[Callable[[Mapping[str, Any]], tuple[float, float]]] = []

        def factor(point: Mapping[str, Any]) -> tuple[float, float]:
            # a sweep over d: each point costed at its own d (probes at the grid's ends, grown
            # up to the point's size; probed again for a larger point than that)
            cap = getattr(over_d[0], "capped_at", None) if over_d else None
            if not over_d or (cap is not None and regimes._size(point) > cap):
                # one uncapped probe for a study with settings of T (see plan_grid)
                over_d[:] = [regimes.remembered_cost_over_d(
                    costs, study, spec, fixed, values, min(trials, 16),
                    largest=None if knobbed else regimes._largest([point]),
                    fit=_fit_above(cost_for.fits, min(trials, 16)), warm=cost_for.sizes)]
                # the regime reports the fitted power of d (``_costed`` reads it off the factor)
                factor.powers = getattr(over_d[0], "powers", ())  # type: ignore[attr-defined]
            return over_d[0](point)
        too_large: list[str] = []
        smallest = [math.inf]  # the least memory of a grid refused for it (for the reason)

        def fits_memory(points: Sequence[Mapping[str, Any]], t: int) -> bool:
            if allow_large:
                return True
            need = _estimated_memory(study, spec, [_integers(p) for p in points], t,
                                     regimes.PROBE_MAX_BYTES)
            if need > max_memory:
                smallest[0] = min(smallest[0], need)
            return need <= max_memory

        plan = regimes.plan_grid(study, spec, var, fixed, values, trials,
                                 path=grid == "path", cost_for=cost_for,
                                 max_seconds=max_seconds, allow_expensive=allow_expensive,
                                 user_fixed=user_fixed, reduce_trials=reduce_trials,
                                 cost_factor=factor if var == "d" else None,
                                 fits_memory=fits_memory, too_large=too_large)
        if plan is not None and len(plan.values) >= 2:
            out = dict(fixed, **plan.fixed)
            reg = dict(plan.as_dict(), estimated_total_seconds=sum(plan.seconds),
                       probe_memory_bytes=regimes.PROBE_MAX_BYTES)
            if over:
                reg["why"] += "; the study's informative setting " + ", ".join(
                    f"{k}={v:g}" for k, v in over.items())
            return reg, plan.values, out
        fixed = original
        if plan is None and too_large:
            why = (f"the {'path' if grid == 'path' else 'informative'} grid needs more than "
                   f"the memory budget ({max_memory / 1e9:.3g} GB, --max-memory-gb; "
                   f"--allow-large runs it) at {'; '.join(dict.fromkeys(too_large))}: the "
                   f"smallest grid refused needs {smallest[0] / 1e9:.3g} GB; "
                   "today's default grid instead")
            regime = dict(name="default grid", why=why, fallback=True,
                          refused_memory_bytes=smallest[0])
        elif plan is None:
            why = (f"no {'path' if grid == 'path' else 'informative'} grid found with N <= "
                   f"1e6; today's default grid instead")
            regime = dict(name="default grid", why=why, fallback=True)
        else:
            regime = dict(name="default grid",
                          why="the informative grid costs more than the budget "
                              f"({max_seconds:.3g} s CPU; --allow-expensive runs it); "
                              "today's default grid instead",
                          unaffordable=plan.as_dict(), fallback=True)
        if cost_for.fits or over_d:  # the cost probes ran before any point: at most
            regime["probe_memory_bytes"] = regimes.PROBE_MAX_BYTES  # PROBE_MAX_BYTES of arrays
    return regime, values, fixed


def _fit_above(fits: Mapping[int, Any], trials: int) -> tuple[float, float] | None:
    """A cost ``(a, b)`` per step and evaluation at ``trials`` trials not below the true one,
    from the probe fits made so far (``ProbeCosts.fits``: trials -> (fit, size)): the fit at
    ``trials``, else one at fewer trials scaled by the ratio (a step's cost grows at most in
    proportion to its trials), else one at more; ``None`` if none was made."""
    if not fits:
        return None
    t = trials if trials in fits else max(fits, key=lambda k: (k <= trials, k if k <= trials
                                                                 else -k))
    a, b = (float(x) for x in fits[t][0][:2])
    scale = max(trials / t, 1.0)
    return a * scale, b * scale


def _estimate(study: TheoremStudy, spec: VerifyProblem, points: Sequence[Mapping[str, Any]],
              trials: int, regime: dict[str, Any], costs: CostMemo | None = None) -> None:
    """Record the cost model's CPU seconds of every point in ``regime``, each point's fixed
    cost (calibration, clipping probes, transcript rows) included.

    The probes run at the grid's largest ``d`` and grow no larger than its largest point,
    their fit telling the per-trial cost from the per-step one where the points run more
    trials than the probes (:func:`regimes._probe_fit`'s ``target``). A point of smaller
    ``d`` is priced per step and evaluation as there times its factor
    (:func:`regimes.d_factor`, one run at its ``d``; until stop 66 the factor was 1: high,
    the safe side, 2-3.8x the runs of the grids over ``d``). Earlier, the estimate left the
    fixed cost out and probed at the smallest ``d`` up to
    0.3 CPU-s a probe, plus six probes of the cost's power of ``d``: DP-SGD's quick study
    read "1 s CPU", spent 11.9 CPU-s estimating and 3.7 CPU-s running.
    """
    from dpbounds.verify import regimes

    top = max(points, key=lambda q: (q.get("d", 0), q.get("N", 0), q.get("T", 0)))
    largest = {key: max(float(q[key]) for q in points) for key in ("N", "T") if key in top}
    a, b, c = regimes.measured_fit(study, spec, top, regimes.probe_trials(study, trials),
                                   largest=largest, memo=costs, target=trials)
    # each smaller d priced by its own run (regimes.d_factor)
    factors = {int(q["d"]): regimes.d_factor(study, spec, dict(top, d=int(q["d"])), trials,
                                             (a, b, c), largest, costs)
               for q in points if int(q["d"]) < int(top["d"])}
    secs = []
    for q in points:
        f = factors.get(int(q["d"]), 1.0)
        secs.append(regimes.point_seconds(spec, regimes.dry_plan(study, spec, q, trials), q,
                                          trials, (a, b, c), (f, f)))
    regime["estimated_seconds"] = secs
    regime["estimated_total_seconds"] = float(sum(secs))


def _point(fixed: Mapping[str, Any], var: str, v: float) -> dict[str, Any]:
    p = dict(fixed)
    p[var] = int(v) if var in _INTEGER_VARS else float(v)
    for key in _INTEGER_VARS:
        if key in p:
            p[key] = int(p[key])
    return p


#: What a study's first run holds beyond its arrays and the imports (the compiled kernels'
#: code generation, first-use imports): 56-75 MiB measured over every quick study and three
#: full ones (bench/bench_plan_memory.md); added to the plans' arrays in the estimate.
FIRST_RUN_BYTES = 80.0 * 2**20


def _integers(p: Mapping[str, Any]) -> dict[str, Any]:
    """``p`` with its integer parameters as ints (the plans are cached by them)."""
    return {k: int(v) if k in _INTEGER_VARS else v for k, v in p.items()}


def _estimated_memory(study: TheoremStudy, spec: VerifyProblem,
                      points: Sequence[Mapping[str, Any]], trials: int,
                      probe_bytes: float = 0.0) -> float:
    """The estimate ``--max-memory-gb`` is compared with (bytes): every point's plan (cached
    where the grid was planned: the transcripts of the non-convex studies grow with T, which
    only the plan knows) or a planned grid's cost probes, which ran first (the grown ones at
    most ``regimes.PROBE_MAX_BYTES``, the first, N = 32 and T <= 3200, a few MiB; tens at
    the strongly convex studies' 1,500-3,000 trials), whichever
    is larger (that is what is held at once), plus the first run's constant."""
    from dpbounds.verify import regimes

    arrays = max(regimes.cost_plan(study, spec, p, trials)["memory_bytes"] for p in points)
    return float(max(arrays, probe_bytes) + FIRST_RUN_BYTES)


def _instance_bytes(spec: VerifyProblem, point: Mapping[str, Any]) -> float:
    """Bytes of the largest arrays of ``point``'s problem instance, before it is built: the
    quadratic's ``d x d`` basis (its QR takes about three) and its ``N x d`` offsets; any
    other problem's ``N x d`` samples (twice: the data and a per-sample gradient)."""
    n, d = float(point.get("N", 0)), float(point.get("d", 0))
    if spec.kind == "quadratic":
        return 8.0 * (3.0 * d * d + 2.0 * n * d)
    return 8.0 * 2.0 * n * d


def _check_instance_memory(spec: VerifyProblem, points: Sequence[Mapping[str, Any]],
                           max_memory: float) -> None:
    """Refuse given points whose problem instance alone exceeds ``max_memory``, before the
    planner builds one (``verify strongly_convex.nag --vary d --values 100000`` built a
    100,000 x 100,000 basis in its first probe: killed at 22 GB, ``--max-memory-gb 1``
    unread)."""
    worst = max(points, key=lambda p: _instance_bytes(spec, p))
    need = _instance_bytes(spec, worst)
    if need > max_memory:
        raise ValueError(f"the problem at d = {int(worst.get('d', 0))}, N = "
                         f"{int(worst.get('N', 0))} needs about {need / 1e9:.3g} GB to build "
                         f"({spec.kind}), above the memory budget {max_memory / 1e9:.3g} GB "
                         "(--max-memory-gb): use smaller values, or pass --allow-large")


def _processes_here(executor: Any) -> int:
    """The processes of this machine that run points at once: a local pool's workers
    (:class:`~dpbounds.sweep.LocalProcesses`, a ``concurrent.futures`` process pool, or the
    ``LocalCluster`` a :class:`~dpbounds.sweep.DaskDistributed` without a scheduler starts),
    else 1 (this process; a remote cluster's workers hold their points in their own memory,
    not this machine's, so the local budget does not count them)."""
    import concurrent.futures

    if isinstance(executor, concurrent.futures.ProcessPoolExecutor):
        return int(getattr(executor, "_max_workers", 1) or 1)
    from dpbounds.sweep.executors import DaskDistributed, LocalProcesses

    if isinstance(executor, LocalProcesses) or (
            isinstance(executor, DaskDistributed) and executor.scheduler is None
            and executor.processes):
        return int(executor.workers)
    return 1


#: A worker process's own memory before its first point (the interpreter and the imports;
#: measured, fuzz round 8: 30 workers took 3.3 GB over a one-process run of the same study)
WORKER_BYTES = 110.0 * 2**20


def _check_memory(study: TheoremStudy, spec: VerifyProblem, points: Sequence[Mapping[str, Any]],
                  trials: int, max_memory: float, allow_large: bool,
                  regime: dict[str, Any], workers: int = 1) -> None:
    """Refuse a study whose largest point's estimated memory exceeds ``max_memory``; with
    ``workers`` processes, as many points as run at once (at most one per point), each in a
    process of its own (``--workers 30`` was estimated at one point's 80 MiB and held 3.3 GB)."""
    mem = _estimated_memory(study, spec, points, trials,
                            float(regime.get("probe_memory_bytes", 0.0)))
    at_once = max(1, min(int(workers or 1), len(points)))
    if at_once > 1:
        mem = mem + at_once * (mem - FIRST_RUN_BYTES + WORKER_BYTES)
    regime["estimated_memory_bytes"] = float(mem)
    if mem > max_memory and not allow_large:
        raise ValueError(f"the study needs an estimated {mem / 2**30:.3g} GiB (trials={trials}"
                         f"{f', {at_once} worker processes at once' if at_once > 1 else ''}), "
                         f"above the memory budget {max_memory / 2**30:.3g} GiB: use fewer "
                         "trials, workers or a smaller grid, or pass --allow-large")
