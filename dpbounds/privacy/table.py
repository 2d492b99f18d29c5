r"""The noise each mechanism and accountant needs for a target (ε, δ), side by side.

:func:`privacy_table` returns the rows as data (``list[dict]``); ``dpbounds privacy`` prints
them. Conventions:

* ``sensitivity`` is the L2 (Gaussian) / L1 (Laplace) sensitivity of the per-step noised
  *per-example sum* (DP-SGD style: a sum of clipped per-record terms) under ``neighbouring``;
  rows analysed under the other relation convert it with the per-example-sum rule, so their
  mechanisms set ``per_example_sum=True`` explicitly (:mod:`dpbounds.privacy.mechanisms`; the
  halving replace-one → add/remove is not valid for other queries). Every row names the
  relation of its guarantee.
* Inputs outside the ranges the table is computed for (``epsilon`` in [1e-6, 100],
  ``sensitivity``, ``sigma``, ``scale`` in [1e-100, 1e100], ``sampling_rate`` >= 1e-6,
  ``steps`` <= 1e9, ``dataset_size`` <= 1e15) raise ``ValueError`` naming the parameter
  (the CLI prints one line and exits 2) instead of overflowing inside an accountant.
* Gaussian rows report the std :math:`\sigma` of the noise added to the sum at every step,
  Laplace rows the scale :math:`b` of the noise on the sum (variance :math:`2b^2`).
* Full-batch rows run ``steps`` releases on the whole dataset; subsampled rows sample with
  rate ``sampling_rate`` (Poisson) or batches of :math:`m = \mathrm{round}(qn)` of
  :math:`n` = ``dataset_size`` (without replacement); the tree row aggregates one sample per
  step over :math:`E = \lceil T/n\rceil` epochs.

Examples
--------
>>> from dpbounds.privacy.table import privacy_table
>>> rows = privacy_table(epsilon=1.0, delta=1e-5, steps=100, sampling_rate=0.05)
>>> sorted(rows[0])[:4]
['accountant', 'delta', 'epsilon', 'epsilon_at_given_noise']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpbounds._validation import (
    MAX_COUNT,
    check_closed_interval,
    check_int,
    check_nonnegative,
    check_probability,
    check_scalars,
)
from dpbounds.privacy._util import finite_or_raise, nudge_up
from dpbounds.privacy.accountants import Accountant, PldAccountant, RdpAccountant
from dpbounds.privacy.calibrate import calibrate, epsilon_of
from dpbounds.privacy.gaussian import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_epsilon,
)
from dpbounds.privacy.laplace import amplify_without_replacement, laplace_scale_for_epsilon
from dpbounds.privacy.limits import MAX_EPSILON, warn_no_privacy
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    Neighbouring,
    Sampling,
    SubsampledGaussianMechanism,
    TreeAggregationMechanism,
    convert_sensitivity,
)
from dpbounds.privacy.tree import (
    max_nodes_per_sample,
    tree_aggregation_epsilon,
    tree_aggregation_sigma,
)
from dpbounds.privacy.zcdp import dp_to_zcdp_rho, zcdp_to_dp_epsilon

__all__ = ["TABLE_ROWS", "format_table", "privacy_table"]

#: Number of rows :func:`privacy_table` returns.
TABLE_ROWS = 13
#: PLD discretisation used in the table (pessimistic; ~0.1% looser than 1e-4, 40x faster).
TABLE_PLD_INTERVAL = 1e-3
_EPSILON_RANGE = (1e-6, MAX_EPSILON)  # dpbounds.privacy.limits: the one cap
_MAGNITUDE_RANGE = (1e-100, 1e100)


def _advanced_composition(epsilon0: float, steps: int, delta_prime: float) -> float:
    # math.expm1 raises OverflowError beyond ~709.78; the bound is then above any float anyway
    if epsilon0 > 700.0:
        return math.inf
    # float products overflow to inf (no exception): inf > any target, as it should be
    return math.sqrt(2 * steps * math.log(1 / delta_prime)) * epsilon0 + steps * (
        epsilon0 * math.expm1(epsilon0))


def advanced_composition_epsilon(epsilon0: float, steps: int, delta_prime: float) -> float:
    r"""Advanced composition (Dwork-Rothblum-Vadhan; Lee & Kifer Thm 3.4):
    :math:`\sqrt{2k\ln(1/\delta')}\,\epsilon_0 + k\epsilon_0(e^{\epsilon_0}-1)`.

    Raises ``ValueError`` when the bound leaves the float range (e.g. ``epsilon0 > 700``) and
    for ``steps`` above ``MAX_COUNT`` = 10^15.
    """
    epsilon0 = check_nonnegative("epsilon0", epsilon0)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_COUNT)
    delta_prime = check_probability("delta_prime", delta_prime)
    return finite_or_raise(_advanced_composition(epsilon0, steps, delta_prime),
                           "epsilon0, steps, delta_prime")


def _advanced_per_step(epsilon: float, steps: int, delta_prime: float) -> float:
    """Largest per-step epsilon0 whose advanced composition is at most ``epsilon``."""
    lo, hi = 0.0, min(epsilon, 700.0)  # beyond 700 the composed bound exceeds every float
    if _advanced_composition(hi, steps, delta_prime) <= epsilon:
        return hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _advanced_composition(mid, steps, delta_prime) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def _at_given_noise(compute: Any) -> tuple[float | None, str]:
    """Evaluate the epsilon a given noise buys; an input so extreme that the accountant leaves
    the float range gives ``None`` and says so in the note (never an inf/NaN or a traceback)."""
    if compute is None:
        return None, ""
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise"):  # no silent overflow
            value = compute()
    except (ValueError, OverflowError, ZeroDivisionError, FloatingPointError):
        return None, "; eps(given noise) out of floating-point range"
    if value is None:
        return None, ""
    if not math.isfinite(value):
        return None, "; eps(given noise) out of floating-point range"
    return float(value), ""


def _row(mechanism, accountant, relation, parameter, noise, sensitivity, epsilon, delta,
         eps_given=None, note=""):
    eps_given, why = _at_given_noise(eps_given)
    note += why
    return {
        "mechanism": mechanism,
        "accountant": accountant,
        "neighbouring": str(relation),
        "noise_parameter": parameter,
        "noise": noise,
        "noise_multiplier": (noise / sensitivity if sensitivity > 0 and noise is not None
                             else None),
        "epsilon": epsilon,
        "delta": delta,
        "epsilon_at_given_noise": eps_given,
        "note": note,
    }


def _or_na(compute: Callable[[], float]) -> tuple[float | None, str]:
    """``(compute(), "")``, or ``(None, "; n/a: <why>")`` where the calibration cannot reach
    the target (an (eps, delta) beyond the accountant's conversion): that row reads n/a with
    its reason and the table goes on (one row's refusal ended the whole table)."""
    try:
        return compute(), ""
    except ValueError as err:
        return None, f"; n/a: {err}"


def privacy_table(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    sensitivity: float = 1.0,
    steps: int = 1000,
    sampling_rate: float = 0.01,
    neighbouring: Any = "add_remove",
    sigma: float | None = None,
    scale: float | None = None,
    dataset_size: int = 10_000,
    progress: Callable[[str], Any] | None = None,
) -> list[dict[str, Any]]:
    r"""Rows ``{mechanism, accountant, neighbouring, noise_parameter, noise, noise_multiplier,
    epsilon, delta, epsilon_at_given_noise, note}``: the noise each mechanism/accountant needs
    for (``epsilon``, ``delta``) over ``steps`` steps, and, if ``sigma`` (Gaussian std on the
    sum) or ``scale`` (Laplace scale on the sum) is given, the ε that noise buys at ``delta``.
    Every noise level is conservative for its accountant. ``None`` marks a row that does not
    apply (e.g. the classic Gaussian needs a per-step ε < 1).

    ``progress``, if given, is called with each row's label as soon as the row is computed
    (:data:`TABLE_ROWS` calls; the CLI drives a progress bar with it).
    """
    # one number each (a list raised TypeError deep inside; fuzz round 7)
    check_scalars(epsilon=epsilon, delta=delta, sensitivity=sensitivity, steps=steps,
                  sampling_rate=sampling_rate, sigma=sigma, scale=scale,
                  dataset_size=dataset_size)
    # explicit working ranges: beyond them some accountant leaves float64 range
    epsilon = check_closed_interval("epsilon", epsilon, *_EPSILON_RANGE)
    delta = check_probability("delta", delta)
    sensitivity = check_closed_interval("sensitivity", sensitivity, *_MAGNITUDE_RANGE)
    steps = check_int("steps", steps, minimum=1, maximum=10**9)
    q = check_closed_interval("sampling_rate", sampling_rate, 1e-6, 1.0)
    nb = Neighbouring.coerce(neighbouring)
    n = check_int("dataset_size", dataset_size, minimum=1, maximum=MAX_COUNT)
    warn_no_privacy(None, delta, n, stacklevel=2)  # delta > 1/n: flagged (privacy.limits)
    if sigma is not None:
        sigma = check_closed_interval("sigma", sigma, *_MAGNITUDE_RANGE)
    if scale is not None:
        scale = check_closed_interval("scale", scale, *_MAGNITUDE_RANGE)
    ar, ro = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE
    T = steps
    rows: list[dict[str, Any]] = []

    def add(row: dict[str, Any]) -> None:
        rows.append(row)
        if progress is not None:
            progress(f"{row['mechanism']}: {row['accountant']}")

    # --- full batch, classic Gaussian per step -------------------------------------------
    eps0 = epsilon / T
    # delta / T can underflow to 0 (--delta 5e-324 said "delta must lie in (0, 1), got 0.0"):
    # that row has no calibration then (n/a), as where eps / T >= 1
    s = (classic_gaussian_sigma(eps0, delta / T, sensitivity)
         if eps0 < 1 and delta / T > 0 else None)
    def classic_given():
        e0 = sensitivity * math.sqrt(2 * math.log(1.25 * T / delta)) / sigma
        return T * e0 if e0 < 1 else None

    given = classic_given if sigma is not None else None
    add(_row("Gaussian, full batch", "classic + basic composition", nb, "sigma", s,
                     sensitivity, epsilon, delta, given,
                     "Dwork-Roth per step (eps/T, delta/T); needs eps/T < 1"))
    e0 = _advanced_per_step(epsilon, T, delta / 2) if delta / (2 * T) > 0 else 0.0
    s = (classic_gaussian_sigma(e0, delta / (2 * T), sensitivity)
         if 0 < e0 < 1 and delta / (2 * T) > 0 else None)
    def advanced_given():
        e0g = sensitivity * math.sqrt(2 * math.log(1.25 * 2 * T / delta)) / sigma
        return advanced_composition_epsilon(e0g, T, delta / 2) if e0g < 1 else None

    given = advanced_given if sigma is not None else None
    add(_row("Gaussian, full batch", "classic + advanced composition", nb, "sigma", s,
                     sensitivity, epsilon, delta, given,
                     "Lee & Kifer Thm 3.4, delta' = delta/2, per-step delta/(2T)"))
    # --- full batch, exact / zCDP / RDP --------------------------------------------------
    s = math.sqrt(T) * analytic_gaussian_sigma(epsilon, delta, sensitivity)
    given = ((lambda: gaussian_epsilon(sigma / math.sqrt(T), delta, sensitivity)) if sigma
             else None)
    add(_row("Gaussian, full batch", "analytic Gaussian (exact)", nb, "sigma", s,
                     sensitivity, epsilon, delta, given,
                     "Balle & Wang 2018; T Gaussians = one with sigma/sqrt(T)"))
    for conv, label in (("standard", "zCDP (Lemma 3.8)"), ("tight", "zCDP (tight conversion)")):
        rho = dp_to_zcdp_rho(epsilon, delta, method=conv)
        s = sensitivity * math.sqrt(T / (2 * rho))
        given = ((lambda conv=conv: zcdp_to_dp_epsilon(T * sensitivity**2 / (2 * sigma**2),
                                                       delta, conv))
                 if sigma else None)
        add(_row("Gaussian, full batch", label, nb, "sigma", s, sensitivity, epsilon,
                         delta, given, "Lee & Kifer eq. (5)" if conv == "standard" else
                         "Canonne-Kamath-Steinke 2020 Prop. 12"))

    def gauss(x):
        return GaussianMechanism(x, sensitivity, nb, per_example_sum=True)

    acc: Accountant = RdpAccountant(nb)
    s, why = _or_na(lambda: calibrate(gauss, epsilon, delta, acc, T, initial=sensitivity,
                                      max_noise=1e15 * sensitivity))
    given = (lambda: epsilon_of(gauss(sigma), delta, acc, T)) if sigma else None
    add(_row("Gaussian, full batch", "RDP", nb, "sigma", s, sensitivity, epsilon, delta,
                     given, "optimal order, improved conversion" + why))

    # --- subsampled Gaussian ---------------------------------------------------------------
    # the table's query is a per-example sum (DP-SGD): halving replace-one -> add/remove is valid
    sens_ar = convert_sensitivity(sensitivity, nb, ar, per_example_sum=True)

    def poisson(x):
        return SubsampledGaussianMechanism(x, q, sens_ar, Sampling.POISSON, ar,
                                           per_example_sum=True)

    start, rdp_s = sens_ar, None
    for acc, label, rtol in ((RdpAccountant(ar), "RDP", 1e-6),
                             (PldAccountant(ar, TABLE_PLD_INTERVAL), "PLD (dp_accounting)", 1e-4)):
        note = ("Mironov-Talwar-Zhang 2019" if label == "RDP" else
                f"pessimistic, interval <= {TABLE_PLD_INTERVAL:g}")
        try:
            # the PLD search starts at the RDP noise (PLD is tighter, usually by < 25%): a few
            # evaluations of the costly PLD instead of a search from the sensitivity
            s = calibrate(poisson, epsilon, delta, acc, T, initial=start, rtol=rtol,
                          max_noise=1e15 * sens_ar, bracket=4.0 if label == "RDP" else 1.25)
            start = s
        except ValueError as err:
            # e.g. delta below the PLD's resolution, or an (eps, delta) the RDP conversion
            # cannot reach (eps 1e-6 at delta 1e-300): this row is n/a, the table goes on (the
            # RDP row's refusal ended the whole table)
            s, note = None, f"{note}; n/a: {err}"
        if label != "RDP" and s is not None and rdp_s is not None and s > rdp_s:
            # the grid of a long composition is coarse against a small epsilon: at eps 1e-6
            # and 1e9 steps this row needed 475x the RDP row's noise, shown without a word as
            # the tight one (fuzz round 8); both are upper bounds, the smaller holds
            note += (f"; looser than RDP here ({s / rdp_s:.3g}x its noise): the pessimistic "
                     f"grid of {T} steps is coarse against epsilon = {epsilon:g}; the RDP "
                     "row's noise suffices")
        if label == "RDP":
            rdp_s = s
        given = (lambda acc=acc: epsilon_of(poisson(sigma), delta, acc, T)) if sigma else None
        add(_row(f"Subsampled Gaussian, Poisson q={q:g}", label, ar, "sigma", s, sens_ar,
                         epsilon, delta, given, note))
    # the batch rounded UP: --sampling-rate 0.45 with n = 3 was calibrated at m = 1 (rate 1/3,
    # below the rate stated: fuzz round 14); q n within 1e-9 of a whole number is that number
    m = max(1, math.ceil(q * n - 1e-9 * max(1.0, q * n)))
    rounded = "" if m == q * n else f"; q n = {q * n:.6g} rounded up to m = {m} (rate {m / n:.6g})"
    sens_ro = convert_sensitivity(sensitivity, nb, ro, per_example_sum=True)

    def wor(x):
        return SubsampledGaussianMechanism(x, m / n, sens_ro, Sampling.WITHOUT_REPLACEMENT, ro,
                                           per_example_sum=True)

    acc = RdpAccountant(ro)
    s, why = _or_na(lambda: calibrate(wor, epsilon, delta, acc, T, initial=sens_ro,
                                      max_noise=1e15 * sens_ro))
    given = (lambda: epsilon_of(wor(sigma), delta, acc, T)) if sigma else None
    add(_row(f"Subsampled Gaussian, w/o replacement m={m}, n={n}", "RDP", ro, "sigma", s,
                     sens_ro, epsilon, delta, given,
                     "Wang-Balle-Kasiviswanathan 2019 Thm 27 termwise with an "
                     "integer-moment bound (DERIVED)" + rounded + why))

    # --- tree aggregation ----------------------------------------------------------------
    # one sample per step; a run shorter than an epoch is a single tree over T leaves
    epochs = math.ceil(T / n)
    K = max_nodes_per_sample(n, epochs) if T > n else max_nodes_per_sample(T, 1)
    s = tree_aggregation_sigma(epsilon, delta, sens_ro, K)
    given = (lambda: tree_aggregation_epsilon(sigma, delta, sens_ro, K)) if sigma else None
    add(_row(f"Tree aggregation, T={T}, E={epochs}, K={K}", "RDP (Thm 10)", ro,
                     "sigma", s, sens_ro, epsilon, delta, given,
                     "Tran & Cutkosky Thm 10 [RECONSTRUCTED]; node sensitivity = sensitivity"))

    def tree(x):
        return TreeAggregationMechanism(x, sens_ro, K, ro, per_example_sum=True)

    acc = PldAccountant(ro, TABLE_PLD_INTERVAL)
    s = calibrate(tree, epsilon, delta, acc, 1, initial=sens_ro, rtol=1e-4,
                  max_noise=1e15 * sens_ro)
    given = (lambda: epsilon_of(tree(sigma), delta, acc, 1)) if sigma else None
    add(_row(f"Tree aggregation, T={T}, E={epochs}, K={K}", "PLD (GDP composition)", ro,
                     "sigma", s, sens_ro, epsilon, delta, given,
                     "sqrt(K) Delta/sigma-GDP"))

    # --- Laplace ---------------------------------------------------------------------------
    b = float(nudge_up(sensitivity * T / epsilon))  # rounded up: T * S / b <= epsilon
    given = (lambda: T * sensitivity / scale) if scale else None
    add(_row("Laplace, full batch", "pure DP, basic composition", nb, "b", b,
                     sensitivity, epsilon, 0.0, given, "Kuru et al. Thm A.1-A.2"))
    sens1_ro = convert_sensitivity(sensitivity, nb, ro, per_example_sum=True)
    # b on the sum = m x the scale on the average; laplace_scale_for_epsilon rounds up, so the
    # row never overshoots in floating point either.
    b = m * laplace_scale_for_epsilon(sens1_ro, epsilon / T, n, m)
    given = ((lambda: T * amplify_without_replacement(sens1_ro / scale, m, n)) if scale
             else None)
    add(_row(f"Laplace, w/o replacement m={m}, n={n}", "pure DP, basic composition", ro,
                     "b", b, sens1_ro, epsilon, 0.0, given,
                     "Kuru et al. (11), (13), Thm A.3; b on the sum (= m x b on the average)"))
    return rows


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def format_table(rows: list[dict[str, Any]], given: bool = False) -> str:
    """Plain-text rendering of :func:`privacy_table` rows."""
    head = ["mechanism", "accountant", "neighbouring", "noise", "noise/sens"]
    if given:
        head.append("eps(given noise)")
    body = []
    for r in rows:
        cells = [r["mechanism"], r["accountant"], r["neighbouring"],
                 f"{r['noise_parameter']}={_fmt(r['noise'])}", _fmt(r["noise_multiplier"])]
        if given:
            cells.append(_fmt(r["epsilon_at_given_noise"]))
        body.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in body)) for i, h in enumerate(head)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(cells, widths)) for cells in body]
    # why a row is n/a (the reason was in --json only: a bare "n/a" at delta = 1e-300)
    for r in rows:
        note = str(r.get("note") or "")
        if r["noise"] is None and "n/a: " in note:
            out.append(f"n/a: {r['mechanism']} / {r['accountant']}: "
                       f"{note.split('n/a: ', 1)[1]}")
        elif "; looser than RDP here" in note:
            out.append(f"note: {r['mechanism']} / {r['accountant']}: "
                       f"looser than RDP here{note.split('; looser than RDP here', 1)[1]}")
    return "\n".join(out)
