r"""Generic noise calibration: invert any accountant for the noise level at a target (ε, δ).

:func:`calibrate` never overshoots: it brackets the noise parameter geometrically, then
bisects on its logarithm and always returns the **upper** end of the bracket, whose ε was
verified by the accountant to be at most the target. Every noise it returns has been evaluated
by the accountant (the closed form, the bracket's end, the round-up), so the ε it reports is at
most the target whatever the accountant's shape; it is the *smallest* such noise (to ``rtol``)
when the accountant's ε is non-increasing in the noise (true of the exact ε of every mechanism
here: more noise is post-processing of less; a bound such as the without-replacement RDP need
only be near-monotone, see :func:`~dpbounds.privacy.rdp.without_replacement_gaussian_rdp`).

Examples
--------
>>> from dpbounds.privacy.calibrate import calibrate
>>> from dpbounds.privacy.mechanisms import SubsampledGaussianMechanism
>>> sigma = calibrate(lambda s: SubsampledGaussianMechanism(s, 0.01), 1.0, 1e-5, count=1000)
>>> from dpbounds.privacy.accountants import RdpAccountant
>>> RdpAccountant().compose(SubsampledGaussianMechanism(sigma, 0.01), 1000).get_epsilon(1e-5) <= 1
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpbounds._validation import (
    MAX_COUNT,
    check_choice,
    check_closed_interval,
    check_int,
    check_positive,
    check_probability,
    check_scalar,
    check_scalars,
)
from dpbounds.privacy._util import guard_module
from dpbounds.privacy.accountants import Accountant, PldAccountant, RdpAccountant, make_accountant
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    Neighbouring,
    Sampling,
    SubsampledGaussianMechanism,
    SubsampledLaplaceMechanism,
    TreeAggregationMechanism,
)
from dpbounds.privacy.rdp import _SAMPLING, DEFAULT_ORDERS, _check_orders

__all__ = ["calibrate", "calibrate_result", "calibrate_to_risk", "calibration_bracket",
           "epsilon_for_noise_multiplier", "epsilon_of", "noise_multiplier_bracket",
           "noise_multiplier_for_epsilon"]


def epsilon_of(
    mechanism: Mechanism,
    delta: float | None,
    accountant: Any = "rdp",
    count: int = 1,
    neighbouring: Any = None,
) -> float:
    """ε of ``count`` runs of ``mechanism`` under a fresh ``accountant`` (name, instance or
    factory)."""
    if delta is not None:
        check_scalar("delta", delta)
    acc = make_accountant(accountant, neighbouring)
    acc.compose(mechanism, count)
    if acc.name == "pure":
        return acc.get_epsilon(None)
    return acc.get_epsilon(delta)


class CalibrationResult(tuple):
    """``(noise, epsilon_attained)``; ``noise`` is the calibrated parameter."""

    __slots__ = ()

    def __new__(cls, noise: float, epsilon: float):
        return super().__new__(cls, (noise, epsilon))

    @property
    def noise(self) -> float:
        return self[0]

    @property
    def epsilon(self) -> float:
        return self[1]


def calibrate_result(
    mechanism_for: Callable[[float], Mechanism],
    epsilon: float,
    delta: float | None,
    accountant: Any = "rdp",
    count: int = 1,
    *,
    neighbouring: Any = None,
    initial: float | None = None,
    rtol: float = 1e-6,
    max_noise: float = 1e15,
    bracket: float = 4.0,
    closed_form: float | None = None,
    round_up: bool = False,
) -> CalibrationResult:
    """Like :func:`calibrate` but also returns the ε the returned noise attains."""
    return _calibrate(mechanism_for, epsilon, delta, accountant, count, neighbouring, initial,
                      rtol, max_noise, bracket, closed_form, round_up, None, {})


class _Settled(Exception):
    """Raised inside a search when its ``settled(lo, hi)`` holds (see
    :func:`calibration_bracket`)."""

    def __init__(self, lo: float, hi: float) -> None:
        super().__init__(lo, hi)
        self.lo, self.hi = lo, hi


def calibration_bracket(
    mechanism_for: Callable[[float], Mechanism],
    epsilon: float,
    delta: float | None,
    accountant: Any = "rdp",
    count: int = 1,
    *,
    settled: Callable[[float, float], bool],
    neighbouring: Any = None,
    initial: float | None = None,
    rtol: float = 1e-6,
    max_noise: float = 1e15,
    bracket: float = 4.0,
    closed_form: float | None = None,
    round_up: bool = False,
    memo: dict[float, float] | None = None,
) -> tuple[float, float]:
    """An interval ``(lo, hi)`` that holds what :func:`calibrate` returns for the same
    arguments, found by the same search, stopped as soon as ``settled(lo, hi)`` is true.

    For a caller that needs a decision about the calibrated noise rather than the noise
    itself, e.g. whether a bound that rises with the noise is below a threshold: when the
    decision is the same at both ends of the interval (and monotone in the noise), it is the
    decision at :func:`calibrate`'s answer, without the evaluations that narrow the bracket to
    ``rtol`` (most of a calibration: a without-replacement RDP accountant evaluates ~13
    noises, 7 ms each, and a verify study's planner asks this of dozens of points). The
    search is deterministic, so every bracket it holds contains its final answer: that
    answer lies in ``(lo, hi]`` of each bracket, and ``round_up`` multiplies it by at most
    ``1 + rtol`` (so ``hi`` is widened by that factor before ``settled`` sees it). When the
    search ends unsettled (or takes the closed form), ``lo == hi`` is the answer itself.

    ``memo``: a dict of the accountant's ε by noise, filled here; pass the same one to calls
    with the same arguments (the search is the same, so a later call replays the evaluations
    an earlier one made: deciding at several points that share a calibration costs about one).

    Examples
    --------
    >>> from dpbounds.privacy.mechanisms import GaussianMechanism
    >>> fam = lambda s: GaussianMechanism(s, 1.0)
    >>> lo, hi = calibration_bracket(fam, 1.0, 1e-5, "rdp", 10,
    ...                              settled=lambda lo, hi: hi < 100.0)
    >>> lo <= calibrate(fam, 1.0, 1e-5, "rdp", 10) <= hi < 100.0
    True
    """
    if not callable(settled):
        raise ValueError("settled must be a callable (lo, hi) -> bool, got "
                         f"{type(settled).__name__}")
    if memo is not None and not isinstance(memo, dict):
        raise ValueError(f"memo must be a dict (noise -> epsilon) or None, got "
                         f"{type(memo).__name__}")
    try:
        x = _calibrate(mechanism_for, epsilon, delta, accountant, count, neighbouring, initial,
                       rtol, max_noise, bracket, closed_form, round_up, settled,
                       {} if memo is None else memo)
    except _Settled as stop:
        return stop.lo, stop.hi
    return x.noise, x.noise


def _calibrate(mechanism_for: Callable[[float], Mechanism], epsilon: float,
               delta: float | None, accountant: Any, count: int, neighbouring: Any,
               initial: float | None, rtol: float, max_noise: float, bracket: float,
               closed_form: float | None, round_up: bool,
               settled: Callable[[float, float], bool] | None, cache: dict[float, float]
               ) -> CalibrationResult:
    """:func:`calibrate_result`; with ``settled``, :class:`_Settled` is raised at the first
    bracket ``(lo, hi (1 + rtol if round_up))`` where it holds. ``cache``: ε by noise (empty,
    or filled by a call with the same arguments)."""
    epsilon = check_positive("epsilon", epsilon)
    if delta is not None:
        delta = check_probability("delta", delta)
    count = check_int("count", count, minimum=1, maximum=MAX_COUNT)
    rtol = check_positive("rtol", rtol)
    if not callable(mechanism_for):
        raise ValueError("mechanism_for must be a callable noise -> Mechanism")
    if initial is None:  # the mechanism's own scale: noise = sensitivity
        initial = getattr(mechanism_for(1.0), "sensitivity", 1.0) or 1.0
    initial = check_positive("initial", initial)
    if isinstance(accountant, Accountant):
        accountant = accountant.spawn()
    if accountant == "pure" or getattr(accountant, "name", None) == "pure":
        delta = None
    elif delta is None:
        raise ValueError("delta must lie in (0, 1) for an approximate-DP accountant, got None")

    bracket = check_positive("bracket", bracket)
    if bracket <= 1.0:
        raise ValueError(f"bracket must be > 1, got {bracket!r}")

    acc = make_accountant(accountant, neighbouring)

    def eps(x: float) -> float:
        if x not in cache:
            try:
                cache[x] = epsilon_of(mechanism_for(x), delta, accountant, count, neighbouring)
            except ValueError:
                if not cache:  # the first evaluation: a real input error
                    raise
                # the accountant cannot certify this (smaller) noise: it does not meet the target
                cache[x] = math.inf
        return cache[x]

    # fast path: a closed form (the caller's, else the accountant's) is the exact inverse, so
    # once the accountant verifies it (nudged up past round-off if needed) it is the answer
    hint = closed_form
    if hint is None:
        try:
            hint = acc.closed_form_noise(mechanism_for, epsilon, delta, count)
        except ValueError:  # no closed form here: the search below reports real errors
            hint = None
    if hint is not None and math.isfinite(hint) and hint > 0:
        x = float(hint)
        step = 2.0**-50
        for _ in range(40):
            e = eps(x)
            if e <= epsilon:
                return CalibrationResult(x, e)
            excess = e / epsilon - 1.0
            if 0.0 < excess < 2.0**-20:  # round-off: start the nudges at its size, not 2^-50
                step = max(step, 2.0 ** math.ceil(math.log2(excess)))
            x = x * (1.0 + step)
            step *= 2.0
        initial = x

    check = None
    if settled is not None:
        widen = 1.0 + rtol if round_up else 1.0

        def check(lo: float, hi: float) -> None:
            if settled(lo, hi * widen):
                raise _Settled(lo, hi * widen)
    hi = _search(eps, epsilon, "epsilon", initial, bracket, max_noise, rtol, check)
    if round_up and eps(hi * (1.0 + rtol)) <= epsilon:
        # hi (1 + rtol) is at least what any bracketing to rtol returns; it is kept only once
        # verified: an accountant's epsilon need not fall with more noise (issue 19: a
        # without-replacement RDP read 0.0890 at x1.0 and 0.0841 at x0.99), so an unverified
        # round-up could read above the target; otherwise hi, verified, is returned
        hi = hi * (1.0 + rtol)
    return CalibrationResult(hi, eps(hi))


def _search(value: Callable[[float], float], target: float, name: str, initial: float,
            bracket: float, max_noise: float, rtol: float,
            check: Callable[[float, float], None] | None = None) -> float:
    """The smallest noise (to ``rtol``) whose ``value`` (non-increasing in the noise, e.g. an
    accountant's epsilon) is at most ``target``: the upper end of the final bracket, whose
    value was evaluated to be at most ``target``; ``name`` names the target in errors.
    ``check(lo, hi)`` sees every bracket (and may raise to stop the search)."""
    # bracket the target, galloping (the step factor squares after each step, up to 1e16), so
    # a target many orders of magnitude away takes a few evaluations, not hundreds
    step, lo, hi = bracket, None, initial
    while value(hi) > target:
        if hi >= max_noise:
            raise ValueError(
                f"{name}={target!r} is out of reach: even noise {max_noise:g} gives "
                f"{name}={value(hi):.4g} under this accountant"
            )
        lo, hi = hi, min(hi * step, max_noise)
        step = min(step * step, 1e16)
    if lo is None:
        lo = hi / step
        while value(lo) <= target:
            step = min(step * step, 1e16)
            hi, lo = lo, lo / step
            if lo < 1e-300:
                return hi
    return _shrink_bracket(value, target, lo, hi, rtol, check)


def _shrink_bracket(eps: Callable[[float], float], target: float, lo: float, hi: float,
                    rtol: float, check: Callable[[float, float], None] | None = None
                    ) -> float:
    """Shrink ``[lo, hi]`` (``eps(lo) > target >= eps(hi)``, ``eps`` non-increasing) until
    ``hi / lo - 1 <= rtol`` and return ``hi``, the upper end, whose epsilon was evaluated to be
    at most ``target``.

    Illinois steps (regula falsi on ``log eps`` against ``log noise``, nearly linear for every
    mechanism here, halving the value kept at a stale end), with bisection whenever two steps
    in a row fail to halve the bracket or a value is 0 or infinite: typically 3-6 evaluations
    from a factor-4 bracket instead of ~20 for plain bisection.
    """

    def gap(x: float) -> float:
        e = eps(x)
        return math.inf if e == math.inf else (math.log(e / target) if e > 0 else -math.inf)

    g_lo, g_hi = gap(lo), gap(hi)
    side, stalled = 0, 0
    tol = math.log1p(rtol)
    while hi / lo - 1.0 > rtol:
        if check is not None:
            check(lo, hi)
        a, b = math.log(lo), math.log(hi)
        x = 0.5 * (a + b)
        if stalled < 2 and math.isfinite(g_lo) and math.isfinite(g_hi) and g_lo > g_hi:
            secant = (a * g_hi - b * g_lo) / (g_hi - g_lo)
            x = min(max(secant, a + 0.4 * tol), b - 0.4 * tol)
        mid = math.exp(x)
        if not lo < mid < hi:
            break  # the bracket is a few ulps wide
        g_mid = gap(mid)
        if g_mid <= 0:
            hi, g_hi = mid, g_mid
            if side == -1:
                g_lo *= 0.5
            side = -1
        else:
            lo, g_lo = mid, g_mid
            if side == 1:
                g_hi *= 0.5
            side = 1
        stalled = stalled + 1 if math.log(hi / lo) > 0.5 * (b - a) else 0
        if stalled > 2:
            stalled = 0
    return hi


def calibrate(
    mechanism_for: Callable[[float], Mechanism],
    epsilon: float,
    delta: float | None,
    accountant: Any = "rdp",
    count: int = 1,
    *,
    neighbouring: Any = None,
    initial: float | None = None,
    rtol: float = 1e-6,
    max_noise: float = 1e15,
    bracket: float = 4.0,
    closed_form: float | None = None,
    round_up: bool = False,
) -> float:
    r"""Smallest noise parameter (up to ``rtol``) whose ε under ``accountant`` is at most
    ``epsilon`` after ``count`` runs — never overshoots.

    Parameters
    ----------
    mechanism_for : callable
        Maps the noise parameter (Gaussian std :math:`\sigma`, Laplace scale :math:`b`) to a
        mechanism, e.g. ``lambda s: SubsampledGaussianMechanism(s, q)``.
    epsilon : float
        Target epsilon.
    delta : float
        Target delta; ignored (may be ``None``) for the pure-DP accountant.
    accountant : str, Accountant or callable
        ``'rdp'``, ``'zcdp'``, ``'pld'``, ``'pure'``, an accountant (its settings are reused,
        its state is not) or a factory.
    count : int
        Number of runs (steps) of the mechanism, at most ``MAX_COUNT`` = 10^15 (10^9 for PLD).
    neighbouring : optional
        Relation of the accountant when ``accountant`` is a name; ``None``: that accountant's
        default, which is **not** every mechanism's: ``'pure'`` and ``'basic'`` are
        replace-one (Kuru et al.), ``'rdp'``, ``'zcdp'`` and ``'pld'`` add/remove. A mechanism
        of the other relation is converted (an add/remove Laplace of sensitivity S is a
        replace-one one of 2S: ``calibrate(LaplaceMechanism, 1, None, 'pure', count=10)``
        gives b = 20, the replace-one answer); give ``neighbouring`` to account it under its
        own (b = 10 with ``neighbouring='add_remove'``).
    rtol : float
        Relative width of the final bracket (default 1e-6; use ~1e-4 with PLD for speed).
    initial : float
        The noise the search starts at (default: the mechanism's sensitivity, i.e. noise
        multiplier 1, so the search scales with the query).
    bracket : float
        The factor the search steps by (default 4), squared after every step, until the
        target is bracketed; with
        a good guess (e.g. another accountant's answer) a small factor such as 1.25 saves
        evaluations of a costly accountant.
        Noise levels below the first one evaluated at which the accountant refuses to
        certify (a ``ValueError``, e.g. the PLD grid is out of reach) count as not meeting
        the target.
    closed_form : float, optional
        A closed-form answer (e.g. an allocation's own scale factor ``1.0``); without it the
        accountant's :meth:`~dpbounds.privacy.accountants.Accountant.closed_form_noise` is
        tried (zCDP: Gaussian / tree aggregation; PLD: one analytic Gaussian). Either is the
        fast path: returned once the accountant verifies it (nudged up by a few ulps when
        round-off makes it overshoot), so closed forms and search give one route.
    round_up : bool
        Return the searched noise times ``1 + rtol`` when the accountant verifies it: never
        below the answer of any other bracketing to ``rtol`` (e.g. the plain bisection this
        routine replaced), at a cost of at most ``rtol`` relative noise. Where it does not
        verify (an accountant whose ε is not monotone in the noise), the searched noise,
        verified, is returned: the ε returned is never above the target.

    Returns
    -------
    float
        The noise parameter; the accountant certifies :math:`\varepsilon' \le` ``epsilon``.
    """
    return calibrate_result(mechanism_for, epsilon, delta, accountant, count,
                            neighbouring=neighbouring, initial=initial, rtol=rtol,
                            max_noise=max_noise, bracket=bracket,
                            closed_form=closed_form, round_up=round_up).noise


def calibrate_to_risk(
    mechanism_for: Callable[[float], Any],
    tpr: float,
    fpr: float,
    count: int = 1,
    *,
    neighbouring: Any = Neighbouring.ADD_REMOVE,
    initial: float | None = None,
    rtol: float = 1e-4,
    max_noise: float = 1e6,
    bracket: float = 4.0,
    **options: Any,
) -> float:
    r"""Smallest noise (up to ``rtol``) at which no membership attack reaches a true-positive
    rate above ``tpr`` at false-positive rate ``fpr`` — never overshoots.

    The attack's TPR is the pessimistic trade-off of the composed ledger, the worse of its two
    directions (:meth:`~dpbounds.privacy.ledger.PrivacyLedger.tradeoff`, from the pessimistic
    PLD: an upper bound on the best attack's TPR), so the returned noise was evaluated to give
    TPR :math:`\le` ``tpr`` at ``fpr``. The search is :func:`calibrate`'s (galloping bracket,
    then Illinois steps on the logarithms, the upper end returned); the answer is the smallest
    such noise when the TPR falls with more noise (post-processing, for the exact curve).

    DERIVED (Dong, Roth & Su 2022, Def. 2.7 and Cor. 3.3): for ``count`` Gaussian releases of
    sensitivity :math:`\Delta` the curve is exactly :math:`\mu`-GDP with
    :math:`\mu = \sqrt{count}\,\Delta/\sigma`, TPR :math:`=\Phi(\Phi^{-1}(\alpha)+\mu)`,
    so the answer is :math:`\sigma = \sqrt{count}\,\Delta/(\Phi^{-1}(t)-\Phi^{-1}(\alpha))`
    up to the PLD's discretisation (its oracle in the tests). The same target is riskcal's
    ``find_noise_multiplier_for_err_rates(alpha=fpr, beta=1 - tpr, ...)`` (Kulynych et al.
    2024) for DP-SGD.

    Parameters
    ----------
    mechanism_for : callable
        Maps the noise parameter to a mechanism (composed ``count`` times) or to a
        :class:`~dpbounds.privacy.ledger.PrivacyLedger` (used as it is; ``count`` must be 1),
        e.g. ``lambda z: SubsampledGaussianMechanism(z, q)``.
    tpr : float
        Largest true-positive rate allowed, in ``(fpr, 1)``.
    fpr : float
        False-positive rate at which it is read, in ``(0, 1)``.
    count : int
        Number of runs of the mechanism (at most 10^9, the PLD accountant's limit).
    neighbouring : optional
        Relation of the ledger built from a mechanism (default add/remove).
    initial : float, optional
        The noise the search starts at (default: the mechanism's sensitivity).
    rtol : float
        Relative width of the final bracket (default 1e-4: each step builds a PLD).
    max_noise : float
        Largest noise tried; a target out of reach below it raises.
    bracket : float
        The factor the search steps by (default 4), squared after every step.
    **options
        Passed to the PLD accountant (e.g. ``value_discretization_interval``).

    Returns
    -------
    float
        The noise; its pessimistic TPR at ``fpr`` is at most ``tpr``.

    Examples
    --------
    >>> from dpbounds.privacy.mechanisms import GaussianMechanism
    >>> sigma = calibrate_to_risk(lambda s: GaussianMechanism(s), 0.1, 0.01)
    >>> round(sigma, 3)   # exact: 1 / (Phi^-1(0.1) - Phi^-1(0.01)) = 0.95712
    0.957
    """
    from dpbounds.privacy.ledger import PrivacyLedger  # the ledger composes accountants

    fpr = check_closed_interval("fpr", fpr, 0.0, 1.0)
    tpr = check_closed_interval("tpr", tpr, 0.0, 1.0)
    if not 0.0 < fpr < 1.0:
        raise ValueError(f"fpr must lie in (0, 1), got {fpr!r}")
    if not fpr < tpr < 1.0:
        raise ValueError(
            f"tpr must lie in (fpr, 1) = ({fpr!r}, 1), got {tpr!r}: an attack with TPR <= FPR "
            "is no better than a coin flip, which no finite noise guarantees, and TPR 1 is "
            "allowed without noise")
    count = check_int("count", count, minimum=1, maximum=MAX_COUNT)
    rtol = check_positive("rtol", rtol)
    max_noise = check_positive("max_noise", max_noise)
    bracket = check_positive("bracket", bracket)
    if bracket <= 1.0:
        raise ValueError(f"bracket must be > 1, got {bracket!r}")
    if not callable(mechanism_for):
        raise ValueError("mechanism_for must be a callable noise -> Mechanism or PrivacyLedger")
    neighbouring = Neighbouring.coerce(neighbouring)

    def ledger_for(x: float) -> PrivacyLedger:
        made = mechanism_for(x)
        if isinstance(made, PrivacyLedger):
            if count != 1:
                raise ValueError(f"count must be 1 when mechanism_for returns a PrivacyLedger "
                                 f"(it is composed already), got {count}")
            return made
        if not isinstance(made, Mechanism):
            raise ValueError(f"mechanism_for must return a Mechanism or a PrivacyLedger, got "
                             f"{type(made).__name__}")
        ledger = PrivacyLedger(neighbouring)
        ledger.record(made, count)
        return ledger

    if initial is None:
        initial = getattr(mechanism_for(1.0), "sensitivity", 1.0) or 1.0
    initial = check_positive("initial", initial)
    cache: dict[float, float] = {}
    grid = np.array([fpr])

    def risk(x: float) -> float:
        if x not in cache:
            try:
                acc = ledger_for(x).accountant("pld", pessimistic=True, **options)
                cache[x] = float(np.max(acc.tradeoff(grid)))  # type: ignore[attr-defined]
            except ValueError:
                if not cache:  # the first evaluation: a real input error
                    raise
                # the PLD cannot represent this (smaller) noise: it does not meet the target
                cache[x] = math.inf
        return cache[x]

    try:
        return _search(risk, tpr, "tpr", initial, bracket, max_noise, rtol)
    except ValueError as exc:
        floor = cache.get(max_noise, math.nan)
        # at the largest noise an attack is nearly blind (its TPR ~ fpr); a pessimistic PLD
        # curve far above that is the PLD's truncation floor, not the mechanism (fuzz round
        # 16: 1e-30 at fpr 1e-32 "out of reach", where noise 3 already meets it)
        if "out of reach" in str(exc) and math.isfinite(floor) and floor > 10.0 * fpr:
            raise ValueError(
                f"tpr={tpr!r} at fpr={fpr!r} is below what the PLD accountant resolves: its "
                f"pessimistic attack curve reads tpr {floor:.3g} there even at noise "
                f"{max_noise:g}, where an attack is nearly blind (its truncation floor); use "
                "a larger tpr and fpr") from None
        raise


def _mechanism_factory(kind: str, **params: Any) -> Callable[[float], Mechanism]:
    """Helpers used by the CLI table: a one-parameter family of a standard mechanism."""
    if kind == "gaussian":
        return lambda s: GaussianMechanism(s, **params)
    if kind == "subsampled_gaussian":
        return lambda s: SubsampledGaussianMechanism(s, **params)
    if kind == "tree":
        return lambda s: TreeAggregationMechanism(s, **params)
    if kind == "laplace":
        return lambda b: LaplaceMechanism(b, **params)
    if kind == "subsampled_laplace":
        return lambda b: SubsampledLaplaceMechanism(b, **params)
    raise ValueError(f"kind must be a known mechanism family, got {kind!r}")


# The subsampled-Gaussian conveniences: objects (mechanism, accountant, calibration) over the
# RDP formulas, so they live here, above dpbounds.privacy.rdp (which imports no object).
_SGM_ACCOUNTANTS = ("rdp", "pld")


def _check_sgm(sampling_rate: Any, steps: Any, sampling: Any, accountant: Any
               ) -> tuple[float, int, str, str]:
    """The checked ``(q, steps, sampling, accountant)`` of the two functions below."""
    q = check_closed_interval("sampling_rate", sampling_rate, 0.0, 1.0)
    if q == 0.0:
        raise ValueError("sampling_rate must lie in (0, 1], got 0.0")
    steps = check_int("steps", steps, minimum=1, maximum=MAX_COUNT)
    sampling = check_choice("sampling", sampling, _SAMPLING)
    accountant = check_choice("accountant", accountant, _SGM_ACCOUNTANTS)
    return q, steps, sampling, accountant


def epsilon_for_noise_multiplier(
    noise_multiplier: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    sampling: str = "poisson",
    accountant: str = "rdp",
    *,
    orders: Any = DEFAULT_ORDERS,
    method: str = "improved",
) -> float:
    r""":math:`\varepsilon` at ``delta`` of ``steps`` subsampled Gaussian steps.

    ``accountant="rdp"``: RDP composition and the optimal order (``method`` picks the
    conversion). ``accountant="pld"``: :class:`~dpbounds.privacy.accountants.PldAccountant`
    (``dp_accounting``'s PLDs, pessimistic, on a grid sized from the mechanism; sampling
    without replacement through the symmetric pair of
    :func:`dpbounds.privacy._pld.symmetrise`). ``steps`` is at most
    ``MAX_COUNT`` = 10^15 (10^9 for PLD).
    """
    z = check_positive("noise_multiplier", noise_multiplier)
    delta = check_probability("delta", delta)
    q, steps, sampling, accountant = _check_sgm(sampling_rate, steps, sampling, accountant)
    return float(epsilon_of(_sgm(q, sampling)(z), delta,
                            _sgm_accountant(accountant, sampling, orders, method), steps))


def _sgm(q: float, sampling: str) -> Any:
    """The family ``z -> SubsampledGaussianMechanism(z, q)`` (unit sensitivity under the
    scheme's natural relation)."""
    return lambda z: SubsampledGaussianMechanism(z, q, sampling=Sampling.coerce(sampling))


def _sgm_accountant(accountant: str, sampling: str, orders: Any, method: str) -> Any:
    """The accountant the two functions below share (relation: the scheme's natural one)."""
    natural = Sampling.coerce(sampling).natural_neighbouring
    if accountant == "pld":
        return PldAccountant(natural)
    orders = orders if orders is DEFAULT_ORDERS else _check_orders(orders)
    return RdpAccountant(natural, orders, check_choice("method", method, ("improved", "mironov")))


def noise_multiplier_for_epsilon(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    sampling: str = "poisson",
    accountant: str = "rdp",
    *,
    orders: Any = DEFAULT_ORDERS,
    method: str = "improved",
    rtol: float | None = None,
) -> float:
    r"""Smallest noise multiplier (std / sensitivity) whose :math:`\varepsilon` is at most
    ``epsilon`` under the chosen accountant — conservative by construction.

    :func:`~dpbounds.privacy.calibrate.calibrate` on
    :class:`~dpbounds.privacy.mechanisms.SubsampledGaussianMechanism` (unit sensitivity under
    the scheme's relation) with the :class:`~dpbounds.privacy.accountants.RdpAccountant` or
    :class:`~dpbounds.privacy.accountants.PldAccountant`, to ``rtol`` (default ``1e-6`` for
    RDP, ``1e-4`` for PLD), rounded up by ``rtol`` (``round_up``).

    Examples
    --------
    >>> z = noise_multiplier_for_epsilon(1.0, 1e-5, 0.01, 1000)
    >>> epsilon_for_noise_multiplier(z, 1e-5, 0.01, 1000) <= 1.0
    True
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(epsilon=epsilon, delta=delta, sampling_rate=sampling_rate, steps=steps, rtol=rtol)
    args, kwargs = _sgm_calibration(epsilon, delta, sampling_rate, steps, sampling, accountant,
                                    orders, method, rtol)
    # the one calibration routine (never overshoots), on the accountant's epsilon
    return calibrate(*args, **kwargs)


def noise_multiplier_bracket(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    sampling: str = "poisson",
    accountant: str = "rdp",
    *,
    settled: Callable[[float, float], bool],
    orders: Any = DEFAULT_ORDERS,
    method: str = "improved",
    rtol: float | None = None,
) -> tuple[float, float]:
    r"""An interval ``(lo, hi)`` that holds :func:`noise_multiplier_for_epsilon`'s answer for
    the same arguments: its search (:func:`calibration_bracket`), stopped once
    ``settled(lo, hi)``; ``lo == hi`` (the answer) when it never is.

    The accountant's ε by noise is kept for the latest calls' arguments (default ``orders``):
    a call with the same arguments replays the evaluations an earlier one made. The search
    runs under :func:`noise_multiplier_for_epsilon`'s floating-point guard (an overflow is a
    ``ValueError`` naming the inputs); ``settled`` under NumPy's default error handling, and
    whatever it raises reaches the caller unchanged.

    Examples
    --------
    >>> lo, hi = noise_multiplier_bracket(1.0, 1e-5, 0.01, 1000,
    ...                                   settled=lambda lo, hi: hi / lo < 1.5)
    >>> lo <= noise_multiplier_for_epsilon(1.0, 1e-5, 0.01, 1000) <= hi
    True
    """
    if not callable(settled):
        raise ValueError("settled must be a callable (lo, hi) -> bool, got "
                         f"{type(settled).__name__}")
    try:
        return _guarded_bracket(epsilon, delta, sampling_rate, steps, sampling, accountant,
                                settled, orders, method, rtol)
    except _PredicateError as err:  # the caller's own error, not one of the inputs' range
        error = err.error
    # raised outside the handler: the caller's error keeps its own cause and context
    raise error


class _PredicateError(Exception):
    """Carries an exception of a caller's ``settled`` past the floating-point guard."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _guarded_bracket(epsilon: Any, delta: Any, sampling_rate: Any, steps: Any, sampling: Any,
                     accountant: Any, settled: Callable[[float, float], bool], orders: Any,
                     method: Any, rtol: Any) -> tuple[float, float]:
    """:func:`noise_multiplier_bracket`'s search (guarded below, as
    :func:`noise_multiplier_for_epsilon` is)."""
    args, kwargs = _sgm_calibration(epsilon, delta, sampling_rate, steps, sampling, accountant,
                                    orders, method, rtol)
    memo = None
    if orders is DEFAULT_ORDERS:  # the ε evaluated by earlier calls with these arguments
        key = _bracket_key(epsilon, delta, sampling_rate, steps, sampling, accountant, method,
                           kwargs["rtol"])
        memo = _BRACKET_MEMO.pop(key, {})
        _BRACKET_MEMO[key] = memo  # most recent last
        while len(_BRACKET_MEMO) > _BRACKET_MEMO_MAX:
            _BRACKET_MEMO.pop(next(iter(_BRACKET_MEMO)))

    def caller_settled(lo: float, hi: float) -> bool:
        # the search runs under this module's guard (floating-point errors raise, as in
        # noise_multiplier_for_epsilon: the same search); the caller's predicate under
        # NumPy's default error handling, its exceptions carried past the guard
        try:
            with np.errstate(over="warn", divide="warn", invalid="warn", under="ignore"):
                return bool(settled(lo, hi))
        except Exception as err:
            raise _PredicateError(err) from err
    return calibration_bracket(*args, settled=caller_settled, memo=memo, **kwargs)


def _bracket_key(epsilon: Any, delta: Any, sampling_rate: Any, steps: Any, sampling: Any,
                 accountant: Any, method: Any, rtol: float) -> tuple[Any, ...]:
    """The memo's key: every argument of the search, as checked values (hashable)."""
    q, steps, sampling, accountant = _check_sgm(sampling_rate, steps, sampling, accountant)
    return (float(epsilon), float(delta), int(steps), float(q), sampling, accountant,
            str(method), float(rtol))


#: the accountant's ε by noise of the latest noise_multiplier_bracket calls, by arguments
_BRACKET_MEMO: dict[tuple[Any, ...], dict[float, float]] = {}
_BRACKET_MEMO_MAX = 256


def _sgm_calibration(epsilon: Any, delta: Any, sampling_rate: Any, steps: Any, sampling: Any,
                     accountant: Any, orders: Any, method: Any, rtol: Any
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The checked arguments of :func:`calibrate` that the two functions above share (one
    search: the bracket's answer is the calibration's)."""
    epsilon = check_positive("epsilon", check_scalar("epsilon", epsilon))
    delta = check_probability("delta", check_scalar("delta", delta))
    accountant = check_choice("accountant", accountant, _SGM_ACCOUNTANTS)
    if rtol is None:
        rtol = 1e-6 if accountant == "rdp" else 1e-4
    rtol = check_positive("rtol", rtol)
    q, steps, sampling, accountant = _check_sgm(sampling_rate, steps, sampling, accountant)
    return ((_sgm(q, sampling), epsilon, delta,
             _sgm_accountant(accountant, sampling, orders, method), steps),
            dict(initial=1.0, rtol=rtol, max_noise=1e12, round_up=True))


# the name the guard's errors give
_guarded_bracket.__name__ = _guarded_bracket.__qualname__ = "noise_multiplier_bracket"
guard_module(globals(), ["epsilon_for_noise_multiplier", "noise_multiplier_for_epsilon",
                         "_guarded_bracket"])
