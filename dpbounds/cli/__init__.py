"""The ``dpbounds`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``; the module
adds its parser and sets ``func`` to a callable ``(argparse.Namespace) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# One module per command family, so that each part of the library owns its own CLI.
_COMMAND_MODULES: tuple[str, ...] = (
    "dpbounds.cli.demo_cmd",
    "dpbounds.cli.privacy_cmd",
    "dpbounds.cli.bounds_cmd",
    "dpbounds.cli.heavy_ball_cmd",
    "dpbounds.cli.audit_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every registered sub-command."""
    from dpbounds import __version__

    parser = argparse.ArgumentParser(
        prog="dpbounds",
        description="Privacy accounting, utility bounds and rate certificates for DP optimization.",
    )
    parser.add_argument("--version", action="version", version=f"dpbounds {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpbounds`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:  # bad user input: one clear line, no traceback
        print(f"dpbounds: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
