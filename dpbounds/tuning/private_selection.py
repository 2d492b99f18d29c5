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
its score. Each trial is :math:`\varepsilon_0 = \varepsilon_{\rm run} + \varepsilon_{\rm score}`
-DP (basic composition).

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

The number of trials :math:`K` is a function of the coins only (data-independent) and is
released. Nothing else of the other trials is: their scores and picks are not covered by the
theorem and are not returned. ``suboptimality`` (:math:`F(x)-F^\ast` of the chosen run, from
the objective's exact optimum) is for simulation studies only and is **not** part of the
release.

Seeds: trial ``k`` draws its grid point from ``(seed, 3, k)``, its run from ``(seed, 4, k)``,
its stopping coin from ``(seed, 5, k)`` and its score noise from ``(seed, 6, k)``: trial ``k``
depends only on ``(seed, k)``.

Example
-------
>>> from dpbounds.algorithms import dp_heavy_ball
>>> from dpbounds.objectives import QuadraticObjective
>>> f = QuadraticObjective.random(d=3, mu=0.1, L=1.0, n=500, offset_scale=1.0, seed=0)
>>> sel = select_privately(dp_heavy_ball, f, {"step_size": [0.5, 1.0], "steps": [3, 6]},
...                        epsilon=0.5, score_epsilon=0.1, loss_bound=5.0,
...                        stop_probability=0.2, seed=1)
>>> round(sel.epsilon, 6) == round(3 * sel.trial_epsilon, 6), sel.trials >= 1
(True, True)
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
    """What :func:`select_privately` releases, and what it cost.

    Attributes
    ----------
    best:
        The chosen trial's hyper-parameters.
    x:
        The chosen run's final iterate, shape ``(d,)``.
    score:
        Its released noisy score (mean clipped loss plus regulariser).
    trials:
        Trials run (:math:`K`, data-independent).
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
    trials: int
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
            f"trials: {self.trials} (stop probability {self.stop_probability:g} per trial, at "
            f"most {self.max_trials})",
            f"privacy of the whole selection (replace-one): eps = {self.epsilon:.6g} (3 x "
            f"{self.trial_epsilon:.6g} per trial), delta = {self.delta:.3g} (the cap) "
            f"[{self.source.provenance.value}: {self.source.paper}, {self.source.result}]",
            f"not released, for simulation studies only: F(x) - F* = {self.suboptimality:.6g}",
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
    from dpbounds.privacy.mechanisms import Neighbouring

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
    from dpbounds.tuning.by_runs import check_grid, check_names

    size = check_grid(grid, fixed, 10**7)  # drawn by index: no list of the points is built
    check_names(algorithm, {**{k: f"fixed argument {k!r}" for k in fixed},
                            **{k: f"grid[{k!r}]" for k in grid}})
    names = list(grid)
    n = int(objective.n)
    release = GridLaplace(sensitivity=B / n, epsilon=eps_s, grid_bits=grid_bits)
    if name is None:
        name = str(fixed["method"]) if getattr(algorithm, "__name__", None) == "run_method" \
            and "method" in fixed else getattr(algorithm, "__name__", type(algorithm).__name__)

    best: tuple[float, dict[str, Any], np.ndarray] | None = None
    # one trial's guarantee: every candidate's run is calibrated to eps (each run's own
    # ledger is checked below), the score release spends at most score_epsilon
    trial_eps = eps + release.epsilon_spent
    trials = 0
    from dpbounds._progress import progress_bar

    bar = progress_bar(progress, None, desc="private selection", unit="trial", lines=True)
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
            res = algorithm(objective, epsilon=eps, trials=1, seed=(root, RUN_STREAM, trial),
                            **fixed, **hyper)
            privacy = res.privacy
            if privacy.ledger.neighbouring is not Neighbouring.REPLACE_ONE:
                raise ValueError(f"{name}: its runs are {privacy.ledger.neighbouring.value}; the "
                                 "score's sensitivity B/n needs a public n (replace-one)")
            if float(privacy.target_delta) != 0.0 or privacy.accountant != "pure":
                raise ValueError(f"{name}: its runs are ({privacy.target_epsilon:g}, "
                                 f"{privacy.target_delta:g})-DP by {privacy.accountant}; random "
                                 "stopping is composed here for pure epsilon-DP runs")
            run_eps = float(privacy.ledger.epsilon(None, accountant="pure"))
            if not run_eps <= eps * (1 + 1e-9):  # the run's own ledger, not its target
                raise ValueError(f"{name}: a run's ledger reads eps = {run_eps:.6g} above its "
                                 f"target {eps:g}")
            x = np.asarray(res.x, dtype=float).reshape(1, -1)
            if not np.all(np.isfinite(x)):
                score = math.inf  # a diverged run: never chosen (its score is not released)
            else:
                score_rng = np.random.default_rng((root, SCORE_STREAM, trial))
                score = float(release.release(np.array([_score(objective, x, B)]), score_rng)[0])
            trials += 1
            bar.update(1)
            if best is None or score < best[0]:
                best = (score, hyper, x[0].copy())
            if np.random.default_rng((root, STOP_STREAM, trial)).random() < gamma:
                break
    finally:
        bar.close()
    assert best is not None
    score, hyper, x = best
    if not math.isfinite(score):
        raise ValueError(f"{name}: every trial diverged (no finite iterate to release)")
    sub = float(np.asarray(objective.suboptimality(x[None, :]), dtype=float)[0])
    eta = (1.0 - gamma) ** cap if gamma < 1.0 else 0.0
    # eta (1 + e^(3 eps_0)), at most 1 (a vacuous delta where e^(3 eps_0) overflows)
    log_tail = math.log(eta) + 3.0 * trial_eps if eta > 0 else -math.inf
    delta = 0.0 if eta == 0 else (1.0 if log_tail >= 0 else min(1.0, eta + math.exp(log_tail)))
    return PrivateSelection(algorithm=name, best=dict(hyper), x=x, score=score, trials=trials,
                            trial_epsilon=trial_eps, epsilon=3.0 * trial_eps,
                            delta=delta, max_trials=cap,
                            stop_probability=gamma, suboptimality=sub)
