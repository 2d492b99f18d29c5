"""``dp_accounting``'s named-tuple form of a ``DpEvent``, read as the object form (stdlib only).

``event.to_named_tuple()`` is how ``dp_accounting`` serialises an event; written with
``json.dump`` it becomes a positional list, ``["dp_accounting.dp_event", "GaussianDpEvent",
1.0]``, nested for composed events. :func:`from_named_tuple_form` turns such a list into the
object form ``{"class_name": ..., field: value}`` that
:func:`dpbounds.privacy.events.dp_event_from_json` and ``dpbounds privacy compose
--from-dp-event`` read, given each class's fields in declaration order (``attr.fields`` of
the class; the command line's catalog holds them, so it converts before importing
``dp_accounting``). Before, such a file was refused with "must be an object with a
'class_name'".

Example
-------
>>> from_named_tuple_form(["dp_accounting.dp_event", "GaussianDpEvent", 1.0],
...                       {"GaussianDpEvent": ["noise_multiplier"]})
{'class_name': 'GaussianDpEvent', 'noise_multiplier': 1.0}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["FIELD_RANGES", "MODULE", "check_fields", "field_range_error",
           "from_named_tuple_form", "is_named_tuple_form"]

#: the first entry of every event in the named-tuple form
MODULE = "dp_accounting.dp_event"


#: ``(class, field) -> (low, low_open, high)``: the values of an event's real field that
#: dpbounds' mechanism of it accepts (a noise multiplier of 0 is no mechanism; sampling at
#: rate 0 composes nothing). Checked where the event is read, naming the event and the field
#: (before: "dp_event[0]: sigma must be > 0", after every accountant's imports).
FIELD_RANGES: dict[tuple[str, str], tuple[float, bool, float]] = {
    ("GaussianDpEvent", "noise_multiplier"): (0.0, True, math.inf),
    ("LaplaceDpEvent", "noise_multiplier"): (0.0, True, math.inf),
    ("SingleEpochTreeAggregationDpEvent", "noise_multiplier"): (0.0, True, math.inf),
    ("PoissonSampledDpEvent", "sampling_probability"): (0.0, True, 1.0),
    ("DiscreteLaplaceDpEvent", "noise_parameter"): (0.0, True, math.inf),
    # rho > 100 means epsilon > 100 at any delta, where dpbounds evaluates no guarantee
    # (dpbounds.privacy.limits.MAX_EPSILON; rho = 1e308 overflowed the RDP grid)
    ("ZCDpEvent", "rho"): (0.0, False, 100.0),
}

#: the most runs a count composes (dpbounds._validation.MAX_COUNT, which imports NumPy)
MAX_COUNT = 10**15


def _whole(value: Any) -> bool:
    """Whether ``value`` is a whole number as JSON writes one (an int, or a float without a
    fraction; not a bool, not text)."""
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and (isinstance(value, int) or math.isfinite(value) and value == math.floor(value)))


def _beyond_float(value: int) -> bool:
    """Whether the integer has no float64 (10**308 has one; 2**1024 does not)."""
    try:
        float(value)
    except OverflowError:
        return True
    return False


def field_range_error(cls: str, field: str, value: Any) -> str | None:
    """The words refusing a real ``value`` of ``cls.field`` outside :data:`FIELD_RANGES`, or
    ``None`` (in range, a field without a range, or not a finite real number: its type is
    refused where the value is read as a number)."""
    bounds = FIELD_RANGES.get((cls, field))
    if bounds is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and _beyond_float(value):
        # math.isfinite(10**400) raised OverflowError, naming neither file nor field (fuzz 18)
        return (f"{field} of {cls} must be a finite number, got an integer beyond the "
                "float range (~1e308)")
    if not math.isfinite(value):
        return None
    low, low_open, high = bounds
    if (low < value or (value == low and not low_open)) and value <= high:
        return None
    shown = "inf" if math.isinf(high) else f"{high:g}"
    interval = f"{'(' if low_open else '['}{low:g}, {shown}{')' if math.isinf(high) else ']'}"
    return f"{field} of {cls} must lie in {interval}, got {value!r}"


def check_fields(data: Mapping[str, Any], where: str) -> None:
    """Refuse (``ValueError`` naming ``where``) the first field of one event in the object
    form whose value is out of range: a ``SelfComposedDpEvent``'s count that is not a whole
    number >= 1, or a real field outside :data:`FIELD_RANGES`. Nested events are not
    visited (their readers check them first)."""
    cls = data.get("class_name")
    if cls == "SelfComposedDpEvent" and "count" in data:
        # 2.5 runs would be read as 2 (an under-count); 0 composed nothing, every accountant
        # n/a, exit 0 (dp_accounting's own ledger refuses it: "count must be positive")
        v = data["count"]
        if not _whole(v) or v < 1 or v > MAX_COUNT:
            # (str() of an integer past 4300 digits raises ValueError itself)
            shown = ("an integer beyond the float range (~1e308)" if isinstance(v, int)
                     and not isinstance(v, bool) and _beyond_float(v) else repr(v))
            raise ValueError(f"{where}.count must be a whole number in [1, {MAX_COUNT:.0e}], "
                             f"got {shown}")
    if cls == "DiscreteLaplaceDpEvent" and "sensitivity" in data:
        v = data["sensitivity"]  # 0 was read as epsilon 0, refused later without the file
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{where}: sensitivity of DiscreteLaplaceDpEvent must be a whole "
                             f"number >= 1, got {v!r}")
    if cls == "SampledWithoutReplacementDpEvent":
        # true, 2.5 or 0 were refused only after the accountants' imports (2.2 CPU-s: fuzz
        # round 18), in the library's words (events.py: whole numbers, m in [1, n])
        sizes: dict[str, Any] = {}
        for key in ("source_dataset_size", "sample_size"):
            if key not in data:
                continue
            v = data[key]
            if not _whole(v) or v < 1:
                raise ValueError(f"{where}: {key} of SampledWithoutReplacementDpEvent must be "
                                 f"an integer >= 1, got {v!r:.60}")
            sizes[key] = v
        if len(sizes) == 2 and sizes["sample_size"] > sizes["source_dataset_size"]:
            raise ValueError(f"{where}: sample_size of SampledWithoutReplacementDpEvent must "
                             f"lie in [1, source_dataset_size={sizes['source_dataset_size']}], "
                             f"got {sizes['sample_size']}")
    for key, value in data.items():
        words = field_range_error(str(cls), key, value)
        if words is not None:
            raise ValueError(f"{where}: {words}")


def is_named_tuple_form(data: Any) -> bool:
    """Whether ``data`` is one event in the named-tuple form (a list led by :data:`MODULE`
    and a class name)."""
    return (isinstance(data, (list, tuple)) and len(data) >= 2 and data[0] == MODULE
            and isinstance(data[1], str))


def from_named_tuple_form(data: Any, fields: Mapping[str, Sequence[str]],
                          where: str = "event", depth: int = 0) -> Any:
    """``data`` with every event in the named-tuple form (at any depth) written as an object;
    anything else unchanged. ``fields``: class name -> its fields in declaration order. A
    class not in ``fields`` becomes ``{"class_name": name}`` (refused by name where the
    events are read); a wrong number of values is a ``ValueError`` naming ``where``."""
    if depth > 200:
        return data  # refused where the events are read (nested too deeply)
    if is_named_tuple_form(data):
        name, values = data[1], list(data[2:])
        names = fields.get(name)
        if names is None:
            return {"class_name": name}
        if len(values) != len(names):
            raise ValueError(f"{where}: {name} in dp_accounting's named-tuple form holds "
                             f"{len(values)} value(s) after its class name; its fields are "
                             f"{list(names)}")
        return {"class_name": name,
                **{k: from_named_tuple_form(v, fields, f"{where}.{k}", depth + 1)
                   for k, v in zip(names, values)}}
    if isinstance(data, list) and any(is_named_tuple_form(v) for v in data):
        return [from_named_tuple_form(v, fields, f"{where}[{i}]", depth + 1)
                for i, v in enumerate(data)]
    if isinstance(data, dict):
        return {k: from_named_tuple_form(v, fields, f"{where}.{k}", depth + 1)
                for k, v in data.items()}
    return data
