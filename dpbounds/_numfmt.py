"""Numbers for people: ``:g`` that never shows a different whole number (standard library)."""

from __future__ import annotations

import math

__all__ = ["shown"]


def shown(value: float, digits: int = 6) -> str:
    """``value`` as ``f"{value:.{digits}g}"``, with up to 15 significant digits where that
    would print a whole number ``value`` is not: ``delta = 0.9999999`` printed as ``delta=1``
    (its warning then said ``delta=1 > 1/n``) and ``beta = 0.999999999999`` as ``beta = 1``,
    a value the flag refuses (fuzz round 7).

    >>> shown(0.9999999), shown(0.25), shown(1.0), shown(123456789.0)
    ('0.9999999', '0.25', '1', '1.23457e+08')
    >>> shown(0.9999999999999999)
    '0.9999999999999999'
    """
    value = float(value)
    text = f"{value:.{digits}g}"
    if not math.isfinite(value):
        return text
    near = float(text)
    if near != value and near == math.floor(near) and "e" not in text:
        longer = f"{value:.15g}"
        # 15 digits still round 1 - 2^-53 to '1' (fuzz round 13): the shortest exact text
        return longer if float(longer) != math.floor(float(longer)) else repr(value)
    return text
