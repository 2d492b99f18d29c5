"""No control characters in the sources (a TeX ``\\v``, ``\\b``, ``\\t`` or ``\\r`` written
through a non-raw string becomes one, silently: ``\\varepsilon`` turned into a vertical tab and
``arepsilon`` in a docstring, found only when the docs build failed in CI, 2026-12-02).

The oracle is the byte content itself; the control: a line with a vertical tab is caught.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: every C0 control character but newline
_BAD = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]")
_DIRS = ("dpbounds", "tests", "bench", "examples", "sims", "paper_figs", "notebooks", "docs")


def _offenders(paths, root: Path = ROOT) -> list[str]:
    out = []
    for p in paths:
        for k, line in enumerate(p.read_bytes().splitlines(keepends=True), 1):
            if _BAD.search(line):
                out.append(f"{p.relative_to(root)}:{k}")
    return out


def test_no_control_characters_in_python_and_markdown_sources():
    files = [p for d in _DIRS for ext in ("*.py", "*.md") for p in (ROOT / d).rglob(ext)
             if ".venv" not in p.parts and "_build" not in p.parts]
    assert len(files) > 100
    assert _offenders(files) == []


def test_a_vertical_tab_is_caught(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_bytes(b'"""ok"""\n"""x :math:`(\x0barepsilon, \\delta)`"""\n')
    assert _offenders([bad], tmp_path) == ["bad.py:2"]
