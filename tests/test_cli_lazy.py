"""``dpbounds --help`` and a command's run import only what they need (issue 21 item 6).

The command modules pull in scipy, sympy, cvxpy and dp-accounting (seconds of imports): the top
level help lists the commands from a static table, a command imports its own module only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from dpbounds.cli import _COMMANDS, build_parser

HEAVY = ("scipy", "sympy", "cvxpy", "dp_accounting")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help for a in action._choices_actions}
    raise AssertionError("no sub-commands")


def test_static_table_is_what_the_modules_register():
    assert _subcommands(build_parser()) == {k: v[1] for k, v in _COMMANDS.items()}


def test_lazy_help_is_the_full_help():
    assert build_parser(None).format_help() == build_parser().format_help()
    for name in _COMMANDS:  # each command's own parser is the full one
        full = build_parser()
        lazy = build_parser(name)
        sub_full = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
        sub_lazy = next(a for a in lazy._actions if isinstance(a, argparse._SubParsersAction))
        assert (sub_lazy.choices[name].format_help()
                == sub_full.choices[name].format_help()), name


def _heavy_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(m for m in "
         f"{HEAVY!r} if m in sys.modules))"],
        capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.split()


def test_top_level_help_imports_no_heavy_library_and_the_full_parser_does():
    code = ("import contextlib, io\nfrom dpbounds.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert _heavy_after(code) == []
    # control: building every command's parser does import them
    assert "scipy" in _heavy_after("from dpbounds.cli import build_parser\nbuild_parser()")
