"""Did-you-mean suggestions for mistyped names (difflib), without NumPy: the CLI's input
errors use it and answer before any heavy import (``tests/test_cli_lazy.py``)."""

from __future__ import annotations

from typing import Any

__all__ = ["did_you_mean"]


def did_you_mean(value: Any, choices: Any) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` to a mistyped string
    (difflib), else ``""``.

    >>> did_you_mean("rdpp", ("rdp", "zcdp", "pld"))
    "; did you mean 'rdp'?"
    """
    if not isinstance(value, str) or not value:
        return ""
    import difflib

    close = difflib.get_close_matches(value, [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
