"""Rate certificates by linear matrix inequalities.

Kuru et al., Proposition 3.4 for DP heavy ball on the class of mu-strongly convex, L-smooth
functions: :func:`heavy_ball_lmi_rate` (smallest certified rate with a proven bracket of the
minimal one, or a ``NoCertificate`` result), :func:`verify_certificate` (solver-independent
check in exact arithmetic, :mod:`dpbounds.lmi.exact`) and the rate maps of
:mod:`dpbounds.lmi.rate_map`.
"""

import importlib
from typing import Any

# Loaded on first use (PEP 562): the bound registry imports dpbounds.lmi.heavy_ball_bound to list
# its entry, and listing bounds must not import cvxpy.
_LAZY = {
    "HeavyBallLMI": "heavy_ball_lmi",
    "LMICertificate": "heavy_ball_lmi",
    "NoCertificate": "heavy_ball_lmi",
    "assemble_lmi": "heavy_ball_lmi",
    "heavy_ball_lmi_bound": "heavy_ball_lmi",
    "heavy_ball_lmi_bound_as_printed": "heavy_ball_lmi",
    "heavy_ball_lmi_certificate_at": "heavy_ball_lmi",
    "heavy_ball_lmi_rate": "heavy_ball_lmi",
    "verify_certificate": "heavy_ball_lmi",
    "RateMap": "rate_map",
    "closed_form_rate_map": "rate_map",
    "lmi_rate_map": "rate_map",
}

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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
