"""Reads made only to advise, never to compute a result (standard library only).

An algorithm given a public ``sensitivity=`` reads the objective's own bound only to warn where
the given one is smaller (:func:`dpbounds.algorithms._common.sensitivity_override`). A private
selection watches the objective's data-derived constants and refuses a run that reads one
(:mod:`dpbounds.tuning.private_selection`); such an advisory read must not count: the run's
noise is calibrated to the public value (walkthrough of stop 80: ``sensitivity=`` was the
advice of the watch's own refusal, and a run given it was refused at the comparison). Inside
:func:`advisory_read` the watch answers ``nan`` (no warning) without recording the read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["advisory_read", "reading_to_advise"]

_ADVISORY: ContextVar[bool] = ContextVar("dpbounds_advisory_read", default=False)


@contextmanager
def advisory_read() -> Iterator[None]:
    """Mark the reads inside as advisory (their value feeds a warning only)."""
    token = _ADVISORY.set(True)
    try:
        yield
    finally:
        _ADVISORY.reset(token)


def reading_to_advise() -> bool:
    """Whether the current read is advisory (inside :func:`advisory_read`)."""
    return _ADVISORY.get()
