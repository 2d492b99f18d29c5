"""Placeholder: this command family is being built."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # noqa: D103
    return None
