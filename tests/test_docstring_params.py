"""NumPy-style docstrings name one parameter per entry.

Sphinx's napoleon splits a grouped entry (``m, n : int``) into one entry per name, each
carrying the whole shared description, so the API pages showed every grouped description
twice. One entry per name, each with its own description, reads right in both places.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "dpbounds"
#: ``name, name : type`` at the start of a line inside a docstring
GROUPED = re.compile(r"^\s*[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+\s+:\s", re.MULTILINE)


def grouped_entries(source: str) -> list[str]:
    """Every grouped parameter entry in the docstrings of ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                found += [m.group(0).strip() for m in GROUPED.finditer(doc)]
    return found


def test_control_grouped_entry_is_found():
    src = ('def f(m, n):\n    """Doc.\n\n    Parameters\n    ----------\n'
           '    m, n : int\n        Sizes.\n    """\n')
    assert grouped_entries(src) == ["m, n :"]
    assert grouped_entries(src.replace("m, n : int", "m : int")) == []


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_grouped_parameter_entries(path: Path):
    assert grouped_entries(path.read_text()) == [], f"{path}: one name per parameter entry"
