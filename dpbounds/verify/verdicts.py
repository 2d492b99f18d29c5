"""Verdicts that can fail: the rows of every verification table (studies, sims, CLI).

A verdict compares a **measured** quantity (a Monte Carlo mean with its standard error, or a
fitted slope with its interval) with a **predicted** one from an independent oracle (a bound,
an exponent, a closed form, a published number) and records whether the claim holds:

* ``"<= bound"`` (:func:`upper`): ``measured - z*se <= predicted``, not contradicted at ``z``
  standard errors (``z = 5`` by default so fixed-seed tests never flake);
* ``"== exact"`` (:func:`equal`): ``|measured - predicted| <= z*se + rtol*|predicted|``;
* ``"slope <= exponent + CI"`` (:func:`slope_at_most`): the lower end of the slope's bootstrap
  interval is at most the predicted exponent (a measured slope significantly steeper than the
  bound's fails);
* ``"measured/bound <= k"`` (:func:`ratio_at_most`): at every grid point whose bound is **not
  vacuous**, the lower end of the measured mean's interval is at most ``k`` times the bound.

**Gating.** A verdict with ``gating=False`` is a *shape diagnostic* (a slope compared with an
exponent: an upper bound does not imply its slope); it is reported, and never makes a study or
a run fail (:attr:`Verdict.failed`). Ratio, lower-bound and ``== exact`` verdicts gate.

**A vacuous bound is a flag, never a pass.** A bound at least as large as the trivial bound (a
gradient norm never exceeds the Lipschitz constant ``G``) cannot be contradicted by any
algorithm, including one that returns its start point. Such a verdict has ``vacuous=True`` and
``holds=False``; tables print ``vacuous`` and runners count it neither as a pass nor as a
failure (:attr:`Verdict.status`).

**Power.** A verdict that holds has shown something only if it could have failed on the defect
it is there to catch. An exact noise-energy check (the energy drawn, the tree noise) is
*powered* when a 10 % change of the energy (:data:`POWER_CHANGE`) lies beyond its failure
threshold by :data:`POWER_Z` standard errors (:func:`energy_power`: such a change fails it
with probability >= 90 %); otherwise it carries ``powered=False`` and ``needs`` says how many
trials would power it. A study whose utility verdicts are all vacuous, or whose noise-energy
checks are not all powered, or whose sampling tests have power below 0.8 against their named
defect (a fixed cyclic order, an unshuffled order; :mod:`dpbounds.verify.sampling`), ends
INCONCLUSIVE (:attr:`dpbounds.verify.ScalingResult.status`); a failing row still fails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpbounds.verify.statistics import MeanCI, SlopeCI

__all__ = ["POWER_CHANGE", "POWER_Z", "Z", "Verdict", "energy_power", "equal", "format_table",
           "is_vacuous", "ratio_at_most", "slope_at_most", "upper"]

#: Standard errors allowed before a ``<= bound`` or ``== exact`` verdict fails.
Z = 5.0
#: relative change of a noise energy an exact check must resolve to count as shown
POWER_CHANGE = 0.10
#: standard errors between that change and the failure threshold (power 90 %, one tail)
POWER_Z = 1.2816


@dataclass(frozen=True)
class Verdict:
    """One line of a verdict table.

    ``holds`` is True only for a claim that was checked and not contradicted; ``vacuous`` marks
    a claim that could not fail (the bound is at least the trivial bound), with ``holds=False``.
    ``powered=False`` marks a check too noisy to resolve the change it is there to catch
    (``needs``: what would resolve it); it still fails when contradicted. ``power``: the
    probability that the check fails on the defect it names, where the check states one
    (the sampling tests of :mod:`dpbounds.verify.sampling`); ``None`` otherwise.
    """

    study: str
    case: str
    claim: str
    measured: float
    se: float
    predicted: float
    oracle: str
    holds: bool
    vacuous: bool = False
    gating: bool = True
    powered: bool = True
    needs: str = ""
    power: float | None = None
    #: the interval the verdict compared, where it is not ``measured +- 1.96 se`` (a ratio
    #: row: the largest lower and upper 95% ends of measured/bound over the points; it
    #: printed a point [1.047, 1.047] beside "holds: yes", a walkthrough of stop 75)
    interval: tuple[float, float] | None = None

    @property
    def ratio(self) -> float:
        """``measured / predicted`` (``nan`` when undefined)."""
        if self.predicted == 0 or not math.isfinite(self.predicted):
            return math.nan
        return self.measured / self.predicted

    @property
    def ci(self) -> tuple[float, float]:
        """95 % interval of the measured value."""
        if self.interval is not None:
            return self.interval
        return self.measured - 1.96 * self.se, self.measured + 1.96 * self.se

    @property
    def status(self) -> str:
        """``"yes"``, ``"NO"``, ``"vacuous"`` (neither a pass nor a failure) or, for a shape
        diagnostic that does not hold, ``"no (shape)"`` (reported, not a failure)."""
        if self.vacuous:
            return "vacuous"
        if self.holds:
            return "yes"
        return "NO" if self.gating else "no (shape)"

    @property
    def failed(self) -> bool:
        """A checked, gating claim that does not hold (vacuous claims and shape diagnostics
        are not failures)."""
        return not self.holds and not self.vacuous and self.gating

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ratio"] = self.ratio
        d["status"] = self.status
        return d


def mean_se(values: Any) -> tuple[float, float]:
    """Mean and standard error of the mean of a 1-d sample."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"values must be a non-empty sample of finite numbers, got {values!r}")
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return float(v.mean()), se


def is_vacuous(bound: float, trivial: float) -> bool:
    """Whether ``bound`` is at least the ``trivial`` bound (then it cannot fail)."""
    try:
        return bool(bound >= trivial)
    except TypeError:  # None: TypeError from '>=' (fuzz round 7)
        raise ValueError(f"bound and trivial must be numbers, got {bound!r} and "
                         f"{trivial!r}") from None


def upper(study: str, case: str, measured: float, se: float, bound: float, oracle: str,
          z: float = Z, trivial: float | None = None) -> Verdict:
    """Verdict for ``measured <= bound`` (not contradicted at ``z`` standard errors).

    With ``trivial`` given, a bound ``>= trivial`` gives a vacuous verdict (never a pass).
    ``measured``, ``se`` and ``bound`` must be numbers (a NaN would make any verdict false).
    """
    if not isinstance(study, str) or not isinstance(case, str):
        raise TypeError(f"study and case must be strings, got {study!r} and {case!r}")
    for name, value in (("measured", measured), ("se", se), ("bound", bound), ("z", z)):
        try:
            bad = math.isnan(float(value))
        except (TypeError, ValueError):
            bad = True
        if bad:
            raise ValueError(f"{name} must be a number (not NaN), got {value!r}")
    if trivial is not None and is_vacuous(bound, trivial):
        return Verdict(study, case, "<= bound", measured, se, float(bound), oracle, False, True)
    holds = bool(measured - z * se <= bound)
    return Verdict(study, case, "<= bound", measured, se, float(bound), oracle, holds)


def equal(study: str, case: str, measured: float, se: float, exact: float, oracle: str,
          z: float = Z, rtol: float = 0.0) -> Verdict:
    """Verdict for ``measured == exact`` within ``z`` standard errors (plus ``rtol``)."""
    holds = bool(abs(measured - exact) <= z * se + rtol * abs(exact))
    return Verdict(study, case, "== exact", measured, se, float(exact), oracle, holds)


def slope_at_most(study: str, case: str, slope: SlopeCI, exponent: float,
                  oracle: str, claim: str = "slope <= exponent + CI") -> Verdict:
    """Verdict for ``slope <= exponent + CI``: fails when the whole interval lies above.

    ``se`` is the interval's half-width divided by the normal quantile of its level.
    """
    z = float(np.sqrt(2.0) * _erfinv(slope.level))
    se = (slope.ci_high - slope.ci_low) / (2 * z) if z > 0 else 0.0
    holds = bool(slope.ci_low <= exponent)
    return Verdict(study, case, claim, slope.slope, se, float(exponent), oracle, holds)


def ratio_at_most(study: str, case: str, measured: Sequence[MeanCI],
                  bounds: Sequence[float] | np.ndarray,
                  oracle: str, *, k: float = 1.0,
                  trivial: float | Sequence[float] | None = None) -> Verdict:
    """Verdict for ``measured/bound <= k`` at every grid point whose bound is not vacuous.

    ``measured`` holds one :class:`~dpbounds.verify.statistics.MeanCI` per point; a point
    passes when ``ci_low <= k * bound``. The row reports the largest ratio of means, and as its
    interval the largest ``ci_low / bound`` and ``ci_high / bound`` over the checked points:
    the verdict holds exactly when the interval's lower end is at most ``k``. With every point
    vacuous (bound ``>= trivial``) the verdict is vacuous.
    """
    b = np.asarray(bounds, dtype=float)
    if len(measured) != b.size:
        raise ValueError("measured and bounds must have one entry per grid point")
    if trivial is None:
        vac = np.zeros(b.size, dtype=bool)
    else:
        vac = b >= np.broadcast_to(np.asarray(trivial, dtype=float), b.shape)
    ratios = np.array([m.mean for m in measured]) / b
    worst = float(np.max(ratios))
    claim = f"measured/bound <= {k:g}"
    if np.all(vac):
        return Verdict(study, case, claim, worst, 0.0, float(k), oracle, False, True)
    keep = ~vac
    holds = bool(all(m.ci_low <= k * bb for m, bb, kk in zip(measured, b, keep) if kk))
    worst_checked = float(np.max(ratios[keep]))
    lows = [m.ci_low / bb for m, bb, kk in zip(measured, b, keep) if kk]
    highs = [m.ci_high / bb for m, bb, kk in zip(measured, b, keep) if kk]
    return Verdict(study, case + (f" ({int(vac.sum())} vacuous points skipped)"
                                  if vac.any() else ""),
                   claim, worst_checked, 0.0, float(k), oracle, holds,
                   interval=(float(max(lows)), float(max(highs))))


def energy_power(se: float, exact: float, rtol: float, trials: int) -> tuple[bool, int]:
    """Whether a two-sided check ``|mean - exact| <= Z se + rtol |exact|`` resolves a
    :data:`POWER_CHANGE` relative change of ``exact`` with power 90 %, and the trials that
    would (``se`` shrinking as ``1/sqrt(trials)``; 0 when no count does, the ``rtol`` alone
    being too wide).

    A change ``c |exact|`` fails the check with probability >= 90 % when
    ``c |exact| >= (Z + POWER_Z) se + rtol |exact|`` (normal mean; the far tail ignored).
    """
    room = (POWER_CHANGE - rtol) * abs(exact)
    if room <= 0:
        return False, 0
    need = (Z + POWER_Z) * se
    if need <= room:
        return True, int(trials)
    return False, int(math.ceil(trials * (need / room) ** 2))


def _erfinv(level: float) -> float:
    from scipy.special import erfinv

    return float(erfinv(level))


#: oracle texts up to this long sit in the table; longer ones become numbered notes below it
#: (one was ~450 characters and padded every row to it: walkthroughs of stops 78 and 79)
ORACLE_INLINE = 40


def format_table(rows: list[Verdict]) -> str:
    """A plain-text verdict table; long oracle texts as numbered notes under it, and a line
    on what the 95% CI column is (the verdicts test at :data:`Z` standard errors)."""
    import textwrap

    head = ("study", "case", "claim", "measured", "95% CI", "predicted", "ratio", "holds",
            "oracle")
    lines = []
    notes: dict[str, int] = {}
    for r in rows:
        lo, hi = r.ci
        # a ratio against 0 (F(x) - F* >= 0) is undefined: "-", not "nan" printed as a result
        ratio = f"{r.ratio:.3g}" if math.isfinite(r.ratio) else "-"
        oracle = r.oracle
        if len(oracle) > ORACLE_INLINE:
            oracle = f"[{notes.setdefault(r.oracle, len(notes) + 1)}]"
        lines.append((r.study, r.case, r.claim, f"{r.measured:.4g}", f"[{lo:.4g}, {hi:.4g}]",
                      f"{r.predicted:.4g}", ratio, r.status, oracle))
    widths = [max(len(h), *(len(x[i]) for x in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in lines]
    if lines:
        out += textwrap.wrap(f"95% CI: the measurement's spread, for reading; each verdict "
                             f"tests its claim at {Z:g} standard errors (false alarms below "
                             "1e-6 a row), so a CI that misses the prediction can hold",
                             width=100)
    for text, k in notes.items():
        out += textwrap.wrap(f"[{k}] {text}", width=100, subsequent_indent="    ")
    return "\n".join(out)
