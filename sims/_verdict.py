"""Verdict rows shared by the simulation studies.

A study compares a **measured** quantity (Monte Carlo mean with its standard error) with a
**predicted** one from an independent oracle (a closed form, a bound, a published number) and
records whether the claim holds:

* ``"<= bound"``: ``measured - z*se <= predicted`` (the bound is not contradicted at ``z``
  standard errors; ``z = 5`` by default so the tests never flake);
* ``"== exact"``: ``|measured - predicted| <= z*se + rtol*|predicted|``;
* other claims (e.g. ``">= quadratic"``) are deterministic comparisons made by the study.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["Z", "Verdict", "equal", "format_table", "mean_se", "upper"]

#: Standard errors allowed before a verdict fails.
Z = 5.0


@dataclass(frozen=True)
class Verdict:
    """One line of a verdict table."""

    study: str
    case: str
    claim: str
    measured: float
    se: float
    predicted: float
    oracle: str
    holds: bool

    @property
    def ratio(self) -> float:
        """``measured / predicted`` (``nan`` when undefined)."""
        if self.predicted == 0 or not math.isfinite(self.predicted):
            return math.nan
        return self.measured / self.predicted

    @property
    def ci(self) -> tuple[float, float]:
        """95 % interval of the measured mean."""
        return self.measured - 1.96 * self.se, self.measured + 1.96 * self.se

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ratio"] = self.ratio
        return d


def mean_se(values: Any) -> tuple[float, float]:
    """Mean and standard error of the mean of a 1-d sample."""
    v = np.asarray(values, dtype=float).ravel()
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return float(v.mean()), se


def upper(study: str, case: str, measured: float, se: float, bound: float, oracle: str,
          z: float = Z) -> Verdict:
    """Verdict for ``measured <= bound`` (not contradicted at ``z`` standard errors)."""
    holds = bool(measured - z * se <= bound)
    return Verdict(study, case, "<= bound", measured, se, float(bound), oracle, holds)


def equal(study: str, case: str, measured: float, se: float, exact: float, oracle: str,
          z: float = Z, rtol: float = 0.0) -> Verdict:
    """Verdict for ``measured == exact`` within ``z`` standard errors (plus ``rtol``)."""
    holds = bool(abs(measured - exact) <= z * se + rtol * abs(exact))
    return Verdict(study, case, "== exact", measured, se, float(exact), oracle, holds)


def format_table(rows: list[Verdict]) -> str:
    """A plain-text verdict table."""
    head = ("study", "case", "claim", "measured", "95% CI", "predicted", "ratio", "holds",
            "oracle")
    lines = []
    for r in rows:
        lo, hi = r.ci
        lines.append((r.study, r.case, r.claim, f"{r.measured:.4g}", f"[{lo:.4g}, {hi:.4g}]",
                      f"{r.predicted:.4g}", f"{r.ratio:.3g}", "yes" if r.holds else "NO",
                      r.oracle))
    widths = [max(len(h), *(len(x[i]) for x in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(x, widths)) for x in lines]
    return "\n".join(out)
