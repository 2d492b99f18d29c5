r"""How many runs an audit needs, before running it: a power model of the certified bound.

The audit certifies :math:`\varepsilon \ge \log((\mathrm{TPR}_{lo}-\delta)/\mathrm{FPR}_{hi})`
(or the complement form) from the counts of one event among ``m = n/2`` evaluation runs per
data set (:mod:`dpbounds.audit.statistics`). For an event with true rates ``(tpr, fpr)``
the counts are binomial; the bound reached with probability ``power`` is the bound at the
adverse ``power``-quantiles of the two counts (each one-sided: a conservative union). Two
models of the rates:

* **Gaussian** (:func:`gaussian_runs`): the statistic is :math:`N(0,1)` on D and
  :math:`N(\mu,1)` on D' (:math:`\mu`-GDP, the likelihood ratio of any Gaussian
  mechanism), every threshold is a candidate event; :math:`\mu` from the ledger
  (:func:`dpbounds.audit.runner.claimed_mu`) or from a pilot's GDP fit;
* **binomial** (:func:`binomial_runs`): the rates of the event a pilot audit chose, kept
  fixed (no re-selection at larger ``n``: conservative);
* **the declared law** (:func:`model_runs`, settings that declare their transcript's law,
  :attr:`~dpbounds.audit.registry.Setting.model`): the audit's second estimator, the law's
  exact likelihood ratio with its threshold chosen on transcripts drawn from the law
  (:func:`~dpbounds.audit.statistics.model_test`, as the audit chooses it for ``n``) and
  evaluated on **all** ``n`` runs; its rates are those of other transcripts drawn from the
  law [DERIVED: the threshold depends on the law alone, so its counts are binomial at those
  rates].

The threshold selection on the other half of the runs is assumed to find the best
event (optimistic by the selection's own noise, which the pilot's binomial model does not
assume). Where a setting declares its law the audit runs both estimators at half the error
each (Bonferroni), and so does every row of its plan: each at ``1 - (1 - confidence) / 2``.

Example
-------
>>> from dpbounds.audit.planner import gaussian_runs
>>> n = gaussian_runs(target=1.0, mu=1.0, delta=0.05)   # runs per data set
>>> 1_000 < n < 20_000
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_open_interval, check_positive
from dpbounds.audit.statistics import _epsilon_bounds, gdp_epsilon, model_test
from dpbounds.privacy import Neighbouring

__all__ = ["plan"]

#: Largest run count a plan considers (per data set).
MAX_RUNS = 10**9
#: Transcripts per data set whose rates the declared law's row reads (:func:`fresh_scores`).
FRESH_DRAWS = 100_000


def lower_at(tpr: np.ndarray, fpr: np.ndarray, runs: int, delta: float,
             confidence: float = 0.95, power: float = 0.5, all_runs: bool = False) -> float:
    """Certified bound reached with probability about ``power`` by the best of the events
    with rates ``tpr``/``fpr`` (arrays), with ``runs`` per data set (half evaluate; all of
    them with ``all_runs``: an event fixed before the runs)."""
    from scipy import stats  # here, not at the top: 0.3-0.7 CPU-s of import (see intervals.py)
    m = max(1, int(runs) if all_runs else int(runs) // 2)
    tpr, fpr = np.atleast_1d(tpr), np.atleast_1d(fpr)
    tp = stats.binom.ppf(1.0 - power, m, tpr)  # the adverse quantile of each count
    fp = stats.binom.ppf(power, m, fpr)
    lower, _, _ = _epsilon_bounds(tp, fp, m, delta, (1.0 - confidence) / 2.0)
    return max(0.0, float(np.max(lower)))


def _gaussian_rates(mu: float) -> tuple[np.ndarray, np.ndarray]:
    from scipy import stats  # here, not at the top: 0.3-0.7 CPU-s of import (see intervals.py)
    z = np.linspace(-4.0, mu + 9.0, 600)
    return stats.norm.sf(z - mu), stats.norm.sf(z)


def gaussian_lower(mu: float, runs: int, delta: float, confidence: float = 0.95,
                   power: float = 0.5) -> float:
    """:func:`lower_at` under the Gaussian model with shift ``mu``."""
    tpr, fpr = _gaussian_rates(check_positive("mu", mu))
    return lower_at(tpr, fpr, runs, delta, confidence, power)


def _search(reached: Callable[[int], float], target: float) -> float:
    """Smallest run count (per data set, >= 200) with ``reached(n) >= target``; ``inf`` if
    none up to :data:`MAX_RUNS` (bisection on a log grid; ``reached`` is nondecreasing up
    to the binomial quantiles' steps)."""
    lo, hi = 200, 200
    while reached(hi) < target:
        if hi >= MAX_RUNS:
            return math.inf
        lo, hi = hi, min(MAX_RUNS, hi * 4)
    if hi == 200:
        return 200
    while hi - lo > max(1, lo // 100):  # 1% resolution
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reached(mid) >= target else (mid, hi)
    return hi


def gaussian_runs(target: float, mu: float, delta: float, confidence: float = 0.95,
                  power: float = 0.95) -> float:
    r"""Runs per data set for the certified bound to reach ``target`` with probability
    ``power`` under the Gaussian model; ``inf`` when ``target`` is at or above
    :math:`\varepsilon_\mu(\delta)`, the most any test on :math:`\mu`-GDP can show."""
    check_positive("target", target)
    check_open_interval("power", power, 0.0, 1.0)
    if target >= gdp_epsilon(check_positive("mu", mu), delta):
        return math.inf
    tpr, fpr = _gaussian_rates(mu)
    return _search(lambda n: lower_at(tpr, fpr, n, delta, confidence, power), target)


def model_lower(simulated: tuple[np.ndarray, np.ndarray], runs: int, delta: float,
                confidence: float = 0.95, power: float = 0.5,
                rates: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """Certified bound reached with probability about ``power`` by the declared law's exact
    likelihood-ratio test on all ``runs`` runs per data set: the threshold and side
    :func:`~dpbounds.audit.statistics.model_test` chooses for ``runs`` on ``simulated``
    (sorted scores of transcripts drawn from the law on D and on D',
    :func:`~dpbounds.audit.statistics.simulated_scores`: the audit's own), at the rates of
    ``rates``, scores of *other* transcripts drawn from the law (:func:`fresh_scores`).

    The rates must come from other draws: the threshold maximises the bound at the
    simulated tail counts, so their own rates are biased low in the false positives (the
    winner's curse; measured 5-10% optimistic on the bound at 1,000-4,000 runs).
    ``rates=None`` reads ``simulated`` anyway."""
    n = max(1, int(runs))
    test = model_test(simulated, n, delta, confidence)
    on_d, on_p = simulated if rates is None else rates
    tpr = float(np.mean(test.event(on_p)))
    fpr = float(np.mean(test.event(on_d)))
    return lower_at(np.array([tpr]), np.array([fpr]), n, delta, confidence, power,
                    all_runs=True)


def fresh_scores(model: Any, draws: int = FRESH_DRAWS) -> tuple[np.ndarray, np.ndarray]:
    """The law's exact likelihood ratio (:func:`~dpbounds.audit.statistics.mixture_lr`) on
    ``draws`` transcripts drawn from ``model`` on D and on D' with seed 1 (the audit's
    threshold draws use seed 0): the rates :func:`model_lower` reads."""
    from dpbounds.audit.statistics import mixture_lr, sample_model

    score = mixture_lr(model)
    on_d, on_p = sample_model(model, draws, 1)
    return score(on_d), score(on_p)


def model_runs(target: float, simulated: tuple[np.ndarray, np.ndarray], delta: float,
               confidence: float = 0.95, power: float = 0.95,
               rates: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """Runs per data set for :func:`model_lower` to reach ``target`` with probability
    ``power``; ``inf`` when no run count up to :data:`MAX_RUNS` does."""
    check_positive("target", target)
    check_open_interval("power", power, 0.0, 1.0)
    return _search(lambda n: model_lower(simulated, n, delta, confidence, power, rates),
                   target)


def binomial_runs(target: float, tpr: float, fpr: float, delta: float,
                  confidence: float = 0.95, power: float = 0.95,
                  all_runs: bool = False) -> float:
    """Runs per data set for one event of rates ``(tpr, fpr)`` to certify ``target`` with
    probability ``power``; ``inf`` when the event's own ε-evidence is below ``target``
    (``all_runs``: the event is fixed before the runs, all of them evaluate)."""
    check_positive("target", target)
    check_open_interval("power", power, 0.0, 1.0)
    t, f = np.array([tpr]), np.array([fpr])
    # the event's ε-evidence at infinitely many runs (event or complement form)
    ideal = max(_log_ratio_pair(tpr - delta, fpr), _log_ratio_pair(1 - fpr - delta, 1 - tpr))
    if not ideal > target:
        return math.inf
    return _search(lambda n: lower_at(t, f, n, delta, confidence, power, all_runs), target)


def _log_ratio_pair(num: float, den: float) -> float:
    if num <= 0:
        return -math.inf
    return math.inf if den <= 0 else math.log(num / den)


# ----------------------------------------------------------------------------------------
# a plan for one audit: a pilot, then the runs each estimator needs
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanRow:
    """Runs per data set one estimator needs (``inf``: not reachable by it)."""

    estimator: str
    model: str
    target: float
    runs: float
    cpu_seconds: float
    memory_bytes: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Plan:
    """What :func:`plan` found: the claim, the target, the pilot and one row per estimator."""

    algorithm: str
    neighbouring: Neighbouring
    mutant: str
    claimed_epsilon: float
    delta: float
    target: float
    power: float
    pilot: Any
    rows: tuple[PlanRow, ...]

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("algorithm", "neighbouring", "mutant",
                                             "claimed_epsilon", "delta", "target", "power")}
        out["neighbouring"] = self.neighbouring.value  # what --neighbouring takes
        out["pilot"] = self.pilot.to_dict()
        out["rows"] = [r.to_dict() for r in self.rows]
        return out

    def __str__(self) -> str:
        what = f" [mutant {self.mutant}]" if self.mutant else ""
        goal = ("catch it (eps_lower > claim)" if self.mutant else
                f"eps_lower >= {_f(self.target)}")
        # a pure-DP algorithm given a delta does not read it (as the audit's own line says;
        # the plan dropped it silently: fuzz round 14)
        given = float(getattr(self.pilot, "target_delta", 0.0) or 0.0)
        unread = (f", pure DP: the delta given, {given:.3g}, is not read"
                  if self.delta == 0.0 and given > 0.0 else "")
        lines = [f"plan: {self.algorithm} ({self.neighbouring.value}){what}: claim eps = "
                 f"{self.claimed_epsilon:.4g} at delta = {self.delta:.3g}{unread}; goal: {goal} "
                 f"with probability {self.power:.0%}; pilot of {self.pilot.trials} runs: eps >= "
                 f"{_f(self.pilot.epsilon_lower)}, mu_hat = {_f(self.pilot.mu_hat)}, "
                 f"{self.pilot.cpu_seconds:.1f} s CPU",
                 f"  {'estimator':34s} {'model':44s} {'runs / data set':>16s} {'CPU (est.)':>12s}"
                 f" {'memory (est.)':>14s}"]
        for r in self.rows:
            runs = f"{r.runs:,.0f}" if math.isfinite(r.runs) else "unreachable"
            cpu = f"{r.cpu_seconds:,.0f} s" if math.isfinite(r.cpu_seconds) else "-"
            mem = f"{r.memory_bytes / 2**30:,.2f} GiB" if math.isfinite(r.memory_bytes) else "-"
            lines.append(f"  {r.estimator:34s} {r.model:44s} {runs:>16s} {cpu:>12s} {mem:>14s}")
        return "\n".join(lines)


def _f(v: float) -> str:
    """Three decimals, or three significant digits below 0.001 (a goal of 9e-6 was printed
    'eps_lower >= 0.000': fuzz round 14)."""
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.3f}" if v == 0 or abs(v) >= 1e-3 else f"{v:.3g}"


def plan(algorithm: str, neighbouring: Neighbouring | str | None = None, *,
         target_ratio: float = 0.9, mutant: str | None = None,
         epsilon: float | None = None, delta: float | None = None,
         pilot_trials: int = 2000, confidence: float = 0.95, power: float = 0.95,
         seed: int = 0) -> Plan:
    r"""Runs per data set each estimator needs, from a pilot audit and the models above.

    The goal is ``epsilon_lower >= target_ratio * claim`` for the algorithm, and
    ``epsilon_lower > claim`` (caught) for a ``mutant``, each with probability ``power``.
    Rows: the Gaussian model with the ledger's :math:`\mu` (Gaussian ledgers; the most a
    correct algorithm's transcript can carry), the Gaussian model with the pilot's GDP
    estimate, and the binomial model of the pilot's chosen event. CPU is the pilot's per
    run, times three sets (D, D', null); memory is
    :func:`~dpbounds.audit.runner.memory_estimate` at the row's runs (what the audit would
    compare with its budget). Where the setting declares its transcript's law, a row for the
    law's exact likelihood ratio on all runs (:func:`model_runs`), and every row at the
    audit's per-estimator confidence ``1 - (1 - confidence) / 2``.
    """
    from dpbounds.audit.runner import MIXTURE_LR, _declared_model, audit, memory_estimate
    from dpbounds.audit.statistics import simulated_scores

    if not check_positive("target_ratio", target_ratio) <= 1.0:
        # a sound audit of a correct algorithm never certifies more than its claim
        raise ValueError(f"target_ratio must lie in (0, 1] (eps_lower / claim; a correct "
                         f"algorithm's eps_lower never exceeds its claim), got {target_ratio!r}")
    pilot = audit(algorithm, neighbouring, epsilon=epsilon, delta=delta, trials=pilot_trials,
                  confidence=confidence, seed=seed, mutant=mutant)
    claim, dlt = pilot.claimed_epsilon, pilot.delta
    if not claim > 0:
        # epsilon = 1e-20 reached gaussian_runs as "target must be > 0, got 0.0" (fuzz 13)
        raise ValueError(
            f"epsilon={pilot.input_epsilon!r}: {algorithm}'s claimed epsilon at delta = "
            f"{dlt:.3g} is 0 (its privacy loss stays within delta), so there is no lower "
            "bound above 0 for an audit to reach; plan with a larger epsilon or a smaller "
            "delta")
    model = _declared_model(algorithm, neighbouring, pilot.input_epsilon, delta, mutant)
    # the audit's two estimators share its error (Bonferroni): each row at its own share
    each = confidence if model is None else 1.0 - (1.0 - confidence) / 2.0
    target = claim * (1.0 + 1e-9) if mutant else target_ratio * claim
    per_run = pilot.cpu_seconds / (3 * pilot.trials)
    rows: list[PlanRow] = []

    def add(estimator: str, model: str, runs: float) -> None:
        # the audit's own estimate at that many runs (three sets: D, D', the null)
        mem = (memory_estimate(int(runs), pilot.features, 3)
               if math.isfinite(runs) and pilot.features > 0 else math.nan)
        rows.append(PlanRow(estimator, model, target, runs, 3 * runs * per_run, mem))

    if dlt > 0 and math.isfinite(pilot.mu_claim) and not mutant:
        add("Gaussian LR (white-box, exact form)", f"Gaussian, mu = mu_claim = "
            f"{pilot.mu_claim:.3f}", gaussian_runs(target, pilot.mu_claim, dlt, each, power))
    if dlt > 0 and math.isfinite(pilot.mu_hat) and pilot.mu_hat > 0:
        add("linear statistic (fitted)", f"Gaussian, mu = pilot mu_hat = {pilot.mu_hat:.3f}",
            gaussian_runs(target, pilot.mu_hat, dlt, each, power))
    if model is not None:
        add("declared law's LR (all runs)", f"the law drawn (q = {model.q:.3g}, "
            f"s = {model.s:.3g}, {model.steps} steps)",
            model_runs(target, simulated_scores(model), dlt, each, power,
                       fresh_scores(model)))
    # the pilot's event: chosen on half its runs, or fixed by the law (then all evaluate)
    add("the pilot's chosen event", f"binomial, TPR = {pilot.tpr:.4f}, FPR = {pilot.fpr:.4f}",
        binomial_runs(target, pilot.tpr, pilot.fpr, dlt, each, power,
                      all_runs=pilot.statistic.startswith(MIXTURE_LR)))
    return Plan(pilot.algorithm, pilot.neighbouring, pilot.mutant, claim, dlt, target, power,
                pilot, tuple(rows))
