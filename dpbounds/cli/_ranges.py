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
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RANGES", "Range", "check", "check_values", "command_key"]


@dataclass(frozen=True)
class Range:
    """An interval of a flag's values and the message the library gives outside it.

    ``name``: the name the library's message uses (``None``: the flag as typed, as
    :func:`dpbounds.bounds.problem.check_problem` does); ``low_msg`` / ``high_msg``: the
    library's message below / above the interval (``str.format`` fields ``name``, ``value``
    (as :func:`dpbounds._validation._show` writes it) and ``v`` (the float)); ``integer``: the
    flag takes integers.
    """

    low: float
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    name: str | None = None
    low_msg: str = ""
    high_msg: str = ""
    #: checked only when this holds of the parsed arguments (the library checks the value
    #: only on that path: ``--E0`` of ``rate hb`` with ``--steps``)
    when: Callable[[argparse.Namespace], bool] | None = None

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the interval (NaN and infinities never do)."""
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def message(self, name: str, value: float) -> str:
        """The library's message for ``value`` outside the interval."""
        below = not math.isfinite(value) or (value <= self.low if self.low_open
                                             else value < self.low)
        template = self.low_msg if below or not self.high_msg else self.high_msg
        return template.format(name=self.name or name, value=_show(value), v=float(value))


def _show(value: float) -> str:
    """As :func:`dpbounds._validation._show` (which imports NumPy): ``-1.0``, ``0``,
    ``1.00e+20`` for an integer of 17 or more digits."""
    if isinstance(value, int) and abs(value) >= 10**16:
        digits = str(abs(value))
        return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"
    return repr(value)


# the library's messages (dpbounds._validation)
_M_POS = "{name} must be > 0 (valid range (0, inf)), got {value}"  # check_positive
_M_NONNEG = "{name} must be >= 0 (valid range [0, inf)), got {value}"  # check_nonnegative


def _pos(name: str | None = None, integer: bool = False) -> Range:
    return Range(0.0, low_open=True, integer=integer, name=name, low_msg=_M_POS)


def _nonneg(name: str | None = None) -> Range:
    return Range(0.0, name=name, low_msg=_M_NONNEG)


def _open(low: float, high: float, name: str | None = None) -> Range:  # check_open_interval
    return Range(low, high, low_open=True, high_open=True, name=name,
                 low_msg=f"{{name}} must lie in ({low!r}, {high!r}), got {{value}}")


def _closed(low: float, high: float, name: str | None = None) -> Range:  # check_closed_interval
    return Range(low, high, name=name,
                 low_msg=f"{{name}} must lie in [{low!r}, {high!r}], got {{value}}")


def _int(low: int, high: float = math.inf, name: str | None = None) -> Range:  # check_int
    top = "inf" if math.isinf(high) else _show(int(high))
    return Range(low, high, integer=True, name=name,
                 low_msg=f"{{name}} must be an integer in [{_show(low)}, {top}], got {{value}}")


def _study(key: str, low: float, high: float, integer: bool = False) -> Range:
    """dpbounds.verify.study._check_value of the fixed value ``key`` (its _LIMITS)."""
    return Range(low, high, integer=integer, name=key,
                 low_msg=f"{{name}} must lie in [{low:.3g}, {high:.3g}], got {{v:.6g}}")


#: bound / compare: dpbounds.bounds.problem.check_problem (flag as typed; eps <= MAX_EPSILON =
#: 100 of dpbounds.privacy.limits.check_epsilon_limit; max_horizon <= _MAX_HORIZON = 10^7)
_PROBLEM: dict[str, Range] = {
    "dimension": _pos(integer=True), "dataset_size": _pos(integer=True),
    "epsilon": Range(0.0, 100.0, low_open=True, low_msg=_M_POS, high_msg=(
        "{name} must be at most 100, got {value}: beyond it an attack's odds may grow by e^100 "
        "~ 2.7e43 (no privacy), and accountants leave their range")),
    "delta": _open(0.0, 1.0), "lipschitz": _pos(), "smoothness": _pos(), "initial_gap": _pos(),
    "gradient_noise": _pos(), "l1_smoothness": _nonneg(), "c2": _pos(), "diameter": _pos(),
    "strong_convexity": _pos(), "sensitivity": _pos(),
    "batch_size": Range(1, integer=True, low_msg="{name} must be an integer in [1, inf], "
                                                 "got {value}"),
    "max_horizon": Range(1, 10**7, integer=True,
                         low_msg="{name} must be an integer in [1, 1e+07], got {value}"),
}

#: tune hb / nag: dpbounds.tuning.tune_heavy_ball / tune_nesterov (API names; check_max_horizon)
_TUNE: dict[str, Range] = {
    "strong_convexity": _pos("mu"), "smoothness": _pos("L"), "dimension": _int(1, 10**15, name="d"),
    "dataset_size": _int(1, name="n"), "epsilon": _pos("epsilon"),
    "sensitivity": _pos("sensitivity"), "initial_gap": _nonneg("initial_gap"),
    "max_horizon": _int(1, 10**7, name="max_horizon"),
}

#: command key (:func:`command_key`) -> flag dest -> its range
RANGES: dict[str, dict[str, Range]] = {
    # dpbounds.privacy.table.privacy_table (_EPSILON_RANGE, _MAGNITUDE_RANGE, check_int)
    "privacy": {
        "epsilon": _closed(1e-6, 100.0, "epsilon"), "delta": _open(0.0, 1.0, "delta"),
        "sensitivity": _closed(1e-100, 1e100, "sensitivity"),
        "steps": _int(1, 10**9, "steps"), "sampling_rate": _closed(1e-6, 1.0, "sampling_rate"),
        "dataset_size": _int(1, 10**15, "dataset_size"),
        "sigma": _closed(1e-100, 1e100, "sigma"), "scale": _closed(1e-100, 1e100, "scale"),
    },
    # dpbounds.bounds.compare.regime: the target of --smallest / --largest
    "bound": {**_PROBLEM, "target": Range(
        0.0, low_open=True, low_msg="{name} must be > 0 (a bound is positive)", name="target",
        when=lambda a: bool(getattr(a, "smallest", None) or getattr(a, "largest", None)))},
    "compare": _PROBLEM,
    "tune hb": _TUNE,
    # tune_nesterov's c in (0, 1] (Theorems 4.1 / 4.3 need the step c/L <= 1/L); its floor
    # 1e-100 (the noise weights underflow) is checked in :func:`check`
    "tune nag": {**_TUNE, "step_factor": Range(0.0, 1.0, low_open=True, name="c",
                                               low_msg=(
        "{name} must lie in (0, 1] (Theorems 4.1/4.3 need the step c/L <= 1/L), got {v}"),
                                               high_msg=(
        "{name} must lie in (0, 1] (Theorems 4.1/4.3 need the step c/L <= 1/L), got {v}"))},
    # heavy_ball_rate: _check_hb (alpha > 0, beta in [0, 1)) and _check_mu_L
    "rate hb": {"step_size": _pos("alpha"),
                # quadratic_worst_case's horizon (its check_int), with --steps (with --pep the
                # cap of the PEP, 200, is refused first: heavy_ball_cmd._check_pep_args)
                "steps": Range(0, 10**7, integer=True, name="steps",
                               low_msg="{name} must be an integer in [0, 10000000], got {value}",
                               when=lambda a: not (getattr(a, "pep", False)
                                                   or getattr(a, "pep_window", None))),
                "momentum": Range(0.0, 1.0, high_open=True, name="beta",
                                  low_msg="{name} must lie in [0, 1), got {value}"),
                "strong_convexity": _pos("mu"), "smoothness": _pos("L"),
                # quadratic_worst_case, run with --steps
                "initial_gap": Range(0.0, name="initial_gap", low_msg=_M_NONNEG,
                                     when=lambda a: getattr(a, "steps", None) is not None),
                "noise_second_moment": Range(
                    0.0, name="laplace_var", low_msg="{name} must be not nan and >= 0 at every "
                                                     "step",
                    when=lambda a: getattr(a, "steps", None) is not None)},
    # dpbounds.audit.runner.audit: epsilon in (0, 100], delta in (0, 1), confidence in (0, 1) (its
    # own message), noise_factor >= 0
    "audit": {"epsilon": Range(0.0, 100.0, low_open=True, name="epsilon", low_msg=_M_POS,
                               high_msg=_PROBLEM["epsilon"].high_msg),
              "delta": _open(0.0, 1.0, "delta"),
              "confidence": Range(0.0, 1.0, low_open=True, high_open=True, name="confidence",
                                  low_msg="{name} must lie in (0, 1), got {value}"),
              # its top (1e6) too: audit_cmd._early_checks, in the same words
              "noise_factor": Range(0.0, name="noise_factor",
                                    low_msg="{name} must lie in [0, 1e+06], got {v:g}"),
              "max_memory_gb": Range(0.0, low_open=True, name="max_memory_gb", low_msg=_M_POS,
                                     when=lambda a: not getattr(a, "allow_large", False))},
    # dpbounds.verify.study.scaling_study: trials in [2, 10^6]; the fixed values' _LIMITS
    "verify": {
        "trials": _int(2, 10**6, "trials"), "seed": _int(0, name="seed"),  # check_seed
        # _grid: each grid value (then the variable's _LIMITS, left to the library)
        "values": Range(0.0, low_open=True, name="values",
                        low_msg="{name} must be positive and finite, got {v:.6g}"),
        "dimension": _study("d", 1, 10**5, True), "dataset_size": _study("N", 2, 10**9, True),
        "epsilon": _study("eps", 1e-6, 1e3), "delta": _study("delta", 1e-300, 0.5),
        "steps": _study("T", 1, 10**9, True), "batch_size": _study("B", 1, 10**9, True),
        "start_distance": _study("start", 0.0, 1e6),
        # dpbounds.sweep.executors._check_workers (LocalProcesses; MAX_WORKERS = 1024)
        "workers": Range(1, 1024, integer=True, name="workers", low_msg=(
            "{name} must be an int in [1, 1024] (each is a process of ~100 MB), got {value}")),
    },
}

#: verify's swept variable -> the flag it overrides (``verify_cmd`` refuses that flag first)
_SWEPT = {"d": "dimension", "N": "dataset_size", "eps": "epsilon"}
#: the swept variables that count (dpbounds.verify.study._INTEGER_VARS among _SWEPT's)
_VERIFY_COUNTS = ("d", "N")

_ORDER_PROBLEM = "{small} must lie in (0, L={b:g}] (mu <= L), got {a:g}"
_BATCH_PROBLEM = ("{small} must lie in [1, N={b:g}] (the batch is drawn from the data set), "
                  "got {a:g}")
_ORDER_TUNE = "mu must lie in (0, L={b}], got {a}"
_BATCH_TUNE = "m must be an integer in [1, {b}], got {a}"

#: pairs (smaller, larger, message) that must be ordered: mu <= L, the batch within the data
_ORDERED: dict[str, tuple[tuple[str, str, str], ...]] = {
    "bound": (("strong_convexity", "smoothness", _ORDER_PROBLEM),
              ("batch_size", "dataset_size", _BATCH_PROBLEM)),
    "compare": (("strong_convexity", "smoothness", _ORDER_PROBLEM),
                ("batch_size", "dataset_size", _BATCH_PROBLEM)),
    "tune hb": (("strong_convexity", "smoothness", _ORDER_TUNE),
                ("batch_size", "dataset_size", _BATCH_TUNE)),
    "tune nag": (("strong_convexity", "smoothness", _ORDER_TUNE),
                 ("batch_size", "dataset_size", _BATCH_TUNE)),
    "rate hb": (("strong_convexity", "smoothness", _ORDER_TUNE),),
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
        key = f"{cmd} {what}" if what else None
        return key if key in RANGES else None  # e.g. `tune bound` checks its own values
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
    """Refuse a value outside its command's declared range, before the command imports the
    library: ``ValueError`` with the library's own message (naming the parameter and its
    valid range)."""
    key = command_key(args)
    if key is None:
        return
    check_values(args, key)
    values = getattr(args, "values", None) if key == "verify" else None
    if values and len(values) >= 2 and len(set(values)) == len(values):
        # (fewer or repeated values: the command's own refusal comes first, as the library's)
        # each grid value in the swept variable's own range (the study's _check_value, after
        # its imports: 1.0-1.2 CPU-s for `--vary N --values 1.5 1000`)
        dest = _SWEPT.get(str(getattr(args, "scaling_variable", "")))
        rng = RANGES["verify"].get(dest or "")
        if rng is not None:
            for v in values:
                if not rng.contains(float(v)):
                    raise ValueError(rng.message(str(rng.name), v))
                # a count (d, N) that is not whole, in the study's words (2.0 CPU-s before)
                if rng.name in _VERIFY_COUNTS and float(v) != int(float(v)):
                    raise ValueError(f"values of {rng.name} must be integers, got "
                                     f"{float(v):.6g}")
    if key in ("tune hb", "tune nag"):  # the library's words, which name n and c's floor
        m, n = getattr(args, "batch_size", None), getattr(args, "dataset_size", None)
        if m is not None and n is not None and float(m) < 1:  # m = 0: 1.1 CPU-s before
            raise ValueError(f"m must be an integer in [1, {_show(int(float(n)))}], got "
                             f"{_show(m)}")
        c = getattr(args, "step_factor", None)
        if c is not None and 0 < float(c) < 1e-100:
            raise ValueError(f"c must be at least 1e-100 (the steps' noise weights, ~ (c/L)^2, "
                             f"underflow below it), got {float(c)}")
    for small, large, template in _ORDERED.get(key, ()):
        a, b = getattr(args, small, None), getattr(args, large, None)
        if a is not None and b is not None and float(a) > float(b):
            if template in (_ORDER_TUNE,):  # the library converts both to float first
                a, b = float(a), float(b)
            raise ValueError(template.format(small=flag_used(args, small), a=a, b=b))


def check_values(args: argparse.Namespace, key: str) -> None:
    """The per-flag part of :func:`check` (each value in its own range) for command ``key``."""
    swept = _SWEPT.get(str(getattr(args, "scaling_variable", ""))) if key == "verify" else None
    for dest, rng in RANGES[key].items():
        value = getattr(args, dest, None)
        if value is None or isinstance(value, bool) or dest == swept:
            continue  # a flag of the swept variable is refused by the command (its own words)
        if rng.when is not None and not rng.when(args):
            continue
        for v in value if isinstance(value, list) else [value]:  # a grid: each value
            if not rng.contains(float(v)):
                flag = flag_used(args, dest)
                msg = rng.message(flag, v)
                if rng.name and rng.name != flag.lstrip("-").replace("-", "_"):
                    msg += f" ({flag})"  # the library's name for it is not the flag typed
                raise ValueError(msg)
