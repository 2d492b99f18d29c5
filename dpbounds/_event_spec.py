"""The syntax of an event specification ``KIND:key=value,...`` (``privacy compose --event``).

Split from :mod:`dpbounds.privacy.composition` so that the command line refuses a malformed
event before the accountants' imports (issue 36: an error path paid 0.7-0.8 CPU-s of them,
fuzz 17); :func:`~dpbounds.privacy.composition.parse_event` reads the values.
"""

from __future__ import annotations

from typing import Any

from dpbounds._dp_event_form import MAX_COUNT  # the library's, without NumPy
from dpbounds._suggest import did_you_mean

__all__ = ["EVENT_KINDS", "check_event_values", "check_risk_target", "read_number",
           "split_event"]

#: Keys each event kind takes (``steps`` everywhere).
EVENT_KINDS: dict[str, tuple[str, ...]] = {
    "gaussian": ("z", "sigma", "sens", "q", "sampling", "steps"),
    "laplace": ("b", "sens", "m", "n", "steps"),
    "tree": ("z", "sigma", "sens", "T", "K", "steps"),
    "zcdp": ("rho", "steps"),
    "pure": ("eps", "steps"),
}


def split_event(spec: Any) -> tuple[str, dict[str, str]]:
    """``(kind, {key: value text})`` of ``spec``; ``ValueError`` naming the event for an
    unknown kind or key, a key given twice, an empty item (``z=1,,steps=2``: the command
    line's lists refuse one) or a number that is not plain ASCII."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"event must read KIND:key=value,... with KIND one of "
                         f"{sorted(EVENT_KINDS)}, got {spec!r}")
    kind, _, body = spec.partition(":")
    kind = kind.strip().lower()
    if kind not in EVENT_KINDS:
        raise ValueError(f"event {spec!r}: kind must be one of {sorted(EVENT_KINDS)}, "
                         f"got {kind!r}{did_you_mean(kind, EVENT_KINDS)}")
    kv: dict[str, str] = {}
    items = [s.strip() for s in body.split(",")]
    if body.strip() and not all(items):
        raise ValueError(f"event {spec!r}: an empty item between commas")
    for item in filter(None, items):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in EVENT_KINDS[kind]:
            raise ValueError(f"event {spec!r}: {item!r} is not key=value with key one of "
                             f"{EVENT_KINDS[kind]}")
        if key in kv:
            raise ValueError(f"event {spec!r}: {key} given twice")
        value = value.strip()
        if key != "sampling" and (not value.isascii() or "_" in value):
            # a number: float() reads '１' and '1_0' (as 10); sampling names a scheme
            raise ValueError(f"event {spec!r}: {key}={value!r} is not a plain number (ASCII "
                             "digits, '.', 'e', a sign; no '_')")
        kv[key] = value
    return kind, kv


#: the largest epsilon (and zCDP rho) an event may name (dpbounds.privacy.limits.MAX_EPSILON)
MAX_EPSILON = 100.0
#: the keys read as whole numbers >= 1
COUNT_KEYS = ("steps", "T", "K", "m", "n")


def read_number(spec: str, key: str, text: str) -> float:
    """The finite number ``text`` of ``key`` in the event ``spec``; ``ValueError`` naming both
    for one that does not read or is not finite."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"event {spec!r}: {key} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"event {spec!r}: {key} must be finite, got {text!r}")
    return value


def check_event_values(spec: str, kind: str, kv: dict[str, str]) -> None:
    """Refuse (``ValueError`` naming the event and key) the values of ``split_event(spec)``
    that :func:`~dpbounds.privacy.composition.parse_event` and the mechanisms certainly refuse:
    a number that does not read or is not finite, a count that is not a whole number in
    ``[1, 1e15]``, a noise (``z``, ``sigma``, ``b``) <= 0, a negative ``sens`` (or 0 with
    ``z``), ``q`` outside ``(0, 1]``, ``m > n``, ``rho`` or ``eps`` outside ``[0, 100]``. The
    command line calls it before the accountants' imports: such an error took 0.7-1.0 CPU-s
    (fuzz round 18; issue 36 asks for 0.5). It never refuses what the library accepts
    (``tests/test_event_values_early.py`` compares the two); whatever it leaves, the library
    refuses in its own words."""

    values: dict[str, float] = {}
    for key, text in kv.items():
        if key == "sampling":
            continue
        v = read_number(spec, key, text)
        if key in COUNT_KEYS and (v != int(v) or not 1 <= v <= MAX_COUNT):
            raise ValueError(f"event {spec!r}: {key} must be an integer in [1, "
                             f"{MAX_COUNT:.0e}], got {text!r}")
        values[key] = v + 0.0
    for key in ("z", "sigma", "b"):
        if key in values and not values[key] > 0:
            raise ValueError(f"event {spec!r}: {key} must be > 0 (valid range (0, inf)), got "
                             f"{kv[key]!r}")
    if "sens" in values and (values["sens"] < 0 or values["sens"] == 0 and "z" in values):
        need = "> 0 with z (sigma = z * sens)" if "z" in values else ">= 0"
        raise ValueError(f"event {spec!r}: sens must be {need}, got {kv['sens']!r}")
    if "q" in values and not 0 < values["q"] <= 1:
        raise ValueError(f"event {spec!r}: q must lie in (0, 1], got {kv['q']!r}")
    if "m" in values and "n" in values and values["m"] > values["n"]:
        raise ValueError(f"event {spec!r}: m (the subsample) must be <= n (the records), got "
                         f"m = {kv['m']}, n = {kv['n']}")
    for key in ("rho", "eps"):
        if key in values and values[key] > MAX_EPSILON:  # the library's words
            raise ValueError(f"event {spec!r}: {key} must be <= {MAX_EPSILON:g} (dpbounds "
                             f"evaluates epsilon <= {MAX_EPSILON:g}), got {kv[key]!r}")
        if key in values and values[key] < 0:
            raise ValueError(f"event {spec!r}: {key} must be >= 0, got {kv[key]!r}")


def check_risk_target(value: Any, name: str = "risk_target") -> tuple[float, float]:
    """``(tpr, fpr)`` of a risk target: two real numbers with ``0 < fpr < tpr < 1`` (the
    range :func:`~dpbounds.privacy.calibrate.calibrate_to_risk` accepts), checked before any
    composition. ``ValueError`` naming ``name`` otherwise: a string was unpacked character by
    character, a 3-tuple raised "too many values to unpack", ``True`` was read as TPR 1, and
    ``tpr < fpr`` was blamed on the other events (fuzz round 18)."""
    import math
    import numbers

    try:
        pair = (list(value) if not isinstance(value, str | bytes | dict)
                and getattr(value, "ndim", 1) == 1 else None)
    except TypeError:  # not iterable
        pair = None
    if pair is None or len(pair) != 2:
        raise ValueError(f"{name} must be a pair (tpr, fpr) of numbers, e.g. (0.1, 0.01), "
                         f"got {value!r:.100}")
    out = []
    for part, v in zip(("tpr", "fpr"), pair, strict=True):
        # a real number: Python's, NumPy's (np.float16 to longdouble, integers) or a 0-d
        # array of one; not a bool (True read as TPR 1) nor text
        kind = getattr(getattr(v, "dtype", None), "kind", "")
        real = (isinstance(v, numbers.Real) and kind != "b" if not hasattr(v, "dtype")
                else kind in "iuf" and getattr(v, "ndim", 0) == 0)
        if isinstance(v, bool) or not real:
            raise ValueError(f"{name}: {part} must be a number, got {v!r:.60}")
        try:
            f = float(v)
        except OverflowError:
            f = math.inf
        if not math.isfinite(f):
            raise ValueError(f"{name}: {part} must be finite, got {v!r:.60}")
        out.append(f + 0.0)
    tpr, fpr = out
    if not 0.0 < fpr < 1.0:
        raise ValueError(f"{name}: fpr must lie in (0, 1), got {fpr!r}")
    if not fpr < tpr < 1.0:
        raise ValueError(f"{name}: tpr must lie in (fpr, 1) = ({fpr!r}, 1), got {tpr!r}: an "
                         "attack with TPR <= FPR is no better than a coin flip, which no "
                         "finite noise guarantees, and TPR 1 is allowed without noise")
    return tpr, fpr
