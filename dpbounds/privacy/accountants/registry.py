"""The accountants by name (``'rdp'``, ``'zcdp'``, ``'pld'``, ``'pure'``, ``'basic'``) and the
factory :func:`make_accountant`.
"""

from __future__ import annotations

from typing import Any

from dpbounds._validation import check_choice
from dpbounds.privacy.accountants.base import Accountant
from dpbounds.privacy.accountants.pld_accountant import PldAccountant
from dpbounds.privacy.accountants.pure_dp_accountant import BasicAccountant, PureDpAccountant
from dpbounds.privacy.accountants.rdp_accountant import RdpAccountant
from dpbounds.privacy.accountants.zcdp_accountant import ZcdpAccountant

__all__ = [
    "ACCOUNTANTS",
    "make_accountant",
]


#: Accountant classes by name.
ACCOUNTANTS: dict[str, type[Accountant]] = {
    "rdp": RdpAccountant,
    "zcdp": ZcdpAccountant,
    "pld": PldAccountant,
    "pure": PureDpAccountant,
    "basic": BasicAccountant,
}


def make_accountant(name: Any, neighbouring: Any = None, **options: Any) -> Accountant:
    """An empty accountant from a name (``'rdp'``, ``'zcdp'``, ``'pld'``, ``'pure'``), an
    :class:`Accountant` (its :meth:`~Accountant.spawn`) or a zero-argument factory."""
    if isinstance(name, Accountant):
        return name.spawn()
    if callable(name) and not isinstance(name, str):
        acc = name()
        if not isinstance(acc, Accountant):
            raise ValueError(f"accountant factory must return an Accountant, got {acc!r}")
        return acc
    name = check_choice("accountant", name, tuple(ACCOUNTANTS))
    cls = ACCOUNTANTS[name]
    import inspect

    # an option the accountant does not take was a TypeError from its __init__ (fuzz 7)
    takes = inspect.signature(cls).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in takes.values()):
        unknown = sorted(set(options) - set(takes))
        if unknown:
            raise ValueError(f"the {name} accountant takes no option(s) {unknown}; its options "
                             f"are {sorted(k for k in takes if k != 'neighbouring')}")
    if neighbouring is None:
        return cls(**options)
    return cls(neighbouring, **options)
