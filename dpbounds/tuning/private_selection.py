r"""Private selection: tune on the private data itself and pay a constant factor, not the grid.

:func:`~dpbounds.tuning.tune_by_runs` picks by a non-private grid: publishing its pick costs
every run it made composed (thousands of epsilons). :func:`select_privately` is the private
alternative of Liu & Talwar (2019), *random stopping*: repeat

1. draw a grid point uniformly at random;
2. run the algorithm once with it (pure :math:`\varepsilon_{\rm run}`-DP, replace-one);
3. release a **noisy score** of that run's final iterate: the mean over the data of the
   per-sample loss clipped to :math:`[0, B]` plus the (public) regulariser, with discrete
   Laplace noise on a grid (:class:`~dpbounds.privacy.discrete.GridLaplace`: no float64
   leak) of sensitivity :math:`B/n`, pure :math:`\varepsilon_{\rm score}`-DP;
4. stop with probability :math:`\gamma` (a coin independent of the data), else repeat;

and release the trial with the lowest noisy score: its hyper-parameters, its final iterate and
its score, and nothing else. Each trial is
:math:`\varepsilon_0 = \varepsilon_{\rm run} + \varepsilon_{\rm score}`-DP (basic
composition).

Privacy (the result this module computes, :attr:`PrivateSelection.epsilon` and ``delta``):

* **Liu & Talwar (2019), Theorem 3.4** (RECONSTRUCTED: the statement as published for a pure
  :math:`\varepsilon_0`-DP trial, not copied from the paper's text, which is not among this
  project's seeds): random stopping with any :math:`\gamma\in(0,1]` and no cap on the number of
  trials is :math:`3\varepsilon_0`-DP.
* **The cap** (DERIVED): a run stops after at most ``max_trials`` :math:`T` trials. The capped
  and the uncapped procedure, driven by the same coins, differ only when the uncapped one would
  go past :math:`T`, an event of probability :math:`\eta=(1-\gamma)^T` on every data set. So
  :math:`P[A_T(D)\in S] \le P[A(D)\in S]+\eta \le e^{3\varepsilon_0}(P[A_T(D')\in S]+\eta)+\eta`:
  the capped procedure is :math:`(3\varepsilon_0,\ \eta(1+e^{3\varepsilon_0}))`-DP.

**What is not released.** The theorem covers the pick with the number of trials :math:`K`
marginalised out: given :math:`K=k` the pick is the best of :math:`k` runs and can reveal up to
:math:`k\,\varepsilon_{\rm run}` (an independent review of stop 77 measured a likelihood ratio
of 50 against the claimed :math:`e^{3.3}=27` with a randomized-response stub at :math:`K=4`).
So :math:`K` (``trials_run``), the other trials' scores and picks, and ``suboptimality``
(:math:`F(x)-F^\ast` of the chosen run, from the exact optimum) are for simulation studies
only and are **not** part of the release. A trial that fails (its run refuses or overflows, or
ends too far out for the score's grid) scores :math:`+\infty` and the selection goes on: an
abort would depend on trials that are never released.

**Public inputs.** Everything the runs are given besides the data must be public: the grid
(step sizes computed from the data's smoothness are not), the start ``x0``, the objective's
declared radii and sensitivity, ``loss_bound``. The released iterate carries the run's own
noise: runs of an algorithm that takes ``noise=`` are made with ``noise="grid"`` (float64 noise
leaks through its last bits: :mod:`dpbounds.privacy.discrete`), and a run that reports float
noise is refused.

Seeds: trial ``k`` draws its grid point from ``(seed, 3, k)``, its run from ``(seed, 4, k)``,
its stopping coin from ``(seed, 5, k)`` and its score noise from ``(seed, 6, k)``: trial ``k``
depends only on ``(seed, k)``.

Example
-------
A logistic regression whose radii (hence sensitivity) are declared by the data's domain, not
read from the data:

>>> from dpbounds.algorithms import dp_heavy_ball
>>> from dpbounds.data import kuru_synthetic
>>> from dpbounds.objectives import LogisticRegression
>>> ds = kuru_synthetic(n=500, d=3, seed=0)
>>> f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
>>> sel = select_privately(dp_heavy_ball, f, {"step_size": [0.5, 1.0], "steps": [3, 6]},
...                        epsilon=0.5, score_epsilon=0.1, loss_bound=5.0,
...                        stop_probability=0.2, seed=1)
>>> round(sel.epsilon, 6) == round(3 * sel.trial_epsilon, 6), sorted(sel.best)
(True, ['step_size', 'steps'])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_positive
from dpbounds.provenance import Provenance, Source

__all__ = ["PrivateSelection", "select_privately"]

#: SeedSequence streams of trial k: its grid point, its run, its stopping coin, its score noise
POINT_STREAM, RUN_STREAM, STOP_STREAM, SCORE_STREAM = 3, 4, 5, 6
#: most trials a selection may run (a cap, counted in delta)
MAX_TRIALS = 100_000

LIU_TALWAR = Source("Liu & Talwar (2019), Private selection from private candidates, STOC "
                    "(arXiv 1811.07971)", "Theorem 3.4 (random stopping, 3 eps_0)",
                    Provenance.RECONSTRUCTED,
                    "the cap's delta = (1-gamma)^T (1 + e^(3 eps_0)) is DERIVED (a coupling of "
                    "the capped and uncapped procedures); the clipped-loss score is ours")


@dataclass(frozen=True)
class PrivateSelection:
    """What :func:`select_privately` releases (``best``, ``x``, ``score``), what it cost, and
    what it measured but does not release (``trials_run``, ``suboptimality``).

    Attributes
    ----------
    best:
        The chosen trial's hyper-parameters.
    x:
        The chosen run's final iterate, shape ``(d,)``.
    score:
        Its released noisy score (mean clipped loss plus regulariser).
    trials_run:
        Trials run (:math:`K`): **not released** (with the pick it reveals more than the
        guarantee covers), for simulation studies only.
    trial_epsilon:
        :math:`\\varepsilon_0` of one trial (run plus score).
    epsilon, delta:
        The selection's guarantee (replace-one): :math:`3\\varepsilon_0` and the cap's delta.
    max_trials:
        The cap :math:`T`.
    suboptimality:
        :math:`F(x)-F^*` of the chosen run: **not private** (exact loss and optimum), for
        simulation studies only.
    """

    algorithm: str
    best: dict[str, Any]
    x: np.ndarray
    score: float
    trials_run: int
    trial_epsilon: float
    epsilon: float
    delta: float
    max_trials: int
    stop_probability: float
    suboptimality: float
    source: Source = LIU_TALWAR

    def table(self) -> str:
        """The release and its guarantee, in lines."""
        hyper = ", ".join(f"{k} = {v!r}" for k, v in self.best.items())
        return "\n".join([
            f"{self.algorithm} selected privately: {hyper}",
            f"released: that run's final iterate and its noisy score {self.score:.6g} "
            f"(mean loss clipped to [0, B] plus the regulariser)",
            f"privacy of the whole selection (replace-one): eps = {self.epsilon:.6g} (3 x "
            f"{self.trial_epsilon:.6g} per trial), delta = {self.delta:.3g} (the cap of "
            f"{self.max_trials} trials at stop probability {self.stop_probability:g}) "
            f"[{self.source.provenance.value}: {self.source.paper}, {self.source.result}]",
            f"not released, for simulation studies only (with the pick they reveal more than "
            f"the guarantee covers): {self.trials_run} trials run; F(x) - F* = "
            f"{self.suboptimality:.6g}",
        ])


def _cap(stop_probability: float, cap_delta: float) -> int:
    """Smallest T with (1 - gamma)^T <= cap_delta."""
    if stop_probability >= 1.0:
        return 1
    return max(1, math.ceil(math.log(cap_delta) / math.log1p(-stop_probability)))


def _score(objective: Any, x: np.ndarray, loss_bound: float) -> float:
    """Mean over the data of the per-sample loss clipped to [0, B], plus the regulariser."""
    losses = np.asarray(objective.sample_losses(x), dtype=float)
    reg = np.asarray(objective.regularizer(x), dtype=float)
    return float(np.mean(np.clip(losses, 0.0, loss_bound)) + float(reg.ravel()[0]))


def select_privately(algorithm: Callable[..., Any], objective: Any,
                     grid: Mapping[str, Sequence[Any]], *, epsilon: float,
                     score_epsilon: float, loss_bound: float, stop_probability: float = 0.05,
                     cap_delta: float = 1e-9, seed: int | None = 0, grid_bits: int = 30,
                     name: str | None = None, progress: bool = False,
                     **fixed: Any) -> PrivateSelection:
    r"""Choose hyper-parameters on the private data by Liu & Talwar's random stopping.

    Parameters
    ----------
    algorithm:
        A pure-DP algorithm under replace-one, called as ``algorithm(objective, epsilon=,
        trials=1, seed=, **hyper, **fixed)`` (e.g. :func:`~dpbounds.algorithms.dp_heavy_ball`,
        :func:`~dpbounds.algorithms.dp_nag`, :func:`~dpbounds.algorithms.dp_gd`); its run's
        ledger must read at most ``epsilon`` with delta 0.
    objective:
        The private problem (its ``sample_losses`` and ``regularizer``; ``n`` public, as
        replace-one has it).
    grid:
        ``name -> values``: the candidates, drawn uniformly.
    epsilon:
        Each run's budget, > 0.
    score_epsilon:
        Each score release's budget, > 0.
    loss_bound:
        :math:`B > 0`: per-sample losses are clipped to :math:`[0, B]` in the score (its
        sensitivity is then :math:`B/n`); a public choice (too small flattens the scores, too
        large drowns them in noise).
    stop_probability:
        :math:`\gamma \in (0, 1]`: the expected number of trials is about :math:`1/\gamma`.
    cap_delta:
        :math:`\eta \in (0, 1)`: the cap is the smallest :math:`T` with
        :math:`(1-\gamma)^T\le\eta`; the guarantee's delta is :math:`\eta(1+e^{3\varepsilon_0})`.
    seed:
        A non-negative integer (streams in the module docstring), for simulation studies: a
        seed anyone knows reproduces the noise, so a selection **released on real data**
        takes ``seed=None`` (fresh operating-system entropy, kept nowhere).
    grid_bits:
        The score's release grid :math:`2^{-j}` (:class:`~dpbounds.privacy.discrete.GridLaplace`).
    progress:
        Show the trials as they run (a bar on a terminal, lines in a log).
    name:
        The algorithm's name in the result (default: its ``__name__``, or ``method`` for
        :func:`dpbounds.extend.run_method`).
    fixed:
        Passed to every run (``x0=``, ``batch_size=``, ...).

    Returns
    -------
    PrivateSelection
    """
    from dpbounds.privacy.discrete import GridLaplace

    eps = check_positive("epsilon", epsilon)
    eps_s = check_positive("score_epsilon", score_epsilon)
    B = check_positive("loss_bound", loss_bound)
    # a release's randomness must be secret: None draws 128 bits the caller never sees
    root: int = (int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
                 if seed is None else check_int("seed", seed, minimum=0))
    if isinstance(stop_probability, bool) or not isinstance(stop_probability, int | float) \
            or not 0.0 < float(stop_probability) <= 1.0:
        raise ValueError(f"stop_probability must be a number in (0, 1], got "
                         f"{stop_probability!r}")
    if isinstance(cap_delta, bool) or not isinstance(cap_delta, int | float) \
            or not 0.0 < float(cap_delta) < 1.0:
        raise ValueError(f"cap_delta must be a number in (0, 1), got {cap_delta!r}")
    gamma = float(stop_probability)
    cap = _cap(gamma, float(cap_delta))
    if cap > MAX_TRIALS:
        raise ValueError(f"stop_probability {gamma:g} with cap_delta {cap_delta:g} needs a cap "
                         f"of {cap:,} trials; at most {MAX_TRIALS:,}: raise either")
    from dpbounds.tuning.by_runs import check_grid, check_names, display_name

    for member in ("n", "sample_losses", "regularizer", "suboptimality"):
        if not hasattr(objective, member):  # None: an AttributeError naming nothing
            raise ValueError(f"objective must be an objective with n, sample_losses, "
                             f"regularizer and suboptimality, got {type(objective).__name__} "
                             f"(no {member})")

    size = check_grid(grid, fixed, 10**7)  # drawn by index: no list of the points is built
    check_names(algorithm, {**{k: f"fixed argument {k!r}" for k in fixed},
                            **{k: f"grid[{k!r}]" for k in grid}})
    names = list(grid)
    n = int(objective.n)
    release = GridLaplace(sensitivity=B / n, epsilon=eps_s, grid_bits=grid_bits)
    name = display_name(algorithm, fixed) if name is None else name

    best: tuple[float, dict[str, Any], np.ndarray] | None = None
    # one trial's guarantee: every candidate's run is calibrated to eps (each run's own
    # ledger is checked below; one a rounding above eps raises the trial's epsilon to it),
    # the score release spends at most score_epsilon
    run_eps = eps
    trials = 0
    from dpbounds._progress import progress_bar

    bar = progress_bar(progress, None, desc="private selection", unit="trial", lines=True)
    import inspect

    try:
        takes_noise = "noise" in inspect.signature(algorithm).parameters
    except (TypeError, ValueError):
        takes_noise = False
    run_kw = {"noise": "grid"} if takes_noise else {}  # the released iterate's own noise
    try:
        for trial in range(cap):
            point_rng = np.random.default_rng((root, POINT_STREAM, trial))
            # a uniform grid point, by its mixed-radix index (no list of the points is built)
            index = int(point_rng.integers(size))
            hyper: dict[str, Any] = {}
            for key in reversed(names):
                values = grid[key]
                index, i = divmod(index, len(values))
                hyper[key] = values[i]
            hyper = {key: hyper[key] for key in names}
            score = _trial(algorithm, objective, name, eps, (root, RUN_STREAM, trial), run_kw,
                           fixed, hyper, release, B, (root, SCORE_STREAM, trial))
            run_eps = max(run_eps, score[2])
            trials += 1
            bar.update(1)
            if score[0] < (math.inf if best is None else best[0]):
                best = (score[0], hyper, score[1])
            if np.random.default_rng((root, STOP_STREAM, trial)).random() < gamma:
                break
    finally:
        bar.close()
    if best is None:
        raise ValueError(f"{name}: every trial failed or diverged (no iterate to release)")
    score_value, hyper, x = best
    trial_eps = run_eps + release.epsilon_spent
    sub = float(np.asarray(objective.suboptimality(x[None, :]), dtype=float)[0])
    eta = (1.0 - gamma) ** cap if gamma < 1.0 else 0.0
    # eta (1 + e^(3 eps_0)), at most 1 (a vacuous delta where e^(3 eps_0) overflows)
    log_tail = math.log(eta) + 3.0 * trial_eps if eta > 0 else -math.inf
    delta = 0.0 if eta == 0 else (1.0 if log_tail >= 0 else min(1.0, eta + math.exp(log_tail)))
    return PrivateSelection(algorithm=name, best=dict(hyper), x=x, score=score_value,
                            trials_run=trials, trial_epsilon=trial_eps,
                            epsilon=3.0 * trial_eps, delta=delta, max_trials=cap,
                            stop_probability=gamma, suboptimality=sub)


def _trial(algorithm: Callable[..., Any], objective: Any, name: str, eps: float,
           run_seed: tuple[int, ...], run_kw: dict[str, Any], fixed: dict[str, Any],
           hyper: dict[str, Any], release: Any, B: float, score_seed: tuple[int, ...]
           ) -> tuple[float, np.ndarray, float]:
    """One trial: ``(noisy score, final iterate, the run's ledger epsilon)``; the score is
    ``+inf`` for a run that failed, diverged or ended beyond the score's grid (never chosen;
    nothing of it is released). A run that
    cannot be composed here (not pure, not replace-one, over its budget, float noise) is a
    ``ValueError``: a property of the algorithm, not of the data."""
    from dpbounds.privacy.mechanisms import Neighbouring

    nothing = (math.inf, np.empty(0), 0.0)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            res = algorithm(objective, epsilon=eps, trials=1, seed=run_seed, **run_kw,
                            **fixed, **hyper)
    except (ValueError, FloatingPointError, OverflowError):
        return nothing  # refused or overflowed: an abort would depend on this trial
    privacy = res.privacy
    if privacy.ledger.neighbouring is not Neighbouring.REPLACE_ONE:
        raise ValueError(f"{name}: its runs are {privacy.ledger.neighbouring.value}; the "
                         "score's sensitivity B/n needs a public n (replace-one)")
    if float(privacy.target_delta) != 0.0 or privacy.accountant != "pure":
        raise ValueError(f"{name}: its runs are ({privacy.target_epsilon:g}, "
                         f"{privacy.target_delta:g})-DP by {privacy.accountant}; random "
                         "stopping is composed here for pure epsilon-DP runs")
    if (getattr(res, "params", None) or {}).get("noise") == "float":
        raise ValueError(f"{name}: its run released float64 noise, whose last bits leak "
                         "(run it with noise='grid')")
    run_eps = float(privacy.ledger.epsilon(None, accountant="pure"))
    if not run_eps <= eps * (1 + 1e-9):  # the run's own ledger, not its target
        raise ValueError(f"{name}: a run's ledger reads eps = {run_eps:.6g} above its "
                         f"target {eps:g}")
    x = np.asarray(res.x, dtype=float).reshape(1, -1)
    diverged = (math.inf, np.empty(0), run_eps)  # ran (and spent), nothing to choose
    if not np.all(np.isfinite(x)):
        return diverged
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            value = _score(objective, x, B)
        if not math.isfinite(value):
            return diverged
        noisy = float(release.release(np.array([value]), np.random.default_rng(score_seed))[0])
    except (ValueError, OverflowError):  # beyond the score's grid: as diverged
        return diverged
    return noisy, x[0].copy(), run_eps
