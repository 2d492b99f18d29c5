"""Progress bars for long computations (tqdm on stderr; off unless asked for).

Library functions take ``progress: bool = False`` and show nothing by default (no I/O side
effects); the CLI passes ``progress=True`` unless ``--quiet``. Even then the bar appears only
on a terminal (tqdm's ``disable=None``) and only once the work has run for
:data:`DELAY_S` seconds, so quick calls and piped output stay clean.
"""

from __future__ import annotations

import sys
from typing import Any

from tqdm.auto import tqdm

__all__ = ["progress_bar"]

#: seconds before a bar appears
DELAY_S = 2.0


def progress_bar(enabled: bool | None, iterable: Any = None, **kwargs: Any) -> tqdm:
    """The one tqdm bar of dpbounds: on stderr, after :data:`DELAY_S` seconds, not left behind.

    ``enabled``: ``True`` or ``None`` show it when stderr is a terminal (tqdm's
    ``disable=None``: no bar in logs and pipes), ``False`` never. Every long loop of the
    library (algorithms, audits, LMI rate maps, horizon searches, accountants) and of the CLI
    uses this, so they all look and behave alike.
    """
    kwargs.setdefault("delay", DELAY_S)
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("mininterval", 0.5)
    return tqdm(iterable, file=sys.stderr, disable=None if enabled in (True, None) else True,
                **kwargs)


def progress_iter(iterable: Any, enabled: bool | None = None, **kwargs: Any) -> Any:
    """``iterable`` wrapped in :func:`progress_bar` (shown on a terminal by default)."""
    return progress_bar(enabled, iterable, **kwargs)
