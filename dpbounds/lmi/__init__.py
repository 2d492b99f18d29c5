"""Rate certificates by linear matrix inequalities.

Kuru et al., Proposition 3.4 for DP heavy ball on the class of mu-strongly convex, L-smooth
functions: :func:`heavy_ball_lmi_rate` (smallest certified rate with a proven bracket of the
minimal one, or a ``NoCertificate`` result), :func:`verify_certificate` (solver-independent
check in exact arithmetic, :mod:`dpbounds.lmi.exact`) and the rate maps of
:mod:`dpbounds.lmi.rate_map`.
"""

from dpbounds.lmi.heavy_ball_lmi import (
    HeavyBallLMI,
    LMICertificate,
    NoCertificate,
    assemble_lmi,
    heavy_ball_lmi_bound,
    heavy_ball_lmi_bound_as_printed,
    heavy_ball_lmi_certificate_at,
    heavy_ball_lmi_rate,
    verify_certificate,
)
from dpbounds.lmi.rate_map import RateMap, closed_form_rate_map, lmi_rate_map

__all__ = [
    "HeavyBallLMI",
    "LMICertificate",
    "NoCertificate",
    "RateMap",
    "assemble_lmi",
    "closed_form_rate_map",
    "heavy_ball_lmi_bound",
    "heavy_ball_lmi_bound_as_printed",
    "heavy_ball_lmi_certificate_at",
    "heavy_ball_lmi_rate",
    "lmi_rate_map",
    "verify_certificate",
]
