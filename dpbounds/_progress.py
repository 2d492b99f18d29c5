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

__all__ = ["DELAY_S", "progress_bar"]

#: seconds before a bar appears
DELAY_S = 2.0


def progress_bar(enabled: bool, **kwargs: Any) -> tqdm:
    """A tqdm bar on stderr, disabled unless ``enabled`` and stderr is a terminal."""
    kwargs.setdefault("delay", DELAY_S)
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(file=sys.stderr, disable=None if enabled else True, **kwargs)
