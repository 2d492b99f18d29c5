r"""The horizon :math:`T` that minimises the bound of DP-NAG / DP-MASG (Kuru et al., Remark 4.1).

* :func:`select_horizon` -- Remark 4.1: the horizon :math:`T\le T_{\max}` minimising (32)
  :math:`a_{T,0}E_0+\frac{dS_1^2}{n^2\epsilon^2}(\sum_ja_{T,j}^{1/3})^3`, for every
  :math:`T` at once with prefix log-sum-exps (:math:`O(T_{\max})`).

:func:`select_horizon_subsampled` does the same with subsampling (:math:`m<n`, **DERIVED**: the
numeric optimal allocation at each candidate :math:`T`); :func:`naive_select_horizon` is the
:math:`O(T^2)` reference; :func:`remark_4_1_theorem` is (32) for constant-step DP-NAG in closed
form, as a theorem object.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpbounds._progress import progress_bar
from dpbounds._validation import MAX_COUNT, check_int, check_nonnegative, check_positive
from dpbounds.bounds.strongly_convex.gradient_noise import LOG_FLOAT_MAX, subsampling_variance
from dpbounds.bounds.strongly_convex.nesterov import (
    MAX_HORIZON,
    Schedule,
    error_weights,
    masg_schedule,
    nesterov_schedule,
)
from dpbounds.bounds.strongly_convex.noise_allocation.allocation import (
    SOURCE_PROP42,
    _check_budget,
    _representable,
    optimal_noise,
)
from dpbounds.privacy.laplace import deamplify_without_replacement
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "SOURCE_REMARK41",
    "HorizonChoice",
    "select_horizon",
    "check_max_horizon",
    "naive_select_horizon",
    "select_horizon_subsampled",
    "remark_4_1_theorem",
]


SOURCE_REMARK41 = Source(KURU, "Remark 4.1, eq. (32)", Provenance.VERBATIM)


# ----------------------------------------------------------------------------- horizon
@dataclass(frozen=True)
class HorizonChoice:
    r"""Remark 4.1: the horizon minimising (32) and the bound for every candidate horizon.

    ``bounds[T-1]`` is (32) at horizon ``T`` (``inf`` where it exceeds the float64 range; the
    selected ``bound`` is always finite: :func:`select_horizon` raises ``ValueError`` naming
    ``epsilon`` otherwise).
    """

    horizon: int
    bound: float
    bounds: np.ndarray
    bias: np.ndarray
    noise: np.ndarray
    convention: str
    source: Source = SOURCE_REMARK41
    #: proven relative gap: ``bound <= (1 + gap) * min_T B(T)`` (0: the exact minimiser)
    gap: float = 0.0
    #: proven lower bound on ``min_T B(T)`` over every horizon ``T <= max_horizon``
    #: (``nan``: not computed; with ``m = n`` the bound itself, Remark 4.1 being exact)
    lower_bound: float = float("nan")


#: horizons per chunk of the prefix-sum passes (bounded temporaries, a progress tick each)
_CHUNK = 1 << 20


def _prefix_terms(schedule: Schedule, mu: float, L: float, convention: str,
                  powers: tuple[float, ...] = (1.0 / 3.0,), *, progress: bool = False,
                  desc: str = "horizons"):
    r"""Chunks ``(start, log a_{T,0}, [log sum_{t<=T} a_{T,t}^p for p in powers])`` over all T.

    With :math:`D_k=s_k\ln2+\sum_{i\le k}\log(1-\sqrt{\mu\alpha_i})`,
    :math:`\log a_{T,t}=D_T-D_t+\log c_t`, so the sum for every :math:`T` is one cumulative
    log-sum-exp of :math:`p(\log c_t-D_t)` shifted by :math:`pD_T`: :math:`O(T_{\max})` in
    chunks of :data:`_CHUNK` horizons (the running :math:`D` and log-sum-exp carried over). A step
    with :math:`\mu\alpha=1` (only possible with :math:`\mu=L`, :math:`\alpha=1/L`) contracts to
    0: the weights before it vanish (:math:`0^0=1` for the step itself); such steps can only
    open the schedule (steps never increase), and the sums restart after them.
    """
    if convention not in ("paper", "reference_code"):
        raise ValueError(f"convention must be 'paper' or 'reference_code', got {convention!r}")
    steps, stages = schedule.steps, schedule.stages
    if np.any(steps > 1.0 / L * (1 + 1e-12)):
        raise ValueError("Theorems 4.1/4.3 need every step alpha <= 1/L")
    z = 0  # leading steps with mu alpha = 1 (a prefix: steps never increase)
    while z < steps.size:
        block = mu * steps[z:z + _CHUNK] < 1.0
        if np.any(block):
            z += int(np.argmax(block))
            break
        z += block.size
    factor = 0.5 if convention == "reference_code" else 1.0
    s0 = 0.0 if convention == "reference_code" else 1.0
    ln2 = math.log(2.0)
    D_prev = 0.0
    acc = [-np.inf] * len(powers)
    T = steps.size
    with progress_bar(progress and T > _CHUNK, lines=True, total=T, desc=desc, unit="T",
                      unit_scale=True) as bar:
        for start in range(0, T, _CHUNK):
            stop = min(start + _CHUNK, T)
            alpha = steps[start:stop]
            g = np.arange(start, stop)
            with np.errstate(divide="ignore"):
                lc = np.log1p(-np.sqrt(mu * alpha))
            if np.any(np.isnan(lc)) or np.any(np.isneginf(lc[g >= z])):  # pragma: no cover
                raise ValueError("every step must satisfy mu * alpha <= 1, and mu * alpha = 1 "
                                 "only at the start (steps never increase)")
            lc[g < z] = 0.0  # never multiplied into a surviving weight (see above)
            D = np.cumsum(lc, out=lc)
            D += D_prev
            D_prev = float(D[-1])
            log_c = np.log(factor * alpha)
            log_c += np.log1p(alpha * L)
            stage_term = stages[start:stop] * ln2
            sums = []
            for j, pw in enumerate(powers):
                inner = (log_c - D - stage_term) * pw
                inner[g < z - 1] = -np.inf  # a_{T,t} = 0 for t < z
                inner[0] = np.logaddexp(acc[j], inner[0])
                log_sum = np.logaddexp.accumulate(inner, out=inner)
                acc[j] = float(log_sum[-1])
                log_sum += (D + stage_term) * pw
                head = g < z
                log_sum[head] = pw * log_c[head]  # T <= z: only a_{T,T} = c_T is left
                sums.append(log_sum)
            log_a0 = D + stage_term - s0 * ln2
            if z > 0:
                log_a0[:] = -np.inf  # the first step contracts E_0 to 0
            bar.update(stop - start)
            yield start, log_a0, sums


def check_max_horizon(max_horizon: Any) -> int:
    """``max_horizon`` as an int in [1, :data:`MAX_HORIZON`] (ValueError naming it otherwise)."""
    return check_int("max_horizon", max_horizon, minimum=1, maximum=MAX_HORIZON)


def _schedule(method: str, mu: float, L: float, T: int, *, alpha: float | None, c: float,
              p: float, first_stage_rounding: str = "ceil",
              first_stage_length: int | None = None) -> Schedule:
    c = float(check_positive("c", c))  # None or 10**400: TypeError / OverflowError (fuzz 7)
    if method == "nag":
        return nesterov_schedule(c / L if alpha is None else alpha, T)
    if method == "masg":
        return masg_schedule(mu, L, horizon=T, p=p, c=c, first_stage_rounding=first_stage_rounding,
                             first_stage_length=first_stage_length)
    raise ValueError(f"method must be 'nag' or 'masg', got {method!r}")


def select_horizon(
    mu: float, L: float, *, initial_error: float, d: int, sensitivity: float, n: int,
    epsilon: float, max_horizon: int, alpha: float | None = None, method: str = "nag",
    c: float = 1.0, p: float = 1.0, convention: str = "paper",
    first_stage_rounding: str = "ceil", first_stage_length: int | None = None,
    progress: bool = False,
) -> HorizonChoice:
    r"""Remark 4.1: minimise (32) over :math:`T\in\{1,\dots,T_{\max}\}` (:math:`m=n`).

    .. math:: B(T)=a_{T,0}E_0+\frac{dS_1^2}{n^2\epsilon^2}\Big(\sum_{j=1}^Ta_{T,j}^{1/3}\Big)^3

    ``method="nag"`` (constant ``alpha``, default ``c/L``) or ``"masg"`` (schedule (33) cut at
    each ``T``; ``first_stage_length`` overrides :math:`n_1`). All horizons are evaluated in
    log-space from prefix sums, in chunks (``progress``: a tqdm bar for long runs):
    :math:`O(T_{\max})` time and memory, ``max_horizon`` at most :data:`MAX_HORIZON`.
    :func:`naive_select_horizon` is the direct :math:`O(T_{\max}^2)` evaluation it is tested
    against.
    """
    mu, L, E0, d, S, n, eps, Tmax = _check_horizon_inputs(
        mu, L, initial_error, d, sensitivity, n, epsilon, max_horizon)
    sched = _schedule(method, mu, L, Tmax, alpha=alpha, c=c, p=p,
                      first_stage_rounding=first_stage_rounding,
                      first_stage_length=first_stage_length)
    # in log-space: the noise term overflows float64 when epsilon is tiny
    log_E0 = math.log(E0) if E0 > 0 else -np.inf
    log_const = math.log(d) + 2.0 * (math.log(S) - math.log(n) - math.log(eps))
    bias, noise, total = np.empty(Tmax), np.empty(Tmax), np.empty(Tmax)
    for start, log_a0, (log_sum,) in _prefix_terms(sched, mu, L, convention, progress=progress,
                                                   desc="horizons of (32)"):
        sl = slice(start, start + log_a0.size)
        bias[sl] = log_a0 + log_E0
        noise[sl] = 3.0 * log_sum + log_const
        np.logaddexp(bias[sl], noise[sl], out=total[sl])
    del sched
    k = int(np.argmin(total))
    bound = _representable(float(total[k]), eps, "the bound (32) at its best horizon")
    with np.errstate(under="ignore", over="ignore"):  # inf only at horizons never selected
        np.exp(bias, out=bias)
        np.exp(noise, out=noise)
        np.exp(total, out=total)
    return HorizonChoice(k + 1, bound, total, bias, noise, convention, lower_bound=bound)


def _check_horizon_inputs(mu: Any, L: Any, initial_error: Any, d: Any, sensitivity: Any,
                          n: Any, epsilon: Any, max_horizon: Any) -> tuple:
    """The inputs of the full-batch horizon searches, checked: ``(mu, L, E0, d, S, n, eps,
    Tmax)``."""
    S, n, _, eps = _check_budget(sensitivity, n, n, epsilon)
    return (float(check_positive("mu", mu)), float(check_positive("L", L)),
            float(check_nonnegative("initial_error", initial_error)),
            check_int("d", d, minimum=1, maximum=MAX_COUNT), S, n, eps,
            check_max_horizon(max_horizon))


def naive_select_horizon(
    mu: float, L: float, *, initial_error: float, d: int, sensitivity: float, n: int,
    epsilon: float, max_horizon: int, alpha: float | None = None, method: str = "nag",
    c: float = 1.0, p: float = 1.0, convention: str = "paper",
    first_stage_length: int | None = None,
) -> tuple[int, np.ndarray]:
    """(32) at every horizon by recomputing the weights of each truncated schedule: O(T^2).

    The reference for :func:`select_horizon` (tests, ``bench/bench_horizon.py``): this is the
    loop ``dpbounds.algorithms.momentum`` used before. Returns ``(best T, bounds)``.
    """
    mu, L, initial_error, d, sensitivity, n, epsilon, max_horizon = _check_horizon_inputs(
        mu, L, initial_error, d, sensitivity, n, epsilon, max_horizon)
    sched = _schedule(method, mu, L, max_horizon, alpha=alpha, c=c, p=p,
                      first_stage_length=first_stage_length)
    out = np.empty(max_horizon)
    # in float64 (inf past its range, as select_horizon's bounds) rather than Python floats
    with np.errstate(over="ignore"):
        const = float(d * np.float64(sensitivity) ** 2 / (np.float64(n) * epsilon) ** 2)
    for T in range(1, max_horizon + 1):
        w = error_weights(sched.truncated(T), mu, L, convention=convention)
        out[T - 1] = w.a0 * initial_error + const * float(np.sum(np.cbrt(w.a))) ** 3
    return int(np.argmin(out)) + 1, out


#: exponents p of the power-law bounds g(e) <= kappa_p e^p behind the subsampled lower bound
_POWERS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def _log_power_constant(p: float, m: int, n: int, eps: float) -> float:
    r"""log :math:`\kappa_p\ge\sup_{0<e\le\epsilon}g(e)/e^p`, :math:`g(e)=\ln(1+\frac nm(e^e-1))`.

    Rigorous (an over-estimate by at most 0.1%): :math:`g` increases, so on
    :math:`[e_i,e_{i+1}]` the ratio is at most :math:`g(e_{i+1})/e_i^p`; below the first grid
    point :math:`g(e)\le\frac nme` (concavity) gives :math:`\frac nm e_0^{1-p}`.
    """
    log_e = np.linspace(math.log(eps) - 40.0, math.log(eps), 40001)  # ratio e^(1/1000)
    log_g = np.log(np.atleast_1d(deamplify_without_replacement(np.exp(log_e), m, n)))
    upper = float(np.max(log_g[1:] - p * log_e[:-1]))
    return max(upper, math.log(n / m) + (1.0 - p) * float(log_e[0]))


def select_horizon_subsampled(
    mu: float, L: float, *, initial_error: float, d: int, sensitivity: float, n: int, m: int,
    epsilon: float, max_horizon: int, alpha: float | None = None, method: str = "nag",
    c: float = 1.0, p: float = 1.0, first_stage_length: int | None = None,
    max_evaluations: int = 300, alloc_gap_tol: float = 1e-9, progress: bool = False,
) -> HorizonChoice:
    r"""Remark 4.1 with subsampling (:math:`m<n`) **[DERIVED]**: minimise the optimal (29)/(34).

    :math:`B(T)=a_{T,0}E_0+d\,V^\star(T)+\frac{\sigma_s^2}2\sum_ta_{T,t}`, where
    :math:`V^\star(T)` is the optimal value of (30) (:func:`optimal_noise`, :math:`O(T)` per
    horizon). (30) has no closed form with subsampling, but lower bounds do: the de-amplified
    budget :math:`g(e)=\ln(1+\frac nm(e^e-1))` obeys :math:`g(e)\le\kappa_pe^p` on
    :math:`[0,\epsilon]` (:math:`p=1`: :math:`\kappa_1=n/m`, concavity), and with that
    :math:`V^\star(T)\ge(\frac{S_1}{m\kappa_p})^2\epsilon^{-2p}
    (\sum_ta_{T,t}^{1/(2p+1)})^{2p+1}` (the :math:`m=n` optimum of Prop. 4.2 is :math:`p=1`).
    The largest of these over a few :math:`p` is computed for every horizon from prefix sums
    (:math:`O(T_{\max})`); :math:`B` is then evaluated in increasing order of the lower bound
    until the lower bound exceeds the best :math:`B` found (then the result is the exact
    minimiser over every :math:`T\le T_{\max}` up to the allocation's certificate) or
    ``max_evaluations`` are spent. ``bounds`` holds ``nan`` where :math:`B` was not evaluated.

    **Certificate [DERIVED]**: each evaluated :math:`V^\star(T)` comes with a proven lower
    bound (:func:`~.allocation.certify_allocation`: (30) is convex in the budgets, weak
    duality at the returned allocation; tightened to ``alloc_gap_tol``), so
    ``lower_bound`` :math:`=\min(\min_{T\text{ evaluated}}\underline B(T),
    \min_{T\text{ not evaluated}}\text{prefix bound})\le\min_TB(T)` and ``gap`` is
    ``bound / lower_bound - 1`` (a few ``1e-11`` where the search finished: rounding
    allowance). More ``max_evaluations`` evaluate a superset of the horizons in the same
    order, so the bound never increases and ``lower_bound`` never decreases.
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    E0 = float(check_nonnegative("initial_error", initial_error))
    d = check_int("d", d, minimum=1)
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    Tmax = check_max_horizon(max_horizon)
    budget = check_int("max_evaluations", max_evaluations, minimum=1)
    alloc_gap_tol = float(check_positive("alloc_gap_tol", alloc_gap_tol))
    s2 = subsampling_variance(S, n, m)
    full = _schedule(method, mu, L, Tmax, alpha=alpha, c=c, p=p,
                     first_stage_length=first_stage_length)
    # lower bound on log B(T) for every T (each term in log-space; -inf where it vanishes)
    qs = (1.0,) + tuple(1.0 / (2.0 * pw + 1.0) for pw in _POWERS)
    consts = [math.log(d) + 2.0 * (math.log(S) - math.log(m) - _log_power_constant(pw, m, n, eps))
              - 2.0 * pw * math.log(eps) for pw in _POWERS]
    log_E0 = math.log(E0) if E0 > 0 else -np.inf
    log_s2 = math.log(s2 / 2.0) if s2 > 0 else -np.inf
    log_lb = np.empty(Tmax)
    for start, log_a0, sums in _prefix_terms(full, mu, L, "paper", qs, progress=progress,
                                             desc="lower bounds of every horizon"):
        noise_lb = np.max([s_q / q + cst for s_q, q, cst in zip(sums[1:], qs[1:], consts)],
                          axis=0)
        fixed = np.logaddexp(log_a0 + log_E0, log_s2 + sums[0])
        log_lb[start:start + log_a0.size] = np.logaddexp(fixed, noise_lb)
    bounds = np.full(Tmax, np.nan)
    bias = np.full(Tmax, np.nan)
    noise = np.full(Tmax, np.nan)
    lower = math.inf  # proven: min over the evaluated T of a lower bound on B(T)

    def value(T: int) -> float:
        nonlocal lower
        w = error_weights(full.truncated(T), mu, L)
        al = optimal_noise(w, S, n, m, eps, gap_tol=alloc_gap_tol)
        bias[T - 1] = w.a0 * E0
        fixed = s2 / 2 * float(np.exp(logsumexp(w.log_a)))
        noise[T - 1] = d * al.value + fixed
        bounds[T - 1] = bias[T - 1] + noise[T - 1]
        # B(T) >= a_0 E0 + d OPT(30) + fixed, OPT(30) >= the allocation's certified lower value;
        # the prefix lower bound too (the max keeps refinement monotone)
        lower = min(lower, max(bias[T - 1] + d * al.lower_value + fixed,
                               math.exp(min(float(log_lb[T - 1]), LOG_FLOAT_MAX))))
        return float(bounds[T - 1])

    order = np.argsort(log_lb, kind="stable")  # most promising first; ties to the smaller T
    best = math.inf
    slack = math.log1p(-1e-9)  # the lower bound must beat the best by more than round-off
    with progress_bar(progress, total=budget, desc="horizons (optimal noise, subsampling)",
                      unit="T", lines=True) as bar:
        for count, i in enumerate(order):
            # every horizon not evaluated has B(T) >= exp(log_lb[i]) (sorted order)
            if not log_lb[i] + slack < math.log(best) or count == budget:
                lower = min(lower, math.exp(min(float(log_lb[i]), LOG_FLOAT_MAX)))
                break
            best = min(best, value(int(i) + 1))
            bar.update()
    k = int(np.nanargmin(bounds))
    bound = float(bounds[k])
    gap = 0.0 if lower >= bound else (math.inf if not lower > 0 else bound / lower - 1.0)
    return HorizonChoice(k + 1, bound, bounds, bias, noise, "paper", gap=gap,
                         lower_bound=float(lower))


@functools.lru_cache(maxsize=1)
def remark_4_1_theorem() -> Any:
    r"""(32) for constant-step DP-NAG with the optimal noise (31), as a theorem object.

    With :math:`q=1-\sqrt{\mu\alpha}` and :math:`a_{T,t}=q^{T-t}\alpha(1+\alpha L)` the sum is
    geometric:

    .. math:: E_T\le q^TE_0+\frac{dS_1^2}{n^2\epsilon^2}\,\alpha(1+\alpha L)
              \Big(\frac{1-q^{T/3}}{1-q^{1/3}}\Big)^3

    A :class:`~dpbounds.bounds.theorem.Lemma` with the hyper-parameter choice
    :math:`\alpha=1/L` (``.tuned()``). Symbols: ``T, E0, d, S1, n, eps, mu, L, alpha``.

    Example
    -------
    >>> thm = remark_4_1_theorem().tuned()  # alpha = 1/L
    >>> kw = dict(d=20, n=10**5, epsilon=1.0)
    >>> h = select_horizon(0.02, 5.1033, initial_error=10.0, sensitivity=40.0, max_horizon=500,
    ...                    **kw)
    >>> v = thm.evaluate(T=h.horizon, E0=10.0, d=20, S1=40.0, n=1e5, eps=1.0, mu=0.02, L=5.1033)
    >>> bool(abs(v / h.bound - 1) < 1e-10)
    True
    """
    import sympy as sp

    from dpbounds.bounds.theorem import Assumption, Lemma, sym

    T, E0, d, S, n, eps, mu, L, a = (sym(k) for k in ("T", "E0", "d", "S1", "n", "eps", "mu",
                                                       "L", "alpha"))
    q = 1 - sp.sqrt(mu * a)
    third = sp.Rational(1, 3)
    expr = q**T * E0 + d * S**2 / (n**2 * eps**2) * a * (1 + a * L) * (
        (1 - q ** (T * third)) / (1 - q**third)) ** 3
    return Lemma(
        name="kuru.remark_4_1.nag",
        quantity=r"\mathbb E F(x_T)-F^\ast",
        expr=expr,
        sources=(SOURCE_REMARK41, SOURCE_PROP42,
                 Source(KURU, "Theorem 4.1, eq. (29)", Provenance.VERBATIM)),
        assumptions=(Assumption("m = n (no subsampling), Laplace noise, basic composition"),
                     Assumption("alpha <= 1/L", a * L <= 1),
                     Assumption("mu <= L", mu <= L)),
        hyperparameters={"alpha": 1 / L},
        regime={"n": 1},
        description="geometric sum of a_{T,t}^{1/3} in closed form [DERIVED algebra]",
    )
