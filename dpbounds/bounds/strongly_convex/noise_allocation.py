r"""Optimal per-iteration Laplace noise for DP-NAG / DP-MASG (Kuru et al., Section 4.1).

Given the weights :math:`a_{T,t}` of (29)/(34), the budget-allocation problem (30) is

.. math:: \min_{b_1..b_T}\sum_{t=1}^Ta_{T,t}b_t^2\quad\text{s.t.}\quad
          \sum_{t=1}^T\varepsilon(S_1,b_t,n,m)=\epsilon,\qquad
          \varepsilon(S,b,n,m)=\ln\big[(e^{S/(bm)}-1)\tfrac mn+1\big]\ (11).

* :func:`optimal_noise_closed_form` -- Proposition 4.2 (:math:`m=n`):
  :math:`\epsilon_t=\epsilon\,a_{T,t}^{1/3}/\sum_ja_{T,j}^{1/3}`,
  :math:`b_t=\frac{\sum_ja_{T,j}^{1/3}}{a_{T,t}^{1/3}}\frac{S_1}{n\epsilon}` (31).
* :func:`optimal_noise` -- the general problem with subsampling (:math:`m<n`). In the budgets
  :math:`\epsilon_t` it is convex (:math:`b(\epsilon)^2=S^2/(m^2g(\epsilon)^2)` with
  :math:`g(\epsilon)=\ln(1+\frac nm(e^\epsilon-1))` concave), so the KKT conditions
  :math:`a_t\,\partial_\epsilon(-b^2)(\epsilon_t)=\lambda` characterise the optimum. They are
  solved by Newton's method in :math:`\log\epsilon_t` (vectorised over :math:`t`) inside a Newton
  iteration on :math:`\log\lambda`; for :math:`m=n` it reproduces (31).
* :func:`select_horizon` -- Remark 4.1: the horizon :math:`T\le T_{\max}` minimising (32)
  :math:`a_{T,0}E_0+\frac{dS_1^2}{n^2\epsilon^2}(\sum_ja_{T,j}^{1/3})^3`, for every
  :math:`T` at once with prefix log-sum-exps (:math:`O(T_{\max})`).

Everything is in log-space (``logsumexp``, ``log1p``/``expm1``): :math:`T=10^7` is fine.

**m vs n in the Laplace scale** (sheet §11.4): (27) prints :math:`b=S_1/(n\epsilon_0)`, (12)
prints :math:`b=S_1/(m\epsilon_0)`. Only (12) makes each step :math:`\epsilon/T`-DP through (11)
(the batch average of :math:`m` gradients moves by :math:`S_1/m`); (27)'s scale is :math:`m/n`
times too small when :math:`m<n`. The calibration here is (12) (via
:mod:`dpbounds.privacy.laplace`); :func:`laplace_scale_eq27_as_printed` keeps the printed one.

Example
-------
>>> from dpbounds.bounds.strongly_convex.nesterov import error_weights, nesterov_schedule
>>> from dpbounds.bounds.strongly_convex.noise_allocation import (
...     optimal_noise, optimal_noise_closed_form)
>>> w = error_weights(nesterov_schedule(0.05, 100), mu=1.0, L=20.0)
>>> cf = optimal_noise_closed_form(w, sensitivity=1.0, n=1000, epsilon=1.0)
>>> num = optimal_noise(w, sensitivity=1.0, n=1000, m=1000, epsilon=1.0)
>>> bool(abs(num.value / cf.value - 1) < 1e-10)
True
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpbounds._progress import progress_bar
from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.bounds.strongly_convex.gradient_noise import LOG_FLOAT_MAX, subsampling_variance
from dpbounds.bounds.strongly_convex.nesterov import (
    MAX_HORIZON,
    ErrorWeights,
    Schedule,
    error_weights,
    masg_schedule,
    nesterov_schedule,
)
from dpbounds.privacy.laplace import (
    deamplify_without_replacement,
    per_step_epsilon,
    subsampled_laplace_epsilon,
)
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "SOURCE_EQ30",
    "SOURCE_PROP42",
    "SOURCE_REMARK41",
    "Allocation",
    "MAX_HORIZON",
    "HorizonChoice",
    "laplace_scale_eq27_as_printed",
    "optimal_noise",
    "optimal_noise_closed_form",
    "remark_4_2_allocation",
    "select_horizon",
    "uniform_noise",
]

SOURCE_PROP42 = Source(KURU, "Proposition 4.2, eq. (31)", Provenance.VERBATIM, "case m = n")
SOURCE_EQ30 = Source(KURU, "eq. (30) with eq. (11)", Provenance.VERBATIM,
                     "numeric solution (KKT + Newton in log-space) is ours [DERIVED]")
SOURCE_REMARK41 = Source(KURU, "Remark 4.1, eq. (32)", Provenance.VERBATIM)

_NOISE_VALUE = "the noise term sum_t a_t b_t^2"


def _representable(log_value: float, epsilon: float, what: str) -> float:
    """``exp(log_value)``, or a ValueError naming ``epsilon`` when it overflows float64.

    A bound of ~1e308 says nothing; returning ``inf`` (or raising OverflowError deep inside)
    would hide that the budget is far too small for the problem.
    """
    if not log_value <= LOG_FLOAT_MAX:
        raise ValueError(
            f"epsilon={epsilon!r} is too small for this problem: {what} would be "
            f"exp({log_value:.6g}), beyond the float64 range (about 1.8e308); use a larger "
            "epsilon (or a larger n, a smaller sensitivity)")
    return math.exp(log_value)


@dataclass(frozen=True)
class Allocation:
    r"""Per-iteration budgets and Laplace scales with the noise part of the bound.

    Attributes
    ----------
    epsilons:
        :math:`\epsilon_t` (sum :math:`\le\epsilon`, basic composition).
    log_scales:
        :math:`\log b_t` (exact; ``scales = exp(log_scales)`` can overflow for weights below
        ~1e-900, where the optimum spends essentially no budget).
    value:
        :math:`\sum_ta_{T,t}b_t^2` (multiply by ``d`` for the noise term of (29)); always
        finite: the allocation functions raise ``ValueError`` naming ``epsilon`` when it would
        exceed the float64 range.
    log_value:
        Its logarithm.
    """

    epsilons: np.ndarray
    log_scales: np.ndarray
    value: float
    log_value: float
    method: str
    source: Source

    @property
    def scales(self) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.exp(self.log_scales)

    @property
    def total_epsilon(self) -> float:
        return float(np.sum(self.epsilons))


def _check_budget(sensitivity: Any, n: Any, m: Any, epsilon: Any) -> tuple[float, int, int, float]:
    S = float(check_positive("sensitivity", sensitivity))
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1, maximum=n)
    eps = float(check_positive("epsilon", epsilon))
    return S, n, m, eps


def _log_weights(weights: ErrorWeights | Any) -> np.ndarray:
    if isinstance(weights, ErrorWeights):
        return np.asarray(weights.log_a, dtype=float)
    a = np.atleast_1d(check_positive("weights", weights)).astype(float)
    return np.log(a)


def _without_zero_weights(solve: Any) -> Any:
    """Decorate an allocation: steps with weight a_t = 0 get no budget and an infinite scale.

    A zero weight is exact when a step contracts the error to 0 (mu alpha = 1, possible for
    mu = L): that step's noise never reaches the bound, so spending budget on it is waste
    (and log a_t = -inf would turn the log-space algebra into nan). ``value`` is unchanged.
    """

    @functools.wraps(solve)
    def wrapper(weights: ErrorWeights | Any, *args: Any, **kwargs: Any) -> Allocation:
        log_a = _log_weights(weights)
        pos = np.isfinite(log_a)
        if np.all(pos):
            return solve(weights, *args, **kwargs)
        reduced = ErrorWeights(0.0, log_a[pos], "reduced", SOURCE_EQ30)
        al = solve(reduced, *args, **kwargs)
        eps_t = np.zeros(log_a.size)
        eps_t[pos] = al.epsilons
        log_b = np.full(log_a.size, np.inf)
        log_b[pos] = al.log_scales
        return Allocation(eps_t, log_b, al.value, al.log_value, al.method, al.source)

    return wrapper


def laplace_scale_eq27_as_printed(sensitivity: float, epsilon: float, T: int, n: int,
                                  m: int) -> float:
    r"""DP-NAG's scale as printed in (27): :math:`b=S_1/(n\epsilon_0)`, :math:`\epsilon_0` of (13).

    Kept to reproduce the paper's text only. With :math:`m<n` each step is then
    :math:`\varepsilon(S_1,b,n,m)>\epsilon/T`: the run is **not** :math:`\epsilon`-DP. Use (12),
    :math:`b=S_1/(m\epsilon_0)` (:func:`uniform_noise`).
    """
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    T = check_int("T", T, minimum=1)
    eps0 = float(per_step_epsilon(eps, T, n, m))
    if not eps0 > 0:
        raise ValueError(f"epsilon={eps!r} is too small: the per-step budget epsilon/T (T={T}) "
                         "underflows to 0")
    with np.errstate(over="ignore"):
        scale = S / (float(n) * eps0)
    if not math.isfinite(scale):
        raise ValueError(f"epsilon={eps!r} is too small: the scale S_1/(n eps_0) overflows float64")
    return scale


def _never_overshoot(log_b: np.ndarray, S: float, n: int, m: int,
                     eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Raise the scales by a few ulps until eq. (11), summed, is <= eps in floating point.

    The budgets are recomputed from the final scales with the privacy module's eq. (11), so the
    reported ``epsilons`` are what the scales actually spend.
    """
    log_b = np.asarray(log_b, dtype=float)
    for k in range(64):
        with np.errstate(over="ignore"):
            b = np.exp(log_b)
        spent = np.zeros_like(b)
        # scales beyond 1e300 spend < 1e-290 each: below the float resolution of the total
        fin = b < 1e300
        spent[fin] = np.atleast_1d(subsampled_laplace_epsilon(S, b[fin], n, m))
        if float(np.sum(spent)) <= eps:
            return log_b, spent
        log_b = log_b + 2.0 ** (k - 50)
    raise RuntimeError("could not calibrate the scales below the budget")  # pragma: no cover


def uniform_noise(weights: ErrorWeights | Any, sensitivity: float, n: int, m: int,
                  epsilon: float) -> Allocation:
    r"""Uniform budget :math:`\epsilon/T` with the scale (12), :math:`b=S_1/(m\epsilon_0)`."""
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    log_a = _log_weights(weights)
    T = log_a.size
    eps0 = float(per_step_epsilon(eps, T, n, m))
    if not eps0 > 0:  # eps / T underflowed: the scale S/(m eps0) is not a number
        raise ValueError(f"epsilon={eps!r} is too small for this problem: the per-step budget "
                         f"epsilon/T (T={T}) underflows to 0")
    log_b, spent = _never_overshoot(np.full(T, math.log(S) - math.log(m) - math.log(eps0)),
                                    S, n, m, eps)
    log_value = float(logsumexp(log_a + 2 * log_b))
    return Allocation(spent, log_b, _representable(log_value, eps, _NOISE_VALUE), log_value,
                      "uniform (eq. 12-13)", Source(KURU, "Proposition 3.1, eqs. (12)-(13)",
                                                    Provenance.VERBATIM))


@_without_zero_weights
def optimal_noise_closed_form(weights: ErrorWeights | Any, sensitivity: float, n: int,
                              epsilon: float) -> Allocation:
    r"""Proposition 4.2 (:math:`m=n`), in log-space.

    .. math:: \epsilon_t=\epsilon\frac{a_{T,t}^{1/3}}{\sum_ja_{T,j}^{1/3}},\quad
              b_t=\frac{S_1}{n\epsilon_t},\quad
              \sum_ta_{T,t}b_t^2=\Big(\frac{S_1}{n\epsilon}\Big)^2\Big(\sum_ta_{T,t}^{1/3}\Big)^3

    Parameters
    ----------
    weights :
        :class:`~dpbounds.bounds.strongly_convex.nesterov.ErrorWeights` or positive weights
        :math:`a_{T,t}`.
    sensitivity, n, epsilon :
        :math:`S_1`, data-set size (= batch size) and total budget.
    """
    S, n, _, eps = _check_budget(sensitivity, n, n, epsilon)
    log_a = _log_weights(weights)
    lse = float(logsumexp(log_a / 3.0))
    log_eps_t = math.log(eps) + log_a / 3.0 - lse + math.log1p(-4e-16)  # never overshoot
    log_b, eps_t = _never_overshoot(math.log(S / n) - log_eps_t, S, n, n, eps)
    log_value = float(logsumexp(log_a + 2.0 * log_b))
    value = _representable(log_value, eps, _NOISE_VALUE)
    return Allocation(eps_t, log_b, value, log_value, "closed form (Prop. 4.2)",
                      SOURCE_PROP42)


@_without_zero_weights
def remark_4_2_allocation(weights: ErrorWeights | Any, sensitivity: float, n: int, m: int,
                          epsilon: float) -> Allocation:
    r"""Remark 4.2's heuristic for :math:`m<n`: the budgets of (31), scales by inverting (11).

    :math:`\epsilon_t\propto a_{T,t}^{1/3}` as if :math:`\varepsilon(S,b,n,m)\approx S/(bn)`, then
    :math:`b_t=S_1/(m\,g(\epsilon_t))` so each step spends exactly :math:`\epsilon_t` (privacy
    kept); compare with :func:`optimal_noise`.
    """
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    log_a = _log_weights(weights)
    s = math.log(eps) + log_a / 3.0 - float(logsumexp(log_a / 3.0))
    log_g, _, _ = _log_g_terms(s, m, n)
    log_b, eps_t = _never_overshoot(math.log(S / m) - log_g, S, n, m, eps)
    log_value = float(logsumexp(log_a + 2.0 * log_b))
    value = _representable(log_value, eps, _NOISE_VALUE)
    return Allocation(eps_t, log_b, value, log_value, "heuristic (Remark 4.2)",
                      Source(KURU, "Remark 4.2", Provenance.VERBATIM,
                             "budgets of (31) used with m < n"))


# ----------------------------------------------------------------------------- general (30)
def _log_g_terms(s: np.ndarray, m: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""For :math:`\epsilon=e^s`: :math:`\log g`, :math:`\log g'`, :math:`\epsilon\,h'(\epsilon)`.

    :math:`g(\epsilon)=\ln(1+r(e^\epsilon-1))` (de-amplification, :math:`r=n/m`),
    :math:`g'=1/(1-u)`, :math:`u=(1-1/r)e^{-\epsilon}`, :math:`h=\log g'-3\log g`.
    """
    r = n / m
    eps = np.exp(s)
    small = s + math.log(r) < math.log(1e-8)  # r eps < 1e-8: the series below is exact
    log_g = np.empty_like(s)
    # series g = r eps (1 + (1 - r) eps / 2 + O(r^2 eps^2)): exact in log-space for tiny budgets
    log_g[small] = math.log(r) + s[small] + np.log1p((1.0 - r) * eps[small] / 2.0)
    big = ~small
    if np.any(big):
        log_g[big] = np.log(np.atleast_1d(deamplify_without_replacement(eps[big], m, n)))
    one_minus_u = 1.0 / r - (1.0 - 1.0 / r) * np.expm1(-eps)
    log_gp = -np.log(one_minus_u)
    u = (1.0 - 1.0 / r) * np.exp(-eps)
    eps_hp = -eps * u / one_minus_u - 3.0 * np.exp(s + log_gp - log_g)
    return log_g, log_gp, eps_hp


@_without_zero_weights
def optimal_noise(weights: ErrorWeights | Any, sensitivity: float, n: int, m: int,
                  epsilon: float, *, rtol: float = 1e-13, max_iter: int = 100) -> Allocation:
    r"""Numeric solution of (30) with subsampling without replacement (any :math:`m\le n`).

    KKT in the budgets: :math:`\log a_t+\log\frac{2S^2}{m^2}+\log g'(\epsilon_t)-3\log g(\epsilon_t)
    =\log\lambda`; Newton in :math:`s_t=\log\epsilon_t` (all :math:`t` at once) inside Newton on
    :math:`\log\lambda` for :math:`\sum_t\epsilon_t=\epsilon`, started from Prop. 4.2. The final
    scales are :math:`b_t=S_1/(m\,g(\epsilon_t))` (inversion of (11)); the budgets are shrunk by a
    few ulps so that :math:`\sum_t\varepsilon(S_1,b_t,n,m)\le\epsilon`.

    Returns
    -------
    Allocation
    """
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    log_a = _log_weights(weights)
    const = math.log(2.0) + 2.0 * (math.log(S) - math.log(m))
    # start: Prop. 4.2 with n (exact when r = 1, first order in eps when r > 1)
    lse = float(logsumexp(log_a / 3.0))
    s = math.log(eps) + log_a / 3.0 - lse
    log_lam = math.log(2.0) + 2.0 * (math.log(S) - math.log(n)) + 3.0 * lse - 3.0 * math.log(eps)
    log_sum = float(logsumexp(s))
    for _outer in range(max_iter):
        for _inner in range(40):  # Newton in s_t for the current lambda
            log_g, log_gp, eps_hp = _log_g_terms(s, m, n)
            phi = log_a + const + log_gp - 3.0 * log_g - log_lam
            step = phi / eps_hp
            s = s - np.clip(step, -5.0, 5.0)
            # phi carries rounding of order eps_mach * |log a_t|: stop at that level
            if np.max(np.abs(step) / (1.0 + np.abs(log_a))) < 1e-14:
                break
        log_g, log_gp, eps_hp = _log_g_terms(s, m, n)
        log_sum = float(logsumexp(s))
        Phi = log_sum - math.log(eps)
        if abs(Phi) < rtol:
            break
        # d log(sum eps_t) / d log(lambda) = sum_t (eps_t / sum eps) / (eps_t h'(eps_t))
        dPhi = float(np.sum(np.exp(s - log_sum) / eps_hp))
        dl = -Phi / dPhi
        log_lam += dl
        s = s + dl / eps_hp  # tangent predictor: ds_t / dlog(lambda) = 1 / (eps_t h'(eps_t))
    # rescale onto the budget (a relative change below rtol) and shrink a few ulps
    s = s + (math.log(eps) - log_sum) + math.log1p(-4e-16)
    log_g, _, _ = _log_g_terms(s, m, n)
    log_b, eps_t = _never_overshoot(math.log(S / m) - log_g, S, n, m, eps)
    log_value = float(logsumexp(log_a + 2.0 * log_b))
    return Allocation(eps_t, log_b, _representable(log_value, eps, _NOISE_VALUE), log_value,
                      "numeric (KKT, eq. 30)" if m < n else "numeric (KKT, m = n)", SOURCE_EQ30)


def check_allocation_privacy(allocation: Allocation, sensitivity: float, n: int, m: int) -> float:
    r"""Total :math:`\sum_t\varepsilon(S_1,b_t,n,m)` of an allocation, by eq. (11)."""
    b = allocation.scales
    finite = b < 1e300  # larger scales spend < 1e-290 each
    return float(np.sum(subsampled_laplace_epsilon(sensitivity, b[finite], n, m)))


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
    with progress_bar(progress and T > _CHUNK, total=T, desc=desc, unit="T",
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
    return HorizonChoice(k + 1, bound, total, bias, noise, convention)


def _check_horizon_inputs(mu: Any, L: Any, initial_error: Any, d: Any, sensitivity: Any,
                          n: Any, epsilon: Any, max_horizon: Any) -> tuple:
    """The inputs of the full-batch horizon searches, checked: ``(mu, L, E0, d, S, n, eps,
    Tmax)``."""
    S, n, _, eps = _check_budget(sensitivity, n, n, epsilon)
    return (float(check_positive("mu", mu)), float(check_positive("L", L)),
            float(check_nonnegative("initial_error", initial_error)),
            check_int("d", d, minimum=1), S, n, eps, check_max_horizon(max_horizon))


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
    max_evaluations: int = 300, progress: bool = False,
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
    minimiser over every :math:`T\le T_{\max}`, ``gap = 0``) or ``max_evaluations`` are spent
    (then ``gap`` is the proven relative distance to the minimum). ``bounds`` holds ``nan``
    where :math:`B` was not evaluated.
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    E0 = float(check_nonnegative("initial_error", initial_error))
    d = check_int("d", d, minimum=1)
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    Tmax = check_max_horizon(max_horizon)
    budget = check_int("max_evaluations", max_evaluations, minimum=1)
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

    def value(T: int) -> float:
        w = error_weights(full.truncated(T), mu, L)
        al = optimal_noise(w, S, n, m, eps)
        bias[T - 1] = w.a0 * E0
        noise[T - 1] = d * al.value + s2 / 2 * float(np.exp(logsumexp(w.log_a)))
        bounds[T - 1] = bias[T - 1] + noise[T - 1]
        return float(bounds[T - 1])

    order = np.argsort(log_lb, kind="stable")  # most promising first; ties to the smaller T
    best = math.inf
    slack = math.log1p(-1e-9)  # the lower bound must beat the best by more than round-off
    gap = 0.0
    with progress_bar(progress, total=budget, desc="horizons (optimal noise, subsampling)",
                      unit="T") as bar:
        for count, i in enumerate(order):
            if not log_lb[i] + slack < math.log(best):
                break
            if count == budget:  # out of evaluations: what is left is at least exp(log_lb[i])
                gap = max(0.0, math.expm1(math.log(best) - float(log_lb[i])))
                break
            best = min(best, value(int(i) + 1))
            bar.update()
    k = int(np.nanargmin(bounds))
    return HorizonChoice(k + 1, float(bounds[k]), bounds, bias, noise, "paper", gap=gap)


def noise_allocation_for(
    schedule: Schedule, mu: float, L: float, *, sensitivity: float, n: int, m: int,
    epsilon: float,
) -> Allocation:
    """Convenience: weights of ``schedule`` then the optimal allocation (closed form if m = n)."""
    w = error_weights(schedule, mu, L)
    if m == n:
        return optimal_noise_closed_form(w, sensitivity, n, epsilon)
    return optimal_noise(w, sensitivity, n, m, epsilon)


__all__ += ["check_allocation_privacy", "check_max_horizon", "naive_select_horizon",
            "noise_allocation_for", "select_horizon_subsampled"]


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


__all__ += ["remark_4_1_theorem"]
