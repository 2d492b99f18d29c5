r"""Plan a private selection's budget: the per-run epsilon whose whole selection costs a total.

:func:`~dpbounds.tuning.select_privately` takes each run's epsilon and reports the whole
selection's (run, score, the number of trials' law, the reference run); a researcher with a
total budget asks the inverse (walkthrough of stop 79: "which per-run epsilon gives a total of
1?" could only be answered by trial and error, each trial a selection on the private data).
:func:`plan_selection` answers it **before the private data are touched**:

* pure random stopping (Liu & Talwar 2019, Theorem 3.4, RECONSTRUCTED; ``target_delta=None``):
  :math:`\varepsilon = 3(\varepsilon_{run}(1+10^{-9}) + \varepsilon_s')`, with
  :math:`\varepsilon_s'` the score's spent budget (grid Laplace, at most ``score_epsilon``;
  the :math:`10^{-9}` slack is DERIVED, the selection's own), solved in closed form;
* the Rényi selection (Papernot & Steinke 2022, Theorem 2, RECONSTRUCTED;
  ``target_delta``): the guarantee is increasing in the run's epsilon, which is found by
  bisection on :math:`\log\varepsilon_{run}`, each evaluation one **reference run on the
  public** ``reference_objective`` at grid point 0 (its ledger fixes the run's Rényi curve,
  as in the selection itself) and the same conversion as the selection's.

The guarantee is the selection's own function of public inputs (the grid's first point, the
law, the score's budget and bound, the public size), so the selection made afterwards at the
planned epsilon reports at most the total (the tests check it, two-sided). The planned
epsilon is the largest within ``rtol`` (relative) whose guarantee is at most the total.

Example
-------
>>> from dpbounds.tuning.selection_budget import plan_selection
>>> plan = plan_selection(None, None, {"step_size": [0.5]}, total_epsilon=3.3,
...                       score_epsilon=0.1, loss_bound=5.0)   # pure: no run needed
>>> round(plan.epsilon, 6), plan.accountant
(1.0, 'pure')
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_positive
from dpbounds.tuning.private_selection import (
    MAX_TRIALS,
    REFERENCE_STREAM,
    RUN_EPS_SLACK,
    _cap,
    _cap_refusal,
    _check_law,
    _grid_noise_keyword,
    _law_cap,
    _point,
    _pure_curve,
    _pure_delta,
    _reference,
    _renyi_guarantee,
    trials_mean,
    trials_tail,
)

__all__ = ["SelectionBudget", "plan_selection"]

#: the most reference runs a plan makes (about 40 halvings and bisections at rtol 1e-4)
MAX_EVALUATIONS = 80


@dataclass(frozen=True)
class SelectionBudget:
    """A planned private selection: run it with ``epsilon=plan.epsilon`` and the same inputs.

    Attributes
    ----------
    epsilon:
        The per-run epsilon (``select_privately``'s ``epsilon``).
    total_epsilon, delta:
        The whole selection's guarantee at that epsilon (at most the asked total).
    asked:
        The total asked for.
    accountant:
        ``"pure"`` (Liu & Talwar) or ``"rdp"`` (Papernot & Steinke).
    trials_mean:
        :math:`\\mathbb E[K]`, the expected number of trials (compute, not privacy).
    evaluations:
        Reference runs made on the public objective (0 for the pure path).
    target_delta:
        The Rényi path's conversion delta, to give ``select_privately`` as its
        ``target_delta``: the one asked, or with ``total_delta`` that total less the cap's
        share (``None`` on the pure path).
    """

    epsilon: float
    total_epsilon: float
    delta: float
    asked: float
    accountant: str
    trials_mean: float
    evaluations: int
    target_delta: float | None = None

    def __str__(self) -> str:
        how = ("3 (eps + score eps), Liu & Talwar" if self.accountant == "pure" else
               f"Papernot & Steinke's Renyi bound, {self.evaluations} reference runs on the "
               "public objective")
        return (f"planned eps per run = {self.epsilon:.6g}: the whole selection costs eps = "
                f"{self.total_epsilon:.6g} <= {self.asked:g}, delta = {self.delta:.6g} "
                f"({how}; {self.trials_mean:.4g} trials expected)")


def plan_selection(algorithm: Callable[..., Any] | None, reference_objective: Any,
                   grid: Mapping[str, Sequence[Any]], *, total_epsilon: float,
                   score_epsilon: float, loss_bound: float, stop_probability: float = 0.05,
                   cap_delta: float = 1e-9, grid_bits: int = 30,
                   target_delta: float | None = None, shape: float = 1.0,
                   reference_composed: bool = True, rtol: float = 1e-4,
                   total_delta: float | None = None,
                   name: str | None = None, progress: bool = False,
                   **fixed: Any) -> SelectionBudget:
    r"""The largest per-run epsilon whose private selection costs at most ``total_epsilon``.

    Parameters
    ----------
    algorithm, grid, fixed:
        As :func:`~dpbounds.tuning.select_privately` will be given them (the grid's first point
        makes the reference run; ``algorithm`` is not run on the pure path and may be
        ``None`` there).
    score_epsilon, loss_bound, stop_probability, cap_delta, grid_bits, target_delta, shape:
        The selection's own (the same values it will be given).
    reference_objective:
        A **public** objective with the private one's public constants (``n``, ``d``,
        declared radii): the reference runs of the Rényi path are made on it. Not read on the
        pure path (``None`` allowed; the score's sensitivity there is ``loss_bound / n`` with
        ``n`` public, and its grid's spent budget does not depend on it to more than the
        grid's rounding, which ``rtol`` covers).
    total_epsilon:
        The whole selection's epsilon, > 0.
    total_delta:
        Instead of ``target_delta`` (the Rényi path): the whole selection's delta. The
        selection's delta is its conversion delta plus the cap's and the sampler's share
        (:math:`P[K>T](1+e^{\varepsilon})`), so ``target_delta=1e-6`` releases a delta of
        about 1.003e-6 (walkthrough of stop 80); with ``total_delta`` the plan converts at
        ``total_delta`` less that share at ``total_epsilon`` (the most it can be), returned
        as ``plan.target_delta`` for ``select_privately``, and the selection's delta is at
        most ``total_delta``.
    reference_composed:
        ``True`` (default, as :func:`~dpbounds.tuning.select_privately` without a
        ``reference_objective``): the selection makes its reference run on the private data
        and composes its curve, so the plan counts it. ``False`` where the selection will be
        given ``reference_objective`` (a public twin; a plan of ``True`` is then
        conservative, a plan of ``False`` for a selection without the twin would be ~13%
        over the total: review of stop 79).
    rtol:
        Relative resolution of the planned epsilon, in (0, 0.1].
    progress:
        Show the reference runs as they run (a bar on a terminal, lines in a log): each is
        one run of the algorithm, ~15 of them.

    Returns
    -------
    SelectionBudget

    Raises
    ------
    ValueError
        Where no per-run epsilon reaches the total (the score, the law's
        :math:`\ln\mathbb E[K]/(\lambda-1)` term or the cap's delta alone cost more), naming
        the inputs to change.
    """
    from dpbounds.privacy.discrete import GridLaplace

    total = check_positive("total_epsilon", total_epsilon)
    eps_s = check_positive("score_epsilon", score_epsilon)
    B = check_positive("loss_bound", loss_bound)
    if isinstance(rtol, bool) or not isinstance(rtol, numbers.Real) or not 0 < rtol <= 0.1:
        raise ValueError(f"rtol must lie in (0, 0.1], got {rtol!r}")
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid must map each searched name to a non-empty list of values, "
                         f"got {grid!r}")
    from dpbounds.tuning.by_runs import check_grid

    check_grid(grid, fixed, 10**7)  # {"step_size": 0.1}: TypeError from len() (fuzz 15)
    check_int("grid_bits", grid_bits, minimum=0, maximum=40)
    for what, value, top in (("stop_probability", stop_probability, 1.0),
                             ("cap_delta", cap_delta, 1.0 - 1e-16)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not 0.0 < float(value) <= top:
            raise ValueError(f"{what} must be a number in (0, 1{']' if top == 1.0 else ')'}, "
                             f"got {value!r}")
    gamma = float(stop_probability)
    if total_delta is not None:
        if target_delta is not None:
            raise ValueError("give target_delta (the conversion's) or total_delta (the whole "
                             "selection's), not both")
        if not (isinstance(total_delta, numbers.Real) and not isinstance(total_delta, bool)
                and 0.0 < float(total_delta) < 1.0):
            raise ValueError(f"total_delta must be a number in (0, 1), got {total_delta!r}")
        eta_, gamma_ = _check_law(shape, stop_probability)
        cap_ = _law_cap(eta_, gamma_, float(cap_delta))
        # the share _renyi_guarantee adds, at the largest epsilon the plan allows
        tail = min(1.0, trials_tail(eta_, gamma_, cap_) + cap_ * 2.0**-50)
        # as _renyi_guarantee computes it (at the total, the most any epsilon planned reaches)
        share = math.exp(math.log(tail) + math.log1p(math.exp(min(total, 700.0)))) \
            if tail > 0 else 0.0
        target_delta = float(total_delta) - share
        while target_delta > 0 and target_delta + share > float(total_delta):
            target_delta = math.nextafter(target_delta, 0.0)  # the sum's last bit (review)
        if not target_delta > 0:
            raise ValueError(f"total_delta {float(total_delta):.3g} is at most the cap's share "
                             f"{share:.3g} (P[K > T] (1 + e^eps) at eps = {total:g}): lower "
                             "cap_delta or raise total_delta")
    if target_delta is None:
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"stop_probability must lie in (0, 1], got {stop_probability!r}")
        # the score's spent budget: units / scale of a grid Laplace at eps_s; n only sets the
        # grid's rounding (sensitivity B/n in units of 2^-grid_bits): read it where given
        n = int(getattr(reference_objective, "n", 0) or 0)
        spent = (float(GridLaplace(sensitivity=B / n, epsilon=eps_s,
                                   grid_bits=grid_bits).epsilon_spent) if n else eps_s)
        run = (total / 3.0 - spent) / (1.0 + RUN_EPS_SLACK)
        if not run > 0:
            raise ValueError(f"total_epsilon {total:g} is at most 3 x the score's {spent:g}: "
                             "no run budget is left (lower score_epsilon)")
        while 3.0 * (run * (1.0 + RUN_EPS_SLACK) + spent) > total:  # float rounding
            run = math.nextafter(run, 0.0)
        cap = _cap(gamma, float(cap_delta))
        if cap > MAX_TRIALS:  # as the selection refuses it (fuzz round 14: "lower total")
            raise ValueError(_cap_refusal(gamma, float(cap_delta), f"of {cap:.3g} trials"))
        delta = _pure_delta(gamma, cap, run * (1.0 + RUN_EPS_SLACK) + spent)
        # fuzz round 14: a total of 20 planned a selection of delta 0.46 without a word; the
        # cap's share grows as e^total (a smaller cap_delta costs trials, not privacy). Above
        # 1/n a delta is no privacy (the selection flags it); n unknown: 1e-3 (n >= 1000)
        most = 1.0 / n if n else 1e-3
        if delta > most:
            need = _largest_cap_delta(gamma, run * (1.0 + RUN_EPS_SLACK) + spent, most,
                                      float(cap_delta))
            advice = (f"lower cap_delta to {_round_down(need)} (a longer cap: compute, not "
                      "privacy), or plan a smaller total" if need > 0 else
                      "plan a smaller total (no cap_delta fits)")
            raise ValueError(f"at a total of {total:g} the cap's delta is {delta:.4g}, above "
                             f"{'1/n' if n else '1e-3'} = {most:.4g} (about cap_delta "
                             f"(1 + e^total)): {advice}")
        return SelectionBudget(run, 3.0 * (run * (1.0 + RUN_EPS_SLACK) + spent), delta, total,
                               "pure", 1.0 / gamma, 0)
    if not (isinstance(target_delta, numbers.Real) and 0.0 < float(target_delta) < 1.0):
        raise ValueError(f"target_delta must be None or a number in (0, 1), got "
                         f"{target_delta!r}")
    eta, gamma = _check_law(shape, stop_probability)
    if algorithm is None or reference_objective is None:
        raise ValueError("the Renyi path plans from reference runs: give the algorithm and a "
                         "public reference_objective")
    from dpbounds.privacy.mechanisms import Neighbouring
    from dpbounds.privacy.rdp import DEFAULT_ORDERS

    orders = DEFAULT_ORDERS
    names = list(grid)
    point = _point(grid, names, 0)
    label = name or getattr(algorithm, "__name__", "algorithm")
    run_kw = _grid_noise_keyword(algorithm)
    cap = _law_cap(eta, gamma, float(cap_delta))
    evaluations = 0
    from dpbounds._progress import progress_bar

    bar = progress_bar(progress, None, desc="planning the selection", unit="run", lines=True)

    def guarantee(run_eps: float) -> tuple[float, float]:
        nonlocal evaluations
        if evaluations >= MAX_EVALUATIONS:
            raise ValueError(f"plan_selection: {MAX_EVALUATIONS} reference runs did not "
                             f"resolve the per-run epsilon to rtol {rtol:g}")
        evaluations += 1
        bar.update(1)
        bound, _, relation, own = _reference(
            algorithm, reference_objective, label, run_eps, (0, REFERENCE_STREAM), run_kw,
            fixed, point, orders, True)
        size = (int(reference_objective.n) if relation is Neighbouring.REPLACE_ONE
                else int(fixed["public_n"]))
        spent = float(GridLaplace(sensitivity=B / size, epsilon=eps_s,
                                  grid_bits=grid_bits).epsilon_spent)
        trial = bound(run_eps * (1.0 + RUN_EPS_SLACK)) + _pure_curve(spent, orders)
        composed = own if reference_composed else np.zeros_like(own)
        return _renyi_guarantee(trial, orders, eta, gamma, float(target_delta), cap, composed)

    try:
        plan = _bisect(guarantee, total, rtol, eps_s, eta, gamma, lambda: evaluations,
                       float(target_delta))
    finally:
        bar.close()
    most = 1.0 / int(fixed.get("public_n") or reference_objective.n)  # the public size
    if plan.delta > most:  # fuzz round 14: a total of 50 planned a delta of 0.9995
        raise ValueError(f"at a total of {total:g} the selection's delta is {plan.delta:.3g}, "
                         f"above 1/n = {most:.3g} (no privacy): the cap's share "
                         "P[K > T] (1 + e^eps) grows with the total; lower cap_delta (a longer "
                         "cap: compute, not privacy) or plan a smaller total")
    return plan


def _largest_cap_delta(gamma: float, trial_eps: float, most: float, start: float) -> float:
    """The largest cap_delta <= ``start`` whose pure selection's delta is at most ``most``
    (bisection on its logarithm; ``0.0`` where none down to 1e-300 fits). Review 2 of stop
    80: the advice cap_delta x most / delta was refused again (the cap's own rounding)."""
    def fits(c: float) -> bool:
        cap = _cap(gamma, c)
        return cap <= MAX_TRIALS and _pure_delta(gamma, cap, trial_eps) <= most

    # the smallest cap_delta whose cap is within MAX_TRIALS: below it nothing runs (review 3
    # of stop 80: a start at 1e-300 said "none fits" where 1e-60 did)
    lo = max(math.log(1e-300), MAX_TRIALS * math.log1p(-gamma) if gamma < 1.0 else -690.0)
    lo = math.nextafter(lo, 0.0) if lo < 0 else lo
    hi = math.log(start)
    if not fits(math.exp(lo)):
        lo += 1e-9 * abs(lo)  # the cap's own rounding at that end
        if not fits(math.exp(lo)):
            return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fits(math.exp(mid)) else (lo, mid)
        if hi - lo < 1e-6:
            break
    return math.exp(lo)


def _round_down(x: float) -> str:
    """``x`` in two significant digits, rounded down (advice must still fit)."""
    e = math.floor(math.log10(x))
    m = math.floor(x / 10.0**e * 10.0) / 10.0
    while m * 10.0**e > x:  # the product's own rounding
        m -= 0.1
    return f"{m:.1f}e{e:+03d}"


def _bisect(guarantee: Callable[[float], tuple[float, float]], total: float, rtol: float,
            eps_s: float, eta: float, gamma: float,
            evaluations: Callable[[], int], target_delta: float) -> SelectionBudget:
    """The largest per-run epsilon (to ``rtol``) whose ``guarantee`` fits ``total``:
    halving from the total until it fits, then bisection on its logarithm."""

    def fits(g: tuple[float, float]) -> bool:
        return g[0] <= total and g[1] < 1.0

    lo, hi = total, math.inf
    at_lo = guarantee(lo)
    while not fits(at_lo):  # halve until the guarantee fits
        hi, lo = lo, lo / 2.0
        unreachable = (f"no per-run epsilon gives a total of {total:g}: at {hi:.3g} per run "
                       f"the selection costs eps = {at_lo[0]:.4g}, delta = {at_lo[1]:.3g} (the "
                       f"score's {eps_s:g}, the law's ln E[K] term and the cap dominate: lower "
                       "score_epsilon or shape, or raise stop_probability)")
        if lo < total * 1e-6:
            raise ValueError(unreachable)
        try:
            at_lo = guarantee(lo)
        except ValueError as err:  # a run this small cannot be made (its noise's range)
            raise ValueError(f"{unreachable}; at {lo:.3g} per run the reference run fails: "
                             f"{err}") from None
    if math.isinf(hi):  # the total itself fits (a run spending all of it costs no more)
        return SelectionBudget(lo, at_lo[0], at_lo[1], total, "rdp", trials_mean(eta, gamma),
                               evaluations(), target_delta)
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        at_mid = guarantee(mid)
        if fits(at_mid):
            lo, at_lo = mid, at_mid
        else:
            hi = mid
    return SelectionBudget(lo, at_lo[0], at_lo[1], total, "rdp", trials_mean(eta, gamma),
                           evaluations(), target_delta)
