"""The syntax of an event specification ``KIND:key=value,...`` (``privacy compose --event``).

Split from :mod:`dpbounds.privacy.composition` so that the command line refuses a malformed
event before the accountants' imports (issue 36: an error path paid 0.7-0.8 CPU-s of them,
fuzz 17); :func:`~dpbounds.privacy.composition.parse_event` reads the values.
"""

from __future__ import annotations

from typing import Any

from dpbounds._suggest import did_you_mean

__all__ = ["EVENT_KINDS", "split_event"]

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
