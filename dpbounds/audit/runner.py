r"""Run an audit: many runs on a worst-case pair, a statistic, a certified ε lower bound.

:func:`audit` runs the algorithm ``trials`` times on each data set of the pair of
:mod:`dpbounds.audit.registry`, batched (trials of one call run as one ``(trials, d)``
state), reproducibly: run ``k`` on data set ``j`` uses the per-trial stream with spawn key
``(j, k // CHUNK)`` then ``k % CHUNK`` of the seed, so it depends only on ``(seed, j, k)``.
The first half of the runs on each data set fits the statistics and picks the statistic,
threshold and side (:mod:`dpbounds.audit.statistics`); the second half alone gives the
Clopper–Pearson bound. The claimed ε and δ are the ones the algorithm's own ledger reports.

**Null control.** Every audit also runs D a second time (stream key ``(2, k // CHUNK)``) and
applies the same estimator to the pair (D, D): its certified bound ``null_epsilon_lower``
must be 0 but for a ``1 - confidence`` share of seeds; a larger share means the estimator
is not a lower bound (tested over hundreds of nulls in ``tests/audit/test_null.py``).

**GDP estimate.** The chosen statistic's evaluation scores are read as a Gaussian
trade-off (:func:`~dpbounds.audit.statistics.fit_gdp`): ``mu_hat`` with an interval and a
goodness-of-fit p-value, next to ``mu_claim``, the μ of the Gaussian mechanisms the ledger
recorded (:math:`\sqrt{\sum_t c_t(\Delta_t/\sigma_t)^2}`, exact for Gaussian noise), and
``epsilon_tight``, ε at the claim's δ of ``mu_claim``-GDP (what the same noise gives under
exact accounting: no auditor can certify more for a correct algorithm).

**Tight claims** (``tight=True``, the default for (ε, δ) audits). The claim is what the
run's ledger says, read by the *tightest* accountant the library has for it: the least ε at
the ledger's δ over every accountant of :mod:`dpbounds.privacy.accountants` that supports
its entries (:func:`tight_claim`; each is an upper bound on the ledger's mechanisms, so the
least is one too; for Gaussian ledgers the PLD accountant's closed form, exact). The ε
passed to the algorithm is then chosen (:func:`calibrate_input`) so that this claim is the
audit's target: a zCDP-calibrated DP-GD asked for (3, 0.05) adds noise whose exact ε is
1.61, and a test can only approach that; calibrated so that its exact ε is 3, the audit
checks the whole claim. ``ledger_epsilon`` keeps what the algorithm's own accountant says
of the same run, ``input_epsilon`` what it was asked for. No accountant is made less
conservative: the algorithm's noise is exactly what its own calibration gives for
``input_epsilon``.
"""

from __future__ import annotations

import math
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from statistics import NormalDist
from typing import Any, cast

import numpy as np

from dpbounds._discovery import unknown_name
from dpbounds._validation import (
    check_choice,
    check_closed_interval,
    check_finite,
    check_int,
    check_positive,
    check_probability,
)
from dpbounds.audit.mutation import scaled_noise
from dpbounds.audit.registry import (
    AUDITS,
    NOISE_OPTIONS,
    RELEASE_AUDITS,
    AuditSpec,
    Setting,
    grid_audit_names,
)
from dpbounds.audit.settings._common import MAX_TRIALS, MIN_TRIALS
from dpbounds.audit.statistics import (
    GdpFit,
    HeldOut,
    fit_gdp,
    fit_scorers,
    gdp_epsilon,
    held_out_bound,
    independence_z,
    model_bound,
    model_test,
    simulated_scores,
)
from dpbounds.privacy import Neighbouring
from dpbounds.privacy.limits import check_epsilon_limit

__all__ = ["AuditResult", "audit", "calibrate_input", "tight_claim"]

#: Runs per algorithm call; fixed, so that run k's stream does not depend on the total.
CHUNK = 2048
#: Runs per data set with ``quick=True``.
QUICK_TRIALS = 2000
#: The second δ every audit reports its bound at (besides the claim's own).
REFERENCE_DELTA = 0.05
#: standard errors by which a GDP estimate must exceed mu_claim to be reported as a finding
FINDING_Z = 3.0
#: least goodness-of-fit p-value of the Gaussian shape for the GDP estimate to be read
FINDING_FIT_P = 0.01
#: Stream key of the null runs (a second, independent set of runs on D).
NULL_SET = 2
#: Default memory budget of one audit (GB); a larger estimate is refused unless asked for.
MEMORY_BUDGET_GB = 4.0
#: Bytes per stored feature value and run, with the copies scoring makes (measured: about
#: 18 for DP-SGD at 10^5 runs, 3 sets of 5 features), and the base: the interpreter, the
#: imports and one chunk's working memory (DP-AGD's is the largest: 307 MiB peak at 40,000
#: runs of one feature, above the 3e8 this was until issue 36; bench/bench_audit_memory.md).
_BYTES_PER_VALUE, _BASE_BYTES = 32, 3.6e8
#: Seconds between progress lines when stderr is not a terminal (logs, pipes).
LOG_EVERY_S = 5.0


#: A plug-in step whose output (or memory) moved by more than this share of what the gradient
#: alone moves it, when the gradient is shifted by ``delta`` and the noise by ``-delta`` (the
#: same release), is not a function of its release (:class:`dpbounds.extend.Releases`);
#: correct steps read ~1e-16 (rounding). Here, below :mod:`dpbounds.extend`, which probes.
POST_PROCESSING_TOL = 1e-6


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    algorithm, neighbouring:
        Audit name and relation (a :class:`~dpbounds.privacy.Neighbouring`; ``to_dict`` and
        the text show its value, ``"replace_one"`` / ``"add_remove"``: the one spelling of
        every command's input and output).
    claimed_epsilon, delta:
        What the algorithm's ledger claims (largest over the runs).
    epsilon_lower:
        Certified lower bound on ε at ``delta`` and ``confidence`` (0 when the test found
        nothing).
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
    reference_delta, epsilon_lower_reference:
        The certified bound at δ = :data:`REFERENCE_DELTA` (same statistic, threshold
        re-selected on the selection half).
    null_epsilon_lower:
        The same estimator on (D, D): a certified bound for a pair with ε = 0. Above 0 it
        is a false positive (probability at most ``1 - confidence`` for a valid estimator).
    mu_hat, mu_low, mu_high, mu_gof_pvalue:
        GDP estimate of the chosen statistic (an **estimate**, not a bound; see
        :class:`~dpbounds.audit.statistics.GdpFit`); ``nan`` where it cannot be fitted.
    mu_claim:
        μ of the Gaussian noise the ledger recorded (``nan`` for non-Gaussian ledgers).
    epsilon_tight:
        ε at ``delta`` of ``mu_claim``-GDP (exact accounting of the same noise);
        ``nan`` for non-Gaussian ledgers.
    cpu_seconds:
        Process CPU time of the audit.
    mutant:
        Name of the mutant audited (``""``: the algorithm itself).
    claim_accountant:
        The accountant whose ε is ``claimed_epsilon`` (the tightest the ledger admits with
        ``tight=True``; the algorithm's own otherwise).
    ledger_epsilon:
        ε of the same runs under the algorithm's own accountant (its calibration).
    input_epsilon:
        The ε the algorithm was asked for (with ``tight=True`` chosen so that the tight
        claim is the target).
    target_epsilon:
        The audit's target ε (``epsilon``, or the audit's own). A claim above it (beyond
        :data:`CALIBRATION_RTOL`) is a violation read off the ledger itself
        (:attr:`AuditResult.overshoots_target`).
    independence_z, independence_crit:
        The largest lag-1 autocorrelation of a feature across consecutive runs, times
        sqrt(n), over every set, and its Bonferroni threshold
        (:func:`~dpbounds.audit.statistics.independence_z`): above it the runs are not
        independent (noise shared across runs) and the audit cannot pass.
    tradeoff:
        The chosen statistic's empirical trade-off curve on the evaluation runs
        (:func:`~dpbounds.audit.statistics.empirical_tradeoff`, an estimate), each row with
        ``claim_fnr``, the least FNR the claim allows at that FPR, and ``gdp_fnr``, the
        FNR of ``mu_claim``-GDP (``None`` for non-Gaussian ledgers).
    noise, low_bits:
        The algorithm's noise option (``"float"`` or ``"grid"``) and whether the statistic
        read the raw released floats' last bits.
    features, estimated_memory_bytes:
        Features per run, and the peak memory :func:`memory_estimate` gave for these runs
        (what ``max_memory_gb`` was compared with).
    """

    algorithm: str
    neighbouring: Neighbouring
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
    reference_delta: float = REFERENCE_DELTA
    epsilon_lower_reference: float = 0.0
    null_epsilon_lower: float = math.nan
    mu_hat: float = math.nan
    mu_low: float = math.nan
    mu_high: float = math.nan
    mu_gof_pvalue: float = math.nan
    mu_claim: float = math.nan
    epsilon_tight: float = math.nan
    cpu_seconds: float = 0.0
    mutant: str = ""
    claim_accountant: str = ""
    ledger_epsilon: float = math.nan
    input_epsilon: float = math.nan
    tradeoff: tuple[dict[str, Any], ...] = ()
    noise: str = "float"
    low_bits: bool = False
    independence_z: float = math.nan
    independence_crit: float = math.inf
    features: int = 0
    estimated_memory_bytes: float = math.nan
    post_processing: float = math.nan
    seed_ignored: bool = False
    target_epsilon: float = math.nan
    target_delta: float = math.nan

    def __post_init__(self) -> None:
        object.__setattr__(self, "neighbouring", Neighbouring.coerce(self.neighbouring))

    @property
    def violation(self) -> bool:
        """``epsilon_lower > claimed_epsilon``: the claim is refuted at ``confidence``."""
        return self.epsilon_lower > self.claimed_epsilon

    @property
    def null_false_positive(self) -> bool:
        """The null control certified ε > 0 for D = D' (expected in at most a
        ``1 - confidence`` share of seeds)."""
        return self.null_epsilon_lower > 0.0

    @property
    def runs_dependent(self) -> bool:
        """The runs failed the independence check (a null control on the runs themselves:
        false alarm at most :data:`~dpbounds.audit.statistics.INDEPENDENCE_ALPHA`)."""
        return self.independence_z > self.independence_crit

    @property
    def estimate_exceeds_claim(self) -> bool:
        """The GDP estimate lies above ``mu_claim`` by more than :data:`FINDING_Z` of its
        standard errors, its Gaussian shape not rejected (fit p >= :data:`FINDING_FIT_P`): a
        **finding, labelled an estimate** -- evidence against the claim, not a certificate
        (the rigorous bound is ``epsilon_lower``). With a correct algorithm (true mu <=
        mu_claim) it fires with probability about 0.13 % per audit (one-sided 3 sigma)."""
        if not (math.isfinite(self.mu_hat) and math.isfinite(self.mu_claim)
                and math.isfinite(self.mu_high) and self.mu_gof_pvalue >= FINDING_FIT_P):
            return False
        z = NormalDist().inv_cdf(0.5 + self.confidence / 2.0)
        se = (self.mu_high - self.mu_hat) / z  # mu_low is clipped at 0; mu_high is not
        return self.mu_hat - FINDING_Z * se > self.mu_claim

    @property
    def not_post_processing(self) -> bool:
        """A plug-in step's output is not a function of its release ``query + noise``
        (:class:`dpbounds.extend.Releases`): shifting the query by ``delta`` and the noise by
        ``-delta`` moved it by more than :data:`POST_PROCESSING_TOL` of
        what the shifted query alone moved it. The audit's statistic reads the releases, so
        it could not see noise the step drops or scales (a step without noise read the same
        numbers as the correct one); the output then carries less noise than the ledger
        charges for: a violation, certain rather than statistical."""
        return math.isfinite(self.post_processing) and (
            self.post_processing > POST_PROCESSING_TOL)

    @property
    def overshoots_target(self) -> bool:
        """The run's own ledger, read by the tightest accountant, says ε above the target
        it was calibrated for (beyond :data:`CALIBRATION_RTOL`): the algorithm spent more
        than it was asked to. Every correct algorithm's claim equals the target (its
        calibration never overshoots); an adversary's DP-GD calibrated for one step of T
        claimed 5.57 against the 3 asked for, and the audit judged it against 5.57 and
        passed it. Certain, not statistical."""
        over_eps = (math.isfinite(self.target_epsilon) and math.isfinite(self.claimed_epsilon)
                    and self.claimed_epsilon > self.target_epsilon * (1.0 + 4 * CALIBRATION_RTOL))
        # a ledger at a larger delta than asked (its epsilon is read there, so it matched the
        # target: a review of stop 73) spends more too
        over_delta = (math.isfinite(self.target_delta) and math.isfinite(self.delta)
                      and self.delta > self.target_delta * (1.0 + 4 * CALIBRATION_RTOL))
        return bool(over_eps or over_delta)

    @property
    def status(self) -> str:
        """``"FAIL"`` (the claim is refuted, a plug-in step is not a function of its
        release, the runs ignore their seed, or the ledger's claim overshoots the target:
        exit 1), ``"INCONCLUSIVE"`` (the null control
        fired, or the runs are not independent, so the estimator's bound cannot be trusted
        to pass, or the GDP estimate exceeds the claim: exit 3) or ``"PASS"`` (consistent:
        exit 0). Dependent runs come first: the Clopper–Pearson bound assumes independent
        runs, so then it certifies nothing either way, a violation included (runs sharing
        one noise draw made the model's fixed-threshold test read a "violation")."""
        if self.not_post_processing or self.seed_ignored or self.overshoots_target:
            return "FAIL"
        if self.runs_dependent:
            return "INCONCLUSIVE"
        if self.violation:
            return "FAIL"
        return "INCONCLUSIVE" if (self.null_false_positive or self.runs_dependent
                                  or self.estimate_exceeds_claim) else "PASS"

    @property
    def ratio(self) -> float:
        """``epsilon_lower / claimed_epsilon`` (how close the audit comes to the claim)."""
        return self.epsilon_lower / self.claimed_epsilon if self.claimed_epsilon > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON-ready: non-finite numbers become ``None``."""
        out = asdict(self)
        out["neighbouring"] = self.neighbouring.value  # what --neighbouring takes
        out["violation"] = self.violation
        out["null_false_positive"] = self.null_false_positive
        out["runs_dependent"] = self.runs_dependent
        out["estimate_exceeds_claim"] = self.estimate_exceeds_claim
        out["not_post_processing"] = self.not_post_processing
        out["overshoots_target"] = self.overshoots_target
        out["status"] = self.status
        out["ratio"] = self.ratio
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in out.items()}

    def __str__(self) -> str:
        verdict = {"FAIL": "VIOLATION", "PASS": "consistent"}.get(self.status, "INCONCLUSIVE")
        if self.overshoots_target:
            if math.isfinite(self.target_delta) and self.delta > self.target_delta * (
                    1.0 + 4 * CALIBRATION_RTOL):
                verdict += (f" (the run's ledger is at delta = {self.delta:.3g}, above the "
                            f"target delta {self.target_delta:.3g} it was calibrated for: the "
                            "noise was calibrated for less than the run spends)")
            else:
                verdict += (f" (the run's ledger claims eps = {self.claimed_epsilon:.4g} at "
                            f"delta = {self.delta:.3g}, above the target "
                            f"{self.target_epsilon:.4g} it was calibrated for: the noise was "
                            "calibrated for less than the run spends)")
        if self.seed_ignored:
            verdict += (" (the runs on D at two independent seeds are identical, bit for bit: "
                        "the noise does not depend on the seed; a deterministic function of "
                        "the data is not private)")
        if self.not_post_processing:
            verdict += (f" (the step's output is not a function of its release grad + noise: "
                        f"a shift of the gradient offset in the noise moved it or the memory "
                        f"it keeps {self.post_processing:.3g} of the shift's own effect; noise "
                        "dropped or scaled, a gradient kept or released without noise, the "
                        "query changed before the noise is added (clip through "
                        "Method(clip=)), or a step with randomness of its own)")
        if self.status == "INCONCLUSIVE" and self.null_false_positive:
            verdict += " (the null control fired: this estimator cannot pass it)"
        if self.runs_dependent:
            verdict += (f" (the runs are not independent: lag-1 correlation z = "
                        f"{self.independence_z:.3g} > {self.independence_crit:.3g}; noise "
                        "shared across runs?)")
        if self.estimate_exceeds_claim:  # beside the rigorous bound, labelled
            verdict += (f"; FINDING (an estimate, not a certificate): GDP mu = {self.mu_hat:.3f} "
                        f"exceeds mu_claim = {self.mu_claim:.3f} by more than {FINDING_Z:g} "
                        "standard errors")
        mut = "" if self.noise_factor == 1.0 else f" [noise x {self.noise_factor:g}]"
        if self.noise != "float" or self.low_bits:
            mut += f" [noise={self.noise}]"
        if self.mutant:
            mut = f" [mutant {self.mutant}]"
        null = "FALSE POSITIVE" if self.null_false_positive else "ok"
        gdp = ""
        if math.isfinite(self.mu_hat):
            gdp = (f"; GDP estimate mu = {_fmt(self.mu_hat)} [{_fmt(self.mu_low)}, "
                   f"{_fmt(self.mu_high)}] (fit p = {self.mu_gof_pvalue:.2g})")
            if math.isfinite(self.mu_claim):
                gdp += f" vs mu_claim = {_fmt(self.mu_claim)}"
        # a pure-DP algorithm given a delta does not read it: said, not silent (fuzz round 8)
        unread = (f", pure DP: the delta given, {self.target_delta:.3g}, is not read"
                  if self.delta == 0.0 and self.target_delta > 0.0 else "")
        return (f"{self.algorithm} ({self.neighbouring.value}){mut}: claimed eps = "
                f"{self.claimed_epsilon:.4g} (delta = {self.delta:.3g}{unread}); eps >= "
                f"{self.epsilon_lower:.3f} at {_percent(self.confidence)} (test interval "
                f"[{self.epsilon_lower:.3f}, {_fmt(self.epsilon_upper)}], "
                f"{_estimate_text(self.epsilon_estimate)}); at delta = "
                f"{self.reference_delta:g}: eps >= "
                f"{self.epsilon_lower_reference:.3f}; null (D = D): eps >= "
                f"{self.null_epsilon_lower:.3f} [{null}]{gdp}; {self.trials} runs per data "
                f"set; {self.statistic}; {self.cpu_seconds:.1f} s CPU -> {verdict}")


def _percent(level: float) -> str:
    """A confidence level as a percentage with the digits it needs (0.9999 is "99.99%", not
    the "100%" of ``{:.0%}``)."""
    for digits in range(0, 12):
        text = f"{100.0 * level:.{digits}f}"
        if abs(float(text) / 100.0 - level) <= 1e-12 * max(level, 1e-300) or digits == 11:
            return f"{text}%"
    return f"{100.0 * level}%"  # pragma: no cover


def _estimate_text(v: float) -> str:
    """The point estimate, or why there is none: far above its noise one of the two empirical
    rates the estimate divides by is 0 (no run on D fell in the event, or every run on D' did),
    and the ratio is unbounded; the interval's lower end is what the audit shows."""
    if math.isinf(v):
        return "no point estimate: a rate it divides by is 0 in these runs"
    return f"estimate {_fmt(v)}"


def _fmt(v: float) -> str:
    """Three decimals, or 4 significant digits in scientific notation beyond 1e6 (a noiseless
    run's GDP estimate printed as mu = 10433199468515072.000; fuzz round 7)."""
    if not math.isfinite(v):
        return str(v)
    return f"{v:.4g}" if abs(v) >= 1e6 else f"{v:.3f}"


def _seed_root(seed: Any) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    seed = check_int("seed", seed, minimum=0)
    return np.random.SeedSequence(seed)


def run_sets(spec: AuditSpec, setting: Setting, trials: int, seed: Any = 0,
             noise_factor: float = 1.0, progress: bool = False,
             sets: tuple[tuple[int, int], ...] = ((0, 0), (1, 1)), function: Any = None,
             claim: Any = None, post_processing: list[float] | None = None
             ) -> tuple[list[np.ndarray], float, float]:
    """Run ``spec`` on the data sets of ``setting``: one ``(stream key, data set index)``
    per entry of ``sets``. Returns ``(features, claimed_epsilon, delta)``, features
    ``(trials, k)`` in run order, one array per entry. ``function`` replaces
    ``spec.function`` (a mutant); ``claim(result)`` gives a run's claimed ε (default the
    ledger's, ``result.ledger.epsilon``); the largest over the runs is returned.
    ``post_processing`` (a list) receives each run's post-processing share where the tap
    measures one (:class:`dpbounds.extend.Releases`: a plug-in step that does not read its
    gradient only through the release)."""
    from dpbounds._progress import progress_bar

    trials = check_int("trials", trials, minimum=1, maximum=MAX_TRIALS)  # as audit()
    root = _seed_root(seed)
    fn = spec.function if function is None else function
    chunks = [(c * CHUNK, min(trials, (c + 1) * CHUNK)) for c in range(-(-trials // CHUNK))]
    feats: list[list[np.ndarray]] = [[] for _ in sets]
    claimed, delta = 0.0, 0.0
    bar = progress_bar(bool(progress), total=len(sets) * trials, desc=f"audit {spec.name}",
                       unit="run")
    log = _LogLines(bool(progress) and not sys.stderr.isatty(), spec.name,
                    len(sets) * trials)
    with bar, scaled_noise(noise_factor):
        for i, (key, which) in enumerate(sets):
            objective = setting.pair[which]
            for c, (lo, hi) in enumerate(chunks):
                seq = np.random.SeedSequence(root.entropy,
                                             spawn_key=(*root.spawn_key, key, c))
                obj = objective.tapped() if hasattr(objective, "tapped") else objective
                with (setting.tap() if setting.tap is not None else nullcontext()) as tapped:
                    res = fn(obj, trials=hi - lo, seed=seq, **setting.kwargs)
                seen = cast(list, tapped if setting.tap is not None  # the tap yields a list
                            else getattr(obj, "queries", []))
                share = getattr(tapped, "post_processing", None)  # a plug-in's tap only
                if post_processing is not None and share is not None:
                    post_processing.append(float(share))
                f = np.asarray(setting.features(res, seen), dtype=float)
                if not np.all(np.isfinite(f)):
                    # a NaN or inf release scores nothing: the statistics read it as no
                    # evidence and the audit said "consistent" (exit 0) on an inverted
                    # interval, with numpy's warnings leaking
                    bad = int(np.sum(~np.all(np.isfinite(f.reshape(f.shape[0], -1)), axis=1)))
                    raise ValueError(f"audit {spec.name}: {bad} of {hi - lo} runs released "
                                     "values that are not finite (NaN or inf); nothing can "
                                     "be audited from them (an unstable step or noise "
                                     "factor?)")
                feats[i].append(f)
                claimed = max(claimed, float(res.ledger.epsilon if claim is None
                                             else claim(res)))
                delta = max(delta, float(res.ledger.delta))
                bar.update(hi - lo)
                log.update(hi - lo)
    return [np.concatenate(f, axis=0) for f in feats], claimed, delta


class _LogLines:
    """A progress line on stderr every :data:`LOG_EVERY_S` seconds (for logs, where the
    tqdm bar is off): runs done, share, CPU so far and the CPU still to go."""

    def __init__(self, enabled: bool, name: str, total: int) -> None:
        self.enabled, self.name, self.total, self.done = enabled, name, total, 0
        self.t0 = self.last = time.perf_counter()
        self.c0 = time.process_time()

    def update(self, runs: int) -> None:
        self.done += runs
        now = time.perf_counter()
        if not self.enabled or now - self.last < LOG_EVERY_S or self.done >= self.total:
            return
        self.last = now
        cpu = time.process_time() - self.c0
        left = cpu * (self.total - self.done) / self.done
        print(f"audit {self.name}: {self.done:,} of {self.total:,} runs "
              f"({self.done / self.total:.0%}), {cpu:.0f} s CPU, about {left:.0f} s CPU to go",
              file=sys.stderr, flush=True)


def memory_estimate(trials: int, features: int, sets: int = 3) -> float:
    """Bytes an audit of ``trials`` runs per set with ``features`` per run holds at its
    peak (an estimate: the features of every set, the scoring copies, the interpreter)."""
    return _BASE_BYTES + _BYTES_PER_VALUE * float(trials) * features * sets


def run_pair(spec: AuditSpec, setting: Setting, trials: int, seed: Any = 0,
             noise_factor: float = 1.0, progress: bool = False
             ) -> tuple[list[np.ndarray], float, float]:
    """Run ``spec`` on both data sets of ``setting``: ``([features_D, features_D'],
    claimed_epsilon, delta)``, features ``(trials, k)`` in run order."""
    return run_sets(spec, setting, trials, seed, noise_factor, progress)


def claimed_mu(ledger: Any) -> float:
    r"""μ of the Gaussian noise a ledger recorded: :math:`\sqrt{\sum c(\Delta/\sigma)^2}`
    over Gaussian mechanisms (subsampled ones only at rate 1), :math:`\sqrt{K}\Delta/\sigma`
    for tree aggregation (Dong, Roth & Su 2022, Cor. 3.3, as the PLD accountant), and
    :math:`\sqrt{2\rho}` for a zCDP charge (the μ of a Gaussian of that ρ; an ε-DP entry
    as its :math:`\varepsilon^2/2`-zCDP reading); ``nan`` when anything else was recorded."""
    from dpbounds.privacy.mechanisms import (
        GaussianMechanism,
        PureDpMechanism,
        SubsampledGaussianMechanism,
        TreeAggregationMechanism,
        ZcdpMechanism,
    )

    total = 0.0
    for mech, count in getattr(ledger, "entries", ()):
        if isinstance(mech, GaussianMechanism) or (
                isinstance(mech, SubsampledGaussianMechanism) and mech.sampling_rate == 1.0):
            total += count * (mech.sensitivity / mech.sigma) ** 2
        elif isinstance(mech, TreeAggregationMechanism):
            total += count * mech.node_count * (mech.sensitivity / mech.sigma) ** 2
        elif isinstance(mech, ZcdpMechanism):
            total += count * 2.0 * mech.rho
        elif isinstance(mech, PureDpMechanism):  # DP-AGD's NoisyMax recorded as pure DP
            total += count * mech.epsilon ** 2
        else:
            return math.nan
    return math.sqrt(total) if total > 0 else math.nan


def exact_gaussian_mu(ledger: Any) -> float:
    r"""μ of a ledger that holds only Gaussian noise on full-batch queries, ``nan`` otherwise.

    Entries: :class:`GaussianMechanism`, :class:`SubsampledGaussianMechanism` at sampling
    rate 1 (every record in every batch, with or without replacement: the Gaussian mechanism
    on the clipped sum itself) and :class:`TreeAggregationMechanism` (``K`` nodes of
    sensitivity at most Δ with independent noise: ``K`` Gaussian mechanisms), each under the
    ledger's own relation. Adaptive composition of Gaussian mechanisms of :math:`\mu_i` is
    exactly :math:`\sqrt{\sum\mu_i^2}`-GDP (Dong, Roth & Su 2022, Cor. 3.3; VERBATIM), so
    :math:`\varepsilon` at δ of this μ (:func:`~dpbounds.audit.statistics.gdp_epsilon`) is
    the exact ε of the recorded noise. Unlike :func:`claimed_mu` a zCDP charge is not read
    as a Gaussian (ρ-zCDP does not imply :math:`\sqrt{2\rho}`-GDP).
    """
    from dpbounds.privacy.mechanisms import (
        GaussianMechanism,
        SubsampledGaussianMechanism,
        TreeAggregationMechanism,
    )

    total, relation = 0.0, getattr(ledger, "neighbouring", None)
    for mech, count in getattr(ledger, "entries", ()):
        if getattr(mech, "neighbouring", None) != relation:
            return math.nan
        if isinstance(mech, GaussianMechanism) or (
                isinstance(mech, SubsampledGaussianMechanism) and mech.sampling_rate == 1.0):
            total += count * (mech.sensitivity / mech.sigma) ** 2
        elif isinstance(mech, TreeAggregationMechanism):
            total += count * mech.node_count * (mech.sensitivity / mech.sigma) ** 2
        else:
            return math.nan
    return math.sqrt(total) if total > 0 else math.nan


def tight_claim(privacy: Any, delta: float, cache: dict | None = None) -> tuple[float, str]:
    r"""The least ε at ``delta`` that any accountant of the library certifies for a run's
    ledger, and that accountant's name: ``(epsilon, name)``; ``"gdp"`` is the exact
    composition of a ledger of full-batch Gaussian noise (:func:`exact_gaussian_mu`).

    Every accountant is an upper bound on the recorded mechanisms (the PLD one pessimistic
    on its grid, and exact in closed form for Gaussian entries), so the least is an upper
    bound too. Per-trial ledgers (adaptive runs) take the largest over the trials. A run
    without a private ledger gives ``(inf, "")``. ``cache`` (a dict the caller keeps) maps
    a ledger's entries to its reading, so the runs of an audit read each ledger once.
    """
    delta = check_closed_interval("delta", delta, 0.0, 1.0)  # 0: a pure-DP ledger
    ledgers = tuple(getattr(privacy, "trial_ledgers", ()) or ()) or (privacy.ledger,)
    worst, worst_name = -math.inf, ""
    seen: set[tuple] = set()
    for led in ledgers:
        key = tuple((repr(m), c) for m, c in led.entries)
        if key in seen:  # per-trial ledgers mostly repeat (DP-AGD: one per run)
            continue
        seen.add(key)
        if cache is not None and (key, delta) in cache:
            value, name = cache[(key, delta)]
        else:
            value, name = _reading(led, delta)
            if cache is not None:
                cache[(key, delta)] = (value, name)
        if not name:
            return math.inf, ""
        if value > worst:
            worst, worst_name = value, name
    return float(worst), worst_name


#: :func:`_reading` of the ledgers this process has read, by (relation, entries, delta): the
#: audits of one process (``audit all``'s float run and its low-bits twin, the calibration's
#: probes) meet the same ledgers again; bounded (cleared when full)
_READINGS: dict[Any, tuple[float, str]] = {}
_READINGS_MAX = 4096


def _reading(led: Any, delta: float) -> tuple[float, str]:
    """``(epsilon, accountant)``: the least ε at ``delta`` over the library's accountants
    (and the exact Gaussian composition) for one ledger, remembered by its relation and
    entries (frozen mechanisms compared by value; a ledger whose entries do not hash is read
    afresh)."""
    key: Any = (led.neighbouring, tuple(led.entries), float(delta))
    try:
        hit = _READINGS.get(key)
    except TypeError:  # an unhashable mechanism: no memo
        hit, key = None, None
    if hit is not None:
        return hit
    report = {k: v for k, v in led.report(delta).items()
              if v is not None and math.isfinite(v)}
    mu = exact_gaussian_mu(led)
    if math.isfinite(mu) and delta > 0.0:
        report["gdp"] = gdp_epsilon(mu, delta)
    name = min(report, key=lambda k: report[k]) if report else ""
    value = report[name] if report else math.inf
    if key is not None:
        if len(_READINGS) >= _READINGS_MAX:
            _READINGS.clear()
        _READINGS[key] = (value, name)
    return value, name


def _probe_run(spec: AuditSpec, setting: Setting, function: Any = None,
               trials: int = 1) -> Any:
    """One run on D (``trials`` trials, default 1, seed 0) with the tap and the query
    recording of an audit run: ``(result, seen)``."""
    obj = setting.pair[0]
    obj = obj.tapped() if hasattr(obj, "tapped") else obj
    with (setting.tap() if setting.tap is not None else nullcontext()) as tapped:
        res = (spec.function if function is None else function)(
            obj, trials=trials, seed=np.random.SeedSequence(0), **setting.kwargs)
    return res, (tapped if setting.tap is not None else getattr(obj, "queries", []))


#: Relative tolerance of :func:`calibrate_input` on the tight claim.
CALIBRATION_RTOL = 1e-6
#: Trials of :func:`calibrate_input`'s probe of an adaptive run (per-trial ledgers): a path
#: type seen in a fraction p of the runs is missed with probability (1 - p)^256
CALIBRATION_TRIALS = 256


def calibrate_input(spec: AuditSpec, relation: Neighbouring, epsilon: float, delta: float,
                    build: Any = None) -> float:
    """The ε to ask the algorithm for so that its run's :func:`tight_claim` at ``delta`` is
    ``epsilon`` (to :data:`CALIBRATION_RTOL`, never above it by more than that).

    The tight claim grows with the ε asked for (less noise) and never exceeds it (the
    algorithm's own accountant is one of those compared), so the answer is at least
    ``epsilon``: bisection in ``log ε`` between ``epsilon`` and the first of
    ``epsilon * 2^k`` whose claim reaches the target. A ledger no accountant reads
    tighter than the algorithm's own (pure DP, theorems), or a setting that does not
    depend on ε, returns ``epsilon``. ``build(e)`` gives the setting run for ``e``
    (default ``spec.build(relation, e, delta)``); the real algorithm ``spec.function`` is
    calibrated (a mutant is asked for the same ε)."""

    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)

    def claim(e: float) -> float:
        setting = spec.build(relation, e, delta) if build is None else build(e)
        res, _ = _probe_run(spec, setting)
        if getattr(res.privacy, "trial_ledgers", None):
            # an adaptive run's ledger is its path's: DP-AGD's one probe released nothing in
            # ~6% of its seeds (an empty ledger, claim 0), the search took that for "below
            # the target", and the audit's runs then claimed 3.0035 against 3: a false
            # VIOLATION of correct code (mutant hunt 8). The largest claim over
            # CALIBRATION_TRIALS paths, as the audit reads the largest over its runs.
            res, _ = _probe_run(spec, setting, trials=CALIBRATION_TRIALS)
        # at the ledger's own delta, where the audit reads its claim: a pure-DP ledger's is 0
        # whatever delta was asked (read at delta = 0.1, a correct Laplace DP-GD was asked
        # for more epsilon, claimed 2.37 at delta 0 against a target of 2: a false VIOLATION,
        # fuzz round 7)
        return tight_claim(res.privacy, float(res.ledger.delta))[0]

    lo = epsilon
    c_lo = claim(lo)
    if c_lo >= epsilon * (1.0 - CALIBRATION_RTOL):
        return epsilon
    hi = 2.0 * epsilon
    c_hi = claim(hi)
    if c_hi == c_lo:  # the setting ignores the epsilon asked for: nothing to calibrate
        return epsilon
    while c_hi < epsilon:
        lo, c_lo, hi = hi, c_hi, 2.0 * hi
        if hi > 1e3 * epsilon:
            raise ValueError(f"cannot calibrate {spec.name} to a tight claim of {epsilon:g}")
        c_hi = claim(hi)
    # Illinois regula falsi in log(eps): keeps claim(lo) < target <= claim(hi), returns lo
    # (claim <= target); the claim is smooth in eps, so a handful of probes suffice
    side = 0
    for _ in range(60):
        if c_lo >= epsilon * (1.0 - CALIBRATION_RTOL) or hi - lo <= CALIBRATION_RTOL * lo:
            break
        a, b = math.log(lo), math.log(hi)
        fa, fb = c_lo - epsilon, c_hi - epsilon
        x = math.exp(b - fb * (b - a) / (fb - fa)) if fb != fa else math.sqrt(lo * hi)
        x = min(max(x, lo * (1 + CALIBRATION_RTOL / 4)), hi * (1 - CALIBRATION_RTOL / 4))
        cx = claim(x)
        if cx < epsilon:
            lo, c_lo = x, cx
            if side == -1:
                c_hi = epsilon + (c_hi - epsilon) / 2.0
            side = -1
        else:
            hi, c_hi = x, cx
            if side == 1:
                c_lo = epsilon + (c_lo - epsilon) / 2.0
            side = 1
    return lo


def audit(algorithm: str, neighbouring: Neighbouring | str | None = None, *,
          epsilon: float | None = None, delta: float | None = None,
          trials: int | None = None, quick: bool = False,
          confidence: float = 0.95, seed: Any = 0, noise_factor: float = 1.0,
          progress: bool = False, mutant: str | None = None, null: bool = True,
          max_memory_gb: float | None = MEMORY_BUDGET_GB, low_bits: bool = False,
          tight: bool = True, noise: str = "float") -> AuditResult:
    r"""Empirical ε lower bound for one algorithm of :mod:`dpbounds.algorithms`.

    Parameters
    ----------
    algorithm:
        An audit name (:func:`dpbounds.audit.audit_names`), e.g. ``"dp_gd_gaussian"``.
    neighbouring:
        A :class:`~dpbounds.privacy.Neighbouring` or a spelling its
        :meth:`~dpbounds.privacy.Neighbouring.coerce` accepts (``"replace_one"``,
        ``"add/remove"``, ...); default the first relation the algorithm declares.
    epsilon, delta:
        The target passed to the algorithm (default: the audit's, chosen so that an
        under-noised copy is catchable); the claim compared against is the ledger's.
    trials:
        Runs per data set (default the audit's, 10 000 for most), at least 200;
        ``quick=True`` uses 2 000. D is run twice (the second set is the null control).
    confidence:
        Of the lower bound, in (0, 1).
    seed:
        Non-negative int or SeedSequence; run k depends only on (seed, data set, k).
    noise_factor:
        Multiply every noise scale by this (mutation testing: 0.5 halves σ).
    progress:
        Show a tqdm bar.
    mutant:
        Audit a copy with a known bug instead (:data:`dpbounds.audit.mutation.MUTANTS`);
        the claim compared against is still the ledger's.
    null:
        Run the null control (a third set of runs, on D); ``False`` leaves
        ``null_epsilon_lower`` at ``nan`` (for mutation tests, whose null is the real
        algorithm's).
    low_bits:
        Audit the floating-point side channel: the statistic is the ``low-bits``
        likelihood ratio of the raw released iterates (their sign, exponent and last
        mantissa bits; Mironov 2012), not of values recomputed from them.
    noise:
        ``"float"`` (the algorithm's default, float64 noise) or ``"grid"`` (its release-safe
        option, :mod:`dpbounds.algorithms._grid`): passed to the algorithm as ``noise=``;
        ``"grid"`` needs an algorithm that takes it (:func:`grid_audit_names`).
    max_memory_gb:
        Refuse (``ValueError``, before any run) an audit whose estimated peak memory
        (:func:`memory_estimate`) exceeds this; ``None`` for no limit.
    tight:
        (ε, δ) audits only: the claim is the run's ledger under the tightest accountant
        that reads it (:func:`tight_claim`), and the algorithm is asked for the ε that
        makes this claim ``epsilon`` (:func:`calibrate_input`). ``False``: the claim is
        the algorithm's own accountant's for ``epsilon`` (often inflated by a zCDP / RDP
        conversion, which caps what any audit can certify well below the claim).

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
    from scipy import stats  # here, not at the top: 0.3-0.7 CPU-s of import (see intervals.py)

    from dpbounds.audit.mutation import get_mutant
    from dpbounds.audit.statistics import claim_tradeoff, empirical_tradeoff

    t0, c0 = time.perf_counter(), time.process_time()
    spec = _spec(algorithm)
    relation = _relation(spec, neighbouring)
    # beyond MAX_EPSILON the calibrations overflow ("math range error" at 1e9, after seconds)
    eps = (spec.epsilon if epsilon is None
           else check_epsilon_limit("epsilon", check_positive("epsilon", epsilon)))
    dlt = spec.delta if delta is None else check_probability("delta", delta)
    if dlt == 0.0 and spec.delta > 0.0:
        raise ValueError(f"delta must be in (0, 1) for {spec.name}")
    n = QUICK_TRIALS if quick and trials is None else (spec.trials if trials is None else trials)
    n = check_int("trials", n, minimum=MIN_TRIALS, maximum=MAX_TRIALS)
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    noise_factor = check_finite("noise_factor", noise_factor)
    from dpbounds.audit.mutation import MAX_NOISE_FACTOR

    # before any run (scaled_noise says the same); one range at both ends: -1 was told
    # "[0, inf)" (fuzz round 7)
    if not 0.0 <= noise_factor <= MAX_NOISE_FACTOR:
        raise ValueError(f"noise_factor must lie in [0, {MAX_NOISE_FACTOR:g}], got "
                         f"{noise_factor:g}")

    noise = check_choice("noise", noise, NOISE_OPTIONS)
    if noise == "grid" and spec.name not in grid_audit_names():
        raise ValueError(f"noise='grid' needs an algorithm with a grid option; {spec.name} "
                         f"has none (those that do: {', '.join(grid_audit_names())})")

    def build(e: float) -> Setting:
        st = spec.build(relation, e, dlt)
        if noise != "float":
            st = replace(st, kwargs={**st.kwargs, "noise": noise})
        return _raw_floats(spec, st) if low_bits else st

    def run_setting(e: float) -> Setting:  # what the runs execute (a mutant's own pair)
        st = build(e)
        return st if mutant is None else get_mutant(mutant, spec, relation, st).new_setting

    if noise_factor != 1.0 and (build(eps).kwargs.get("noise") == "grid"
                                or spec.name.endswith("_grid")):  # a grid-only release
        # the grid's integer samplers do not go through the scaled draws the factor patches:
        # '--noise-factor 0' read 'consistent' with the runs unchanged (fuzz round 15)
        raise ValueError(f"noise_factor scales float noise only; {spec.name} draws grid "
                         "(integer) noise, which it would leave unchanged: audit the float "
                         "runs (noise='float') or leave noise_factor at 1")
    tight = bool(tight) and dlt > 0.0
    eps_in = calibrate_input(spec, relation, eps, dlt, run_setting) if tight else eps
    setting = build(eps_in)
    function, mutant_name = None, ""
    if mutant is not None:
        mut = get_mutant(mutant, spec, relation, setting)
        setting, function, mutant_name = mut.new_setting, mut.function, mut.name
    sets = ((0, 0), (1, 1), (NULL_SET, 0)) if null else ((0, 0), (1, 1))
    mu_claim, k, ledger_eps, own, probe = _probe(spec, setting, function)
    model = None if setting.model is None else setting.model(setting, probe)
    # two estimators where the setting declares a model (the held-out selection of fitted
    # statistics, and the model's exact likelihood ratio on every run): each at half the
    # error, so that the larger bound holds at `confidence` (Bonferroni)
    each = confidence if model is None else 1.0 - (1.0 - confidence) / 2.0
    need = memory_estimate(n, k, len(sets))
    if max_memory_gb is not None and need > check_positive("max_memory_gb",
                                                           max_memory_gb) * 1e9:
        raise ValueError(
            f"trials = {n:.3g} would need about {need / 1e9:.3g} GB (over max_memory_gb = "
            f"{max_memory_gb:g}: {len(sets)} sets x {k} features per run); use fewer trials "
            "or raise max_memory_gb (CLI: --max-memory-gb, or --allow-large)")
    claim_fn, claim_name = None, own
    if tight:
        claim_name = ""
        readings: dict[Any, Any] = {}

        def claim_fn(res: Any) -> float:
            nonlocal claim_name
            value, claim_name = tight_claim(res.privacy, float(res.ledger.delta), readings)
            return value
    shares: list[float] = []
    feats, claimed, ledger_delta = run_sets(spec, setting, n, seed, noise_factor, progress,
                                            sets=sets, function=function, claim=claim_fn,
                                            post_processing=shares)
    f_d, f_p = feats[0], feats[1]
    law = sim = None
    if model is not None:  # the model's test for these runs: drawn once, for main and null
        sim = simulated_scores(model)
        law = (model, model_test(sim, n, ledger_delta, each))
    main = _estimate(f_d, f_p, ledger_delta, each, setting.scorers, law)
    ref = (model_bound(f_d, f_p, model, REFERENCE_DELTA, each, MIXTURE_LR,
                       test=model_test(sim, n, REFERENCE_DELTA, each))
           if main.name == MIXTURE_LR and model is not None and sim is not None else
           held_out_bound(f_d, f_p, REFERENCE_DELTA, each, scorer=(main.name, main.scorer)))
    null_lower = (_estimate(f_d, feats[2], ledger_delta, each, setting.scorers,
                            law).bound.lower if null else math.nan)
    # the same data at two independent stream keys: identical runs mean the noise does not
    # depend on the seed (an independent adversary's mutant seeded it from a hash of the
    # data: every audit of the Laplace methods read "consistent")
    seed_ignored = bool(null and feats[0].shape == feats[2].shape
                        and np.array_equal(feats[0], feats[2]))
    gdp = _gdp(f_d, f_p, main, confidence)
    indep, indep_crit = independence_z(feats)
    side = ">" if main.test.side > 0 else "<"
    k = f_d.shape[1]
    how = (" (the declared law's exact likelihood ratio, threshold from the law, all runs)"
           if main.name == MIXTURE_LR else "")
    statistic = (f"{main.name} statistic{how} on {setting.statistic}, {k} feature"
                 f"{'s' if k > 1 else ''} (event: score {side} {main.test.threshold:.4g})")
    b = main.bound
    curve: list[dict[str, Any]] = empirical_tradeoff(
        main.scores_d, main.scores_dprime, main.test.side, confidence=confidence)
    for row in curve:
        row["claim_fnr"] = float(claim_tradeoff(row["fpr"], claimed, ledger_delta))
        row["gdp_fnr"] = (float(stats.norm.cdf(stats.norm.isf(row["fpr"]) - mu_claim))
                          if math.isfinite(mu_claim) and 0.0 < row["fpr"] < 1.0 else None)
    return AuditResult(
        algorithm=spec.name, neighbouring=relation, claimed_epsilon=claimed,
        # eps >= 0: where the event is rarer under D than D' (noise 100x the claim) the
        # estimate and upper end read below 0, an inverted interval [0.000, -0.048]
        delta=ledger_delta, epsilon_lower=b.lower,
        epsilon_estimate=max(b.estimate, b.lower), epsilon_upper=max(b.upper, b.lower),
        confidence=confidence, trials=n, statistic=statistic,
        pair=setting.pair_description, tpr=b.tpr, fpr=b.fpr,
        noise_factor=float(noise_factor), seed=int(seed) if not isinstance(
            seed, np.random.SeedSequence) else -1,
        elapsed=time.perf_counter() - t0, epsilon_lower_reference=ref.bound.lower,
        null_epsilon_lower=null_lower, mu_hat=gdp.mu, mu_low=gdp.mu_low,
        mu_high=gdp.mu_high, mu_gof_pvalue=gdp.gof_pvalue, mu_claim=mu_claim,
        epsilon_tight=gdp_epsilon(mu_claim, ledger_delta) if math.isfinite(mu_claim)
        and ledger_delta > 0 else math.nan,
        cpu_seconds=time.process_time() - c0, mutant=mutant_name,
        claim_accountant=claim_name, ledger_epsilon=ledger_eps, input_epsilon=float(eps_in),
        tradeoff=tuple(curve), noise=noise, low_bits=bool(low_bits),
        independence_z=indep, independence_crit=indep_crit, features=int(k),
        estimated_memory_bytes=float(need),
        post_processing=max(shares) if shares else math.nan, seed_ignored=seed_ignored,
        target_epsilon=float(eps), target_delta=float(dlt),
    )


def _gdp(f_d: np.ndarray, f_p: np.ndarray, main: HeldOut, confidence: float) -> GdpFit:
    """GDP fit of the linear statistic (Fisher's discriminant: the likelihood ratio of a
    Gaussian shift, the transcript's best statistic where the noise is Gaussian), fitted on
    the selection half and read on the evaluation half; one feature is read as it is."""
    half = f_d.shape[0] // 2
    if f_d.shape[1] == 1:
        return fit_gdp(f_d[half:, 0], f_p[half:, 0], confidence)
    if main.name == "linear":
        return fit_gdp(main.scores_d, main.scores_dprime, confidence)
    score = fit_scorers(f_d[:half], f_p[:half], ("linear",))["linear"]
    return fit_gdp(score(f_d[half:]), score(f_p[half:]), confidence)


def _raw_iterates(res: Any, queries: list) -> np.ndarray:
    """The released iterates ``x_1 .. x_T`` as the algorithm stored them (bits intact)."""
    return np.concatenate([np.asarray(q, dtype=float) for q in (*queries[1:], res.x_numpy())],
                          axis=1)


#: Steps of a low-bits audit (``--low-bits``): one full-batch step.
LOW_BITS_STEPS = 2


def _raw_floats(spec: AuditSpec, setting: Setting) -> Setting:
    if setting.tap is not None:
        # a white-box tap records the internal releases as the run holds them (float64
        # copies, bits intact: the tree's noisy nodes), so its own features are raw
        return replace(setting, scorers=("low-bits",), model=None,
                       statistic=f"{setting.statistic}, raw (sign, exponent, last mantissa "
                       "bits)")
    if not hasattr(setting.pair[0], "tapped"):
        raise ValueError(f"low_bits needs an audit that records the released iterates; "
                         f"{spec.name} does not")
    kwargs, steps = dict(setting.kwargs), ""
    if "steps" in kwargs and spec.name in grid_audit_names():
        # the float-vs-grid comparison: few steps put the budget on few releases, the least
        # noise a release carries and the clearest channel (the statistic reads each
        # iterate's bits separately); 2, so that momentum acts (DP-HB is not DP-GD)
        kwargs["steps"] = LOW_BITS_STEPS
        steps = f"; {LOW_BITS_STEPS} steps"
    return replace(setting, kwargs=kwargs, features=_raw_iterates, scorers=("low-bits",),
                   model=None,
                   statistic=f"the raw released iterates (sign, exponent, last mantissa "
                   f"bits{steps})")


def feature_count(spec: AuditSpec, relation: Neighbouring, epsilon: float, delta: float,
                  noise: str = "float") -> int:
    """Features per run of ``spec``'s setting for ``(relation, epsilon, delta)`` and its
    ``noise`` option, from one probe run (what :func:`audit` multiplies into its memory
    estimate; the CLI's catalog records it so that a refusal needs no imports)."""
    setting = spec.build(relation, epsilon, delta)
    if noise != "float":
        setting = replace(setting, kwargs={**setting.kwargs, "noise": noise})
    return _probe(spec, setting, None)[1]


def _probe(spec: AuditSpec, setting: Setting, function: Any
           ) -> tuple[float, int, float, str, Any]:
    """One run on D: the μ of its ledger (the claim's noise; a mutant's ledger is its own
    claim, which is what it is audited against), the number of features per run, the ε
    and name of the algorithm's own accountant, and the run's result."""
    res, seen = _probe_run(spec, setting, function)
    k = int(np.asarray(setting.features(res, seen)).reshape(1, -1).shape[1])
    privacy = getattr(res, "privacy", None)
    return (claimed_mu(getattr(privacy, "ledger", None)), k, float(res.ledger.epsilon),
            str(getattr(privacy, "accountant", "")), res)


#: Name of the statistic of a setting's model (:attr:`Setting.model`).
MIXTURE_LR = "mixture-lr"


def _estimate(f_d: np.ndarray, f_p: np.ndarray, delta: float, confidence: float,
              names: tuple[str, ...] | None, law: Any) -> HeldOut:
    """The held-out estimator (:func:`held_out_bound`) and, where the setting declares a
    model of its transcript (``law = (model, its threshold test)``, :func:`model_test`),
    the model's exact likelihood-ratio test on every run (:func:`model_bound`), each at
    ``confidence``: the larger certified bound (the caller passes each half the error, so
    the larger holds at the audit's confidence)."""
    best = held_out_bound(f_d, f_p, delta, confidence, names)
    if law is not None:
        alt = model_bound(f_d, f_p, law[0], delta, confidence, MIXTURE_LR, test=law[1])
        if alt.bound.lower > best.bound.lower:
            best = alt
    return best


def _spec(name: str) -> AuditSpec:
    key = str(name).replace("-", "_")
    known = {**AUDITS, **RELEASE_AUDITS}
    if key not in known:
        raise ValueError(unknown_name("audit", name, known, "dpbounds audit --list"))
    return known[key]


def _declared_model(algorithm: str, neighbouring: Neighbouring | str | None,
                    input_epsilon: float, delta: float | None, mutant: str | None) -> Any:
    """The law an audit of ``algorithm`` declares for its transcript (the setting's
    :attr:`Setting.model`, built as :func:`audit` builds it: the setting at
    ``input_epsilon``, a mutant's own pair, one probe run), or ``None`` where the setting
    declares none (then the audit has the held-out estimator only). For the planner
    (:func:`dpbounds.audit.planner.plan`)."""
    from dpbounds.audit.mutation import get_mutant

    spec = _spec(algorithm)
    relation = _relation(spec, neighbouring)
    setting = spec.build(relation, input_epsilon, spec.delta if delta is None else delta)
    function = None
    if mutant:
        mut = get_mutant(mutant, spec, relation, setting)
        setting, function = mut.new_setting, mut.function
    if setting.model is None:
        return None
    probe = _probe(spec, setting, function)[4]
    return setting.model(setting, probe)


def _relation(spec: AuditSpec, neighbouring: Neighbouring | str | None) -> Neighbouring:
    """The API boundary: the relation as the enum, one the audit declares."""
    if neighbouring is None:
        return spec.relations[0]
    relation = Neighbouring.coerce(neighbouring)
    if relation not in spec.relations:
        raise ValueError(f"neighbouring must be one of "
                         f"{tuple(r.value for r in spec.relations)} for {spec.name}, got "
                         f"{relation.value!r}")
    return relation
