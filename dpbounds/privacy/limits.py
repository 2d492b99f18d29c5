r"""Where an :math:`(\varepsilon,\delta)` guarantee stops being privacy: one policy for
``bound``, ``compare``, ``privacy`` and the API.

* :math:`\varepsilon >` :data:`MAX_EPSILON` = 100 is **refused** (``ValueError`` naming the
  parameter). An attack's odds may grow by :math:`e^{100}\approx 2.7\cdot10^{43}`: no
  statement about an individual survives, and the accountants leave their range well before
  float64 does (dp_accounting's PLD exponentiates losses; ``privacy`` was computed for
  :math:`[10^{-6}, 100]` only). ``privacy`` always refused beyond 100; ``bound`` and
  ``compare`` now do too (``compare --eps 1e300`` returned one bound and refused others).
* :math:`\delta > 1/n` is **flagged** (:class:`NoPrivacyWarning` from the API, one
  ``dpbounds: warning:`` line on stderr from the CLI): the mechanism that publishes each
  record with probability :math:`\delta` is :math:`(0,\delta)`-DP and releases about
  :math:`\delta n > 1` records outright (RECONSTRUCTED from Dwork & Roth 2014, "The
  Algorithmic Foundations of Differential Privacy", Sec. 2.3: values of delta of the order of
  1/n "permit preserving privacy by publishing the complete records of a small number of
  database participants"). A bound evaluated there is still a correct number about a
  useless guarantee, so it is flagged, not refused. The threshold is strict because
  ``dpbounds compare``'s defaults sit exactly at :math:`\delta = 1/N` (1e-5 and 1e5). When
  :math:`n` is unknown (``privacy compose``) the stated threshold is
  :data:`DELTA_WITHOUT_N` = 0.1 (no dataset of more than 10 records is protected).
* A composed :math:`\varepsilon` above :data:`MAX_EPSILON` (an *output*) is flagged the same
  way.
* A run calibrated to a constant the objective took from the private data (an undeclared
  radius: the data's largest norm) is flagged (:class:`DataDerivedCalibrationWarning`): its
  noise depends on the data, so its guarantee holds only if that value is a public bound.

Example
-------
>>> from dpbounds.privacy.limits import privacy_flags
>>> privacy_flags(0.5, 0.5, n=1e5)[0][:24]
'delta=0.5 > 1/n = 1e-05:'
>>> privacy_flags(1.0, 1e-6, n=1e5)
[]
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = [
    "DELTA_WITHOUT_N",
    "MAX_EPSILON",
    "DataDerivedCalibrationWarning",
    "NoPrivacyWarning",
    "check_epsilon_limit",
    "privacy_flags",
    "warn_no_privacy",
]

#: Largest epsilon dpbounds evaluates a guarantee or a bound at (module notes).
MAX_EPSILON = 100.0
#: delta flagged when the dataset size is unknown (module notes).
DELTA_WITHOUT_N = 0.1


class NoPrivacyWarning(UserWarning):
    """An (epsilon, delta) pair that protects no individual (``delta > 1/n``)."""


class DataDerivedCalibrationWarning(UserWarning):
    """A run whose noise is calibrated to a constant the objective took from the private data
    (an undeclared radius: the data's largest norm). The run is private only if that value
    is a public bound; declare it, or pass a public ``sensitivity=`` or clip."""


def check_epsilon_limit(name: str, epsilon: Any) -> Any:
    """``epsilon`` unchanged if every value is at most :data:`MAX_EPSILON` (NaN is left to the
    caller's own checks); else ``ValueError`` naming ``name``."""
    with np.errstate(invalid="ignore"):
        if np.any(np.asarray(epsilon, dtype=float) > MAX_EPSILON):
            raise ValueError(
                f"{name} must be at most {MAX_EPSILON:g}, got {epsilon!r}: beyond it an attack's "
                f"odds may grow by e^{MAX_EPSILON:g} ~ 2.7e43 (no privacy), and accountants "
                "leave their range")
    return epsilon


def privacy_flags(epsilon: Any, delta: Any, n: Any = None) -> list[str]:
    """Why ``(epsilon, delta)`` on ``n`` records is no privacy (module notes); ``[]`` if it
    is. ``n=None``: the threshold :data:`DELTA_WITHOUT_N`. Scalars or arrays (any entry)."""
    out: list[str] = []
    d = np.asarray(delta, dtype=float)
    if n is not None:
        threshold, why = 1.0 / float(n), f"1/n = {1.0 / float(n):g}"
    else:
        threshold, why = DELTA_WITHOUT_N, f"{DELTA_WITHOUT_N:g} (n unknown)"
    if np.any(d > threshold):
        from dpbounds._numfmt import shown as _shown

        shown = _shown(float(np.max(d)) if d.ndim else float(d))
        out.append(f"delta={shown} > {why}: (eps, delta)-DP then allows publishing each record "
                   "with probability delta, about delta*n > 1 records in the clear; this is "
                   "no privacy (take delta << 1/n)")
    e = np.asarray(epsilon, dtype=float)
    if epsilon is not None and np.any(e > MAX_EPSILON):
        out.append(f"epsilon={float(np.max(e)):g} > {MAX_EPSILON:g}: no meaningful privacy")
    return out


def warn_no_privacy(epsilon: Any, delta: Any, n: Any = None, *, stacklevel: int = 2
                    ) -> list[str]:
    """:func:`privacy_flags`, each also issued as a :class:`NoPrivacyWarning`; returns them."""
    flags = privacy_flags(epsilon, delta, n)
    for text in flags:
        warnings.warn(text, NoPrivacyWarning, stacklevel=stacklevel + 1)
    return flags
