"""The shared problem description that every registered bound is evaluated at.

A problem is a plain dictionary keyed by the bounds' symbols (see ``docs/notation.md``):

* always present (defaults of ``dpbounds compare`` with no options): ``d, N, eps, delta, G,
  L, R`` (:data:`DEFAULT_PROBLEM`);
* optional, for the bounds that need them (:data:`OPTIONAL_PROBLEM`): Yang et al.'s ``tau0,
  L1, c2``, the convex bounds' ``diam``, and the strongly convex keys ``mu`` (strong
  convexity), ``S1`` (sensitivity of the per-step gradient sum), ``m`` (batch size, default
  ``N``) and ``max_horizon`` (largest horizon searched, default 1000: the largest ``T`` of Kuru
  et al.'s Section 5);
* ``problem_class``: ``"nonconvex"``, ``"convex"``, ``"strongly_convex"`` or ``"quadratic"``
  (:func:`problem_class`: by default ``"strongly_convex"`` when ``mu`` is given, else
  ``"nonconvex"``).

Example
-------
>>> from dpbounds.bounds.problem import check_problem, problem_class
>>> p = check_problem({"N": 1e5, "mu": 0.1, "L": 1.0})
>>> problem_class(p)
'strongly_convex'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpbounds._validation import check_nonnegative, check_open_interval, check_positive
from dpbounds.notation import quantity
from dpbounds.privacy.limits import check_epsilon_limit, warn_no_privacy

__all__ = ["DEFAULT_PROBLEM", "PROBLEM_QUANTITIES", "check_problem", "problem_class"]

#: Defaults of the shared problem description (``dpbounds compare`` with no options).
DEFAULT_PROBLEM: dict[str, float] = {
    "d": 100.0, "N": 1e5, "eps": 1.0, "delta": 1e-5, "G": 1.0, "L": 1.0, "R": 1.0,
}

#: Optional keys -> their quantity in :mod:`dpbounds.notation` (for messages and flags).
OPTIONAL_PROBLEM: dict[str, str] = {
    "tau0": "gradient_noise", "L1": "l1_smoothness", "c2": "c2", "diam": "diameter",
    "mu": "strong_convexity", "S1": "sensitivity", "m": "batch_size",
    "max_horizon": "max_horizon",
}

#: the quantity of each always-present key
_DEFAULT_QUANTITY = {"d": "dimension", "N": "dataset_size", "eps": "epsilon", "delta": "delta",
                     "G": "lipschitz", "L": "smoothness", "R": "initial_gap"}

#: every problem key -> its quantity in :mod:`dpbounds.notation` (the CLI's flags)
PROBLEM_QUANTITIES: dict[str, str] = {**_DEFAULT_QUANTITY, **OPTIONAL_PROBLEM,
                                      "problem_class": "problem_class"}

#: Problem classes from the most general to the most specific: a bound for class ``c`` applies
#: to every problem of a class at or after ``c`` in this order.
CLASSES: tuple[str, ...] = ("nonconvex", "convex", "strongly_convex", "quadratic")

#: largest admissible max_horizon (the strongly convex horizon searches keep O(T) arrays)
_MAX_HORIZON = 10**7


def describe_key(key: str) -> str:
    """A problem key in words with its flags, e.g. ``"strong convexity mu (--strong-convexity,
    --mu)"``."""
    name = OPTIONAL_PROBLEM.get(key) or _DEFAULT_QUANTITY.get(key)
    if name is None:
        return repr(key)
    flags = ", ".join(quantity(name).flags)
    words = name.replace("_", " ")
    return f"{words} {key} ({flags})" if flags else f"{words} {key}"


def problem_class(problem: Mapping[str, Any]) -> str:
    """The problem's class: ``problem["problem_class"]``, else ``"strongly_convex"`` when ``mu``
    is given, else ``"nonconvex"``."""
    given = problem.get("problem_class")
    if given is not None:
        return str(given)
    return "strongly_convex" if problem.get("mu") is not None else "nonconvex"


def _integer(name: str, value: Any, minimum: int, maximum: float = math.inf) -> float:
    """An integer in ``[minimum, maximum]``; every refusal states that range (0 read "must be
    > 0 (valid range (0, inf))" for a horizon whose range is [1, 1e7])."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v) or v != math.floor(v) or not minimum <= v <= maximum:
        raise ValueError(f"{name} must be an integer in [{minimum}, {maximum:g}], got {value!r}")
    return v


def check_problem(problem: Mapping[str, Any], *, prefix: str = "",
                  flags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The shared problem with every value checked (ValueError naming the input otherwise).

    ``d, N, eps, G, L, R`` and ``tau0, c2, diam, mu, S1`` must be finite and > 0, ``eps`` at
    most 100 and ``delta`` in (0, 1) (``delta > 1/N`` issues a
    :class:`~dpbounds.privacy.limits.NoPrivacyWarning`: :mod:`dpbounds.privacy.limits`),
    ``L1`` finite and >= 0, ``m`` an integer in [1, N], ``max_horizon`` an integer in
    [1, 10^7], ``mu <= L``, ``problem_class`` one of :data:`CLASSES`; unknown keys pass through
    unchanged (a theorem may use them). The message names ``flags[key]`` when given (the
    spelling the user typed), else ``prefix + key``.
    """
    def name(k: str) -> str:
        return (flags or {}).get(k, prefix + k)

    out = dict(problem)
    for k, v in problem.items():
        if k == "delta":
            out[k] = float(check_open_interval(name(k), v, 0.0, 1.0))
        elif k == "L1":
            out[k] = float(check_nonnegative(name(k), v))
        elif k == "m":
            out[k] = _integer(name(k), v, 1)
        elif k == "max_horizon":
            out[k] = _integer(name(k), v, 1, _MAX_HORIZON)
        elif k == "problem_class":
            if v not in CLASSES:
                raise ValueError(f"{name(k)} must be one of {', '.join(CLASSES)}, got {v!r}")
        elif k in DEFAULT_PROBLEM or k in OPTIONAL_PROBLEM:
            out[k] = float(check_positive(name(k), v))
            if k == "eps":
                check_epsilon_limit(name(k), out[k])
    if "mu" in out and "L" in out and out["mu"] > out["L"]:
        raise ValueError(f"{name('mu')} must lie in (0, L={out['L']:g}] (mu <= L), "
                         f"got {out['mu']:g}")
    if "m" in out and "N" in out and out["m"] > out["N"]:
        raise ValueError(f"{name('m')} must lie in [1, N={out['N']:g}] (the batch is drawn from "
                         f"the data set), got {out['m']:g}")
    if "delta" in out and "N" in out:  # a correct bound about no privacy: flagged, not refused
        warn_no_privacy(None, out["delta"], out["N"], stacklevel=2)
    if out.get("problem_class") in ("strongly_convex", "quadratic") and "mu" not in out:
        raise ValueError(f"{name('problem_class')}={out['problem_class']} needs the strong "
                         f"convexity {name('mu')}")
    return out
