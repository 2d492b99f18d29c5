"""Verdict rows shared by the simulation studies (a re-export of :mod:`dpbounds.verify.verdicts`).

The library owns the one verdict type (the scaling studies of :mod:`dpbounds.verify` use it
too); see there for the claims (``<= bound``, ``== exact``, ``slope <= exponent + CI``,
``measured/bound <= k``) and for the vacuous flag, which is never a pass.
"""

from dpbounds.verify.verdicts import (
    Verdict,
    Z,
    equal,
    format_table,
    is_vacuous,
    mean_se,
    ratio_at_most,
    slope_at_most,
    upper,
)

__all__ = ["Z", "Verdict", "equal", "format_table", "is_vacuous", "mean_se", "ratio_at_most",
           "slope_at_most", "upper"]
