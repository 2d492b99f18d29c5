"""The documentation: its snippets run, the gallery page copes with whatever figures exist, and
the Sphinx build passes with warnings as errors (skipped where Sphinx is not installed).

Build command (as in docs/getting_started.md)::

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dpbounds.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _build_docs_module():
    spec = importlib.util.spec_from_file_location("build_docs", DOCS / "build_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_getting_started_snippets_run(capsys: pytest.CaptureFixture[str]) -> None:
    text = (DOCS / "getting_started.md").read_text(encoding="utf-8")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    blocks = _blocks(text, "python")
    assert len(blocks) >= 3
    for i, block in enumerate(blocks):
        exec(compile(block, f"getting_started.md python block {i}", "exec"), namespace)
    lines = [line[2:] for block in _blocks(text, "console") for line in block.splitlines()
             if line.startswith("$ dpbounds")]
    assert lines
    for line in lines:
        assert main([*shlex.split(line)[1:], "--quiet"]) == 0, line
    assert capsys.readouterr().out.strip()


def test_gallery_page_without_figures_says_how_to_make_them(tmp_path: Path) -> None:
    page = _build_docs_module().gallery_markdown(tmp_path / "absent")
    assert "python -m paper_figs" in page and "{figure}" not in page
    assert _build_docs_module().gallery_markdown(tmp_path) == page  # an empty folder too


@pytest.mark.parametrize("form", ["mapping", "nested", "list"])
def test_gallery_page_takes_every_png_with_its_caption(tmp_path: Path, form: str) -> None:
    for name in ("b_fig.png", "a_fig.png", "c_fig.png"):
        (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "notes.txt").write_text("not a figure")
    caps = {"a_fig.png": "A: VERBATIM grid | x_1", "b_fig.png": "B caption"}  # c: none
    raw = {"mapping": caps, "nested": {k: {"caption": v} for k, v in caps.items()},
           "list": [{"file": f"gallery/{k}", "caption": v} for k, v in caps.items()]}[form]
    (tmp_path / "captions.json").write_text(json.dumps(raw), encoding="utf-8")
    page = _build_docs_module().gallery_markdown(tmp_path)
    figures = re.findall(r"```\{figure\} (\S+)", page)
    assert [Path(f).name for f in figures] == ["a_fig.png", "b_fig.png", "c_fig.png"]
    assert r"A: VERBATIM grid \| x\_1" in page and "B caption" in page  # escaped for MyST
    assert "(no caption in captions.json)" in page  # c_fig.png


def test_sphinx_build_has_no_warnings(tmp_path: Path) -> None:
    for package in ("sphinx", "myst_parser", "pydata_sphinx_theme"):
        pytest.importorskip(package, reason="the docs extra is not installed")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr and "ERROR" not in done.stderr, done.stderr[-4000:]
    html = tmp_path / "html"
    for page in ("index", "getting_started", "errata", "gallery", "papers/kuru",
                 "api/generated/dpbounds.verify.vacuity"):
        assert (html / f"{page}.html").exists(), page
