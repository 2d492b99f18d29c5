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

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MODULE", "from_named_tuple_form", "is_named_tuple_form"]

#: the first entry of every event in the named-tuple form
MODULE = "dp_accounting.dp_event"


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
