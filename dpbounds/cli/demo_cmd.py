"""``dpbounds demo``: the main job on a built-in default problem."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on a built-in default problem")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("dpbounds demo: nothing registered yet")
    return 0
