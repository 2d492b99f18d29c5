"""The syntax of an event specification ``KIND:key=value,...`` (``privacy compose --event``).

Split from :mod:`dpbounds.privacy.composition` so that the command line refuses a malformed
event before the accountants' imports (issue 36: an error path paid 0.7-0.8 CPU-s of them,
fuzz 17); :func:`~dpbounds.privacy.composition.parse_event` reads the values.
"""

from __future__ import annotations

from typing import Any

from dpbounds._suggest import did_you_mean

__all__ = ["EVENT_KINDS", "check_risk_target", "split_event"]

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


def check_risk_target(value: Any, name: str = "risk_target") -> tuple[float, float]:
    """``(tpr, fpr)`` of a risk target: two real numbers with ``0 < fpr < tpr < 1`` (the
    range :func:`~dpbounds.privacy.calibrate.calibrate_to_risk` accepts), checked before any
    composition. ``ValueError`` naming ``name`` otherwise: a string was unpacked character by
    character, a 3-tuple raised "too many values to unpack", ``True`` was read as TPR 1, and
    ``tpr < fpr`` was blamed on the other events (fuzz round 18)."""
    import math

    if isinstance(value, str | bytes) or not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{name} must be a pair (tpr, fpr) of numbers, e.g. (0.1, 0.01), "
                         f"got {value!r:.100}")
    out = []
    for part, v in zip(("tpr", "fpr"), value, strict=True):
        if isinstance(v, bool) or not isinstance(v, int | float) and type(v).__name__ not in (
                "float64", "float32", "int64", "int32"):
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
