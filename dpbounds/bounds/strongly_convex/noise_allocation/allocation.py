r"""The per-iteration Laplace scales :math:`b_t` that minimise the noise term under a budget.

Kuru et al., Section 4.1, problem (30) (**VERBATIM**; the numeric solution is ours, **DERIVED**):

* :func:`optimal_noise_closed_form` -- Proposition 4.2 (:math:`m=n`):
  :math:`\epsilon_t=\epsilon\,a_{T,t}^{1/3}/\sum_ja_{T,j}^{1/3}`,
  :math:`b_t=\frac{\sum_ja_{T,j}^{1/3}}{a_{T,t}^{1/3}}\frac{S_1}{n\epsilon}` (31).
* :func:`optimal_noise` -- the general problem with subsampling (:math:`m<n`). In the budgets
  :math:`\epsilon_t` it is convex (:math:`b(\epsilon)^2=S^2/(m^2g(\epsilon)^2)` with
  :math:`g(\epsilon)=\ln(1+\frac nm(e^\epsilon-1))` concave), so the KKT conditions
  :math:`a_t\,\partial_\epsilon(-b^2)(\epsilon_t)=\lambda` characterise the optimum. They are
  solved by Newton's method in :math:`\log\epsilon_t` (vectorised over :math:`t`) inside a Newton
  iteration on :math:`\log\lambda`; for :math:`m=n` it reproduces (31). The result carries a
  proven lower bound on the optimum and its relative ``certified_gap``.
* :func:`certify_allocation` -- that lower bound for any allocation (**DERIVED**: convexity
  gives the Frank-Wolfe gap / weak duality at the allocation's own multiplier).

Everything is in log-space (``logsumexp``, ``log1p``/``expm1``): :math:`T=10^7` is fine.

**m vs n in the Laplace scale** (sheet §11.4): (27) prints :math:`b=S_1/(n\epsilon_0)`, (12)
prints :math:`b=S_1/(m\epsilon_0)`. Only (12) makes each step :math:`\epsilon/T`-DP through (11)
(the batch average of :math:`m` gradients moves by :math:`S_1/m`); (27)'s scale is :math:`m/n`
times too small when :math:`m<n`. The calibration here is (12) (via
:mod:`dpbounds.privacy.laplace`); :func:`laplace_scale_eq27_as_printed` keeps the printed one.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpbounds._validation import check_int, check_positive
from dpbounds.bounds.strongly_convex.gradient_noise import LOG_FLOAT_MAX
from dpbounds.bounds.strongly_convex.nesterov import ErrorWeights, Schedule, error_weights
from dpbounds.privacy._util import log1p_times_expm1
from dpbounds.privacy.laplace import (
    deamplify_without_replacement,
    per_step_epsilon,
    subsampled_laplace_epsilon,
)
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "SOURCE_EQ30",
    "SOURCE_PROP42",
    "Allocation",
    "laplace_scale_eq27_as_printed",
    "optimal_noise",
    "optimal_noise_closed_form",
    "remark_4_2_allocation",
    "uniform_noise",
    "check_allocation_privacy",
    "noise_allocation_for",
]
# certify_allocation is public but kept out of __all__: the package's export list is frozen
# (tests/test_module_split.py)


SOURCE_PROP42 = Source(KURU, "Proposition 4.2, eq. (31)", Provenance.VERBATIM, "case m = n")


SOURCE_EQ30 = Source(KURU, "eq. (30) with eq. (11)", Provenance.VERBATIM,
                     "numeric solution (KKT + Newton in log-space) is ours [DERIVED]")


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
    lower_value:
        A proven lower bound on the optimum of (30) (:func:`certify_allocation`, weak duality
        at this allocation); ``nan`` where not computed (uniform, heuristic).
    certified_gap:
        ``value / lower_value - 1``: ``value <= (1 + certified_gap) * OPT(30)``.
    """

    epsilons: np.ndarray
    log_scales: np.ndarray
    value: float
    log_value: float
    method: str
    source: Source
    lower_value: float = float("nan")
    certified_gap: float = float("nan")

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


def _lse(x: np.ndarray) -> float:
    """``log(sum(exp(x)))`` of a 1-d array: scipy's ``logsumexp`` without its overhead (it
    dominated the per-iterate cost of :func:`optimal_noise`)."""
    top = float(np.max(x))
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.sum(np.exp(x - top))))


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
        return Allocation(eps_t, log_b, al.value, al.log_value, al.method, al.source,
                          al.lower_value, al.certified_gap)

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
    sensitivity : float
        :math:`L_1` sensitivity :math:`S_1`.
    n : int
        Data-set size (= batch size).
    epsilon : float
        Total budget.
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


#: relative rounding allowance of the certificate: the log-space terms are accurate to a few
#: hundred ulps; the sums over T steps to about T ulps (pairwise summation: far less)
_ROUNDING = 1e-11


def certify_allocation(weights: ErrorWeights | Any, allocation: Allocation, sensitivity: float,
                       n: int, m: int, epsilon: float) -> tuple[float, float]:
    r"""A proven lower bound on the optimum of (30) from any allocation, and its relative gap.

    **[DERIVED]** In the budgets :math:`e_t` (scale :math:`b_t=S_1/(m\,g(e_t))` by inverting
    (11), :math:`g(e)=\ln(1+r(e^e-1))`, :math:`r=n/m`), (30) is
    :math:`\mathrm{OPT}=\min\{f(e)=\sum_ta_tS_1^2/(m^2g(e_t)^2):e\ge0,\sum_te_t\le\epsilon\}`
    (``<=`` changes nothing: :math:`f` decreases in each :math:`e_t`). :math:`g` is increasing
    and concave with :math:`g(0)=0`, so :math:`1/g^2` is convex
    (:math:`(g^{-2})''=6g'^2/g^4-2g''/g^3>0`) and :math:`f` is convex. For any :math:`e>0`
    (feasible or not) convexity gives :math:`f(e')\ge f(e)+\nabla f(e)\cdot(e'-e)`; the
    minimum of the right side over the feasible set is at a vertex :math:`\epsilon\,\mathbf
    1_j`, so with :math:`\lambda_t=-\partial_tf(e)=2v_tg'(e_t)/g(e_t)` (:math:`v_t=a_tb_t^2`)
    and :math:`\Lambda=\max_t\lambda_t`:

    .. math:: \mathrm{OPT}\ge f(e)-\Big(\epsilon\Lambda-\sum_t\lambda_te_t\Big).

    This is the Frank-Wolfe gap, equivalently the Lagrangian dual of (30) at the multiplier
    :math:`\Lambda` bounded below by the tangents at :math:`e` (weak duality: no convexity
    needed there, only for the tangents); it is 0 exactly at the KKT point
    (:math:`\lambda_t=\Lambda` for all :math:`t`, :math:`\sum_te_t=\epsilon`). Everything is in
    log-space, with :math:`g(e_t)=S_1/(mb_t)` and :math:`\log g'(e_t)=\log r+e_t-g(e_t)`
    (exact: :math:`e^{g}=1+r(e^{e}-1)`). A budget below the float range counts as 0 (a lower
    bound on :math:`e_t`: the bound stays valid); rounding is covered by an allowance of
    ``1e-11 + T * 2**-52`` (relative).

    Returns
    -------
    (lower, certified_gap):
        ``lower <= OPT(30)`` and ``allocation.value <= (1 + certified_gap) * OPT(30)``
        (``lower = 0``, ``certified_gap = inf`` when the bound is vacuous).
    """
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    log_a = _log_weights(weights)
    log_b = np.asarray(allocation.log_scales, dtype=float)
    if log_b.shape != log_a.shape:
        raise ValueError(f"allocation has {log_b.size} scales but the weights {log_a.size} steps")
    rel = _certified_shortfall(log_a, log_b, S, n, m, eps)
    if not rel < 1.0:
        return 0.0, math.inf
    return allocation.value * (1.0 - rel), float(1.0 / (1.0 - rel) - 1.0)


def _certified_shortfall(log_a: np.ndarray, log_b: np.ndarray, S: float, n: int, m: int,
                         eps: float) -> float:
    """``(value - lower) / value`` of :func:`certify_allocation` (scale-free: no underflow)."""
    pos = np.isfinite(log_a)  # zero weights: no term in f, no gradient (their budget: waste)
    log_a, log_b = log_a[pos], log_b[pos]
    if log_a.size == 0:
        return 0.0
    log_v = log_a + 2.0 * log_b
    log_value = _lse(log_v)
    log_gt = math.log(S / m) - log_b
    with np.errstate(under="ignore"):
        g = np.exp(log_gt)
    e = np.atleast_1d(log1p_times_expm1(g, m / n))  # the budget each scale spends, eq. (11)
    log_lam = math.log(2.0) + log_v + (math.log(n / m) + e - g) - log_gt - log_value
    log_Lam = float(np.max(log_lam))
    # eps Lambda - sum lam_t e_t = Lambda [sum e_t (1 - lam_t / Lambda) + (eps - sum e_t)]:
    # nonnegative terms, no cancellation, no overflow (e_t = 0 below the float range: a lower
    # bound on the budget it spends, so the gap only grows)
    with np.errstate(under="ignore"):
        bracket = float(np.sum(e * -np.expm1(log_lam - log_Lam))) + (eps - math.fsum(e))
    gap = math.exp(min(log_Lam + math.log(bracket), 1.0)) if bracket > 0 else 0.0
    rel = gap + _ROUNDING + log_a.size * 2.0 ** -52
    return rel if math.isfinite(rel) else math.inf


def _feasible(s: np.ndarray, log_a: np.ndarray, S: float, n: int, m: int,
              eps: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Budgets ``exp(s)`` rescaled onto ``eps`` (less a few ulps): ``(log_b, spent, log_value)``."""
    s = s + (math.log(eps) - _lse(s)) + math.log1p(-4e-16)
    log_g, _, _ = _log_g_terms(s, m, n)
    log_b, spent = _never_overshoot(math.log(S / m) - log_g, S, n, m, eps)
    return log_b, spent, _lse(log_a + 2.0 * log_b)


def _kkt_bisection(log_a: np.ndarray, const: float, log_lam: float, m: int, n: int, eps: float,
                   iters: int) -> np.ndarray:
    r"""The KKT budgets :math:`\log\epsilon_t` by bisection: slow, but it always converges.

    For a fixed :math:`\lambda` the KKT residual of step :math:`t` decreases in
    :math:`\epsilon_t` (:math:`g'/g^3` decreases: :math:`g` increases, :math:`g'` decreases), and
    :math:`\sum_t\epsilon_t(\lambda)` decreases in :math:`\lambda`: nested bisections
    (``iters`` halvings each) in :math:`\log\epsilon_t` on :math:`[\log\epsilon-745,
    \log\epsilon]` and in :math:`\log\lambda` on a bracket grown from ``log_lam``.
    """
    top = math.log(eps)

    def budgets(ll: float) -> np.ndarray:
        lo, hi = np.full(log_a.size, top - 745.0), np.full(log_a.size, top)
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            log_g, log_gp, _ = _log_g_terms(mid, m, n)
            more = log_a + const + log_gp - 3.0 * log_g > ll  # the optimum spends more
            lo, hi = np.where(more, mid, lo), np.where(more, hi, mid)
        return 0.5 * (lo + hi)

    def excess(ll: float) -> float:
        return _lse(budgets(ll)) - top

    lo, hi, step = log_lam, log_lam, 1.0
    while excess(lo) < 0 and step < 1e4:  # spends too little: a smaller lambda
        lo, step = lo - step, 2 * step
    step = 1.0
    while excess(hi) > 0 and step < 1e4:
        hi, step = hi + step, 2 * step
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
    return budgets(hi)


@_without_zero_weights
def optimal_noise(weights: ErrorWeights | Any, sensitivity: float, n: int, m: int,
                  epsilon: float, *, rtol: float = 1e-13, max_iter: int = 100,
                  gap_tol: float = 1e-9) -> Allocation:
    r"""Numeric solution of (30) with subsampling without replacement (any :math:`m\le n`).

    KKT in the budgets: :math:`\log a_t+\log\frac{2S^2}{m^2}+\log g'(\epsilon_t)-3\log
    g(\epsilon_t)=\log\lambda`; Newton in :math:`s_t=\log\epsilon_t` (all :math:`t` at once)
    inside Newton on :math:`\log\lambda` for :math:`\sum_t\epsilon_t=\epsilon` (stopped at
    relative budget error ``rtol`` or after ``max_iter`` steps), started from Prop. 4.2. Each
    Newton iterate, rescaled onto the budget, is a feasible allocation: the one of smallest
    value is returned, and the largest lower bound certified at any of them is reported (so a
    smaller ``rtol`` or a larger ``max_iter`` never gives a worse value, nor a larger gap).
    The scales are :math:`b_t=S_1/(m\,g(\epsilon_t))` (inversion of (11)); the budgets are
    shrunk by a few ulps so that :math:`\sum_t\varepsilon(S_1,b_t,n,m)\le\epsilon`.

    **Certificate [DERIVED]**: (30) is convex in the budgets, and :func:`certify_allocation`
    gives a proven lower bound on its optimum at the returned allocation (weak duality / the
    Frank-Wolfe gap), reported as ``lower_value`` and the relative ``certified_gap``. Where
    that gap exceeds ``gap_tol`` (Newton not converged), the search tightens: nested
    bisections on the same KKT conditions, with twice the halvings each round (up to 3
    rounds), keeping the best allocation and the largest lower bound. The reported gap is
    what was reached (in practice about ``1e-11``, the rounding allowance).

    Returns
    -------
    Allocation
    """
    S, n, m, eps = _check_budget(sensitivity, n, m, epsilon)
    rtol = float(check_positive("rtol", rtol))
    max_iter = check_int("max_iter", max_iter, minimum=1)
    gap_tol = float(check_positive("gap_tol", gap_tol))
    log_a = _log_weights(weights)
    const = math.log(2.0) + 2.0 * (math.log(S) - math.log(m))
    # start: Prop. 4.2 with n (exact when r = 1, first order in eps when r > 1)
    lse = _lse(log_a / 3.0)
    s = math.log(eps) + log_a / 3.0 - lse
    log_lam = math.log(2.0) + 2.0 * (math.log(S) - math.log(n)) + 3.0 * lse - 3.0 * math.log(eps)
    method = "numeric (KKT, eq. 30)" if m < n else "numeric (KKT, m = n)"

    def allocation(c: tuple[np.ndarray, np.ndarray, float]) -> Allocation:
        return Allocation(c[1], c[0], _representable(c[2], eps, _NOISE_VALUE), c[2], method,
                          SOURCE_EQ30)

    def keep(cand, best, log_lower):
        # the smallest value and, separately, the largest certified lower bound over every
        # candidate: both are monotone in the work done (the value is second order in the KKT
        # residual, the certificate first order: the two need not come from one iterate);
        # in log-space (a value below 1e-308 is still certified)
        rel = _certified_shortfall(log_a, cand[0], S, n, m, eps)
        if rel < 1.0:
            log_lower = max(log_lower, cand[2] + math.log1p(-rel))
        if best is None or cand[2] < best[2]:
            best = cand
        return best, log_lower

    best: tuple[np.ndarray, np.ndarray, float] | None = None
    lower = -math.inf  # log of the lower bound
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
        log_sum = _lse(s)
        Phi = log_sum - math.log(eps)
        if np.all(np.isfinite(s)):  # each iterate is a feasible allocation: keep the best
            best, lower = keep(_feasible(s, log_a, S, n, m, eps), best, lower)
        if abs(Phi) < rtol:
            break
        # d log(sum eps_t) / d log(lambda) = sum_t (eps_t / sum eps) / (eps_t h'(eps_t))
        dPhi = float(np.sum(np.exp(s - log_sum) / eps_hp))
        dl = -Phi / dPhi
        log_lam += dl
        s = s + dl / eps_hp  # tangent predictor: ds_t / dlog(lambda) = 1 / (eps_t h'(eps_t))
    def gap_of(best, log_lower) -> float:
        return math.inf if best is None else max(math.expm1(best[2] - log_lower), 0.0)

    iters = 60
    for _round in range(3):  # tighten until the certified gap is small enough
        if gap_of(best, lower) <= gap_tol:
            break
        ll = log_lam if math.isfinite(log_lam) else 0.0
        best, lower = keep(_feasible(_kkt_bisection(log_a, const, ll, m, n, eps, iters), log_a,
                                     S, n, m, eps), best, lower)
        iters *= 2
    assert best is not None
    result = allocation(best)  # ValueError naming epsilon where the value overflows
    return replace(result, lower_value=math.exp(min(lower, best[2])),
                   certified_gap=float(gap_of(best, lower)))


def check_allocation_privacy(allocation: Allocation, sensitivity: float, n: int, m: int) -> float:
    r"""Total :math:`\sum_t\varepsilon(S_1,b_t,n,m)` of an allocation, by eq. (11)."""
    b = allocation.scales
    finite = b < 1e300  # larger scales spend < 1e-290 each
    return float(np.sum(subsampled_laplace_epsilon(sensitivity, b[finite], n, m)))


def noise_allocation_for(
    schedule: Schedule, mu: float, L: float, *, sensitivity: float, n: int, m: int,
    epsilon: float,
) -> Allocation:
    """Convenience: weights of ``schedule`` then the optimal allocation (closed form if m = n)."""
    w = error_weights(schedule, mu, L)
    if m == n:
        return optimal_noise_closed_form(w, sensitivity, n, epsilon)
    return optimal_noise(w, sensitivity, n, m, epsilon)
