"""The numeric ranges of the command line's flags, checked before any library import.

A value out of range is refused by the library function the command calls, but reaching that
function imports scipy, sympy, cvxpy, numba or dp-accounting first: 1.3-2.5 CPU-seconds before
a one-line error. So each command's ranges are **declared** here (stdlib only) and checked
right after argument parsing (:func:`check`); the library checks again (it is the authority,
and the Python API has no other guard).

A declared range may only be *as wide or narrower* than the library's where it refuses:
``tests/test_cli_ranges.py`` runs every command with a value just outside each declared edge
with this check switched off and asserts that the library refuses it too (exit 2), so a range
declared too tight (refusing what the library accepts) fails that test. A range declared
wider than the library's is harmless: the library still refuses. Each entry names the
library check it mirrors.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

__all__ = ["RANGES", "Range", "check", "check_values", "command_key"]


@dataclass(frozen=True)
class Range:
    """A closed or open interval of a flag's values (``integer``: the flag takes integers)."""

    low: float
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the interval (NaN and infinities never do)."""
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def text(self) -> str:
        """The interval as the library's messages write it, e.g. ``(0, 1)``, ``[1, 1e+07]``."""
        lo, hi = _num(self.low), "inf" if math.isinf(self.high) else _num(self.high)
        return (f"{'(' if self.low_open else '['}{lo}, {hi}"
                f"{')' if self.high_open or math.isinf(self.high) else ']'}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


_POS = Range(0.0, low_open=True)  # _validation.check_positive: finite and > 0
_NONNEG = Range(0.0)  # _validation.check_nonnegative
_PROB = Range(0.0, 1.0, low_open=True, high_open=True)  # _validation.check_probability
_INT1 = Range(1, integer=True)  # _validation.check_int(minimum=1)
_INT_POS = Range(0, low_open=True, integer=True)  # check_positive of an integer flag

#: bound / compare: dpbounds.bounds.problem.check_problem (MAX_EPSILON = 100 of
#: dpbounds.privacy.limits, max_horizon's _MAX_HORIZON = 10^7)
_PROBLEM: dict[str, Range] = {
    "dimension": _INT_POS, "dataset_size": _INT_POS,
    "epsilon": Range(0.0, 100.0, low_open=True),
    "delta": _PROB, "lipschitz": _POS, "smoothness": _POS, "initial_gap": _POS,
    "gradient_noise": _POS, "l1_smoothness": _NONNEG, "c2": _POS, "diameter": _POS,
    "strong_convexity": _POS, "sensitivity": _POS, "batch_size": _INT1,
    "max_horizon": Range(1, 10**7, integer=True),
}

#: tune hb / nag: dpbounds.tuning.tune_heavy_ball / tune_nesterov (check_max_horizon: 10^7)
_TUNE: dict[str, Range] = {
    "strong_convexity": _POS, "smoothness": _POS, "dimension": _INT1, "dataset_size": _INT1,
    "batch_size": _INT1, "epsilon": _POS, "sensitivity": _POS, "initial_gap": _NONNEG,
    "max_horizon": Range(1, 10**7, integer=True),
}

#: command key (:func:`command_key`) -> flag dest -> its range
RANGES: dict[str, dict[str, Range]] = {
    # dpbounds.privacy.table.privacy_table (_EPSILON_RANGE, _MAGNITUDE_RANGE, check_int)
    "privacy": {
        "epsilon": Range(1e-6, 100.0), "delta": _PROB, "sensitivity": Range(1e-100, 1e100),
        "steps": Range(1, 10**9, integer=True), "sampling_rate": Range(1e-6, 1.0),
        "dataset_size": Range(1, 10**15, integer=True), "sigma": Range(1e-100, 1e100),
        "scale": Range(1e-100, 1e100),
    },
    "bound": _PROBLEM,
    "compare": _PROBLEM,
    "tune hb": _TUNE,
    # tune_nesterov's c in (0, 1] (Theorems 4.1 / 4.3 need the step c/L <= 1/L)
    "tune nag": {**_TUNE, "step_factor": Range(0.0, 1.0, low_open=True)},
    # heavy_ball_rate: _check_hb (alpha > 0, beta in [0, 1)) and _check_mu_L
    "rate hb": {"step_size": _POS, "momentum": Range(0.0, 1.0, high_open=True),
                "strong_convexity": _POS, "smoothness": _POS},
    # dpbounds.audit.runner.audit: epsilon > 0, delta in (0, 1), confidence in (0, 1),
    # noise_factor >= 0
    "audit": {"epsilon": _POS, "delta": _PROB, "confidence": _PROB, "noise_factor": _NONNEG},
    # dpbounds.verify.study.scaling_study: trials in [2, 10^6]; the fixed values' _LIMITS
    "verify": {
        "trials": Range(2, 10**6, integer=True),
        "dimension": Range(1, 10**5, integer=True), "dataset_size": Range(2, 10**9, integer=True),
        "epsilon": Range(1e-6, 1e3), "delta": Range(1e-300, 0.5),
        "steps": Range(1, 10**9, integer=True), "batch_size": Range(1, 10**9, integer=True),
    },
}

#: pairs (smaller, larger) that must be ordered: mu <= L, the batch within the data set
_ORDERED: dict[str, tuple[tuple[str, str], ...]] = {
    "bound": (("strong_convexity", "smoothness"), ("batch_size", "dataset_size")),
    "compare": (("strong_convexity", "smoothness"), ("batch_size", "dataset_size")),
    "tune hb": (("strong_convexity", "smoothness"), ("batch_size", "dataset_size")),
    "tune nag": (("strong_convexity", "smoothness"), ("batch_size", "dataset_size")),
    "rate hb": (("strong_convexity", "smoothness"),),
}


def flag_used(args: argparse.Namespace, dest: str) -> str:
    """The spelling of ``dest``'s flag the user typed (as :func:`dpbounds.cli.flag_used`,
    which this module may not import: the package imports it), else its canonical flag."""
    from dpbounds.notation import QUANTITIES

    typed = (getattr(args, "_flags_typed", None) or {}).get(dest)
    if typed:
        return str(typed)
    flag = next((q.flag for q in QUANTITIES if q.name == dest), None)
    return flag or "--" + dest.replace("_", "-")


def command_key(args: argparse.Namespace) -> str | None:
    """The key of :data:`RANGES` for the parsed command line, or ``None`` when the command
    checks nothing numeric yet (a listing, ``audit plan``, ``privacy compose``)."""
    cmd = getattr(args, "command", None)
    if cmd in ("tune", "rate"):
        what = getattr(args, f"{cmd}_what", None)
        return f"{cmd} {what}" if what else None
    if getattr(args, "list", False) or getattr(args, "list_mutants", False):
        return None  # a listing reads no problem
    if cmd == "privacy" and getattr(args, "privacy_action", None):
        return None
    if cmd == "bound" and not getattr(args, "name", None):
        return None  # `bound` alone lists
    if cmd == "audit" and (getattr(args, "plan", False) or getattr(args, "algorithm", None)
                           in (None, "plan")):
        return None  # a plan takes no run's values
    return cmd if cmd in RANGES else None


def check(args: argparse.Namespace) -> None:
    """Refuse (``ValueError`` naming the flag as typed and its valid range) a value outside
    its command's declared range, before the command imports the library."""
    key = command_key(args)
    if key is None:
        return
    check_values(args, key)
    for small, large in _ORDERED.get(key, ()):
        a, b = getattr(args, small, None), getattr(args, large, None)
        if a is not None and b is not None and float(a) > float(b):
            raise ValueError(f"{flag_used(args, small)} must be at most "
                             f"{flag_used(args, large)} = {_num(float(b))}, got {_num(float(a))}")


def check_values(args: argparse.Namespace, key: str) -> None:
    """The per-flag part of :func:`check` (each value in its own range) for command ``key``."""
    for dest, rng in RANGES[key].items():
        value = getattr(args, dest, None)
        if value is None or isinstance(value, bool):
            continue
        v = float(value)
        if not rng.contains(v):
            kind = "an integer" if rng.integer else "a number"
            raise ValueError(f"{flag_used(args, dest)} must be {kind} in {rng.text()}, "
                             f"got {_num(v)}")
