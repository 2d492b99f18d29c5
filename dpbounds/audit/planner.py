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
  fixed (no re-selection at larger ``n``: conservative).

The threshold selection on the other half of the runs is assumed to find the best
event (optimistic by the selection's own noise, which the pilot's binomial model does not
assume).

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
from scipy import stats

from dpbounds._validation import check_open_interval, check_positive
from dpbounds.audit.statistics import _epsilon_bounds, gdp_epsilon
from dpbounds.privacy import Neighbouring

__all__ = ["plan"]

#: Largest run count a plan considers (per data set).
MAX_RUNS = 10**9


def lower_at(tpr: np.ndarray, fpr: np.ndarray, runs: int, delta: float,
             confidence: float = 0.95, power: float = 0.5) -> float:
    """Certified bound reached with probability about ``power`` by the best of the events
    with rates ``tpr``/``fpr`` (arrays), with ``runs`` per data set (half evaluate)."""
    m = max(1, int(runs) // 2)
    tpr, fpr = np.atleast_1d(tpr), np.atleast_1d(fpr)
    tp = stats.binom.ppf(1.0 - power, m, tpr)  # the adverse quantile of each count
    fp = stats.binom.ppf(power, m, fpr)
    lower, _, _ = _epsilon_bounds(tp, fp, m, delta, (1.0 - confidence) / 2.0)
    return max(0.0, float(np.max(lower)))


def _gaussian_rates(mu: float) -> tuple[np.ndarray, np.ndarray]:
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


def binomial_runs(target: float, tpr: float, fpr: float, delta: float,
                  confidence: float = 0.95, power: float = 0.95) -> float:
    """Runs per data set for one event of rates ``(tpr, fpr)`` to certify ``target`` with
    probability ``power``; ``inf`` when the event's own ε-evidence is below ``target``."""
    check_positive("target", target)
    check_open_interval("power", power, 0.0, 1.0)
    t, f = np.array([tpr]), np.array([fpr])
    # the event's ε-evidence at infinitely many runs (event or complement form)
    ideal = max(_log_ratio_pair(tpr - delta, fpr), _log_ratio_pair(1 - fpr - delta, 1 - tpr))
    if not ideal > target:
        return math.inf
    return _search(lambda n: lower_at(t, f, n, delta, confidence, power), target)


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
                f"eps_lower >= {self.target:.3f}")
        lines = [f"plan: {self.algorithm} ({self.neighbouring.value}){what}: claim eps = "
                 f"{self.claimed_epsilon:.4g} at delta = {self.delta:.3g}; goal: {goal} with "
                 f"probability {self.power:.0%}; pilot of {self.pilot.trials} runs: eps >= "
                 f"{self.pilot.epsilon_lower:.3f}, mu_hat = {_f(self.pilot.mu_hat)}, "
                 f"{self.pilot.cpu_seconds:.1f} s CPU",
                 f"  {'estimator':34s} {'model':44s} {'runs / data set':>16s} {'CPU (est.)':>12s}"]
        for r in self.rows:
            runs = f"{r.runs:,.0f}" if math.isfinite(r.runs) else "unreachable"
            cpu = f"{r.cpu_seconds:,.0f} s" if math.isfinite(r.cpu_seconds) else "-"
            lines.append(f"  {r.estimator:34s} {r.model:44s} {runs:>16s} {cpu:>12s}")
        return "\n".join(lines)


def _f(v: float) -> str:
    return f"{v:.3f}" if math.isfinite(v) else "n/a"


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
    run, times three sets (D, D', null).
    """
    from dpbounds.audit.runner import audit

    check_positive("target_ratio", target_ratio)
    pilot = audit(algorithm, neighbouring, epsilon=epsilon, delta=delta, trials=pilot_trials,
                  confidence=confidence, seed=seed, mutant=mutant)
    claim, dlt = pilot.claimed_epsilon, pilot.delta
    target = claim * (1.0 + 1e-9) if mutant else target_ratio * claim
    per_run = pilot.cpu_seconds / (3 * pilot.trials)
    rows: list[PlanRow] = []

    def add(estimator: str, model: str, runs: float) -> None:
        rows.append(PlanRow(estimator, model, target, runs, 3 * runs * per_run))

    if dlt > 0 and math.isfinite(pilot.mu_claim) and not mutant:
        add("Gaussian LR (white-box, exact form)", f"Gaussian, mu = mu_claim = "
            f"{pilot.mu_claim:.3f}", gaussian_runs(target, pilot.mu_claim, dlt, confidence,
                                                   power))
    if dlt > 0 and math.isfinite(pilot.mu_hat) and pilot.mu_hat > 0:
        add("linear statistic (fitted)", f"Gaussian, mu = pilot mu_hat = {pilot.mu_hat:.3f}",
            gaussian_runs(target, pilot.mu_hat, dlt, confidence, power))
    add("the pilot's chosen event", f"binomial, TPR = {pilot.tpr:.4f}, FPR = {pilot.fpr:.4f}",
        binomial_runs(target, pilot.tpr, pilot.fpr, dlt, confidence, power))
    return Plan(pilot.algorithm, pilot.neighbouring, pilot.mutant, claim, dlt, target, power,
                pilot, tuple(rows))
