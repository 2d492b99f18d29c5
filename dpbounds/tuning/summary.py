"""Tuned-vs-classical tables for Kuru et al.'s Section-5 problem (text; used by the demo)."""

from __future__ import annotations

from dpbounds.settings import logistic_regression
from dpbounds.tuning.heavy_ball import tune_heavy_ball
from dpbounds.tuning.nesterov import tune_nesterov

__all__ = ["figure3_summary"]


def figure3_summary(*, lmi: bool = False, max_horizon: int = 1000,
                    progress: bool = False) -> str:
    """Tuned-vs-classical tables for the Figure-3 setting
    (:func:`dpbounds.settings.logistic_regression`).

    ``lmi=True`` adds the all-of-:math:`\\mathcal S_{\\mu,L}` heavy-ball table (an LMI per grid
    point: 10-25 s on a 2-core machine; ``progress=True`` shows a bar on a terminal).
    """
    s = logistic_regression()
    parts = ["Kuru et al. Figure-3 setting: " + ", ".join(
        f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}" for k, v in s.items())]
    if not isinstance(lmi, bool):
        raise TypeError(f"lmi must be True or False, got {lmi!r}")
    hb = tune_heavy_ball(**s, max_horizon=max_horizon, progress=progress)
    parts += ["", "DP heavy ball, quadratic class (Theorem 3.5):", hb.table()]
    if lmi:
        hbl = tune_heavy_ball(**s, max_horizon=max_horizon,
                              function_class="smooth_strongly_convex", progress=progress)
        parts += ["", "DP heavy ball, all of S_mu,L (Prop. 3.4 certificates):", hbl.table()]
    nag = tune_nesterov(**s, max_horizon=max_horizon)
    parts += ["", "DP-NAG / DP-MASG (Theorem 4.1 / 4.3, Prop. 4.2, Remark 4.1):", nag.table()]
    return "\n".join(parts)
