"""One oracle for the CLI's early refusals: the library's own words with the early check off."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def assert_early_is_library(argv: list[str], capsys: Any, monkeypatch: Any,
                            off: list[tuple[Any, str, Any]], words: str) -> None:
    """``main(argv)`` refuses with ``words`` in its line, and the same last line with each
    ``(module, attribute, stand-in)`` of ``off`` replaced (the early checks switched off, so
    that the library, after its imports, answers)."""
    from dpbounds.cli import EXIT_USAGE, _ranges, main

    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    assert words in early
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    for module, name, stand_in in off:
        monkeypatch.setattr(module, name, stand_in)
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early


def heavy_imports(argvs: list[list[str]], heavy: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """``(exit status, the modules of heavy it imported)`` of ``main(argv)`` for each argv,
    run in one fresh interpreter (as a new ``dpbounds`` process: nothing imported yet)."""
    probe = ("import contextlib, io, json, sys\nfrom dpbounds.cli import main\nout = []\n"
             "for argv in json.loads(sys.argv[1]):\n"
             "    with contextlib.redirect_stderr(io.StringIO()), "
             "contextlib.redirect_stdout(io.StringIO()):\n"
             "        rc = main(argv)\n"
             "    out.append([rc, sorted(m for m in json.loads(sys.argv[2]) if m in "
             "sys.modules)])\nprint(json.dumps(out))")
    proc = subprocess.run([sys.executable, "-c", probe, json.dumps(argvs), json.dumps(heavy)],
                          capture_output=True, text=True, timeout=300, check=True)
    return [(rc, mods) for rc, mods in json.loads(proc.stdout)]
