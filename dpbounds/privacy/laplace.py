r"""Laplace mechanism, basic composition and amplification by subsampling without replacement.

This is the privacy accounting of Kuru et al.'s DP-SHB / DP-NAG / DP-MASG: each iteration adds
i.i.d. :math:`\mathrm{Laplace}(b)` noise (scale :math:`b`, variance :math:`2b^2`) to a mini-batch
*average* gradient over :math:`m` of the :math:`n` samples, drawn without replacement, under the
**replace-one** neighbouring relation. The :math:`L_1` sensitivity function :math:`S = S_1(x)`
bounds the change of one per-sample gradient, so the mini-batch average changes by at most
:math:`S/m`, and one step is :math:`S/(bm)`-DP on the mini-batch (Thm A.1), amplified to

.. math:: \varepsilon(S, b, n, m) = \ln\Big[\big(e^{S/(bm)} - 1\big)\frac{m}{n} + 1\Big]
   \qquad\text{(Kuru et al. eq. (11), Thm A.3)}

and composed over the iterations by summing (Thm A.2). With :math:`m = n` eq. (11) reduces to
:math:`S/(bn)`.

Every function works in log-space (``log1p``/``expm1``), so tiny and huge budgets neither
overflow nor lose precision, and accepts NumPy arrays for the continuous arguments. Sizes and
step counts (``n``, ``m``, ``steps``) are integers up to ``MAX_COUNT`` = 10^15
(``ValueError`` beyond).

Examples
--------
>>> from dpbounds.privacy.laplace import laplace_scale_for_epsilon, subsampled_laplace_epsilon
>>> b = laplace_scale_for_epsilon(sensitivity=2.0, epsilon=0.01, n=1000, m=50)
>>> round(subsampled_laplace_epsilon(2.0, b, n=1000, m=50), 12)
0.01
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbounds._validation import MAX_COUNT, check_int, check_nonnegative, check_positive
from dpbounds.privacy._util import (
    as_output,
    finite_or_raise,
    guard_module,
    log1p_times_expm1,
    nudge_up,
)
from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "SOURCE_EQ11",
    "SOURCE_EQ13",
    "SOURCE_INVERSION",
    "SOURCE_THM_A3",
    "amplify_without_replacement",
    "basic_composition",
    "deamplify_without_replacement",
    "laplace_epsilon",
    "laplace_scale_for_epsilon",
    "laplace_scales_for_budgets",
    "laplace_variance",
    "per_step_epsilon",
    "split_budget",
    "subsampled_laplace_epsilon",
]

SOURCE_EQ11 = Source(KURU, "eq. (11)", Provenance.VERBATIM, "Laplace + subsampling w/o replacement")
SOURCE_EQ13 = Source(KURU, "Proposition 3.1, eqs. (12)-(13)", Provenance.VERBATIM)
SOURCE_THM_A3 = Source(
    KURU, "Theorem A.3", Provenance.VERBATIM, "Balle, Barthe, Gaboardi 2018, Thm 9 (replace-one)"
)
SOURCE_INVERSION = Source(
    KURU, "inversion of eq. (11)", Provenance.DERIVED, "b_t for a non-uniform budget eps_t"
)


#: Largest number of steps :func:`split_budget` splits into (an array of 8 bytes a step).
MAX_SPLIT_STEPS = 10**8


def _check_sizes(n: Any, m: Any) -> tuple[int, int]:
    n = check_int("n", n, minimum=1, maximum=MAX_COUNT)
    m = check_int("m", m, minimum=1, maximum=MAX_COUNT)
    if m > n:
        raise ValueError(f"m must be an integer in [1, n={n}] (batch size <= n), got {m}")
    return n, m


def laplace_variance(scale: Any) -> Any:
    r"""Variance :math:`2b^2` of :math:`\mathrm{Laplace}(b)` (per coordinate)."""
    scale = check_positive("scale", scale)
    return as_output(finite_or_raise(2.0 * np.asarray(scale) ** 2, "scale"))


def laplace_epsilon(sensitivity: Any, scale: Any) -> Any:
    r"""Pure-DP :math:`\varepsilon = \Delta_1 / b` of the Laplace mechanism (Kuru et al. Thm A.1).

    ``sensitivity`` is the :math:`L_1` sensitivity of the released vector, ``scale`` the
    Laplace scale :math:`b` (not the standard deviation :math:`\sqrt2 b`).
    """
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    scale = check_positive("scale", scale)
    with np.errstate(over="ignore"):
        out = np.asarray(sensitivity) / np.asarray(scale)
    return as_output(finite_or_raise(out, "sensitivity/scale"))


def amplify_without_replacement(epsilon: Any, m: int, n: int) -> Any:
    r"""Amplification by subsampling without replacement (Kuru et al. Thm A.3).

    An :math:`\varepsilon`-DP mechanism run on a uniformly random subset of :math:`m` of the
    :math:`n` items is :math:`\varepsilon'`-DP (replace-one) with

    .. math:: \varepsilon' = \ln\big(1 + \tfrac{m}{n}(e^{\varepsilon} - 1)\big).

    Parameters
    ----------
    epsilon : float or array, >= 0
        Budget of the mechanism on the subsample.
    m : int
        Subsample size, ``1 <= m <= n``.
    n : int
        Dataset size, ``n >= 1``.
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    n, m = _check_sizes(n, m)
    return as_output(log1p_times_expm1(epsilon, m / n))


def deamplify_without_replacement(epsilon: Any, m: int, n: int) -> Any:
    r"""Inverse of :func:`amplify_without_replacement`.

    Returns the budget :math:`\varepsilon_0 = \ln\big(1 + \tfrac{n}{m}(e^{\varepsilon}-1)\big)`
    a mechanism may spend on the subsample so that the amplified budget is ``epsilon``.
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    n, m = _check_sizes(n, m)
    return as_output(log1p_times_expm1(epsilon, n / m))


def subsampled_laplace_epsilon(sensitivity: Any, scale: Any, n: int, m: int) -> Any:
    r"""Per-step privacy loss :math:`\varepsilon(S, b, n, m)` of Kuru et al. eq. (11).

    Laplace noise of scale ``scale`` on a mini-batch average of ``m`` gradients whose
    :math:`L_1` sensitivity function is ``sensitivity`` (so the average moves by ``S/m``),
    the mini-batch drawn without replacement from ``n`` samples, replace-one.

    .. math:: \varepsilon(S,b,n,m) = \ln\Big[\big(e^{S/(bm)}-1\big)\frac mn + 1\Big],
       \qquad \varepsilon(S,b,n,n) = \frac{S}{bn}.

    Examples
    --------
    >>> subsampled_laplace_epsilon(1.0, 0.01, n=100, m=100)  # m = n: S/(b n)
    1.0
    """
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    scale = check_positive("scale", scale)
    n, m = _check_sizes(n, m)
    with np.errstate(over="ignore"):
        x = np.asarray(sensitivity) / (np.asarray(scale) * m)
    finite_or_raise(x, "sensitivity/scale")
    return as_output(log1p_times_expm1(x, m / n))


def laplace_scale_for_epsilon(sensitivity: Any, epsilon: Any, n: int, m: int) -> Any:
    r"""Laplace scale for a per-step budget: inversion of eq. (11) **[DERIVED]**.

    .. math:: b = \frac{S}{m \ln\big[1 + \frac nm (e^{\varepsilon}-1)\big]}

    The result is moved up by a few ulps, so ``subsampled_laplace_epsilon(S, b, n, m) <= epsilon``
    holds in floating point too (never overshoots). With ``epsilon = eps_0``-style budgets this
    is Kuru et al. eq. (12) :math:`b = S/(m\epsilon_0)`.
    """
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    epsilon = check_positive("epsilon", epsilon)
    n, m = _check_sizes(n, m)
    eps0 = log1p_times_expm1(epsilon, n / m)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        denom = m * np.asarray(eps0, dtype=float)
        # m eps_0 overflows at eps ~ 1e308: S / inf read 0, nudged to 2e-323 (fuzz round 6);
        # dividing in two steps there keeps every other value's bits as they were
        b = nudge_up(np.where(np.isinf(denom), np.asarray(sensitivity) / m / eps0,
                              np.asarray(sensitivity) / denom))
    return as_output(finite_or_raise(b, "sensitivity/epsilon"))


def per_step_epsilon(epsilon: Any, steps: int, n: int, m: int) -> Any:
    r""":math:`\epsilon_0` of Kuru et al. eq. (13): :math:`\ln[1 + (e^{\epsilon/T}-1)\,n/m]`.

    The budget on the mini-batch for which ``steps`` amplified steps compose (basic composition)
    to ``epsilon``; the Laplace scale is then :math:`b = S/(m\epsilon_0)` (eq. (12)).
    """
    epsilon = check_positive("epsilon", epsilon)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_COUNT)
    n, m = _check_sizes(n, m)
    return as_output(log1p_times_expm1(np.asarray(epsilon) / steps, n / m))


def basic_composition(epsilons: Any) -> float:
    r"""Basic composition (Kuru et al. Thm A.2): the total budget :math:`\sum_t \epsilon_t`."""
    eps = np.atleast_1d(check_nonnegative("epsilons", epsilons))
    return float(np.sum(eps))


def split_budget(epsilon: float, steps: int | None = None, weights: Any = None) -> np.ndarray:
    r"""Per-iteration budgets :math:`\epsilon_t` that sum to ``epsilon`` (basic composition).

    Either ``steps`` equal shares :math:`\epsilon/T` (at most ``MAX_SPLIT_STEPS`` = 10^8: the
    result is an array of ``steps`` floats), or shares proportional to positive ``weights``
    (a non-empty 1-d array of at most ``MAX_SPLIT_STEPS`` entries, e.g. Kuru et al.'s
    cube-root allocation, Prop. 4.2). The shares are shrunk until their float sum does not
    exceed ``epsilon``; every share is positive, or ``ValueError`` says which weight is too
    small for its share to be a float (weights spanning more than ~1e300).
    """
    epsilon = check_positive("epsilon", epsilon)
    if weights is None:
        if steps is None:
            raise ValueError("steps must be given when weights is None")
        steps = check_int("steps", steps, minimum=1, maximum=MAX_SPLIT_STEPS)
        w = np.ones(steps)
    else:
        w = np.asarray(check_positive("weights", weights), dtype=float)
        if w.ndim > 1 or w.size == 0 or w.size > MAX_SPLIT_STEPS:
            raise ValueError(f"weights must be a non-empty 1-d array of at most "
                             f"{MAX_SPLIT_STEPS:.0e} positive numbers, got shape {w.shape}")
        w = np.atleast_1d(w)
        if steps is not None and check_int("steps", steps, maximum=MAX_SPLIT_STEPS) != w.size:
            raise ValueError(f"steps must equal len(weights)={w.size}, got {steps}")
    given = w
    w = w / np.max(w)  # in (0, 1]: the sum below cannot overflow (1e308 + 1e308 did)
    shares = epsilon * (w / np.sum(w))
    if not np.all(shares > 0):
        i = int(np.argmin(shares))
        raise ValueError(f"weights[{i}]={given[i]:.3g} is too small against the "
                         f"largest weight for its share of epsilon={epsilon:.3g} to be a "
                         f"positive float; weights must span less than ~1e300")
    # rounding guard: shrink until the float sum is <= epsilon (steps of 1, 2, 4, ... ulps)
    shrink = 2.0**-52
    while np.sum(shares) > epsilon:
        shares = shares * (1.0 - shrink)
        shrink *= 2.0
    return shares


def laplace_scales_for_budgets(sensitivity: Any, epsilons: Any, n: int, m: int) -> np.ndarray:
    r"""Laplace scales :math:`b_t` for per-iteration budgets :math:`\epsilon_t` (vectorised).

    Each :math:`b_t` is :func:`laplace_scale_for_epsilon` at :math:`\epsilon_t`; by basic
    composition the run is :math:`\sum_t\epsilon_t`-DP.
    """
    return np.atleast_1d(laplace_scale_for_epsilon(sensitivity, epsilons, n, m))


guard_module(globals(), __all__)
