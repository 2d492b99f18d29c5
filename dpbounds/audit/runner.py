r"""Run an audit: many runs on a worst-case pair, a statistic, a certified ε lower bound.

:func:`audit` runs the algorithm ``trials`` times on each data set of the pair of
:mod:`dpbounds.audit.registry`, batched (trials of one call run as one ``(trials, d)``
state), reproducibly: run ``k`` on data set ``j`` uses the per-trial stream with spawn key
``(j, k // CHUNK)`` then ``k % CHUNK`` of the seed, so it depends only on ``(seed, j, k)``.
The first half of the runs on each data set fits the statistics and picks the statistic,
threshold and side (:mod:`dpbounds.audit.statistics`); the second half alone gives the
Clopper–Pearson bound. The claimed ε and δ are the ones the algorithm's own ledger reports.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive, check_probability
from dpbounds.audit.mutation import scaled_noise
from dpbounds.audit.registry import AUDITS, AuditSpec, Setting
from dpbounds.audit.statistics import (
    epsilon_from_counts,
    fit_scorers,
    select_threshold,
)

__all__ = ["CHUNK", "AuditResult", "audit", "run_pair"]

#: Runs per algorithm call; fixed, so that run k's stream does not depend on the total.
CHUNK = 2048
#: Runs per data set with ``quick=True``.
QUICK_TRIALS = 2000
#: Confidence of the bound that *selects* the threshold on the selection half. Higher than
#: the reported one, it prefers events with more counts, whose evaluation varies less
#: (measured: the spread of the certified bound over seeds drops by a third); it costs no
#: validity, the evaluation half alone certifies.
SELECTION_CONFIDENCE = 0.999


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    algorithm, neighbouring:
        Audit name and relation.
    claimed_epsilon, delta:
        What the algorithm's ledger claims (largest over the runs).
    epsilon_lower:
        Certified lower bound on ε at ``confidence`` (0 when the test found nothing).
    epsilon_estimate, epsilon_upper:
        The test's point estimate and the upper end of its two-sided interval
        (``[epsilon_lower, epsilon_upper]``); only the lower end bounds the mechanism.
    confidence:
        Of the lower bound (Clopper–Pearson, union over TPR and FPR).
    trials:
        Runs per data set (half select the test, half evaluate it).
    statistic:
        The statistic chosen on the selection half, and what it was computed on.
    pair:
        The neighbouring data sets.
    tpr, fpr:
        Empirical rates of the chosen event on the evaluation half.
    noise_factor:
        1 for the algorithm itself; otherwise every noise scale was multiplied by it.
    seed, elapsed:
        Seed of the runs and wall-clock seconds.
    """

    algorithm: str
    neighbouring: str
    claimed_epsilon: float
    delta: float
    epsilon_lower: float
    epsilon_estimate: float
    epsilon_upper: float
    confidence: float
    trials: int
    statistic: str
    pair: str
    tpr: float
    fpr: float
    noise_factor: float
    seed: int
    elapsed: float

    @property
    def violation(self) -> bool:
        """``epsilon_lower > claimed_epsilon``: the claim is refuted at ``confidence``."""
        return self.epsilon_lower > self.claimed_epsilon

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["violation"] = self.violation
        return out

    def __str__(self) -> str:
        verdict = "VIOLATION" if self.violation else "consistent"
        mut = "" if self.noise_factor == 1.0 else f" [noise x {self.noise_factor:g}]"
        return (f"{self.algorithm} ({self.neighbouring}){mut}: claimed eps = "
                f"{self.claimed_epsilon:.4g} (delta = {self.delta:.3g}); eps >= "
                f"{self.epsilon_lower:.3f} at {self.confidence:.0%} (test interval "
                f"[{self.epsilon_lower:.3f}, {_fmt(self.epsilon_upper)}], estimate "
                f"{_fmt(self.epsilon_estimate)}); {self.trials} runs per data set; "
                f"{self.statistic}; {self.elapsed:.1f} s -> {verdict}")


def _fmt(v: float) -> str:
    return f"{v:.3f}" if math.isfinite(v) else str(v)


def _seed_root(seed: Any) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    seed = check_int("seed", seed, minimum=0)
    return np.random.SeedSequence(seed)


def run_pair(spec: AuditSpec, setting: Setting, trials: int, seed: Any = 0,
             noise_factor: float = 1.0, progress: bool = False
             ) -> tuple[list[np.ndarray], float, float]:
    """Run ``spec`` on both data sets of ``setting``: ``([features_D, features_D'],
    claimed_epsilon, delta)``, features ``(trials, k)`` in run order."""
    from dpbounds._progress import progress_bar

    trials = check_int("trials", trials, minimum=1, maximum=10_000_000)  # as audit()
    root = _seed_root(seed)
    chunks = [(c * CHUNK, min(trials, (c + 1) * CHUNK)) for c in range(-(-trials // CHUNK))]
    feats: list[list[np.ndarray]] = [[], []]
    claimed, delta = 0.0, 0.0
    bar = progress_bar(bool(progress), total=2 * trials, desc=f"audit {spec.name}", unit="run")
    with bar, scaled_noise(noise_factor):
        for j, objective in enumerate(setting.pair):
            for c, (lo, hi) in enumerate(chunks):
                seq = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, j, c))
                obj = objective.tapped() if hasattr(objective, "tapped") else objective
                res = spec.function(obj, trials=hi - lo, seed=seq, **setting.kwargs)
                feats[j].append(np.asarray(setting.features(res, getattr(obj, "queries", [])),
                                           dtype=float))
                claimed = max(claimed, float(res.ledger.epsilon))
                delta = max(delta, float(res.ledger.delta))
                bar.update(hi - lo)
    return [np.concatenate(f, axis=0) for f in feats], claimed, delta


def audit(algorithm: str, neighbouring: str | None = None, *, epsilon: float | None = None,
          delta: float | None = None, trials: int | None = None, quick: bool = False,
          confidence: float = 0.95, seed: Any = 0, noise_factor: float = 1.0,
          progress: bool = False) -> AuditResult:
    r"""Empirical ε lower bound for one algorithm of :mod:`dpbounds.algorithms`.

    Parameters
    ----------
    algorithm:
        An audit name (:func:`dpbounds.audit.audit_names`), e.g. ``"dp_gd_gaussian"``.
    neighbouring:
        ``"replace-one"`` or ``"add/remove"`` (``replace_one``/``add_remove`` accepted);
        default the first relation the algorithm declares.
    epsilon, delta:
        The target passed to the algorithm (default: the audit's, chosen so that an
        under-noised copy is catchable); the claim compared against is the ledger's.
    trials:
        Runs per data set (default the audit's, 10 000 for most), at least 200;
        ``quick=True`` uses 2 000.
    confidence:
        Of the lower bound, in (0, 1).
    seed:
        Non-negative int or SeedSequence; run k depends only on (seed, data set, k).
    noise_factor:
        Multiply every noise scale by this (mutation testing: 0.5 halves σ).
    progress:
        Show a tqdm bar.

    Returns
    -------
    AuditResult

    Example
    -------
    >>> from dpbounds.audit import audit
    >>> r = audit("output_perturbation", trials=2000, seed=1)
    >>> r.epsilon_lower <= r.claimed_epsilon
    True
    """
    t0 = time.perf_counter()
    spec = _spec(algorithm)
    relation = _relation(spec, neighbouring)
    eps = spec.epsilon if epsilon is None else check_positive("epsilon", epsilon)
    dlt = spec.delta if delta is None else check_probability("delta", delta)
    if dlt == 0.0 and spec.delta > 0.0:
        raise ValueError(f"delta must be in (0, 1) for {spec.name}")
    n = QUICK_TRIALS if quick and trials is None else (spec.trials if trials is None else trials)
    n = check_int("trials", n, minimum=200, maximum=10_000_000)
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    setting = spec.build(relation, eps, dlt)
    (f_d, f_p), claimed, ledger_delta = run_pair(spec, setting, n, seed, noise_factor,
                                                 progress)
    half = n // 2
    scorers = fit_scorers(f_d[:half], f_p[:half], setting.scorers)
    best_name, best_test = None, None
    for name, score in scorers.items():
        test = select_threshold(score(f_d[:half]), score(f_p[:half]), ledger_delta,
                                max(confidence, SELECTION_CONFIDENCE))
        if best_test is None or test.selection_lower > best_test.selection_lower:
            best_name, best_test = name, test
    score = scorers[best_name]
    m = n - half
    ev_d = best_test.event(score(f_d[half:half + m]))
    ev_p = best_test.event(score(f_p[half:half + m]))
    bound = epsilon_from_counts(int(ev_p.sum()), int(ev_d.sum()), m, ledger_delta, confidence)
    side = ">" if best_test.side > 0 else "<"
    k = f_d.shape[1]
    statistic = (f"{best_name} statistic on {setting.statistic}, {k} feature"
                 f"{'s' if k > 1 else ''} (event: score {side} {best_test.threshold:.4g})")
    return AuditResult(
        algorithm=spec.name, neighbouring=relation, claimed_epsilon=claimed,
        delta=ledger_delta, epsilon_lower=bound.lower, epsilon_estimate=bound.estimate,
        epsilon_upper=bound.upper, confidence=confidence, trials=n, statistic=statistic,
        pair=setting.pair_description, tpr=bound.tpr, fpr=bound.fpr,
        noise_factor=float(noise_factor), seed=int(seed) if not isinstance(
            seed, np.random.SeedSequence) else -1,
        elapsed=time.perf_counter() - t0,
    )


def _spec(name: str) -> AuditSpec:
    key = str(name).replace("-", "_")
    if key not in AUDITS:
        raise ValueError(f"algorithm must be one of {sorted(AUDITS)}, got {name!r}")
    return AUDITS[key]


def _relation(spec: AuditSpec, neighbouring: str | None) -> str:
    if neighbouring is None:
        return spec.relations[0]
    key = str(neighbouring).replace("_", "-").replace("add-remove", "add/remove")
    return check_choice("neighbouring", key, spec.relations)
