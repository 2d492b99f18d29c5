r"""Tuning by runs: the hyper-parameters whose simulated runs end lowest on *this* objective.

:func:`~dpbounds.tuning.tune_heavy_ball` and :func:`~dpbounds.tuning.tune_nesterov` pick the
hyper-parameters with the least error on the **worst** problem of the class (every quadratic,
or every smooth strongly convex function, with the given :math:`\mu, L, E_0`). That choice
holds for every such problem, but a researcher with one objective in hand wants its best run:
on a ridge logistic regression whose curvature near the start is far below :math:`L` and whose
start is closer to the optimum than the worst case allows, the worst-case pick ran 4.5x worse
than a plain grid (stop 76's walkthrough). :func:`tune_by_runs` is that grid, done so that it
can be trusted:

* every grid point runs the **real algorithm** (the package's or a plug-in's: any callable
  ``algorithm(objective, epsilon=..., trials=..., seed=..., **hyper)`` that returns a
  :class:`~dpbounds.algorithms.SimulationResult` with a ``"suboptimality"`` trace) with the
  same seed, so the comparison between points is paired (common random numbers);
* the pick is **re-measured on fresh seeds** (a disjoint family of trial streams): the score
  a grid's minimum reports on its own draws is biased low (the winner's curse), the fresh one
  is not; it comes with a 95% confidence interval (Student's t), as does every choice in
  ``compare`` measured on those same fresh seeds, with the interval of its difference to the
  pick run by run (the same trial streams: paired; e.g. the worst-case tuner's pick);
* the **privacy the tuning spends** is reported, not hidden: each run reads the objective's
  data, so publishing the pick (or the run made with it) costs the composition of every run
  made (``spent``: one ledger of all of them, accounted by the accountant that calibrated
  the runs). Tune on a public or synthetic proxy of the data to spend nothing of the private
  data's budget; on the private data itself this is the honest price of a non-private
  selection (DP selection, e.g. Liu & Talwar 2019, costs less and is not implemented here).

Which error is minimised: the mean over trials of :math:`F(x_T)-F^\ast` at the run's last
iterate (``statistic="final"``) or of the best iterate of the trace (``"best"``: not
attainable without reading :math:`F`, shown for comparison only). Provenance: DERIVED (a
procedure of this package, no paper's result).

Example
-------
>>> from dpbounds.algorithms import dp_heavy_ball
>>> from dpbounds.objectives import QuadraticObjective
>>> f = QuadraticObjective.random(d=4, mu=0.1, L=1.0, n=200, offset_scale=1.0, seed=0)
>>> res = tune_by_runs(dp_heavy_ball, f, {"step_size": [0.5, 1.0], "momentum": [0.0, 0.5],
...                                       "steps": [5, 10]}, epsilon=1.0, trials=8, seed=0)
>>> sorted(res.best)
['momentum', 'step_size', 'steps']
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive

__all__ = ["RunScore", "RunTuning", "tune_by_runs"]

#: the trial streams of the fresh evaluation: seed ``(seed, EVAL_STREAM)`` where the selection
#: uses ``(seed, SELECT_STREAM)`` (disjoint SeedSequence families: no run is shared). Not 0:
#: NumPy's ``SeedSequence((s, 0))`` is ``SeedSequence(s)``, so a run made afterwards with the
#: plain seed s reused the selection's draws (review of stop 76)
SELECT_STREAM, EVAL_STREAM = 1, 2
#: most grid points a call runs (each costs ``trials`` runs)
MAX_POINTS = 10_000


@dataclass(frozen=True)
class RunScore:
    """One choice's measured error: the mean of the statistic over ``n`` runs and its normal
    95% interval (``mean +- 1.96 sd / sqrt(n)``); ``failure`` says why a point did not run
    (its mean is then ``inf``)."""

    hyperparameters: dict[str, Any]
    mean: float
    low: float
    high: float
    n: int
    failure: str | None = None

    def row(self) -> dict[str, Any]:
        return {**self.hyperparameters, "mean": self.mean, "low": self.low, "high": self.high,
                "runs": self.n, "failure": self.failure}


@dataclass(frozen=True)
class RunTuning:
    """What :func:`tune_by_runs` measured.

    Attributes
    ----------
    best:
        The hyper-parameters with the least selection score.
    selection:
        Every grid point's score on the selection seeds (``trials`` runs each, paired).
    evaluation:
        ``label -> RunScore`` on the fresh seeds (``"tuned by runs"`` and each ``compare``
        choice), comparable with each other (the same trial streams).
    spent:
        One :class:`~dpbounds.privacy.PrivacyLedger` of every run made (selection and
        evaluation); ``spent_epsilon`` its epsilon at ``delta`` (``spent_delta``) by
        ``accountant`` (the one the runs were calibrated with): what the data paid for this
        tuning.
    """

    algorithm: str
    statistic: str
    best: dict[str, Any]
    selection: tuple[RunScore, ...]
    evaluation: dict[str, RunScore]
    spent: Any
    spent_epsilon: float
    delta: float
    accountant: str
    runs: int
    notes: tuple[str, ...] = field(default=())

    def rows(self) -> list[dict[str, Any]]:
        """One dict per evaluated choice (label, hyper-parameters, mean, interval)."""
        return [{"label": k, **v.row()} for k, v in self.evaluation.items()]

    def table(self) -> str:
        from dpbounds._numfmt import shown

        names = sorted({k for v in self.evaluation.values() for k in v.hyperparameters})
        head = ["choice", *names, f"mean {self.statistic} F - F*", "95% interval", "runs"]
        body = []
        for label, s in self.evaluation.items():
            body.append([label, *(shown(float(s.hyperparameters[k]))
                                  if k in s.hyperparameters else "-" for k in names),
                         shown(s.mean), f"[{shown(s.low)}, {shown(s.high)}]", str(s.n)])
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                 for r in [head, ["-" * w for w in widths], *body]]
        failed = sum(s.failure is not None for s in self.selection)
        lines += ["", f"{self.algorithm}: {len(self.selection)} grid points x "
                      f"{self.selection[0].n if self.selection else 0} runs on the selection "
                      "seeds; every row above re-measured on fresh seeds (the pick's own "
                      "score on its selection draws is biased low)"
                  + (f"; {failed} point(s) failed (refused, or diverged: scored inf)"
                     if failed else ""),
                  f"privacy spent by the tuning ({self.runs} runs on the objective's data): "
                  f"eps = {self.spent_epsilon:.6g} at delta = {shown(self.delta)} "
                  f"({self.accountant}); nothing of the private data's budget if the "
                  "objective is a public or synthetic proxy", *self.notes]
        return "\n".join(lines)


def _statistic(result: Any, statistic: str) -> np.ndarray:
    kind = getattr(result, "trace_kind", None)
    if kind != "suboptimality":
        raise ValueError(f"tune_by_runs needs runs traced as F(x_t) - F* ('suboptimality'), "
                         f"got {kind!r}: give an objective with a known optimum")
    trace = np.asarray(result.trace, dtype=float)
    return trace[:, -1] if statistic == "final" else np.min(trace, axis=1)


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and Student's t 95% interval (a normal z covered ~70% at two runs)."""
    from scipy import stats

    n = int(values.size)
    mean = float(np.mean(values))
    if n < 2:
        return mean, -math.inf, math.inf
    half = float(stats.t.ppf(0.975, n - 1)) * float(np.std(values, ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def _score(values: np.ndarray, hyper: dict[str, Any]) -> RunScore:
    n = int(values.size)
    if not np.all(np.isfinite(values)):
        return RunScore(hyper, math.inf, math.inf, math.inf, n, "a run diverged (inf or nan)")
    mean, low, high = _interval(values)
    return RunScore(hyper, mean, low, high, n)


def tune_by_runs(algorithm: Callable[..., Any], objective: Any,
                 grid: Mapping[str, Sequence[Any]], *, epsilon: float, trials: int = 32,
                 eval_trials: int | None = None, seed: int = 0,
                 compare: Mapping[str, Mapping[str, Any]] | None = None,
                 statistic: str = "final", spent_delta: float = 1e-5, progress: bool = False,
                 **fixed: Any) -> RunTuning:
    r"""Grid-search an algorithm's hyper-parameters by the mean error of its simulated runs.

    Parameters
    ----------
    algorithm:
        ``algorithm(objective, epsilon=, trials=, seed=, **hyper, **fixed)`` returning a
        :class:`~dpbounds.algorithms.SimulationResult` traced as :math:`F(x_t)-F^\ast` (e.g.
        :func:`~dpbounds.algorithms.dp_heavy_ball`, :func:`~dpbounds.algorithms.dp_nag`).
    objective:
        The problem the runs are made on (its optimum known).
    grid:
        ``name -> values``; every combination is run (at most :data:`MAX_POINTS`).
    epsilon:
        The privacy target of each run (> 0).
    trials:
        Runs per grid point on the selection seeds (>= 2).
    eval_trials:
        Runs of the pick (and of each ``compare`` choice) on the fresh seeds (>= 2; default
        ``4 * trials``).
    seed:
        A non-negative integer: the selection draws its trials from seed ``(seed, 1)``, the
        evaluation from ``(seed, 2)`` (:data:`SELECT_STREAM`, :data:`EVAL_STREAM`: disjoint
        SeedSequence families, neither the plain seed's).
    compare:
        ``label -> hyper-parameters`` measured on the fresh seeds beside the pick (e.g. the
        worst-case tuner's choice, the paper's).
    statistic:
        ``"final"`` (the last iterate's error, default) or ``"best"`` (the trace's minimum).
    spent_delta:
        Where ``spent_epsilon`` is read (in (0, 1)).
    fixed:
        Passed to every run (``x0=``, ``batch_size=``, a Gaussian run's ``delta=``, ...).

    Returns
    -------
    RunTuning
    """
    eps = check_positive("epsilon", epsilon)
    trials = check_int("trials", trials, minimum=2, maximum=1_000_000)
    eval_trials = check_int("eval_trials", 4 * trials if eval_trials is None else eval_trials,
                            minimum=2, maximum=1_000_000)
    seed = check_int("seed", seed, minimum=0)
    check_choice("statistic", statistic, ("final", "best"))
    if not 0.0 < float(spent_delta) < 1.0:
        raise ValueError(f"spent_delta must lie in (0, 1), got {spent_delta!r}")
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError("grid must map at least one hyper-parameter name to its values")
    for k, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | np.ndarray) \
                or len(values) == 0:
            raise ValueError(f"grid[{k!r}] must be a non-empty sequence of values, got "
                             f"{values!r}")
        if k in fixed:
            raise ValueError(f"{k!r} is both searched (grid) and fixed")
    points = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    if len(points) > MAX_POINTS:
        raise ValueError(f"grid has {len(points):,} points; at most {MAX_POINTS:,} (each "
                         f"costs {trials} runs)")
    name = getattr(algorithm, "__name__", type(algorithm).__name__)

    from dpbounds._progress import progress_iter
    from dpbounds.privacy import PrivacyLedger

    ledgers: list[tuple[Any, int]] = []  # (one run's ledger, runs)
    accountant = None
    failed = 0  # runs that raised: they may have read the data before they failed
    # a failed run's delta: the target the completed runs report (an algorithm's own default
    # delta is not in `fixed`), else the one given
    run_deltas = [float(fixed.get("delta") or 0.0)]
    if compare is not None and "tuned by runs" in compare:
        raise ValueError("compare: 'tuned by runs' is the pick's own label; name the choice "
                         "otherwise")
    kept: dict[str, np.ndarray] = {}  # evaluation label -> its per-run values (paired)

    def run(hyper: dict[str, Any], n: int, stream: int) -> tuple[RunScore, np.ndarray]:
        nonlocal accountant, failed
        try:
            with np.errstate(over="ignore", invalid="ignore"):  # a diverging point scores inf
                res = algorithm(objective, epsilon=eps, trials=n, seed=(seed, stream),
                                **fixed, **hyper)
                values = _statistic(res, statistic)
        except TypeError as exc:  # a name the algorithm does not take: the grid is wrong
            raise ValueError(f"{name}: {exc} (check the grid's and the fixed names)"
                             ) from None
        except (ValueError, FloatingPointError, OverflowError) as exc:
            failed += n  # counted at its target below: it may have read the data
            return RunScore(hyper, math.inf, math.inf, math.inf, 0, str(exc)), np.empty(0)
        if ledgers and res.privacy.ledger.neighbouring is not ledgers[0][0].neighbouring:
            # one ledger holds one relation (a grid over neighbouring folded add/remove runs
            # into a replace-one ledger, or failed after every run: review of stop 76)
            raise ValueError("the grid's runs hold different neighbouring relations "
                             f"({ledgers[0][0].neighbouring.value}, "
                             f"{res.privacy.ledger.neighbouring.value}): tune one relation at "
                             "a time")
        ledgers.append((res.privacy.ledger, n))
        accountant = accountant or res.privacy.accountant
        target = float(getattr(res.privacy, "target_delta", 0.0) or 0.0)
        if math.isfinite(target):
            run_deltas.append(target)
        return _score(values, hyper), values

    selection = tuple(run(p, trials, SELECT_STREAM)[0]
                      for p in progress_iter(points, progress, desc="tune by runs",
                                             unit="point", lines=True))
    order = sorted(range(len(points)), key=lambda i: selection[i].mean)
    if not math.isfinite(selection[order[0]].mean):
        reasons = sorted({s.failure or "" for s in selection})
        raise ValueError(f"no grid point ran: {'; '.join(reasons)[:500]}")
    best = dict(points[order[0]])
    evaluation: dict[str, RunScore] = {}
    evaluation["tuned by runs"], kept["tuned by runs"] = run(best, eval_trials, EVAL_STREAM)
    notes = []
    for label, hyper in (compare or {}).items():
        evaluation[str(label)], kept[str(label)] = run(dict(hyper), eval_trials, EVAL_STREAM)
        a, b = kept[str(label)], kept["tuned by runs"]
        if a.size == b.size and a.size > 1 and np.all(np.isfinite(a - b)):
            # the same trial streams: the difference run by run is paired
            mean, low, high = _interval(a - b)
            notes.append(f"{label} - tuned by runs (paired, same seeds): {mean:.4g} "
                         f"[{low:.4g}, {high:.4g}] (95%)")
    for axis, values in grid.items():  # a pick on the grid's edge may lie beyond it
        if len(values) > 2 and best[axis] in (values[0], values[-1]):
            notes.append(f"the pick's {axis} = {best[axis]} is at the grid's edge: widen it")
    spent = PrivacyLedger(ledgers[0][0].neighbouring)
    for ledger, n in ledgers:
        for mechanism, count in ledger.entries:
            spent.record(mechanism, count * n)
    runs = sum(n for _, n in ledgers) + failed
    acc = accountant or "rdp"
    spent_eps = float(spent.epsilon(float(spent_delta), accountant=acc))
    delta_total = float(spent_delta)
    per_run_delta = max(run_deltas)
    if failed:
        # a run that raised spent at most its target (eps, delta) before it stopped: basic
        # composition with the accounted part (Dwork & Roth Thm 3.16)
        spent_eps += failed * eps
        delta_total += failed * per_run_delta
        notes.append(f"{failed} run(s) failed after reading the data: each counted at its "
                     f"target (eps = {eps:g}, delta = {per_run_delta:g}), by basic composition")
    return RunTuning(algorithm=name, statistic=statistic, best=best, selection=selection,
                     evaluation=evaluation, spent=spent, spent_epsilon=spent_eps,
                     delta=delta_total, accountant=acc, runs=runs, notes=tuple(notes))
